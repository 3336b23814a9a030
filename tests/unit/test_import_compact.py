"""An import files its runs compactly (issue 35, item 4; results/compact.py): one file per
version folder instead of a folder and two files per run. The tree reads both layouts
alike (the same export bytes, the same report tables), a kill before a compact file is
renamed leaves none of its runs counted, and neither a second import of the same paste nor
a paste overlapping an earlier one files a run twice.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from openssl_matrix.core import files
from openssl_matrix.results import compact
from openssl_matrix.results.records import (
    read_figures,
    read_meta,
    run_dirs,
    write_figures,
    write_meta,
)

from ..scripts import load_script
from .test_hostile import NO_CHART_HANDLERS, run

pastes = load_script("pastes")


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))


def _import(src: Path, res: Path, as_: str = "x") -> tuple[int, str, str]:
    return run("import", str(src), as_=as_, results=str(res))


def _paste(tmp_path: Path, runs: int, name: str = "p.txt") -> Path:
    src = tmp_path / name
    src.write_text(pastes.paste(runs), encoding="utf-8")
    return src


def _old_layout(new: Path, old: Path) -> None:
    """``new`` (compact) as an import before compact files left the same runs: a folder
    per run with its meta.json and figures.json, written by records' own writers, the
    paste once in the import's first run folder (``raw/report.txt``) and named by every
    run's ``raw_report``, no ``run_digest``."""
    shutil.copytree(new, old)
    runs = [(p, read_meta(p), read_figures(p)) for *_, p in run_dirs(old)]
    pastes_held = {p.resolve() for p in old.rglob("report-*.txt")}
    for held in [*old.rglob("runs-*.jsonl"), *old.rglob("report-*.txt")]:
        held.unlink()
    first = sorted((m.extra["run_in_report"], p) for p, m, _ in runs if m is not None)[0][1]
    (first / "raw").mkdir(parents=True)
    text = (new / next(iter(pastes_held)).relative_to(old.resolve())).read_text()
    (first / "raw" / "report.txt").write_text(text)
    for path, meta, figures in runs:
        assert meta is not None
        doc = meta.to_json()
        doc.pop("run_digest")
        doc["raw_report"] = str((first / "raw" / "report.txt").relative_to(old))
        path.mkdir(exist_ok=True)
        write_figures(path, figures)
        write_meta(path, doc)


def _report(res: Path, out: Path) -> dict[str, Any]:
    code, _out, err = run("report", results=str(res), output=str(out), table=NO_CHART_HANDLERS)
    assert code == 0, err
    doc: dict[str, Any] = json.loads((out / "data" / "report.json").read_text())
    return doc


def test_a_compact_tree_and_its_old_layout_export_and_report_alike(tmp_path: Path) -> None:
    src = _paste(tmp_path, 40)
    new, old = tmp_path / "new", tmp_path / "old"
    code, _out, err = _import(src, new)
    assert code == 0, err
    held = sorted(p.relative_to(new) for p in new.rglob("*") if p.is_file())
    assert [p.name for p in held if p.name.startswith("runs-")] == [
        "runs-0001-0020.jsonl", "runs-0001-0020.jsonl"], held  # one per version folder
    assert len(held) == 4, held  # and the paste once, and the tree's lock
    _old_layout(new, old)
    assert not list(old.rglob("*.jsonl")) and len(list(old.rglob("meta.json"))) == 40
    assert [r[:4] for r in run_dirs(new)] == [r[:4] for r in run_dirs(old)]
    for fmt in ("csv", "jsonl"):
        a = run("export", results=str(new), format=fmt)
        b = run("export", results=str(old), format=fmt)
        assert a[0] == b[0] == 0, (a[2], b[2])
        assert a[1].count("\n") == 40 * 22 + (fmt == "csv")  # every figure, once
        assert a[1] == b[1].replace(str(old), str(new))
    rep_new, rep_old = _report(new, tmp_path / "rn"), _report(old, tmp_path / "ro")
    for name in ("cells.csv", "method-table-8192.csv", "ops-cells.csv"):
        assert (tmp_path / "rn" / "data" / name).read_bytes() == \
            (tmp_path / "ro" / "data" / name).read_bytes(), name
    for key in ("method_tables", "cells", "ops_cells", "sessions", "quality"):
        assert rep_new[key] == rep_old[key], key
    # a copied run holds the files its folder held (the paste aside, stored once)
    some = tmp_path / "rn" / rep_new["runs"][-1]["path"]
    twin = tmp_path / "ro" / rep_old["runs"][-1]["path"]
    assert json.loads((some / "figures.json").read_text()) == \
        json.loads((twin / "figures.json").read_text())


def test_reimporting_or_an_overlapping_paste_files_no_run_twice(tmp_path: Path) -> None:
    res = tmp_path / "results"
    assert _import(_paste(tmp_path, 10, "a.txt"), res)[0] == 0
    before = run("export", results=str(res))[1]
    code, out, err = _import(tmp_path / "a.txt", res)
    assert code == 0 and "already imported" in out, out + err
    assert run("export", results=str(res))[1] == before
    # the same ten runs and four more, in another file under the same name: four filed
    code, out, err = _import(_paste(tmp_path, 14, "b.txt"), res)
    assert code == 0, err
    rows = [json.loads(line) for line in
            run("export", results=str(res), format="jsonl")[1].splitlines()]
    assert len(rows) == 14 * 22
    runs = Counter((r["variant"], r["run"]) for r in rows)
    assert len(runs) == 14 and len({json.dumps(r, sort_keys=True) for r in rows}) == len(rows)
    code, out, err = _import(_paste(tmp_path, 6, "c.txt"), res)  # all of it filed before
    assert code == 0 and "already imported" in out and "nothing added" in out, out + err
    assert len(run("export", results=str(res), format="jsonl")[1].splitlines()) == 14 * 22
    # another name is another import
    assert _import(tmp_path / "a.txt", res, as_="y")[0] == 0
    assert len(run("export", results=str(res), format="jsonl")[1].splitlines()) == 24 * 22


class _Stopped(BaseException):
    pass


def test_a_stop_before_a_compact_file_is_renamed_counts_none_of_it(tmp_path: Path) -> None:
    src, res = _paste(tmp_path, 12), tmp_path / "results"
    renames: list[Path] = []

    def hook(path: Path) -> None:
        if path.name.startswith(compact.PREFIX):
            renames.append(path)
            if len(renames) == 2:  # the second version's file, whole but not renamed
                raise _Stopped

    with pytest.raises(_Stopped), files.write_faults(hook):
        _import(src, res)
    counted = [json.loads(line) for line in
               run("export", results=str(res), format="jsonl")[1].splitlines()]
    assert {r["variant"] for r in counted} == {renames[0].parent.parent.name}
    runs = Counter(r["run"] for r in counted)
    assert len(runs) == 6 and len(set(runs.values())) == 1  # its 6 runs, whole; no other
    assert not list(res.rglob("*.tmp"))  # removed by the import as it stopped
    code, _out, err = _import(src, res)
    assert code == 0 and "storing the rest" in err, err
    rows = run("export", results=str(res), format="jsonl")[1].splitlines()
    assert len(rows) == len(set(rows)) == 12 * 22
    assert "already imported" in _import(src, res)[1]


def test_a_kill_leaves_a_temporary_file_that_counts_nothing(tmp_path: Path) -> None:
    """A kill (no clean-up at all) as the first compact file is about to be renamed: its
    temporary file stays; nothing is counted; the next import removes it and files each
    run once."""
    src, res = _paste(tmp_path, 8), tmp_path / "results"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        def hook(path: Path) -> None:
            if path.name.startswith(compact.PREFIX):
                os._exit(137)

        try:
            with files.write_faults(hook):
                _import(src, res)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 137
    assert list(res.rglob(f".{compact.PREFIX}*.tmp"))
    code, out, err = run("export", results=str(res), format="jsonl")
    assert code == 0 and out == "", err
    assert _import(src, res)[0] == 0
    assert not list(res.rglob("*.tmp"))
    rows = run("export", results=str(res), format="jsonl")[1].splitlines()
    assert len(rows) == len(set(rows)) == 8 * 22


def test_a_compact_import_numbers_after_the_run_folders_before_it(tmp_path: Path) -> None:
    res = tmp_path / "results"
    assert _import(_paste(tmp_path, 4, "a.txt"), res)[0] == 0
    _old_layout(res, tmp_path / "old")
    assert _import(_paste(tmp_path, 6, "b.txt"), tmp_path / "old")[0] == 0
    # runs filed before run digests were recorded are matched by their file's sha256
    # only: the four runs b.txt shares with a.txt are filed again, after the folders
    names = [(v, r) for _c, v, _s, r, _p in run_dirs(tmp_path / "old")]
    assert names == [(v, f"{n:04d}") for v in ("1.1.1w", "3.0.20") for n in range(1, 6)]
    assert sorted(p.name for p in (tmp_path / "old").rglob("runs-*.jsonl")) == [
        "runs-0003-0005.jsonl", "runs-0003-0005.jsonl"]
    assert (tmp_path / "old" / "ref-x" / "3.0.20" / "import" / "0002" / "meta.json").is_file()


def test_a_damaged_compact_file_is_named(tmp_path: Path) -> None:
    res = tmp_path / "results"
    assert _import(_paste(tmp_path, 4), res)[0] == 0
    held = sorted(res.rglob("runs-*.jsonl"))[0]
    lines = held.read_text().splitlines()
    held.write_text("\n".join([lines[0], lines[1][: len(lines[1]) // 2], *lines[2:]]) + "\n")
    code, _out, err = run("export", results=str(res))
    assert code == 9 and str(held) in err and "not JSON" in err and "move" in err, err
    held.write_text('{"format": "something else"}\n')
    code, _out, err = run("report", results=str(res), table=NO_CHART_HANDLERS)
    assert code == 9 and str(held) in err and "header" in err, err
