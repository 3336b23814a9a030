"""Hostile writes and waits (issue 26): repeated and interrupted imports, a kill at every
file write of ``import``, ``report`` and a bench round, read-only and full file systems,
special files where the tool reads one, and an engine that never answers.

After each case: no traceback, no exit 70, nothing counted twice, no half-written record
trusted, no leftovers, nothing written outside the target.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from openssl_matrix.core import files
from openssl_matrix.core.errors import INTERNAL_ERROR

from ..scripts import load_script
from ..unit.test_hostile import NO_CHART_HANDLERS, REPORT, run, snapshot, time_limit

ROOT = Path(__file__).resolve().parents[2]
pastes = load_script("pastes")

#: Three runs of three builds, as a mail thread would quote them.
THREE = "\n".join(REPORT.replace("1.0.1e", v) for v in ("1.0.1e", "1.0.2u", "1.1.1w"))


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")


def imported(root: Path) -> list[tuple[str, int]]:
    """(source sha256, run in report) of every finished imported run of the tree (a run
    folder's meta.json, or its line in an import's compact file: records.read_meta)."""
    from openssl_matrix.results.records import read_figures, read_meta, run_dirs

    out = []
    for *_, run_dir in run_dirs(root):
        meta = read_meta(run_dir)
        if meta is None:
            continue
        if meta.kind == "reference" and meta.status == "complete":
            assert read_figures(run_dir), run_dir
            out.append((meta.extra["source_sha256"], meta.extra["run_in_report"]))
    return out


def consistent(root: Path) -> None:
    """What every command after a crash must find: each imported run once, no temp file
    or half-written run trusted, an export that reads."""
    from openssl_matrix.results.records import read_figures, read_meta, run_dirs

    counts = Counter(imported(root))
    assert all(n == 1 for n in counts.values()), counts
    leftovers = [p for p in root.rglob("*") if p.name.endswith(".tmp")
                 or p.name.startswith("._report.")]
    assert leftovers == [], leftovers
    code, out, err = run("export", results=str(root), format="jsonl")
    assert code == 0, err
    rows = Counter("/".join((r["cpu"], r["variant"], r["suite"], r["run"]))
                   for r in map(json.loads, out.splitlines()))
    for *_, run_dir in run_dirs(root):  # each finished run once, with all its figures
        meta = read_meta(run_dir)
        if meta is not None and meta.status in ("complete", "partial"):
            figures = read_figures(run_dir)
            assert rows[str(run_dir.relative_to(root))] == len(figures), run_dir


# -- finding 1: figures counted twice ----------------------------------------------


def test_importing_the_same_file_again_adds_nothing(tmp_path: Path) -> None:
    src = tmp_path / "r.txt"
    src.write_text(THREE)
    res = str(tmp_path / "results")
    code, out, err = run("import", str(src), as_="x", results=res)
    assert code == 0, err
    first = imported(tmp_path / "results")
    assert len(first) == 3
    export_before = run("export", results=res)[1]
    for _ in range(2):
        code, out, err = run("import", str(src), as_="x", results=res)
        assert code == 0, err
        assert "already imported" in out + err and "ref-x" in out + err, out + err
    assert imported(tmp_path / "results") == first
    assert run("export", results=res)[1] == export_before
    # the same file under another name is another import
    code, out, err = run("import", str(src), as_="y", results=res)
    assert code == 0 and len(imported(tmp_path / "results")) == 6, err


class _Killed(BaseException):
    """What a Ctrl-C at the n-th write looks like to the code around it."""


@contextlib.contextmanager
def fail_at_write(n: int, exc: Callable[[], BaseException]) -> Iterator[list[Path]]:
    """The n-th call of the one atomic write raises ``exc()`` before its rename."""
    seen: list[Path] = []

    def hook(path: Path) -> None:
        seen.append(path)
        if len(seen) == n:
            raise exc()

    with files.write_faults(hook):
        yield seen


def test_an_interrupted_import_is_completed_not_duplicated(tmp_path: Path) -> None:
    src = tmp_path / "r.txt"
    src.write_text(THREE)
    with fail_at_write(10**9, KeyboardInterrupt) as writes:
        assert run("import", str(src), as_="x", results=str(tmp_path / "clean"))[0] == 0
    total = len(writes)
    assert total >= 3
    clean = run("export", results=str(tmp_path / "clean"))[1]
    for n in range(1, total + 1):
        res = tmp_path / f"r{n}"
        with fail_at_write(n, KeyboardInterrupt):
            code, _out, err = run("import", str(src), as_="x", results=str(res))
        assert code == 130, (n, code, err)
        code, _out, err = run("import", str(src), as_="x", results=str(res))
        assert code == 0, (n, err)
        assert sorted(r for _, r in imported(res)) == [1, 2, 3], n
        consistent(res)
        assert run("export", results=str(res))[1] == clean.replace(
            str(tmp_path / "clean"), str(res)), n


# -- finding 2: quadratic disk and time -------------------------------------------


def test_an_import_stores_the_paste_once(tmp_path: Path) -> None:
    text = pastes.paste(300)
    src = tmp_path / "p.txt"
    src.write_text(text)
    code, _, err = run("import", str(src), as_="p", results=str(tmp_path / "results"))
    assert code == 0, err
    holding = [p for p in (tmp_path / "results").rglob("*") if p.is_file()
               and p.stat().st_size >= len(text) and text in p.read_text()]
    assert len(holding) == 1, holding
    written = sum(p.stat().st_size for p in (tmp_path / "results").rglob("*") if p.is_file())
    assert written < 12 * len(text), (written, len(text))  # main: 150× (one copy per run)


def test_parsing_is_linear_in_the_runs() -> None:
    from openssl_matrix.parse import parse_paste

    def cpu(runs: int) -> float:
        text = pastes.paste(runs)
        t0 = time.process_time()
        assert len(parse_paste(text)) == runs
        return time.process_time() - t0

    small, big = cpu(500), cpu(2000)
    # linear: about 4×; the quadratic duplicate check made it 10× and more
    assert big < 6.5 * small, (small, big)


# -- finding 3: special files where a file is read ---------------------------------


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_special_docker_config_is_refused_in_a_second(tmp_path: Path, kind: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from openssl_matrix.core.errors import DockerUnavailable
    from openssl_matrix.engine import engines

    conf = tmp_path / "docker"
    (conf / "contexts" / "meta" / "x").mkdir(parents=True)
    for path in (conf / "config.json", conf / "contexts" / "meta" / "x" / "meta.json"):
        if kind == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
    monkeypatch.setenv("DOCKER_CONFIG", str(conf))
    monkeypatch.delenv("DOCKER_CONTEXT", raising=False)
    t0 = time.monotonic()
    with time_limit(5):
        with pytest.raises(DockerUnavailable, match=r"config\.json.*not a regular file"):
            engines.current_context()
        assert engines.context_names() == []  # an unreadable context is not listed
    assert time.monotonic() - t0 < 1.5


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_special_lock_file_is_refused(tmp_path: Path, kind: str) -> None:
    (tmp_path / "t.tar.gz").write_bytes(b"x")
    lock = tmp_path / "m.lock"
    (tmp_path / "m.yaml").write_text("versions: {}\n")
    os.mkfifo(lock) if kind == "fifo" else lock.symlink_to("/dev/zero")
    res = tmp_path / "results"
    res.mkdir()
    os.mkfifo(res / ".lock") if kind == "fifo" else (res / ".lock").symlink_to("/dev/zero")
    with time_limit(10):
        code, _out, err = run("pin", "3.0.20", file=str(tmp_path / "t.tar.gz"),
                             matrix=str(tmp_path / "m.yaml"), force=True)
        assert code not in (0, INTERNAL_ERROR) and "Traceback" not in err, err
        (tmp_path / "r.txt").write_text(REPORT)
        code, _out, err = run("import", str(tmp_path / "r.txt"), as_="x", results=str(res))
        assert code == 9 and ".lock" in err and "not a regular file" in err, err


# -- finding 4: one impossible row ---------------------------------------------------


def test_a_tree_holding_an_impossible_block_size_still_reports(tmp_path: Path) -> None:
    src = tmp_path / "r.txt"
    src.write_text(THREE)
    res = tmp_path / "results"
    assert run("import", str(src), as_="x", results=str(res))[0] == 0
    # the first figure of the first run, in the import's compact file (compact.py)
    held = sorted(res.rglob("runs-*.jsonl"))[0]
    head, first, *rest = held.read_text().splitlines()
    meta, figures = json.loads(first)
    keys = json.loads(head)["figure_keys"]
    figures[0][keys.index("block_size")] = 99999999999999999999999999
    figures[0][keys.index("status")] = "ok"
    held.write_text("\n".join([head, json.dumps([meta, figures]), *rest]) + "\n")
    code, out, err = run("report", results=str(res), output=str(tmp_path / "rep"))
    assert code == 0, err
    assert f"move {held} out" in err, err
    assert (tmp_path / "rep" / "index.html").is_file()
    code, out, err = run("export", results=str(res), format="jsonl")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert not [r for r in rows if r["status"] == "ok" and (r.get("block_size") or 0) > 1 << 40]


# -- finding 5: environment errors -----------------------------------------------------


@contextlib.contextmanager
def tmpfs(path: Path, size: str = "1m") -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_a_read_only_results_tree(tmp_path: Path) -> None:
    src = tmp_path / "r.txt"
    src.write_text(THREE)
    with tmpfs(tmp_path / "fs") as fs:
        res = fs / "results"
        assert run("import", str(src), as_="x", results=str(res))[0] == 0
        subprocess.run(["mount", "-o", "remount,ro", str(fs)], check=True)
        before = snapshot(fs)
        for command, flags in (("import", {"as_": "y"}), ("report", {}),
                               ("export", {"output": str(res / "export.csv")})):
            target = str(src) if command == "import" else ""
            code, _out, err = run(command, target, results=str(res), **flags)
            assert code == 11 and "read-only" in err and "Traceback" not in err, (command, err)
            assert "this is a bug" not in err
        assert snapshot(fs) == before


def test_a_full_file_system(tmp_path: Path) -> None:
    text = pastes.paste(400)  # about 550 KB of paste, 400 run folders
    src = tmp_path / "p.txt"
    src.write_text(text)
    with tmpfs(tmp_path / "fs", "600k") as fs:
        res = fs / "results"
        code, _out, err = run("import", str(src), as_="p", results=str(res))
        assert code == 11 and "no space" in err.lower() and "Traceback" not in err, err
        assert "this is a bug" not in err
        # what is there is consistent: nothing half-written trusted, no temp file
        consistent(res)
        code, _out, err = run("report", results=str(res), output=str(fs / "rep"))
        assert code in (0, 11) and "Traceback" not in err, err
        assert not [p for p in fs.iterdir() if p.name.startswith(".rep.")]


def test_names_too_long_and_paths_through_files(tmp_path: Path) -> None:
    src = tmp_path / "r.txt"
    src.write_text(REPORT)
    for results in (tmp_path / ("r" * 300), tmp_path / "r.txt" / "results"):
        code, _out, err = run("import", str(src), as_="x", results=str(results))
        assert code in (9, 11) and "Traceback" not in err and "this is a bug" not in err, err


# -- finding 6: leftovers --------------------------------------------------------------


def test_report_removes_its_own_leftovers_only(tmp_path: Path) -> None:
    from openssl_matrix.core.outputs import REPORT_MARKER

    src = tmp_path / "r.txt"
    src.write_text(REPORT)
    res = tmp_path / "results"
    assert run("import", str(src), as_="x", results=str(res))[0] == 0
    ours = res / "._report.abc123"
    ours.mkdir()
    (ours / REPORT_MARKER).write_text("{}")
    (ours / "big.png").write_bytes(b"x" * 1000)
    theirs = res / "._report.mine"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    code, _out, err = run("report", results=str(res))
    assert code == 0, err
    assert not ours.exists()
    assert (theirs / "notes.txt").read_text() == "mine"


def test_import_recovers_what_a_killed_import_left(tmp_path: Path) -> None:
    src = tmp_path / "r.txt"
    src.write_text(REPORT)
    res = tmp_path / "results"
    half = res / "ref-x" / "1.0.1e" / "import" / "0001"
    (half / "raw").mkdir(parents=True)
    (half / ".figures.json.abc.tmp").write_text("[")
    (res / "_builds").mkdir()
    code, _out, err = run("import", str(src), as_="x", results=str(res))
    assert code == 0, err
    assert json.loads((half / "meta.json").read_text())["status"] == "interrupted"
    assert not list(res.rglob("*.tmp"))
    assert [r for _, r in imported(res)] == [1]


# -- the crash test: a kill at every file write, then the next command ------------------


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


@contextlib.contextmanager
def _on_every_write(hook: Callable[[Path], None], opens: bool) -> Iterator[None]:
    """Call ``hook`` before every atomic write's rename; with ``opens`` also before every
    file opened for writing (a report writes its own folder directly, through open(),
    os.open and shutil.copy2, all of which end in os.open)."""
    real_open = os.open

    def counting_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & _WRITE_FLAGS:
            hook(Path(os.fsdecode(path)))
        return real_open(path, flags, *args, **kwargs)

    real_io_open = io.open

    def counting_io_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, bytes, os.PathLike)) and set(mode) & set("wax+"):
            hook(Path(os.fsdecode(file)))
        return real_io_open(file, mode, *args, **kwargs)

    with files.write_faults(None if opens else hook):
        if opens:
            os.open = counting_open
            io.open = builtins.open = counting_io_open
        try:
            yield
        finally:
            os.open = real_open
            io.open = builtins.open = real_io_open


def _kill_at(n: int, command: Callable[[], Any], *, opens: bool = False) -> int:
    """Run ``command`` in a forked child killed (os._exit: no clean-up, no flush, as a
    SIGKILL would) at its n-th file write; the child's exit status (137 when killed)."""
    pid = os.fork()
    if pid == 0:
        count = [0]

        def hook(path: Path) -> None:
            count[0] += 1
            if count[0] == n:
                os._exit(137)

        try:
            with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), \
                    contextlib.redirect_stderr(null), _on_every_write(hook, opens):
                command()
        except BaseException:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _writes(command: Callable[[], Any], *, opens: bool = False) -> int:
    seen: list[Path] = []
    with _on_every_write(seen.append, opens):
        command()
    return len(seen)


def test_import_killed_at_every_write(tmp_path: Path) -> None:
    src = tmp_path / "r.txt"
    src.write_text(THREE)
    total = _writes(lambda: run("import", str(src), as_="x", results=str(tmp_path / "c")))
    for n in range(1, total + 1):
        res = tmp_path / f"k{n}"
        def killed(res: Path = res) -> Any:
            return run("import", str(src), as_="x", results=str(res))

        assert _kill_at(n, killed) == 137, n
        code, _out, err = run("import", str(src), as_="x", results=str(res))
        assert code == 0, (n, err)
        assert sorted(r for _, r in imported(res)) == [1, 2, 3], n
        consistent(res)


def test_report_killed_at_every_write(tmp_path: Path) -> None:
    # charts left out (as in test_results_fuzz): they are files of the same folder written
    # the same way, and drawing them is most of a report's time, once per kill
    src = tmp_path / "r.txt"
    src.write_text(THREE)
    res = tmp_path / "results"
    assert run("import", str(src), as_="x", results=str(res))[0] == 0
    total = _writes(lambda: run("report", results=str(res), table=NO_CHART_HANDLERS),
                    opens=True)
    assert total >= 10
    for n in range(1, total + 1):
        assert _kill_at(n, lambda: run("report", results=str(res), table=NO_CHART_HANDLERS),
                        opens=True) == 137, n
        code, _out, err = run("report", results=str(res), table=NO_CHART_HANDLERS)
        assert code == 0, (n, err)
        assert (res / "_report" / "index.html").is_file()
        consistent(res)


def test_bench_round_killed_at_every_write(fake_matrix: Path, tmp_path: Path) -> None:
    from openssl_matrix.images.build import Builder
    from openssl_matrix.images.sources import default_urls
    from openssl_matrix.matrix.load import load_matrix
    from openssl_matrix.measure.session import Bencher
    from openssl_matrix.results.records import finished_runs
    from openssl_matrix.results.tree import ResultsTree

    from ..fakes import FakeBackend
    from .test_reproduce_fake import fake_speed

    m = load_matrix(fake_matrix, default_urls=default_urls)
    variants = list(m.variants)[:2]
    backend = FakeBackend(fake_speed)
    template = ResultsTree(tmp_path / "template")
    Builder(m, backend, template, workdir=tmp_path / "work").build(variants)

    def bench(root: Path) -> list[Any]:
        tree = ResultsTree(root)
        tree.lock()
        try:
            b = Bencher(m, backend, tree, engine=backend.engine_info(), git_commit="abc")
            return b.bench(variants, m.suite("quick"), "auto")
        finally:
            tree.unlock()

    clean = tmp_path / "clean"
    shutil.copytree(template.root, clean)
    total = _writes(lambda: bench(clean))
    assert total >= 4
    for n in range(1, total + 1):
        root = tmp_path / f"b{n}"
        shutil.copytree(template.root, root)
        def killed(root: Path = root) -> Any:
            return bench(root)

        assert _kill_at(n, killed) == 137, n
        outcomes = bench(root)  # the same command again: resumes, measures the rest
        assert {o.status for o in outcomes} <= {"complete", "resumed"}, n
        runs = list(finished_runs(root))
        cells = Counter((r.variant, r.suite) for r in runs)
        assert set(cells) == {(v.id, "quick") for v in variants}, (n, cells)
        assert all(c == 1 for c in cells.values()), (n, cells)
        assert all(r.figures for r in runs), n
        assert not list(root.rglob("*.tmp")), n
        code, _out, err = run("export", results=str(root), format="jsonl")
        assert code == 0, (n, err)


# -- finding 7: integer flags given text (as invoke hands them over) ---------------------


@pytest.mark.parametrize("args,flag", [
    (["bench", "--repeat=abc"], "--repeat"),
    (["build", "--jobs="], "--jobs"),
    (["report", "--block-size=8k"], "--block-size"),
])
def test_int_flags_given_text(args: list[str], flag: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(["invoke", "matrix", *args, f"--results={tmp_path}/r"], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 10, done.stderr
    assert "Traceback" not in done.stderr and flag in done.stderr, done.stderr
    assert "expected a whole number" in done.stderr, done.stderr


def test_names_are_matched_as_a_whole() -> None:
    from openssl_matrix.core.names import name_problem

    for bad in ("x\n", "1.1.1w\n", "a\r", "a\x00"):
        assert name_problem(bad) is not None, repr(bad)
    assert name_problem("1.1.1w") is None


# -- finding 9: an engine that accepts and never answers ---------------------------------


def test_a_silent_engine_is_named_within_5_s_and_given_up(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    from openssl_matrix.core.errors import DockerUnavailable
    from openssl_matrix.engine import backend

    path = tmp_path / "silent.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(server.accept()[0])  # and never a byte back

    threading.Thread(target=accept, daemon=True).start()
    t0 = time.monotonic()
    try:
        with time_limit(20), pytest.raises(DockerUnavailable) as err:
            backend.DockerBackend(f"unix://{path}", answer_timeout=7.0)
    finally:
        stop.set()
        for s in held:
            s.close()
        server.close()
    took = time.monotonic() - t0
    assert took < 15, took
    stderr = capsys.readouterr().err
    assert str(path) in stderr and "waiting" in stderr, stderr
    assert "did not answer in 7 s" in str(err.value), err.value
    assert f"docker -H unix://{path} info" in str(err.value), err.value


if sys.platform != "linux":  # pragma: no cover
    pytestmark = pytest.mark.skip("Linux file systems")
