"""RSP query corpora parse and translate: RSP4J and CSRBench query files, the seeds' queries (transcribed in
tests/queries/seeds with a manifest of what the papers themselves got wrong), and the RSP CG markdown drafts (read in
place). Queries that cannot parse are listed with the reason; each such rejection is asserted, not skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rspark.syntax.parser import QuerySyntaxError
from rspark.syntax.translate import compile_query
from tests.conftest import TESTDATA
from tests.support.rspql_md import rspql_md_queries

SEEDS = Path(__file__).parent / "queries" / "seeds"
MANIFEST = json.loads((SEEDS / "MANIFEST.json").read_text(encoding="utf-8"))

# Queries in the corpora that are not valid in any dialect, with the reason (each must be rejected).
INVALID_FILES = {
    "rsp4j/csparql2/src/test/resources/citybench/q12.rspql":
        "projects ?p while grouping by ?service only (Jena rejects it too)",
}
# The RSP CG drafts: (file, line of the block) -> why it cannot parse.
INVALID_MD = {
    ("Example_of_RSP-QL_query.md", 24): "speculative draft syntax: BEGIN AT, WITH DURATION, AGGREGATE { }, "
                                        "undeclared rdf: prefix",
    ("RSP-QL Sample Queries.md", 46): "SELECT COUNT(?ride) as ?rideCount without parentheses",
    ("RSP-QL Sample Queries.md", 90): "prefix ':' used but not declared",
    ("RSP-QL Sample Queries.md", 114): "prefix ':' used but not declared",
    ("RSP-QL Sample Queries.md", 154): "prefix ':' used but not declared",
    ("RSP-QL Sample Queries.md", 205): "(expr) AS ?profit outside parentheses",
    ("RSP-QL Sample Queries.md", 253): "prefix ':' used but not declared",
    ("RSP-QL Sample Queries.md", 281): "prefix ':' used but not declared",
    ("RSP-QL Sample Queries.md", 315): "SELECT SUM(...) ?as ?profit without parentheses",
    ("srbench/queries.md", 8): "prefix ':' used but not declared",
    ("srbench/queries.md", 24): "prefix ':' used but not declared",
    ("srbench/queries.md", 47): "prefix ':' used but not declared",
    ("srbench/queries.md", 75): "prefix ':' used but not declared",
}
# Seed queries with authors' mistakes that rspark still reads (lenient by design).
LENIENT_SEEDS = {
    "s002_12_predicate_window_s2_csparql.rq": "[RANGE 3 TRIPLES] is accepted as a C-SPARQL count window",
    "s002_15_fast_and_furious_csparql.rq": "GROUPBY: keywords need no separator in the grammar",
    "s002_16_fast_and_furious_rspql.rq": "GROUPBY: keywords need no separator in the grammar",
}

QUERY_FILES = sorted(TESTDATA.glob("rsp4j/**/*.rspql")) + sorted((TESTDATA / "csrbench/rspql-queries").glob("*.rspql"))


@pytest.mark.parametrize("path", QUERY_FILES, ids=lambda p: str(p.relative_to(TESTDATA)))
def test_rsp_query_files(path: Path):
    name = str(path.relative_to(TESTDATA))
    text = path.read_text(encoding="utf-8")
    if name in INVALID_FILES:
        with pytest.raises(QuerySyntaxError):
            compile_query(text, source=name)
    else:
        plan = compile_query(text, source=name)
        assert plan.is_continuous


@pytest.mark.testdata
def test_corpus_counts():
    assert len(QUERY_FILES) == 31  # 24 RSP4J + 7 CSRBench


@pytest.mark.parametrize("entry", MANIFEST, ids=lambda e: e["file"])
def test_seed_queries(entry):
    text = (SEEDS / entry["file"]).read_text(encoding="utf-8")
    if entry["author_errors"] and entry["file"] not in LENIENT_SEEDS:
        with pytest.raises(QuerySyntaxError):
            compile_query(text, source=entry["file"])
    else:
        compile_query(text, source=entry["file"])


def test_seed_manifest_counts():
    by_seed = {}
    for entry in MANIFEST:
        by_seed.setdefault(entry["seed"], [0, 0])
        by_seed[entry["seed"]][0 if not entry["author_errors"] else 1] += 1
    # seed -> [well-formed, with authors' errors]
    assert by_seed == {"000": [1, 0], "002": [18, 15], "003": [0, 7], "004": [1, 0]}
    # docs/language.md's conformance table says the same
    well = sum(counts[0] for counts in by_seed.values())
    wrong = sum(counts[1] for counts in by_seed.values())
    doc = (Path(__file__).parents[1] / "docs" / "language.md").read_text(encoding="utf-8")
    assert (f"{well} well-formed queries all parse; of {wrong} with authors' mistakes, {wrong - len(LENIENT_SEEDS)} "
            f"are rejected with a located message and {len(LENIENT_SEEDS)} are read leniently") in doc


MD_QUERIES = rspql_md_queries(TESTDATA / "rsp-ql")


@pytest.mark.parametrize("name,line,text", MD_QUERIES, ids=[f"{n}:{line}" for n, line, _ in MD_QUERIES])
def test_rsp_cg_markdown_queries(name, line, text):
    if (name, line) in INVALID_MD:
        with pytest.raises(QuerySyntaxError):
            compile_query(text, source=f"{name}:{line}")
    else:
        compile_query(text, source=f"{name}:{line}")


@pytest.mark.testdata
def test_markdown_counts():
    # 8 in "RSP-QL Sample Queries.md", 1 in "Example_of_RSP-QL_query.md", 4 in srbench/queries.md; every one of them
    # has a slip of its authors (see INVALID_MD), so each is asserted to be rejected with a located message.
    assert len(MD_QUERIES) == 13
    assert {(name, line) for name, line, _ in MD_QUERIES} == set(INVALID_MD)
