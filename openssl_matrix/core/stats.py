"""The uncertainty of a repeated figure: median, 95 % confidence interval, sample count.

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
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

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
