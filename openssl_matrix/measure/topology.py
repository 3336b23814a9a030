"""The CPU topology of the engine's host, from sysfs: packages, cores, SMT threads.

Read inside a container on the engine's host (as the bench's system probe is), because
that is the machine the figures come from, remote engines included: ``/sys/devices/
system/cpu/cpuN/topology/`` is not namespaced. Per logical CPU: ``physical_package_id``,
``core_id`` and ``thread_siblings_list`` (the logical CPUs sharing its core). The
container's ``Cpus_allowed_list`` (``/proc/self/status``) says which CPUs a container
may use. With these a ``-multi 2`` figure can say whether its two processes ran on two
cores or on one core's two SMT threads, instead of leaving it to be guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, TypedDict

#: Appended to the system probe (hostinfo.SYSTEM_SCRIPT): one ``cpuN:package:core:siblings``
#: token per logical CPU, then the probe container's allowed CPUs. Shell builtins only,
#: ``cat`` aside: every image has them.
TOPOLOGY_SCRIPT = (
    "echo '==> topology'; for c in /sys/devices/system/cpu/cpu[0-9]*; do t=$c/topology; "
    "if [ -r $t/core_id ]; then echo \"${c##*/}:$(cat $t/physical_package_id):"
    "$(cat $t/core_id):$(cat $t/thread_siblings_list)\"; fi; done; echo '==> allowed'; "
    "while read -r k v; do if [ \"$k\" = Cpus_allowed_list: ]; then echo \"$v\"; fi; "
    "done </proc/self/status"
)
#: (Each loop's body is an ``if``: a ``[ ] && echo`` that fails on the last line would
#: make the loop, and so the whole probe, exit 1.)

_TOKEN = re.compile(r"^cpu(\d+):(-?\d+):(\d+):([\d,-]+)$")
_CPULIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


def parse_cpulist(text: str) -> tuple[int, ...]:
    """``0-2,5`` -> (0, 1, 2, 5) (the kernel's and Docker's --cpuset-cpus list syntax)."""
    text = text.strip()
    if not _CPULIST.match(text):
        raise ValueError(f"not a CPU list: {text!r}")
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return tuple(sorted(set(out)))


def cpulist(cpus: tuple[int, ...] | list[int]) -> str:
    """(0, 1, 2, 5) -> ``0-2,5``."""
    out: list[str] = []
    run: list[int] = []
    for c in sorted(set(cpus)):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


@dataclass(frozen=True)
class CpuThread:
    """One logical CPU."""

    cpu: int
    package: int
    core: int
    siblings: tuple[int, ...]
    """The logical CPUs of its core (itself included)."""


class ThreadRecord(TypedDict):
    """One logical CPU as a run record files it."""

    cpu: int
    package: int
    core: int
    siblings: str


class TopologyRecord(TypedDict):
    """:meth:`CpuTopology.as_dict`: the topology as a run record files it (``topology``)."""

    cpus: int
    cores: int
    packages: int
    threads_per_core: int
    smt: bool
    allowed: str | None
    threads: list[ThreadRecord]
    summary: str


@dataclass(frozen=True)
class CpuTopology:
    threads: tuple[CpuThread, ...]
    allowed: tuple[int, ...] | None = None
    """The CPUs a container may use on this engine (None: not read)."""

    @property
    def cpus(self) -> tuple[int, ...]:
        return tuple(t.cpu for t in self.threads)

    def cores_of(self, cpus: tuple[int, ...] | None = None) -> int:
        """Distinct physical cores among ``cpus`` (all CPUs by default)."""
        chosen = set(self.cpus if cpus is None else cpus)
        return len({(t.package, t.core) for t in self.threads if t.cpu in chosen})

    @property
    def packages(self) -> int:
        return len({t.package for t in self.threads})

    @property
    def threads_per_core(self) -> int:
        return max((len(t.siblings) for t in self.threads), default=1)

    @property
    def smt(self) -> bool:
        return self.threads_per_core > 1

    def describe(self) -> str:
        """``2 logical CPUs = 2 cores x 1 thread (no SMT), 1 package``."""
        n, cores = len(self.threads), self.cores_of()
        smt = f"{self.threads_per_core} SMT threads per core" if self.smt else \
            "1 thread per core (no SMT)"
        return (f"{n} logical CPU{'s' if n != 1 else ''} = {cores} core"
                f"{'s' if cores != 1 else ''}, {smt}, {self.packages} package"
                f"{'s' if self.packages != 1 else ''}")

    def placement(self, processes: int, cpus: tuple[int, ...] | None = None) -> str:
        """Where ``processes`` speed processes can run on ``cpus`` (default: all): one
        core each, or sharing cores' SMT threads."""
        chosen = tuple(sorted(set(self.cpus if cpus is None else cpus) & set(self.cpus))) \
            or self.cpus
        cores = self.cores_of(chosen)
        where = f"CPU{'s' if len(chosen) != 1 else ''} {cpulist(chosen)}"
        if processes <= cores:
            return (f"{processes} process{'es' if processes != 1 else ''} on {where} "
                    f"({cores} core{'s' if cores != 1 else ''}): one core each")
        return (f"{processes} processes on {where}: only {cores} core"
                f"{'s' if cores != 1 else ''}, so processes share a core's SMT threads")

    def as_dict(self) -> TopologyRecord:
        return TopologyRecord(
            cpus=len(self.threads), cores=self.cores_of(), packages=self.packages,
            threads_per_core=self.threads_per_core, smt=self.smt,
            allowed=None if self.allowed is None else cpulist(self.allowed),
            threads=[ThreadRecord(cpu=t.cpu, package=t.package, core=t.core,
                                  siblings=cpulist(t.siblings)) for t in self.threads],
            summary=self.describe())

    @staticmethod
    def from_dict(data: Any) -> CpuTopology | None:
        """Read back ``as_dict`` (a run's meta.json); None if it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("threads"), list):
            return None
        try:
            threads = tuple(CpuThread(int(t["cpu"]), int(t["package"]), int(t["core"]),
                                      parse_cpulist(str(t["siblings"])))
                            for t in data["threads"])
            allowed = data.get("allowed")
            return CpuTopology(threads, None if allowed is None
                               else parse_cpulist(str(allowed)))
        except (KeyError, TypeError, ValueError):
            return None


def parse_topology(sections: dict[str, str]) -> CpuTopology | None:
    """The topology from the probe's ``==> topology`` and ``==> allowed`` sections (as
    hostinfo.parse_system_state collects them); None where sysfs showed nothing."""
    threads: list[CpuThread] = []
    for token in sections.get("topology", "").split():
        m = _TOKEN.match(token)
        if m is None:
            continue
        try:
            siblings = parse_cpulist(m.group(4))
        except ValueError:
            continue
        threads.append(CpuThread(int(m.group(1)), int(m.group(2)), int(m.group(3)),
                                 siblings))
    if not threads:
        return None
    allowed: tuple[int, ...] | None = None
    try:
        allowed = parse_cpulist(sections.get("allowed", ""))
    except ValueError:
        allowed = None
    return CpuTopology(tuple(sorted(threads, key=lambda t: t.cpu)), allowed)
