"""Release bisection's decisions (openssl_matrix/sweep/bisect.py) against scripted samples.

The samples are made up for the logic under test: a true figure per release times a
uniform noise factor from a seeded generator. ±3 % is above the bench's measured
repeatability here (docs/performance.md, row 5: median coefficient of variation 1.7 %
over 48 cells at 8192 bytes), so the noise is on the hard side of realistic.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence

import pytest

from openssl_matrix.core.stats import MIN_PAIRS, ratio_estimate
from openssl_matrix.matrix.releases import load_catalogue
from openssl_matrix.sweep.bisect import (
    INCOMPLETE,
    LIKE_BAD,
    LIKE_GOOD,
    LIKE_NEITHER,
    MAX_ROUNDS,
    MOVED,
    NO_MOVE,
    ROUNDS,
    SKIPPED,
    UNDECIDED,
    Cell,
    Unmeasurable,
    _ratio_dict,
    bisect,
    classify,
    decide,
    exit_code,
    judge,
    pair_ratio,
    parse_cell,
    releases_between,
    summary,
)

CATALOGUE = [r.version for r in load_catalogue().releases]
#: 3.0.10 … 3.0.17 as the catalogue has them (good first)
RANGE = releases_between(CATALOGUE, "3.0.10", "3.0.17")
BASE = 1_000_000_000.0  # bytes/s


class Scripted:
    """A ``measure`` callback: each release's true figure times uniform ±noise; counts
    how many rounds measured each release."""

    def __init__(self, truth: Callable[[str], float], *, seed: int = 1,
                 noise: float = 0.03, noisy: Mapping[str, float] | None = None,
                 broken: Mapping[str, str] | None = None) -> None:
        self.truth = truth
        self.rng = random.Random(seed)
        self.noise = noise
        self.noisy = dict(noisy or {})
        self.broken = dict(broken or {})
        self.count: dict[str, int] = {}

    def __call__(self, releases: Sequence[str], rounds: int) -> list[dict[str, float | None]]:
        for r in releases:
            if r in self.broken:
                raise Unmeasurable(r, self.broken[r])
        out = []
        for _ in range(rounds):
            row: dict[str, float | None] = {}
            for r in releases:
                n = self.noisy.get(r, self.noise)
                row[r] = self.truth(r) * (1 + self.rng.uniform(-n, n))
                self.count[r] = self.count.get(r, 0) + 1
            out.append(row)
        return out


def step_at(first_bad: str, after: float = 0.70) -> Callable[[str], float]:
    i = RANGE.index(first_bad)
    return lambda r: BASE * (after if RANGE.index(r) >= i else 1.0)


def test_range_follows_the_catalogue_either_way() -> None:
    assert RANGE[0] == "3.0.10" and RANGE[-1] == "3.0.17"
    assert [v for v in CATALOGUE if v.startswith("3.0.")][10:18] == RANGE
    assert releases_between(CATALOGUE, "3.0.17", "3.0.10") == RANGE[::-1]
    with pytest.raises(ValueError, match="not in the release catalogue"):
        releases_between(CATALOGUE, "3.0.10", "9.9.9")
    with pytest.raises(ValueError, match="same release"):
        releases_between(CATALOGUE, "3.0.10", "3.0.10")


@pytest.mark.parametrize("first_bad", ["3.0.11", "3.0.13", "3.0.14", "3.0.17"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_step_from_1_00_to_0_70_is_found_at_its_pair(first_bad: str, seed: int) -> None:
    measure = Scripted(step_at(first_bad), seed=seed)
    b = bisect(RANGE, measure)
    assert b.status == MOVED
    assert len(b.moves) == 1
    m = b.moves[0]
    i = RANGE.index(first_bad)
    assert (m.before, m.after) == (RANGE[i - 1], first_bad)
    assert m.ratio is not None and m.ratio.ci_low is not None and m.ratio.ci_high is not None
    # the median of the pairs' ratios and its distribution-free interval: at the move
    assert m.ratio.ci_low < 0.71 and m.ratio.ci_high > 0.69 and m.ratio.method == "sign"
    assert m.before_figure is not None and m.after_figure is not None
    assert m.after_figure.median < 0.75 * m.before_figure.median
    # binary search: at most ceil(log2(7)) = 3 steps over 6 inner releases, each decided
    assert 1 <= len(b.steps) <= 3
    assert all(s.decision in (LIKE_GOOD, LIKE_BAD) for s in b.steps)
    # a decided step measures one batch of 6, or two where ±3 % noise left some of a
    # side's samples more than 5 % below its best, and fewer than 6 pairs (stats.MIN_PAIRS)
    assert ROUNDS == MIN_PAIRS == 6
    assert all(s.rounds in (ROUNDS, 2 * ROUNDS) for s in b.steps)


def test_every_step_is_judged_against_both_ends_of_its_range() -> None:
    b = bisect(RANGE, Scripted(step_at("3.0.15")))
    first = b.steps[0]
    assert (first.good, first.bad) == ("3.0.10", "3.0.17")
    for s in b.steps:
        assert s.vs_good is not None and s.vs_bad is not None
        # pairs from every round with both (a disturbed sample leaves its pair out)
        assert s.vs_good.pairs >= 3 and s.vs_bad.pairs >= 3
    # after a like-good step the next range starts there
    for prev, nxt in zip(b.steps, b.steps[1:], strict=False):
        if prev.decision == LIKE_GOOD:
            assert nxt.good == prev.release
        else:
            assert nxt.bad == prev.release


def test_no_move_says_so_after_the_most_rounds() -> None:
    measure = Scripted(lambda r: BASE)
    b = bisect(RANGE, measure)
    assert b.status == NO_MOVE
    assert b.steps == [] and b.moves == []
    assert measure.count == {"3.0.10": MAX_ROUNDS, "3.0.17": MAX_ROUNDS}
    assert "no step larger than the interval" in summary(b)[0]


def test_ends_without_a_usable_pair_are_incomplete_not_no_move() -> None:
    """A busy host flagged every sample (the bench leaves a disturbed sample out: None);
    as happened here on 2026-12-06, 3.0.17 → 3.0.22, 15 rounds, one usable sample."""
    def disturbed(releases: Sequence[str], n: int) -> list[dict[str, float | None]]:
        return [{r: None for r in releases} for _ in range(n)]

    b = bisect(RANGE, disturbed)
    assert b.status == INCOMPLETE and b.status != NO_MOVE
    (move,) = b.moves
    assert (move.before, move.after, move.found) == (RANGE[0], RANGE[-1], False)
    assert "0 usable pair(s)" in move.why and "disturbed" in move.why
    assert "no step" not in summary(b)[0]


def test_a_figure_that_moved_twice_is_reported_as_two_moves() -> None:
    # 1.00 up to 3.0.12, 0.85 from 3.0.13, 0.70 from 3.0.16
    def truth(r: str) -> float:
        i = RANGE.index(r)
        return BASE * (1.0 if i < 3 else 0.85 if i < 6 else 0.70)

    b = bisect(RANGE, Scripted(truth))
    assert b.status == MOVED
    assert [(m.before, m.after) for m in b.moves] == [("3.0.12", "3.0.13"),
                                                       ("3.0.15", "3.0.16")]
    assert any(s.decision == LIKE_NEITHER for s in b.steps)
    neither = next(s for s in b.steps if s.decision == LIKE_NEITHER)
    assert neither.rounds == 2 * ROUNDS  # confirmed by a second batch before it is split


def test_a_step_the_rounds_cannot_place_is_undecided_not_guessed() -> None:
    # a 4 % move (1.00 → 0.96 from 3.0.14) under ±3 % noise, 3.0.13 halfway (0.98):
    # after the most rounds its intervals against both ends still reach the band
    def truth(r: str) -> float:
        i = RANGE.index(r)
        return BASE * (1.0 if i < 3 else math.sqrt(0.96) if i == 3 else 0.96)

    measure = Scripted(truth, seed=3)
    b = bisect(RANGE, measure)
    assert b.status == INCOMPLETE
    assert b.ends is not None and b.ends.ci_high is not None and b.ends.ci_high < 0.99
    (stuck,) = b.steps
    assert (stuck.release, stuck.decision) == ("3.0.13", UNDECIDED)
    assert stuck.rounds == MAX_ROUNDS == 18  # more rounds asked, up to the limit, no more
    assert measure.count["3.0.13"] == MAX_ROUNDS
    (m,) = b.moves
    assert not m.found and "undecided at 3.0.13 after 18 rounds" in m.why
    assert (m.before, m.after) == ("3.0.10", "3.0.17")
    assert exit_code(stuck.decision) == 125


def test_an_unmeasurable_release_is_skipped_and_its_neighbour_tried() -> None:
    measure = Scripted(step_at("3.0.16"), broken={"3.0.13": "the build failed: no compiler"})
    b = bisect(RANGE, measure)
    assert (b.steps[0].release, b.steps[0].decision) == ("3.0.13", SKIPPED)
    assert b.steps[0].reason == "the build failed: no compiler"
    assert b.steps[1].release == "3.0.14"  # the nearest release to the middle left
    assert b.status == MOVED
    assert [(m.before, m.after) for m in b.moves] == [("3.0.15", "3.0.16")]


def test_a_skipped_release_at_the_move_leaves_the_range_unnarrowed_with_its_reason() -> None:
    measure = Scripted(step_at("3.0.14"), broken={"3.0.14": "cannot run the cell"})
    b = bisect(RANGE, measure)
    assert b.status == INCOMPLETE
    (m,) = b.moves
    assert (m.before, m.after, m.found) == ("3.0.13", "3.0.15", False)
    assert "3.0.14 skipped: cannot run the cell" in m.why


def test_classify_reads_both_intervals() -> None:
    near = ratio_estimate([0.99, 1.0, 1.01, 1.0, 0.995, 1.005])
    far = ratio_estimate([0.70, 0.71, 0.69, 0.70, 0.705, 0.695])
    up = ratio_estimate([1.42, 1.43, 1.44, 1.43, 1.425, 1.435])
    wide = ratio_estimate([0.5, 1.5, 0.8, 1.2, 0.9, 1.1])
    few = ratio_estimate([0.70, 0.70])  # two pairs that agree: too few for an interval
    assert few is not None and few.no_interval == "too few pairs: n=2"
    assert classify(near, up) == LIKE_GOOD
    assert classify(far, near) == LIKE_BAD
    assert classify(far, up) == LIKE_NEITHER
    assert classify(wide, wide) == UNDECIDED
    assert classify(None, None) == UNDECIDED  # no interval tells nothing apart
    assert classify(few, up) == UNDECIDED


def test_a_step_is_never_decided_from_one_end_alone() -> None:
    """Master's bisection (docs/bisect.md): a step with no usable pair against the good
    end and far from the bad end was called like-good, and a move between the good end
    and that step went unseen. One side without an interval leaves the step undecided."""
    up = ratio_estimate([1.90, 1.93, 1.96, 1.92, 1.91, 1.94])  # far from the bad end
    down = ratio_estimate([0.52, 0.53, 0.55, 0.54, 0.535, 0.525])
    one_pair = ratio_estimate([0.55])  # a ratio, no interval
    assert one_pair is None or one_pair.ci_low is None
    assert classify(None, up) == UNDECIDED
    assert classify(one_pair, up) == UNDECIDED
    assert classify(down, None) == UNDECIDED
    assert classify(down, one_pair) == UNDECIDED


@pytest.mark.parametrize(("decision", "code"), [(LIKE_GOOD, 0), (LIKE_BAD, 1), (SKIPPED, 125),
                                                (UNDECIDED, 125), (LIKE_NEITHER, 128)])
def test_exit_codes_for_git_bisect_run(decision: str, code: int) -> None:
    assert exit_code(decision) == code


def test_one_commits_exit_code_from_its_rounds_with_both_ends() -> None:
    # what a `git bisect run` call would decide: the candidate measured with both ends
    measure = Scripted(step_at("3.0.14"))
    # two batches: ±3 % noise leaves some samples more than 5 % below their best, and a
    # side with fewer than 6 usable pairs has no interval (a call then says 125: skip)
    rounds = measure(["3.0.10", "3.0.16", "3.0.17"], 2 * ROUNDS)
    decision, vs_good, vs_bad = decide(rounds, "3.0.16", "3.0.10", "3.0.17")
    assert decision == LIKE_BAD and exit_code(decision) == 1
    assert vs_good is not None and vs_good.ratio < 0.75
    assert vs_bad is not None and 0.95 < vs_bad.ratio < 1.05
    rounds = measure(["3.0.10", "3.0.11", "3.0.17"], 2 * ROUNDS)
    assert exit_code(decide(rounds, "3.0.11", "3.0.10", "3.0.17")[0]) == 0
    # no usable sample of the candidate: skip
    empty: list[dict[str, float | None]] = [{"3.0.10": 1.0, "3.0.12": None, "3.0.17": 0.7}]
    assert exit_code(decide(empty, "3.0.12", "3.0.10", "3.0.17")[0]) == 125


def test_exit_code_refuses_an_unknown_decision() -> None:
    with pytest.raises(ValueError, match="unknown decision"):
        exit_code("maybe")


def test_pair_ratio_pairs_within_rounds_and_drops_disturbed_samples() -> None:
    rounds: list[dict[str, float | None]] = [
        {"a": 100.0, "b": 70.0}, {"a": 101.0, "b": 71.0}, {"a": 99.0, "b": None},
        {"a": 100.0, "b": 50.0}]  # 50 is more than 5 % below b's best: left out
    e = pair_ratio(rounds, "b", "a")
    assert e is not None and e.pairs == 2
    assert 0.69 < e.ratio < 0.71


def test_cells_parse_and_print_as_written() -> None:
    assert parse_cell("blog-fast:aes-128-cbc:8192") == Cell("blog-fast", "aes-128-cbc", 8192)
    c = parse_cell("blog-fast:aes-128-cbc:16:no-aesni")
    assert c.mask == "no-aesni" and c.text() == "blog-fast:aes-128-cbc:16:no-aesni"
    for bad in ("aes-128-cbc", "s:a:big", "s::16", "s:a:16:m:x"):
        with pytest.raises(ValueError, match="SUITE:ALGORITHM:BLOCK"):
            parse_cell(bad)
    with pytest.raises(ValueError, match="positive"):
        parse_cell("s:a:0")


def test_summary_names_the_pair_the_figures_and_the_path() -> None:
    b = bisect(RANGE, Scripted(step_at("3.0.14")))
    text = "\n".join(summary(b))
    assert "moved between 3.0.13 and 3.0.14" in text
    assert "3.0.14 / 3.0.13: 0.70" in text
    assert "step 1: 3.0.13 in [3.0.10, 3.0.17]" in text
    assert b.as_dict()["moves"][0]["ratio"]["pairs"] >= 4


@pytest.mark.parametrize(("truth", "decision", "code"), [
    ({"good": 1.0, "c": 1.0, "bad": 0.7}, LIKE_GOOD, 0),
    ({"good": 1.0, "c": 0.7, "bad": 0.7}, LIKE_BAD, 1),
    ({"good": 1.0, "c": 0.85, "bad": 0.7}, LIKE_NEITHER, 128),
])
def test_one_candidate_is_judged_as_a_step_for_git_bisect_run(
        truth: dict[str, float], decision: str, code: int) -> None:
    measure = Scripted(lambda r: BASE * truth[r])
    step = judge("c", "good", "bad", measure)
    assert (step.decision, exit_code(step.decision)) == (decision, code)
    assert step.rounds >= ROUNDS and set(measure.count) == {"good", "c", "bad"}
    if decision == LIKE_NEITHER:  # confirmed by a second batch before it stops the run
        assert step.rounds >= 2 * ROUNDS


def test_a_candidate_that_cannot_be_measured_is_skipped_with_its_reason() -> None:
    measure = Scripted(lambda r: BASE, broken={"c": "the build failed: error: x"})
    step = judge("c", "good", "bad", measure)
    assert (step.decision, exit_code(step.decision)) == (SKIPPED, 125)
    assert step.reason == "the build failed: error: x"
    with pytest.raises(Unmeasurable):  # an end: the caller stops the run
        judge("c", "good", "bad", Scripted(lambda r: BASE, broken={"good": "no"}))


def test_the_bisection_page_says_too_few_pairs_where_rounds_gave_no_interval() -> None:
    from openssl_matrix.report.bisectview import ratio_text as page_text

    few = ratio_estimate([0.97, 0.9702])  # two pairs that agree: no interval
    assert few is not None
    got = _ratio_dict(few)
    assert got is not None and got["ci_method"] == "sign" and got["basis"] == "rounds"
    assert page_text(got) == "×0.970 (too few pairs: n=2)"
    six = _ratio_dict(ratio_estimate([0.70, 0.71, 0.69, 0.70, 0.705, 0.695]))
    assert page_text(six) == "×0.700 [0.690–0.710] (6 pairs)"
    assert page_text({**got, "basis": "interleaved"}) == \
        "×0.970 (no interval) (2 interleaved blocks)"
