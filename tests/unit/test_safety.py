"""The eight findings of issue 13, one test each (each failed before the fix), and the
pieces that fixed them: safe names, output targets, YAML limits, impossible figures, the
last-resort handler, the HTML template, atomic writes."""

from __future__ import annotations

import json
import math
import os
import stat
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from invoke.exceptions import Exit

from openssl_matrix.cli.shared import handlers
from openssl_matrix.cli.table import dispatch
from openssl_matrix.core.errors import ConfigError, ResultsError, UsageError
from openssl_matrix.core.files import atomic_write
from openssl_matrix.core.names import fold, inside, name_problem, safe_name
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.parse import parse_speed
from openssl_matrix.report.page import build_report
from openssl_matrix.results.export import render as export_render
from openssl_matrix.results.tree import ResultsTree

from ..fake.test_report import make_tree
from .test_hostile import FLAGS, bomb, matrix_text, pasted, patch_bomb, run

ROOT = Path(__file__).resolve().parents[2]


# -- 1. report --output never deletes what it did not write ------------------------


def test_finding1_report_output_keeps_the_users_files_and_the_tree(
        fake_matrix: Path, tmp_path: Path) -> None:
    tree = make_tree(fake_matrix, tmp_path, rounds=1)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    code, _, err = run("report", results=str(tree.root), output=str(mine))
    assert code == UsageError.exit_code and "not written by `invoke matrix report`" in err
    assert (mine / "thesis.tex").read_text() == "years of work"
    runs_before = sorted(p.relative_to(tree.root) for p in tree.root.rglob("*"))
    code, _, err = run("report", results=str(tree.root), output=str(tree.root))
    assert code == UsageError.exit_code and "is the results tree itself" in err
    assert sorted(p.relative_to(tree.root) for p in tree.root.rglob("*")) == runs_before
    # a folder the report wrote is replaced as a whole, nothing left beside it
    out = tmp_path / "rep"
    assert run("report", results=str(tree.root), output=str(out))[0] == 0
    (out / "stale.txt").write_text("from the old report")
    assert run("report", results=str(tree.root), output=str(out))[0] == 0
    assert not (out / "stale.txt").exists() and (out / ".openssl-matrix-report").is_file()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".rep")) == []


# -- 2. names that become paths ------------------------------------------------------


def test_finding2_a_pasted_version_cannot_write_outside_the_tree(tmp_path: Path) -> None:
    report = tmp_path / "r.txt"
    escape = tmp_path / "escaped"
    report.write_text(pasted(f"version: 3.0.2/../../../../..{escape}"))
    code, _, err = run("import", str(report), as_="x", results=str(tmp_path / "results"))
    assert code == 8 and "the version in its header" in err
    assert not escape.exists() and not (tmp_path / "results").exists()


def test_finding2_a_march_value_cannot_write_outside_the_render_folder(
        tmp_path: Path) -> None:
    m = tmp_path / "m.yaml"
    m.write_text(matrix_text(axes={"march": ["../../pwned"]}, default_variants=None,
                             include=None))
    out = tmp_path / "a" / "b" / "rendered"
    code, _, err = run("render", matrix=str(m), output=str(out))
    assert code == ConfigError.exit_code and "axes.march[0]" in err
    assert [p.name for p in tmp_path.rglob("*pwned*")] == []


def test_safe_names() -> None:
    for good in ("1.1.1w-asm-x86_64", "3.0.0-alpha3", "host-amd-epyc-7b13", "ref-ivy.2013",
                 "native--aes-128-cbc+sha256", "AES-128-CBC"):
        assert name_problem(good) is None, good
    for bad in ("", ".", "..", "a/b", "../x", ".hidden", "-flag", "a..b", "a b", "a\x00b",
                "x" * 121, "a\\b", "é"):
        assert name_problem(bad) is not None, bad
    with pytest.raises(ResultsError, match="variant: 'a/b' contains '/'"):
        safe_name("a/b", "variant", error=ResultsError)
    with pytest.raises(UsageError, match="outside"):
        inside(Path("/tmp/x"), Path("/tmp/x/../y"))
    assert fold("../../etc/passwd") == "etc-passwd" and fold("") == "x"
    tree = ResultsTree(Path("/nonexistent/results"))
    with pytest.raises(ResultsError, match="suite: '\\.\\.'"):
        tree.suite_dir("host-x", "1.1.1w-asm-x86_64", "..")


# -- 3. YAML with limits ------------------------------------------------------------


def test_finding3_an_alias_bomb_with_a_duplicate_key_does_not_hang(tmp_path: Path) -> None:
    m = tmp_path / "m.yaml"
    m.write_text(bomb(tail="versions: {v: {x: 1, x: 2}}\n"))
    code = ("import sys; from openssl_matrix.matrix.load import load_matrix\n"
            "try:\n load_matrix(sys.argv[1])\nexcept Exception as e: print(str(e)[:300])")
    try:
        out = subprocess.run([sys.executable, "-c", code, str(m)], capture_output=True,
                             text=True, timeout=60, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        pytest.fail("the duplicate-key check walked the aliases for a minute")
    assert "versions.v: duplicate key 'x'" in out.stdout, out.stdout + out.stderr


def test_finding3_a_bomb_in_patch_metadata_is_a_short_error(tmp_path: Path) -> None:
    patches = tmp_path / "p"
    patches.mkdir()
    (patches / "evil.yaml").write_text(patch_bomb())
    (patches / "evil.patch").write_text("")
    m = tmp_path / "m.yaml"
    m.write_text(matrix_text(patches_dirs=["p"]))
    with pytest.raises(ConfigError) as exc:
        load_matrix(m)
    assert "evil.yaml" in str(exc.value) and len(str(exc.value)) < 2000


# -- 4. impossible figures ----------------------------------------------------------


def test_finding4_1e400_is_never_an_ok_infinity() -> None:
    run_ = parse_speed("+H:16:64:256\n+F:22:aes-128-cbc:1e400:1e30:1000.00\n",
                       version="1.1.1w")
    by_size = {f.block_size: f for f in run_.figures}
    assert by_size[16].status == "impossible" and by_size[16].bytes_per_s is None
    assert "not a finite number" in by_size[16].detail and by_size[16].raw == "1e400"
    assert by_size[64].status == "impossible" and "beyond any machine" in by_size[64].detail
    assert by_size[256].status == "ok" and by_size[256].bytes_per_s == 1000.0


def _poison(tree: ResultsTree, bad: tuple[float, ...]) -> Path:
    """Give figures of one run's ok cell impossible values (as a damaged or hand-edited
    figures.json would); return the file."""
    ref = next(r for r in tree.runs() if r.variant == "1.1.1w-asm-x86_64")
    path = ref.path / "figures.json"
    figures = json.loads(path.read_text())
    cells = [f for f in figures if f.get("algorithm") == "aes-128-cbc"
             and f.get("status") == "ok" and f.get("mask") == "native"]
    for fig, value in zip(cells, bad, strict=False):
        fig["bytes_per_s"] = value
        fig["ops_per_s"] = value
    path.write_text(json.dumps(figures))  # json writes NaN/Infinity tokens
    return path


def _strict_rows(jsonl: str) -> list[dict[str, Any]]:
    def refuse(token: str) -> None:
        raise AssertionError(f"{token} in the export")

    return [json.loads(line, parse_constant=refuse) for line in jsonl.splitlines()]


def test_finding4_negative_and_absurd_figures_in_a_tree_are_never_averaged(
        fake_matrix: Path, tmp_path: Path) -> None:
    tree = make_tree(fake_matrix, tmp_path, rounds=1)
    _poison(tree, (-1.0, 1e30))
    summary = build_report(tree, tmp_path / "rep")
    for g in summary.groups:
        for cell in g.cells.values():
            for v in cell.ok_values:
                assert math.isfinite(v) and 0 < v < 1e14
    text = (tmp_path / "rep" / "data" / "report.json").read_text()
    assert "NaN" not in text and "Infinity" not in text and "1e+30" not in text
    rows = _strict_rows(export_render(tree, "jsonl"))
    bad = [r for r in rows if r["status"] == "impossible"]
    assert len(bad) == 2 and all(r["bytes_per_s"] is None for r in bad)
    details = sorted(r["detail"] for r in bad)
    assert "-1.0 is not a positive rate" in details[0]
    assert "1e+30 per second is beyond any machine" in details[1]


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_finding4_nan_and_infinity_in_a_tree_are_a_named_error_never_a_median(
        fake_matrix: Path, tmp_path: Path, bad: float) -> None:
    tree = make_tree(fake_matrix, tmp_path, rounds=1)
    path = _poison(tree, (bad,))
    for command, flags in (("report", {"output": str(tmp_path / "rep")}),
                           ("export", {"format": "jsonl"})):
        code, out, err = run(command, results=str(tree.root), **flags)
        assert code == ResultsError.exit_code, (code, err)
        assert str(path) in err and "Infinity" not in out and "NaN" not in out


def test_numeric_bounds_name_the_range(tmp_path: Path) -> None:
    for key, value, span in (("seconds", 10**32, "1 to 3600"), ("bytes", 10**12,
                                                                 "1 to 16777216"),
                             ("multi", 1000000, "1 to 1024"), ("repeat", 10**6, "1 to 100")):
        m = tmp_path / f"{key}.yaml"
        m.write_text(matrix_text().replace("    seconds: 1\n", f"    seconds: 1\n    {key}: "
                                           f"{value}\n", 1) if key != "seconds" else
                     matrix_text().replace("    seconds: 1\n", f"    seconds: {value}\n", 1))
        with pytest.raises(ConfigError, match=f"suites.blog.{key}: .*from {span}"):
            load_matrix(m)


# -- 6. the last-resort handler -----------------------------------------------------


def test_finding6_an_unexpected_exception_is_one_line_and_a_crash_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))

    def broken(**kwargs: object) -> int:
        return {"a": 1}["b"]  # a bug: KeyError

    table = {**handlers(), "list": broken}
    with pytest.raises(Exit) as exc:
        dispatch("list", "", dict(FLAGS), table)
    err = capsys.readouterr().err
    assert exc.value.code == 70
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "internal error in `invoke matrix list`: KeyError: 'b'" in err
    logs = list((tmp_path / "cache" / "crashes").iterdir())
    assert len(logs) == 1 and str(logs[0]) in err
    text = logs[0].read_text()
    assert "Traceback (most recent call last)" in text and "KeyError" in text
    exit_codes = (ROOT / "docs" / "exit-codes.md").read_text()  # linked from README.md
    assert "70 internal error" in exit_codes


# -- 7. HTML ------------------------------------------------------------------------


class _Attributes(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.names.update(name for name, _ in attrs)
        self.scripts += tag == "script"


def test_finding7_a_label_from_a_results_file_cannot_inject_attributes(
        fake_matrix: Path, tmp_path: Path) -> None:
    tree = make_tree(fake_matrix, tmp_path, rounds=1)
    repro = tree.root / "_reproduce" / "evil" / "0001"
    repro.mkdir(parents=True)
    (repro / "verdicts.json").write_text(json.dumps({
        "spec": {"id": "evil<script>alert(1)</script>", "title": "t",
                 "source": {"url": '"><img src=x onerror=alert(1)>'}},
        "ended": "now",
        "claims": [{"id": "c", "says": "<b>", "verdict": 'x"onmouseover="alert(1)',
                    "blocks": [{"block_size": '16" onclick="x', "reference_ratio": "1e400",
                                "our_ratio": 1.5}]}],
    }))
    ref = next(r for r in tree.runs())
    figures = json.loads((ref.path / "figures.json").read_text())
    figures[0]["status"] = 'ok"onfocus="alert(1)'
    (ref.path / "figures.json").write_text(json.dumps(figures))
    build_report(tree, tmp_path / "rep")
    page = (tmp_path / "rep" / "index.html").read_text()
    parser = _Attributes()
    parser.feed(page)
    assert not [n for n in parser.names if n.startswith("on")], parser.names
    assert parser.scripts == 0
    assert "&lt;script&gt;" in page and "1.50×" in page


# -- 8. output files ----------------------------------------------------------------


def test_finding8_atomic_write_leaves_links_and_special_files_alone(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("mine")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    with pytest.raises(ResultsError, match="not a regular file"):
        atomic_write(link, "new")
    assert link.is_symlink() and real.read_text() == "mine"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ResultsError):
        atomic_write(fifo, "new")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    code, _, err = run("export", output=str(link), results=str(tmp_path / "none"))
    assert code == UsageError.exit_code and "symbolic link" in err


def test_finding8_files_get_normal_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "a.txt", "x")
        assert stat.S_IMODE(os.stat(tmp_path / "a.txt").st_mode) == 0o644
        os.chmod(tmp_path / "a.txt", 0o640)
        atomic_write(tmp_path / "a.txt", "y")  # a replaced file keeps its mode
        assert stat.S_IMODE(os.stat(tmp_path / "a.txt").st_mode) == 0o640
        os.umask(0o077)
        atomic_write(tmp_path / "b.txt", "x")
        assert stat.S_IMODE(os.stat(tmp_path / "b.txt").st_mode) == 0o600
    finally:
        os.umask(old)


def test_finding8_seconds_bytes_and_multi_out_of_range_are_refused(tmp_path: Path) -> None:
    m = tmp_path / "m.yaml"
    m.write_text(matrix_text().replace("    seconds: 1\n", "    seconds: 1\n    multi: 1000000\n",
                                       1))
    code, _, err = run("list", matrix=str(m))
    assert code == 2 and "suites.blog.multi: expected a positive whole number from 1 to 1024" \
        in err
