"""Several runs of one interleaved pair as units: a random-effects mean of their ratios.

Why: a sibling guest that stays for a whole harness run moves that run's ratio (on this
project's EPYC host a bisection step's first run gave 1.195 [1.168-1.223], and pooled
with two more runs 1.035 ±0.4 %: docs/bisect.md), so the blocks of a run are not
independent of the run, and an interval over the pooled blocks of every run (the rule
until 2026-12-06) is too narrow when the runs disagree; its slowed-block rule, taking the
usual rate over every run, also leaves out most blocks of a slower run.

The estimate: each run's own log-ratio and its standard error from its batch means
(``interleave.estimate``), combined DerSimonian–Laird: inverse-variance weights, Cochran's
Q for the runs' disagreement, the between-run variance tau² = max(0, (Q - (k-1)) / C)
added to each run's variance, the weighted mean of the logs and its standard error
1/√Σw*. The interval is Student's t with Welch–Satterthwaite degrees of freedom: the
within-run part of the variance has the runs' batch degrees of freedom, the between-run
part k-1. Why t and these degrees of freedom, not DerSimonian–Laird's normal quantile:
with 2 to 8 runs tau² comes from a handful of values, and a normal quantile then covers
too little (the reason for the Hartung–Knapp t with k-1 degrees of freedom); when the runs
agree (Q ≤ k-1, tau² = 0) the degrees of freedom are the batches', and the interval is
about the pooled batch-means one (``pooled`` in the row keeps it); when they disagree it
tends to k-1, so three runs far apart give a wide interval that shrinks as more runs come
(tau²/k). ``runs_disagree`` says Q lies beyond its 95 % point (the test of heterogeneity):
the runs differ by more than their own intervals allow. Between k-1 and that point tau²
already widens the interval a little without the flag.

A run whose batches give no standard error (fewer than 3 batches) is listed but not a
unit; with fewer than two units the row is the pooled estimate, as before. One module owns
this rule: the bench's pairs, a reproduction's and a bisection's all file rows through
``row_of`` (pairrun.record_of).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from openssl_matrix.core.stats import t975
from openssl_matrix.measure.interleave import AlgorithmRun, Interleaved, estimate
from openssl_matrix.results.pairrecord import PairEstimate, PairRow, PooledRatio, RunDetail

#: 95 % points of the chi-squared distribution for 1..10 degrees of freedom.
_CHI2_95 = (3.841, 5.991, 7.815, 9.488, 11.070, 12.592, 14.067, 15.507, 16.919, 18.307)
#: Floor of a unit's standard error (a synthetic run of identical blocks has none).
_SE_FLOOR = 1e-9
CI_METHOD = "random-effects-runs"


def chi2_95(df: int) -> float:
    """The 95 % point of chi-squared with ``df`` degrees of freedom (Wilson–Hilferty
    past the table)."""
    if df < 1:
        raise ValueError("chi-squared needs a degree of freedom")
    if df <= len(_CHI2_95):
        return _CHI2_95[df - 1]
    c = 2 / (9 * df)
    return df * (1 - c + 1.6449 * math.sqrt(c)) ** 3


def t_quantile(df: float) -> float:
    """Student's two-sided 95 % quantile at ``df`` degrees of freedom, rounded down
    (fewer degrees of freedom: the wider interval)."""
    return t975(max(1, math.floor(df + 1e-9)))


@dataclass(frozen=True)
class Unit:
    """One run's log-ratio, its standard error and that error's degrees of freedom."""

    log_ratio: float
    se: float
    df: float


@dataclass(frozen=True)
class Combined:
    """The runs' random-effects mean of the log-ratio, with its interval."""

    log_ratio: float
    se: float
    df: float
    q: float  #: Cochran's Q (0 for one unit)
    tau2: float  #: between-run variance of the log-ratio
    k: int  #: units
    disagree: bool  #: Q beyond its 95 % point

    @property
    def half(self) -> float:
        """Half-width of the interval on the log scale."""
        return t_quantile(self.df) * self.se

    @property
    def ratio(self) -> float:
        return math.exp(self.log_ratio)

    @property
    def ci(self) -> tuple[float, float]:
        return math.exp(self.log_ratio - self.half), math.exp(self.log_ratio + self.half)


def combine(units: Sequence[Unit]) -> Combined | None:
    """DerSimonian–Laird over ``units`` (None without one)."""
    if not units:
        return None
    ys = [u.log_ratio for u in units]
    var = [max(u.se, _SE_FLOOR) ** 2 for u in units]
    k = len(units)
    w = [1 / v for v in var]
    sw = math.fsum(w)
    fixed = math.fsum(wi * y for wi, y in zip(w, ys, strict=True)) / sw
    q = math.fsum(wi * (y - fixed) ** 2 for wi, y in zip(w, ys, strict=True))
    c = sw - math.fsum(wi * wi for wi in w) / sw
    tau2 = max(0.0, (q - (k - 1)) / c) if k > 1 and c > 0 else 0.0
    ws = [1 / (v + tau2) for v in var]
    sws = math.fsum(ws)
    mean = math.fsum(wi * y for wi, y in zip(ws, ys, strict=True)) / sws
    # Welch–Satterthwaite: each unit's own part of the variance with its own degrees of
    # freedom, the between-run part with k - 1
    parts = [(wi * wi * v / sws ** 2, u.df) for wi, v, u in zip(ws, var, units, strict=True)]
    between = tau2 * math.fsum(wi * wi for wi in ws) / sws ** 2
    total = 1 / sws
    denom = math.fsum(p * p / max(df, 1) for p, df in parts)
    if between > 0:
        denom += between * between / (k - 1)
    df_eff = total * total / denom if denom > 0 else math.fsum(u.df for u in units)
    return Combined(mean, math.sqrt(total), df_eff, q, tau2, k,
                    k > 1 and q > chi2_95(k - 1))


def quotient(top: Unit, bottom: Unit) -> Combined:
    """``top`` over ``bottom`` from two independent estimates (a trend: the ratio at one
    size over the ratio at another, each from its own runs): the logs' difference, the
    variances' sum, Welch–Satterthwaite degrees of freedom."""
    a, b = top.se ** 2, bottom.se ** 2
    total = a + b
    denom = a * a / max(top.df, 1) + b * b / max(bottom.df, 1)
    df = total * total / denom if denom > 0 else top.df + bottom.df
    return Combined(top.log_ratio - bottom.log_ratio, math.sqrt(total), df, 0.0, 0.0, 2,
                    False)


def unit_of(est: Interleaved) -> Unit | None:
    """A run's estimate as a unit (None: too few batches for a standard error)."""
    if est.log_se is None or est.batches < 3:
        return None
    return Unit(math.log(est.ratio), est.log_se, est.batches - 1)


def unit_of_row(row: PairRow) -> Unit | None:
    """A filed row as a unit: its ratio, ``log_se`` and ``ci_df`` (None: a row without
    them, filed before 2026-12-06 or without an interval)."""
    e = row.estimate
    if e is None or e.log_se is None or e.ci_df is None or e.ratio <= 0:
        return None
    return Unit(math.log(e.ratio), float(e.log_se), float(e.ci_df))


def _detail(i: int, est: Interleaved | None) -> RunDetail:
    if est is None:
        return RunDetail(run=i, ratio=None, ci_low=None, ci_high=None, blocks=0)
    return RunDetail(run=i, ratio=est.ratio, ci_low=est.ci_low, ci_high=est.ci_high,
                     blocks=est.blocks, rates_by="cpu" if est.by_cpu_time else "wall",
                     disturbed=est.disturbed)


def row_of(runs: Sequence[AlgorithmRun]) -> PairEstimate | None:
    """An algorithm's estimate over its runs, as the record's row files it (None: no
    block had CPU time). One run: its batch-means estimate, as before; several: the pooled blocks'
    estimate (``pooled``), each run's own (``runs_detail``) and, with two or more runs
    that have an interval, their random-effects mean as the row's ratio and interval, its
    block counts the runs' own (each run's slowed blocks judged against its own usual
    rates)."""
    first, *more = runs
    pooled = estimate(first, more)
    if pooled is None:
        return None
    row = pooled.record()
    if not more:
        return row
    each = [estimate(r) for r in runs]
    units = [u for u in (None if e is None else unit_of(e) for e in each) if u is not None]
    row = replace(row, runs_detail=tuple(_detail(i, e) for i, e in enumerate(each, 1)),
                  pooled=PooledRatio(pooled.ratio, pooled.ci_low, pooled.ci_high))
    got = combine(units) if len(units) >= 2 else None
    if got is None:
        return row
    lo, hi = got.ci
    mine = [e for e in each if e is not None]
    # the blocks behind the combination: each run's own kept, slowed and preempted ones
    return replace(row, blocks=sum(e.blocks for e in mine),
                   slowed=sum(e.slowed for e in mine),
                   preempted=sum(e.preempted for e in mine),
                   disturbed=any(e.disturbed for e in mine), ratio=got.ratio, ci_low=lo,
                   ci_high=hi, ci_method=CI_METHOD, log_se=got.se, ci_df=got.df,
                   runs_units=got.k, runs_q=got.q, runs_tau=math.sqrt(got.tau2),
                   runs_disagree=got.disagree)


def projected_half(row: PairRow, runs: int, more: int) -> float | None:
    """A random-effects row's relative half-width after ``more`` further runs: its
    standard error shrinking as one over the square root of the runs (tau²/k included),
    one more degree of freedom a run at least (None: not such a row)."""
    e = row.estimate
    if e is None or e.ci_method != CI_METHOD or e.log_se is None or e.ci_df is None:
        return None
    se, df = e.log_se, e.ci_df
    return math.sinh(t_quantile(df + more) * se * math.sqrt(runs / (runs + more)))
