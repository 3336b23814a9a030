"""CPU topology from sysfs (real probes of this machine) and where -multi processes run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from openssl_matrix.measure.cell import bench_cpus
from openssl_matrix.measure.hostinfo import SYSTEM_SCRIPT, parse_system_state
from openssl_matrix.measure.topology import (
    TOPOLOGY_SCRIPT,
    CpuTopology,
    cpulist,
    parse_cpulist,
    parse_topology,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "topology"


def probe(name: str) -> tuple[CpuTopology | None, object]:
    cpu, state = parse_system_state((FIX / name).read_text())
    return parse_topology(state.extra), cpu


def test_real_probe_two_cores_no_smt() -> None:
    topo, cpu = probe("probe-2cpu-vm.txt")
    assert topo is not None and topo.cpus == (0, 1) and topo.allowed == (0, 1)
    assert (topo.cores_of(), topo.packages, topo.threads_per_core, topo.smt) == (2, 1, 1, False)
    assert topo.describe() == ("2 logical CPUs = 2 cores, 1 thread per core (no SMT), "
                               "1 package")
    assert topo.placement(2) == "2 processes on CPUs 0-1 (2 cores): one core each"
    back = CpuTopology.from_dict(topo.as_dict())
    assert back == topo
    assert bench_cpus(None, topo, cpu) == (0, 1)  # type: ignore[arg-type]


def test_real_probe_pinned_container_sees_its_cpuset() -> None:
    topo, cpu = probe("probe-2cpu-vm-cpuset1.txt")
    assert topo is not None and topo.allowed == (1,) and topo.cpus == (0, 1)
    assert bench_cpus(None, topo, cpu) == (1,)  # type: ignore[arg-type]
    assert bench_cpus("0-1", topo, cpu) == (0, 1)  # type: ignore[arg-type]
    assert topo.placement(1, (1,)) == "1 process on CPU 1 (1 core): one core each"


def test_smt_placement_is_said() -> None:
    """HAND-WRITTEN in the probe's format (no SMT machine here): 4 logical CPUs on 2
    cores, siblings numbered as Linux numbers them on Intel (0 and 2 share core 0)."""
    topo = parse_topology({"topology": "cpu0:0:0:0,2 cpu1:0:1:1,3 cpu2:0:0:0,2 cpu3:0:1:1,3",
                           "allowed": "0-3"})
    assert topo is not None and topo.smt and topo.threads_per_core == 2
    assert topo.describe() == ("4 logical CPUs = 2 cores, 2 SMT threads per core, "
                               "1 package")
    assert topo.placement(2, (0, 2)) == ("2 processes on CPUs 0,2: only 1 core, so processes "
                                         "share a core's SMT threads")
    assert topo.placement(2, (0, 1)).endswith("one core each")


def test_cpulists() -> None:
    assert parse_cpulist("0-2,5") == (0, 1, 2, 5) and cpulist([5, 0, 1, 2]) == "0-2,5"
    with pytest.raises(ValueError):
        parse_cpulist("0-")
    assert parse_topology({}) is None
    assert CpuTopology.from_dict({"threads": [{"cpu": "x"}]}) is None


def test_probe_script_exits_zero_here() -> None:
    """The probe runs as one shell script whose exit status the bench checks: run it here
    (sysfs and /proc are this machine's) with the system probe before it, as the bench
    does in a container."""
    res = subprocess.run(["/bin/sh", "-c", f"{SYSTEM_SCRIPT}; {TOPOLOGY_SCRIPT}"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    _, state = parse_system_state(res.stdout)
    topo = parse_topology(state.extra)
    assert topo is not None and len(topo.cpus) == (os.cpu_count() or len(topo.cpus))
