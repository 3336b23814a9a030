"""The cores' effective clock, measured with our calibrated dependent-add loop (real gcc,
real CPU): plausible readings, the record a run keeps, and no reading for a remote engine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openssl_matrix.measure import coreclock
from openssl_matrix.measure.cpumodel import cbc_floor
from openssl_matrix.measure.hostinfo import parse_cpuinfo

from ..fakes import FakeBackend


def test_the_probe_measures_each_core_it_may_run_on() -> None:
    got = coreclock.measure()
    assert not isinstance(got, str), got
    assert {c for c, _ in got.per_cpu} == set(os.sched_getaffinity(0))
    # a core runs between a few hundred MHz and ~6 GHz; the dependent chain cannot read
    # more than the clock (an add of an immediate could: the probe uses registers)
    assert all(0.3 < g < 6.5 for _, g in got.per_cpu), got.per_cpu
    assert "dependent adds" in got.method
    one = coreclock.measure([min(os.sched_getaffinity(0))])
    assert not isinstance(one, str) and len(one.per_cpu) == 1


def test_a_runs_record_has_both_readings_and_their_mean() -> None:
    before = {"ghz": 3.0, "per_cpu": {"0": 3.0}, "method": "m"}
    after = {"ghz": 2.8, "per_cpu": {"0": 2.8}, "method": "m"}
    rec = coreclock.run_clock(before, after)
    assert rec["ghz"] == 2.9 and rec["before"] == before and rec["after"] == after
    assert "ghz" not in coreclock.run_clock({"error": "x"}, {"error": "y"})
    remote = FakeBackend()
    remote.info["endpoint"] = "tcp://lab:2376"
    assert coreclock.reading(remote, None) == {"error": coreclock.REMOTE}
    here = FakeBackend()  # the probe runs through the engine's seam, on its host
    here.info["endpoint"] = "unix:///var/run/docker.sock"
    local = coreclock.reading(here, "1", aes=False)
    assert local["ghz"] == 3.0 and local["ports_per_cycle"] == 3.0
    assert here.probes[0][1:] == ("1", "200000", "ports")
    assert coreclock.cpus_of("0-2,5") == [0, 1, 2, 5] and coreclock.cpus_of(None) is None


def test_the_aesenc_latency_of_our_own_core() -> None:
    """A dependent AESENC chain timed right after the add chain: its latency in cycles
    (every core with AES-NI so far: 2 to 8, Agner Fog's tables), and so the CBC bound on
    this core. Asked of a CPU without AES-NI the probe (CPUID) says none."""
    here = parse_cpuinfo(Path("/proc/cpuinfo").read_text(encoding="utf-8"))
    got = coreclock.measure([min(os.sched_getaffinity(0))], aes=True)
    assert not isinstance(got, str), got
    plain = coreclock.measure([min(os.sched_getaffinity(0))])
    assert not isinstance(plain, str) and plain.aesenc == () and plain.aesenc_latency is None
    if "aes" not in here.flags:
        assert got.aesenc == () and "aesenc_latency" not in got.describe()
        return
    lat = got.aesenc_latency
    assert lat is not None and 1.5 < lat < 9, got.aesenc
    assert got.describe()["aesenc_latency"] == lat and "AESENC" in got.method
    floor = cbc_floor("aes-128-cbc", lat)
    assert floor == 10 * lat / 16 and cbc_floor("aes-256-cbc", lat) == 14 * lat / 16
    assert cbc_floor("sha256", lat) is None


def test_the_port_share_kernel_on_our_own_core() -> None:
    """The throughput kernel (portshare.py) on this host's first core: a number of
    instructions a cycle a core can issue (one thread of an x86-64 core: 1 to 8), with the
    instructions this CPU has named; each reading per core that was asked for."""
    here = parse_cpuinfo(Path("/proc/cpuinfo").read_text(encoding="utf-8"))
    cpu = min(os.sched_getaffinity(0))
    got = coreclock.measure([cpu], ports=True)
    assert not isinstance(got, str), got
    assert [c for c, _ in got.ports] == [cpu]
    ipc = got.ports_per_cycle
    assert ipc is not None and 0.3 < ipc < 12
    described = got.describe()
    assert described["ports_per_cycle"] == ipc
    assert ("+aes" in str(described["ports_kernel"])) == ("aes" in here.flags)
    assert ("+sha" in str(described["ports_kernel"])) == ("sha_ni" in here.flags)


def test_two_threads_compile_the_probe_at_once(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Two benches in one process (a lab's engines) compile the probe at the same moment:
    both get the program, neither loses its file to the other's rename (the lab test
    that failed under load: FileNotFoundError on probe.<pid>.tmp)."""
    import shutil
    import threading

    if shutil.which("gcc") is None or __import__("platform").machine() != "x86_64":
        pytest.skip("needs gcc on x86-64")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    got: list[object] = []
    start = threading.Barrier(4)

    def one() -> None:
        start.wait()
        got.append(coreclock.probe_path())
    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4 and all(isinstance(p, Path) and p.is_file() for p in got), got
    assert not [p for p in tmp_path.rglob("probe.*")], "no temporary file left behind"
