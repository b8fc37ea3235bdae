"""Spark SQL text for compiled expressions: building blocks (literals, CASE with static folding, ``let``), the
term encoding of ``rspark.model.codec`` written as SQL, and the final conversion of SQL text into a Column.

Compiled expressions are SQL text rather than Column objects because building a Column costs a JVM round trip per
operator (far too slow for the trees SPARQL's type and error rules produce), while one text per expression is read
on the JVM side in one call (by rspark's reader, ``rspark.jvm.SqlColumns``, else by Spark's parser: :func:`parsed`).
Inputs (the Columns a scope hands out) appear in the text as placeholders (:func:`token`), replaced by
:func:`to_column`.

"Static booleans" are ``True`` / ``False`` (known while compiling) or SQL text: :func:`b_and`, :func:`b_or`,
:func:`b_not` and :func:`case` fold the known ones away.
"""

from __future__ import annotations

import itertools
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pyspark import SparkContext
from pyspark.sql import Column
from pyspark.sql import functions as F

from rspark.model.xsd import (
    INTEGER_DERIVED,
    XSD_BOOLEAN,
    XSD_DATE,
    XSD_DATETIME,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_FLOAT,
    XSD_INTEGER,
    XSD_STRING,
)

SQL = str
SBool = bool | str


# Numeric type codes; promotion is max. DEC0 is an xsd:decimal whose lexical form has no fraction digits (data
# "3"^^xsd:decimal, CEIL / FLOOR / ROUND of a decimal, sums and products of such): written without a point, as
# Java's BigDecimal of scale 0 ("3"); DEC is any other decimal, written in canonical form ("3.0", "2.5").
INT, DEC0, DEC, FLT, DBL = 0, 1, 2, 3, 4
NUM_DATATYPES = {XSD_INTEGER: INT, XSD_DECIMAL: DEC, XSD_FLOAT: FLT, XSD_DOUBLE: DBL}
TYPE_IRI = {INT: XSD_INTEGER, DEC0: XSD_DECIMAL, DEC: XSD_DECIMAL, FLT: XSD_FLOAT, DBL: XSD_DOUBLE}

DEC_T = "DECIMAL(38,18)"
NULL_STR = "CAST(NULL AS STRING)"
NULL_BOOL = "CAST(NULL AS BOOLEAN)"


def sfx_of(datatype: str) -> str:
    """The encoded suffix of a literal of this datatype (``^^<...>``; '' for xsd:string)."""
    return "" if datatype == XSD_STRING else "^^<" + datatype + ">"


INT_SFXS = [sfx_of(XSD_INTEGER)] + [sfx_of(d) for d in INTEGER_DERIVED]
SFX_DEC, SFX_FLT, SFX_DBL = sfx_of(XSD_DECIMAL), sfx_of(XSD_FLOAT), sfx_of(XSD_DOUBLE)
SFX_BOOL, SFX_DT, SFX_DATE = sfx_of(XSD_BOOLEAN), sfx_of(XSD_DATETIME), sfx_of(XSD_DATE)

# Lexical spaces (Java regular expressions, applied to the still-escaped lexical form: a valid one has no escapes).
RE_INT = r"^[+-]?[0-9]+$"
RE_DEC = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$"
RE_DBL = r"^([+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?INF|NaN)$"
RE_DT = r"^-?[0-9]{4,}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})?$"
RE_DATE = r"^-?[0-9]{4,}-[0-9]{2}-[0-9]{2}(Z|[+-][0-9]{2}:[0-9]{2})?$"

TRUE_ENC = '"true"^^<' + XSD_BOOLEAN + ">"
FALSE_ENC = '"false"^^<' + XSD_BOOLEAN + ">"


# ------------------------------------------------------------------------------------------------ SQL building


def q(text: str) -> SQL:
    """A Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\x00", "\\u0000") + "'"


def cast(x: SQL, sql_type: str) -> SQL:
    return f"CAST({x} AS {sql_type})"


def dec_lit(value, p: int = 38, s: int = 18) -> SQL:
    return f"CAST({q(str(value))} AS DECIMAL({p},{s}))"


def dbl_lit(value: float) -> SQL:
    if value != value:
        return "CAST('NaN' AS DOUBLE)"
    if value in (float("inf"), float("-inf")):
        return "CAST('Infinity' AS DOUBLE)" if value > 0 else "CAST('-Infinity' AS DOUBLE)"
    return f"CAST({q(repr(float(value)))} AS DOUBLE)"


def sql_bool(x: SBool) -> SQL:
    if x is True:
        return "true"
    if x is False:
        return "false"
    return x


def b_and(*xs: SBool) -> SBool:
    parts = []
    for x in xs:
        if x is False:
            return False
        if x is True:
            continue
        parts.append(x)
    if not parts:
        return True
    return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"


def b_or(*xs: SBool) -> SBool:
    parts = []
    for x in xs:
        if x is True:
            return True
        if x is False:
            continue
        parts.append(x)
    if not parts:
        return False
    return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"


def b_not(x: SBool) -> SBool:
    if isinstance(x, bool):
        return not x
    return f"(NOT {x})"


def case(branches, otherwise=None) -> SQL:
    """CASE WHEN over (static condition, value) pairs; False conditions are dropped, a True condition ends the
    chain. Values are SQL text or None (NULL)."""
    parts = []
    for cond, value in branches:
        if cond is False:
            continue
        if cond is True:
            otherwise = value
            break
        parts.append(f"WHEN {cond} THEN {'NULL' if value is None else value}")
    if not parts:
        return "NULL" if otherwise is None else otherwise
    tail = "" if otherwise is None else f" ELSE {otherwise}"
    return "(CASE " + " ".join(parts) + tail + " END)"


# The lambda-variable counter of the expression compilation under way in this thread (or asyncio task): a
# ContextVar, not a module global, so that compilations in several threads at once neither share nor reset each
# other's counter (a shared one made names depend on the other threads' work, and a reset by another thread in the
# middle of a compilation could give two nested lambdas of one expression the same variable, the inner one then
# hiding the outer). None: no compilation under way.
_NAMES: ContextVar[Iterator[int] | None] = ContextVar("rspark_sql_names", default=None)
# fresh() outside any naming() (SQL built by hand, e.g. in tests): names unique in the process, spelled apart
_loose_names = itertools.count(1)
_loose_lock = threading.Lock()


@contextmanager
def naming():
    """Lambda-variable names restart at every outermost compilation, so that one expression always compiles to
    the same SQL text: Spark's generated-code cache then serves a repeated query (a continuous query at every
    instant, the same query run again) instead of compiling the code anew, which for these expressions costs
    far more than running them. Names stay unique within one compilation (nested compilations go on counting).
    The counter belongs to the compilation (a ContextVar): compilations in other threads do not touch it."""
    if _NAMES.get() is not None:  # nested: go on counting
        yield
        return
    token = _NAMES.set(itertools.count(1))
    try:
        yield
    finally:
        _NAMES.reset(token)


def fresh() -> str:
    names = _NAMES.get()
    if names is None:
        with _loose_lock:
            return f"__u{next(_loose_names)}"
    return f"__v{next(names)}"


def let(value: SQL, body: Callable[[str], SQL]) -> SQL:
    """``body(x)`` with ``x`` bound to ``value``, evaluated once."""
    name = fresh()
    return let_in(value, name, body(name))


def let_in(value: SQL, name: str, body: SQL) -> SQL:
    """``body`` with the lambda variable ``name`` bound to ``value``, evaluated once: a one-element map's
    ``transform_values``, which Spark evaluates interpreted (a ``CodegenFallback`` expression), so that the
    operator holding it runs outside whole-stage code generation. A one-element array's ``transform`` would do the
    same binding, but Spark 4.3 compiles ``transform`` into the stage's generated code (SPARK-56033), and the
    expressions rspark builds are large: a SPARQL division alone became 53 KB of bytecode in one Java method,
    so a stage holding it and a FILTER went over the JVM's 64 KB limit (Janino's "Code grows beyond 64 KB", a
    stack trace on standard error and the stage run again without generated code). Interpreted, the largest
    method of such a stage is about 3 KB, and the time of the replays measured is unchanged."""
    return f"element_at(transform_values(map(0, {value}), ({name}k, {name}) -> {body}), 0)"


# --------------------------------------------------------------------------------------- the encoding, in SQL


def is_iri(c: SQL) -> SQL:
    return f"(startswith({c}, '<') AND NOT startswith({c}, '<< '))"


def is_bnode(c: SQL) -> SQL:
    return f"startswith({c}, '_:')"


def is_literal(c: SQL) -> SQL:
    return f"startswith({c}, '\"')"


def is_triple(c: SQL) -> SQL:
    return f"startswith({c}, '<< ')"


def suffix(c: SQL) -> SQL:
    return f"substring_index({c}, '\"', -1)"


def raw_lexical(c: SQL, sfx: SQL | None = None) -> SQL:
    sfx = suffix(c) if sfx is None else sfx
    return f"substring({c}, 2, length({c}) - length({sfx}) - 2)"


def unescape(x: SQL) -> SQL:
    """Undo the encoding's escapes (\\\\ \\" \\n \\r); NUL stands in for an escaped backslash meanwhile."""
    bs = q("\\")
    un = f"replace({x}, {q(chr(92) * 2)}, {q(chr(0))})"
    un = f"replace({un}, {q(chr(92) + chr(34))}, '\"')"
    un = f"replace({un}, {q(chr(92) + 'n')}, {q(chr(10))})"
    un = f"replace({un}, {q(chr(92) + 'r')}, {q(chr(13))})"
    un = f"replace({un}, {q(chr(0))}, {bs})"
    return f"(CASE WHEN instr({x}, {bs}) > 0 THEN {un} ELSE {x} END)"


def escape(x: SQL) -> SQL:
    out = f"replace({x}, {q(chr(92))}, {q(chr(92) * 2)})"
    out = f"replace({out}, '\"', {q(chr(92) + chr(34))})"
    out = f"replace({out}, {q(chr(10))}, {q(chr(92) + 'n')})"
    return f"replace({out}, {q(chr(13))}, {q(chr(92) + 'r')})"


def make_literal(lex: SQL, datatype: str | None = None, lang: SQL | None = None, dt_sql: SQL | None = None) -> SQL:
    """Encode a literal from an (unescaped) lexical form and a datatype IRI (Python str or SQL) or a language."""
    body = f"concat('\"', {escape(lex)}, '\"')"
    if lang is not None:
        return f"(CASE WHEN {lang} = '' THEN {body} ELSE concat({body}, '@', lower({lang})) END)"
    if dt_sql is not None:
        return (f"(CASE WHEN {dt_sql} = {q(XSD_STRING)} THEN {body} "
                f"ELSE concat({body}, '^^<', {dt_sql}, '>') END)")
    if datatype is None or datatype == XSD_STRING:
        return body
    return f"concat({body}, {q('^^<' + datatype + '>')})"


def make_iri(value: SQL) -> SQL:
    return f"concat('<', {value}, '>')"


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$|^\x00[0-9]+\x00$")


def is_name(sql: SQL) -> bool:
    """A (lambda) variable, a field of one, or an input placeholder: cheap to repeat."""
    return _NAME.match(sql) is not None


# ------------------------------------------------------------------------------------------ SQL -> Column


def token(index: int) -> SQL:
    """The placeholder of input column ``index`` in SQL text (replaced by :func:`to_column`)."""
    return f"\x00{index}\x00"


TOKEN = re.compile("\x00([0-9]+)\x00")


def attribute_sql(col) -> str | None:
    """The SQL name of a plain column reference (``F.col("x")``); None for anything else. Remembered on the
    Column (asking the JVM takes several calls, and a compilation asks about the same inputs many times)."""
    memo = getattr(col, "__dict__", None)  # (not getattr of the name: Column.__getattr__ makes a field Column)
    if memo is not None and "_rspark_attr" in memo:
        return memo["_rspark_attr"]
    name = _attribute_sql_of(col)
    if memo is not None:
        memo["_rspark_attr"] = name
    return name


def _attribute_sql_of(col) -> str | None:
    try:
        node = col._jc.node()
        if node.getClass().getSimpleName() != "UnresolvedAttribute" or str(node.planId()) != "None":
            return None
        if node.isMetadataColumn():
            return None
        parts = str(node.nameParts().mkString("\u0001")).split("\u0001")
    except Exception:  # noqa: BLE001 - not a classic Column
        return None
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def to_column(sql: SQL, inputs: list):
    """A Column from SQL text whose input placeholders (:func:`token`) stand for the given Columns: plain column
    references are named in the text; anything else is passed in through a one-element ``transform_values``
    (:func:`let_in`)."""
    if not inputs:
        return parsed(sql)
    names = [attribute_sql(c) for c in inputs]
    if all(n is not None for n in names):
        return parsed(TOKEN.sub(lambda m: names[int(m.group(1))], sql))
    var = fresh()
    body = TOKEN.sub(lambda m: f"{var}.c{m.group(1)}", sql)
    packed = F.struct(*[c.alias(f"c{i}") for i, c in enumerate(inputs)])
    return F.element_at(F.call_function("transform_values", F.create_map(F.lit(0), packed),
                                        parsed(f"({var}k, {var}) -> {body}")), F.lit(0))


# Shared by every thread without a lock: each step is one dict operation (atomic), a race only parses a text twice
# or forgets an entry, and the value for a text is always an equal Column (an unresolved expression, immutable, which
# plans built at the same time in other threads may share).
_PARSED: dict = {}
_PARSED_OWNER: list = [None]


def parsed(sql: SQL):
    """The Column of ``sql`` (:func:`_read`: rspark's reader, else ``F.expr``), remembered by its text: a query
    compiles to the same text each time (see :func:`naming`),
    and parsing the long texts of SPARQL expressions is a noticeable part of planning a query. The Columns are
    unresolved expressions, reusable in any plan of the same Spark context (the memo is dropped when the
    context changes)."""
    owner = id(SparkContext._active_spark_context)
    if _PARSED_OWNER[0] != owner:
        _PARSED.clear()
        _PARSED_OWNER[0] = owner
    col = _PARSED.get(sql)
    if col is None:
        if len(_PARSED) >= 4096:
            _PARSED.clear()
        col = _PARSED[sql] = _read(sql)
    return col


_READER: dict = {}  # SparkContext id -> rspark.jvm.SqlColumns on its class path (None: not there)
CHECK_ENV = "RSPARK_CHECK_SQL"  # "1": each text read by rspark's reader is also parsed by Spark's, and compared


def _read(sql: SQL):
    """The Column of ``sql``: read by rspark's JVM reader (``rspark.jvm.SqlColumns``) when the text is one of the
    forms it reads, which builds the expression Spark's parser would without the parser's cold start (seconds for
    a long expression in a new JVM: docs/evaluation.md, Generated code); else ``F.expr``."""
    sc = SparkContext._active_spark_context
    key = id(sc)
    reader = _READER.get(key, False)
    if reader is False:
        reader = None
        try:
            candidate = sc._jvm.rspark.jvm.SqlColumns
            candidate.expression("1")  # a JavaPackage (the class is not on the class path) is not callable
            reader = candidate
        except Exception:  # noqa: BLE001 - no rspark jar in this session (RSPARK_JVM=0, a user's session):
            reader = None  # Spark's parser reads every text
        _READER.clear()
        _READER[key] = reader
    jcol = reader.column(sql) if reader is not None else None
    if jcol is None:
        return F.expr(sql)
    if os.environ.get(CHECK_ENV) == "1":
        check_reader(sql)
    return Column(jcol)


def check_reader(sql: SQL) -> bool:
    """Whether rspark's reader reads ``sql`` (False: Spark's parser does); AssertionError when it builds another
    expression than Spark's parser (the tests run with RSPARK_CHECK_SQL=1)."""
    jvm = SparkContext._active_spark_context._jvm
    ours = jvm.rspark.jvm.SqlColumns.expression(sql)
    if ours is None:
        return False
    # the JVM's active or default session (a service's worker thread has no active session in Python)
    session = jvm.org.apache.spark.sql.SparkSession.active()
    sparks = session.sessionState().sqlParser().parseExpression(sql)
    if not ours.equals(sparks):
        raise AssertionError(f"rspark's SQL reader and Spark's parser differ on {sql!r}:\n"
                             f"  rspark: {ours.toString()}\n  Spark:  {sparks.toString()}")
    return True
