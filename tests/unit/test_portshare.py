"""The port-share rule (portshare.py) on readings shaped like the probe's: the session's
best per set of cores, the share of each reading, and the finding below 95 %.

Readings as measured on this project's 2-vCPU EPYC VM on 2026-12-02 (see the module's
docstring and this module): 2.8-3.2 instructions a cycle steady (usual 3.03), 0.66 with a
busy loop sharing the measured core."""

from __future__ import annotations

from typing import Any

from openssl_matrix.core import statuses
from openssl_matrix.measure import guards, portshare


def reading(ipc: float, cpus: str = "1", kernel: str = "int+paddq+aes+sha") -> dict[str, Any]:
    return {"ghz": 3.7, "ports_per_cycle": ipc,
            "ports_per_cpu": {c: ipc for c in cpus.split(",")}, "ports_kernel": kernel}


def test_the_usual_share_is_the_upper_quartile_per_set_of_cores_and_kernel() -> None:
    base = portshare.PortBaseline()
    for ipc in (2.80, 2.90, 3.03, 3.20):  # a steady core's readings here (usual 3.03)
        base.observe(reading(ipc))
    base.observe(reading(1.50, cpus="0,1"))
    assert base.usual(reading(2.9)) == 3.20  # four readings: the fourth of them
    base.observe(reading(2.92))
    base.observe(reading(3.03))
    base.observe(reading(2.95))
    assert base.usual(reading(2.9)) == 3.03  # not the luckiest window
    assert base.share(reading(3.03)) == 1.0
    assert base.share(reading(1.50, cpus="0,1")) == 1.0
    # another kernel (a CPU without SHA-NI) or no reading: nothing to compare with
    assert base.share(reading(2.9, kernel="int+paddq+aes")) is None
    assert base.share({"error": "remote"}) is None and base.share(None) is None


def test_a_reading_more_than_twelve_percent_below_the_usual_is_shared_core() -> None:
    base = portshare.PortBaseline()
    for ipc in (2.92, 3.03, 3.03, 3.03):
        base.observe(reading(ipc))
    steady = portshare.run_readings(reading(2.85), reading(2.80), base)
    assert portshare.port_findings("sha512", steady) == []  # 92 %: the value rule's zone
    slow = portshare.run_readings(reading(3.03), reading(2.40), base)
    [finding] = portshare.port_findings("sha512", slow)
    assert finding.code == statuses.SHARED_CORE and finding.invocation == "sha512"
    assert "79%" in finding.message and "measured again" in finding.message
    busy = portshare.run_readings(reading(0.66), reading(3.03), base)
    assert busy["before"] == {"ports_per_cycle": 0.66,
                              "share_of_usual": round(0.66 / 3.03, 4)}
    assert portshare.port_findings("sha512", busy)[0].code == statuses.SHARED_CORE


def test_without_readings_there_is_no_finding() -> None:
    base = portshare.PortBaseline()
    none = portshare.run_readings({"error": "the Docker engine is remote"}, None, base)
    assert none == {"before": None, "after": None}
    assert portshare.port_findings("md5", none) == []
    # a first reading is its own best
    first = portshare.run_readings(reading(2.5), None, base)
    assert first["before"] == {"ports_per_cycle": 2.5, "share_of_usual": 1.0}


def test_shared_core_is_a_disturbed_status_below_contended() -> None:
    assert statuses.SHARED_CORE in statuses.DISTURBED and statuses.CONTENDED in statuses.DISTURBED
    assert guards.PRIORITY.index(statuses.CONTENDED) < guards.PRIORITY.index(statuses.SHARED_CORE)
