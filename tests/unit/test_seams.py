"""Issue 34: the tests reach the package through its seams (a parameter, a constructor
argument, a seam object passed down, or a block such as ``files.write_faults`` and
``clock.read_from``), never by patching a module's or a class's attribute."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

#: Attributes of standard-library modules still replaced in a test, each with why no seam
#: stands in: the crash test kills a forked child at every file its report opens for
#: writing, and the report writes its folder through open(), os.open and shutil.copy2.
ALLOWED_ASSIGNMENTS = {
    ("fake/test_hostile_writes.py", "os.open"),
    ("fake/test_hostile_writes.py", "io.open"),
    ("fake/test_hostile_writes.py", "builtins.open"),
}


def _imported_names(tree: ast.Module) -> set[str]:
    """The names a module binds to imported modules or classes (``import x``, ``from a
    import b``): what an assignment ``name.attr = ...`` would patch."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
    return names


def patches(path: Path) -> list[str]:
    """Where ``path`` patches an attribute: ``<anything>.setattr(`` / ``.delattr(`` calls
    (pytest's monkeypatch, a ``MonkeyPatch.context()``), and assignments to an attribute
    of an imported module or class (``files.HOOK = ...``, ``Path.write_text = ...``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = _imported_names(tree)
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("setattr", "delattr")):
            found.append(f"{node.lineno}: {ast.unparse(node.func)}(")
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        else:
            continue
        for target in targets:
            for t in target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]:
                if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                        and t.value.id in imported):
                    found.append(f"{node.lineno}: {ast.unparse(t)} =")
    return sorted(found, key=lambda f: int(f.split(":")[0]))


def test_no_test_patches_a_module_or_class_attribute() -> None:
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(TESTS).as_posix()
        left = [f for f in patches(path)
                if (rel, f.split(": ", 1)[1].removesuffix(" =")) not in ALLOWED_ASSIGNMENTS]
        if left:
            found[rel] = left
    assert found == {}, "inject a seam instead (a parameter, Charts(save=), handlers(...))"


def test_the_check_sees_a_patch(tmp_path: Path) -> None:
    sample = tmp_path / "t.py"
    sample.write_text("import os\nfrom openssl_matrix.core import files\n"
                      "def test(monkeypatch):\n"
                      "    monkeypatch.setattr(os, 'getcwd', lambda: '/')\n"
                      "    with monkeypatch.context() as m:\n        m.setattr(files, 'X', 1)\n"
                      "    files.HOOK = None\n    monkeypatch.setenv('A', '1')\n"
                      "    local = object()\n    setattr(local, 'y', 1)\n")
    assert patches(sample) == ["4: monkeypatch.setattr(", "6: m.setattr(", "7: files.HOOK ="]


# -- the results tree has one door -------------------------------------------------------

PACKAGE = TESTS.parent / "openssl_matrix"
#: The names of the tree's own folders (results/records.py, tree.py, interleaved.py).
TREE_FOLDERS = {"IMAGES", "BUILDS", "JOURNALS", "REPRO_DIR", "PROFILES_DIR", "BISECT_DIR",
                "INTERLEAVED_DIR", "LAB_DIR", "REPORT_DIR"}


def _leftmost(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        node = node.left
    return node


def tree_joins(source: str) -> list[str]:
    """Where ``source`` builds a path into a results tree by hand: a ``/`` onto a
    ``.root`` (a ResultsTree's, or a Shipper's that was one), onto one of the tree's
    folder names (``"_builds"``, ``BISECT_DIR``), or from ``Path(<a tree folder>)``."""
    found: dict[int, str] = {}  # line -> the outermost join on it
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
            continue
        left, right = _leftmost(node), node.right
        named = (isinstance(right, ast.Name) and right.id in TREE_FOLDERS) or (
            isinstance(right, ast.Constant) and isinstance(right.value, str)
            and right.value.startswith("_") and len(right.value) > 1)
        rooted = isinstance(left, ast.Attribute) and left.attr == "root"
        from_folder = (isinstance(left, ast.Call) and isinstance(left.func, ast.Name)
                       and left.func.id == "Path" and any(
                           isinstance(a, ast.Name) and a.id in TREE_FOLDERS
                           for a in left.args))
        if named or rooted or from_folder:
            found.setdefault(node.lineno, f"{node.lineno}: {ast.unparse(node)}")
    return sorted(found.values(), key=lambda f: int(f.split(":")[0]))


def test_no_path_into_the_results_tree_is_built_outside_results() -> None:
    """``results/`` is the one door (ResultsTree's methods, and its few functions of a
    root for code given the root alone): nothing above it joins onto a tree's root."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("results/"):
            continue
        joins = tree_joins(path.read_text(encoding="utf-8"))
        if joins:
            found[rel] = joins
    assert found == {}, "add a ResultsTree method (results/tree.py) and call it"


def test_the_door_check_sees_a_join() -> None:
    sample = ("p = tree.root / cpu\nq = self.tree.root / 'x' / 'y'\nr = root / BUILDS\n"
              "s = root / '_claims'\nt = Path(INTERLEAVED_DIR) / cpu\nu = out / 'charts'\n")
    assert [j.split(":")[0] for j in tree_joins(sample)] == ["1", "2", "3", "4", "5"]


def records_calls(source: str) -> list[str]:
    """Where ``source`` hands a tree's root to a function of ``results/records.py``
    (``records.read_latest(root, …)``, or ``profile_dir(self.tree.root, …)`` imported from
    it): the first argument a ``root``, a ``…_root`` or an ``….root``."""
    tree = ast.parse(source)
    modules: set[str] = set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "openssl_matrix.results":
            modules |= {a.asname or a.name for a in node.names if a.name == "records"}
        elif isinstance(node, ast.ImportFrom) and node.module == "openssl_matrix.results.records":
            names |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            modules |= {a.asname for a in node.names
                        if a.name == "openssl_matrix.results.records" and a.asname}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        first, f = node.args[0], node.func
        rooted = (isinstance(first, ast.Name) and (first.id == "root"
                                                    or first.id.endswith("_root"))) or (
            isinstance(first, ast.Attribute) and first.attr == "root")
        ours = (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                and f.value.id in modules) or (isinstance(f, ast.Name) and f.id in names)
        if rooted and ours:
            found.append(f"{node.lineno}: {ast.unparse(node.func)}(")
    return sorted(found, key=lambda f: int(f.split(":")[0]))


def test_no_records_function_is_handed_a_tree_root_outside_results() -> None:
    """Above ``results/``, the records of a tree are read and written through
    ``ResultsTree``'s methods, never by handing its root to ``records.*``."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("results/"):
            continue
        calls = records_calls(path.read_text(encoding="utf-8"))
        if calls:
            found[rel] = calls
    assert found == {}, "add a ResultsTree method (results/tree.py) and call it"


def test_the_records_check_sees_a_call() -> None:
    sample = ("from openssl_matrix.results import records\n"
              "from openssl_matrix.results.records import profile_dir, read_json\n"
              "a = records.read_latest(self.tree.root, v)\n"
              "b = profile_dir(root, v, c)\nc = records.finished_runs(tree_root)\n"
              "d = read_json(path)\ne = self.tree.read_latest(v)\n"
              "f = records.builds_dir(tree.root, v)\n")
    assert [c.split(":")[0] for c in records_calls(sample)] == ["3", "4", "5", "8"]
