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


#: The folders a tree lends, whose insides are the borrower's: the report's own folder
#: (``--output`` may name any other), and the work folders of image builds (build
#: contexts, a commit bisection's archives; ``_profiles/.work``, ``_reproduce/.work``,
#: ``_bisect/.work``). Nothing there is a record of the tree.
LENT = {"report_dir", "profiles_work", "repro_work", "bisect_work", "bisect_archives"}


def _tree_path_methods() -> set[str]:
    """ResultsTree's methods that hand out a place in the tree (annotated to return a
    ``Path`` or a list of them, or named ``*_dir``/``*_path``), and results/' functions
    of a root that do (for code given the root alone), but for the folders it lends."""
    from openssl_matrix.results.tree import ResultsTree

    found = {"builds_root", "cpu_sessions", "runs", "finished_runs"}  # runs: their .path
    for name, member in vars(ResultsTree).items():
        returns = str(getattr(member, "__annotations__", {}).get("return", ""))
        if callable(member) and (returns in ("Path", "list[Path]")
                                 or name.endswith(("_dir", "_path"))):
            found.add(name)
    return found - LENT


def _dotted(node: ast.expr) -> str:
    """``self.ctx.tree`` for that expression; "" for anything but names and attributes."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


Scope = ast.AST
FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Calls whose result is a place in the tree when their argument (or receiver) is one.
CARRY = {"new_numbered_dir", "sorted", "list", "tuple", "iter", "next", "reversed"}
CARRY_METHODS = {"resolve", "absolute", "iterdir", "glob", "rglob", "with_name",
                 "with_suffix"}


class _Folders:
    """Which values of one module are places in a results tree: what a tree's method
    returned (``tree.build_dir(…)``, ``self.ctx.tree.new_run_dir(…)``), and, followed
    through the module, the names, ``self.`` attributes, fields of its classes and
    parameters they were handed to (``root = tree.bisect_dir(…)``, ``left[0]``, ``out =
    new_numbered_dir(root)``, ``for p in base.iterdir()``, ``_Run(run_dir, …).run_dir``, a
    function called with one, of this module or, through :func:`tree_place_joins_in`,
    one it imports from the package)."""

    def __init__(self, module: ast.Module, methods: set[str],
                 handed: dict[str, set[str]] | None = None) -> None:
        self.methods = methods
        self.names: dict[int, set[str]] = {}  # id(scope) -> names bound to a tree place
        self.attrs: set[str] = set()  # self.<attr> bound to one
        self.fields: set[str] = set()  # fields of this module's classes given one
        self.funcs: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self.classes: dict[str, list[str]] = {}  # a class's fields, in order
        self.imported: dict[str, tuple[str, str]] = {}  # name -> (module, function)
        self.outward: set[tuple[str, str, str]] = set()  # (module, function, param)
        for node in ast.walk(module):
            if isinstance(node, FUNCS):
                self.funcs.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = [
                    n.target.id for n in node.body
                    if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "openssl_matrix."):
                for a in node.names:
                    self.imported[a.asname or a.name] = (node.module or "", a.name)
        for name, params in (handed or {}).items():
            for func in self.funcs.get(name, []):
                self.names.setdefault(id(func), set()).update(params)
        self.scopes: list[Scope] = [module, *(f for fs in self.funcs.values() for f in fs)]
        self.nodes = {id(scope): self._scope_nodes(scope) for scope in self.scopes}
        while self._grow():
            pass

    @staticmethod
    def _scope_nodes(scope: Scope) -> list[ast.AST]:
        """The nodes of a function (or the module) outside the functions nested in it."""
        out: list[ast.AST] = []
        todo = list(ast.iter_child_nodes(scope))
        while todo:
            node = todo.pop()
            out.append(node)
            if not isinstance(node, (*FUNCS, ast.Lambda)):
                todo.extend(ast.iter_child_nodes(node))
        return out

    def _call(self, node: ast.Call, scope: Scope) -> bool:
        f = node.func
        if isinstance(f, ast.Attribute):
            if f.attr in self.methods and \
                    "tree" in _dotted(f.value).rsplit(".", 1)[-1].lower():
                return True
            return f.attr in CARRY_METHODS and self.derived(f.value, scope)
        if isinstance(f, ast.Name):
            return f.id in self.methods or (f.id in CARRY and any(
                self.derived(a, scope) for a in node.args))
        return False

    def derived(self, node: ast.expr, scope: Scope) -> bool:
        """Whether ``node`` is a place in the tree (in ``scope``)."""
        if isinstance(node, ast.Call):
            return self._call(node, scope)
        if isinstance(node, ast.Name):
            return node.id in self.names.get(id(scope), set())
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self" and \
                    node.attr in self.attrs:
                return True
            return node.attr in self.fields or (
                node.attr in ("parent", "path", "folder") and self.derived(node.value, scope))
        if isinstance(node, ast.Subscript):
            return self.derived(node.value, scope)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return self.derived(node.left, scope)
        if isinstance(node, ast.IfExp):
            return self.derived(node.body, scope) or self.derived(node.orelse, scope)
        if isinstance(node, (ast.NamedExpr, ast.Starred)):
            return self.derived(node.value, scope)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return any(self.derived(g.iter, scope) for g in node.generators)
        return False

    def _bind(self, target: ast.expr, scope: Scope) -> bool:
        if isinstance(target, (ast.Tuple, ast.List)):
            return any([self._bind(t, scope) for t in target.elts])
        names = self.names.setdefault(id(scope), set())
        if isinstance(target, ast.Name) and target.id not in names:
            names.add(target.id)
            return True
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                target.value.id == "self" and target.attr not in self.attrs:
            self.attrs.add(target.attr)
            return True
        return False

    def _binds(self, node: ast.AST, scope: Scope) -> bool:
        """Whether ``node`` binds its target to a tree place (``x: Path = …``, ``(x :=
        …)``, ``for x in …``)."""
        if isinstance(node, (ast.AnnAssign, ast.NamedExpr)):
            return node.value is not None and self.derived(node.value, scope)
        return isinstance(node, (ast.For, ast.comprehension)) and \
            self.derived(node.iter, scope)

    def _grow(self) -> bool:
        grew = False
        for scope in self.scopes:
            for node in self.nodes[id(scope)]:
                if isinstance(node, ast.Assign) and self.derived(node.value, scope):
                    grew |= any([self._bind(t, scope) for t in node.targets])
                elif self._binds(node, scope):
                    assert isinstance(node, (ast.AnnAssign, ast.NamedExpr, ast.For,
                                             ast.comprehension))
                    grew |= self._bind(node.target, scope)
                elif isinstance(node, ast.withitem) and node.optional_vars is not None \
                        and self.derived(node.context_expr, scope):
                    grew |= self._bind(node.optional_vars, scope)
                elif isinstance(node, ast.Call):
                    grew |= self._hand_on(node, scope)
        return grew

    def _hand_on(self, call: ast.Call, scope: Scope) -> bool:
        """A function or class called with a tree place: its parameter or field is one."""
        f = call.func
        self_call = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
            f.value.id == "self"
        name = f.id if isinstance(f, ast.Name) else \
            f.attr if isinstance(f, ast.Attribute) and self_call else ""
        handed = [(i, a) for i, a in enumerate(call.args) if self.derived(a, scope)]
        keywords = [k.arg for k in call.keywords if k.arg and self.derived(k.value, scope)]
        if not handed and not keywords:
            return False
        grew = False
        if name in self.classes:
            fields = self.classes[name]
            new = {fields[i] for i, _ in handed if i < len(fields)} | set(keywords)
            grew = not new <= self.fields
            self.fields |= new
        for func in self.funcs.get(name, []):
            params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
            if params[:1] == ["self"] and self_call:
                params = params[1:]
            new = {params[i] for i, _ in handed if i < len(params)} | set(keywords)
            names = self.names.setdefault(id(func), set())
            grew |= not new <= names
            names |= new
        if name in self.imported and not self_call:
            module, func_name = self.imported[name]
            self.outward |= {(module, func_name, f"#{i}") for i, _ in handed}
            self.outward |= {(module, func_name, k) for k in keywords}
        return grew

    def params(self, func_name: str, slot: str) -> set[str]:
        """The parameter of this module's function ``func_name`` at ``slot`` (``#0``, or
        a keyword's name)."""
        out = set()
        for func in self.funcs.get(func_name, []):
            params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
            if slot.startswith("#"):
                i = int(slot[1:])
                out |= {params[i]} if i < len(params) else set()
            elif slot in params or slot in [a.arg for a in func.args.kwonlyargs]:
                out.add(slot)
        return out

    def joins(self) -> dict[int, str]:
        """Every ``/`` onto a tree place, by line (the outermost join on it)."""
        found: dict[int, str] = {}
        for scope in self.scopes:
            for node in self.nodes[id(scope)]:
                if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and \
                        self.derived(node.left, scope):
                    line = f"{node.lineno}: {ast.unparse(node)}"
                    if len(line) > len(found.get(node.lineno, "")):
                        found[node.lineno] = line
        return found


def _sorted_joins(found: dict[int, str]) -> list[str]:
    return [found[n] for n in sorted(found)]


def tree_place_joins(source: str, methods: set[str] | None = None) -> list[str]:
    """Where ``source`` joins a name onto a place a results tree handed out (a
    ``tree.*_dir()``/``tree.*_path()`` or other ResultsTree method's path, or a folder
    obtained from one), instead of asking the tree for the file by its method."""
    folders = _Folders(ast.parse(source), _tree_path_methods() if methods is None
                       else methods)
    return _sorted_joins(folders.joins())


def tree_place_joins_in(sources: dict[str, str], methods: set[str] | None = None,
                        ) -> dict[str, list[str]]:
    """:func:`tree_place_joins` over modules (dotted name → source) that import each
    other's functions: a function handed a tree place by another module joins onto it
    as much as one handed it by its own."""
    methods = _tree_path_methods() if methods is None else methods
    trees = {name: ast.parse(src) for name, src in sources.items()}
    handed: dict[str, dict[str, set[str]]] = {name: {} for name in sources}
    while True:
        folders = {name: _Folders(t, methods, handed[name]) for name, t in trees.items()}
        grew = False
        for f in folders.values():
            for module, func, slot in f.outward:
                if module not in folders:
                    continue
                new = folders[module].params(func, slot)
                have = handed[module].setdefault(func, set())
                grew |= not new <= have
                have |= new
        if not grew:
            return {name: _sorted_joins(f.joins()) for name, f in folders.items()}


def test_no_path_into_the_results_tree_is_built_outside_results() -> None:
    """``results/`` is the one door (ResultsTree's methods, and its few functions of a
    root for code given the root alone): nothing above it joins onto a tree's root, nor
    onto a place the tree handed out (``tree.build_dir(…) / "error.log"``, ``run_dir /
    "raw"`` for a run folder ``tree.new_run_dir`` made): the tree names its own files."""
    sources = {".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts):
               path.read_text(encoding="utf-8") for path in sorted(PACKAGE.rglob("*.py"))}
    places = tree_place_joins_in(sources)
    found = {}
    for module, source in sources.items():
        rel = module.removeprefix("openssl_matrix.").replace(".", "/") + ".py"
        if rel.startswith("results/"):
            continue
        joins = sorted({*tree_joins(source), *places[module]},
                       key=lambda f: int(f.split(":")[0]))
        if joins:
            found[rel] = joins
    assert found == {}, "add a ResultsTree method (results/tree.py) and call it"


def test_the_door_check_sees_a_join() -> None:
    sample = ("p = tree.root / cpu\nq = self.tree.root / 'x' / 'y'\nr = root / BUILDS\n"
              "s = root / '_claims'\nt = Path(INTERLEAVED_DIR) / cpu\nu = out / 'charts'\n")
    assert [j.split(":")[0] for j in tree_joins(sample)] == ["1", "2", "3", "4", "5"]


def test_the_door_check_sees_a_join_onto_a_place_the_tree_handed_out() -> None:
    sample = (
        "def f(tree, rep):\n"
        "    a = tree.build_dir(v, d) / 'error.log'\n"  # 2: onto the call
        "    root = tree.bisect_dir(name)\n"
        "    out = root / f'{n:04d}'\n"  # 4: onto a name it was bound to
        "    write(out / 'bisection.json')\n"  # 5: and onto what was joined to it
        "    left = self.tree.recover(v)\n"
        "    log = left[0] / 'error.log' if left else left[0].parent / 'x'\n"  # 7
        "    new = new_numbered_dir(tree.repro_dir(i))\n"
        "    keep(new / 'verdicts.json', rep.out / 'side-by-side.txt')\n"  # 9 (one)
        "    _save(self.ctx.tree.new_run_dir(c, v, s), 1)\n"
        "def _save(run_dir, n):\n"
        "    atomic_write(run_dir / 'raw' / n, '')\n"  # 12: a parameter handed one
        "class C:\n"
        "    def __init__(self, tree):\n"
        "        self.archives = tree.bisect_dir('.git')\n"
        "    def g(self, sha):\n"
        "        return self.archives / sha\n"  # 17: a self. attribute bound to one
        "def h(tree, out, ctx):\n"
        "    ok = tree.write_raw(run, 'x', '') / out / ctx.build_dir(v, d) / 'x'\n"
        "    fine = out / 'charts' / tree_version(g, s)\n"
        "    for ref in tree.runs():\n"
        "        copy(ref.path / 'raw', [p / 'x' for p in (ref.path / 'y').iterdir()])\n")
    methods = {"build_dir", "bisect_dir", "recover", "repro_dir", "new_run_dir", "runs"}
    assert [j.split(":")[0] for j in tree_place_joins(sample, methods)] == \
        ["2", "4", "5", "7", "9", "12", "17", "22"]


def test_the_door_check_follows_a_place_into_another_module() -> None:
    sources = {
        "openssl_matrix.repro.run": "from openssl_matrix.repro.verdicts import write\n"
                                    "def run(tree, rep):\n"
                                    "    write(rep, tree.repro_dir(rep.id))\n",
        "openssl_matrix.repro.verdicts": "def write(rep, root):\n"
                                         "    save(root / 'verdicts.json')\n"
                                         "def other(root):\n    return root / 'x'\n",
    }
    found = tree_place_joins_in(sources, {"repro_dir"})
    assert found == {"openssl_matrix.repro.run": [],
                     "openssl_matrix.repro.verdicts": ["2: root / 'verdicts.json'"]}


def test_the_widened_check_knows_the_trees_places() -> None:
    methods = _tree_path_methods()
    assert {"build_dir", "new_run_dir", "repro_dir", "bisect_dir", "recover",
            "new_profile_dir", "claims_dir", "builds_root"} <= methods
    assert "lock" not in methods and "file_bisection" in methods  # it returns its folder
    assert not LENT & methods


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
