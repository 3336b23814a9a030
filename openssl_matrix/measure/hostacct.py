"""Host accounting: how much of the machine a speed run had, and who else was using it.

CPU time alone cannot tell a clean figure from a disturbed one: a speed process that got
98 % of its elapsed time as CPU time can still have shared its core's caches and memory
bandwidth with a neighbour on the other core, or lost time to a hypervisor (steal). So
every speed run is bracketed by two samples taken *inside its container*, just before and
just after ``openssl speed`` (see ``wrapper_script``):

* the ``cpu``/``cpuN`` lines and ``procs_running`` of ``/proc/stat`` (not namespaced: they
  describe the engine's whole host, which is what matters, remote engines included);
* the container's own cgroup CPU usage (cgroup v1 ``cpuacct.usage`` or v2 ``cpu.stat``).

From the two samples (``accounting``): the run's elapsed time, its own CPU share (cgroup
CPU seconds over elapsed, per process it runs), the *foreign* CPU (busy time of
everything else on the host, in cores), steal and iowait. ``contended_findings`` turns
them into the ``contended`` status with the thresholds below, each measured in
``benchmarks/run.py --sections disturb`` (docs/performance.md, "Disturbances").
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

#: Kernel clock ticks per second of /proc/stat (USER_HZ: 100 on every Linux ABI in use).
USER_HZ = 100

# ----------------------------------------------------------------------------------
# Thresholds of the ``contended`` status (one place; measured in docs/performance.md)

#: A software-path speed run must have had at least this share of its elapsed time on a
#: CPU (per process). A CPU-bound run on a quiet core gets 0.96-1.0 (process start-up and
#: the samples themselves are inside the window); a run that shares its core with a busy
#: loop at the same weight gets ~0.5.
OWN_SHARE_MIN = 0.90
#: Busy time of everything else on the host, in cores, above which a run is contended even
#: if it got its own core: a neighbour on the other core shares caches, memory bandwidth
#: (and on SMT hosts the core itself). The quiet host's background (dockerd, containerd,
#: the tool waiting on the engine) stays below 0.1 core here.
FOREIGN_CORES_MAX = 0.20
#: CPU time the hypervisor gave to other guests while the run ran (steal, in cores).
STEAL_CORES_MAX = 0.05
#: Own share below ``OWN_SHARE_MIN`` is *offload* (the work ran elsewhere: ``time-basis``),
#: not contention, when the host had at least this share of the missing CPU idle: the
#: process could have run but had nothing to do (a device or the kernel worked).
OFFLOAD_IDLE_SHARE = 0.5

#: A handshake run (``tls.py``) is judged as one process: ``s_time`` makes one connection
#: at a time, so server and client take turns and their CPU time adds up to about one
#: core on an idle host, on one CPU or on two; everything else busy is foreign work.
HANDSHAKE_PROCESSES = 1

#: What ``settle`` waits for before a cell: at most this many cores busy over a 1-s
#: sample (the tool itself sleeps meanwhile). Runnable tasks are shown, not judged: one
#: reading of ``procs_running`` is a snapshot that includes the reader.
SETTLE_BUSY_CORES = 0.15

#: Markers the wrapper prints to stderr (before the ``+CPUTIMES`` block of the guards).
SAMPLE_MARKER = "+HOSTSTAT"

_CGROUP_SH = (
    "if [ -r /sys/fs/cgroup/cpu.stat ]; then while read -r k v; do "
    "[ \"$k\" = usage_usec ] && echo \"cgroup_ns ${v}000\"; done </sys/fs/cgroup/cpu.stat; "
    "else for f in /sys/fs/cgroup/cpuacct/cpuacct.usage /sys/fs/cgroup/cpu,cpuacct/cpuacct.usage; "
    "do if [ -r \"$f\" ]; then read -r u <\"$f\"; echo \"cgroup_ns $u\"; break; fi; done; fi"
)
#: Shell function ``_hs N``: one sample to stderr, with shell builtins only (every image).
SAMPLE_FUNCTION = (
    "_hs(){ { echo \"" + SAMPLE_MARKER + " $1\"; while read -r l; do case $l in "
    "cpu*|procs_running*) echo \"$l\";; esac; done </proc/stat; " + _CGROUP_SH + "; } >&2; }"
)


@dataclass(frozen=True)
class StatSample:
    """One reading of /proc/stat (and the container's cgroup CPU usage)."""

    cpus: tuple[tuple[int, ...], ...]
    """Per CPU: user nice system idle iowait irq softirq steal (jiffies)."""
    total: tuple[int, ...]
    """The aggregate ``cpu`` line, same fields."""
    procs_running: int | None = None
    cgroup_ns: int | None = None


def parse_stat(text: str) -> StatSample:
    """Read the ``cpu``/``cpuN``/``procs_running`` lines (and ``cgroup_ns``) of a sample."""
    total: tuple[int, ...] | None = None
    cpus: list[tuple[int, ...]] = []
    running: int | None = None
    cgroup: int | None = None
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "cpu" or re.fullmatch(r"cpu\d+", parts[0]):
            values = tuple(int(x) for x in parts[1:9])
            values = values + (0,) * (8 - len(values))
            if parts[0] == "cpu":
                total = values
            else:
                cpus.append(values)
        elif parts[0] == "procs_running" and len(parts) > 1:
            running = int(parts[1])
        elif parts[0] == "cgroup_ns" and len(parts) > 1 and parts[1].isdigit():
            cgroup = int(parts[1])
    if total is None:
        raise ValueError("no aggregate 'cpu' line in the /proc/stat sample")
    return StatSample(tuple(cpus), total, running, cgroup)


def read_host_stat(path: Path = Path("/proc/stat")) -> StatSample:
    """This machine's /proc/stat now (the engine's host when the engine is local)."""
    return parse_stat(path.read_text(encoding="ascii", errors="replace"))


def split_samples(stderr: str) -> tuple[str, list[StatSample]]:
    """Take the wrapper's samples out of a speed run's stderr: (the rest, samples)."""
    keep: list[str] = []
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in stderr.splitlines(keepends=True):
        if line.startswith(SAMPLE_MARKER):
            current = []
            blocks.append(current)
            continue
        if current is not None and (line.startswith(("cpu", "procs_running", "cgroup_ns"))):
            current.append(line)
            continue
        current = None
        keep.append(line)
    samples = []
    for block in blocks:
        try:
            samples.append(parse_stat("".join(block)))
        except ValueError:
            continue
    return "".join(keep), samples


def _busy(values: tuple[int, ...]) -> int:
    user, nice, system, _idle, _iowait, irq, softirq = values[:7]
    return user + nice + system + irq + softirq


class AccountingRecord(TypedDict):
    """:class:`HostAccounting` as a run's record files it (``host_accounting``)."""

    elapsed_s: float
    cpus: int
    processes: int
    own_cpu_s: float | None
    own_source: str | None
    own_share: float | None
    busy_cores: float
    foreign_cores: float
    idle_cores: float
    steal_cores: float
    iowait_cores: float
    runnable_before: int | None
    runnable_after: int | None


def _r4(v: float) -> float:
    return round(v, 4) if isinstance(v, float) else v


def _r4n(v: float | None) -> float | None:
    return None if v is None else _r4(v)


@dataclass(frozen=True)
class HostAccounting:
    """The host around one speed run (between the two samples of its wrapper)."""

    elapsed_s: float
    cpus: int
    processes: int
    own_cpu_s: float | None
    own_source: str | None
    """``cgroup`` (the container's CPU usage) or ``times`` (speed's user + system)."""
    own_share: float | None
    """Own CPU seconds / (elapsed x processes): 1.0 = every process always on a CPU."""
    busy_cores: float
    foreign_cores: float
    """Busy CPU time of everything but this run, per elapsed second (cores)."""
    idle_cores: float
    steal_cores: float
    iowait_cores: float
    runnable_before: int | None = None
    runnable_after: int | None = None

    def as_dict(self) -> AccountingRecord:
        """The reading as filed in a run's record (floats to 4 places)."""
        return AccountingRecord(
            elapsed_s=_r4(self.elapsed_s), cpus=self.cpus, processes=self.processes,
            own_cpu_s=_r4n(self.own_cpu_s), own_source=self.own_source,
            own_share=_r4n(self.own_share), busy_cores=_r4(self.busy_cores),
            foreign_cores=_r4(self.foreign_cores), idle_cores=_r4(self.idle_cores),
            steal_cores=_r4(self.steal_cores), iowait_cores=_r4(self.iowait_cores),
            runnable_before=self.runnable_before, runnable_after=self.runnable_after)

    def describe(self) -> str:
        own = "—" if self.own_share is None else f"{self.own_share:.0%}"
        return (f"own CPU {own} of {self.elapsed_s:.2f}s, others {self.foreign_cores:.2f} "
                f"core(s) busy, steal {self.steal_cores:.2f}")


def accounting(before: StatSample, after: StatSample, *, processes: int = 1,
               cpu_seconds: float | None = None) -> HostAccounting | None:
    """What happened on the host between two samples. ``cpu_seconds`` (speed's user +
    system from ``times``) stands in when the cgroup usage is not readable."""
    d = [a - b for a, b in zip(after.total, before.total, strict=False)]
    total = sum(d[:8])
    ncpu = max(1, len(after.cpus) or len(before.cpus))
    if total <= 0:
        return None
    elapsed = total / USER_HZ / ncpu
    busy = _busy(tuple(d)) / USER_HZ / elapsed
    idle = (d[3]) / USER_HZ / elapsed
    iowait = d[4] / USER_HZ / elapsed
    steal = d[7] / USER_HZ / elapsed
    own_s: float | None = None
    source: str | None = None
    if before.cgroup_ns is not None and after.cgroup_ns is not None:
        own_s, source = (after.cgroup_ns - before.cgroup_ns) / 1e9, "cgroup"
    elif cpu_seconds is not None:
        own_s, source = cpu_seconds, "times"
    procs = max(1, min(processes, ncpu))
    own_cores = own_s / elapsed if own_s is not None else 0.0
    foreign = max(0.0, busy - own_cores)
    return HostAccounting(
        elapsed_s=elapsed, cpus=ncpu, processes=procs, own_cpu_s=own_s, own_source=source,
        own_share=None if own_s is None else own_s / (elapsed * procs), busy_cores=busy,
        foreign_cores=foreign, idle_cores=idle, steal_cores=steal, iowait_cores=iowait,
        runnable_before=before.procs_running,
        runnable_after=after.procs_running)


def from_stderr(stderr: str, *, processes: int = 1, cpu_seconds: float | None = None,
                ) -> tuple[str, HostAccounting | None]:
    """The wrapper's samples out of ``stderr``: (speed's own stderr, accounting or None)."""
    rest, samples = split_samples(stderr)
    if len(samples) < 2:
        return rest, None
    return rest, accounting(samples[0], samples[-1], processes=processes,
                            cpu_seconds=cpu_seconds)


# ----------------------------------------------------------------------------------
# the verdict


def contention_reasons(acct: HostAccounting | None, *, software: bool = True) -> list[str]:
    """Why a run was not measured on a quiet host; empty: clean (or not known).

    ``software``: the run computes on the CPU (no engine doing the work), so its own share
    is judged; an engine row is judged by foreign CPU and steal only, since a device or
    the kernel may do its work while the process waits.
    """
    if acct is None:
        return []
    reasons: list[str] = []
    if software and acct.own_share is not None and acct.own_share < OWN_SHARE_MIN:
        missing = (1 - acct.own_share) * acct.processes
        if acct.idle_cores < OFFLOAD_IDLE_SHARE * missing:
            reasons.append(f"it waited for a CPU (on one {acct.own_share:.0%} of the time, "
                           f"below {OWN_SHARE_MIN:.0%}, with {acct.idle_cores:.2f} core(s) "
                           "idle)")
    if acct.foreign_cores > FOREIGN_CORES_MAX:
        reasons.append(f"other work kept {acct.foreign_cores:.2f} core(s) busy (above "
                       f"{FOREIGN_CORES_MAX:.2f})")
    if acct.steal_cores > STEAL_CORES_MAX:
        reasons.append(f"the hypervisor stole {acct.steal_cores:.2f} core(s) (above "
                       f"{STEAL_CORES_MAX:.2f})")
    return reasons


# ----------------------------------------------------------------------------------
# settling before a cell


@dataclass(frozen=True)
class Quiet:
    """The host over a short interval: is it quiet enough to measure?"""

    busy_cores: float
    runnable: int | None
    steal_cores: float

    @property
    def quiet(self) -> bool:
        return self.busy_cores <= SETTLE_BUSY_CORES and self.steal_cores <= STEAL_CORES_MAX

    def reason(self) -> str:
        run = "" if self.runnable is None else f"{self.runnable} runnable task(s), "
        return f"{run}{self.busy_cores:.1f} core(s) busy" + (
            f", steal {self.steal_cores:.2f}" if self.steal_cores > STEAL_CORES_MAX else "")


def quiet_between(before: StatSample, after: StatSample) -> Quiet:
    acct = accounting(before, after)
    if acct is None:
        return Quiet(0.0, after.procs_running, 0.0)
    return Quiet(acct.busy_cores, after.procs_running, acct.steal_cores)


def sample_quiet(interval: float = 1.0, path: Path = Path("/proc/stat")) -> Quiet:
    """Sample this machine's /proc/stat over ``interval`` seconds."""
    before = read_host_stat(path)
    time.sleep(interval)
    return quiet_between(before, read_host_stat(path))
