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
