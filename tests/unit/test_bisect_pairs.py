"""A bisection decided from interleaved pairs (openssl_matrix/sweep/bisect.py, ``pair``):
each step's release against the good end and the bad end, each a ratio with its 95 %
interval, classified by the band; another run while undecided or to confirm like-neither;
rounds where the harness gives no ratio, saying why; the record's fields; and a resumed
bisection replaying its pairs (sweep/bisectresume.py) without running the harness again.

The ratios are made up for the logic under test: each release's true figure, their
quotient, and a half-width per run that a scripted harness narrows as runs are pooled
(as pooled harness runs narrow the batch-means interval).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from openssl_matrix.core.stats import RatioEstimate
from openssl_matrix.results.bisections import Progress
from openssl_matrix.sweep.bisect import (
    INCOMPLETE,
    INTERLEAVED,
    LIKE_BAD,
    LIKE_GOOD,
    LIKE_NEITHER,
    MOVED,
    NO_MOVE,
    PAIR_RUNS,
    ROUNDS_BASIS,
    SKIPPED,
    UNDECIDED,
    Paired,
    Round,
    Unmeasurable,
    bisect,
    exit_code,
    judge,
    summary,
)
from openssl_matrix.sweep.bisectresume import Replaying

RANGE = ["3.0.10", "3.0.11", "3.0.12", "3.0.13", "3.0.14", "3.0.15", "3.0.16", "3.0.17"]


def step_at(first_bad: str, after: float = 0.70) -> Callable[[str], float]:
    return lambda r: after if RANGE.index(r) >= RANGE.index(first_bad) else 1.0


class Harness:
    """A ``pair`` callback: ``truth(top) / truth(bottom)`` with a ±``width`` interval
    that halves with each pooled run; ``refuse``: releases it cannot time (why_not);
    ``broken``: releases that cannot be built (Unmeasurable)."""

    def __init__(self, truth: Callable[[str], float], *, width: float = 0.003,
                 refuse: Sequence[str] = (), broken: Sequence[str] = (),
                 disturbed_runs: int = 0, bare_runs: int = 0) -> None:
        self.truth = truth
        self.bare_runs = bare_runs  #: the first runs of every pair: no interval
        self.disturbed_runs = disturbed_runs  #: the first runs of every pair: disturbed
        self.width = width
        self.refuse = set(refuse)
        self.broken = set(broken)
        self.calls: list[tuple[str, str, int]] = []

    def __call__(self, top: str, bottom: str, run: int) -> Paired:
        self.calls.append((top, bottom, run))
        for r in (top, bottom):
            if r in self.broken:
                raise Unmeasurable(r, "the build failed: error: scripted")
            if r in self.refuse:
                return Paired(why_not=f"{r}: OpenSSL older than 1.1.0 (scripted)")
        ratio = self.truth(top) / self.truth(bottom)
        half = self.width / (run + 1)
        lo, hi = (None, None) if run < self.bare_runs else (ratio * (1 - half),
                                                           ratio * (1 + half))
        return Paired(RatioEstimate(40 * (run + 1), ratio, lo, hi, method=INTERLEAVED),
                      rate_top=1e9 * self.truth(top), rate_bottom=1e9 * self.truth(bottom),
                      disturbed=run < self.disturbed_runs,
                      record=f"_interleaved/cpu/s/{bottom}--vs--{top}/record.json")


class Rounds:
    """A ``measure`` callback for the fallback: every release at its true figure times a
    small alternating factor (so intervals have a width); counts its calls."""

    def __init__(self, truth: Callable[[str], float]) -> None:
        self.truth = truth
        self.calls: list[list[str]] = []

    def __call__(self, releases: Sequence[str], n: int) -> Sequence[Round]:
        self.calls.append(list(releases))
        return [{r: 1e9 * self.truth(r) * (1 + 0.002 * ((i + j) % 3 - 1))
                 for j, r in enumerate(releases)} for i in range(n)]


def no_rounds(releases: Sequence[str], n: int) -> Sequence[Round]:
    raise AssertionError(f"rounds asked for {list(releases)}: the pairs should decide")


@pytest.mark.parametrize("first_bad", RANGE[1:])
def test_each_step_is_decided_from_pairs_with_both_ends(first_bad: str) -> None:
    harness = Harness(step_at(first_bad))
    b = bisect(RANGE, no_rounds, pair=harness)
    assert b.status == MOVED and b.ends_basis == INTERLEAVED
    (move,) = b.moves
    assert (move.before, move.after) == (RANGE[RANGE.index(first_bad) - 1], first_bad)
    assert move.basis == INTERLEAVED and move.ratio is not None
    assert move.ratio.ratio == pytest.approx(0.70)
    assert (move.before_rate, move.after_rate) == pytest.approx((1e9, 0.7e9))
    for s in b.steps:  # every step: its release over each end of its range, one run
        assert s.basis == INTERLEAVED and s.pair_runs == 1 and s.rounds == 0
        assert (s.release, s.good, 0) in harness.calls
        assert (s.release, s.bad, 0) in harness.calls
        truth_bad = RANGE.index(s.release) >= RANGE.index(first_bad)
        assert s.decision == (LIKE_BAD if truth_bad else LIKE_GOOD)
    assert b.rounds == []


def test_the_decision_rule_reads_both_intervals_against_the_band() -> None:
    def run(vs_good: float, vs_bad: float, width: float) -> str:
        def truth(r: str) -> float:
            return {"good": 1.0, "c": vs_good, "bad": vs_good / vs_bad}[r]
        return judge("c", "good", "bad", no_rounds, pair=Harness(truth, width=width)).decision

    assert run(1.0, 1 / 0.7, 0.003) == LIKE_GOOD
    assert run(0.7, 1.0, 0.003) == LIKE_BAD
    assert run(0.85, 0.85 / 0.7, 0.003) == LIKE_NEITHER
    # a 0.5 % difference is within the 1 % band: the same, not a move
    assert run(0.995, 0.995 / 0.7, 0.003) == LIKE_GOOD
    # intervals wide enough to reach the band from both ends: undecided after every run
    assert run(0.99, 0.99 / 0.985, 0.05) == UNDECIDED


def test_an_undecided_step_runs_again_pooled_up_to_the_limit() -> None:
    # ±4 % at the first run reaches the band; pooled runs narrow it (±2 %, ±1.3 %)
    harness = Harness(lambda r: {"good": 1.0, "c": 0.95, "bad": 0.90}[r], width=0.04)
    s = judge("c", "good", "bad", no_rounds, pair=harness)
    assert s.decision == LIKE_NEITHER and s.pair_runs == 2
    assert [c[2] for c in harness.calls] == [0, 0, 1, 1]
    harness = Harness(lambda r: {"good": 1.0, "c": 1.0, "bad": 1.0}[r], width=0.04)
    s = judge("c", "good", "bad", no_rounds, pair=harness)
    assert s.decision == UNDECIDED and s.pair_runs == PAIR_RUNS
    assert exit_code(s.decision) == 125


def test_a_ratio_of_disturbed_blocks_is_run_again_before_it_decides() -> None:
    harness = Harness(step_at("3.0.14"), disturbed_runs=1)
    b = bisect(RANGE, no_rounds, pair=harness)
    assert b.status == MOVED and [(m.before, m.after) for m in b.moves] == [
        ("3.0.13", "3.0.14")]
    assert all(s.pair_runs == 2 for s in b.steps)
    assert harness.calls[:2] == [(RANGE[-1], RANGE[0], 0), (RANGE[-1], RANGE[0], 1)]
    # disturbed to the last run: decided from what the last run pooled
    s = judge("3.0.12", RANGE[0], RANGE[-1], no_rounds,
              pair=Harness(step_at("3.0.14"), disturbed_runs=PAIR_RUNS))
    assert (s.decision, s.pair_runs) == (LIKE_GOOD, PAIR_RUNS)


def test_a_ratio_without_an_interval_is_run_again_before_it_decides() -> None:
    # too few blocks kept for an interval: "the same" by the band, so it would decide
    # like-good from the bad end alone; it is run again, pooled, first
    harness = Harness(step_at("3.0.14"), bare_runs=1)
    s = judge("3.0.12", RANGE[0], RANGE[-1], no_rounds, pair=harness)
    assert (s.decision, s.pair_runs) == (LIKE_GOOD, 2)
    assert s.vs_good is not None and s.vs_good.ci_low is not None
    b = bisect(RANGE, no_rounds, pair=Harness(step_at("3.0.14"), bare_runs=1))
    assert b.status == MOVED and b.ends is not None and b.ends.ci_low is not None


def test_like_neither_is_confirmed_by_a_second_run_and_splits_the_range() -> None:
    def truth(r: str) -> float:
        i = RANGE.index(r)
        return 1.0 if i < 3 else 0.85 if i < 6 else 0.70

    harness = Harness(truth)
    b = bisect(RANGE, no_rounds, pair=harness)
    assert b.status == MOVED
    assert [(m.before, m.after) for m in b.moves] == [("3.0.12", "3.0.13"),
                                                      ("3.0.15", "3.0.16")]
    neither = [s for s in b.steps if s.decision == LIKE_NEITHER]
    assert neither and all(s.pair_runs == 2 for s in neither)


def test_ends_within_the_band_are_no_step_after_one_run() -> None:
    harness = Harness(lambda r: 1.0 if r != RANGE[-1] else 0.996)
    b = bisect(RANGE, no_rounds, pair=harness)
    assert b.status == NO_MOVE and b.ends_basis == INTERLEAVED
    assert harness.calls == [(RANGE[-1], RANGE[0], 0)]
    assert b.ends is not None and b.ends.ratio == pytest.approx(0.996)


def test_where_the_harness_cannot_time_a_step_it_is_decided_from_rounds_saying_why() -> None:
    truth = step_at("3.0.14")
    rounds = Rounds(truth)
    b = bisect(RANGE, rounds, pair=Harness(truth, refuse=["3.0.15"]))
    assert b.status == MOVED
    assert [(m.before, m.after) for m in b.moves] == [("3.0.13", "3.0.14")]
    for s in b.steps:  # a step with 3.0.15 as its release or an end: from rounds
        if "3.0.15" in (s.release, s.good, s.bad):
            assert s.basis == ROUNDS_BASIS and s.rounds > 0
            assert "3.0.15: OpenSSL older than 1.1.0" in s.why_rounds
        else:
            assert s.basis == INTERLEAVED and not s.why_rounds
    assert {s.basis for s in b.steps} == {ROUNDS_BASIS, INTERLEAVED}
    assert rounds.calls and all("3.0.15" in c for c in rounds.calls)
    text = "\n".join(summary(b))
    assert "from rounds: 3.0.15: OpenSSL older than 1.1.0" in text
    assert "interleaved run(s)" in text


def test_ends_the_harness_cannot_time_are_compared_from_rounds_saying_why() -> None:
    truth = step_at("3.0.12")
    rounds = Rounds(truth)
    b = bisect(RANGE, rounds, pair=Harness(truth, refuse=[RANGE[0]]))
    assert b.ends_basis == ROUNDS_BASIS and "older than 1.1.0" in b.ends_why_rounds
    assert b.status == MOVED and rounds.calls[0] == [RANGE[0], RANGE[-1]]
    assert all(s.basis == (ROUNDS_BASIS if s.good == RANGE[0] else INTERLEAVED)
               for s in b.steps)


def test_a_candidate_that_does_not_build_is_skipped_and_an_end_is_an_error() -> None:
    truth = step_at("3.0.14")
    b = bisect(RANGE, no_rounds, pair=Harness(truth, broken=["3.0.13"]))
    (skipped,) = [s for s in b.steps if s.decision == SKIPPED]
    assert skipped.release == "3.0.13" and "scripted" in skipped.reason
    assert skipped.basis == INTERLEAVED
    (move,) = b.moves  # the move is between 3.0.12 and 3.0.14, 3.0.13 untestable
    assert (move.before, move.after, move.found) == ("3.0.12", "3.0.14", False)
    assert "3.0.13 skipped" in move.why and move.basis == INTERLEAVED
    assert b.status == INCOMPLETE
    with pytest.raises(Unmeasurable):
        bisect(RANGE, no_rounds, pair=Harness(truth, broken=[RANGE[0]]))


def test_the_record_says_which_basis_decided_each_step_and_lists_every_pair() -> None:
    truth = step_at("3.0.14")
    b = bisect(RANGE, Rounds(truth), pair=Harness(truth, refuse=["3.0.15"]))
    doc = json.loads(json.dumps(b.as_dict()))
    assert doc["ends_basis"] == INTERLEAVED and doc["ends"]["basis"] == INTERLEAVED
    assert doc["ends"]["ci_method"] == "t95-batches"
    steps = {s["release"]: s for s in doc["steps"]}
    assert steps["3.0.15"]["basis"] == ROUNDS_BASIS and steps["3.0.15"]["why_rounds"]
    assert steps["3.0.15"]["vs_good"]["ci_method"] == "sign"
    inter = [s for s in doc["steps"] if s["basis"] == INTERLEAVED]
    assert inter and all(s["pair_runs"] == 1 and s["vs_good"]["basis"] == INTERLEAVED
                         for s in inter)
    assert {(p["top"], p["bottom"]) for p in doc["pairs"]} >= {
        (s["release"], s["good"]) for s in inter}
    assert all(p["record"] or p["why_not"] for p in doc["pairs"])
    (move,) = doc["moves"]
    assert move["basis"] in (INTERLEAVED, ROUNDS_BASIS) and move["ratio"] is not None


def test_a_resumed_bisection_replays_its_pairs_without_running_the_harness(
        tmp_path: Path) -> None:
    truth = step_at("3.0.14")
    progress = Progress(tmp_path / "progress-k.jsonl")
    first_harness = Harness(truth, refuse=["3.0.15"])
    first = Replaying(Rounds(truth), progress, first_harness)
    done = bisect(RANGE, first, pair=first.pair)
    assert first.measured == len(first_harness.calls) + len(
        [s for s in done.steps if s.basis == ROUNDS_BASIS])
    # the same walk again: everything replayed, neither harness nor rounds asked
    harness, rounds = Harness(truth), Rounds(truth)
    again = Replaying(rounds, progress, harness)
    replayed = bisect(RANGE, again, pair=again.pair)
    assert harness.calls == [] and rounds.calls == [] and again.measured == 0
    assert replayed.as_dict() == done.as_dict()


def test_an_interrupted_bisection_resumes_from_its_last_recorded_pair(
        tmp_path: Path) -> None:
    truth = step_at("3.0.14")
    progress = Progress(tmp_path / "progress-k.jsonl")
    whole = Harness(truth)
    expected = bisect(RANGE, no_rounds, pair=whole)

    class Stop(Exception):
        pass

    cut_harness = Harness(truth)

    def cut(top: str, bottom: str, run: int) -> Paired:
        if len(cut_harness.calls) == 3:
            raise Stop
        return cut_harness(top, bottom, run)

    first = Replaying(no_rounds, progress, cut)
    with pytest.raises(Stop):
        bisect(RANGE, first, pair=first.pair)
    harness = Harness(truth)
    again = Replaying(no_rounds, progress, harness)
    got = bisect(RANGE, again, pair=again.pair)
    assert again.replayed == 3 and harness.calls == whole.calls[3:]
    assert [m.as_dict() for m in got.moves] == [m.as_dict() for m in expected.moves]


def test_a_pairs_answer_round_trips_through_the_progress_file() -> None:
    p = Paired(RatioEstimate(40, 0.7, 0.69, 0.71, method=INTERLEAVED), rate_top=7e8,
               rate_bottom=1e9, disturbed=True, record="x/record.json")
    assert Paired.from_dict(json.loads(json.dumps(p.as_dict()))) == p
    why = Paired(why_not="no block had the CPU")
    assert Paired.from_dict(json.loads(json.dumps(why.as_dict()))) == why
