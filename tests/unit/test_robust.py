"""The shared-core rules (core/stats.py) and paired ratios (measure/paired.py).

Samples from ../shared/data/noisy-epyc-2026-12-02 (1.1.1w asm SHA-512 at 8192 bytes, the
clean samples in round order, MB/s: 624.6, 399.2, 358.1, 610.5), as the issue quotes them.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import pytest

from openssl_matrix.core.stats import (
    MIN_PAIRS,
    below_best,
    compare,
    compare_rounds,
    estimate,
    median_interval,
    order_statistic_coverage,
    ratio_estimate,
    robust_figure,
    session_low,
    shift_rank,
)
from openssl_matrix.measure.paired import comparisons, usable_samples, wide

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


def test_the_median_interval_of_thousands_of_values_does_not_overflow() -> None:
    # 2**n as a float overflows past n = 1023 (an interleaved run has thousands of blocks)
    values = [float(v) for v in range(1, 3001)]
    lo, hi = median_interval(values) or (0.0, 0.0)
    assert 1400 < lo < 1500.5 < hi < 1600


def test_same_round_pairs_give_an_interval_from_six_on() -> None:
    """The rule (docs/noise.md §3): the median ratio of n pairs with the distribution-free
    interval for it, [min, max] covering the median with probability 1 - 2·0.5^n: 96.9 %
    for 6 pairs, 93.8 % for 5, so 6 and more; fewer give no interval, and say so."""
    assert MIN_PAIRS == 6
    assert order_statistic_coverage(MIN_PAIRS) >= 0.95 > order_statistic_coverage(5)
    six = ratio_estimate([1.02, 0.99, 1.00, 1.01, 0.98, 1.03])
    assert six is not None and six.pairs == 6 and six.method == "sign"
    assert (six.ci_low, six.ci_high) == (0.98, 1.03)  # the extreme ratios
    assert six.ratio == pytest.approx(1.005, abs=1e-3) and six.no_interval is None
    assert six.text() == "1.005× ±2.5% (6 pairs)"
    # multiplicative: ratios and their inverses give inverse figures
    inv = ratio_estimate([1 / r for r in (1.02, 0.99, 1.00, 1.01, 0.98, 1.03)])
    assert inv is not None and inv.ci_low == pytest.approx(1 / 1.03)
    assert inv.ratio == pytest.approx(1 / six.ratio)
    # two pairs that agree to 0.01 %: no interval, however narrow a t on them would be
    two = ratio_estimate([2.0, 2.0002])
    assert two is not None and two.ci_low is None and two.ci_high is None
    assert two.relative_half_width is None
    assert two.no_interval == "too few pairs: n=2"
    assert two.text() == "2.000× (too few pairs: n=2)"
    five = ratio_estimate([2.0] * 5)
    assert five is not None and five.ci_low is None and five.no_interval == "too few pairs: n=5"
    assert ratio_estimate([]) is None and ratio_estimate([-1.0, math.nan]) is None


#: The rounds' ratio on record (docs/performance.md, "2026-12-06: the same job on a quieter
#: core"; docs/noise.md §3): 3.0.20 no-asm SHA-1 masked/native ×0.968 [0.966–0.969] from 2
#: pairs, where the interleaved ratio of the same session was 1.002 ±0.5 %. The record
#: keeps the ratio, its interval and the pair count, not the samples: the native ones here
#: are the issue's 3.0.20 no-asm SHA-1 figures (../shared/data/noisy-epyc-2026-12-02), the
#: masked ones are set so that the rule of then gives exactly the recorded interval.
SHA1_NATIVE = {1: 622.5e6, 2: 611.2e6}
SHA1_MASKED = {1: 602.32e6, 2: 591.53e6}


def test_two_agreeing_pairs_give_no_interval_but_the_words() -> None:
    # the rule until 2026-12-06: Student's t on the logs of the two pairs' ratios
    old = estimate([math.log(SHA1_MASKED[r] / SHA1_NATIVE[r]) for r in (1, 2)])
    assert old is not None and old.ci_low is not None and old.ci_high is not None
    assert f"{math.exp(old.mean):.3f} [{math.exp(old.ci_low):.3f}–" \
        f"{math.exp(old.ci_high):.3f}]" == "0.968 [0.966–0.969]"
    # now: 2+2 samples give no two-set interval, 2 pairs no paired one
    e = compare_rounds(SHA1_MASKED, SHA1_NATIVE)
    assert e is not None and e.ci_low is None and e.ci_high is None
    assert e.ratio == pytest.approx(0.968, abs=1e-3) and e.pairs == 2
    assert e.no_interval == "too few pairs: n=2, 2+2 samples"
    assert e.text() == "0.968× (too few pairs: n=2, 2+2 samples)"


def test_six_rounds_a_side_give_the_two_sets_interval() -> None:
    """Six rounds a side are six pairs, but also 6+6 samples, whose Mann–Whitney interval
    is the one used: the pairs' interval can never stand in where the sets have none (6
    pairs need 6 kept samples a side), so compare_rounds never falls back to them."""
    top = {r: v for r, v in enumerate((600e6, 604e6, 598e6, 602e6, 601e6, 603e6), 1)}
    bottom = {r: v / 2 for r, v in top.items()}
    e = compare_rounds(top, bottom)
    assert e is not None and e.method == "mann-whitney" and e.sizes == (6, 6)
    assert e.ci_low is not None and e.ci_high is not None
    assert e.ci_low <= 2.0 <= e.ci_high and e.no_interval is None
    for m in range(1, 9):
        for n in range(1, 9):
            sets = compare([1.0 + i / 1000 for i in range(m)], [1.0 + i / 1000 for i in range(n)])
            assert sets is not None
            if sets.ci_low is None:  # too few samples: then too few pairs as well
                assert min(m, n) < MIN_PAIRS


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
    # rounds 2 and 3 of the asm side are shared-core: 2 samples against the other's 4,
    # too few for the two sets' interval (C(6, 2) = 15 orderings), and 2 same-round pairs
    # too few for theirs (until 2026-12-06 a t interval on those 2 pairs was given here)
    assert c.estimate.method == "mann-whitney" and c.estimate.pairs == 2
    assert c.estimate.ratio == pytest.approx(1.5, rel=0.01)
    assert c.estimate.ci_low is None and c.estimate.ci_high is None
    assert c.estimate.no_interval == "too few pairs: n=2, 2+4 samples"
    # it counts as wider than any target: the bench measures another round of both sides
    assert [w.cells for w in wide(outcomes, 0.5)] == [c.cells]


def test_the_shift_interval_uses_the_mann_whitney_critical_values() -> None:
    """The ranks against the published two-sided 5 % critical values of U (m = n):
    none for 3, 0 for 4, 5 for 6, 13 for 8, 23 for 10 (the interval's rank is U + 1)."""
    assert [shift_rank(n, n) for n in (3, 4, 6, 8, 10)] == [0, 1, 6, 14, 24]
    assert shift_rank(3, 5) == 1 and shift_rank(2, 4) == 0


def test_a_comparison_keeps_every_clean_sample_of_both_sides() -> None:
    """Samples of one side 36-43 % low (the noisy EPYC's SHA-512) are left out; the rest of
    both sides give the ratio and an interval that holds it."""
    top = [624.6e6, 399.2e6, 358.1e6, 610.5e6, 620.0e6, 615.0e6]
    bottom = [v / 2 for v in (600e6, 605e6, 598e6, 610e6, 380e6, 603e6)]
    e = compare(top, bottom)
    assert e is not None and e.sizes == (4, 5)
    assert e.ci_low is not None and e.ci_high is not None
    assert e.ci_low <= e.ratio <= e.ci_high
    assert e.ci_low > 1.98 and e.ci_high < 2.1
    assert compare([], bottom) is None


def test_a_wide_paired_ratio_gets_a_further_round_of_both_sides() -> None:
    """Three rounds of 1.1.1w asm and no-asm MD5 whose single figures sit within their 5 %
    interval, but whose paired ratio does not come within ±2 % (three samples a side give
    no 95 % interval at all): both sides are measured again, in the same round, until the
    attempt limit; a ratio already within ±2 % asks nothing. Figures: the noisy EPYC's
    MD5 in the same rounds (575.8, 554.2, 542.9 MB/s) over a steady no-asm side."""
    from openssl_matrix.measure.benchfigure import bench_figures
    from openssl_matrix.measure.cell import CellOutcome
    from openssl_matrix.measure.session import follow_ups

    def out(variant: str, rnd: int, value: float) -> CellOutcome:
        return CellOutcome(variant, "complete", round=rnd, figures=bench_figures([
            {"invocation": "native--md5", "algorithm": "md5", "block_size": 8192,
             "bytes_per_s": value, "status": "ok"}]))

    asm, noasm = "1.1.1w-asm-x86_64", "1.1.1w-no-asm-x86_64"
    md5 = [575.8e6, 554.2e6, 560.0e6]
    wide = [out(asm, r, v) for r, v in enumerate(md5, 1)] + \
        [out(noasm, r, 500e6) for r in (1, 2, 3)]
    todo = follow_ups(wide, 3, 0.05, 6)
    assert set(todo) == {asm, noasm}
    assert todo[asm].invocations == ("native--md5",) and "±2%" in todo[asm].why
    assert follow_ups(wide, 3, 0.05, 6, widen=False) == {}  # an explicit --repeat
    steady = [out(asm, r, 575.8e6 * (1 + d))
              for r, d in enumerate((0, 0.002, -0.002, 0.001), 1)] \
        + [out(noasm, r, 500e6) for r in (1, 2, 3, 4)]
    assert follow_ups(steady, 3, 0.05, 6) == {}
    at_limit = wide + [out(noasm, r, 500e6) for r in (4, 5, 6)]
    assert asm not in follow_ups(at_limit, 3, 0.05, 6)  # its partner has no attempt left


def test_the_release_view_shows_a_release_against_the_first_as_a_comparison() -> None:
    """The library section's ratio to the first release carries the comparison's
    interval once both cells have samples enough (4 + 4 at 95 %), and a sample 40 % low
    (a shared core) does not move it."""
    from openssl_matrix.report.library import LibTable

    def obs(v: float) -> Any:
        return SimpleNamespace(value=v, usable=True)
    t = LibTable("epyc", "x86_64", 1, rows=["sha256-16"], columns=["1.1.1w", "3.0.20"])
    t.cells[("sha256-16", "1.1.1w")] = [obs(v) for v in (100.0, 101.0, 99.5, 100.5)]
    t.cells[("sha256-16", "3.0.20")] = [obs(v) for v in (50.0, 50.5, 49.8, 30.0, 50.2)]
    e = t.comparison("sha256-16", "3.0.20")
    assert e is not None and e.sizes == (4, 4)
    assert e.ci_low is not None and e.ci_high is not None
    assert 0.49 < e.ci_low <= e.ratio <= e.ci_high < 0.51
    assert t.comparison("sha256-16", "1.1.1w") is None  # the first column is the base
    t.cells[("sha256-16", "3.0.20")] = [obs(50.0)]
    assert t.comparison("sha256-16", "3.0.20") is None  # too few samples for 95 %


def test_a_session_sits_low_against_history_and_the_model() -> None:
    earlier = [[600.0, 610.0, 605.0], [612.0, 560.0]]
    assert session_low([550.0, 552.0, 549.0], earlier) is not None  # 10 % below 612
    assert session_low([600.0, 590.0], earlier) is None  # within 5 %
    assert session_low([550.0], []) is None  # nothing earlier
    # the CPU model's figure for the core says 555 is what it does: not low
    assert session_low([550.0, 552.0], earlier, model=560.0) is None
    # 552 is 14 % below 640: within the model's own tolerance (15 %), so not low by it
    assert session_low([550.0, 552.0], earlier, model=640.0) is None
    text = session_low([550.0, 552.0], earlier, model=700.0)
    assert text is not None and "21% below the CPU model's figure" in text
