"""Damaged and hostile results trees: whatever happened to the files of a results tree (a
crash, a disk error, a hand edit, an attacker), ``export``, ``report`` and ``list`` (which
reads the build records) answer with the
results or with exit 9 naming the file — never a traceback, never ``Infinity``/``NaN`` in
an export, never a page an attribute can be injected into.

Hypothesis mutates a real tree (made by the Builder and Bencher against the fake backend)
the way tests/test_matrix_fuzz.py mutates matrices: values replaced by other types or
hostile text, keys deleted, files truncated, emptied, turned to bytes that are not UTF-8,
or replaced by a folder.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openssl_matrix.core.errors import INTERNAL_ERROR, ResultsError

from ..fake.test_report import make_tree
from .test_hostile import NO_CHART_HANDLERS, run, snapshot
from .test_matrix_fuzz import _paths as _json_paths
from .test_safety import _Attributes

HOSTILE = ['x" onmouseover="alert(1)', "<script>alert(1)</script>", "../../../etc/passwd",
           "..", "", "\x00", "1e400", "NaN", "-1", "ok", "complete", "é\u202e", "a/b"]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(HOSTILE),
    st.text(max_size=8),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=5,
)

_TEMPLATE: dict[str, Path] = {}


@pytest.fixture
def template(fake_matrix: Path, tmp_path: Path,
             tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real results tree per test session, copied for every example. Charts are left
    out (they draw the medians, read no file, and take most of a report's time): the
    commands run with NO_CHART_HANDLERS."""
    if "tree" not in _TEMPLATE:
        tree = make_tree(fake_matrix, tmp_path, rounds=1)
        keep = tmp_path_factory.mktemp("results-fuzz")
        shutil.copytree(tree.root, keep / "results")
        shutil.copy(fake_matrix, keep / "matrix.yaml")
        _TEMPLATE["tree"] = keep / "results"
    return _TEMPLATE["tree"]


@st.composite
def damage(draw: st.DrawFn, files: list[str]) -> list[tuple[str, str, Any]]:
    """A few (file, operation, argument) steps."""
    steps = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(files))
        op = draw(st.sampled_from(["replace", "replace", "replace", "delete", "truncate",
                                   "bytes", "empty", "folder", "whole"]))
        arg: Any = None
        if op in ("replace", "whole"):
            arg = draw(values)
        elif op == "truncate":
            arg = draw(st.floats(0.0, 1.0))
        elif op == "bytes":
            arg = draw(st.binary(min_size=1, max_size=40))
        steps.append((name, op, (arg, draw(st.integers(0, 10**6)))))
    return steps


def apply(root: Path, steps: list[tuple[str, str, Any]]) -> None:
    for name, op, (arg, pick) in steps:
        path = root / name
        if not path.is_file():
            continue
        text = path.read_bytes()
        if op in ("replace", "delete") and name.endswith(".json"):
            try:
                doc = json.loads(text)
            except ValueError:
                continue
            paths = [p for p in _json_paths(doc) if p]
            if not paths:
                continue
            where = paths[pick % len(paths)]
            parent = doc
            for key in where[:-1]:
                parent = parent[key]
            if op == "replace":
                parent[where[-1]] = arg
            else:
                del parent[where[-1]]
            path.write_text(json.dumps(doc))  # NaN/Infinity tokens as Python writes them
        elif op == "whole":
            path.write_text(json.dumps(arg))
        elif op == "truncate":
            path.write_bytes(text[: int(len(text) * arg)])
        elif op == "bytes":
            path.write_bytes(arg)
        elif op == "empty":
            path.write_bytes(b"")
        elif op == "folder":
            path.unlink()
            path.mkdir()


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()
                  and p.name != ".lock")


def _strict(line: str) -> Any:
    def refuse(token: str) -> None:
        raise AssertionError(f"{token} in an export")

    return json.loads(line, parse_constant=refuse)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_no_damaged_results_tree_reaches_the_user_as_a_traceback(
        template: Path, data: st.DataObject) -> None:
    steps = data.draw(damage(_files(template)))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        root = work / "results"
        shutil.copytree(template, root)
        apply(root, steps)
        before = snapshot(root)
        matrix = str(template.parent / "matrix.yaml")  # the build records, through list
        for command, flags in (("export", {"format": "jsonl"}), ("export", {}),
                               ("report", {"output": str(work / "rep")}),
                               ("list", {"matrix": matrix, "json": True})):
            code, out, err = run(command, results=str(root), table=NO_CHART_HANDLERS, **flags)
            text = err + out
            assert "Traceback" not in text
            assert code != INTERNAL_ERROR, (steps, text[:3000])
            assert code in (0, ResultsError.exit_code), (steps, code, text[:3000])
            if code:
                assert err.startswith("error: ") and str(root) in err, err[:1000]
                continue
            if command == "export" and flags.get("format") == "jsonl":
                for line in out.splitlines():
                    _strict(line)
            if command == "report":
                page = (work / "rep" / "index.html").read_text()
                parser = _Attributes()
                parser.feed(page)
                assert not [n for n in parser.names if n.startswith("on")]
                assert parser.scripts == 0
        # reading never changes the tree (the report goes to its own folder)
        assert snapshot(root) == before


# -- special files where a results file should be (issue 26) -------------------------
#
# A FIFO blocks whoever opens it for reading until a writer comes; /dev/zero never ends;
# /dev/null is a device that reads as empty. Every file of the tree the tool reads is
# replaced by each in turn: the command answers within 10 s, exit 9 naming the file (or
# 0 when the file is one it may ignore), and never writes outside its target.

SPECIAL = ("fifo", "link-to-dev-zero", "link-to-dev-null", "link-to-a-fifo-outside")


def _make_special(path: Path, kind: str, outside: Path) -> None:
    import os

    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link-to-dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "link-to-dev-null":
        path.symlink_to("/dev/null")
    else:
        fifo = outside / f"fifo-{path.name}"
        if not fifo.exists():
            os.mkfifo(fifo)
        path.symlink_to(fifo)


def _tree_files_read(template: Path) -> list[str]:
    """One of each kind of file the commands read: a run's meta and figures, a build
    record, the tree's lock, a journal, a raw output the report copies."""
    files = _files(template)
    picks: list[str] = []
    for suffix in ("meta.json", "figures.json", "build.json"):
        picks.append(next(f for f in files if f.endswith("/" + suffix)))
    picks.append(next(f for f in files if "/raw/" in f))
    picks += [f for f in files if f.startswith("_journal/")][:1]
    picks.append(".lock")
    return picks


@pytest.mark.parametrize("kind", SPECIAL)
def test_special_files_in_the_tree_never_hang(template: Path, kind: str) -> None:
    from .test_hostile import time_limit

    matrix = str(template.parent / "matrix.yaml")
    for rel in _tree_files_read(template):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            root = work / "results"
            shutil.copytree(template, root)
            (work / "outside").mkdir()
            if rel == ".lock" and not (root / rel).exists():
                (root / rel).touch()
            _make_special(root / rel, kind, work / "outside")
            before = snapshot(work / "outside")
            for command, flags in (("export", {"format": "jsonl"}),
                                   ("report", {"output": str(work / "rep")}),
                                   ("list", {"matrix": matrix, "json": True})):
                import time

                t0 = time.monotonic()
                with time_limit(10):
                    code, out, err = run(command, results=str(root),
                                         table=NO_CHART_HANDLERS, **flags)
                assert time.monotonic() - t0 < 10
                text = err + out
                where = (rel, kind, command)
                assert "Traceback" not in text, where
                assert code != INTERNAL_ERROR, (where, text[:2000])
                assert code in (0, ResultsError.exit_code), (where, code, text[:2000])
                if code:
                    assert Path(rel).name in err, (where, err[:1000])
            assert snapshot(work / "outside") == before


def test_a_run_whose_march_or_configure_is_not_text_still_reports(template: Path) -> None:
    """Hypothesis's find in CI (2026-12-02): ``variant.march`` replaced by ``true`` made the
    report crash (exit 70) joining the cell's slug."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "results"
        shutil.copytree(template, root)
        [meta] = sorted(root.glob("*/3.0.20-no-asm-x86_64/*/0001/meta.json"))
        doc = json.loads(meta.read_text())
        doc["variant"]["march"], doc["variant"]["configure"] = True, 5
        meta.write_text(json.dumps(doc))
        code, _, err = run("report", results=str(root), output=str(Path(tmp) / "rep"))
        assert code == 0, err[-2000:]
