"""The package's layers: imports only go down (the import-linter contracts in pyproject.toml), no module imports
itself back through others, no module imports another module's private names, and the front end and the stream
model work without PySpark."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "rspark"


def test_import_linter_contracts_are_kept():
    # the contracts are in pyproject.toml; `lint-imports` reads them from the working directory
    done = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def _cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph.modules:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_import_cycles_not_even_inside_functions():
    graph = grimp.build_graph("rspark")  # imports inside functions count too
    assert _cycles(graph) == []


def test_no_private_name_is_imported_from_another_module():
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rspark"):
                found += [f"{path.relative_to(REPO)}:{node.lineno}: {a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert found == []


def test_front_end_and_stream_model_import_without_pyspark():
    """``rspark.rsp``, ``rspark.algebra``, ``rspark.syntax`` (and the package itself) with PySpark, py4j, pyarrow
    and pandas made unimportable: a query still compiles and prints; only ``Engine`` needs Spark."""
    code = """
import sys

class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyspark", "py4j", "pyarrow", "pandas"):
            raise ImportError("blocked: " + name)

sys.meta_path.insert(0, Block())
import rspark.rsp, rspark.rsp.windows, rspark.rsp.profiles, rspark.syntax.translate, rspark.algebra.sse
import rspark.syntax.parser, rspark.syntax.unparse, rspark.results
import rspark
print(rspark.explain("SELECT ?s WHERE { ?s ?p ?o }").split()[0])
try:
    rspark.Engine
except ImportError as exc:
    print("Engine:", exc)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["(project", "Engine: blocked: pyspark"]


SERVICE_SEES = {"rspark.engine.engine", "rspark.engine.live.view", "rspark.engine.live.sinks",
                "rspark.engine.live.files"}


def test_the_service_imports_only_the_public_interface_of_live_mode():
    """``rspark.service`` reads live mode through the read model; of ``rspark.engine`` it imports only the Engine,
    the read model's values, the sink interface and the JSON file helper (an import-linter contract says so too,
    with these four as its only exceptions)."""
    import tomllib

    graph = grimp.build_graph("rspark")
    used = {imported for module in graph.find_descendants("rspark.service")
            for imported in graph.find_modules_directly_imported_by(module) if imported.startswith("rspark.engine")}
    assert used <= SERVICE_SEES, used - SERVICE_SEES
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    service = [c for c in contracts if c.get("source_modules") == ["rspark.service"]]
    assert len(service) == 1 and service[0]["forbidden_modules"] == ["rspark.engine"]
    assert {i.split(" -> ")[1] for i in service[0]["ignore_imports"]} == SERVICE_SEES


@pytest.mark.parametrize("folder", ["engine", "service"])
def test_no_function_in_the_engine_or_the_service_is_longer_than_80_lines(folder):
    """The engine's modules are drivers and orchestration, the service's are handlers: a function longer than a
    screen is a sign that model logic (windows, instants, plans) has crept up from the layers below."""
    long = []
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > 80:
                    long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}: {lines} lines")
    assert long == []


def _inner_imports(path: Path) -> list[tuple[int, bool]]:
    """(line, has a reason) of each import inside a function of ``path``. A reason is a comment on the import's
    line or the line above; one comment covers a block of imports that follow each other (blank lines between)."""
    src = path.read_text(encoding="utf-8").splitlines()
    out: list[tuple[int, bool]] = []

    def own_reason(n) -> bool:
        return "#" in src[n.lineno - 1] or (n.lineno > 1 and src[n.lineno - 2].strip().startswith("#"))

    def visit(node, in_function: bool) -> None:
        for name in ("body", "orelse", "finalbody", "handlers"):
            stmts = getattr(node, name, None)
            if not isinstance(stmts, list):
                continue
            reasoned, prev = False, None
            for n in stmts:
                if in_function and isinstance(n, (ast.Import, ast.ImportFrom)):
                    follows = isinstance(prev, (ast.Import, ast.ImportFrom)) and all(
                        not src[i].strip() for i in range(prev.end_lineno, n.lineno - 1))
                    reasoned = own_reason(n) or (follows and reasoned)
                    out.append((n.lineno, reasoned))
                prev = n
            for n in stmts:
                visit(n, in_function or isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(ast.parse("\n".join(src)), False)
    return out


def test_every_import_inside_a_function_says_why():
    """An import inside a function delays a heavy library (PySpark, pyarrow, pyoxigraph, pandas, uvicorn) for the
    commands that do not need it; each says so in a comment, and the others are at the top of their module."""
    unreasoned = [f"{path.relative_to(REPO)}:{line}" for path in sorted(PACKAGE.rglob("*.py"))
                  for line, reasoned in _inner_imports(path) if not reasoned]
    assert unreasoned == []
