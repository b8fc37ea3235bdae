"""Extract the RSP-QL queries embedded in the W3C RSP-QL markdown notes.

The markdown files live in ``/work/shared/testdata/rsp-ql/`` (a snapshot of
github.com/streamreasoning/RSP-QL, see its ``SOURCE_COMMIT``).  Tests read them
in place through :func:`rspql_md_queries`; they are never copied into the project.

What the folder holds (checked by hand against this extractor):

=================================  ======  ===============================================
file                               query   notes
                                   blocks
=================================  ======  ===============================================
DEBS Challenge 2015 data.md        0       one fenced block of CSV data
Example_of_RSP-QL_query.md         1       fenced block at line 24 (REGISTER STREAM ...
                                           CONSTRUCT ISTREAM, the "Gallehault" query)
README.md                          0       no code blocks
RSP-QL Sample Queries.md           8       fenced blocks at lines 46, 90, 114, 154, 205,
                                           253, 281, 315 (Query 1-8); the fenced blocks at
                                           lines 19, 62, 71, 232 are Turtle/TriG data
                                           (``@prefix`` first) and are skipped.  Some
                                           fence lines carry trailing blanks or tabs.
Semantics.md                       0       fenced blocks of stream data and formulas only;
                                           its blockquoted fence (``> ````)`` near the end
                                           is not modelled, which changes nothing here
Serialization.md                   0       fenced blocks of TriG / JSON-LD data only
srbench/queries.md                 4       *indented* (tab) code blocks at lines 8, 24, 47,
                                           75 (SRBench Q1, Q4, Q5, Q10); one line of Q1
                                           is indented with two spaces + a tab
Example_RDF_Streams/README.md      0       prose only (the streams are .json files)
=================================  ======  ===============================================

Total: 13 query blocks.  The two ``index.html`` documents in sub-folders are not
markdown and are ignored.

Block detection follows CommonMark closely enough for these files:

* fenced blocks open with up to three spaces and at least three backticks or
  tildes, and close with a fence of the same character that is at least as long
  (trailing whitespace allowed); an unclosed fence runs to the end of the file;
* indented blocks are runs of lines indented by four or more columns (tabs
  expand to the next multiple of four) that do not continue a paragraph; blank
  lines inside the run are kept, trailing blank lines are not, and four columns
  of indentation are removed from every line.

A block is a query when, after removing ``<IRI>`` references, string literals
and ``#`` comments, it contains one of SELECT, CONSTRUCT, ASK, DESCRIBE or
REGISTER as a keyword (case-insensitive, not part of a prefixed name or a
variable).  Blocks whose fence info string names a data format (turtle, trig,
json, json-ld, ...) or whose first significant line starts with ``@prefix``,
``@base``, ``{`` or ``[`` are data and are skipped.

Each result is ``(file name, line, text)``: the file name is the path relative
to *root* in POSIX form (``"RSP-QL Sample Queries.md"``,
``"srbench/queries.md"``); ``line`` is the 1-based line of the block start, i.e.
the opening fence line of a fenced block or the first line of an indented block;
``text`` is the block content exactly as written (fence lines excluded,
indentation removed for indented blocks), joined with ``\\n``.
"""

from __future__ import annotations

import pathlib
import re

__all__ = ["rspql_md_queries", "md_code_blocks", "is_query_block"]

_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_QUERY_KEYWORD = re.compile(
    r"(?<![\w:?$@.-])(SELECT|CONSTRUCT|ASK|DESCRIBE|REGISTER)(?![\w:-])", re.IGNORECASE
)
_IRI = re.compile(r"<[^<>\"{}|^`\\\s]*>")
_STRING = re.compile(r"\"\"\".*?\"\"\"|'''.*?'''|\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'", re.S)
_DATA_LANGS = {
    "turtle", "ttl", "trig", "n3", "nt", "ntriples", "nq", "nquads", "json", "jsonld",
    "json-ld", "xml", "rdf", "csv", "tsv",
}


def _indent_width(line: str) -> int:
    col = 0
    for ch in line:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
    return col


def _strip_indent(line: str, width: int = 4) -> str:
    """Remove ``width`` columns of leading whitespace (tab-aware)."""
    col = 0
    i = 0
    while i < len(line) and col < width:
        ch = line[i]
        if ch == " ":
            col += 1
        elif ch == "\t":
            step = 4 - col % 4
            if col + step > width:  # a tab straddling the boundary: keep the rest as spaces
                return " " * (col + step - width) + line[i + 1:]
            col += step
        else:
            break
        i += 1
    return line[i:]


def md_code_blocks(text: str) -> list[tuple[int, str, str]]:
    """Return ``(start line, info string, content)`` for every code block in ``text``."""
    lines = text.splitlines()
    blocks: list[tuple[int, str, str]] = []
    i = 0
    prev_is_paragraph = False
    while i < len(lines):
        line = lines[i]
        m = _FENCE_OPEN.match(line)
        if m and not (m.group(2)[0] == "`" and "`" in m.group(3)):
            indent, fence, info = len(m.group(1)), m.group(2), m.group(3).strip()
            close = re.compile(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
            body = []
            j = i + 1
            while j < len(lines) and not close.match(lines[j]):
                raw = lines[j]
                k = 0  # remove up to the fence's own indentation
                while k < indent and k < len(raw) and raw[k] == " ":
                    k += 1
                body.append(raw[k:])
                j += 1
            blocks.append((i + 1, info, "\n".join(body)))
            i = j + 1
            prev_is_paragraph = False
            continue
        if line.strip() and _indent_width(line) >= 4 and not prev_is_paragraph:
            start = i
            body = []
            j = i
            while j < len(lines):
                cur = lines[j]
                if cur.strip():
                    if _indent_width(cur) < 4:
                        break
                    body.append(_strip_indent(cur))
                else:
                    body.append("")
                j += 1
            while body and not body[-1].strip():
                body.pop()
            blocks.append((start + 1, "", "\n".join(body)))
            i = start + len(body)
            prev_is_paragraph = False
            continue
        prev_is_paragraph = bool(line.strip()) and not line.lstrip().startswith("#")
        i += 1
    return blocks


def _strip_comments(text: str) -> str:
    return "\n".join(re.sub(r"#.*$", "", ln) for ln in text.split("\n"))


def is_query_block(info: str, content: str) -> bool:
    """True when a code block holds a query rather than data."""
    lang = info.split()[0].lower() if info.split() else ""
    if lang in _DATA_LANGS:
        return False
    for ln in content.split("\n"):
        s = ln.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith(("@prefix", "@base", "{", "[")):
            return False
        break
    cleaned = _strip_comments(_STRING.sub(" ", _IRI.sub(" ", content)))
    return _QUERY_KEYWORD.search(cleaned) is not None


def rspql_md_queries(root: pathlib.Path) -> list[tuple[str, int, str]]:
    """List ``(file name, block start line, query text)`` for the queries under ``root``.

    Reads ``*.md`` directly in ``root`` and in its sub-folders (only
    ``srbench/queries.md`` has queries there); see the module docstring for
    the per-file counts.
    """
    root = pathlib.Path(root)
    found: list[tuple[str, int, str]] = []
    paths = sorted(root.rglob("*.md"), key=lambda p: (len(p.relative_to(root).parts),
                                                       p.relative_to(root).as_posix()))
    for path in paths:
        if not path.is_file():
            continue
        name = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        for start, info, content in md_code_blocks(text):
            if is_query_block(info, content):
                found.append((name, start, content))
    return found
