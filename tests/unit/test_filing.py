"""The files beside the records go through ResultsTree (results/filing.py, results/claims.py):
the same names and bytes the callers wrote by hand before, numbered folders never reused,
and a place outside the tree refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openssl_matrix.core.errors import ResultsError
from openssl_matrix.results.tree import ResultsTree


def test_a_bisection_takes_the_next_number_with_its_record_and_summary(tmp_path: Path) -> None:
    tree = ResultsTree(tmp_path)
    doc = {"schema": 1, "cell": "sha256@8192", "moves": [{"at": "3.0.0"}]}
    first = tree.file_bisection("c--1--2", doc, ["line one", "line two"])
    second = tree.file_bisection("c--1--2", doc, [])
    assert first == tmp_path / "_bisect" / "c--1--2" / "0001"
    assert second.name == "0002"
    assert (first / "bisection.json").read_text() == json.dumps(doc, indent=2) + "\n"
    assert (first / "summary.txt").read_text() == "line one\nline two\n"
    assert (second / "summary.txt").read_text() == "\n"
    assert [f.folder for f in tree.bisections()] == [second]


def test_a_reproduction_is_filed_and_its_newest_read_back_typed(tmp_path: Path) -> None:
    tree = ResultsTree(tmp_path / "results")
    spec = tmp_path / "spec.yaml"
    spec.write_text("id: r\n")
    old = tree.new_reproduction_dir("r")
    assert tree.file_reproduction(old, {"n": 1}, "old\n", spec) is None
    out = tree.new_reproduction_dir("r")
    warning = tree.file_reproduction(out, {"n": 2}, "text\n", tmp_path / "gone.yaml")
    assert warning is not None and warning.startswith("could not copy the spec")
    assert (out / "side-by-side.txt").read_text() == "text\n"
    assert json.loads((out / "verdicts.json").read_text()) == {"n": 2}
    (tree.repro_dir("r") / "0003").mkdir()  # never finished: no verdicts, passed over
    [filed] = tree.latest_reproductions()
    assert (filed.spec_id, filed.folder, dict(filed.verdicts)) == ("r", out, {"n": 2})
    assert [n for n, _ in filed.files()] == ["side-by-side.txt", "verdicts.json"]
    assert tree.write_reproduction_matrix("r", "a: 1\n") == tree.repro_dir("r") / "matrix.yaml"


def test_raw_outputs_and_error_logs_stay_inside_the_tree(tmp_path: Path) -> None:
    tree = ResultsTree(tmp_path / "results")
    run = tree.new_run_dir("cpu", "v", "s")
    assert tree.write_raw(run, "a.stdout", "out") == run / "raw" / "a.stdout"
    assert tree.has_raw(run, "a.stdout") and not tree.has_raw(run, "report.txt")
    assert [n for n, _ in tree.run_files(run)] == ["raw/a.stdout"]
    assert tree.write_error_log(run, "tb").read_text() == "tb"
    with pytest.raises(ResultsError, match="outside"):
        tree.write_raw(tmp_path / "elsewhere", "x", "")
    assert not (tmp_path / "elsewhere").exists()


def test_claims_are_created_once_read_and_dropped(tmp_path: Path) -> None:
    store = ResultsTree(tmp_path).claim_files()
    assert store.take("k", {"pid": 1}) and not store.take("k", {"pid": 2})
    assert store.read("k") == {"pid": 1}
    assert store.path("k") == tmp_path / "_builds" / "_claims" / "k.json"
    store.drop("k")
    store.drop("k")  # gone already: nothing to do
    with pytest.raises(KeyError):
        store.read("k")
    assert sorted(p.name for p in store.dir.iterdir()) == [], "no temp file left behind"
