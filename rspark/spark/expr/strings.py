"""Strings and terms (SPARQL 1.1 sections 17.4.1 - 17.4.3): STR, LANG, DATATYPE, IRI, BNODE, STRDT, STRLANG, UUID,
STRUUID, the term tests, TRIPLE, the string functions with their argument-compatibility rules (17.4.3.1.2), REGEX /
REPLACE on Java regular expressions, the hash functions, ENCODE_FOR_URI and langMatches.

String functions keep the language tag of their first argument where the specification says so (UCASE, LCASE,
SUBSTR, STRBEFORE / STRAFTER when they match, REPLACE); CONCAT keeps a tag only when every argument has it.
All functions take simple values (see ``expr_values.bind``).
"""

from __future__ import annotations

import re

from pyspark import SparkContext

from rspark.model.iri import resolve_iri, split_iri
from rspark.model.terms import IRI as IRITerm
from rspark.model.terms import XSD_STRING, Literal
from rspark.spark.expr.values import (
    INT,
    NULL_BOOL,
    NULL_STR,
    SIMPLE,
    SQL,
    BoolV,
    ConstV,
    NullV,
    Num,
    NumV,
    StrV,
    TermV,
    V,
    b_and,
    case,
    is_bnode,
    is_iri,
    is_static_lang,
    is_triple,
    let,
    make_iri,
    make_literal,
    q,
    sql_bool,
)

# ------------------------------------------------------------------------------------------------------ helpers


def _lang_sql(lang) -> SQL:
    return q(lang) if is_static_lang(lang) else lang


def is_simple_lang(lang):
    """The language part says: simple literal / xsd:string (a static boolean)."""
    return lang == "" if is_static_lang(lang) else f"({lang} = '')"


def compatible(lang1, lang2):
    """17.4.3.1.2: both simple / xsd:string, both with the same tag, or the first tagged and the second simple
    (a static boolean)."""
    if is_static_lang(lang2) and lang2 == "":
        return True
    if is_static_lang(lang1) and is_static_lang(lang2):
        return lang1 == lang2
    return f"({_lang_sql(lang2)} = '' OR {_lang_sql(lang1)} = {_lang_sql(lang2)})"


def _guard(cond, value: SQL, null: SQL = NULL_STR) -> SQL:
    """value when the static condition holds, NULL otherwise."""
    if cond is True:
        return value
    if cond is False:
        return null
    return f"(CASE WHEN {cond} THEN {value} END)"


def iri_string(v: V) -> SQL:
    """The string of an IRI (NULL for other terms)."""
    return v.iri_string()


# ---------------------------------------------------------------------------------------------- term functions


def fn_str(v: V) -> V:
    const = v.const()
    if isinstance(const, IRITerm):
        return ConstV(Literal(const.value))
    if isinstance(const, Literal):
        return ConstV(Literal(const.lexical))
    cats = v.cats()
    return StrV(case([(cats.iri, v.iri_string()), (cats.lit, v.lexical())]))


def fn_lang(v: V) -> V:
    const = v.const()
    if isinstance(const, Literal):
        return ConstV(Literal((const.language or "").lower()))
    return StrV(v.language())


def fn_datatype(v: V) -> V:
    const = v.const()
    if isinstance(const, Literal):
        return ConstV(IRITerm(const.datatype))
    return TermV(make_iri(v.datatype()), simple=False)


_ABSOLUTE = r"^[A-Za-z][A-Za-z0-9+.\-]*:"
_BAD_IRI_CHARS = r'[\x00-\x20<>"{}|^`\\]'


def fn_iri(v: V, base: str | None) -> V:
    """IRI(x) / URI(x): an IRI stays, a simple / xsd:string literal is resolved against the base IRI (an error
    without a base); IRIs with characters IRIs cannot hold are errors."""
    const = v.const()
    if isinstance(const, IRITerm):
        return v
    if isinstance(const, Literal):
        if const.datatype != XSD_STRING:
            return NullV()
        text = const.lexical
        if re.match(_ABSOLUTE, text) is None and base is None:
            return NullV()
        value = resolve_iri(text, base)
        if re.search(_BAD_IRI_CHARS, value):
            return NullV()
        return ConstV(IRITerm(value))
    c = v.enc()
    lex, lang = v.string()
    absolute = f"({lex} RLIKE {q(_ABSOLUTE)})"
    if base is None:
        resolved = f"(CASE WHEN {absolute} THEN {lex} END)"
    else:
        resolved = f"(CASE WHEN {absolute} THEN {lex} ELSE {_resolve_relative(lex, base)} END)"
    checked = let(resolved, lambda r: f"(CASE WHEN NOT {r} RLIKE {q(_BAD_IRI_CHARS)} THEN {r} END)")
    return TermV(f"(CASE WHEN {is_iri(c)} THEN {c} WHEN {sql_bool(is_simple_lang(lang))} THEN {make_iri(checked)} END)",
                 simple=False)


def _resolve_relative(ref: SQL, base: str) -> SQL:
    """RFC 3986 resolution of a relative reference against a known base (dot segments: a few passes)."""
    scheme, authority, path, query, _ = split_iri(base)
    prefix = (scheme + ":" if scheme else "") + ("//" + authority if authority is not None else "")
    base_nofrag = prefix + path + ("?" + query if query is not None else "")
    directory = prefix + (path[: path.rfind("/") + 1] if "/" in path else ("/" if authority is not None else ""))
    merged = (f"(CASE WHEN {ref} = '' THEN {q(base_nofrag)}"
              f" WHEN startswith({ref}, '#') THEN concat({q(base_nofrag)}, {ref})"
              f" WHEN startswith({ref}, '?') THEN concat({q(prefix + path)}, {ref})"
              f" WHEN startswith({ref}, '//') THEN concat({q((scheme or '') + ':')}, {ref})"
              f" WHEN startswith({ref}, '/') THEN concat({q(prefix)}, {ref})"
              f" ELSE concat({q(directory)}, {ref}) END)")
    out = merged
    for _ in range(2):
        out = f"regexp_replace({out}, {q(_DOT)}, '/')"
    for _ in range(4):
        out = f"regexp_replace({out}, {q(_DOTDOT)}, '/')"
    return out


_DOT = r"/\.(/|$|(?=[?#]))"
_DOTDOT = r"/(?!\.\./)[^/?#]+/\.\.(/|$|(?=[?#]))"


def fn_bnode(v: V | None, row_id: SQL | None) -> V:
    """BNODE() (fresh per call and solution) and BNODE(str) (one label per string within a solution)."""
    if v is None:
        return TermV("concat('_:b', replace(uuid(), '-', ''))", simple=False)
    lex, lang = v.string()
    label = f"md5(concat(CAST({row_id} AS STRING), {q(chr(1))}, {lex}))"
    return TermV(_guard(is_simple_lang(lang), f"concat('_:b', {label})"), simple=False)


def fn_strdt(v: V, dt: V) -> V:
    lex, lang = v.string()
    value = make_literal(lex, dt_sql=iri_string(dt))
    return TermV(_guard(is_simple_lang(lang), value), simple=False)


_LANGTAG = r"^[a-zA-Z]{1,8}(-[a-zA-Z0-9]{1,8})*$"


def fn_strlang(v: V, tag: V) -> V:
    lex, lang = v.string()
    tlex, tlang = tag.string()
    ok = b_and(is_simple_lang(lang), is_simple_lang(tlang), f"({tlex} RLIKE {q(_LANGTAG)})")
    return StrV(_guard(ok, lex), _guard(ok, f"lower({tlex})"))


def fn_uuid() -> V:
    return TermV(make_iri("concat('urn:uuid:', uuid())"), simple=False)


def fn_struuid() -> V:
    return StrV("uuid()")


# -------------------------------------------------------------------------------------------- string functions


def fn_strlen(v: V) -> V:
    lex, _ = v.string()
    return NumV(Num(INT, d=f"CAST(length({lex}) AS DECIMAL(38,18))"))


def fn_case(name: str, v: V) -> V:
    lex, lang = v.string()
    return StrV(f"upper({lex})" if name == "UCASE" else f"lower({lex})", lang)


def fn_test(name: str, a: V, b: V) -> V:
    """STRSTARTS, STRENDS, CONTAINS."""
    la, ga = a.string()
    lb, gb = b.string()
    op = {"STRSTARTS": "startswith", "STRENDS": "endswith", "CONTAINS": "contains"}[name]
    return BoolV(_guard(compatible(ga, gb), f"{op}({la}, {lb})", NULL_BOOL))


def fn_before_after(name: str, a: V, b: V) -> V:
    la, ga = a.string()
    lb, gb = b.string()
    ok = compatible(ga, gb)

    def body(i: str) -> SQL:
        part = f"substring({la}, 1, {i} - 1)" if name == "STRBEFORE" else f"substring({la}, {i} + length({lb}))"
        return f"named_struct('lex', CASE WHEN {i} > 0 THEN {part} WHEN {i} = 0 THEN '' END, " \
               f"'lang', CASE WHEN {i} > 0 THEN {_lang_sql(ga)} ELSE '' END)"

    x = let(_guard(ok, f"instr({la}, {lb})", "CAST(NULL AS INT)"), body)
    return StrV(f"{x}.lex", f"{x}.lang", packed=x)


def _int_arg(v: V) -> SQL:
    """An xsd:integer argument as a bigint (NULL when not an integer)."""
    n = v.num()
    is_int = n.t_is(INT)
    if is_int is False:
        return "CAST(NULL AS BIGINT)"
    value = f"CAST(least(greatest({n.d}, -2147483648), 2147483648) AS BIGINT)"
    return value if is_int is True else f"(CASE WHEN {is_int} THEN {value} END)"


def fn_substr(v: V, start: V, length: V | None) -> V:
    lex, lang = v.string()
    s = _int_arg(start)
    if length is None:
        value = let(s, lambda sv: (
            f"(CASE WHEN {sv} IS NOT NULL THEN substring({lex}, CAST(greatest({sv}, 1) AS INT)) END)"))
    else:
        n = _int_arg(length)

        def body(x: str) -> SQL:
            sv, nv = f"{x}.s", f"{x}.n"
            count = f"({sv} + {nv} - greatest({sv}, 1))"
            return (f"(CASE WHEN {sv} IS NOT NULL AND {nv} IS NOT NULL THEN (CASE WHEN {count} > 0 THEN "
                    f"substring({lex}, CAST(greatest({sv}, 1) AS INT), CAST(least({count}, 1073741824) AS INT)) "
                    f"ELSE '' END) END)")
        value = let(f"named_struct('s', {s}, 'n', {n})", body)
    return StrV(value, lang)


def fn_concat(args: list[V]) -> V:
    if not args:
        return ConstV(Literal(""))
    parts = [a.string() for a in args]
    lex = "concat(" + ", ".join(p[0] for p in parts) + ")"
    langs = [p[1] for p in parts]
    if any(is_static_lang(g) and g == "" for g in langs):
        lang = SIMPLE
    elif all(is_static_lang(g) for g in langs):
        lang = langs[0] if all(g == langs[0] for g in langs) else SIMPLE
    else:
        first = _lang_sql(langs[0])
        same = " AND ".join(f"{_lang_sql(g)} = {first}" for g in langs[1:])
        lang = f"(CASE WHEN {same} THEN {first} ELSE '' END)" if same else first
    # an error argument (NULL lexical form) makes the result an error through concat
    return StrV(lex, lang)


def fn_encode_for_uri(v: V) -> V:
    lex, _ = v.string()
    out = f"replace(replace(replace(url_encode({lex}), '+', '%20'), '*', '%2A'), '%7E', '~')"
    return StrV(out)


_HASHES = {"MD5": "md5({})", "SHA1": "sha1({})", "SHA256": "sha2({}, 256)", "SHA384": "sha2({}, 384)",
           "SHA512": "sha2({}, 512)"}


def fn_hash(name: str, v: V) -> V:
    lex, lang = v.string()
    return StrV(_guard(is_simple_lang(lang), _HASHES[name].format(lex)))


def fn_langmatches(tag: V, rng: V) -> V:
    t, tl = tag.string()
    r, rl = rng.string()
    ok = b_and(is_simple_lang(tl), is_simple_lang(rl))
    value = (f"(CASE WHEN {r} = '*' THEN {t} != '' ELSE "
             f"(lower({t}) = lower({r}) OR startswith(lower({t}), concat(lower({r}), '-'))) END)")
    return BoolV(_guard(ok, value, NULL_BOOL))


# ---------------------------------------------------------------------------------------------- regular expressions


def _flag_prefix(flags: str) -> str | None:
    """The Java inline-flag prefix of SPARQL / XPath flags (None: invalid flags)."""
    if any(ch not in "smixq" for ch in flags):
        return None
    java = "".join(ch for ch in "smix" if ch in flags)
    if "i" in flags:
        java += "u"
    return f"(?{java})" if java else ""


def _quote_java(pattern: str) -> str:
    return "\\Q" + pattern.replace("\\E", "\\E\\\\E\\Q") + "\\E"


def _java_pattern_ok(pattern: str) -> bool:
    """Whether Java accepts the pattern (checked on the driver's JVM when there is one, else with Python's re)."""
    try:
        sc = SparkContext._active_spark_context
        if sc is not None:
            try:
                sc._jvm.java.util.regex.Pattern.compile(pattern)
                return True
            except Exception:  # noqa: BLE001 - a py4j error wrapping PatternSyntaxException
                return False
    except Exception:  # noqa: BLE001
        pass
    try:
        re.compile(pattern)
        return True
    except re.error:
        return False


def _pattern(pattern: V, flags: V | None):
    """The Java pattern: a Python str when constant, SQL text (NULL = error) otherwise; None when statically an
    error."""
    p_const = pattern.const()
    f_const = flags.const() if flags is not None else Literal("")
    if isinstance(p_const, Literal) and isinstance(f_const, Literal):
        if p_const.datatype != XSD_STRING or f_const.datatype != XSD_STRING:
            return None
        prefix = _flag_prefix(f_const.lexical)
        if prefix is None:
            return None
        body = _quote_java(p_const.lexical) if "q" in f_const.lexical else p_const.lexical
        java = prefix + body
        return Pattern(java) if _java_pattern_ok(java) else None
    if (p_const is not None and not isinstance(p_const, Literal)) or \
            (f_const is not None and not isinstance(f_const, Literal)):
        return None
    plex, plang = pattern.string()
    if flags is None:
        flex, flang = "''", SIMPLE
    else:
        flex, flang = flags.string()
    ok = b_and(is_simple_lang(plang), is_simple_lang(flang), f"({flex} RLIKE '^[smixq]*$')")
    java_flags = "concat(" + ", ".join(
        [f"CASE WHEN instr({flex}, '{ch}') > 0 THEN '{ch}' ELSE '' END" for ch in "smix"]
        + [f"CASE WHEN instr({flex}, 'i') > 0 THEN 'u' ELSE '' END"]) + ")"
    prefix = let(java_flags, lambda jf: f"(CASE WHEN {jf} = '' THEN '' ELSE concat('(?', {jf}, ')') END)")
    bs = chr(92)  # \Q ... \E quotes a pattern; an \E inside is written \E\\E\Q
    inner = f"replace({plex}, {q(bs + 'E')}, {q(bs + 'E' + bs * 2 + 'E' + bs + 'Q')})"
    quoted = f"concat({q(bs + 'Q')}, {inner}, {q(bs + 'E')})"
    body = f"(CASE WHEN instr({flex}, 'q') > 0 THEN {quoted} ELSE {plex} END)"
    return _guard(ok, f"concat({prefix}, {body})")


def fn_regex(text: V, pattern: V, flags: V | None) -> V:
    lex, _ = text.string()
    java = _pattern(pattern, flags)
    if java is None:
        return BoolV(NULL_BOOL, simple=True)
    if isinstance(java, Pattern):
        return BoolV(f"({lex} RLIKE {q(java)})")
    return BoolV(let(java, lambda p: f"(CASE WHEN {p} IS NOT NULL THEN regexp_like({lex}, {p}) END)"))


def fn_replace(text: V, pattern: V, replacement: V, flags: V | None) -> V:
    lex, lang = text.string()
    java = _pattern(pattern, flags)
    rlex, rlang = replacement.string()
    if java is None:
        return NullV()
    if isinstance(java, Pattern):
        value = f"regexp_replace({lex}, {q(java)}, {rlex})"
    else:
        value = let(java, lambda p: f"(CASE WHEN {p} IS NOT NULL THEN regexp_replace({lex}, {p}, {rlex}) END)")
    return StrV(_guard(is_simple_lang(rlang), value), lang)


class Pattern(str):
    """A Java regular expression known in Python."""


# ---------------------------------------------------------------------------------------------- term tests


def fn_is(name: str, v: V) -> V:
    cats = v.cats()
    test = {"ISIRI": cats.iri, "ISBLANK": cats.bnode, "ISLITERAL": cats.lit, "ISTRIPLE": cats.triple,
            "ISNUMERIC": cats.num}[name]
    return BoolV(case([(cats.null, None)], sql_bool(test)))


def fn_triple(s: V, p: V, o: V) -> V:
    cs, cp, co = s.enc(), p.enc(), o.enc()
    ok = f"(({is_iri(cs)} OR {is_bnode(cs)} OR {is_triple(cs)}) AND {is_iri(cp)} AND {co} IS NOT NULL)"
    return TermV(f"(CASE WHEN {ok} THEN concat('<< ', {cs}, ' ', {cp}, ' ', {co}, ' >>') END)", simple=False)
