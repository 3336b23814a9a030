"""The core's port share: does the measured core give us what it gave us at best?

A cloud VM's vCPU is often one hardware thread of a physical core whose other thread runs
another guest. The two threads share the core's execution ports: a throughput-bound speed
run (SHA-1/256/512, AES-GCM, no-asm C) slows by up to ~40 % when the sibling is busy, while
everything the guest can count says the run was clean (its own share of the CPU, the other
cores, steal) and a dependent chain, which needs one port a cycle, runs as fast as ever —
so the clock probe (coreclock.py) cannot see it either.

The probe program therefore has a second kernel: many independent chains (six integer add
chains, four PADDQ chains and, where the CPU has them, four AESENC and two SHA256RNDS2
chains), more independent work than one thread can issue, run for five whole windows of
20 ms each on every core the run may use. Its instructions per cycle of the add chain's
clock (the median window) are the core's **port share** in absolute terms: steady while
the core is ours alone, down when a sibling competes for its ports, and down too when the
core's time is sliced between us and someone else within a window (which the host
accounting sees as well). Measured on this project's 2-vCPU EPYC VM (2026-12-02): 2.85-2.93
instructions a cycle in most windows, phases of 2.6-2.7 lasting about a second, and 0.66
with a busy loop sharing the measured core.

The bench takes a reading before each speed invocation and after the last
(:func:`coreclock.reading` with ``ports``); :class:`PortBaseline` keeps the session's best
per set of cores, started by a few readings when the session begins. An invocation whose
reading before or after lies more than :data:`LOW_TOLERANCE` below the best is
``shared-core`` (:func:`port_findings`): kept, out of medians, measured again — as
``contended`` is.

What it cannot see: a sibling busy only while the speed run ran and idle during both
readings (the readings bracket a run of seconds; noise here flips within about a second).
The value rule of robust.py (a sample more than 5 % below its cell's best) covers that
case from the figures themselves; docs/noise.md says which rule flagged what.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openssl_matrix.measure.guards import SHARED_CORE, Finding
from openssl_matrix.measure.robust import LOW_TOLERANCE

#: Readings taken when a session starts, to give the best a fair start.
CALIBRATION_READINGS = 3


def ports_of(reading: Mapping[str, Any] | None) -> float | None:
    """The instructions per cycle of one probe reading (coreclock.reading), if it has one."""
    if not isinstance(reading, Mapping):
        return None
    value = reading.get("ports_per_cycle")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _key(reading: Mapping[str, Any]) -> str:
    """Readings compare only on the same cores with the same kernel."""
    cpus = reading.get("ports_per_cpu")
    where = ",".join(sorted(cpus)) if isinstance(cpus, Mapping) else "?"
    return f"{where}|{reading.get('ports_kernel', '')}"


@dataclass
class PortBaseline:
    """The best port share a bench session has seen, per set of cores and kernel."""

    best: dict[str, float] = field(default_factory=dict)

    def observe(self, reading: Mapping[str, Any] | None) -> None:
        value = ports_of(reading)
        if value is not None and reading is not None:
            key = _key(reading)
            self.best[key] = max(self.best.get(key, 0.0), value)

    def share(self, reading: Mapping[str, Any] | None) -> float | None:
        """The reading as a share of the best on the same cores (1.0 at the best); None
        without a reading or a best to set it against."""
        value = ports_of(reading)
        if value is None or reading is None:
            return None
        best = self.best.get(_key(reading))
        return value / best if best else None


def run_readings(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None,
                 baseline: PortBaseline) -> dict[str, Any]:
    """An invocation's record of its two readings: instructions per cycle and the share
    of the session's best, each side (after both were observed)."""
    baseline.observe(before)
    baseline.observe(after)
    out: dict[str, Any] = {}
    for side, reading in (("before", before), ("after", after)):
        value = ports_of(reading)
        share = baseline.share(reading)
        out[side] = None if value is None else {
            "ports_per_cycle": value,
            "share_of_best": None if share is None else round(share, 4)}
    return out


def port_findings(invocation: str, readings: Mapping[str, Any],
                  tolerance: float = LOW_TOLERANCE) -> list[Finding]:
    """``shared-core`` when either reading around ``invocation`` (:func:`run_readings`)
    lies more than ``tolerance`` below the session's best."""
    shares = [r["share_of_best"] for r in (readings.get("before"), readings.get("after"))
              if isinstance(r, Mapping) and isinstance(r.get("share_of_best"), float)]
    if not shares or min(shares) >= 1 - tolerance:
        return []
    low = min(shares)
    return [Finding(SHARED_CORE,
                    f"the core gave the probe's throughput kernel {low:.0%} of this session's "
                    f"best around this run (more than {tolerance:.0%} below): another "
                    "thread competed for the core (a sibling the guest cannot see, or a "
                    "slice of its time); kept, out of medians, measured again", invocation)]
