"""Interrupted build and bench sessions resume without losing or redoing work.

The container engine is faked at its seam (tests/fakes.py); everything else is real:
files, renames, the journal, the lock. A "SIGKILL" is a forked child calling
``os._exit`` at the N-th event (a container run or a file rename), for every N, so
every point where a real process could die is tried.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from invoke.exceptions import Exit

from openssl_matrix.cli.shared import handlers
from openssl_matrix.cli.table import dispatch
from openssl_matrix.core import files
from openssl_matrix.core.errors import BenchError, ConfigError, DockerUnavailable, ResultsError
from openssl_matrix.engine.backend import RunLimits, RunResult
from openssl_matrix.engine.engineinfo import EngineInfo
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.model import Matrix
from openssl_matrix.measure.cell import TREE_LABEL
from openssl_matrix.measure.session import Bencher
from openssl_matrix.measure.speedcmd import unwrap_speed
from openssl_matrix.results.export import records
from openssl_matrix.results.tree import ResultsTree, RunRef

from ..fakes import FakeBackend, engine_of
from .test_pipeline_fake import speed_responder

ROOT = Path(__file__).resolve().parents[2]
ASM = "1.1.1w-asm-*,3.0.20-asm-*"


class PersistentFake(FakeBackend):
    """A fake engine whose images outlive the process (kept in a JSON file), as a real
    engine's do when the client is killed."""

    def __init__(self, state: Path, responder: Any = speed_responder) -> None:
        super().__init__(responder)
        self.state = state
        if state.exists():
            saved = json.loads(state.read_text())
            self.images.update(saved["images"])
            self.labels.update(saved["labels"])

    def build(self, context: Path, tag: str, **kwargs: Any) -> str:
        image_id = super().build(context, tag, **kwargs)
        self.state.write_text(json.dumps({"images": self.images, "labels": self.labels}))
        return image_id


@contextlib.contextmanager
def die_at(n: int, backend: FakeBackend) -> Iterator[None]:
    """Within this block, make this (forked) process die like SIGKILL at the n-th run,
    build or atomic write's rename (just before it, through ``files.write_faults``)."""
    count = [0]

    def tick() -> None:
        count[0] += 1
        if count[0] == n:
            os._exit(137)

    real_run, real_build = backend.run, backend.build

    def run(*args: Any, **kwargs: Any) -> RunResult:
        tick()
        return real_run(*args, **kwargs)

    def build(*args: Any, **kwargs: Any) -> str:
        tick()
        return real_build(*args, **kwargs)

    backend.run = run  # type: ignore[method-assign]
    backend.build = build  # type: ignore[method-assign]
    with files.write_faults(lambda _path: tick()):
        yield


def in_child(work: Callable[[], None]) -> int:
    """Run ``work`` in a forked child; return its exit status (137 when it 'was killed')."""
    pid = os.fork()
    if pid == 0:  # the child never returns into pytest
        code = 0
        try:
            work()
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def bench_flags(fake_matrix: Path, tree: Path, *, only: str, suite: str) -> dict[str, Any]:
    """The flags `invoke matrix bench --cpu=auto --only ONLY --suite SUITE` dispatches."""
    return {"matrix": str(fake_matrix), "results": str(tree), "cpu": "auto", "only": only,
            "suite": suite, "force": False, "wait": False, "fresh": False, "repeat": 0}


def ctrl_c_at(state: Path, n: int) -> PersistentFake:
    """A backend whose n-th container run is interrupted by Ctrl-C (KeyboardInterrupt)."""
    calls = [0]

    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        calls[0] += 1
        if calls[0] == n:
            raise KeyboardInterrupt
        return speed_responder(image, command, env)

    return PersistentFake(state, responder)


def setup_tree(fake_matrix: Path, tmp_path: Path) -> tuple[Matrix, Path, Path]:
    m = load_matrix(fake_matrix, default_urls=default_urls)
    state = tmp_path / "engine.json"
    tree = tmp_path / "results"
    Builder(m, PersistentFake(state), ResultsTree(tree),
            workdir=tmp_path / "work").build(m.select(ASM))
    return m, state, tree


def _bench_and_return_none(m: Matrix, state: Path, tree: Path, kill_at: int) -> None:
    bench_once(m, state, tree, kill_at=kill_at)


def bench_once(m: Matrix, state: Path, tree: Path, kill_at: int = 0,
               ) -> tuple[list[Any], FakeBackend]:
    backend = PersistentFake(state)
    with die_at(kill_at, backend) if kill_at else contextlib.nullcontext():
        results = ResultsTree(tree)
        results.lock()
        try:
            bencher = Bencher(m, backend, results, engine=backend.engine_info(),
                              git_commit=None)
            out = bencher.bench(m.select(ASM), m.suite("quick"), "auto")
        finally:
            results.unlock()
    return out, backend


def cell_runs(tree: Path) -> dict[str, list[RunRef]]:
    by_cell: dict[str, list[RunRef]] = {}
    for ref in ResultsTree(tree).runs():
        by_cell.setdefault(ref.variant, []).append(ref)
    return by_cell


def test_bench_killed_at_every_point_resumes_without_redoing_finished_cells(
        fake_matrix: Path, tmp_path: Path) -> None:
    m, state, tree = setup_tree(fake_matrix, tmp_path)
    variants = [v.id for v in m.select(ASM)]
    pristine = tmp_path / "pristine"
    subprocess.run(["cp", "-a", str(tree), str(pristine)], check=True)

    # Count the events of one uninterrupted bench (runs + renames).
    events = [0]
    probe = PersistentFake(state)
    real_run = probe.run

    def counting_run(*a: Any, **k: Any) -> RunResult:
        events[0] += 1
        return real_run(*a, **k)

    replaces: list[Path] = []
    with files.write_faults(replaces.append):
        probe.run = counting_run  # type: ignore[method-assign]
        results = ResultsTree(tree)
        Bencher(m, probe, results, engine=EngineInfo(), git_commit=None).bench(
            m.select(ASM), m.suite("quick"), "auto")
    total = events[0] + len(replaces)
    assert total > 20, "the probe should see every run and every atomic write"

    for n in range(1, total + 1):
        subprocess.run(["rm", "-rf", str(tree)], check=True)
        subprocess.run(["cp", "-a", str(pristine), str(tree)], check=True)
        code = in_child(functools.partial(_bench_and_return_none, m, state, tree, n))
        assert code == 137, f"kill point {n}: the child should have died, exit {code}"
        finished_before = {
            ref.variant for refs in cell_runs(tree).values() for ref in refs
            if ref.meta.get("status") == "complete"}

        out, backend = bench_once(m, state, tree)
        assert [o.status for o in out] == ["complete", "complete"], f"kill point {n}"
        measured = {img.split("/")[1].split(":")[0] for img, cmd, _ in backend.runs
                    if unwrap_speed(cmd)[:2] == ("openssl", "speed")}
        assert not measured & finished_before, \
            f"kill point {n}: cells finished before the kill were measured again"
        assert measured | finished_before == set(variants), f"kill point {n}"
        for variant, refs in cell_runs(tree).items():
            statuses = [r.meta.get("status") for r in refs]
            assert statuses.count("complete") == 1, (n, variant, statuses)
            assert set(statuses) <= {"complete", "interrupted"}, (n, variant, statuses)
            for r in refs:
                assert not list(r.path.rglob(".*.tmp")), f"kill point {n}: temp file left"
        rows = list(records(ResultsTree(tree)))
        assert len(rows) == 4, f"kill point {n}: only finished runs are counted"
        assert not list((tree / "_journal").glob("bench-*.json")), \
            f"kill point {n}: the finished session's journal should be closed"


def test_build_killed_at_every_point_resumes(fake_matrix: Path, tmp_path: Path) -> None:
    m = load_matrix(fake_matrix, default_urls=default_urls)
    variants = m.select("*")
    state = tmp_path / "engine.json"
    tree = tmp_path / "results"
    # the toolchain image exists already (built once per machine)
    Builder(m, PersistentFake(state), ResultsTree(tree), workdir=tmp_path / "w").ensure_toolchain(
        "debian:bookworm")
    saved_state = state.read_text()
    n = 0
    while True:
        n += 1
        subprocess.run(["rm", "-rf", str(tree)], check=True)
        state.write_text(saved_state)

        def killed(n: int = n) -> None:
            backend = PersistentFake(state)
            with die_at(n, backend):
                Builder(m, backend, ResultsTree(tree), workdir=tmp_path / "w").build(variants)

        code = in_child(killed)
        if code == 0:
            break  # n is past the last event: the whole build ran
        assert code == 137, f"kill point {n}: exit {code}"
        images_before = set(json.loads(state.read_text())["images"])
        backend = PersistentFake(state)
        out = Builder(m, backend, ResultsTree(tree), workdir=tmp_path / "w").build(variants)
        assert all(o.status in ("built", "up-to-date") for o in out), (n, out)
        assert not set(backend.builds) & images_before, \
            f"kill point {n}: an image built before the kill was built again"
        for v in variants:
            latest = json.loads((tree / "_builds" / v.id / "latest.json").read_text())
            record = ResultsTree(tree).build_record(v.id, latest["digest"])
            assert record is not None and record["tag"] == latest["tag"], (n, v.id)
    assert n > 10


def test_sigint_in_the_middle_leaves_a_clean_tree(fake_matrix: Path, tmp_path: Path) -> None:
    m, state, tree = setup_tree(fake_matrix, tmp_path)
    backend = ctrl_c_at(state, 4)  # the second speed run of the second cell
    results = ResultsTree(tree)
    bencher = Bencher(m, backend, results, engine=EngineInfo(), git_commit=None)
    with pytest.raises(KeyboardInterrupt):
        bencher.bench(m.select(ASM), m.suite("quick"), "auto")
    by_cell = cell_runs(tree)
    assert [r.meta["status"] for r in by_cell["1.1.1w-asm-x86_64"]] == ["complete"]
    # the interrupted cell's folder is marked at once, not left "running"
    second = by_cell["3.0.20-asm-x86_64"]
    assert [r.meta["status"] for r in second] == ["interrupted"]
    assert (second[0].path / "raw" / "native--aes-128-cbc.stdout").exists()
    journal = json.loads(next((tree / "_journal").glob("bench-*.json")).read_text())
    assert journal["cells"]["3.0.20-asm-x86_64"]["status"] == "interrupted"


def test_fresh_starts_over_and_a_finished_session_measures_again(
        fake_matrix: Path, tmp_path: Path) -> None:
    m, state, tree = setup_tree(fake_matrix, tmp_path)
    results = ResultsTree(tree)
    backend = PersistentFake(state)
    fail_second = [True]

    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        if "3.0.20" in image and fail_second[0]:
            return 1, "", "speed: Unknown cipher\n"
        return speed_responder(image, command, env)

    backend.responder = responder
    bencher = Bencher(m, backend, results, engine=EngineInfo(), git_commit=None)
    out = bencher.bench(m.select(ASM), m.suite("quick"), "auto")
    assert [o.status for o in out] == ["complete", "failed"]
    # the session stays open: a rerun measures only the failed cell
    fail_second[0] = False
    backend.runs.clear()
    out = bencher.bench(m.select(ASM), m.suite("quick"), "auto")
    assert [(o.status, o.reused) for o in out] == [("complete", True), ("complete", False)]
    speed = {img.split(":")[0] for img, cmd, _ in backend.runs if unwrap_speed(cmd)[1] == "speed"}
    assert speed == {"openssl-matrix/3.0.20-asm-x86_64"}
    # the session is finished: the same command now measures again (a new repetition)
    out = bencher.bench(m.select(ASM), m.suite("quick"), "auto")
    assert [(o.status, o.reused) for o in out] == [("complete", False)] * 2
    assert [Path(str(o.run_dir)).name for o in out] == ["0002", "0003"]
    # --fresh abandons an open session
    fail_second[0] = True
    bencher.bench(m.select(ASM), m.suite("quick"), "auto")
    fail_second[0] = False
    out = bencher.bench(m.select(ASM), m.suite("quick"), "auto", fresh=True)
    assert [o.reused for o in out] == [False, False]
    closed = sorted(p.name for p in (tree / "_journal" / "closed").iterdir())
    assert any(name.endswith("-abandoned.json") for name in closed)


def test_a_failing_cell_and_a_bug_do_not_stop_the_others(fake_matrix: Path,
                                                          tmp_path: Path) -> None:
    _m, state, tree = setup_tree(fake_matrix, tmp_path)
    m2 = load_matrix(fake_matrix, default_urls=default_urls)
    results = ResultsTree(tree)
    Builder(m2, PersistentFake(state), results, workdir=tmp_path / "work").build(
        list(m2.variants))
    backend = PersistentFake(state)

    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        if "1.1.1w-no-asm" in image:
            raise BenchError("the Docker engine refused to run it")
        if "3.0.20-asm" in image:
            raise ZeroDivisionError("a bug in a cell")
        return speed_responder(image, command, env)

    backend.responder = responder
    out = Bencher(m2, backend, results, engine=EngineInfo(), git_commit=None).bench(
        list(m2.variants), m2.suite("quick"), "auto")
    status = {o.variant: o.status for o in out}
    assert status == {"1.1.1w-asm-x86_64": "complete", "1.1.1w-no-asm-x86_64": "failed",
                      "3.0.20-asm-x86_64": "failed", "3.0.20-no-asm-x86_64": "complete"}
    bug = next(o for o in out if o.variant == "3.0.20-asm-x86_64")
    assert bug.run_dir is not None
    trace = (Path(bug.run_dir) / "error.log").read_text()
    assert "ZeroDivisionError: a bug in a cell" in trace
    assert json.loads((Path(bug.run_dir) / "meta.json").read_text())["status"] == "interrupted"


def test_engine_gone_mid_run_keeps_finished_cells_and_resumes(
        fake_matrix: Path, tmp_path: Path) -> None:
    m, state, tree = setup_tree(fake_matrix, tmp_path)
    backend = PersistentFake(state)

    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        if "3.0.20" in image:
            raise DockerUnavailable("the Docker engine stopped answering while running x")
        return speed_responder(image, command, env)

    backend.responder = responder
    results = ResultsTree(tree)
    with pytest.raises(DockerUnavailable):
        Bencher(m, backend, results, engine=EngineInfo(), git_commit=None).bench(
            m.select(ASM), m.suite("quick"), "auto")
    assert [r.meta["status"] for r in cell_runs(tree)["3.0.20-asm-x86_64"]] == ["interrupted"]
    out, _ = bench_once(m, state, tree)
    assert [(o.status, o.reused) for o in out] == [("complete", True), ("complete", False)]


def test_recover_marks_half_written_folders_and_export_skips_them(tmp_path: Path) -> None:
    tree = ResultsTree(tmp_path / "r")
    base = tree.suite_dir("host-x", "v1", "s")
    running = tree.new_run_dir("host-x", "v1", "s")
    (running / "meta.json").write_text(json.dumps({"status": "running", "started": "t"}))
    (running / "figures.json").write_text(json.dumps([{"algorithm": "a", "bytes_per_s": 1}]))
    (running / ".meta.json.abc.tmp").write_text("{half")
    empty = tree.new_run_dir("host-x", "v1", "s")
    done = tree.new_run_dir("host-x", "v1", "s")
    (done / "meta.json").write_text(json.dumps({"status": "complete"}))
    (done / "figures.json").write_text(json.dumps([{"algorithm": "a", "bytes_per_s": 2}]))
    assert [r["bytes_per_s"] for r in records(tree)] == [2]
    damaged = tree.new_run_dir("host-x", "v1", "s")
    (damaged / "meta.json").write_text('{"status": "runn')
    found = tree.recover()
    assert found == [running, empty, damaged]
    assert json.loads((running / "meta.json").read_text())["status"] == "interrupted"
    assert json.loads((running / "meta.json").read_text())["started"] == "t"
    assert json.loads((empty / "meta.json").read_text())["status"] == "interrupted"
    assert (damaged / "meta.json.damaged").read_text() == '{"status": "runn'
    assert not list(base.rglob("*.tmp"))
    assert tree.recover() == []
    assert tree.new_run_dir("host-x", "v1", "s").name == "0005", "numbers are never reused"


def test_journal_resume_and_close(tmp_path: Path) -> None:
    tree = ResultsTree(tmp_path / "r")
    j = tree.journal("bench", {"a": 1})
    assert not j.resumed
    j.record("cell", "complete", run_dir="x")
    again = tree.journal("bench", {"a": 1})
    assert again.resumed and again.id == j.id and again.cell("cell") == j.cell("cell")
    other = tree.journal("bench", {"a": 2})
    assert other.id != j.id and not other.resumed
    dest = again.close()
    assert dest.parent.name == "closed" and not again.path.exists()
    assert not tree.journal("bench", {"a": 1}).resumed


def test_lock_refuses_a_second_bench_through_the_cli_and_wait_queues(
        fake_matrix: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _m, state, tree = setup_tree(fake_matrix, tmp_path)
    table = handlers(engine_of(lambda: PersistentFake(state)))
    script = ("import sys, time; from pathlib import Path; "
              "from openssl_matrix.results.tree import ResultsTree; "
              "t = ResultsTree(Path(sys.argv[1])); t.lock(); print('locked', flush=True); "
              "time.sleep(float(sys.argv[2]))")
    with subprocess.Popen([sys.executable, "-c", script, str(tree), "2"],
                          stdout=subprocess.PIPE, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}) as holder:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        flags = bench_flags(fake_matrix, tree, only="1.1.1w-asm-*", suite="quick")
        with pytest.raises(Exit) as exc:
            dispatch("bench", "", flags, table)
        assert exc.value.code == ResultsError.exit_code
        err = capsys.readouterr().err
        assert f"is in use by pid {holder.pid}" in err and "--wait" in err
        assert not list(tree.glob("host-*")), "a refused bench writes nothing"
        t0 = time.monotonic()
        dispatch("bench", "", {**flags, "wait": True}, table)
        assert time.monotonic() - t0 > 0.5, "--wait queues behind the holder"
    assert "1.1.1w-asm-x86_64: complete" in capsys.readouterr().out


def test_failures_are_listed_with_their_folders_and_exit_non_zero(
        fake_matrix: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _m, state, tree = setup_tree(fake_matrix, tmp_path)

    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        if "3.0.20" in image and "OPENSSL_ia32cap" in env:
            return 132, "", "Illegal instruction\n"
        return speed_responder(image, command, env)

    table = handlers(engine_of(lambda: PersistentFake(state, responder)))
    flags = bench_flags(fake_matrix, tree, only=ASM, suite="quick")
    with pytest.raises(Exit) as exc:
        dispatch("bench", "", flags, table)
    assert exc.value.code == BenchError.exit_code
    out = capsys.readouterr().out
    failure = next(line for line in out.splitlines() if line.startswith("  ✕"))
    assert "quick · 3.0.20-asm-x86_64: partial" in failure
    assert f"{tree}/host-amd-epyc-7b13/3.0.20-asm-x86_64/quick/0001/raw" in failure
    assert "1.1.1w-asm-x86_64: complete" in out


def test_a_suite_that_fails_does_not_stop_the_next(
        fake_matrix: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    text = fake_matrix.read_text().replace("profiles:", """  second:
    algorithms: [md5]
    seconds: 1
profiles:""")
    fake_matrix.write_text(text)
    _m, state, tree = setup_tree(fake_matrix, tmp_path)

    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        if command[-1] == "md5":
            return 1, "", "md5 is disabled in this build\n"
        return speed_responder(image, command, env)

    table = handlers(engine_of(lambda: PersistentFake(state, responder)))
    flags = bench_flags(fake_matrix, tree, only="1.1.1w-asm-*", suite="second,quick")
    with pytest.raises(Exit) as exc:
        dispatch("bench", "", flags, table)
    assert exc.value.code == BenchError.exit_code
    out = capsys.readouterr().out
    assert "== suite second" in out and "== suite quick" in out
    assert "second · 1.1.1w-asm-x86_64: failed" in out
    assert (tree / "host-amd-epyc-7b13/1.1.1w-asm-x86_64/quick/0001/figures.json").exists()
    with pytest.raises(Exit) as exc:
        dispatch("bench", "", {**flags, "suite": "quick,nosuch"}, table)
    assert exc.value.code == ConfigError.exit_code


def test_devices_only_when_the_suite_asks_and_the_host_has_them(
        fake_matrix: Path, tmp_path: Path) -> None:
    text = fake_matrix.read_text().replace("profiles:", """  dev:
    algorithms: [aes-128-cbc]
    seconds: 1
    bytes: 8192
    devices: [/dev/null, /dev/openssl-matrix-absent]
profiles:""")
    fake_matrix.write_text(text)
    m, state, tree = setup_tree(fake_matrix, tmp_path)
    backend = PersistentFake(state)
    bencher = Bencher(m, backend, ResultsTree(tree), engine=EngineInfo(endpoint="local"),
                      git_commit=None)
    out = bencher.bench(m.select("1.1.1w-asm-*"), m.suite("dev"), "auto")
    speed = [lim for (_, cmd, _), lim in zip(backend.runs, backend.limits, strict=True)
             if unwrap_speed(cmd)[:2] == ("openssl", "speed")]
    assert [lim.devices for lim in speed] == [("/dev/null",)]
    meta = json.loads((Path(str(out[0].run_dir)) / "meta.json").read_text())
    assert any("/dev/openssl-matrix-absent" in n and "not passed" in n for n in meta["notes"])
    backend.limits.clear()
    backend.runs.clear()
    bencher.bench(m.select("1.1.1w-asm-*"), m.suite("quick"), "auto")
    assert all(lim.devices == () for lim in backend.limits), "no suite device, no device"
    for (_, cmd, _), lim in zip(backend.runs, backend.limits, strict=True):
        if unwrap_speed(cmd)[0] != "openssl":
            continue
        assert lim.network == "none" and lim.read_only and lim.user == "65534:65534"
        assert dict(lim.labels)[TREE_LABEL] == str(tree.resolve())
    assert backend.removed_labels == [{TREE_LABEL: str(tree.resolve())}] * 2


def test_docker_unreachable_is_a_clear_error(tmp_path: Path, fake_matrix: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    for command, flags in (("build", {"jobs": 0, "force": False, "cpu": ""}),
                           ("bench", {"cpu": "auto", "suite": "", "force": False,
                                      "wait": False, "fresh": False, "repeat": 0})):
        with pytest.raises(Exit) as exc:
            dispatch(command, "", {"matrix": str(fake_matrix), "results": str(tmp_path / "r"),
                                   "only": "", **flags}, handlers())
        assert exc.value.code == DockerUnavailable.exit_code
        err = capsys.readouterr().err
        assert f"cannot reach the Docker engine at unix://{tmp_path}/no-engine.sock" in err
        assert "hint: start it" in err and "Traceback" not in err


def test_run_limits_default_to_isolation() -> None:
    lim = RunLimits()
    assert (lim.network, lim.read_only, lim.devices, lim.user) == ("none", True, (),
                                                                   "65534:65534")
    assert lim.memory and lim.pids > 0


def test_an_interrupted_multi_suite_bench_resumes_without_redoing_the_first_suite(
        fake_matrix: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    fake_matrix.write_text(fake_matrix.read_text().replace("profiles:", """  second:
    algorithms: [aes-128-cbc]
    seconds: 1
    bytes: 8192
profiles:"""))
    _m, state, tree = setup_tree(fake_matrix, tmp_path)
    interrupt = [True]
    backends: list[FakeBackend] = []

    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        speed_runs = [b for b in backends[-1].runs if unwrap_speed(b[1])[1] == "speed"]
        if interrupt[0] and "3.0.20" in image and "OPENSSL_ia32cap" not in env and \
                len(speed_runs) > 4:
            raise KeyboardInterrupt  # Ctrl-C in the second suite
        return speed_responder(image, command, env)

    def make() -> FakeBackend:
        backends.append(PersistentFake(state, responder))
        return backends[-1]

    table = handlers(engine_of(make))
    flags = bench_flags(fake_matrix, tree, only=ASM, suite="quick,second")
    with pytest.raises(Exit) as exc:
        dispatch("bench", "", flags, table)
    assert exc.value.code == 130
    assert "rerun the same command to go on" in capsys.readouterr().err
    interrupt[0] = False
    dispatch("bench", "", flags, table)
    measured = [(img.split("/")[1].split(":")[0], cmd[-1]) for img, cmd, _ in backends[-1].runs
                if unwrap_speed(cmd)[:2] == ("openssl", "speed")]
    assert measured == [("3.0.20-asm-x86_64", "aes-128-cbc")], \
        "only the cell the interrupt stopped is measured again"
    statuses = {(r.suite, r.variant): r.meta["status"] for r in ResultsTree(tree).runs()
                if r.meta["status"] == "complete"}
    assert len(statuses) == 4
    assert not list((tree / "_journal").glob("bench-*.json")), "both sessions closed"


def test_builds_have_no_network_and_an_engine_lost_mid_build_keeps_finished_variants(
        fake_matrix: Path, tmp_path: Path) -> None:
    m = load_matrix(fake_matrix, default_urls=default_urls)
    state = tmp_path / "engine.json"
    tree = ResultsTree(tmp_path / "results")
    backend = PersistentFake(state)
    networks: dict[str, str | None] = {}
    real_build = backend.build

    def build(context: Path, tag: str, **kwargs: Any) -> str:
        networks[tag.split(":")[0]] = kwargs["network"]
        if "3.0.20" in tag:
            raise DockerUnavailable("the Docker engine stopped answering while building")
        return real_build(context, tag, **kwargs)

    backend.build = build  # type: ignore[method-assign]
    with pytest.raises(DockerUnavailable):
        Builder(m, backend, tree, workdir=tmp_path / "w").build(m.select(ASM))
    assert networks == {"openssl-matrix/toolchain": None,  # apt needs the network once
                        "openssl-matrix/1.1.1w-asm-x86_64": "none",
                        "openssl-matrix/3.0.20-asm-x86_64": "none"}
    assert (tmp_path / "results/_builds/1.1.1w-asm-x86_64/latest.json").exists()
    assert not (tmp_path / "results/_builds/3.0.20-asm-x86_64/latest.json").exists()
    again = PersistentFake(state)
    out = Builder(m, again, tree, workdir=tmp_path / "w").build(m.select(ASM))
    assert [(o.variant, o.status) for o in out] == [("1.1.1w-asm-x86_64", "up-to-date"),
                                                    ("3.0.20-asm-x86_64", "built")]
    assert [t.split(":")[0] for t in again.builds] == ["openssl-matrix/3.0.20-asm-x86_64"]


def test_an_interrupted_repeated_bench_resumes_round_by_round(
        fake_matrix: Path, tmp_path: Path) -> None:
    m, state, tree = setup_tree(fake_matrix, tmp_path)
    backend = ctrl_c_at(state, 6)  # round 2, first variant, second mask
    results = ResultsTree(tree)
    with pytest.raises(KeyboardInterrupt):
        Bencher(m, backend, results, engine=EngineInfo(), git_commit=None).bench(
            m.select(ASM), m.suite("quick"), "auto", repeat=3)
    out, again = bench_once_repeat(m, state, tree, 3)
    assert [(o.variant, o.round, o.reused) for o in out] == [
        ("1.1.1w-asm-x86_64", 1, True), ("3.0.20-asm-x86_64", 1, True),
        ("1.1.1w-asm-x86_64", 2, False), ("3.0.20-asm-x86_64", 2, False),
        ("1.1.1w-asm-x86_64", 3, False), ("3.0.20-asm-x86_64", 3, False)]
    assert len([c for _, c, _ in again.runs if unwrap_speed(c)[1] == "speed"]) == 4 * 2
    for variant, refs in cell_runs(tree).items():
        done = [r.meta for r in refs if r.meta["status"] == "complete"]
        assert sorted(d["round"] for d in done) == [1, 2, 3], variant
        assert len({d["series"]["id"] for d in done}) == 1, "one series across the resume"
        series = list((tree / "host-amd-epyc-7b13" / variant / "quick").glob("series-*.json"))
        assert len(series) == 1
        assert len(json.loads(series[0].read_text())["runs"]) == 3


def bench_once_repeat(m: Matrix, state: Path, tree: Path, repeat: int,
                      ) -> tuple[list[Any], FakeBackend]:
    backend = PersistentFake(state)
    out = Bencher(m, backend, ResultsTree(tree), engine=EngineInfo(), git_commit=None).bench(
        m.select(ASM), m.suite("quick"), "auto", repeat=repeat)
    return out, backend
