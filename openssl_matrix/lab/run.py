"""A lab: one command runs ``build`` or ``bench`` on several CPU profiles' engines at once.

``invoke matrix bench --cpu=ryzen,xeon,via`` groups the named profiles by Docker engine
(their ``docker_host``; profiles without one share the local engine) and starts one
**engine worker** per engine, all at the same time. A worker is a child process running
the ordinary single-profile command for each of its profiles in turn
(:func:`worker_main`, started as ``python -m openssl_matrix --lab-worker JOB``: the command
line's entry point hands the worker its :data:`Runner`, the command table, so this module
imports nothing of the command line), so each engine validates its CPU against its profile, measures
under its own engine lock (``hostlock``), keeps its own journal and resumes where it
stopped when the same command is run again, exactly as ``--cpu=ONE`` does. One engine
that is unreachable, fails or is killed never stops the others.

The lab holds the results tree's lock for all of them (workers share it, see
``ResultsTree.lock``): every engine files under its CPU in the same tree, with the
engine's identity (endpoint, ID, name, transport) in each run's ``docker`` provenance.
Before starting, the lab marks folders left half-written by an earlier killed run
``interrupted``; while the workers run, each recovers only its own CPU's folders.

Each worker's output goes to ``<results>/_lab/<started>/<engine>.log``; the terminal
shows one refreshed line per engine (:mod:`openssl_matrix.lab.view`). The exit status is 0
when every engine finished, else ``32 + mask`` where bit *i* stands for the *i*-th engine
in ``--cpu`` order (the 5th bit for the 5th and any later one): ``33`` = the first failed,
``38`` = the 2nd and 3rd; the message names each with its own exit status.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from openssl_matrix.core import jsonread, log
from openssl_matrix.core.errors import INTERNAL_ERROR, INTERRUPTED, LabError, UsageError
from openssl_matrix.lab.view import REASONS, Display
from openssl_matrix.matrix.model import Matrix
from openssl_matrix.results.records import read_json
from openssl_matrix.results.tree import LAB_ENV, Journal, ResultsTree


def split_cpus(text: str) -> list[str]:
    """``a,b , c`` as ``[a, b, c]`` (duplicates dropped, order kept)."""
    return list(dict.fromkeys(c.strip() for c in (text or "").split(",") if c.strip()))


@dataclass(frozen=True)
class EngineJob:
    """What one engine worker does: ``command`` for each of ``cpus`` in turn."""

    engine: str  # the profiles' docker_host, or "local"
    cpus: tuple[str, ...]
    command: str
    flags: Mapping[str, Any]
    index: int = 0  # position of its first profile in --cpu
    #: the run's other engines, as (profile names, docker_host): where images may be
    #: shipped from (ship.py) and who may be building a variant already (claims.py)
    peers: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        return "+".join(self.cpus)

    def to_json(self) -> str:
        return json.dumps({"engine": self.engine, "cpus": list(self.cpus),
                           "command": self.command, "flags": dict(self.flags),
                           "index": self.index, "peers": [list(p) for p in self.peers]})

    @classmethod
    def from_json(cls, text: str) -> EngineJob:
        data = jsonread.loads(text)
        return cls(engine=str(data["engine"]), cpus=tuple(data["cpus"]),
                   command=str(data["command"]), flags=dict(data["flags"]),
                   index=int(data.get("index", 0)),
                   peers=tuple((str(n), str(e)) for n, e in data.get("peers") or ()))


#: in an engine worker: the other engines of its lab (EngineJob.peers)
_RUN_PEERS: ContextVar[tuple[tuple[str, str], ...]] = ContextVar("lab_peers", default=())


def run_peers() -> tuple[tuple[str, str], ...]:
    """The other engines of the lab this worker (process, or thread in tests) belongs to,
    as (profile names, docker_host ``"local"`` for the local engine); () outside a lab."""
    return _RUN_PEERS.get()


def plan_jobs(m: Matrix, command: str, cpus: list[str], flags: Mapping[str, Any],
              ) -> list[EngineJob]:
    """One job per engine: the named profiles grouped by ``docker_host``, in ``--cpu``
    order. ``build`` builds once per engine (for its first profile: the images are the
    same); ``bench`` measures each profile of an engine in turn."""
    groups: dict[str, list[str]] = {}
    first: dict[str, int] = {}
    for i, cpu in enumerate(cpus):
        host = "local" if cpu == "auto" else (m.profile(cpu).docker_host or "local")
        groups.setdefault(host, []).append(cpu)
        first.setdefault(host, i)
    names_of = {host: "+".join(names[:1] if command == "build" else names)
                for host, names in groups.items()}
    return [EngineJob(engine=host, cpus=tuple(names[:1] if command == "build" else names),
                      command=command, flags=dict(flags), index=first[host],
                      peers=tuple((names_of[h], h) for h in groups if h != host))
            for host, names in groups.items()]


# -- a worker: the ordinary command, per profile ---------------------------------------


#: Runs one command with its flags and returns its exit status (the command line's
#: dispatcher, passed in by the command line's worker entry point, above the lab).
Runner = Callable[[str, Mapping[str, Any]], int]

#: How a worker process is started: the package's own entry point (``python -m
#: openssl_matrix``) with this first argument and the job; the command line (cli/main.py,
#: above the lab) hands it to :func:`worker_main` with the command table. No module of a
#: higher layer is named here.
WORKER_FLAG = "--lab-worker"
WORKER_COMMAND = ("-m", "openssl_matrix", WORKER_FLAG)


def worker_run(job: EngineJob, run: Runner) -> int:
    """Run the job's command for each of its profiles; the first failing exit status
    (later profiles still run), else 0. The run's other engines are its peers
    (:func:`run_peers`) while it runs."""
    worst = 0
    token = _RUN_PEERS.set(job.peers)
    try:
        for cpu in job.cpus:
            log.info(f"═ {job.command} --cpu={cpu} on {job.engine}")
            code = run(job.command, {**job.flags, "cpu": cpu})
            worst = worst or code
            if code == INTERRUPTED:
                break
    finally:
        _RUN_PEERS.reset(token)
    return worst


def _watch_parent(parent: int) -> None:
    """End this worker like Ctrl-C does if the lab that started it dies (kill -9)."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True, name="lab parent watch").start()


def worker_main(job_json: str, run: Runner) -> int:
    """The body of an engine worker process (``python -m openssl_matrix --lab-worker JOB``)."""
    _watch_parent(os.getppid())
    return worker_run(EngineJob.from_json(job_json), run)


# -- starting workers ------------------------------------------------------------------


class Worker(Protocol):
    """A running engine worker: its output lines (ending when it ends), its exit status."""

    def lines(self) -> Iterator[str]: ...

    def wait(self) -> int: ...

    def stop(self) -> None: ...


class ProcessWorker:
    """An engine worker in a child process of its own."""

    def __init__(self, job: EngineJob, tree_root: Path) -> None:
        package_parent = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, LAB_ENV: f"{os.getpid()}:{tree_root.resolve()}",
               "PYTHONPATH": os.pathsep.join(
                   p for p in (package_parent, os.environ.get("PYTHONPATH")) if p),
               "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, *WORKER_COMMAND, job.to_json()],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, text=True, encoding="utf-8", errors="replace", bufsize=1)

    def lines(self) -> Iterator[str]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            yield line.rstrip("\n")

    def wait(self) -> int:
        code = self.proc.wait()
        if self.proc.stdout is not None:  # read to its end by lines(): close the pipe
            self.proc.stdout.close()
        return code

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)


class ThreadWorker:
    """An engine worker in a thread of this process (unit tests with a fake backend):
    the same :func:`worker_run` with the ``run`` given, its log lines captured with
    ``log.to``."""

    def __init__(self, job: EngineJob, tree_root: Path, run: Runner) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.code: int | None = None
        os.environ[LAB_ENV] = f"{os.getpid()}:{tree_root.resolve()}"  # shares the lab's lock

        def body() -> None:
            with log.to(self._lines.put):
                try:
                    self.code = worker_run(job, run)
                except BaseException as exc:  # a bug in the test's fake: reported as INTERNAL_ERROR
                    self._lines.put(f"error: {type(exc).__name__}: {exc}")
                    self.code = INTERNAL_ERROR
            self._lines.put(None)

        self.thread = threading.Thread(target=body, daemon=True, name=f"lab {job.name}")
        self.thread.start()

    def lines(self) -> Iterator[str]:
        while (line := self._lines.get()) is not None:
            yield line

    def wait(self) -> int:
        self.thread.join()
        return self.code if self.code is not None else INTERNAL_ERROR

    def stop(self) -> None:
        pass  # threads cannot be interrupted; the tests' fakes finish quickly


#: How the lab starts its engine workers: a child process each (:class:`ProcessWorker`,
#: the default), or a thread each (:class:`ThreadWorker`, for the fake-engine tests,
#: through the command line's ``thread_lab``).
Launcher = Callable[[EngineJob, Path], Worker]


# -- the lab ---------------------------------------------------------------------------


@dataclass
class EngineState:
    """What the display shows about one engine."""

    job: EngineJob
    log_path: Path
    status: str = "starting"  # starting | running | finished | failed
    code: int | None = None
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    progress: str = ""
    last: str = ""
    lines: int = 0

    @property
    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def take(self, line: str) -> None:
        """Note one output line of the worker."""
        self.lines += 1
        text = line.strip()
        if not text:
            return
        self.status = "running" if self.status == "starting" else self.status
        if text.startswith("▸ [") and "]" in text:
            self.progress = text[3:text.index("]")]
        self.last = text


def run_lab(m: Matrix, command: str, cpus: list[str], flags: Mapping[str, Any],
            tree: ResultsTree, *, launch: Launcher | None = None,
            out: Any = None) -> list[EngineState]:
    """Run ``command`` on every engine of ``cpus`` at once (see the module docstring);
    the caller holds the tree's lock (a bench) and turns the states into an exit."""
    if len(cpus) < 2:
        raise UsageError("a lab needs two or more profiles: --cpu=a,b")
    jobs = plan_jobs(m, command, cpus, flags)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    folder = tree.lab_dir(stamp, command)
    folder.mkdir(parents=True, exist_ok=True)
    states = [EngineState(job, folder / f"{job.name}.log") for job in jobs]
    display = Display(states, out if out is not None else sys.stderr)
    log.info(f"lab: {command} on {len(jobs)} engine(s) at once — "
             + "; ".join(f"{j.name} on {j.engine}" for j in jobs) + f" (logs: {folder})")
    workers: list[Worker] = []
    pumps: list[threading.Thread] = []
    try:
        for state in states:
            worker = (launch or ProcessWorker)(state.job, tree.root)
            workers.append(worker)
            pump = threading.Thread(target=_pump, args=(worker, state, display),
                                    daemon=True, name=f"lab pump {state.job.name}")
            pump.start()
            pumps.append(pump)
        while any(p.is_alive() for p in pumps):
            display.refresh()
            time.sleep(0.25)
    except KeyboardInterrupt:
        # a Ctrl-C reached the workers too: let them clean up; a SIGTERM of the lab did
        # not, so those still running after a moment get one
        _join(pumps, 5.0)
        for w in workers:
            w.stop()
        _join(pumps, 60.0)
        display.finish()
        raise
    display.finish()
    return states


def _join(threads: list[threading.Thread], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))


def _pump(worker: Worker, state: EngineState, display: Any) -> None:
    with state.log_path.open("a", encoding="utf-8") as fh:
        for line in worker.lines():
            fh.write(line + "\n")
            fh.flush()
            state.take(line)
            display.line(state, line)
        state.code = worker.wait()
    state.ended = time.monotonic()
    state.status = "finished" if state.code == 0 else "failed"
    display.line(state, None)


def print_summaries(states: list[EngineState], out: Any = None) -> None:
    """Each engine's own summary (the end of its log, from its last summary table on;
    else its last lines), one after the other."""
    stream = out if out is not None else sys.stdout
    for s in states:
        try:
            lines = s.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            lines = []
        starts = [i for i, line in enumerate(lines)
                  if line.startswith(("bench summary", "build summary", "═ "))]
        tail = lines[starts[-1]:] if starts else lines[-8:]
        if len(tail) > 80:
            tail = [*tail[:80], f"… ({len(tail) - 80} more lines in {s.log_path})"]
        stream.write(f"\n== {s.job.name} on {s.job.engine}: {s.status}"
                     + (f" (exit {s.code})" if s.code else "") + f" — log {s.log_path}\n")
        stream.write("".join(f"  {line}\n" for line in tail))
    stream.flush()


def lab_outcome(states: list[EngineState], cpus: list[str]) -> None:
    """Raise :class:`LabError` naming the engines that did not finish (exit 32 + mask)."""
    failed = [s for s in states if s.code != 0]
    if not failed:
        return
    mask = 0
    for s in failed:
        mask |= 1 << min(s.job.index, 4)
    parts = [f"{s.job.name} on {s.job.engine} (exit {s.code}: "
             f"{REASONS.get(s.code or 0, 'failed')}; log {s.log_path})" for s in failed]
    done = [s.job.name for s in states if s.code == 0]
    raise LabError(
        f"{len(failed)} of {len(states)} engine(s) did not finish: " + "; ".join(parts)
        + (f". Finished: {', '.join(done)}" if done else ""), mask=mask,
        hint="the others' results are kept; fix the cause and rerun the same command: "
        "each engine goes on where it stopped")


def close_sessions(tree: ResultsTree, m: Matrix, cpus: list[str],
                   flags: Mapping[str, Any]) -> list[Path]:
    """Close the bench sessions the engines of a lab left open (every engine finished):
    those of the lab's profiles, suites and variants. Until then a rerun of the same
    command resumes each of them, measuring only what did not finish."""
    suites = {m.suite(n or None).name
              for n in [x.strip() for x in str(flags.get("suite") or "").split(",")] or [""]}
    variants = sorted(v.id for v in m.select(flags.get("only") or None))
    closed = []
    for path in tree.journal_files("bench"):
        data = read_json(path)
        if not isinstance(data, dict) or data.get("status") != "open":
            continue
        ident = data.get("identity") or {}
        suite = ident.get("suite") or {}
        if ident.get("profile") in cpus and isinstance(suite, dict) and \
                suite.get("name") in suites and ident.get("variants") == variants:
            closed.append(Journal(path, data).close("finished"))
    return closed


@contextlib.contextmanager
def tree_for_lab(tree: ResultsTree, *, wait: bool) -> Iterator[ResultsTree]:
    """Hold the tree's lock for the lab's workers; mark folders an earlier, killed run
    left half-written ``interrupted`` first (no worker is writing yet)."""
    tree.lock(wait=wait)
    try:
        for path in tree.recover():
            log.warn(f"{path}: left half-written by an interrupted bench; marked "
                     "'interrupted' (raw output kept, not counted)")
        yield tree
    finally:
        tree.unlock()
