"""Issue 35, "hostile inputs, round four": each numbered defect found by the probe, tried
the way the probe tried it (through the command line), with the behaviour the docs
promise (docs/exit-codes.md, docs/robustness.md, docs/matrix.md)."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openssl_matrix.cli.shared import handlers
from openssl_matrix.report.charts import Charts
from openssl_matrix.results.records import read_meta

from .test_hostile import ROOT, run

pytestmark = pytest.mark.hostile


@pytest.fixture(autouse=True)
def _nothing_outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No Docker engine is ever reached, and crash logs (if any) stay in the test's folder."""
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / ".cache"))
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")


def cli(*args: str, cwd: Path, timeout: float = 15) -> subprocess.CompletedProcess[str]:
    """``python -m openssl_matrix ARGS`` in its own process (a hang ends at ``timeout``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DOCKER_HOST": "unix:///nonexistent.sock",
           "OPENSSL_MATRIX_CACHE": str(cwd / ".cache")}
    return subprocess.run([sys.executable, "-m", "openssl_matrix", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


# -- 1: an alias inside the value it names ------------------------------------------------

SELF_ALIASES = {
    "sequence": "versions: &v [*v]\n",
    "mapping": "versions: &v {a: *v}\n",
    "merge-key": "versions: &v {<<: *v}\n",
    "deep": "versions: &v {a: [{b: [*v]}]}\n",
}


@pytest.mark.parametrize("text", SELF_ALIASES.values(), ids=SELF_ALIASES)
def test_a_matrix_whose_alias_refers_to_itself_is_refused_at_once(tmp_path: Path,
                                                                    text: str) -> None:
    (tmp_path / "m.yaml").write_text(text)
    done = cli("list", "--matrix", "m.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "m.yaml" in done.stderr and "refers to the value that holds it" in done.stderr


def test_a_report_spec_whose_alias_refers_to_itself_is_refused_at_once(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text("id: r\ntitle: &t [x, *t]\n")
    done = cli("reproduce", "r.yaml", "--check", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "r.yaml" in done.stderr and "refers to the value that holds it" in done.stderr


def test_a_lock_file_whose_alias_refers_to_itself_is_refused(tmp_path: Path) -> None:
    from openssl_matrix.core.errors import SourceError
    from openssl_matrix.images.sources import read_pins

    lock = tmp_path / "m.lock"
    lock.write_text("sources: &s {x: *s}\n")
    with pytest.raises(SourceError, match="refers to the value that holds it"):
        read_pins(lock)


@pytest.mark.parametrize("text", [*SELF_ALIASES.values(), "a: " + "[" * 200 + "]" * 200 + "\n",
                                  "a: " + "x" * (1 << 20) + "\n"],
                         ids=[*SELF_ALIASES, "deep-nesting", "over-1-MiB"])
def test_a_sweep_notes_file_is_read_within_the_yaml_limits(tmp_path: Path, text: str) -> None:
    # found by the round-four audit: sweep's notes.yaml was read by yaml.safe_load unbounded
    from openssl_matrix.core.errors import ConfigError
    from openssl_matrix.sweep.sweep import read_notes

    (tmp_path / "notes.yaml").write_text(text)
    with pytest.raises(ConfigError, match=r"notes\.yaml") as err:
        read_notes(tmp_path)
    assert err.value.hint is not None and "notes.yaml" in err.value.hint


def test_shared_aliases_are_not_taken_for_a_cycle() -> None:
    from openssl_matrix.core.yamlload import load_yaml

    doc = load_yaml("a: &a [1, 2]\nb: [*a, *a, {c: *a}]\nd: &d {e: 1}\nf: {<<: *d, g: 2}\n")
    assert doc["b"] == [[1, 2], [1, 2], {"c": [1, 2]}] and doc["f"] == {"e": 1, "g": 2}


# -- 4, 5: byte-order marks and UTF-16 ------------------------------------------------------

PASTE = ("OpenSSL 1.0.1e 11 Feb 2013\n"
         "type 16 bytes 64 bytes 256 bytes 1024 bytes 8192 bytes\n"
         "aes-128-cbc 305049.90k 327331.20k 332573.95k 334071.81k 333987.84k\n")
ENCODED = {
    "utf-8-bom": b"\xef\xbb\xbf" + PASTE.encode(),
    "utf-16-le-bom": b"\xff\xfe" + PASTE.encode("utf-16-le"),
    "utf-16-be-bom": b"\xfe\xff" + PASTE.encode("utf-16-be"),
    "utf-32-bom": PASTE.encode("utf-32"),
    "two-pastes-one-bom-each": (b"\xef\xbb\xbf" + PASTE.encode()) * 2,
}


@pytest.mark.parametrize("raw", ENCODED.values(), ids=ENCODED)
def test_a_paste_with_a_byte_order_mark_keeps_its_version_line(tmp_path: Path,
                                                               raw: bytes) -> None:
    (tmp_path / "p.txt").write_bytes(raw)
    code, out, err = run("parse", str(tmp_path / "p.txt"))
    assert code == 0, err
    assert out.startswith("run 1: OpenSSL 1.0.1e 11 Feb 2013\n"), out
    assert "no version header" not in out and "305,049,900" in out


def test_an_import_of_a_paste_with_a_utf8_bom_is_filed_under_its_version(
        tmp_path: Path) -> None:
    (tmp_path / "p.txt").write_bytes(ENCODED["utf-8-bom"])
    code, _out, err = run("import", str(tmp_path / "p.txt"), as_="bom",
                         results=str(tmp_path / "results"))
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "results" / "ref-bom").iterdir()
                  if p.is_dir()) == ["1.0.1e"]


@pytest.mark.parametrize(("codec", "name"), [("utf-16-le", "UTF-16LE"),
                                            ("utf-16-be", "UTF-16BE")])
def test_utf16_without_a_byte_order_mark_is_refused_by_its_encoding(tmp_path: Path,
                                                                   codec: str,
                                                                   name: str) -> None:
    (tmp_path / "p.txt").write_bytes(PASTE.encode(codec))
    for command, flags in (("parse", {}), ("import", {"as_": "x"})):
        code, _out, err = run(command, str(tmp_path / "p.txt"), **flags,
                             results=str(tmp_path / "results"))
        assert code == 8, (command, err)
        assert f"looks like {name} text without a byte-order mark" in err, err
        assert "iconv -f UTF-16" in err and "no `openssl speed` table" not in err
    assert not (tmp_path / "results").exists()


def test_a_paste_that_is_not_what_its_byte_order_mark_says_is_refused_by_name(
        tmp_path: Path) -> None:
    (tmp_path / "p.txt").write_bytes(b"\xff\xfe" + PASTE.encode("utf-16-le") + b"\x00\xdc")
    code, _out, err = run("parse", str(tmp_path / "p.txt"))
    assert code == 8 and "byte-order mark of UTF-16 (little-endian)" in err, err


# -- 7: the command line's own errors are the tool's (exit 10), through every entry point ---

def invoke_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``invoke matrix ARGS`` (the tasks.py entry point) from the project folder."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DOCKER_HOST": "unix:///nonexistent.sock",
           "OPENSSL_MATRIX_CACHE": str(cwd / ".cache")}
    return subprocess.run(["invoke", "matrix", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)


BAD_LINES = {
    "unknown-flag": (["list", "--bogus"], r"unknown flag '--bogus'"),
    "unknown-flag-with-value": (["list", "--bogus=1"], r"unknown flag '--bogus'"),
    "misspelt-flag": (["list", "--jsn"], r"unknown flag '--jsn'\n  hint: perhaps you meant "
                      r"--json\?"),
    "short-flag": (["export", "-o", "x.csv"], r"unknown flag '-o'"),
    "missing-value-at-the-end": (["export", "--output"], r"--output needs a value"),
    "missing-value-before-a-flag": (["export", "--output", "--format=csv"],
                                    r"--output needs a value"),
    "missing-integer-value": (["report", "--block-size"], r"--block-size needs a value"),
    "extra-word": (["list", "extra"], r"`invoke matrix list` takes no argument, got 'extra'"),
    "second-file": (["parse", "a.txt", "b.txt"],
                    r"`invoke matrix parse` takes one FILE, got more: 'b.txt'"),
    "bench-with-a-stray-flag": (["bench", "--cpu=auto", "--bogus"], r"unknown flag '--bogus'"),
}


@pytest.mark.parametrize(("args", "message"), BAD_LINES.values(), ids=BAD_LINES)
def test_a_bad_command_line_is_exit_10_with_a_hint_through_python_m(
        tmp_path: Path, args: list[str], message: str) -> None:
    import re

    done = cli(*args, cwd=tmp_path)
    assert done.returncode == 10, (done.returncode, done.stderr)
    assert done.stderr.startswith("error: "), done.stderr
    assert re.search(message, done.stderr), done.stderr
    assert "No idea what" not in done.stderr and "needed value" not in done.stderr
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("case", ["unknown-flag", "missing-value-at-the-end", "second-file"])
def test_a_bad_command_line_is_exit_10_through_invoke(tmp_path: Path, case: str) -> None:
    import re

    args, message = BAD_LINES[case]
    done = invoke_cli(*args, cwd=tmp_path)
    assert done.returncode == 10, (done.returncode, done.stderr)
    assert re.search(message, done.stderr) and "No idea what" not in done.stderr


def test_a_flag_value_that_is_also_the_task_name_is_still_its_value(tmp_path: Path) -> None:
    done = cli("list", "--only", "matrix", "--matrix", str(ROOT / "matrix.yaml"), cwd=tmp_path)
    assert done.returncode == 2 and "--only 'matrix' matches no variant" in done.stderr, \
        done.stderr


def test_good_command_lines_still_parse(tmp_path: Path) -> None:
    (tmp_path / "p.txt").write_text(PASTE)
    done = cli("import", "--as", "x", "p.txt", "--results", "res", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = cli("export", "--results=res", "--output", "out.csv", "--format", "csv",
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len((tmp_path / "out.csv").read_text().splitlines()) == 1 + 5  # header, figures
    done = cli("list", "-h", cwd=tmp_path)
    assert done.returncode == 0 and "usage: invoke matrix list" in done.stdout


# -- 8: a count of zero is refused, not taken for the default ------------------------------

ZERO_COUNTS = {
    "repeat-0": ("bench", {"cpu": "auto", "repeat": "0"}, "--repeat=0", "the suite's repeat"),
    "repeat-negative": ("bench", {"cpu": "auto", "repeat": "-2"}, "--repeat=-2",
                        "the suite's repeat"),
    "jobs-0": ("build", {"jobs": "0"}, "--jobs=0", "one variant at a time"),
    "block-size-0": ("report", {"block_size": "0"}, "--block-size=0", "8192"),
}


@pytest.mark.parametrize(("command", "flags", "shown", "unset"), ZERO_COUNTS.values(),
                         ids=ZERO_COUNTS)
def test_a_zero_count_is_refused_before_any_engine(tmp_path: Path, command: str,
                                                   flags: dict[str, str], shown: str,
                                                   unset: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib
    import io

    from invoke.exceptions import Exit

    from openssl_matrix.cli.shared import handlers
    from openssl_matrix.cli.table import dispatch

    def no_engine(base_url: str | None, allow_plain_tcp: bool) -> Any:
        raise AssertionError("an engine was reached")

    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(ROOT)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(Exit) as exc:
        dispatch(command, "", {**flags, "results": str(tmp_path / "results")},
                 handlers(no_engine))
    assert exc.value.code == 10, err.getvalue()
    assert f"{shown}: expected a whole number of at least 1" in err.getvalue()
    flag = shown.split("=")[0]
    assert f"hint: e.g. {flag}=2, or leave {flag} out for {unset}" in err.getvalue()
    assert not (tmp_path / "results").exists()


# -- 9: the locked tree's hint says --wait, and import takes it --------------------------------

def test_an_import_on_a_locked_tree_names_wait_and_takes_it(tmp_path: Path) -> None:
    import threading

    from openssl_matrix.results.tree import ResultsTree

    (tmp_path / "p.txt").write_text(PASTE)
    root = tmp_path / "results"
    holder = ResultsTree(root)
    holder.lock()
    try:
        code, _out, err = run("import", str(tmp_path / "p.txt"), as_="x", results=str(root))
        assert code == 9 and "pass --wait to queue behind it" in err, err
        threading.Timer(1.0, holder.unlock).start()
        code, out, err = run("import", str(tmp_path / "p.txt"), as_="x", results=str(root),
                             wait=True)
    finally:
        holder.unlock()
    assert code == 0, err
    assert "is in use by pid" in err and "waiting for it (--wait)" in err
    assert read_meta(root / "ref-x" / "1.0.1e" / "import" / "0001") is not None, out


def test_import_wait_is_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "p.txt").write_text(PASTE)
    done = cli("import", "p.txt", "--as", "x", "--wait", "--results", "res", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "res" / "ref-x" / "1.0.1e").is_dir()


# -- 10: a path through a regular file is the file system's refusal (exit 11), named ---------

THROUGH_A_FILE = {
    "export-output": ("export", {"output": "NOTES.txt/x.csv"}, "--output 'NOTES.txt/x.csv'"),
    "export-output-deeper": ("export", {"output": "NOTES.txt/a/b.csv"},
                             "--output 'NOTES.txt/a/b.csv'"),
    "report-output": ("report", {"output": "NOTES.txt/report"}, "--output 'NOTES.txt/report'"),
    "render-output": ("render", {"output": "NOTES.txt/rendered"},
                      "--output 'NOTES.txt/rendered'"),
    "render-output-is-the-file": ("render", {"output": "NOTES.txt"}, "--output 'NOTES.txt'"),
    "list-results": ("list", {"results": "NOTES.txt/results"}, "--results 'NOTES.txt/results'"),
    "export-results": ("export", {"results": "NOTES.txt/results"},
                       "--results 'NOTES.txt/results'"),
}


@pytest.mark.parametrize(("command", "flags", "shown"), THROUGH_A_FILE.values(),
                         ids=THROUGH_A_FILE)
def test_a_path_through_a_file_is_exit_11_naming_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str,
        flags: dict[str, str], shown: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "NOTES.txt").write_text("my notes\n")
    (tmp_path / "p.txt").write_text(PASTE)
    assert run("import", "p.txt", as_="x", results="results")[0] == 0
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    code, _out, err = run(command, **{"matrix": str(ROOT / "matrix.yaml"),
                                     "results": "results", **flags})
    assert code == 11, (code, err)
    assert err.startswith(f"error: {shown}: 'NOTES.txt' is a file, not a folder\n"), err
    assert "hint: give a path whose folders are folders" in err
    assert (tmp_path / "NOTES.txt").read_text() == "my notes\n"
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


# -- 3: export --output leaves a file it did not write alone -----------------------------------

def test_export_does_not_overwrite_a_file_it_did_not_write(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.txt").write_text(PASTE)
    assert run("import", "p.txt", as_="x", results="results")[0] == 0
    (tmp_path / "notes.csv").write_text("name,phone\nalice,555\n")
    code, _out, err = run("export", results="results", output="notes.csv")
    assert code == 10, err
    assert "--output 'notes.csv' exists and was not written by `invoke matrix export`" in err
    assert "--force" in err
    assert (tmp_path / "notes.csv").read_text() == "name,phone\nalice,555\n"
    code, _out, err = run("export", results="results", output="notes.csv", force=True)
    assert code == 0, err
    assert (tmp_path / "notes.csv").read_text().startswith("cpu,variant,version,suite,")


@pytest.mark.parametrize("again", [{}, {"format": "jsonl"}, {"per_session": True}])
def test_export_replaces_its_own_earlier_export(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                again: dict[str, Any]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.txt").write_text(PASTE)
    assert run("import", "p.txt", as_="x", results="results")[0] == 0
    for flags in ({"format": "jsonl"}, {}, again):
        code, _out, err = run("export", results="results", output="e.out", **flags)
        assert code == 0, (flags, err)
    first = (tmp_path / "e.out").read_text().splitlines()[0]
    assert first.startswith('{"cpu": "ref-x"' if again.get("format") else "cpu,variant,")
    (tmp_path / "empty.csv").touch()  # nothing to lose: replaced
    assert run("export", results="results", output="empty.csv")[0] == 0


# -- 12: the YAML size cap is the one docs/robustness.md states ---------------------------------

@pytest.mark.parametrize("size", [(1 << 20) + 10, 2 << 20, 5 << 20])
@pytest.mark.parametrize("command", ["list", "reproduce"])
def test_the_yaml_cap_in_the_message_is_the_documented_one(tmp_path: Path, size: int,
                                                           command: str) -> None:
    from openssl_matrix.core.yamlload import MAX_BYTES

    path = tmp_path / "big.yaml"
    path.write_text("# " + "x" * (size - 3) + "\n")
    code, _out, err = (run("list", matrix=str(path)) if command == "list" else
                       run("reproduce", str(path), check=True))
    assert code == 2, err
    assert "larger than 1048576 bytes (1 MiB)" in err and "4194304" not in err, err
    docs = (ROOT / "docs" / "robustness.md").read_text()
    assert MAX_BYTES == 1 << 20 and "YAML and Docker config 1 MiB" in docs
    assert "YAML files (matrices, report specs, patch metadata) are read with limits: at most\n" \
           "  1 MiB" in docs


def test_a_yaml_file_of_multibyte_text_is_measured_in_bytes(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("# " + "é" * (600 << 10) + "\n")  # 600 Ki characters, 1.2 MB
    code, _out, err = run("list", matrix=str(path))
    assert code == 2 and "larger than 1048576 bytes (1 MiB)" in err, err


# -- 13: catalogue releases are opt-in, also without default_variants ---------------------------

def test_catalogue_releases_are_opt_in_without_default_variants(tmp_path: Path) -> None:
    from openssl_matrix.matrix.load import load_matrix

    from .test_hostile import matrix_text

    own = {"1.1.1w": {"sha256": "cf3098950cb4d853ad95c0841f1f9c6d3dc102dccfcacd521d93925208b"
                                "76ac8"},
           "3.0.20": {"sha256": "c80a01dfc70ece4dc21168932c37739042d404d46ccc81a5986dd75314"
                                "ecda6f"}}
    path = tmp_path / "m.yaml"
    path.write_text(matrix_text(versions=own, default_variants=None, catalogue=True,
                                include=[{"version": "1.1.1w", "arch": "i386"},
                                         {"version": "1.1.0l", "arch": "i386"}]))
    m = load_matrix(path)
    assert {v.id for v in m.select(None)} == {
        "1.1.1w-asm-x86_64", "1.1.1w-no-asm-x86_64", "3.0.20-asm-x86_64",
        "3.0.20-no-asm-x86_64", "1.1.1w-asm-i386"}
    catalogue = [v for v in m.all_variants if v.version.from_catalogue]
    assert len(catalogue) > 100 and not any(v.default for v in catalogue)
    assert [v.id for v in m.select("1.1.0l-*")] == ["1.1.0l-asm-x86_64",
                                                     "1.1.0l-no-asm-x86_64", "1.1.0l-asm-i386"]
    code, out, err = run("list", matrix=str(path))
    assert code == 0, err
    assert "5 variant(s) from" in out and "5 built by default" in out


def test_default_variants_can_still_make_a_catalogue_release_a_default(tmp_path: Path) -> None:
    from openssl_matrix.matrix.load import load_matrix

    from .test_hostile import matrix_text

    path = tmp_path / "m.yaml"
    path.write_text(matrix_text(default_variants=["1.1.1w-asm-x86_64", "1.0.2u-asm-x86_64"],
                                catalogue=True))
    assert {v.id for v in load_matrix(path).select(None)} == {"1.1.1w-asm-x86_64",
                                                              "1.0.2u-asm-x86_64"}


# -- 6: a full device names what was being written ---------------------------------------------

def _full(path: Path) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")  # as a write() raises it: no name


def test_a_full_device_during_import_names_the_file(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from openssl_matrix.core import files

    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.txt").write_text(PASTE)
    with files.write_faults(_full):
        code, _out, err = run("import", "p.txt", as_="x", results="results")
    assert code == 11, err
    assert err.startswith("error: 'results/ref-x/1.0.1e/import/"), err
    assert "no space left on the device (while `invoke matrix import`)" in err
    assert "'a file'" not in err


def test_a_full_device_during_export_names_the_output(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from openssl_matrix.core import files

    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.txt").write_text(PASTE)
    assert run("import", "p.txt", as_="x", results="results")[0] == 0
    with files.write_faults(_full):
        code, _out, err = run("export", results="results", output="e.csv")
    assert code == 11 and err.startswith("error: 'e.csv': no space left on the device"), err


def test_a_full_device_during_report_names_the_report_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.txt").write_text(PASTE)
    assert run("import", "p.txt", as_="x", results="results")[0] == 0

    def full_at_the_chart(fig: Any, path: Path) -> None:
        _full(path)  # a chart's write that names no file, as the page's own writes

    table = handlers(charts=Charts(save=full_at_the_chart))
    code, _out, err = run("report", results="results", output="rep", table=table)
    assert code == 11, err
    # the error begins its own line (at the start here: the charts' progress line is
    # printed when they are done, and the first one failed)
    assert "\nerror: 'rep' (a file in it): no space left on the device" in "\n" + err, err
    assert not (tmp_path / "rep").exists()


@pytest.mark.parametrize("args", [["export", "--results", "results"],
                                  ["parse", "p.txt", "--json"]])
def test_a_full_standard_output_is_named(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "p.txt").write_text(PASTE)
    assert cli("import", "p.txt", "--as", "x", "--results", "results",
               cwd=tmp_path).returncode == 0
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENSSL_MATRIX_CACHE": str(tmp_path / "c")}
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "openssl_matrix", *args], cwd=tmp_path,
                              env=env, stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=30)
    assert done.returncode == 11, done.stderr
    assert done.stderr.startswith("error: '<standard output>': no space left on the device")
    assert "'a file'" not in done.stderr and "Traceback" not in done.stderr


# -- 11: a figure at an impossible block size is shown and counted as such ----------------------

IMPOSSIBLE_BLOCK = ("OpenSSL 1.0.1e 11 Feb 2013\n"
                    "type 16 bytes 64 bytes 99999999999 bytes\n"
                    "aes-128-cbc 305049.90k 327331.20k 332573.95k\n"
                    "sha1 105049.90k 127331.20k 132573.95k\n"
                    "md5 5049.90k 7331.20k 2573.95k\n")


def test_parse_shows_an_impossible_block_size_honestly(tmp_path: Path) -> None:
    (tmp_path / "p.txt").write_text(IMPOSSIBLE_BLOCK)
    code, out, err = run("parse", str(tmp_path / "p.txt"))
    assert code == 0, err
    assert "None" not in out
    rows = [line for line in out.splitlines() if "impossible" in line]
    assert len(rows) == 3
    assert all(line.split()[1] == "—" and line.endswith(
        "impossible: a block size of 99999999999 bytes is beyond any speed table (at most "
        "2147483647)") for line in rows), rows


def test_the_quality_panel_counts_figures_at_an_impossible_block_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.txt").write_text(IMPOSSIBLE_BLOCK)
    assert run("import", "p.txt", as_="x", results="results")[0] == 0
    code, out, err = run("report", results="results", output="rep")
    assert code == 0, err
    assert "Measurement quality: 9 figure(s), 3 flagged, 3 of them kept out of the medians" \
        in out, out
    assert "bulk ciphers and hashes (MB/s): 9 figure(s): 6 ok, 3 flagged" in out
    assert "flagged impossible: 3 figure(s) (3 bulk), kept out of the medians" in out
    import json

    panel = json.loads((tmp_path / "rep" / "data" / "report.json").read_text())["quality"]
    assert panel["figures"] == 9 and panel["statuses"][0]["status"] == "impossible"


# -- found on the way: a closed standard output (`| head`) is not a crash ------------------------

def test_a_reader_that_goes_away_is_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "p.txt").write_text("".join(PASTE.replace("305049.90k", f"{300000 + i}.90k")
                                            for i in range(3000)))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENSSL_MATRIX_CACHE": str(tmp_path / "c")}
    proc = subprocess.Popen([sys.executable, "-m", "openssl_matrix", "parse", "p.txt"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"run 1: OpenSSL 1.0.1e")
    proc.stdout.close()  # as `| head -1` does
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 141, err
    assert "internal error" not in err and "Traceback" not in err and "Exception" not in err
    assert not (tmp_path / "c").exists()  # no crash log


def test_the_hostile_suite_is_counted_and_the_docs_say_how_many() -> None:
    """The cases marked ``hostile`` (pytest -m hostile --collect-only) number at least 100,
    and docs/robustness.md gives that count."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "hostile",
         "-p", "no:cacheprovider", "tests"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=120,
    ).stdout
    found = re.search(r"^(\d+)/\d+ tests collected", out, re.M)
    assert found, out[-500:]
    count = int(found.group(1))
    assert count >= 100
    said = re.search(r"hostile suite of (\d+) cases", (ROOT / "docs" / "robustness.md")
                     .read_text(encoding="utf-8"))
    assert said and int(said.group(1)) == count, (count, said and said.group(0))
