"""The profiler's cost on the figure (``invoke matrix profile --overhead``).

The cell runs three times in one go, in the same profile image with the same limits:
unprofiled, under perf, unprofiled again (``measure/perfrun.py``'s wrappers with and
without ``perf record``: the host samples, the timestamps of speed's stderr lines and the
work counted are the same). Each run's rate is its own count of operations over its own
measured time (speed's ``+R``, s_time's connections, the harness's ``ops``); the
profiled rate is set against the mean of the two unprofiled ones. The two unprofiled runs
bracket the profiled one, so how far they differ from each other is the run-to-run spread
on this host at that moment: a cost smaller than it is not told apart from the noise, and
the record says so. Each run keeps its own host accounting and status (``contended``
when the host disturbed it, as a figure's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypedDict

from openssl_matrix.measure.benchfigure import FindingRecord
from openssl_matrix.measure.hostacct import AccountingRecord
from openssl_matrix.measure.perfrun import ProfileRun


def rate(run: ProfileRun) -> float:
    """Operations per second of one run: its own count over its own measured seconds
    (a library cell's seconds are threads × elapsed: one thread's rate)."""
    return run.operations / run.seconds if run.seconds > 0 else 0.0


class OverheadRun(TypedDict):
    """One of the three runs of :meth:`Overhead.as_dict`."""

    role: str
    operations: int
    seconds: float
    ops_per_s: float
    ns_per_op: float
    status: str
    host: AccountingRecord | None
    findings: list[FindingRecord]
    started: str
    ended: str


class OverheadRecord(TypedDict):
    """The profiler's cost as a profile's record files it (``overhead``)."""

    runs: list[OverheadRun]
    unprofiled_ops_per_s: float
    profiled_ops_per_s: float
    ratio: float
    cost: float
    spread: float
    told_apart: bool
    contended: bool
    method: str


@dataclass(frozen=True)
class Overhead:
    """One profiled run between two unprofiled runs of the same cell."""

    before: ProfileRun
    profiled: ProfileRun
    after: ProfileRun

    @property
    def unprofiled(self) -> float:
        """The mean of the two unprofiled rates (ops/s)."""
        return (rate(self.before) + rate(self.after)) / 2

    @property
    def ratio(self) -> float:
        """Profiled ops/s over unprofiled ops/s: 0.95 means perf cost 5 %."""
        return rate(self.profiled) / self.unprofiled if self.unprofiled > 0 else float("nan")

    @property
    def cost(self) -> float:
        """The share of the unprofiled rate lost under perf (negative: the profiled run
        was the faster)."""
        return 1 - self.ratio

    @property
    def spread(self) -> float:
        """How far the two unprofiled rates differ, over their mean: the noise at hand."""
        if self.unprofiled <= 0:
            return float("nan")
        return abs(rate(self.before) - rate(self.after)) / self.unprofiled

    @property
    def told_apart(self) -> bool:
        """Whether the profiled rate lies outside the two unprofiled ones' range: only then
        is the cost more than the spread the host gave the two unprofiled runs."""
        low, high = sorted((rate(self.before), rate(self.after)))
        return not low <= rate(self.profiled) <= high

    @property
    def contended(self) -> bool:
        return any(r.status != "ok" for r in (self.before, self.profiled, self.after))

    def as_dict(self) -> OverheadRecord:
        def one(run: ProfileRun, role: str) -> OverheadRun:
            return {"role": role, "operations": run.operations,
                    "seconds": round(run.seconds, 6), "ops_per_s": round(rate(run), 3),
                    "ns_per_op": round(run.ns_per_op, 4), "status": run.status,
                    "host": run.accounting.as_dict() if run.accounting else None,
                    "findings": [f.as_dict() for f in run.findings],
                    "started": run.result.started, "ended": run.result.ended}

        return {"runs": [one(self.before, "unprofiled, before"),
                         one(self.profiled, "profiled"),
                         one(self.after, "unprofiled, after")],
                "unprofiled_ops_per_s": round(self.unprofiled, 3),
                "profiled_ops_per_s": round(rate(self.profiled), 3),
                "ratio": round(self.ratio, 5), "cost": round(self.cost, 5),
                "spread": round(self.spread, 5), "told_apart": self.told_apart,
                "contended": self.contended,
                "method": "unprofiled, profiled, unprofiled: one after the other, in the "
                          "profile image, same limits; ratio = profiled ops/s over the "
                          "mean of the two unprofiled"}


def measure(run: Callable[[bool], ProfileRun]) -> tuple[ProfileRun, Overhead]:
    """Unprofiled, profiled, unprofiled (``run(profiled)`` runs the cell once): the
    profiled run and the overhead around it."""
    before = run(False)
    profiled = run(True)
    after = run(False)
    return profiled, Overhead(before, profiled, after)


def verdict(record: Mapping[str, object]) -> str:
    """What one bracket says: a cost beyond the unprofiled runs' spread, a profiled run
    inside their range (not told apart), or one faster than both (the host's noise
    outweighed perf's cost: the bracket says nothing of the cost)."""
    if not record.get("told_apart"):
        return "NOT told apart from the spread"
    cost = record.get("cost")
    if isinstance(cost, (int, float)) and cost < 0:
        return ("the profiled run was faster than both: the host's noise outweighed "
                "perf's cost in this bracket")
    return "more than the spread"


def overhead_text(record: object) -> list[str]:
    """The overhead's lines in a profile's summary (from its meta.json record)."""
    if not isinstance(record, dict) or not isinstance(record.get("runs"), list):
        return []
    runs: list[Mapping[str, object]] = [r for r in record["runs"] if isinstance(r, dict)]

    def host(r: Mapping[str, object]) -> str:
        h = r.get("host") if isinstance(r.get("host"), dict) else {}
        assert isinstance(h, dict)
        busy = h.get("foreign_cores")
        return f"{r.get('status')}" + (f", others {busy:.2f} core(s) busy"
                                       if isinstance(busy, (int, float)) else "")

    lines = ["  profiler's overhead (unprofiled, profiled, unprofiled; same image): "
             + "; ".join(f"{r.get('role')} {r.get('ops_per_s', 0):,.0f} ops/s ({host(r)})"
                         for r in runs)]
    told = verdict(record)
    lines.append(f"  profiled/unprofiled {record.get('ratio', float('nan')):.3f}× "
                 f"(cost {record.get('cost', float('nan')):+.1%}); the two unprofiled runs "
                 f"differ by {record.get('spread', float('nan')):.1%}: {told}"
                 + (" (a run was contended)" if record.get("contended") else ""))
    return lines
