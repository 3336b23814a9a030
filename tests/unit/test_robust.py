"""The shared-core rules (measure/robust.py) and paired ratios (measure/paired.py).

Samples from ../shared/data/noisy-epyc-2026-12-02 (1.1.1w asm SHA-512 at 8192 bytes, the
clean samples in round order, MB/s: 624.6, 399.2, 358.1, 610.5), as the issue quotes them.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from openssl_matrix.measure.paired import comparisons, usable_samples
from openssl_matrix.measure.robust import (
    below_best,
    median_interval,
    ratio_estimate,
    robust_figure,
)

SHA512 = [624.6e6, 399.2e6, 358.1e6, 610.5e6]


def test_samples_below_the_best_are_flagged_and_left_out() -> None:
    assert below_best(SHA512) == [False, True, True, False]
    fig = robust_figure(SHA512)
    assert fig is not None and fig.low == 2 and fig.kept == 2
    assert fig.best == 624.6e6 and fig.median == pytest.approx((624.6e6 + 610.5e6) / 2)
    assert fig.ci_method == "t95"  # two kept samples: no order-statistic interval at 95 %


def test_order_statistic_interval_needs_six_samples() -> None:
    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) is None
    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) == (1.0, 6.0)
    lo, hi = median_interval([float(v) for v in range(1, 21)]) or (0, 0)
    assert 1 < lo < 10.5 < hi < 20


def test_ratio_estimate_is_multiplicative() -> None:
    e = ratio_estimate([2.0, 2.0, 2.0])
    assert e is not None and e.ratio == pytest.approx(2.0) and e.ci_low == pytest.approx(2.0)
    one = ratio_estimate([3.0])
    assert one is not None and one.ci_low is None and one.pairs == 1


def test_paired_ratios_pair_rounds_and_skip_flagged_samples() -> None:
    def run(variant: str, rnd: int, value: float, status: str = "ok") -> SimpleNamespace:
        return SimpleNamespace(variant=variant, round=rnd, figures=[
            {"invocation": "native--sha512", "algorithm": "sha512", "block_size": 8192,
             "bytes_per_s": value, "status": status}])
    outcomes = [run("3.0.20-asm-x86_64", r, v) for r, v in enumerate(SHA512, 1)]
    outcomes += [run("3.0.20-no-asm-x86_64", r, v / 1.5) for r, v in
                 enumerate([624.6e6, 620e6, 615e6, 610.5e6], 1)]
    outcomes.append(run("3.0.20-no-asm-x86_64", 5, 1.0, "contended"))
    found = comparisons(usable_samples(outcomes))
    assert [c.kind for c in found] == ["asm/no-asm"]
    c = found[0]
    assert c.estimate.pairs == 2  # rounds 2 and 3 of the asm side are shared-core
    assert c.estimate.ratio == pytest.approx(1.5)


def test_a_wide_paired_ratio_gets_a_further_round_of_both_sides() -> None:
    """Three rounds of 1.1.1w asm and no-asm MD5 whose single figures sit within their 5 %
    interval, but whose paired ratio does not come within ±2 %: both sides are measured
    again, in the same round (so the new samples pair), until the attempt limit; a ratio
    already within ±2 % asks nothing. Figures: the noisy EPYC's MD5 in the same rounds
    (575.8, 554.2, 542.9 MB/s) over a steady no-asm side."""
    from openssl_matrix.measure.cell import CellOutcome
    from openssl_matrix.measure.session import follow_ups

    def out(variant: str, rnd: int, value: float) -> CellOutcome:
        return CellOutcome(variant, "complete", round=rnd, figures=[
            {"invocation": "native--md5", "algorithm": "md5", "block_size": 8192,
             "bytes_per_s": value, "status": "ok"}])

    asm, noasm = "1.1.1w-asm-x86_64", "1.1.1w-no-asm-x86_64"
    md5 = [575.8e6, 554.2e6, 560.0e6]
    wide = [out(asm, r, v) for r, v in enumerate(md5, 1)] + \
        [out(noasm, r, 500e6) for r in (1, 2, 3)]
    todo = follow_ups(wide, 3, 0.05, 6)
    assert set(todo) == {asm, noasm}
    assert todo[asm].invocations == ("native--md5",) and "±2%" in todo[asm].why
    assert follow_ups(wide, 3, 0.05, 6, widen=False) == {}  # an explicit --repeat
    steady = [out(asm, r, 575.8e6 * (1 + d)) for r, d in enumerate((0, 0.002, -0.002), 1)] \
        + [out(noasm, r, 500e6) for r in (1, 2, 3)]
    assert follow_ups(steady, 3, 0.05, 6) == {}
    at_limit = wide + [out(noasm, r, 500e6) for r in (4, 5, 6)]
    assert asm not in follow_ups(at_limit, 3, 0.05, 6)  # its partner has no attempt left
