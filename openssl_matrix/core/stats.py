"""The statistics every layer shares, pure arithmetic: the uncertainty of a repeated
figure (median, 95 % confidence interval, sample count) and the shared-core rules (a
cell's best sample, its figure, a comparison of two cells as a ratio with its interval).
The bench (measure), the report, a reproduction's judge and the release sweep all take
them from here, so none of them imports another for a median or a ratio; what the bench
plans from them (how narrow a comparison is measured, how many attempts) stays in
``measure/robust.py``.

The uncertainty of a repeated figure
------------------------------------

The reported figure is the median of the clean samples (contended ones never count). Its
interval is Student's t-interval for the mean, ``mean ± t(0.975, n-1) · s / √n``:

* with 3 to 10 samples a distribution-free interval for the median (order statistics)
  cannot reach 95 %: the widest one, [min, max], covers the median with probability
  1 - 2·0.5^n: 75 % for n = 3, 87.5 % for 4, 93.8 % for 5, 96.9 % only from n = 6. It
  would either claim less than 95 % or need twice the rounds;
* the t-interval has its nominal 95 % when the samples are roughly normal, which clean
  repetitions of one ``openssl speed`` run are (a CPU-bound loop; the one-sided slow
  tails come from contention, and those samples are removed before this is computed);
  for n = 3 its factor t = 4.30 makes it wide rather than optimistic.

``median ± half_width`` is how tables print it; ``ci_low``/``ci_high`` go to the export.

Figures that hold on a host whose noise the guest cannot see (a shared physical core)
--------------------------------------------------------------------------------------

On a cloud VM whose vCPU is one hardware thread of a core shared with another guest, a
throughput-bound ``openssl speed`` run can come out up to ~40 % low while every counter
the guest has (its own share of the CPU, the other cores, steal, the add-chain clock) says
the run was clean. Such a disturbance only ever makes a run slower: nothing lets a loop run
faster than the core allows. So the best sample of a cell is its least disturbed estimate
(the minimum-time estimator of Chen & Revels, "Robust benchmarking in noisy environments",
2016), and a sample well below it was disturbed by something the guest could not see.

The rules, for figures where higher is better (bytes/s at a block size):

* **below the best** — a clean sample more than :data:`LOW_TOLERANCE` (5 %) below the best
  sample of its cell in the bench session is ``shared-core``: kept in the records, left out
  of the median, and measured again (like ``contended``);
* **the figure** a table shows is the median of the samples within 5 % of the best, with
  the best beside it; its interval is the distribution-free one for the median (order
  statistics) where there are enough samples for 95 %, else Student's t on those samples;
* **a comparison** (asm against no-asm, a mask against native, one release against
  another) is measured in alternation: every round runs both sides, a few seconds apart,
  so whatever drifts over minutes touches both alike. Its figure is the ratio of the two
  sides' samples within 5 % of their best, as the Hodges–Lehmann estimate (the median of
  every ratio of a sample of one side to a sample of the other) with the
  distribution-free 95 % interval of the Mann–Whitney test (:func:`compare`). It keeps
  every clean sample of each side, where ratios of same-round pairs lose a pair whenever
  either side was flagged (1–5 pairs after six rounds on the noisy EPYC VM, too few for
  any interval), and it assumes no shape for the noise;
* **same-round pairs** (where the two sets are too small for that interval, and wherever
  a caller has only pairs: a bisection's rounds, a trend of rounds): the median of the
  pairs' ratios with the distribution-free interval for it, the order statistics of the
  ratios (the sign test's interval, :func:`median_interval`), which reaches 95 % from
  :data:`MIN_PAIRS` (6) pairs on; with fewer there is **no interval** ("too few pairs:
  n=2"), never Student's t on a handful of pairs: the disturbance is one-sided and comes
  and goes, not normal, and two pairs that happen to agree gave a t interval on one
  degree of freedom as narrow as ±0.1 % that missed (3.0.20 no-asm SHA-1 masked/native
  ×0.968 [0.966–0.969] from 2 pairs against 1.002 ±0.5 % interleaved in the same
  session, docs/performance.md, 2026-12-06);
* **a verdict** uses the comparison's interval, and a ratio without one decides nothing.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

#: Method name written beside every interval (export ``ci_method``).
CI_METHOD = "t95"

#: Two-sided 95 % quantiles of Student's t for 1..30 degrees of freedom.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(df: int) -> float:
    """Student's t quantile for a two-sided 95 % interval with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError("a t-interval needs at least two samples")
    return _T975[df - 1] if df <= len(_T975) else 1.96


@dataclass(frozen=True)
class Estimate:
    """A repeated figure: its median and 95 % interval over ``n`` clean samples."""

    n: int
    median: float
    mean: float
    min: float
    max: float
    ci_low: float | None
    ci_high: float | None
    """None with fewer than two samples: no interval can be given."""

    @property
    def half_width(self) -> float | None:
        if self.ci_low is None or self.ci_high is None:
            return None
        return (self.ci_high - self.ci_low) / 2

    @property
    def relative_half_width(self) -> float | None:
        hw = self.half_width
        return None if hw is None or self.median <= 0 else hw / self.median

    def text(self, scale: float = 1.0, fmt: str = "{:,.1f}") -> str:
        """``median ± half-width (n)``, values divided by ``scale``."""
        hw = self.half_width
        body = fmt.format(self.median / scale)
        body += f" ± {fmt.format(hw / scale)}" if hw is not None else " (one sample)"
        return f"{body} (n={self.n})"


def estimate(values: Sequence[float]) -> Estimate | None:
    """Median and 95 % t-interval of ``values`` (None if there are none)."""
    vals = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    if not vals:
        return None
    mean = statistics.fmean(vals)
    low = high = None
    if len(vals) >= 2:
        # the sample standard deviation in floats (statistics.stdev computes it in exact
        # fractions: ~0.4 ms a call, seconds for a report of thousands of sessions)
        sd = math.sqrt(math.fsum((v - mean) ** 2 for v in vals) / (len(vals) - 1))
        half = t975(len(vals) - 1) * sd / math.sqrt(len(vals))
        low, high = mean - half, mean + half
    return Estimate(n=len(vals), median=statistics.median(vals), mean=mean, min=min(vals),
                    max=max(vals), ci_low=low, ci_high=high)


def order_statistic_coverage(n: int) -> float:
    """Coverage of [min, max] as an interval for the median of ``n`` samples."""
    return 1 - 2 * 0.5 ** n


#: How far a figure may be from the CPU model's (measure/cpumodel.py) and still count as
#: explained by it.
MODEL_TOLERANCE = 0.15
#: A clean sample this far below its cell's best is taken as disturbed (``shared-core``).
LOW_TOLERANCE = 0.05
#: Coverage asked of every interval.
LEVEL = 0.95


def below_best(values: Sequence[float], tolerance: float = LOW_TOLERANCE) -> list[bool]:
    """For each of ``values`` (higher is better), whether it lies more than ``tolerance``
    below the best of them."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return [False] * len(values)
    floor = max(finite) * (1 - tolerance)
    return [math.isfinite(v) and v < floor for v in values]


def median_interval(values: Sequence[float], level: float = LEVEL,
                    ) -> tuple[float, float] | None:
    """The distribution-free interval for the median: the order statistics
    ``[x(k), x(n+1-k)]`` with the largest ``k`` whose coverage ``1 - 2·P(X < k)``
    (X binomial, n, ½) is at least ``level``; None when even ``[min, max]`` covers less
    (fewer than 6 samples at 95 %)."""
    vals = sorted(float(v) for v in values if math.isfinite(v))
    n = len(vals)
    best_k = 0
    below, term = 0, 1  # P(X < k)·2**n and C(n, k - 1), kept exact and updated per k
    for k in range(1, n // 2 + 1):
        below += term
        term = term * (n - k + 1) // k
        if 1 - 2 * float(Fraction(below, 1 << n)) >= level:
            best_k = k
        else:
            break
    if best_k == 0:
        return None
    return vals[best_k - 1], vals[n - best_k]


@dataclass(frozen=True)
class RobustFigure:
    """A cell's figure by the rules above."""

    n: int  #: clean samples measured
    kept: int  #: of those, within the tolerance of the best
    low: int  #: of those, more than the tolerance below the best (``shared-core``)
    best: float
    median: float  #: median of the kept samples
    ci_low: float | None
    ci_high: float | None
    ci_method: str  #: "order" (distribution-free) or "t95" (Student's t), "" for none

    @property
    def relative_half_width(self) -> float | None:
        if self.ci_low is None or self.ci_high is None or self.median <= 0:
            return None
        return (self.ci_high - self.ci_low) / 2 / self.median


def robust_figure(values: Sequence[float], tolerance: float = LOW_TOLERANCE,
                  ) -> RobustFigure | None:
    """The figure of a cell from its clean samples (None without one)."""
    vals = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    if not vals:
        return None
    flags = below_best(vals, tolerance)
    kept = [v for v, low in zip(vals, flags, strict=True) if not low]
    lo: float | None = None
    hi: float | None = None
    method = ""
    order = median_interval(kept)
    if order is not None:
        lo, hi = order
        method = "order"
    elif (t := estimate(kept)) is not None and t.ci_low is not None:
        lo, hi, method = t.ci_low, t.ci_high, CI_METHOD
    return RobustFigure(n=len(vals), kept=len(kept), low=len(vals) - len(kept),
                        best=max(vals), median=float(statistics.median(kept)), ci_low=lo,
                        ci_high=hi, ci_method=method)


#: The fewest same-round pairs whose ratios give an interval (:func:`ratio_estimate`): the
#: extreme ratios of n pairs cover their median with probability 1 - 2·0.5^n, 96.9 % for
#: n = 6 and 93.8 % for 5, so from 6 pairs on (:func:`median_interval` at :data:`LEVEL`).
MIN_PAIRS = 6
#: ``ci_method`` of an interval from same-round pairs (the sign test's order statistics).
PAIRS_METHOD = "sign"
#: ``ci_method`` of an interval from two sets of samples (Mann–Whitney).
SETS_METHOD = "mann-whitney"


@dataclass(frozen=True)
class RatioEstimate:
    """A comparison's ratio and its 95 % interval (None: too few pairs or samples)."""

    pairs: int
    ratio: float
    ci_low: float | None
    ci_high: float | None

    @property
    def interval(self) -> tuple[float, float] | None:
        """``(ci_low, ci_high)``, or None without an interval."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return self.ci_low, self.ci_high

    @property
    def relative_half_width(self) -> float | None:
        """Half the interval's width over the ratio (the ±x % a table prints)."""
        if (interval := self.interval) is None:
            return None
        return (interval[1] - interval[0]) / 2 / self.ratio

    #: how the interval was found: :data:`PAIRS_METHOD` (same-round pairs),
    #: :data:`SETS_METHOD` (two sets) or a caller's own (a bisection's "interleaved")
    method: str = PAIRS_METHOD
    #: samples of each side the estimate used (two sets; 0 for pairs)
    sizes: tuple[int, int] = (0, 0)

    @property
    def basis(self) -> str:
        """What the estimate stands on, in words: "5+6 samples" or "3 pairs"."""
        if self.method == SETS_METHOD:
            return f"{self.sizes[0]}+{self.sizes[1]} samples"
        return f"{self.pairs} pair{'s' if self.pairs != 1 else ''}"

    @property
    def no_interval(self) -> str | None:
        """Why there is no interval, in words ("too few pairs: n=2"); None with one. Every
        place that shows a ratio without an interval says this, never a bare ratio."""
        if self.interval is not None:
            return None
        if self.method == SETS_METHOD and not self.pairs:
            return f"too few samples: {self.sizes[0]}+{self.sizes[1]}"
        if self.method == SETS_METHOD:  # compare_rounds: neither sets nor pairs allow one
            return f"too few pairs: n={self.pairs}, {self.sizes[0]}+{self.sizes[1]} samples"
        return f"too few pairs: n={self.pairs}"

    def text(self) -> str:
        """``1.234× ±0.8 % (5+6 samples)``, or ``0.968× (too few pairs: n=2)``."""
        rhw = self.relative_half_width
        if rhw is None:
            return f"{self.ratio:.3f}× ({self.no_interval})"
        return f"{self.ratio:.3f}× ±{rhw:.1%} ({self.basis})"


def ratio_estimate(ratios: Sequence[float], level: float = LEVEL) -> RatioEstimate | None:
    """Same-round pairs' positive ``ratios`` as a comparison: their median with the
    distribution-free ``level`` interval for it (the order statistics of the ratios,
    :func:`median_interval`), which needs :data:`MIN_PAIRS` pairs at 95 %; with fewer the
    median and no interval. None without a ratio.

    Why not the geometric mean with Student's t on the logs (the rule until 2026-12-06):
    the t interval assumes normal noise, and a shared core's is one-sided and bursty, so
    on 2–5 pairs it is as narrow as the pairs happen to agree (see the module's text)."""
    vals = sorted(float(r) for r in ratios if isinstance(r, (int, float)) and r > 0
                  and math.isfinite(r))
    if not vals:
        return None
    mid = math.exp(statistics.median(math.log(v) for v in vals))
    interval = median_interval(vals, level)
    lo, hi = interval if interval is not None else (None, None)
    return RatioEstimate(len(vals), mid, lo, hi, method=PAIRS_METHOD)


def paired(numerator: dict[int, float], denominator: dict[int, float]) -> list[float]:
    """Ratios of samples of one round (round number → sample), rounds both sides have."""
    return [numerator[r] / denominator[r] for r in sorted(numerator)
            if r in denominator and denominator[r] > 0]


@functools.lru_cache(maxsize=256)
def _mann_whitney_counts(m: int, n: int) -> tuple[int, ...]:
    """How many of the C(m+n, m) orderings of two samples give each value of the
    Mann–Whitney U statistic (0 … m·n), no ties: the coefficients of the Gaussian
    binomial coefficient, by the recurrence on the largest observation."""
    # row[j][u]: orderings of i samples of one side and j of the other with U = u
    rows = [[1] for _ in range(n + 1)]  # i = 0: U is 0 whatever j
    for i in range(1, m + 1):
        new: list[list[int]] = [[1]]  # j = 0: U is 0
        for j in range(1, n + 1):
            # the largest observation belongs to the first side (adds j to U) or the other
            a, b = rows[j], new[j - 1]
            width = i * j + 1
            row = [0] * width
            for u, c in enumerate(a):
                row[u + j] += c
            for u, c in enumerate(b):
                row[u] += c
            new.append(row)
        rows = new
    return tuple(rows[n])


def shift_rank(m: int, n: int, level: float = LEVEL) -> int:
    """The rank ``k`` (1-based) of the differences that bound the distribution-free
    interval for a shift between samples of ``m`` and ``n``: the largest ``k`` with
    ``1 - 2·P(U ≤ k-1) ≥ level``; 0 when even the extreme differences cover less
    (m = n = 3 at 95 %: C(6, 3) = 20 orderings are too few)."""
    if m < 1 or n < 1:
        return 0
    counts = _mann_whitney_counts(m, n)
    total = math.comb(m + n, m)
    cum = 0
    k = 0
    for u, c in enumerate(counts):
        cum += c
        if 1 - 2 * cum / total >= level:
            k = u + 1
        else:
            break
    return k


def compare(numerator: Sequence[float], denominator: Sequence[float],
            tolerance: float = LOW_TOLERANCE, level: float = LEVEL) -> RatioEstimate | None:
    """A comparison of two cells from their clean samples (higher is better): each side's
    samples more than ``tolerance`` below its best left out (a shared core), then the
    Hodges–Lehmann ratio and its distribution-free ``level`` interval (Mann–Whitney) on
    the logarithms. None without a positive sample on both sides."""
    a = list(_kept(dict(enumerate(numerator)), tolerance).values())
    b = list(_kept(dict(enumerate(denominator)), tolerance).values())
    if not a or not b:
        return None
    diffs = sorted(math.log(x) - math.log(y) for x in a for y in b)
    mid = statistics.median(diffs)
    k = shift_rank(len(a), len(b), level)
    lo = hi = None
    if k:
        lo, hi = math.exp(diffs[k - 1]), math.exp(diffs[len(diffs) - k])
    return RatioEstimate(pairs=0, ratio=math.exp(mid), ci_low=lo, ci_high=hi,
                         method=SETS_METHOD, sizes=(len(a), len(b)))


def session_low(session: Sequence[float], earlier: Sequence[Sequence[float]],
                model: float | None = None, tolerance: float = LOW_TOLERANCE,
                model_tolerance: float = MODEL_TOLERANCE) -> str | None:
    """Whether a whole bench session of one cell sits low (higher is better), in words.

    A sibling busy for a whole session slows every sample alike, which no spread within
    the session shows. The session sits low when its best sample is more than
    ``tolerance`` below the best of earlier sessions of the same cell on this host (each
    of ``earlier``: one session's clean samples), and more than ``model_tolerance`` below
    ``model`` — the CPU model's figure for this core at the run's clock, where it has one
    (the model's own tolerance: it explains a figure within 15 %, cpumodel.py). None when
    it does not (or there is nothing earlier to set it against)."""
    now = [v for v in session if math.isfinite(v) and v > 0]
    before = [max(s) for s in earlier if s and max(s) > 0]
    if not now or not before:
        return None
    best, ref = max(now), max(before)
    if best >= ref * (1 - tolerance):
        return None
    text = (f"the whole session sits low: its best sample is {1 - best / ref:.0%} below the "
            f"best of {len(before)} earlier session(s) of this cell on this host")
    if model is not None and model > 0:
        if best >= model * (1 - model_tolerance):
            return None  # the CPU model's figure says this session is as fast as the core
        text += f" and {1 - best / model:.0%} below the CPU model's figure"
    return text + " (a core shared for the whole session?)"


def compare_rounds(numerator: Mapping[int, float], denominator: Mapping[int, float],
                   ) -> RatioEstimate | None:
    """:func:`compare` of two cells' samples by round (round → sample). Where the two sets
    are too small for its interval (fewer than 4 kept samples a side), the same-round
    pairs cannot give one either: :data:`MIN_PAIRS` pairs need as many kept samples a
    side, which give the two sets' interval. So the estimate then has no interval and
    counts the pairs of kept samples, and says "too few pairs: n=2, 2+3 samples"
    (:attr:`RatioEstimate.no_interval`); until 2026-12-06 Student's t on the logs of as
    few as two pairs stood in here."""
    est = compare(list(numerator.values()), list(denominator.values()))
    if est is None or est.ci_low is not None:
        return est
    return replace(est, pairs=len(paired(_kept(numerator), _kept(denominator))))


def _kept(samples: Mapping[int, float], tolerance: float = LOW_TOLERANCE,
          ) -> dict[int, float]:
    """The samples (by place or round) a comparison keeps: positive and finite, and not
    more than ``tolerance`` below the best of them (a shared core), in their order."""
    ok = {k: float(v) for k, v in samples.items()
          if isinstance(v, (int, float)) and v > 0 and math.isfinite(v)}
    flags = below_best(list(ok.values()), tolerance)
    return {k: v for (k, v), low in zip(ok.items(), flags, strict=True) if not low}
