"""Figures that hold on a host whose noise the guest cannot see (a shared physical core).

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
  another) is the ratio of samples measured in the same round, pairs where either side was
  flagged left out, summarised as the geometric mean of the pair ratios with a 95 %
  t-interval on their logarithms (:func:`ratio_estimate`): a ratio's errors multiply;
* **a verdict** uses the comparison's interval.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from openssl_matrix.core.stats import CI_METHOD, estimate

#: A clean sample this far below its cell's best is taken as disturbed (``shared-core``).
LOW_TOLERANCE = 0.05
#: Coverage asked of every interval.
LEVEL = 0.95
#: The half-width (relative) a paired ratio's interval is measured down to: a comparison
#: wider than this gets further rounds of both sides, up to the attempt limit.
PAIRED_TARGET = 0.02


def below_best(values: Sequence[float], tolerance: float = LOW_TOLERANCE) -> list[bool]:
    """For each of ``values`` (higher is better), whether it lies more than ``tolerance``
    below the best of them."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return [False] * len(values)
    floor = max(finite) * (1 - tolerance)
    return [math.isfinite(v) and v < floor for v in values]


def _binom_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / math.ldexp(1.0, n)


def median_interval(values: Sequence[float], level: float = LEVEL,
                    ) -> tuple[float, float] | None:
    """The distribution-free interval for the median: the order statistics
    ``[x(k), x(n+1-k)]`` with the largest ``k`` whose coverage ``1 - 2·P(X < k)``
    (X binomial, n, ½) is at least ``level``; None when even ``[min, max]`` covers less
    (fewer than 6 samples at 95 %)."""
    vals = sorted(float(v) for v in values if math.isfinite(v))
    n = len(vals)
    best_k = 0
    for k in range(1, n // 2 + 1):
        if 1 - 2 * _binom_cdf(k - 1, n) >= level:
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


@dataclass(frozen=True)
class RatioEstimate:
    """A paired comparison: the geometric mean of pair ratios and its 95 % interval."""

    pairs: int
    ratio: float
    ci_low: float | None
    ci_high: float | None

    @property
    def relative_half_width(self) -> float | None:
        """Half the interval's width over the ratio (the ±x % a table prints)."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return (self.ci_high - self.ci_low) / 2 / self.ratio

    def text(self) -> str:
        rhw = self.relative_half_width
        body = f"{self.ratio:.3f}×"
        body += f" ±{rhw:.1%}" if rhw is not None else " (one pair)"
        return f"{body} ({self.pairs} pair{'s' if self.pairs != 1 else ''})"


def ratio_estimate(ratios: Sequence[float]) -> RatioEstimate | None:
    """Geometric mean of positive ``ratios`` with a 95 % t-interval on their logs."""
    logs = [math.log(r) for r in ratios if isinstance(r, (int, float)) and r > 0
            and math.isfinite(r)]
    if not logs:
        return None
    e = estimate(logs)  # the t-interval of the logs' mean, exponentiated
    assert e is not None
    return RatioEstimate(e.n, math.exp(e.mean),
                         None if e.ci_low is None else math.exp(e.ci_low),
                         None if e.ci_high is None else math.exp(e.ci_high))


def paired(numerator: dict[int, float], denominator: dict[int, float]) -> list[float]:
    """Ratios of samples of one round (round number → sample), rounds both sides have."""
    return [numerator[r] / denominator[r] for r in sorted(numerator)
            if r in denominator and denominator[r] > 0]
