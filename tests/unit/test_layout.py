"""The floor plan holds (docs/layout.md): the layers contract, no import cycle counting every
import, few imports inside functions, small modules and functions, a package folder one can
take in.

The layers themselves are checked by import-linter (``[tool.importlinter]`` in
pyproject.toml); the rest by reading the package's source with ``ast``, so an import
under ``if TYPE_CHECKING:`` or inside a function counts like any other.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "openssl_matrix"
#: Limits of issue 25.
MAX_MODULE_LINES = 800
MAX_FUNCTION_IMPORTS = 10
MAX_TOP_LEVEL_ENTRIES = 16
#: Issue 34: a function longer than this makes the next change expensive.
MAX_FUNCTION_LINES = 80
#: The bench core's limit (issue 34: BenchCell.run a short loop over the kind's steps).
MAX_MEASURE_FUNCTION_LINES = 60
#: The functions allowed to be longer (path below openssl_matrix/, name): none since the
#: parser's two were split in issue 35's round.
LONG_FUNCTIONS_ALLOWED: set[str] = set()
#: The modules an import inside a function may name: heavy and optional at start-up.
LAZY_ALLOWED = ("matplotlib", "docker")
#: And of our own, only this: cli/main.py's of the lab's worker. The command modules are
#: imported by name by the registry (cli/table.py), so that each command starts with its
#: own imports only (``parse`` without Docker, the report, the bench: issue 35);
#: tests/unit/test_cli_registry.py checks those names.
LAZY_OWN_ALLOWED = ("openssl_matrix.cli.worker",)


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imported(name: str, path: Path, node: ast.Import | ast.ImportFrom,
              known: dict[str, Path]) -> Iterator[str]:
    """The package modules one import statement names (a module, or a name's module)."""
    if isinstance(node, ast.Import):
        targets = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            here = here[:len(here) - (node.level - 1)]
            base = ".".join(here + ([node.module] if node.module else []))
        targets = [f"{base}.{a.name}" for a in node.names] + [base]
    for t in targets:
        if t in known and t != name:
            yield t


def import_graph() -> dict[str, set[str]]:
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        edges = graph.setdefault(name, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges.update(_imported(name, path, node, known))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_layers_contract_is_kept() -> None:
    exe = shutil.which("lint-imports")
    assert exe, "lint-imports is not installed: pip install -e '.[test]' (import-linter)"
    out = subprocess.run([exe, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout, out.stdout[-2000:]


def test_statistics_and_statuses_are_taken_from_core() -> None:
    """Issue 34, homes for shared things: the layers above the bench take statistics and
    status words from core (core/stats.py, core/statuses.py), never from the bench's
    measure/robust.py or measure/guards.py: a contract of its own, and every import
    (inside functions too) read here."""
    banned = {"openssl_matrix.measure.robust", "openssl_matrix.measure.guards"}
    above = ("openssl_matrix.report", "openssl_matrix.repro", "openssl_matrix.sweep")
    # the contract, as pyproject.toml spells it (tomllib is 3.11's; the tool runs on 3.10)
    [block] = [b for b in (ROOT / "pyproject.toml").read_text(encoding="utf-8").split(
        "[[tool.importlinter.contracts]]") if "openssl_matrix.measure.robust" in b]
    assert 'type = "forbidden"' in block and all(f'"{m}"' in block for m in (*banned, *above))
    graph = import_graph()
    wrong = sorted(f"{name} imports {target}" for name, edges in graph.items()
                   if name.startswith(above) for target in edges & banned)
    assert wrong == []


def test_no_import_cycle_counting_every_import() -> None:
    graph = import_graph()
    assert len(graph) > 50  # the walk found the package
    assert graph["openssl_matrix.cli.commands.build"]  # and its imports
    assert cycles(graph) == []


def test_the_cycle_check_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_imports_inside_functions_are_few_heavy_and_commented() -> None:
    found = []
    for name, path in modules().items():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    what = node.module if isinstance(node, ast.ImportFrom) else \
                        node.names[0].name
                    found.append((name, node.lineno, what or "", lines[node.lineno - 1]))
    assert len(found) <= MAX_FUNCTION_IMPORTS, found
    for name, line, what, text in found:
        assert what.split(".")[0] in LAZY_ALLOWED or (
            name == "openssl_matrix.cli.main" and what in LAZY_OWN_ALLOWED
        ), f"{name}:{line} imports {what} lazily"
        assert "#" in text, f"{name}:{line}: say why this import is inside a function"


def test_no_module_over_800_lines() -> None:
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines())
             for name, path in modules().items()}
    assert {n: s for n, s in sizes.items() if s > MAX_MODULE_LINES} == {}


def test_no_function_over_80_lines_none_in_measure_over_60() -> None:
    long = {}
    for path in modules().values():
        where = path.relative_to(PACKAGE).as_posix()
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert fn.end_lineno is not None
                length = fn.end_lineno - fn.lineno + 1
                limit = MAX_MEASURE_FUNCTION_LINES if where.startswith("measure/") \
                    else MAX_FUNCTION_LINES
                if length > limit:
                    long[f"{where}:{fn.name}"] = length
    assert {k: n for k, n in long.items() if k not in LONG_FUNCTIONS_ALLOWED} == {}


def test_the_package_folder_has_few_entries() -> None:
    entries = [p.name for p in PACKAGE.iterdir() if p.name != "__pycache__"]
    assert len(entries) <= MAX_TOP_LEVEL_ENTRIES, sorted(entries)


def test_the_readme_is_a_front_page_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert "bash .ci/setup && invoke matrix build && invoke matrix bench --cpu=auto" in text
    assert "bash .ci/setup && python3 -m pytest -q" in text
    for page in ("docs/releases.md", "docs/results.md", "docs/exit-codes.md",
                 "docs/layout.md"):
        assert f"]({page})" in text and (ROOT / page).is_file(), page
