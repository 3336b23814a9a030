"""One cell run under ``perf record`` inside its variant's image (a speed or pkey cell
here; TLS and library cells through :data:`GENERIC_SCRIPT`, read in
``measure/profilecell.py``).

The variant images are Debian 12; a *profile image* (``FROM`` the variant's image, plus
Debian's ``linux-perf``) is built on demand, once per variant image (its tag names the
base image's id). In it, one container runs the wrapper :data:`PROFILE_SCRIPT`: a host
sample (``hostacct``), ``perf record -e cpu-clock -F 999 -g -- openssl speed ...``, a
second host sample, the shell's ``times``, then ``perf script`` in the *same* container,
so the libcrypto symbols resolve against the very files that ran (``perf script`` after
the container has gone gives ``[unknown]`` addresses). Operations come from speed's own
``+R`` count, so the time per operation is real work, not a share of an arbitrary run.

The container keeps the bench's isolation (no network, read-only root, memory and pid
limits) except two things perf needs: it runs as the image's root, and gets
``SYS_ADMIN`` back (``perf_event_open``; Docker's default seccomp profile allows it with
that capability). The host's own perf is never used.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from openssl_matrix.core import log
from openssl_matrix.core.errors import BenchError
from openssl_matrix.core.files import atomic_write
from openssl_matrix.core.statuses import CONTENDED
from openssl_matrix.engine.backend import Backend, RunLimits, RunResult
from openssl_matrix.matrix.model import Mask, Suite
from openssl_matrix.measure import guards, hostacct
from openssl_matrix.measure.invocation import TIMES_MARKER, Invocation, split_times
from openssl_matrix.measure.profile import Sample, parse_script, within
from openssl_matrix.measure.speedcmd import speed_invocations
from openssl_matrix.parse import parse_speed

EVENT = "cpu-clock"
FREQUENCY_HZ = 999
PERF_PACKAGE = "linux-perf"
#: Where perf's output goes inside the container (the bench's /tmp tmpfs).
DATA = "/tmp/perf.data"
#: The line between speed's stdout and ``perf script``'s on the container's stdout.
SCRIPT_MARKER = "+PERFSCRIPT"
WRAPPER_NAME = "openssl-profile"
#: ``-N``: no build-id cache (the root is read-only); ``--no-bpf-event``: perf 6.1 otherwise
#: spends about 1 s reading BPF programs at start (measured here), inside the accounting
#: window around speed; ``-k CLOCK_REALTIME``: sample times on the clock ``date +%s.%N``
#: reads, so a window the run itself printed (a handshake run's wall0/wall1, a speed
#: phase's stderr lines) selects the samples taken in it.
PERF_RECORD = ("perf", "record", "-q", "-N", "--no-bpf-event", "-e", EVENT,
               "-F", str(FREQUENCY_HZ), "-g", "-k", "CLOCK_REALTIME", "-o", DATA)

_SCRIPT_TAIL = ("cat /tmp/run.out; echo " + SCRIPT_MARKER + "; "
                "if [ $rc = 0 ]; then perf script -i " + DATA + " 2>&1 || rc=$?; fi; exit $rc")
#: The tail of an unprofiled run (the profiler's overhead: the same wrapper without perf).
_PLAIN_TAIL = "cat /tmp/run.out; echo " + SCRIPT_MARKER + "; exit $rc"
#: The wrapper's name ($0) of an unprofiled run, so its container is told apart.
PLAIN_NAME = "openssl-unprofiled"


def speed_script(profiled: bool = True) -> str:
    """The wrapper of a speed (or pkey) cell: host samples around the (profiled) speed run
    (as the bench's speed wrapper does), its ``times``, then speed's output and perf
    script's on stdout. Each line speed writes on stderr gets the time it came (``date
    +%s.%N``), so a phase of a public-key run (sign, then verify) is a window of samples.
    ``profiled=False``: the very same wrapper without perf (``--overhead``)."""
    perf = " ".join(PERF_RECORD) + " -- " if profiled else ""
    return (hostacct.SAMPLE_FUNCTION + "; _hs 0; { " + perf
            + 'openssl "$@" 2>&1 >/tmp/run.out; echo $? >/tmp/rc; } | while IFS= read -r l; '
            'do echo "$(date +%s.%N) $l"; done >/tmp/run.err; rc=$(cat /tmp/rc); _hs 1; '
            "cat /tmp/run.err >&2; echo " + TIMES_MARKER + " >&2; times >&2; "
            + (_SCRIPT_TAIL if profiled else _PLAIN_TAIL))


def generic_script(profiled: bool = True) -> str:
    """The wrapper of any other cell: the invocation's own exec command (under perf; its
    output carries its own host samples: the harness's, the TLS script's)."""
    perf = " ".join(PERF_RECORD) + " -- " if profiled else ""
    return (perf + '"$@" >/tmp/run.out 2>/tmp/run.err; rc=$?; cat /tmp/run.err >&2; '
            + (_SCRIPT_TAIL if profiled else _PLAIN_TAIL))


PROFILE_SCRIPT = speed_script()
GENERIC_SCRIPT = generic_script()
_STAMP = re.compile(r"^(\d+\.\d+) (.*)$")


def unstamp(stderr: str) -> tuple[str, list[tuple[float | None, str]]]:
    """Speed's stderr without the wrapper's timestamps, and each line with its time."""
    lines: list[tuple[float | None, str]] = []
    for line in stderr.splitlines():
        m = _STAMP.match(line)
        lines.append((float(m.group(1)), m.group(2)) if m else (None, line))
    return "".join(text + "\n" for _, text in lines), lines


def phase_windows(lines: list[tuple[float | None, str]]) -> list[tuple[float, float]]:
    """Each speed phase's window: from its ``+DT`` line to its ``+R`` line (``-mr``)."""
    out: list[tuple[float, float]] = []
    begin: float | None = None
    for t, text in lines:
        if text.startswith("+DT"):
            begin = t
        elif text.startswith("+R") and begin is not None and t is not None:
            out.append((begin, t))
            begin = None
    return out


DOCKERFILE = f"""# openssl-matrix profile image: a variant's image with Debian's perf added
# (measure/perfrun.py). Built on demand, with network for apt.
ARG BASE
FROM ${{BASE}}
ENV DEBIAN_FRONTEND=noninteractive LC_ALL=C
RUN apt-get update \\
 && apt-get install -y --no-install-recommends {PERF_PACKAGE} \\
 && rm -rf /var/lib/apt/lists/*
"""


class CellRecord(TypedDict):
    """:meth:`Cell.describe`: a profiled cell as its profile's record files it."""

    kind: str
    suite: str | None
    cell: str
    name: str
    algorithm: str
    bytes: int | None
    operation: str | None
    threads: int | None
    seconds: int
    unit: str
    invocation: str


class RunExtra(TypedDict, total=False):
    """What a profiled run's reader adds: the window its samples were kept in."""

    window: tuple[float, float] | None


@dataclass(frozen=True)
class Cell:
    """A cell the bench can run, as profiled: the bench's own invocation for it, and
    which of its results is the work done (``measure/profilecell.py`` picks them)."""

    kind: str
    """speed, pkey, tls or library: whose parser counts the operations."""
    suite: str
    label: str
    """The cell as the report names it (``sha256:16``, ``rsa2048:sign`` ...)."""
    name: str
    """Its folder in the results tree."""
    invocation: Invocation
    seconds: int
    operation: str | None = None
    """pkey: sign, verify ...; tls: handshake or resume; library: the harness operation."""
    algorithm: str = ""
    bytes: int | None = None
    threads: int | None = None
    unit: str = "operation"
    """What one operation is: an operation, a handshake, a resumed connection."""

    @property
    def command(self) -> tuple[str, ...]:
        return self.invocation.command

    def describe(self) -> CellRecord:
        return {"kind": self.kind, "suite": self.suite or None, "cell": self.label,
                "name": self.name, "algorithm": self.algorithm, "bytes": self.bytes,
                "operation": self.operation, "threads": self.threads,
                "seconds": self.seconds, "unit": self.unit,
                "invocation": self.invocation.name}


@dataclass(frozen=True)
class SpeedCell:
    """A speed algorithm at one block size, for so many seconds (``--algorithm/--bytes``)."""

    algorithm: str
    bytes: int
    seconds: int = 3

    @property
    def name(self) -> str:
        """The cell's folder name in the results tree."""
        return f"speed-{self.algorithm}-{self.bytes}"

    def suite(self) -> Suite:
        return Suite(name="profile", description="profiled cell", algorithms=(self.algorithm,),
                     evp=True, seconds=self.seconds, bytes=self.bytes,
                     masks=(Mask(name="native", ia32cap=None),))

    def cell(self, version: str) -> Cell:
        """The bench's own ``openssl speed`` invocation for this cell on ``version``."""
        invocations, notes = speed_invocations(version, self.suite())
        if len(invocations) != 1:
            raise BenchError(f"{self.algorithm} at {self.bytes} bytes is not one speed run "
                             f"on {version}: " + ("; ".join(notes) or "nothing to run"))
        return Cell("speed", "", f"{self.algorithm}:{self.bytes}", self.name, invocations[0],
                    self.seconds, algorithm=self.algorithm, bytes=self.bytes)

    def command(self, version: str) -> tuple[str, ...]:
        return self.cell(version).command


@dataclass(frozen=True)
class ProfileRun:
    """What one profiled run gave: its samples, the work done, and the host around it."""

    command: tuple[str, ...]
    samples: list[Sample]
    script: str
    operations: int
    seconds: float
    accounting: hostacct.HostAccounting | None
    findings: list[guards.Finding]
    result: RunResult
    extra: RunExtra = field(default_factory=RunExtra)

    @property
    def status(self) -> str:
        """``ok``, or ``contended`` when the host accounting says the host disturbed it
        (the status a figure gets)."""
        return CONTENDED if self.findings else "ok"

    @property
    def ns_per_op(self) -> float:
        """The cell's own time per operation (its measured seconds over its own count:
        speed's, s_time's, the harness's), profiled."""
        return self.seconds * 1e9 / self.operations

    @property
    def sampled_ns(self) -> int:
        return sum(s.period_ns for s in self.samples)


def profile_tag(base_tag: str, base_id: str) -> str:
    """The profile image's tag: the variant image's repository, prefixed, and its id."""
    repo = base_tag.rsplit(":", 1)[0] if ":" in base_tag.rsplit("/", 1)[-1] else base_tag
    name = repo.rsplit("/", 1)[-1]
    return f"openssl-matrix/profile-{name}:{base_id.removeprefix('sha256:')[:12]}"


def ensure_profile_image(backend: Backend, base_tag: str, workdir: Path) -> tuple[str, str]:
    """The profile image of ``base_tag`` (tag, id): found on the engine, else built."""
    base_id = backend.image_id(base_tag)
    if base_id is None:
        raise BenchError(f"image {base_tag} is not on the engine",
                         hint="run `invoke matrix build --only VARIANT` first")
    tag = profile_tag(base_tag, base_id)
    found = backend.image_id(tag)
    if found is not None:
        return tag, found
    log.info(f"building the profile image {tag} (FROM {base_tag}, with apt's {PERF_PACKAGE})")
    digest = hashlib.sha256(f"{DOCKERFILE}\0{base_id}".encode()).hexdigest()[:12]
    context = workdir / f"context-{digest}"
    atomic_write(context / "Dockerfile", DOCKERFILE)
    image_id = backend.build(context, tag, log_path=workdir / f"build-{digest}.log",
                             network=None, buildargs={"BASE": base_tag},
                             labels={"openssl-matrix.profile-of": base_tag,
                                     "openssl-matrix.profile-base-id": base_id})
    return tag, image_id


def limits(cell: Cell) -> RunLimits:
    """The bench's isolation, with root and SYS_ADMIN for perf (see the module's text)."""
    return RunLimits(user=None, cap_add=("SYS_ADMIN",), timeout=cell.seconds * 20 + 300.0,
                     labels=(("openssl-matrix.role", "profile"),))


def failed(res: RunResult, command: tuple[str, ...], script: str, rest: str) -> BenchError:
    tail = (script or rest).strip().splitlines()[-5:]
    return BenchError(f"the profiled run `{' '.join(command)}` failed (exit "
                      f"{res.exit_code}): " + " / ".join(tail),
                      hint="perf needs perf_event_open: the engine must allow SYS_ADMIN "
                      "containers, and /proc/sys/kernel/perf_event_paranoid at most 2")


def contended(acct: hostacct.HostAccounting | None, what: str) -> list[guards.Finding]:
    """The ``contended`` finding a figure would get from this host accounting, if any."""
    reasons = hostacct.contention_reasons(acct)
    return [guards.Finding(
        CONTENDED, "host not quiet: " + "; ".join(reasons)
        + f" ({acct.elapsed_s:.2f}s window); the profile is kept, flagged",
        what)] if reasons and acct is not None else []


def samples_of(script: str, window: tuple[float, float] | None) -> list[Sample]:
    """perf script's samples, those in ``window`` only when one is given."""
    samples = parse_script(script)
    if window is not None:
        samples = within(samples, *window)
    if not samples:
        raise BenchError("perf recorded no samples" + (" in the measured window"
                         if window else "") + ": " + script.strip()[:300])
    return samples


def run_speed(backend: Backend, image: str, version: str, cell: Cell, *,
              profiled: bool = True) -> ProfileRun:
    """Run a speed or pkey cell under perf in ``image`` (a profile image); ``profiled=False``:
    the same run without perf (no samples: the profiler's overhead)."""
    command = cell.command
    res = backend.run(image, ["/bin/sh", "-c", speed_script(profiled),
                              WRAPPER_NAME if profiled else PLAIN_NAME, *command[1:]],
                      env={"HOME": "/tmp"}, limits=limits(cell))
    return read_profile(res, command, version, cell.operation, profiled=profiled)


def read_profile(res: RunResult, command: tuple[str, ...], version: str,
                 operation: str | None = None, *, profiled: bool = True) -> ProfileRun:
    """The container's output as a :class:`ProfileRun`; a failed run is a BenchError.
    ``operation`` (a public-key run): only that phase's count and samples. ``profiled``
    False: a run without perf, read for its work and host accounting (no samples)."""
    speed_out, marker, script = res.stdout.partition(SCRIPT_MARKER + "\n")
    rest, times = split_times(res.stderr)
    rest, acct = hostacct.from_stderr(rest, cpu_seconds=times.user + times.system
                                      if times else None)
    if res.exit_code != 0 or not marker:
        raise failed(res, command, script, rest)
    rest, stamped = unstamp(rest)
    run = parse_speed(speed_out, rest, version=version, evp=operation is None)
    done = [p for p in run.progress if p.count > 0 and p.seconds_reported > 0]
    window = None
    if operation is not None:
        phases = phase_windows(stamped)
        mine = [i for i, p in enumerate(run.progress) if p.operation == operation
                and p.count > 0 and p.seconds_reported > 0]
        if not mine or len(phases) != len(run.progress):
            raise BenchError(f"`{' '.join(command)}` reported no timed {operation} phase "
                             f"under perf ({len(phases)} phase(s), "
                             f"{len(run.progress)} result(s))")
        done, window = [run.progress[mine[0]]], phases[mine[0]]
    if not done:
        raise BenchError(f"`{' '.join(command)}` reported no operations under perf")
    return ProfileRun(command=command,
                      samples=samples_of(script, window) if profiled else [], script=script,
                      operations=sum(p.count for p in done),
                      seconds=sum(p.seconds_reported for p in done), accounting=acct,
                      findings=contended(acct, " ".join(command)), result=res,
                      extra={"window": window})
