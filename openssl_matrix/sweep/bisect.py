"""Which release moved a figure: a bisection over the catalogue's releases (issue 33).

Given the releases from GOOD to BAD in the catalogue's order, one cell (suite, algorithm,
block size, mask) and a ``measure`` callback, :func:`bisect` finds the adjacent pair of
releases where the cell's figure moved. Nothing here builds or runs anything: ``measure``
does (``bisectrun.py`` wires it to the Builder and Bencher; tests script it), so the
decisions can be tested against scripted samples.

How a step is decided. A figure is too noisy for one run to say which side a release is
on, and the releases are measured hours apart, so a step is never judged from its figure
alone: each round of a step measures the step's release and *both ends* of the current
range (the nearest releases known to be like GOOD and like BAD) one after another, and the
step is judged from the paired ratios of its samples against each end's sample of the
same round (``stats.ratio_estimate``: the median ratio and its distribution-free 95 %
interval, which needs 6 pairs: with fewer the step is undecided and measured again). An
end is the *same* as the step when that interval reaches into the tolerance band
``[1/(1+tolerance), 1+tolerance]`` and *differs* when it lies wholly outside it. Then

* same as the good end, differs from the bad end: ``like-good``;
* differs from the good end, same as the bad end: ``like-bad``;
* differs from both: ``like-neither``, the figure moved more than once in the range; when
  that holds after a second batch of rounds the range is split at the step and each half
  is bisected on its own, so a figure that moved in several steps is reported as several;
* same as both (the intervals are too wide to tell): ``undecided``: more rounds are
  measured, up to ``max_rounds``, and a step still undecided then is reported as such,
  with its range, rather than guessed.

Interleaved pairs. Given a ``pair`` callback as well (``bisectpair.py``: the pair harness
running both builds' EVP loops alternately in one process, as reproductions' claims are
timed), a step is decided from interleaved comparisons instead of rounds: the step's
release against the good end and against the bad end, each a ratio with its 95 %
interval, classified by the same band; another run of both (pooled with the ones before)
while the step is undecided, or to confirm ``like-neither``, or while a ratio has no
interval (too few blocks kept) or is of disturbed blocks (``Paired.disturbed``), up to
``PAIR_RUNS`` runs. The
ends are compared the same way. Where the harness cannot time the cell (before 1.1.0, not
x86_64, two base images, a low-level or engine suite) or its run gave no ratio (a busy
host preempted every block), the step falls back to rounds and says why
(``Step.why_rounds``); every step says which ``basis`` decided it.

A release that cannot be built or measured (``measure`` raises :class:`Unmeasurable`) is
skipped with its reason, as ``git bisect skip`` does, and its nearest neighbour in the
range is tried instead. Before any step, the ends themselves are compared: when BAD
against GOOD stays within the band after ``max_rounds``, the result says "no step larger
than the interval" and nothing is bisected.

:func:`exit_code` turns one decision into the exit status ``git bisect run`` reads.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from openssl_matrix.core.errors import BISECT_ABORT, BISECT_SKIP
from openssl_matrix.core.stats import (
    MIN_PAIRS,
    RatioEstimate,
    RobustFigure,
    below_best,
    ratio_estimate,
    robust_figure,
)

LIKE_GOOD = "like-good"
LIKE_BAD = "like-bad"
LIKE_NEITHER = "like-neither"
UNDECIDED = "undecided"
SKIPPED = "skipped"
DECISIONS = (LIKE_GOOD, LIKE_BAD, LIKE_NEITHER, UNDECIDED, SKIPPED)

#: Rounds a step measures at first, and again each time it is not decided: the fewest
#: whose same-round pairs can give a 95 % interval (``stats.MIN_PAIRS``).
ROUNDS = MIN_PAIRS
#: Rounds after which a step still undecided is reported as undecided (three batches).
MAX_ROUNDS = 3 * ROUNDS
#: A ratio whose interval reaches within this of 1 counts as "the same figure".
TOLERANCE = 0.01

#: Interleaved runs of a pair (each pooled with the ones before) before a step whose
#: intervals still reach the band is reported undecided.
PAIR_RUNS = 3
#: What decided a step: paired rounds of speed runs, or interleaved pairs.
ROUNDS_BASIS = "rounds"
INTERLEAVED = "interleaved"

#: Outcomes of a whole bisection.
MOVED = "moved"  #: every move found, each to an adjacent pair of releases
NO_MOVE = "no step larger than the interval"
INCOMPLETE = "incomplete"  #: some range ended undecided or with only untestable releases

#: One interleaved round: release → its sample (bytes/s; None: no usable sample).
Round = Mapping[str, float | None]
#: ``measure(releases, rounds)``: that many rounds, each measuring every one of
#: ``releases`` one after another, newest results last.
Measure = Callable[[Sequence[str], int], Sequence[Round]]


@dataclass(frozen=True)
class Paired:
    """One interleaved comparison, ``top`` over ``bottom``: both builds' loops alternating
    in one process (measure/interleave.py), or why there is none (``why_not``: the
    harness cannot time the cell, or its run kept no block)."""

    estimate: RatioEstimate | None = None
    why_not: str = ""
    rate_top: float | None = None  #: the harness's bytes/s of each side (not speed's)
    rate_bottom: float | None = None
    disturbed: bool = False  #: too few undisturbed blocks: the ratio includes disturbed ones
    record: str = ""  #: where the run is filed, relative to the results tree

    def as_dict(self) -> dict[str, Any]:
        e = self.estimate
        return {"ratio": None if e is None else e.ratio,
                "ci_low": None if e is None else e.ci_low,
                "ci_high": None if e is None else e.ci_high,
                "blocks": None if e is None else e.pairs, "why_not": self.why_not,
                "rate_top": self.rate_top, "rate_bottom": self.rate_bottom,
                "disturbed": self.disturbed, "record": self.record}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Paired:
        def num(key: str) -> float | None:
            v = d.get(key)
            return float(v) if isinstance(v, (int, float)) else None

        ratio = num("ratio")
        est = None if ratio is None else RatioEstimate(
            int(d.get("blocks") or 0), ratio, num("ci_low"), num("ci_high"),
            method=INTERLEAVED)
        return cls(est, str(d.get("why_not") or ""), num("rate_top"), num("rate_bottom"),
                   bool(d.get("disturbed")), str(d.get("record") or ""))


#: ``pair(top, bottom, run)``: the interleaved ratio ``top`` over ``bottom``, ``run`` (0, 1,
#: …) the how-manieth run of that pair, pooled with the earlier ones.
PairMeasure = Callable[[str, str, int], Paired]


def inverse(e: RatioEstimate) -> RatioEstimate:
    """``bottom / top`` from ``top / bottom``."""
    return RatioEstimate(e.pairs, 1 / e.ratio, None if e.ci_high is None else 1 / e.ci_high,
                         None if e.ci_low is None else 1 / e.ci_low, method=e.method,
                         sizes=e.sizes)


def ratio_text(e: RatioEstimate) -> str:
    """A ratio as the summary prints it; an interleaved one counts blocks, not pairs."""
    if e.method != INTERLEAVED:
        return e.text()
    rhw = e.relative_half_width
    return (f"{e.ratio:.3f}×" + (f" ±{rhw:.1%}" if rhw is not None else " (no interval)")
            + f" ({e.pairs} interleaved blocks)")


class Unmeasurable(Exception):
    """Raised by a ``measure`` callback for a release that cannot be built or run."""

    def __init__(self, release: str, reason: str) -> None:
        super().__init__(f"{release}: {reason}")
        self.release = release
        self.reason = reason


@dataclass(frozen=True)
class Cell:
    """One figure of a bench: a suite's algorithm at one block size, with a mask or not.

    Written ``SUITE:ALGORITHM:BLOCK`` or ``SUITE:ALGORITHM:BLOCK:MASK``, e.g.
    ``blog-fast:aes-128-cbc:8192`` or ``blog-fast:aes-128-cbc:8192:no-aesni``: the
    report's names for each part (its tables name the algorithm and block size, the
    mask is the suite's ``OPENSSL_ia32cap`` mask name; none for the native run)."""

    suite: str
    algorithm: str
    block: int
    mask: str = ""

    def text(self) -> str:
        return ":".join([self.suite, self.algorithm, str(self.block)]
                        + ([self.mask] if self.mask else []))


def parse_cell(text: str) -> Cell:
    """The cell ``text`` names; ValueError saying the form when it is not one."""
    parts = text.strip().split(":")
    form = ("write the cell as SUITE:ALGORITHM:BLOCK[:MASK], e.g. "
            "blog-fast:aes-128-cbc:8192 or blog-fast:aes-128-cbc:8192:no-aesni")
    if len(parts) not in (3, 4) or not all(p.strip() for p in parts):
        raise ValueError(f"{text!r} is not a cell: {form}")
    try:
        block = int(parts[2])
    except ValueError:
        raise ValueError(f"{text!r}: the block size {parts[2]!r} is not a number of bytes; "
                         f"{form}") from None
    if block <= 0:
        raise ValueError(f"{text!r}: the block size must be a positive number of bytes")
    return Cell(parts[0].strip(), parts[1].strip(), block,
                parts[3].strip() if len(parts) == 4 else "")


def releases_between(catalogue: Sequence[str], good: str, bad: str) -> list[str]:
    """The releases from ``good`` to ``bad`` inclusive, in the catalogue's order (``bad``
    may come first: a figure can get better or worse in either direction of time)."""
    missing = [v for v in (good, bad) if v not in catalogue]
    if missing:
        raise ValueError(f"{', '.join(missing)} not in the release catalogue "
                         "(resources/releases.yaml; `invoke matrix list --all` lists it)")
    i, j = catalogue.index(good), catalogue.index(bad)
    if i == j:
        raise ValueError(f"GOOD and BAD are the same release ({good}): name two releases")
    return list(catalogue[i:j + 1]) if i < j else list(reversed(catalogue[j:i + 1]))


@dataclass(frozen=True)
class Step:
    """One step of the path: a release judged against the ends of its range."""

    release: str
    good: str  #: the range's end known to be like GOOD
    bad: str  #: the range's end known to be like BAD
    decision: str  #: one of DECISIONS
    rounds: int = 0  #: rounds measured for this step
    vs_good: RatioEstimate | None = None  #: the step's samples over the good end's
    vs_bad: RatioEstimate | None = None  #: the step's samples over the bad end's
    reason: str = ""  #: why a release was skipped
    basis: str = ROUNDS_BASIS  #: what decided it: ROUNDS_BASIS or INTERLEAVED
    pair_runs: int = 0  #: interleaved runs of each pair (INTERLEAVED)
    why_rounds: str = ""  #: why a step with a pair harness was decided from rounds

    def as_dict(self) -> dict[str, Any]:
        return {"release": self.release, "good": self.good, "bad": self.bad,
                "decision": self.decision, "rounds": self.rounds,
                "vs_good": _ratio_dict(self.vs_good), "vs_bad": _ratio_dict(self.vs_bad),
                "reason": self.reason, "basis": self.basis, "pair_runs": self.pair_runs,
                "why_rounds": self.why_rounds}


@dataclass(frozen=True)
class Move:
    """Where the figure moved: ``before`` and ``after`` are adjacent in the range when
    ``found``; otherwise the range the bisection could not narrow, and why."""

    before: str
    after: str
    found: bool
    before_figure: RobustFigure | None = None
    after_figure: RobustFigure | None = None
    ratio: RatioEstimate | None = None  #: after over before, paired by round
    why: str = ""  #: for a range not narrowed: "undecided at X" or the skipped releases
    basis: str = ROUNDS_BASIS  #: where ``ratio`` comes from
    #: the pair harness's bytes/s of each side, when the ratio is interleaved
    before_rate: float | None = None
    after_rate: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "found": self.found,
                "before_figure": _figure_dict(self.before_figure),
                "after_figure": _figure_dict(self.after_figure),
                "ratio": _ratio_dict(self.ratio), "why": self.why, "basis": self.basis,
                "before_rate": self.before_rate, "after_rate": self.after_rate}


@dataclass
class Bisection:
    """What a bisection found: the moves, the path of steps, and every round measured."""

    releases: list[str]
    status: str = ""  #: MOVED, NO_MOVE or INCOMPLETE
    ends: RatioEstimate | None = None  #: BAD over GOOD
    moves: list[Move] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    rounds: list[dict[str, float | None]] = field(default_factory=list)
    ends_basis: str = ROUNDS_BASIS  #: what ``ends`` comes from
    ends_why_rounds: str = ""  #: why the ends were compared from rounds with a harness
    #: every interleaved run: top, bottom, run, and its pooled estimate
    pairs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def good(self) -> str:
        return self.releases[0]

    @property
    def bad(self) -> str:
        return self.releases[-1]

    def as_dict(self) -> dict[str, Any]:
        return {"good": self.good, "bad": self.bad, "releases": self.releases,
                "status": self.status, "ends": _ratio_dict(self.ends),
                "ends_basis": self.ends_basis, "ends_why_rounds": self.ends_why_rounds,
                "moves": [m.as_dict() for m in self.moves],
                "steps": [s.as_dict() for s in self.steps], "rounds": self.rounds,
                "pairs": self.pairs}


def _ratio_dict(e: RatioEstimate | None) -> dict[str, Any] | None:
    if e is None:
        return None
    return {"pairs": e.pairs, "ratio": e.ratio, "ci_low": e.ci_low, "ci_high": e.ci_high,
            "ci_method": "t95-batches" if e.method == INTERLEAVED else e.method,
            "basis": INTERLEAVED if e.method == INTERLEAVED else ROUNDS_BASIS}


def _figure_dict(f: RobustFigure | None) -> dict[str, Any] | None:
    return None if f is None else {"n": f.n, "kept": f.kept, "median": f.median,
                                   "best": f.best, "ci_low": f.ci_low, "ci_high": f.ci_high,
                                   "ci_method": f.ci_method}


def same(estimate: RatioEstimate | None, tolerance: float = TOLERANCE) -> bool:
    """Whether a ratio's interval reaches into ``[1/(1+tolerance), 1+tolerance]``: the two
    figures cannot be told apart. A ratio without an interval (too few pairs) cannot
    tell anything apart either."""
    if estimate is None or estimate.ci_low is None or estimate.ci_high is None:
        return True
    return estimate.ci_low <= 1 + tolerance and estimate.ci_high >= 1 / (1 + tolerance)


def _has_interval(estimate: RatioEstimate | None) -> bool:
    return estimate is not None and estimate.ci_low is not None \
        and estimate.ci_high is not None


def classify(vs_good: RatioEstimate | None, vs_bad: RatioEstimate | None,
             tolerance: float = TOLERANCE) -> str:
    """A step's decision from its paired ratios against both ends (the module's rules).
    A side without an interval tells nothing: the step is undecided, never decided from
    the other end alone (a step unlike the bad end need not be like the good one when
    the figure moved more than once: a master bisection let a move through that way)."""
    if not _has_interval(vs_good) or not _has_interval(vs_bad):
        return UNDECIDED
    g, b = same(vs_good, tolerance), same(vs_bad, tolerance)
    if g and not b:
        return LIKE_GOOD
    if b and not g:
        return LIKE_BAD
    return UNDECIDED if g and b else LIKE_NEITHER


def decide(rounds: Sequence[Round], release: str, good: str, bad: str,
           tolerance: float = TOLERANCE) -> tuple[str, RatioEstimate | None,
                                                 RatioEstimate | None]:
    """One release's decision from rounds that measured it with ``good`` and ``bad``
    (what a step, or one ``git bisect run`` call, decides), with its two ratios; skipped
    when no round has a usable pair."""
    vs_good = pair_ratio(rounds, release, good)
    vs_bad = pair_ratio(rounds, release, bad)
    if vs_good is None and vs_bad is None:
        return SKIPPED, None, None
    return classify(vs_good, vs_bad, tolerance), vs_good, vs_bad


def exit_code(decision: str) -> int:
    """The exit status ``git bisect run`` reads for one decision: 0 good, 1 bad, 125 skip
    (a commit that cannot be measured, or whose figure the rounds could not place), and
    128 for ``like-neither``, which aborts the run: the figure moved more than once
    between the ends, which one git bisection cannot report; bisect each half instead."""
    codes = {LIKE_GOOD: 0, LIKE_BAD: 1, SKIPPED: BISECT_SKIP, UNDECIDED: BISECT_SKIP,
             LIKE_NEITHER: BISECT_ABORT}
    if decision not in codes:
        raise ValueError(f"unknown decision {decision!r}: one of {', '.join(DECISIONS)}")
    return codes[decision]


def clean(rounds: Sequence[Round], tolerance: float = 0.05) -> list[dict[str, float | None]]:
    """The rounds with each release's samples more than ``tolerance`` below that release's
    best left out (None): a disturbed sample (``shared-core``, core/stats.py) and its pairs
    are not compared."""
    out: list[dict[str, float | None]] = [dict(r) for r in rounds]
    for rel in {k for r in rounds for k in r}:
        at = [(i, v) for i, r in enumerate(rounds) if _ok(v := r.get(rel))]
        flags = below_best([float(v) for _, v in at if v is not None], tolerance)
        for (i, _), low in zip(at, flags, strict=True):
            if low:
                out[i][rel] = None
    return out


def _ok(v: float | None) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v) and v > 0


def pair_ratio(rounds: Sequence[Round], numerator: str, denominator: str,
               ) -> RatioEstimate | None:
    """``numerator`` over ``denominator`` from the rounds that have a usable sample of
    both (disturbed samples left out, :func:`clean`)."""
    ratios = [n / d for r in clean(rounds)
              if _ok(n := r.get(numerator)) and _ok(d := r.get(denominator))
              and n is not None and d is not None]
    return ratio_estimate(ratios)


def figure(rounds: Sequence[Round], release: str) -> RobustFigure | None:
    """A release's figure from every sample of it (stats.robust_figure)."""
    return robust_figure([v for r in rounds if _ok(v := r.get(release)) and v is not None])


def _no_interval(e: RatioEstimate | None) -> bool:
    return e is None or e.ci_low is None or e.ci_high is None


class _Run:
    """One bisection's state: the rounds measured so far, the path, the moves."""

    def __init__(self, releases: Sequence[str], measure: Measure, rounds: int,
                 max_rounds: int, tolerance: float, pair: PairMeasure | None = None,
                 pair_runs: int = PAIR_RUNS) -> None:
        self.out = Bisection(list(releases))
        self.measure = measure
        self.batch = max(2, rounds)
        self.max_rounds = max(self.batch, max_rounds)
        self.tolerance = tolerance
        self.pair = pair
        self.pair_runs = max(1, pair_runs)
        self.paired: dict[tuple[str, str], Paired] = {}  #: the latest (pooled) of each pair

    def more(self, releases: Sequence[str], n: int) -> None:
        got = self.measure(list(releases), n)
        self.out.rounds.extend(dict(r) for r in got)

    def compare(self, top: str, bottom: str, run: int) -> Paired:
        """``top`` over ``bottom`` interleaved (its ``run``-th run, pooled), recorded."""
        assert self.pair is not None
        got = self.pair(top, bottom, run)
        if got.estimate is not None:
            self.paired[(top, bottom)] = got
        self.out.pairs.append({"top": top, "bottom": bottom, "run": run, **got.as_dict()})
        return got

    def interleaved(self, top: str, bottom: str) -> Paired | None:
        """The interleaved ratio ``top / bottom`` measured so far (either way round)."""
        if (top, bottom) in self.paired:
            return self.paired[(top, bottom)]
        got = self.paired.get((bottom, top))
        if got is None or got.estimate is None:
            return None
        return Paired(inverse(got.estimate), rate_top=got.rate_bottom,
                      rate_bottom=got.rate_top, disturbed=got.disturbed, record=got.record)

    def within(self, e: RatioEstimate | None) -> bool:
        """Whether the whole interval lies inside the band: more runs cannot make it
        differ."""
        return e is not None and e.ci_low is not None and e.ci_high is not None and \
            e.ci_low >= 1 / (1 + self.tolerance) and e.ci_high <= 1 + self.tolerance

    def ends(self) -> bool:
        """Whether GOOD and BAD differ: from interleaved runs where the harness gives a
        ratio, else from rounds."""
        if self.pair is not None:
            good, bad = self.out.good, self.out.bad
            for run in range(self.pair_runs):
                got = self.compare(bad, good, run)
                if got.estimate is None:
                    self.out.ends_why_rounds = got.why_not
                    break
                self.out.ends, self.out.ends_basis = got.estimate, INTERLEAVED
                if (got.disturbed or _no_interval(got.estimate)) and run + 1 < self.pair_runs:
                    continue  # a ratio of disturbed blocks, or without an interval: again
                if not same(got.estimate, self.tolerance):
                    return True
                if self.within(got.estimate):
                    return False
            else:
                return False
        return self.ends_rounds()

    def ends_rounds(self) -> bool:
        """Measure GOOD and BAD until they differ or ``max_rounds``; whether they do."""
        good, bad = self.out.good, self.out.bad
        self.out.ends_basis = ROUNDS_BASIS
        done = 0
        while True:
            self.more([good, bad], self.batch)
            done += self.batch
            self.out.ends = pair_ratio(self.out.rounds, bad, good)
            if not same(self.out.ends, self.tolerance) or done >= self.max_rounds:
                return not same(self.out.ends, self.tolerance)

    def step(self, release: str, lo: str, hi: str) -> Step:
        """``release`` judged against both ends: interleaved where the harness gives a
        ratio for both, else from rounds, saying why (module docstring)."""
        if self.pair is None:
            return self.step_rounds(release, lo, hi)
        got = self.step_pairs(release, lo, hi)
        if isinstance(got, Step):
            return got
        return replace(self.step_rounds(release, lo, hi), why_rounds=got)

    def step_pairs(self, release: str, lo: str, hi: str) -> Step | str:
        """The step from interleaved runs against each end (another run of both while it
        is undecided, or to confirm like-neither); why not, when a pair gave no ratio."""
        for run in range(self.pair_runs):
            try:
                vs = [self.compare(release, end, run) for end in (lo, hi)]
            except Unmeasurable as exc:
                if exc.release != release:
                    raise
                return Step(release, lo, hi, SKIPPED, reason=exc.reason, basis=INTERLEAVED,
                            pair_runs=run)
            missing = [p.why_not or "no ratio" for p in vs if p.estimate is None]
            if missing:
                return "; ".join(missing)
            decision = classify(vs[0].estimate, vs[1].estimate, self.tolerance)
            # a ratio of disturbed blocks (too few undisturbed ones), or one without an
            # interval (too few blocks kept), is run again first
            unsure = any(p.disturbed or _no_interval(p.estimate) for p in vs)
            settled = run + 1 >= self.pair_runs or (not unsure and (
                decision in (LIKE_GOOD, LIKE_BAD) or (decision == LIKE_NEITHER and run >= 1)))
            if settled:
                return Step(release, lo, hi, decision, 0, vs[0].estimate, vs[1].estimate,
                            basis=INTERLEAVED, pair_runs=run + 1)
        raise AssertionError("unreachable: the last run settles the step")

    def step_rounds(self, release: str, lo: str, hi: str) -> Step:
        """Measure ``release`` with both ends until it is decided (module docstring)."""
        done = 0
        while True:
            try:
                self.more([lo, release, hi], self.batch)
            except Unmeasurable as exc:
                if exc.release != release:
                    raise
                return Step(release, lo, hi, SKIPPED, done, reason=exc.reason)
            done += self.batch
            decision, vs_good, vs_bad = decide(self.out.rounds, release, lo, hi,
                                               self.tolerance)
            if decision == SKIPPED:
                return Step(release, lo, hi, SKIPPED, done,
                            reason="no usable sample in any round")
            settled = decision in (LIKE_GOOD, LIKE_BAD) or done >= self.max_rounds or (
                decision == LIKE_NEITHER and done >= 2 * self.batch)
            if settled:
                return Step(release, lo, hi, decision, done, vs_good, vs_bad)

    def move(self, lo: str, hi: str, found: bool, why: str = "") -> Move:
        """The move between ``lo`` and ``hi``: their figures from rounds (if any), the
        ratio ``hi / lo`` interleaved where it was measured so, else paired by round."""
        rounds = self.out.rounds
        p = self.interleaved(hi, lo)
        if p is not None and p.estimate is not None:
            return Move(lo, hi, found, figure(rounds, lo), figure(rounds, hi), p.estimate,
                        why, INTERLEAVED, p.rate_bottom, p.rate_top)
        return Move(lo, hi, found, figure(rounds, lo), figure(rounds, hi),
                    pair_ratio(rounds, hi, lo), why)

    def range(self, a: int, b: int) -> None:
        """Bisect ``releases[a..b]``, ``a`` like GOOD and ``b`` unlike it."""
        rel = self.out.releases
        skipped: dict[int, str] = {}
        while True:
            inner = [i for i in range(a + 1, b) if i not in skipped]
            if not inner:
                why = "; ".join(f"{rel[i]} skipped: {r}" for i, r in sorted(skipped.items()))
                self.out.moves.append(self.move(rel[a], rel[b], not skipped, why))
                return
            middle = (a + b) / 2
            m = min(inner, key=lambda i: (abs(i - middle), i))
            s = self.step(rel[m], rel[a], rel[b])
            self.out.steps.append(s)
            if s.decision == SKIPPED:
                skipped[m] = s.reason
            elif s.decision == LIKE_GOOD:
                a, skipped = m, {i: r for i, r in skipped.items() if i > m}
            elif s.decision == LIKE_BAD:
                b, skipped = m, {i: r for i, r in skipped.items() if i < m}
            elif s.decision == LIKE_NEITHER:
                self.range(a, m)
                self.range(m, b)
                return
            else:
                runs = f"{s.pair_runs} interleaved run(s)" if s.basis == INTERLEAVED else \
                    f"{s.rounds} rounds"
                self.out.moves.append(self.move(
                    rel[a], rel[b], False, f"undecided at {rel[m]} after {runs}: its "
                    "intervals against both ends reach within the tolerance"))
                return


def bisect(releases: Sequence[str], measure: Measure, *, rounds: int = ROUNDS,
           max_rounds: int = MAX_ROUNDS, tolerance: float = TOLERANCE,
           pair: PairMeasure | None = None, pair_runs: int = PAIR_RUNS) -> Bisection:
    """Bisect the figure ``measure`` gives over ``releases`` (GOOD first, BAD last, in
    the catalogue's order): the module's rules. ``rounds`` is the batch a step measures
    at a time (at least 2: an interval needs two pairs), ``max_rounds`` where an
    undecided step stops. With ``pair``, steps and ends are decided from interleaved
    runs (at most ``pair_runs`` of each pair) wherever it gives a ratio."""
    if len(releases) < 2 or len(set(releases)) != len(releases):
        raise ValueError("a bisection needs at least two distinct releases, GOOD first "
                         "and BAD last")
    run = _Run(releases, measure, rounds, max_rounds, tolerance, pair, pair_runs)
    if not run.ends():
        ends = run.out.ends
        if ends is None or ends.ci_low is None or ends.ci_high is None:
            # no interval at all is not "no step": nothing was compared
            usable = 0 if ends is None else ends.pairs
            what = "interleaved block(s)" if run.out.ends_basis == INTERLEAVED else \
                "usable pair(s) of samples in " f"{len(run.out.rounds)} round(s)"
            run.out.moves.append(Move(run.out.good, run.out.bad, False, why=(
                f"no interval between the ends: {usable} {what} (samples the host "
                "disturbed, contended or shared-core, are left out); measure again on a "
                "quieter host")))
            run.out.status = INCOMPLETE
            return run.out
        run.out.status = NO_MOVE
        return run.out
    run.range(0, len(releases) - 1)
    run.out.status = MOVED if all(m.found for m in run.out.moves) else INCOMPLETE
    return run.out


def judge(candidate: str, good: str, bad: str, measure: Measure, *, rounds: int = ROUNDS,
          max_rounds: int = MAX_ROUNDS, tolerance: float = TOLERANCE,
          pair: PairMeasure | None = None, pair_runs: int = PAIR_RUNS) -> Step:
    """One candidate judged against both ends, as a bisection's step is (what one
    ``git bisect run`` call decides): interleaved runs against each end with ``pair``
    (rounds where the harness gives no ratio), or rounds of GOOD, the candidate and BAD,
    until it is like one end, or like neither twice, or the limit; skipped when the
    candidate cannot be measured. :func:`exit_code` of its decision is what git reads."""
    run = _Run([good, candidate, bad], measure, rounds, max_rounds, tolerance, pair,
               pair_runs)
    return run.step(candidate, good, bad)


def summary(b: Bisection) -> list[str]:
    """The result in lines for a terminal: the ends, each move, the path."""
    lines = [f"bisection {b.good} (good) → {b.bad} (bad) over {len(b.releases)} releases: "
             f"{b.status}"]
    if b.ends is not None:
        lines.append(f"  {b.bad} / {b.good}: {ratio_text(b.ends)} ({b.ends_basis})")
    if b.ends_why_rounds:
        lines.append(f"  the ends from rounds: {b.ends_why_rounds}")
    for m in b.moves:
        head = f"  moved between {m.before} and {m.after}" if m.found else \
            f"  not narrowed: between {m.before} and {m.after} ({m.why})"
        lines.append(head)
        if m.before_figure is not None or m.after_figure is not None:
            lines.append("    " + " · ".join(
                f"{name} {_fig_text(f)}" for name, f in
                ((m.before, m.before_figure), (m.after, m.after_figure))))
        if m.before_rate is not None and m.after_rate is not None:
            lines.append(f"    pair harness: {m.before} {m.before_rate / 1e6:,.1f} MB/s · "
                         f"{m.after} {m.after_rate / 1e6:,.1f} MB/s")
        if m.ratio is not None:
            lines.append(f"    {m.after} / {m.before}: {ratio_text(m.ratio)} ({m.basis})")
    for i, s in enumerate(b.steps, 1):
        detail = s.reason if s.decision == SKIPPED else ", ".join(
            f"vs {end} {ratio_text(e) if e is not None else 'no pairs'}"
            for end, e in ((s.good, s.vs_good), (s.bad, s.vs_bad)))
        how = f"{s.pair_runs} interleaved run(s)" if s.basis == INTERLEAVED else \
            f"{s.rounds} rounds"
        lines.append(f"  step {i}: {s.release} in [{s.good}, {s.bad}]: {s.decision} "
                     f"({how}; {detail})")
        if s.why_rounds:
            lines.append(f"    from rounds: {s.why_rounds}")
    return lines


def _fig_text(f: RobustFigure | None) -> str:
    if f is None:
        return "no figure"
    body = f"{f.median / 1e6:,.1f} MB/s"
    if f.ci_low is not None and f.ci_high is not None:
        body += f" [{f.ci_low / 1e6:,.1f}, {f.ci_high / 1e6:,.1f}]"
    return body + f" (n={f.kept})"
