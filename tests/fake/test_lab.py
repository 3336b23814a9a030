"""The lab's orchestration (lab.py, labview.py) with the container engine faked at its seam.

Three CPU profiles on three "engines" (fakes keyed by docker_host, each with its own
engine ID), run by `invoke matrix bench --cpu=a,b,c` as dispatched from the command
line; the engine workers run in threads (cli.worker.thread_lab: the same worker function as
the real child processes). Checked: every engine measures at once and files under its CPU
with its identity; an unreachable engine and one that dies mid-run never stop the others;
the exit status names them; a rerun resumes each engine where it stopped without
measuring the finished ones again; plain display lines when not a TTY.
"""

from __future__ import annotations

import io
import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from invoke.exceptions import Exit

from openssl_matrix.cli.table import dispatch
from openssl_matrix.cli.worker import thread_lab
from openssl_matrix.core.errors import LAB_EXIT, DockerUnavailable, ProfileMismatch
from openssl_matrix.engine.engineinfo import EngineInfo
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.lab.run import (
    WORKER_COMMAND,
    EngineJob,
    EngineState,
    ProcessWorker,
    plan_jobs,
    split_cpus,
)
from openssl_matrix.lab.view import Display, status_line
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.results.tree import LAB_ENV, ResultsTree

from ..fakes import FakeBackend, Handlers, engine_of
from .test_pipeline_fake import speed_responder

VARIANTS = "1.1.1w-asm-*"
PROFILES = """  lab-a:
    description: EPYC behind ssh://a.lab
    vendor: AuthenticAMD
    model: "*EPYC*"
    docker_host: ssh://bench@a.lab
  lab-b:
    description: EPYC behind a TLS engine
    vendor: AuthenticAMD
    model: "*EPYC*"
    docker_host: tcp://b.lab:2376
  lab-c:
    description: EPYC behind a context that is down
    vendor: AuthenticAMD
    model: "*EPYC*"
    docker_host: context:c-lab
  lab-intel:
    description: an Intel host (the fake engine is an EPYC)
    vendor: GenuineIntel
    docker_host: ssh://bench@a.lab
"""


class LabFake(FakeBackend):
    """A fake engine with an identity, whose runs can fail like an engine dying."""

    def __init__(self, name: str, images: dict[str, str]) -> None:
        super().__init__(self.respond)
        self.name = name
        self.images.update(images)
        self.die_at: int | None = None
        self.speed_runs = 0
        self.threads: set[str] = set()

    def engine_info(self) -> EngineInfo:
        return EngineInfo(endpoint=f"fake://{self.name}", id=f"ID-{self.name}",
                          name=f"host-{self.name}", server_version="0-fake", kernel="fake")

    def respond(self, image: str, command: Sequence[str], env: Mapping[str, str],
                ) -> tuple[int, str, str]:
        self.speed_runs += 1
        self.threads.add(threading.current_thread().name)
        if self.die_at is not None and self.speed_runs >= self.die_at:
            raise DockerUnavailable(f"the Docker engine stopped answering ({self.name})",
                                    hint="restart it and rerun the same command")
        return speed_responder(image, command, env)


@pytest.fixture
def lab_setup(fake_matrix: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
              ) -> tuple[Path, Path, dict[str, LabFake], Handlers]:
    fake_matrix.write_text(fake_matrix.read_text() + PROFILES)
    m = load_matrix(fake_matrix, default_urls=default_urls)
    tree = tmp_path / "results"
    built = FakeBackend()
    Builder(m, built, ResultsTree(tree), workdir=tmp_path / "work").build(m.select(VARIANTS))
    engines = {"ssh://bench@a.lab": LabFake("a", built.images),
               "tcp://b.lab:2376": LabFake("b", built.images)}

    def backend(base_url: str | None = None, **_: Any) -> LabFake:
        if base_url == "context:c-lab":
            raise DockerUnavailable("cannot reach the Docker engine at ssh://c.lab "
                                    "(context:c-lab): ssh: connect to host c.lab port 22: "
                                    "Connection refused")
        assert base_url is not None
        return engines[base_url]

    table = thread_lab(engine_of(backend))
    monkeypatch.setenv("OPENSSL_MATRIX_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv(LAB_ENV, "")  # restored after the test: ThreadWorker sets it
    return fake_matrix, tree, engines, table


def bench(table: Handlers, matrix: Path, tree: Path, cpu: str) -> int:
    flags = {"matrix": str(matrix), "results": str(tree), "cpu": cpu, "only": VARIANTS,
             "suite": "quick", "force": False, "wait": False, "fresh": False, "repeat": 0,
             "settle": "0"}
    try:
        dispatch("bench", "", flags, table)
    except Exit as exc:
        return int(exc.code or 0)
    return 0


def metas(tree: Path, cpu: str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(tree.glob(f"{cpu}/*/quick/*/meta.json"))]


def test_split_and_plan_group_profiles_by_engine(fake_matrix: Path) -> None:
    fake_matrix.write_text(fake_matrix.read_text() + PROFILES)
    m = load_matrix(fake_matrix, default_urls=default_urls)
    assert split_cpus(" lab-a, lab-b,,lab-a ") == ["lab-a", "lab-b"]
    jobs = plan_jobs(m, "bench", ["lab-b", "lab-a", "lab-intel", "ryzen"], {"x": 1})
    assert [(j.engine, j.cpus, j.index) for j in jobs] == [
        ("tcp://b.lab:2376", ("lab-b",), 0), ("ssh://bench@a.lab", ("lab-a", "lab-intel"), 1),
        ("local", ("ryzen",), 3)]
    build = plan_jobs(m, "build", ["lab-a", "lab-intel"], {})
    assert [j.cpus for j in build] == [("lab-a",)], "one build per engine"
    assert EngineJob.from_json(jobs[1].to_json()) == jobs[1]


def test_three_engines_at_once_one_unreachable_then_one_dies_and_resumes(
        lab_setup: tuple[Path, Path, dict[str, LabFake], Handlers],
        capsys: pytest.CaptureFixture[str]) -> None:
    matrix, tree, engines, table = lab_setup
    engines["tcp://b.lab:2376"].die_at = 2  # b's engine goes away at its 2nd speed run

    code = bench(table, matrix, tree, "lab-a,lab-b,lab-c")
    assert code == LAB_EXIT + 0b110, "bits 1 and 2: the 2nd and 3rd engines failed"
    err = capsys.readouterr().err
    assert "2 of 3 engine(s) did not finish" in err
    assert "lab-b on tcp://b.lab:2376 (exit 6: engine unreachable" in err
    assert "lab-c on context:c-lab (exit 6: engine unreachable" in err
    assert "Finished: lab-a" in err and "rerun the same command" in err
    assert "[lab-c] error: cannot reach the Docker engine at ssh://c.lab" in err, \
        "plain lines, prefixed with the engine, when not a TTY"
    assert "✓ lab-a" in err and "✕ lab-c" in err

    a = metas(tree, "lab-a")
    assert [m["status"] for m in a] == ["complete"]
    assert a[0]["docker"]["endpoint"] == "fake://a" and a[0]["docker"]["id"] == "ID-a"
    assert a[0]["docker"]["name"] == "host-a" and a[0]["cpu_profile"] == "lab-a"
    assert [m["status"] for m in metas(tree, "lab-b")] == ["interrupted"]
    assert not (tree / "lab-c").exists()
    assert engines["ssh://bench@a.lab"].threads.isdisjoint(
        engines["tcp://b.lab:2376"].threads), "each engine has its worker"
    logs = sorted(p.name for p in (tree / "_lab").glob("*-bench/*.log"))
    assert logs == ["lab-a.log", "lab-b.log", "lab-c.log"]

    # b's engine is back, c's is still down: rerun the same command
    engines["tcp://b.lab:2376"].die_at = None
    runs_a = engines["ssh://bench@a.lab"].speed_runs
    code = bench(table, matrix, tree, "lab-a,lab-b,lab-c")
    assert code == LAB_EXIT + 0b100, "only the 3rd engine failed this time"
    out = capsys.readouterr()
    assert engines["ssh://bench@a.lab"].speed_runs == runs_a, \
        "lab-a finished in the open session: not measured again"
    assert [m["status"] for m in metas(tree, "lab-a")] == ["complete"]
    assert [m["status"] for m in metas(tree, "lab-b")] == ["interrupted", "complete"]
    b = metas(tree, "lab-b")
    assert b[0]["session"] == b[1]["session"], "b resumed its session"
    assert "Finished: lab-a, lab-b" in out.err

    # without the unreachable one, the lab finishes and closes the sessions
    assert bench(table, matrix, tree, "lab-a,lab-b") == 0
    assert engines["ssh://bench@a.lab"].speed_runs == runs_a
    assert not list((tree / "_journal").glob("bench-*.json")), "sessions closed"
    assert bench(table, matrix, tree, "lab-a,lab-b") == 0
    assert engines["ssh://bench@a.lab"].speed_runs > runs_a, "a new session measures anew"


def test_a_profile_that_does_not_match_its_engine_fails_alone(
        lab_setup: tuple[Path, Path, dict[str, LabFake], Handlers],
        capsys: pytest.CaptureFixture[str]) -> None:
    matrix, tree, _engines, table = lab_setup
    code = bench(table, matrix, tree, "lab-intel,lab-b")
    assert code == LAB_EXIT + 0b1
    err = capsys.readouterr().err
    assert f"exit {ProfileMismatch.exit_code}: CPU does not match the profile" in err
    assert [m["status"] for m in metas(tree, "lab-b")] == ["complete"]


def test_an_unknown_profile_is_refused_before_any_engine_starts(
        lab_setup: tuple[Path, Path, dict[str, LabFake], Handlers],
        capsys: pytest.CaptureFixture[str]) -> None:
    matrix, tree, engines, table = lab_setup
    assert bench(table, matrix, tree, "lab-a,lab-bb") == 2
    assert "no CPU profile named 'lab-bb'" in capsys.readouterr().err
    assert engines["ssh://bench@a.lab"].speed_runs == 0


def test_a_second_lab_on_the_same_tree_is_refused(
        lab_setup: tuple[Path, Path, dict[str, LabFake], Handlers],
        capsys: pytest.CaptureFixture[str]) -> None:
    matrix, tree, _engines, table = lab_setup
    holder = ResultsTree(tree)
    holder.lock()
    try:
        assert bench(table, matrix, tree, "lab-a,lab-b") == 9
    finally:
        holder.unlock()
    assert "is in use by" in capsys.readouterr().err


def test_lab_build_builds_on_each_engine_once(
        lab_setup: tuple[Path, Path, dict[str, LabFake], Handlers]) -> None:
    matrix, tree, engines, table = lab_setup
    flags = {"matrix": str(matrix), "results": str(tree), "cpu": "lab-a,lab-intel,lab-b",
             "only": "3.0.20-asm-*", "jobs": 0, "force": False, "images": "build"}
    dispatch("build", "", flags, table)
    assert [t for t in engines["ssh://bench@a.lab"].builds if "3.0.20" in t] == \
        [t for t in engines["tcp://b.lab:2376"].builds if "3.0.20" in t]
    assert len([t for t in engines["ssh://bench@a.lab"].builds if "3.0.20" in t]) == 1
    logs = {p.name for p in tree.glob("_builds/3.0.20-asm-x86_64/*/build-*.log")}
    assert logs == {"build-lab-a.log", "build-lab-b.log"}, "a build log per engine"


def test_the_terminal_display_redraws_one_line_per_engine(tmp_path: Path) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    jobs = [EngineJob("ssh://bench@a.lab", ("lab-a",), "bench", {}),
            EngineJob("tcp://b.lab:2376", ("lab-b",), "bench", {}, index=1)]
    states = [EngineState(j, tmp_path / f"{j.name}.log") for j in jobs]
    out = Tty()
    display = Display(states, out)
    states[0].take("▸ [3/12] 1.1.1w-asm-x86_64 · suite quick")
    display.refresh()
    states[1].code, states[1].status = 6, "failed"
    states[1].take("error: cannot reach the Docker engine")
    display.refresh()
    text = out.getvalue()
    assert text.count("\033[2F") == 1, "the second frame moves up over the first"
    assert "lab-a" in text and "3/12" in text and "ssh://bench@a.lab: ▸ [3/12]" in text
    assert "exit 6 (engine unreachable) — error: cannot reach" in text
    assert len(status_line(states[0], 40)) == 40


def test_workers_share_the_labs_tree_lock_and_nobody_else_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from openssl_matrix.core.errors import ResultsError

    root = tmp_path / "results"
    lab_tree = ResultsTree(root)
    lab_tree.lock()
    try:
        monkeypatch.setenv(LAB_ENV, f"{os.getpid()}:{root.resolve()}")
        worker = ResultsTree(root)
        worker.lock()
        assert worker.shared, "the lab's worker shares its lock"
        worker.unlock()
        assert not worker.shared
        for wrong in (f"1:{root.resolve()}", f"{os.getpid()}:{tmp_path / 'other'}", "x"):
            monkeypatch.setenv(LAB_ENV, wrong)
            with pytest.raises(ResultsError, match="is in use by"):
                ResultsTree(root).lock()
    finally:
        lab_tree.unlock()
    monkeypatch.setenv(LAB_ENV, f"{os.getpid()}:{root.resolve()}")
    alone = ResultsTree(root)
    alone.lock()  # nobody holds it: an ordinary lock, not a shared one
    assert not alone.shared
    alone.unlock()


def test_a_worker_process_starts_through_the_package_entry_point(tmp_path: Path) -> None:
    """A real child process, as a lab starts one: `python -m openssl_matrix --lab-worker
    JOB` runs the job's command through the command table (here one that refuses the
    profile's --cpu, so no engine is needed: the table's own error and exit 10 prove the
    dispatch), naming no module above the lab."""
    assert WORKER_COMMAND[:2] == ("-m", "openssl_matrix")
    job = EngineJob(engine="local", cpus=("auto",), command="list",
                    flags={"matrix": str(Path(__file__).resolve().parents[2] / "matrix.yaml")})
    worker = ProcessWorker(job, tmp_path / "results")
    lines = list(worker.lines())
    assert worker.wait() == 10, lines
    assert lines[0] == "═ list --cpu=auto on local"
    assert any("`invoke matrix list` does not take --cpu" in ln for ln in lines), lines
