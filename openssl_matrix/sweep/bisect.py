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
same round (``robust.ratio_estimate``: geometric mean, 95 % t-interval on the logs). An
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
from dataclasses import dataclass, field
from typing import Any

from openssl_matrix.core.errors import BISECT_ABORT, BISECT_SKIP
from openssl_matrix.measure.robust import (
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

#: Rounds a step measures at first, and again each time it is not decided.
ROUNDS = 5
#: Rounds after which a step still undecided is reported as undecided.
MAX_ROUNDS = 15
#: A ratio whose interval reaches within this of 1 counts as "the same figure".
TOLERANCE = 0.01

#: Outcomes of a whole bisection.
MOVED = "moved"  #: every move found, each to an adjacent pair of releases
NO_MOVE = "no step larger than the interval"
INCOMPLETE = "incomplete"  #: some range ended undecided or with only untestable releases

#: One interleaved round: release → its sample (bytes/s; None: no usable sample).
Round = Mapping[str, float | None]
#: ``measure(releases, rounds)``: that many rounds, each measuring every one of
#: ``releases`` one after another, newest results last.
Measure = Callable[[Sequence[str], int], Sequence[Round]]


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

    def as_dict(self) -> dict[str, Any]:
        return {"release": self.release, "good": self.good, "bad": self.bad,
                "decision": self.decision, "rounds": self.rounds,
                "vs_good": _ratio_dict(self.vs_good), "vs_bad": _ratio_dict(self.vs_bad),
                "reason": self.reason}


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

    def as_dict(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "found": self.found,
                "before_figure": _figure_dict(self.before_figure),
                "after_figure": _figure_dict(self.after_figure),
                "ratio": _ratio_dict(self.ratio), "why": self.why}


@dataclass
class Bisection:
    """What a bisection found: the moves, the path of steps, and every round measured."""

    releases: list[str]
    status: str = ""  #: MOVED, NO_MOVE or INCOMPLETE
    ends: RatioEstimate | None = None  #: BAD over GOOD
    moves: list[Move] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    rounds: list[dict[str, float | None]] = field(default_factory=list)

    @property
    def good(self) -> str:
        return self.releases[0]

    @property
    def bad(self) -> str:
        return self.releases[-1]

    def as_dict(self) -> dict[str, Any]:
        return {"good": self.good, "bad": self.bad, "releases": self.releases,
                "status": self.status, "ends": _ratio_dict(self.ends),
                "moves": [m.as_dict() for m in self.moves],
                "steps": [s.as_dict() for s in self.steps], "rounds": self.rounds}


def _ratio_dict(e: RatioEstimate | None) -> dict[str, Any] | None:
    return None if e is None else {"pairs": e.pairs, "ratio": e.ratio, "ci_low": e.ci_low,
                                   "ci_high": e.ci_high, "ci_method": "t95-log"}


def _figure_dict(f: RobustFigure | None) -> dict[str, Any] | None:
    return None if f is None else {"n": f.n, "kept": f.kept, "median": f.median,
                                   "best": f.best, "ci_low": f.ci_low, "ci_high": f.ci_high,
                                   "ci_method": f.ci_method}


def same(estimate: RatioEstimate | None, tolerance: float = TOLERANCE) -> bool:
    """Whether a ratio's interval reaches into ``[1/(1+tolerance), 1+tolerance]``: the two
    figures cannot be told apart. A ratio without an interval (one pair) cannot tell
    anything apart either."""
    if estimate is None or estimate.ci_low is None or estimate.ci_high is None:
        return True
    return estimate.ci_low <= 1 + tolerance and estimate.ci_high >= 1 / (1 + tolerance)


def classify(vs_good: RatioEstimate | None, vs_bad: RatioEstimate | None,
             tolerance: float = TOLERANCE) -> str:
    """A step's decision from its paired ratios against both ends (the module's rules)."""
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
    best left out (None): a disturbed sample (``shared-core``, robust.py) and its pairs
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
    """A release's figure from every sample of it (robust.robust_figure)."""
    return robust_figure([v for r in rounds if _ok(v := r.get(release)) and v is not None])


class _Run:
    """One bisection's state: the rounds measured so far, the path, the moves."""

    def __init__(self, releases: Sequence[str], measure: Measure, rounds: int,
                 max_rounds: int, tolerance: float) -> None:
        self.out = Bisection(list(releases))
        self.measure = measure
        self.batch = max(2, rounds)
        self.max_rounds = max(self.batch, max_rounds)
        self.tolerance = tolerance

    def more(self, releases: Sequence[str], n: int) -> None:
        got = self.measure(list(releases), n)
        self.out.rounds.extend(dict(r) for r in got)

    def ends(self) -> bool:
        """Measure GOOD and BAD until they differ or ``max_rounds``; whether they do."""
        good, bad = self.out.good, self.out.bad
        done = 0
        while True:
            self.more([good, bad], self.batch)
            done += self.batch
            self.out.ends = pair_ratio(self.out.rounds, bad, good)
            if not same(self.out.ends, self.tolerance) or done >= self.max_rounds:
                return not same(self.out.ends, self.tolerance)

    def step(self, release: str, lo: str, hi: str) -> Step:
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

    def found(self, lo: str, hi: str) -> Move:
        return Move(lo, hi, True, figure(self.out.rounds, lo), figure(self.out.rounds, hi),
                    pair_ratio(self.out.rounds, hi, lo))

    def range(self, a: int, b: int) -> None:
        """Bisect ``releases[a..b]``, ``a`` like GOOD and ``b`` unlike it."""
        rel = self.out.releases
        skipped: dict[int, str] = {}
        while True:
            inner = [i for i in range(a + 1, b) if i not in skipped]
            if not inner:
                if skipped:
                    why = "; ".join(f"{rel[i]} skipped: {r}" for i, r in sorted(skipped.items()))
                    self.out.moves.append(Move(
                        rel[a], rel[b], False, figure(self.out.rounds, rel[a]),
                        figure(self.out.rounds, rel[b]), pair_ratio(self.out.rounds, rel[b],
                                                                     rel[a]), why))
                else:
                    self.out.moves.append(self.found(rel[a], rel[b]))
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
                self.out.moves.append(Move(
                    rel[a], rel[b], False, figure(self.out.rounds, rel[a]),
                    figure(self.out.rounds, rel[b]), pair_ratio(self.out.rounds, rel[b],
                                                                 rel[a]),
                    f"undecided at {rel[m]} after {s.rounds} rounds: its intervals against "
                    "both ends reach within the tolerance"))
                return


def bisect(releases: Sequence[str], measure: Measure, *, rounds: int = ROUNDS,
           max_rounds: int = MAX_ROUNDS, tolerance: float = TOLERANCE) -> Bisection:
    """Bisect the figure ``measure`` gives over ``releases`` (GOOD first, BAD last, in
    the catalogue's order): the module's rules. ``rounds`` is the batch a step measures
    at a time (at least 2: an interval needs two pairs), ``max_rounds`` where an
    undecided step stops."""
    if len(releases) < 2 or len(set(releases)) != len(releases):
        raise ValueError("a bisection needs at least two distinct releases, GOOD first "
                         "and BAD last")
    run = _Run(releases, measure, rounds, max_rounds, tolerance)
    if not run.ends():
        ends = run.out.ends
        if ends is None or ends.ci_low is None or ends.ci_high is None:
            # no interval at all is not "no step": nothing was compared
            usable = 0 if ends is None else ends.pairs
            run.out.moves.append(Move(run.out.good, run.out.bad, False, why=(
                f"no interval between the ends: {usable} usable pair(s) of samples in "
                f"{len(run.out.rounds)} round(s) (samples the host disturbed, contended "
                "or shared-core, are left out); measure again on a quieter host")))
            run.out.status = INCOMPLETE
            return run.out
        run.out.status = NO_MOVE
        return run.out
    run.range(0, len(releases) - 1)
    run.out.status = MOVED if all(m.found for m in run.out.moves) else INCOMPLETE
    return run.out


def judge(candidate: str, good: str, bad: str, measure: Measure, *, rounds: int = ROUNDS,
          max_rounds: int = MAX_ROUNDS, tolerance: float = TOLERANCE) -> Step:
    """One candidate judged against both ends, as a bisection's step is (what one
    ``git bisect run`` call decides): rounds of GOOD, the candidate and BAD until it is
    like one end, or like neither twice, or ``max_rounds``; skipped when the candidate
    cannot be measured. :func:`exit_code` of its decision is what git reads."""
    run = _Run([good, candidate, bad], measure, rounds, max_rounds, tolerance)
    return run.step(candidate, good, bad)


def summary(b: Bisection) -> list[str]:
    """The result in lines for a terminal: the ends, each move, the path."""
    lines = [f"bisection {b.good} (good) → {b.bad} (bad) over {len(b.releases)} releases: "
             f"{b.status}"]
    if b.ends is not None:
        lines.append(f"  {b.bad} / {b.good}: {b.ends.text()}")
    for m in b.moves:
        head = f"  moved between {m.before} and {m.after}" if m.found else \
            f"  not narrowed: between {m.before} and {m.after} ({m.why})"
        figs = [f"{name} {_fig_text(f)}" for name, f in
                ((m.before, m.before_figure), (m.after, m.after_figure))]
        lines.append(head)
        lines.append("    " + " · ".join(figs))
        if m.ratio is not None:
            lines.append(f"    {m.after} / {m.before}: {m.ratio.text()}")
    for i, s in enumerate(b.steps, 1):
        detail = s.reason if s.decision == SKIPPED else ", ".join(
            f"vs {end} {e.text() if e is not None else 'no pairs'}"
            for end, e in ((s.good, s.vs_good), (s.bad, s.vs_bad)))
        lines.append(f"  step {i}: {s.release} in [{s.good}, {s.bad}]: {s.decision} "
                     f"({s.rounds} rounds; {detail})")
    return lines


def _fig_text(f: RobustFigure | None) -> str:
    if f is None:
        return "no figure"
    body = f"{f.median / 1e6:,.1f} MB/s"
    if f.ci_low is not None and f.ci_high is not None:
        body += f" [{f.ci_low / 1e6:,.1f}, {f.ci_high / 1e6:,.1f}]"
    return body + f" (n={f.kept})"
