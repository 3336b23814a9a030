"""The port-share rule (portshare.py) on readings shaped like the probe's: the session's
best per set of cores, the share of each reading, and the finding below 95 %.

Readings as measured on this project's 2-vCPU EPYC VM on 2026-12-02 (see the module's
docstring): 2.90 instructions a cycle steady, 2.65 in a slow phase, 0.66 with a busy loop
sharing the measured core."""

from __future__ import annotations

from typing import Any

from openssl_matrix.measure import guards, portshare


def reading(ipc: float, cpus: str = "1", kernel: str = "int+paddq+aes+sha") -> dict[str, Any]:
    return {"ghz": 3.7, "ports_per_cycle": ipc,
            "ports_per_cpu": {c: ipc for c in cpus.split(",")}, "ports_kernel": kernel}


def test_the_best_is_kept_per_set_of_cores_and_kernel() -> None:
    base = portshare.PortBaseline()
    base.observe(reading(2.90))
    base.observe(reading(2.65))
    base.observe(reading(1.50, cpus="0,1"))
    assert base.share(reading(2.90)) == 1.0
    assert base.share(reading(0.66)) == 0.66 / 2.90
    assert base.share(reading(1.50, cpus="0,1")) == 1.0
    # another kernel (a CPU without SHA-NI) or no reading: nothing to compare with
    assert base.share(reading(2.9, kernel="int+paddq+aes")) is None
    assert base.share({"error": "remote"}) is None and base.share(None) is None


def test_a_reading_more_than_five_percent_below_the_best_is_shared_core() -> None:
    base = portshare.PortBaseline()
    base.observe(reading(2.90))
    steady = portshare.run_readings(reading(2.88), reading(2.80), base)
    assert portshare.port_findings("sha512", steady) == []  # 96.6 %: within 5 %
    slow = portshare.run_readings(reading(2.90), reading(2.65), base)
    [finding] = portshare.port_findings("sha512", slow)
    assert finding.code == guards.SHARED_CORE and finding.invocation == "sha512"
    assert "91%" in finding.message and "measured again" in finding.message
    busy = portshare.run_readings(reading(0.66), reading(2.90), base)
    assert busy["before"] == {"ports_per_cycle": 0.66, "share_of_best": round(0.66 / 2.9, 4)}
    assert portshare.port_findings("sha512", busy)[0].code == guards.SHARED_CORE


def test_without_readings_there_is_no_finding() -> None:
    base = portshare.PortBaseline()
    none = portshare.run_readings({"error": "the Docker engine is remote"}, None, base)
    assert none == {"before": None, "after": None}
    assert portshare.port_findings("md5", none) == []
    # a first reading is its own best
    first = portshare.run_readings(reading(2.5), None, base)
    assert first["before"] == {"ports_per_cycle": 2.5, "share_of_best": 1.0}


def test_shared_core_is_a_disturbed_status_below_contended() -> None:
    assert guards.SHARED_CORE in guards.DISTURBED and guards.CONTENDED in guards.DISTURBED
    assert guards.PRIORITY.index(guards.CONTENDED) < guards.PRIORITY.index(guards.SHARED_CORE)
