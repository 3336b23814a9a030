"""The core's port share: does the measured core give us what it usually gives us?

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
clock (the median window; the lowest over the cores) are the core's **port share** in
absolute terms: steady while the core is ours alone, down when a sibling competes for its
ports, and down too when the core's time is sliced between us and someone else within a
window (which the host accounting sees as well).

The bench takes a reading before each speed invocation and after the last
(:func:`coreclock.reading` with ``ports``); :class:`PortBaseline` keeps the session's
readings per set of cores, started by a few when the session begins. An invocation whose
reading before or after lies more than :data:`PORT_TOLERANCE` below the session's usual
reading (the upper quartile) is ``shared-core`` (:func:`port_findings`): kept, out of
medians, measured again — as ``contended`` is.

Measured on this project's 2-vCPU EPYC VM (2026-12-02, the default matrix's bench while
other work ran on the host: 576 readings around 288 invocations): usual 3.03 instructions
a cycle (median 2.92, best 3.20), dips to 1.3-1.9. Grouped by the lower reading around
each run, the figures' share of their cell's best: below 2.0, median 0.65 (96 % of them
more than 5 % low); 2.0-2.7, 0.81 (96 %); 2.7-2.85, 0.95 (43 %); 2.85-3.0, 0.97 (32 %);
3.0 and above, 1.00 (16 %). So a reading below 0.88 of the usual one is a disturbed run;
between that and the usual one the probe cannot tell, and the value rule of core/stats.py (a
sample more than 5 % below its cell's best) decides from the figures themselves.

What it cannot see: a sibling busy only while the speed run ran and idle during both
readings (the readings bracket a run of a second or more; noise here flips within about
a second). docs/noise.md says which rule flagged what.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from openssl_matrix.core.statuses import SHARED_CORE
from openssl_matrix.measure.guards import Finding

#: Readings taken when a session starts, to give the usual share a fair start.
CALIBRATION_READINGS = 3
#: A reading this far below the session's usual one flags the run (see above: below 0.88
#: of the usual, the figures sat 19-35 % low).
PORT_TOLERANCE = 0.12


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
    """The port-share readings of a bench session, per set of cores and kernel; their
    upper quartile is the core's *usual* share (the best alone would set the bar at the
    probe's own luckiest window: readings of an undisturbed core spread ±5 % here)."""

    readings: dict[str, list[float]] = field(default_factory=dict)

    def observe(self, reading: Mapping[str, Any] | None) -> None:
        value = ports_of(reading)
        if value is not None and reading is not None:
            self.readings.setdefault(_key(reading), []).append(value)

    def usual(self, reading: Mapping[str, Any]) -> float | None:
        seen = sorted(self.readings.get(_key(reading), []))
        if not seen:
            return None
        return seen[min(len(seen) - 1, (3 * len(seen)) // 4)]  # the upper quartile

    def share(self, reading: Mapping[str, Any] | None) -> float | None:
        """The reading as a share of the usual one on the same cores (1.0 there); None
        without a reading or readings to set it against."""
        value = ports_of(reading)
        if value is None or reading is None:
            return None
        usual = self.usual(reading)
        return value / usual if usual else None


class PortSide(TypedDict):
    """One reading around an invocation, as its record files it."""

    ports_per_cycle: float
    share_of_usual: float | None


class PortReadings(TypedDict):
    """An invocation's ``port_share``: the readings before and after it."""

    before: PortSide | None
    after: PortSide | None


def run_readings(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None,
                 baseline: PortBaseline) -> PortReadings:
    """An invocation's record of its two readings: instructions per cycle and the share
    of the session's usual reading, each side (after both were observed)."""
    baseline.observe(before)
    baseline.observe(after)
    def side(reading: Mapping[str, Any] | None) -> PortSide | None:
        value = ports_of(reading)
        share = baseline.share(reading)
        return None if value is None else PortSide(
            ports_per_cycle=value, share_of_usual=None if share is None else round(share, 4))

    return PortReadings(before=side(before), after=side(after))


def port_findings(invocation: str, readings: Mapping[str, Any],
                  tolerance: float = PORT_TOLERANCE) -> list[Finding]:
    """``shared-core`` when either reading around ``invocation`` (:func:`run_readings`)
    lies more than ``tolerance`` below the session's usual reading."""
    shares = [r["share_of_usual"] for r in (readings.get("before"), readings.get("after"))
              if isinstance(r, Mapping) and isinstance(r.get("share_of_usual"), float)]
    if not shares or min(shares) >= 1 - tolerance:
        return []
    low = min(shares)
    return [Finding(SHARED_CORE,
                    f"the core gave the probe's throughput kernel {low:.0%} of its usual "
                    f"share in this session around this run (more than {tolerance:.0%} "
                    "below): another thread competed for the core (a sibling the guest "
                    "cannot see, or a slice of its time); kept, out of medians, measured "
                    "again", invocation)]
