"""Reproduce, step 3: our figures for each measurement, read from the results tree,
and the verdict on each claim (reproduced / not reproduced / not testable here)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openssl_matrix.core.names import clip
from openssl_matrix.core.stats import MODEL_TOLERANCE, compare, ratio_estimate
from openssl_matrix.core.statuses import CONTENDED, SHARED_CORE, USABLE_STATUSES
from openssl_matrix.core.version import series_or_none
from openssl_matrix.matrix.kinds.base import FIGURES_THREADS
from openssl_matrix.matrix.pkey import ALGORITHMS as PK_ALGORITHMS
from openssl_matrix.measure.cpumodel import (
    CORES,
    MODEL_MIN_BLOCK,
    Core,
    PathCost,
    RatioModel,
    agrees,
    path_cost,
    predicted_ratio,
)
from openssl_matrix.parse.algorithms import speed_argument
from openssl_matrix.parse.figures import canonical_algorithm
from openssl_matrix.repro.ourcycles import (
    calibration_text,
    masked_capabilities,
    measured_cpb,
)
from openssl_matrix.repro.pairs import Interleaving, PairRatio, trend_ratio
from openssl_matrix.repro.plan import PlannedMeasurement
from openssl_matrix.repro.resolve import ResolvedVersion
from openssl_matrix.repro.spec import OP_BLOCK, Claim, Machine, Measurement, ReportSpec
from openssl_matrix.results import records
from openssl_matrix.results.tree import ResultsTree

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
#: our paired ratio's 95 % interval straddles the claim's band, after every round allowed
INCONCLUSIVE = "inconclusive"
NOT_TESTABLE = "not testable here"

# ----------------------------------------------------------------------------------
# our figures


@dataclass
class Ours:
    """Our figures for one measurement: bytes/s per block size, run by run."""

    per_run: list[tuple[str, dict[int, float]]] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    clock_ghz: float | None = None
    #: "measured" (the cores' effective clock around the runs, their median) or
    #: "nominal" (cpu MHz as /proc/cpuinfo said: provenance only where measured)
    clock_source: str | None = None
    nominal_ghz: float | None = None
    measured: list[float] = field(default_factory=list)
    #: AESENC latency in cycles measured on the cores around the runs (coreclock.py)
    aesenc_latency: float | None = None
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


def paired_trends(num: Ours, den: Ours, first: int, last: int) -> list[float]:
    """Per round, the two measurements' ratio at ``last`` over their ratio at ``first``:
    all four figures of one run folder (else of the same place in run order), so a drift
    of the machine's speed between rounds cancels out."""
    def per_run(o: Ours) -> list[tuple[str, dict[int, float]]]:
        return [(run, v) for run, v in o.per_run if first in v and last in v and
                v[first] > 0]

    a, b = per_run(num), per_run(den)
    bd = dict(b)
    pairs = [(v, bd[run]) for run, v in a if run in bd] or \
        [(x, y) for (_, x), (_, y) in zip(a, b, strict=False)]
    return [(x[last] / y[last]) / (x[first] / y[first]) for x, y in pairs
            if y[last] > 0 and y[first] > 0]


def matching_runs(tree: ResultsTree, cpu_dir: str, variant: str, suite: str,
                  image_id: str | None, definition: Mapping[str, Any]) -> list[Path]:
    """Finished runs of exactly this suite on this image, oldest first."""
    found: list[Path] = []
    for run in tree.finished_runs(cpu=cpu_dir, variant=variant, suite=suite):
        meta = run.meta
        if image_id is not None and meta.image_id != image_id:
            continue
        s = meta.suite or {}
        if list(s.get("algorithms") or []) != list(definition["algorithms"]):
            continue
        found.append(run.path)
    return found


def profile_runs(tree: ResultsTree, profile: str, variant: str, m: Measurement,
                 ) -> list[Path]:
    """Finished reproduction runs of a variant under a CPU profile that measured ``m``'s
    algorithm on its path (any engine, any suite composition): for claims comparing two
    machines, whose sides are measured in separate runs."""
    word = speed_argument(m.algorithm, m.evp)
    found: list[Path] = []
    for run in tree.finished_runs(cpu=profile, variant=variant):
        s = run.meta.suite or {}
        if not str(run.suite).startswith("repro-") or word not in (s.get("algorithms") or []):
            continue
        if bool(s.get("evp")) != m.evp or bool(s.get("decrypt")) != m.decrypt or \
                (s.get("engine") or None) != m.engine:
            continue
        found.append(run.path)
    return found


def collect(measurement: Measurement, planned: PlannedMeasurement, runs: Sequence[Path]) -> Ours:
    ours = Ours()
    want = canonical_algorithm(measurement.algorithm)
    if measurement.suite_kind.figures == FIGURES_THREADS:  # the harness's operation
        want = measurement.algorithm
    elif measurement.protocol is not None:  # a TLS figure: protocol-key, one pinning
        want = f"{measurement.protocol}-{measurement.algorithm}"
    elif measurement.operation is not None:  # a public-key figure: the parser's id
        want = PK_ALGORITHMS[measurement.algorithm].figure
    for run in runs:
        figures = records.read_figures(run)
        meta = records.read_meta(run)
        values: dict[int, float] = {}
        for fig in figures:
            if fig.mask != planned.mask or fig.algorithm != want:
                continue
            if measurement.suite_kind.figures == FIGURES_THREADS:  # same threads too
                if fig.get("threads") not in (measurement.thread_counts or
                                              (measurement.threads,)):
                    continue
            elif fig.operation != measurement.operation:
                continue
            if measurement.protocol is not None and \
                    fig.get("tls_pinning") != measurement.pinning:
                continue
            if measurement.operation is None and (fig.direction or "encrypt") != (
                    "decrypt" if measurement.decrypt else "encrypt"):
                continue
            status = fig.status
            ours.statuses[status] = ours.statuses.get(status, 0) + 1
            value = fig.bytes_per_s
            block = fig.block_size
            if measurement.operation is not None:  # several thread counts: keyed by them
                value, block = fig.ops_per_s, (int(fig.get("threads")) if
                                               measurement.thread_counts else OP_BLOCK)
            if status not in USABLE_STATUSES or value is None or block is None:
                continue
            values[block] = float(value)
        if values:
            ours.per_run.append((str(run), values))
            if meta is not None:
                host = meta.host or {}
                mhz = host.get("cpu_mhz")
                nominal = float(mhz) / 1000 if isinstance(mhz, (int, float)) else None
                ours.nominal_ghz = nominal
                measured = (host.get("core_clock") or {}).get("ghz")
                lat = ((host.get("core_clock") or {}).get("before") or {}).get(
                    "aesenc_latency")
                if isinstance(lat, (int, float)) and lat > 0:
                    ours.aesenc_latency = float(lat)
                if isinstance(measured, (int, float)) and measured > 0:
                    # the cores' own clock around this run (coreclock.py): core cycles
                    ours.measured.append(float(measured))
                    ours.clock_ghz = statistics.median(ours.measured)
                    ours.clock_source = "measured"
                else:
                    ours.clock_ghz, ours.clock_source = nominal, "nominal"
                ours.cpu = host.get("cpu_model")
                ours.image_id = meta.get("image_id")
    return ours


# ----------------------------------------------------------------------------------
# verdicts


@dataclass
class BlockJudgement:
    block: int
    reference: float | None
    ours: float | None  # our ratio (stats.compare: Hodges–Lehmann of both sides)
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
        lo, hi = self.ours_range
        if self.by_model and self.model_here is not None:
            # the band the model accepts may lie inside our range: then some pairs pass
            # and others fail even though both ends agree
            band = (self.model_here * (1 - MODEL_TOLERANCE),
                    self.model_here * (1 + MODEL_TOLERANCE))
            if self.passed:
                return band[0] <= lo and hi <= band[1]
            return hi < band[0] or lo > band[1]
        return self.passed == self._passes(lo) == self._passes(hi)

    expect: str = "ratio"
    tolerance: float = 0.25
    by_model: bool = False  # judged on direction and against the CPU model
    model_theirs: float | None = None  # the ratio the model predicts on their CPU
    model_here: float | None = None  # ... and on ours
    #: 95 % interval of our ratio (stats.compare: distribution-free, Mann–Whitney; with
    #: too few samples for it, the same-round pairs' from 6 pairs on, stats.ratio_estimate);
    #: None with too few of both: then ``no_interval`` says so and nothing is decided
    ci: tuple[float, float] | None = None
    no_interval: str | None = None  #: why there is no interval ("too few pairs: n=2")
    #: a trend claim's (from, to) sizes: the figures are then ratios of ratios
    trend: tuple[int, int] | None = None
    trend_of: str = "bytes"  # or "threads": the trend's points are thread counts
    #: where our ratio comes from: "rounds" (the speed runs' figures) or "interleaved"
    #: (the pair harness, repro/pairs.py; ``pairs`` is then its kept blocks of windows)
    basis: str = "rounds"
    record: str | None = None  #: the interleaved record's folder (results-relative)
    #: the interleaved runs disagreed beyond their intervals (measure/runsmeta.py): the
    #: interval is widened by their spread; ``run_ratios``: each run's own ratio
    runs_disagree: bool = False
    run_ratios: tuple[float, ...] = ()

    @property
    def where(self) -> str:
        """Where the judgement is, in words: a block size, the operation or a trend."""
        if self.trend is not None:
            return f"the trend from {self.trend[0]} to {self.trend[1]} {self.trend_of}"
        return "the operation" if self.block == OP_BLOCK else f"{self.block} bytes"

    def band(self) -> tuple[float, float]:
        """The ratios that meet the claim (or, judged by the model, the model's band on
        the claim's side of 1)."""
        if self.by_model:
            lo, hi = 0.0, math.inf
            if self.model_here is not None:
                lo, hi = (self.model_here * (1 - MODEL_TOLERANCE),
                          self.model_here * (1 + MODEL_TOLERANCE))
            if self.expect == "faster" or (self.expect == "ratio" and self.target > 1):
                lo = max(lo, 1.0)
            elif self.expect == "slower" or (self.expect == "ratio" and self.target < 1):
                hi = min(hi, 1.0)
            return lo, hi
        return band(self.expect, self.target, self.tolerance)

    @property
    def decision(self) -> bool | None:
        """True: the whole 95 % interval of our paired ratio meets the claim; False: none
        of it does; None: it straddles the band, or there is no figure, or no interval
        (too few pairs: a ratio without an interval decides nothing, and the claim is
        inconclusive, so that ``reproduce`` measures further rounds)."""
        if self.ours is None or self.ci is None:
            return None
        lo, hi = self.ci
        a, b = self.band()
        if a <= lo and hi <= b:
            return True
        if hi < a or lo > b:
            return False
        return None

    def _passes(self, value: float) -> bool:
        if self.by_model:
            return direction_holds(self.expect, self.target, value) and \
                (self.model_here is None or agrees(value, self.model_here))
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
    #: how the verdict was reached: "measured" (our ratio against the claim), "cpu model"
    #: (a CPU-dependent claim on another CPU) or "two machines" (two profiles' results)
    basis: str = "measured"
    model: str | None = None  # what the model says, in words
    #: a method the report leaves open (evp: unknown): whether the verdict holds both
    #: ways, or which it assumed (``repro.unknowns``)
    method: str | None = None
    #: where our ratios come from: "interleaved", "rounds" or "mixed" (blocks differ),
    #: and why it is not (only) interleaved
    ratio_basis: str = "rounds"
    ratio_note: str | None = None

    @property
    def unstable(self) -> list[int]:
        """Block sizes where our own spread straddles the expectation."""
        return [b.block for b in self.blocks if b.stable is False]


def band(expect: str, target: float, tolerance: float) -> tuple[float, float]:
    """The ratios ``passes`` accepts, as an interval."""
    if expect == "faster":
        return 1 + tolerance, math.inf
    if expect == "slower":
        return 0.0, 1 / (1 + tolerance)
    if expect == "same":
        return 1 - tolerance, 1 + tolerance
    return target * (1 - tolerance), target * (1 + tolerance)


def interval_verdict(blocks: Sequence[BlockJudgement]) -> str:
    """reproduced when every block's interval meets the claim, not reproduced when one
    block's interval lies wholly outside it, else inconclusive."""
    decisions = [b.decision for b in blocks]
    if decisions and all(d is True for d in decisions):
        return REPRODUCED
    if any(d is False for d in decisions):
        return NOT_REPRODUCED
    return INCONCLUSIVE


def ratio_text(value: float) -> str:
    """A ratio as the verdicts print it: two decimals, three significant digits below 0.1
    (#15199's 0.0276 is not 0.03)."""
    return f"{value:.2f}" if value == 0 or abs(value) >= 0.1 else f"{value:.3g}"


def straddle_text(blocks: Sequence[BlockJudgement]) -> str:
    """Where our interval straddles the band, or there is none, in words."""
    parts = []
    for b in blocks:
        if b.decision is None and b.ci is None and b.ours is not None:
            parts.append(f"at {b.where} our paired ratio {ratio_text(b.ours)}× has no 95 % "
                         f"interval ({b.no_interval or f'too few pairs: n={b.pairs}'})")
        if b.decision is None and b.ci is not None:
            lo, hi = b.band()
            band_text = f"≥ {ratio_text(lo)}×" if hi == math.inf else \
                f"≤ {ratio_text(hi)}×" if lo <= 0 else f"{ratio_text(lo)}–{ratio_text(hi)}×"
            n = f"interleaved, {b.pairs} blocks" if b.basis == "interleaved" else \
                f"{b.pairs} pairs"
            parts.append(f"at {b.where} our paired ratio's 95 % interval "
                         f"{ratio_text(b.ci[0])}–{ratio_text(b.ci[1])}× ({n}) straddles the "
                         f"band {band_text}")
    return "; ".join(parts)


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
    return f"{ratio_text(target)}× ±{t * 100:.0f} %"


def judge(spec: ReportSpec, claim: Claim, planned: Mapping[str, PlannedMeasurement],
          ours: Mapping[str, Ours], resolved: Mapping[str, ResolvedVersion], *,
          here: Core | None = None, profiles: Mapping[str, Ours] | None = None,
          interleaved: Mapping[str, Interleaving] | None = None) -> ClaimResult:
    """The verdict on one claim.

    ``here``: the core of the machine measured on (for claims that depend on the CPU);
    ``profiles``: for claims comparing two machines, each side's figures from its
    machine's CPU profile in the results tree (missing: not measured there);
    ``interleaved``: what the pair harness gave each claim (repro/pairs.py): its ratio
    and interval at a block size are preferred to the rounds'.
    """
    sides = (claim.numerator, claim.denominator)
    result = ClaimResult(claim, NOT_TESTABLE)
    if two_machines(spec, claim):
        return _judge_two_machines(spec, claim, result, profiles or {})
    problems, notes = _side_problems(spec, claim, planned, resolved, result)
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
    il = (interleaved or {}).get(claim.id)
    doubt = sorted({s for n in sides for s in ours[n].statuses
                    if s not in USABLE_STATUSES and s not in (CONTENDED, SHARED_CORE)})
    if il is not None and il.ratios and doubt:  # a label on what the figures mean
        il = Interleaving(why_rounds=f"its figures are labelled {', '.join(doubt)}, and the "
                          "interleaved run shares their mask and path: not used")
    if claim.trend is not None:
        result.blocks.append(_trend_judgement(spec, claim, ours, trend_ratio(il, claim.trend)))
    for block in () if claim.trend is not None else spec.claim_blocks(claim):
        result.blocks.append(_block_judgement(spec, claim, ours, block,
                                              il.ratios.get(block) if il else None))
    result.ratio_basis, result.ratio_note = ratio_basis(result.blocks, il)
    missing = [b.block for b in result.blocks if b.ours is None]
    if missing and claim.trend is not None:
        result.reason = (f"no usable pair of rounds with figures at both {claim.trend[0]} and "
                         f"{claim.trend[1]} {claim.trend_of} on both sides; see the raw output "
                         "of the runs")
        return result
    if missing:
        result.reason = _missing_reason(claim, ours, missing)
        return result
    their = spec.machines[spec.measurements[claim.numerator].machine]
    if claim.depends_on == "cpu" and not (here is not None and their.model_core is not None
                                          and their.model_core.name == here.name):
        return _judge_by_model(spec, claim, result, their, here, planned, ours)
    result.verdict = interval_verdict(result.blocks)
    if result.verdict == INCONCLUSIVE:
        result.reason = straddle_text(result.blocks) + ": neither reproduced nor refuted"
    return result


def _side_problems(spec: ReportSpec, claim: Claim, planned: Mapping[str, PlannedMeasurement],
                   resolved: Mapping[str, ResolvedVersion], result: ClaimResult,
                   ) -> tuple[dict[str, list[str]], list[str]]:
    """What stops either side of a claim from being judged (reason -> the measurements it
    stops), and the stand-ins it is judged on; each side's release goes into ``result``."""
    problems: dict[str, list[str]] = {}  # reason -> the measurements it stops
    notes: list[str] = []
    for name in (claim.numerator, claim.denominator):
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
    return problems, notes


def _block_judgement(spec: ReportSpec, claim: Claim, ours: Mapping[str, Ours],
                     block: int, pair: PairRatio | None = None) -> BlockJudgement:
    """A claim judged at one block size: the report's ratio, ours with its interval -
    the interleaved run's where it has one (``pair``), else the rounds'."""
    ref = spec.reference_ratio(claim, block)
    target = claim.ratio if claim.ratio is not None else (ref if ref is not None else 1.0)
    if pair is not None and pair.ci_low is not None and pair.ci_high is not None:
        return BlockJudgement(
            block, ref, pair.ratio, target,
            passes(claim.expect, pair.ratio, target, claim.tolerance),
            None if ref is None else passes(claim.expect, ref, target, claim.tolerance),
            None, pair.blocks, claim.expect, claim.tolerance,
            ci=(pair.ci_low, pair.ci_high), basis="interleaved", record=pair.record,
            runs_disagree=pair.runs_disagree, run_ratios=pair.run_ratios)
    ratios = paired_ratios(ours[claim.numerator], ours[claim.denominator], block)
    # the comparison's figure and interval, as the bench and the report give them
    # (stats.compare): every clean sample of both sides, those 5 % below their best
    # left out, Hodges–Lehmann ratio with its distribution-free 95 % interval; too few
    # samples for that interval: the same-round pairs' median and its distribution-free
    # interval from 6 pairs on (stats.ratio_estimate); fewer: no interval, no decision
    est = compare(ours[claim.numerator].values(block), ours[claim.denominator].values(block))
    if est is None or est.interval is None:
        est = ratio_estimate(ratios)
    value = None if est is None else est.ratio
    ci = None if est is None else est.interval
    return BlockJudgement(
        block, ref, value, target,
        None if value is None else passes(claim.expect, value, target, claim.tolerance),
        None if ref is None else passes(claim.expect, ref, target, claim.tolerance),
        (min(ratios), max(ratios)) if ratios else None, len(ratios), claim.expect,
        claim.tolerance, ci=ci, no_interval=None if est is None else est.no_interval)


def ratio_basis(blocks: Sequence[BlockJudgement], il: Interleaving | None,
                ) -> tuple[str, str | None]:
    """Where a claim's ratios come from ("interleaved", "rounds" or "mixed") and, unless
    every block is interleaved, why the others are the rounds'."""
    inter = [b for b in blocks if b.basis == "interleaved"]
    if blocks and len(inter) == len(blocks):
        return "interleaved", None
    why = il.why_rounds if il is not None else None
    if il is not None and not why:  # a ratio without an interval: too few blocks
        why = "the interleaved run kept too few blocks of windows for an interval at " + \
            ", ".join(b.where for b in blocks if b.basis != "interleaved")
    if inter:
        return "mixed", (f"interleaved at {', '.join(b.where for b in inter)}; rounds "
                         f"elsewhere: {why}")
    return "rounds", why or "the pair harness did not run for it"


def _missing_reason(claim: Claim, ours: Mapping[str, Ours], missing: Sequence[int]) -> str:
    """Why a claim has no figure to judge at some block sizes: each side's runs and the
    statuses of their figures."""
    detail = []
    for name in (claim.numerator, claim.denominator):
        o = ours[name]
        bad = {k: v for k, v in o.statuses.items() if k != "ok"}
        detail.append(f"{name}: {len(o.runs)} run(s)"
                      + (f", figures {bad}" if bad else ""))
    where = "for the operation" if missing == [OP_BLOCK] else \
        f"at block size(s) {', '.join(map(str, missing))}"
    return (f"no usable figure {where} "
            f"({'; '.join(detail)}); see the raw output of the runs")


def _trend_judgement(spec: ReportSpec, claim: Claim, ours: Mapping[str, Ours],
                     chained: PairRatio | None = None) -> BlockJudgement:
    """A trend claim's one judgement: the quotient of its interleaved ratios at ``to`` and
    ``from`` where both sizes have one with an interval (``chained``, pairs.trend_ratio);
    else our paired trends of rounds (ratio at ``to`` over ratio at ``from``, per round),
    their median and its distribution-free 95 % interval from 6 of them on
    (stats.ratio_estimate; fewer: no interval, and the claim stays inconclusive)."""
    assert claim.trend is not None
    ref = spec.reference_trend(claim)
    target = claim.ratio if claim.ratio is not None else (ref if ref is not None else 1.0)
    if chained is not None and chained.ci_low is not None and chained.ci_high is not None:
        return BlockJudgement(
            claim.trend[1], ref, chained.ratio, target,
            passes(claim.expect, chained.ratio, target, claim.tolerance),
            None if ref is None else passes(claim.expect, ref, target, claim.tolerance),
            None, chained.blocks, claim.expect, claim.tolerance,
            ci=(chained.ci_low, chained.ci_high), trend=claim.trend,
            trend_of=claim.trend_of, basis="interleaved", record=chained.record,
            runs_disagree=chained.runs_disagree)
    trends = paired_trends(ours[claim.numerator], ours[claim.denominator], *claim.trend)
    est = ratio_estimate(trends)
    value = None if est is None else est.ratio
    ci = None if est is None else est.interval
    return BlockJudgement(
        claim.trend[1], ref, value, target,
        None if value is None else passes(claim.expect, value, target, claim.tolerance),
        None if ref is None else passes(claim.expect, ref, target, claim.tolerance),
        (min(trends), max(trends)) if trends else None, len(trends), claim.expect,
        claim.tolerance, ci=ci, trend=claim.trend, trend_of=claim.trend_of,
        no_interval=None if est is None else est.no_interval)


# ----------------------------------------------------------------------------------
# claims whose size depends on the CPU, judged on another CPU


def direction_holds(expect: str, target: float, value: float) -> bool:
    """Whether ``value`` is on the side of 1 the claim is about (``same``: always)."""
    if expect == "faster" or (expect == "ratio" and target > 1):
        return value > 1
    if expect == "slower" or (expect == "ratio" and target < 1):
        return value < 1
    return True


def _cost(spec: ReportSpec, name: str, core: Core, version: str | None) -> PathCost | str:
    m = spec.measurements[name]
    return path_cost(core, m.algorithm, evp=m.evp, decrypt=m.decrypt,
                     masked=masked_capabilities(m), series=series_or_none(version),
                     asm=spec.builds[m.build].asm, engine=m.engine)


def unknown_core_text(machine: Machine) -> str:
    """Why the CPU model cannot size a claim on the report's machine, and what the user
    can do, as a sentence whatever free text ``machines.NAME.cpu`` holds (quoted)."""
    key = f"machines.{machine.name}"
    still = ("What can still be judged: a claim that holds on any CPU (depends_on: "
             "code-path) is judged as measured")
    if not machine.cpu_named:
        return (f"the report names no CPU for {key} (its cpu reads {clip(machine.cpu)}), so "
                f"the CPU model cannot say how large the ratio was there. {still}; if the "
                "report names the CPU or its core elsewhere (a later comment, a linked log), "
                f"write it in {key}.cpu or {key}.core")
    return (f"the CPU model does not know the core of the CPU {clip(machine.cpu)} ({key}), "
            "so it cannot carry this claim to another CPU. If that CPU has one of the "
            f"cores {', '.join(CORES)}, write the core in {key}.core. {still}")


def model_on_their_cpu(spec: ReportSpec, claim: Claim) -> RatioModel | str:
    """The claim's ratio as the model predicts it on the report's CPU, or why not."""
    machine = spec.machines[spec.measurements[claim.numerator].machine]
    core = machine.model_core
    if core is None:
        return unknown_core_text(machine)
    costs = [_cost(spec, n, core, spec.builds[spec.measurements[n].build].version)
             for n in (claim.numerator, claim.denominator)]
    return predicted_ratio(core, costs[0], costs[1])


def _judge_by_model(spec: ReportSpec, claim: Claim, result: ClaimResult, their: Machine,
                    here: Core | None, planned: Mapping[str, PlannedMeasurement],
                    ours: Mapping[str, Ours]) -> ClaimResult:
    """A CPU-dependent claim on another core. The model is checked on *our* core first:
    where it predicts our ratio, our ratio is judged against that prediction; where it
    misses ours (or does not know our core), the model is off here, not the claim: the
    verdict says by how much and which of its constants is inferred, shows the per-core
    constants calibrated from our runs, and judges the claim on what the model still
    supports (it explains the report's figure on the report's CPU) and on the direction."""
    result.basis = "cpu model"
    theirs = model_on_their_cpu(spec, claim)
    if isinstance(theirs, str):
        result.reason = f"its size depends on the CPU, and {theirs}"
        return result
    mine: RatioModel | str | None = None
    if here is not None:
        costs = [_cost(spec, n, here, planned[n].version) for n in (claim.numerator,
                                                                    claim.denominator)]
        mine = predicted_ratio(here, costs[0], costs[1])
    big = [b for b in result.blocks if b.block >= MODEL_MIN_BLOCK]
    if not big:
        result.reason = (f"its size depends on the CPU; the model is for blocks of "
                         f"{MODEL_MIN_BLOCK} bytes and more, and the claim is judged at "
                         f"{', '.join(str(b.block) for b in result.blocks)}")
        result.verdict = NOT_TESTABLE
        return result
    last = big[-1]
    assert last.ours is not None
    reported = last.reference if last.reference is not None else claim.ratio
    where = their.label
    if reported is None or not all(agrees(b.reference if b.reference is not None
                                          else reported, theirs.ratio) for b in big):
        result.reason = (f"its size depends on the CPU, and the model does not explain the "
                         f"report's own figure on {where}: "
                         + (f"{reported:.2f}× reported, " if reported is not None else "")
                         + f"{theirs.ratio:.2f}× predicted ({theirs.text()})")
        return result
    holds = (f"holds on {where} by the model ({reported:.2f}× reported, "
             f"{theirs.ratio:.2f}× predicted: {theirs.text()})")
    fits_here = isinstance(mine, RatioModel) and agrees(last.ours, mine.ratio)
    for b in result.blocks:
        b.by_model = True
        if b.block >= MODEL_MIN_BLOCK:
            b.model_theirs = theirs.ratio
            b.model_here = mine.ratio if isinstance(mine, RatioModel) and fits_here else None
        assert b.ours is not None
        b.passed = b._passes(b.ours)
    calibrated = calibration_text(spec, claim, ours, last.block)
    if isinstance(mine, RatioModel) and fits_here:
        result.model = (f"{holds}; here {last.ours:.2f}× as the model predicts "
                        f"{mine.ratio:.2f}× ({mine.text()})"
                        + measured_cpb(spec, mine, ours, claim, last.block))
    elif isinstance(mine, RatioModel):
        off = last.ours / mine.ratio - 1
        inferred = [src.split(": ", 1)[-1] for c in (mine.first, mine.second)
                    for src in c.sources if "taken for" in src]
        result.model = (f"{holds}; the model is off on our core ({here.label if here else ''}"
                        f"): it predicts {mine.ratio:.2f}× here ({mine.text()}), we measure "
                        f"{last.ours:.2f}× ({off:+.0%})"
                        + (f"; inferred, not measured, for this core: {'; '.join(inferred)}"
                           if inferred else "")
                        + measured_cpb(spec, mine, ours, claim, last.block)
                        + (f"; calibrated from our runs: {calibrated}" if calibrated else "")
                        + ". The claim is judged on what the model still supports (its "
                        "figure on the report's CPU) and on its direction here")
    else:
        why = mine if isinstance(mine, str) else "the CPU model does not know this core"
        result.model = (f"{holds}; on our core the model has no prediction ({why})"
                        + (f"; calibrated from our runs: {calibrated}" if calibrated else "")
                        + ". The claim is judged on its direction here")
    if not all(b.passed for b in result.blocks):
        bad = [b for b in result.blocks if not b.passed]
        if any(not direction_holds(claim.expect, b.target, b.ours or 0.0) for b in bad):
            result.model += "; the direction does not hold here"
    result.verdict = interval_verdict(result.blocks)
    if result.verdict == INCONCLUSIVE:
        result.reason = straddle_text(result.blocks) + ": neither reproduced nor refuted"
    return result


# ----------------------------------------------------------------------------------
# claims comparing two machines


def two_machines(spec: ReportSpec, claim: Claim) -> bool:
    return spec.measurements[claim.numerator].machine != \
        spec.measurements[claim.denominator].machine


def machine_profiles(spec: ReportSpec, claim: Claim) -> list[str | None]:
    return [spec.machines[spec.measurements[n].machine].profile
            for n in (claim.numerator, claim.denominator)]


def _judge_two_machines(spec: ReportSpec, claim: Claim, result: ClaimResult,
                        profiles: Mapping[str, Ours]) -> ClaimResult:
    """A ratio across two machines: from each machine's CPU profile, never from one."""
    result.basis = "two machines"
    names = (claim.numerator, claim.denominator)
    machines = [spec.machines[spec.measurements[n].machine] for n in names]
    wanted = machine_profiles(spec, claim)
    if None in wanted:
        unnamed = [m.name for m, p in zip(machines, wanted, strict=True) if p is None]
        result.reason = (f"it compares two machines ({machines[0].label} and "
                         f"{machines[1].label}): not testable here without a CPU profile for "
                         f"each (give machines.{unnamed[0]}.profile)")
        return result
    have = [profiles.get(n) for n in names]
    if any(o is None or not o.runs for o in have):
        result.reason = (f"not testable here: needs {wanted[0]} and {wanted[1]} (it compares "
                         f"{machines[0].label} with {machines[1].label}; run `invoke matrix "
                         f"reproduce {spec.id} --cpu={wanted[0]},{wanted[1]}`)")
        return result
    num, den = have
    assert num is not None and den is not None
    for block in spec.claim_blocks(claim):
        ref = spec.reference_ratio(claim, block)
        target = claim.ratio if claim.ratio is not None else (ref if ref is not None else 1.0)
        a, b = num.median(block), den.median(block)
        value = a / b if a is not None and b else None
        result.blocks.append(BlockJudgement(
            block, ref, value, target,
            None if value is None else passes(claim.expect, value, target, claim.tolerance),
            None if ref is None else passes(claim.expect, ref, target, claim.tolerance),
            None, 0, claim.expect, claim.tolerance))
    if any(b.ours is None for b in result.blocks):
        result.reason = f"no usable figure from {wanted[0]} or {wanted[1]} at a judged size"
        return result
    result.model = (f"ratio of medians: {names[0]} from {wanted[0]} "
                    f"({len(num.runs)} run(s)), {names[1]} from {wanted[1]} "
                    f"({len(den.runs)} run(s))")
    result.verdict = REPRODUCED if all(b.passed for b in result.blocks) else NOT_REPRODUCED
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
    where: dict[str, dict[str, Any]] = field(default_factory=dict)  # profiled claims' records


