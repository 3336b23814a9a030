"""Reproduce, step 3: our figures for each measurement, read from the results tree,
and the verdict on each claim (reproduced / not reproduced / not testable here)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import records
from ..parsing import canonical_algorithm
from ..report import USABLE_STATUSES
from ..reportspec import Claim, Measurement, ReportSpec
from ..results import ResultsTree
from .plan import PlannedMeasurement
from .resolve import ResolvedVersion

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_TESTABLE = "not testable here"

# ----------------------------------------------------------------------------------
# our figures


@dataclass
class Ours:
    """Our figures for one measurement: bytes/s per block size, run by run."""

    per_run: list[tuple[str, dict[int, float]]] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    clock_ghz: float | None = None
    cpu: str | None = None
    image_id: str | None = None

    @property
    def runs(self) -> list[str]:
        return [run for run, _ in self.per_run]

    @property
    def blocks(self) -> list[int]:
        return sorted({b for _, values in self.per_run for b in values})

    def values(self, block: int) -> list[float]:
        return [values[block] for _, values in self.per_run if block in values]

    def median(self, block: int) -> float | None:
        vals = self.values(block)
        return statistics.median(vals) if vals else None

    def spread(self, block: int) -> tuple[float, float] | None:
        vals = self.values(block)
        return (min(vals), max(vals)) if vals else None


def paired_ratios(num: Ours, den: Ours, block: int) -> list[float]:
    """Ratios of figures taken together: from the same run folder, else run by run in order.

    On a shared machine the load drifts; a ratio of two figures measured seconds apart is
    steadier than a ratio of medians taken minutes apart.
    """
    a = {run: v[block] for run, v in num.per_run if block in v}
    b = {run: v[block] for run, v in den.per_run if block in v}
    common = [run for run in a if run in b]
    if common:
        return [a[run] / b[run] for run in common if b[run] > 0]
    return [x / y for x, y in zip(a.values(), b.values(), strict=False) if y > 0]


def matching_runs(tree: ResultsTree, cpu_dir: str, variant: str, suite: str,
                  image_id: str | None, definition: Mapping[str, Any]) -> list[Path]:
    """Finished runs of exactly this suite on this image, oldest first."""
    found: list[Path] = []
    for run in records.finished_runs(tree.root, cpu=cpu_dir, variant=variant, suite=suite):
        meta = run.meta
        if image_id is not None and meta.image_id != image_id:
            continue
        s = meta.suite or {}
        if list(s.get("algorithms") or []) != list(definition["algorithms"]):
            continue
        found.append(run.path)
    return found


def collect(measurement: Measurement, planned: PlannedMeasurement, runs: Sequence[Path]) -> Ours:
    ours = Ours()
    want = canonical_algorithm(measurement.algorithm)
    for run in runs:
        figures = records.read_figures(run)
        meta = records.read_meta(run)
        values: dict[int, float] = {}
        for fig in figures:
            if fig.mask != planned.mask or fig.algorithm != want:
                continue
            if fig.operation is not None:
                continue
            if (fig.direction or "encrypt") != ("decrypt" if measurement.decrypt
                                                else "encrypt"):
                continue
            status = fig.status
            ours.statuses[status] = ours.statuses.get(status, 0) + 1
            value = fig.bytes_per_s
            block = fig.block_size
            if status not in USABLE_STATUSES or value is None or block is None:
                continue
            values[block] = float(value)
        if values:
            ours.per_run.append((str(run), values))
            if meta is not None:
                host = meta.host or {}
                mhz = host.get("cpu_mhz")
                ours.clock_ghz = float(mhz) / 1000 if isinstance(mhz, (int, float)) else None
                ours.cpu = host.get("cpu_model")
                ours.image_id = meta.get("image_id")
    return ours


# ----------------------------------------------------------------------------------
# verdicts


@dataclass
class BlockJudgement:
    block: int
    reference: float | None
    ours: float | None  # median of the paired ratios
    target: float
    passed: bool | None
    reference_passes: bool | None
    ours_range: tuple[float, float] | None = None
    pairs: int = 0

    @property
    def stable(self) -> bool | None:
        """False when our slowest and fastest pair would give different verdicts."""
        if self.passed is None or self.ours_range is None or self.pairs < 2:
            return None
        return self.passed == self._passes(self.ours_range[0]) == \
            self._passes(self.ours_range[1])

    expect: str = "ratio"
    tolerance: float = 0.25

    def _passes(self, value: float) -> bool:
        return passes(self.expect, value, self.target, self.tolerance)


@dataclass
class ClaimResult:
    claim: Claim
    verdict: str
    reason: str | None = None
    blocks: list[BlockJudgement] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)  # measurement -> release used
    stand_in_note: str | None = None
    labels: dict[str, int] = field(default_factory=dict)  # figure statuses other than ok

    @property
    def unstable(self) -> list[int]:
        """Block sizes where our own spread straddles the expectation."""
        return [b.block for b in self.blocks if b.stable is False]


def passes(expect: str, value: float, target: float, tolerance: float) -> bool:
    if expect == "faster":
        return value >= 1 + tolerance
    if expect == "slower":
        return value <= 1 / (1 + tolerance)
    if expect == "same":
        return abs(value - 1) <= tolerance
    return abs(value / target - 1) <= tolerance


def expectation_text(claim: Claim, target: float) -> str:
    t = claim.tolerance
    if claim.expect == "faster":
        return f"≥ {1 + t:.2f}×"
    if claim.expect == "slower":
        return f"≤ {1 / (1 + t):.2f}×"
    if claim.expect == "same":
        return f"{1 - t:.2f}–{1 + t:.2f}×"
    return f"{target:.2f}× ±{t * 100:.0f} %"


def judge(spec: ReportSpec, claim: Claim, planned: Mapping[str, PlannedMeasurement],
          ours: Mapping[str, Ours], resolved: Mapping[str, ResolvedVersion]) -> ClaimResult:
    sides = (claim.numerator, claim.denominator)
    result = ClaimResult(claim, NOT_TESTABLE)
    problems: dict[str, list[str]] = {}  # reason -> the measurements it stops
    notes: list[str] = []
    for name in sides:
        p = planned[name]
        version = spec.builds[spec.measurements[name].build].version
        rv = resolved[version]
        if p.version:
            result.versions[name] = p.version
        if p.problem:
            problems.setdefault(p.problem, []).append(name)
        elif p.stand_in and not claim.stand_in:
            problems.setdefault(f"this claim is about {version} itself and accepts no "
                                f"stand-in ({rv.problem})", []).append(name)
        elif p.stand_in:
            note = f"{p.version} stands in for {version}"
            if note not in notes:
                notes.append(note)
    if problems:
        result.reason = "; ".join(text if len(problems) == 1 and len(names) == len(sides)
                                  else f"{', '.join(names)}: {text}"
                                  for text, names in problems.items())
        return result
    result.stand_in_note = "; ".join(notes) or None
    for name in sides:
        for status, n in ours[name].statuses.items():
            if status != "ok":
                result.labels[status] = result.labels.get(status, 0) + n
    for block in spec.claim_blocks(claim):
        ref = spec.reference_ratio(claim, block)
        target = claim.ratio if claim.ratio is not None else (ref if ref is not None else 1.0)
        ratios = paired_ratios(ours[claim.numerator], ours[claim.denominator], block)
        value = statistics.median(ratios) if ratios else None
        result.blocks.append(BlockJudgement(
            block, ref, value, target,
            None if value is None else passes(claim.expect, value, target, claim.tolerance),
            None if ref is None else passes(claim.expect, ref, target, claim.tolerance),
            (min(ratios), max(ratios)) if ratios else None, len(ratios), claim.expect,
            claim.tolerance))
    missing = [b.block for b in result.blocks if b.ours is None]
    if missing:
        detail = []
        for name in sides:
            o = ours[name]
            bad = {k: v for k, v in o.statuses.items() if k != "ok"}
            detail.append(f"{name}: {len(o.runs)} run(s)"
                          + (f", figures {bad}" if bad else ""))
        result.reason = (f"no usable figure at block size(s) {', '.join(map(str, missing))} "
                         f"({'; '.join(detail)}); see the raw output of the runs")
        return result
    ok = all(b.passed for b in result.blocks)
    result.verdict = REPRODUCED if ok else NOT_REPRODUCED
    return result



@dataclass
class Reproduction:
    spec: ReportSpec
    resolved: dict[str, ResolvedVersion]
    planned: dict[str, PlannedMeasurement]
    ours: dict[str, Ours]
    results: list[ClaimResult]
    host: dict[str, Any]
    warnings: list[str]
    started: str
    ended: str = ""
    out_dir: Path | None = None


