"""The cores' effective clock, measured with our calibrated dependent-add loop (real gcc,
real CPU): plausible readings, the record a run keeps, and no reading for a remote engine."""

from __future__ import annotations

import os
from pathlib import Path

from openssl_matrix.measure import coreclock
from openssl_matrix.measure.cpumodel import cbc_floor
from openssl_matrix.measure.hostinfo import parse_cpuinfo


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
    remote = coreclock.reading({"endpoint": "tcp://lab:2376"}, None)
    assert "remote" in str(remote["error"])
    local = coreclock.reading({"endpoint": "local"}, None)
    assert isinstance(local.get("ghz"), float)
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
