"""The report's paired ratios: comparisons measured as comparisons, read back from the tree.

A repeated bench runs every variant once a round; the bench summary prints the ratios of
alternated samples (measure/paired.py: asm against no-asm, a newer release against an
older one, a mask against native), samples the host disturbed or more than 5 % below their
cell's best left out. The page shows the same ratios from the runs on
record, one table per CPU and bench session, so a reader compares builds by the interval
of their ratio, not by two medians whose spreads overlap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from openssl_matrix.measure.paired import Comparison, comparisons, usable_samples
from openssl_matrix.results.records import Run


@dataclass(frozen=True)
class _Outcome:
    """A run as measure/paired.py reads an outcome: its variant, round and figures."""

    variant: str
    round: int
    figures: tuple[Any, ...]


@dataclass(frozen=True)
class PairedRow:
    cpu: str
    session: str
    suite: str
    comparison: Comparison

    def as_dict(self) -> dict[str, Any]:
        return {"cpu": self.cpu, "session": self.session, "suite": self.suite,
                **self.comparison.as_dict()}

    def line(self) -> str:
        c, e = self.comparison, self.comparison.estimate
        return (f"{self.cpu} {self.suite}: {c.algorithm} at {c.block} bytes, {c.numerator} / "
                f"{c.denominator} = ×{e.ratio:.3f} [{e.ci_low:.3f}–{e.ci_high:.3f}] "
                f"({e.basis})" if e.ci_low is not None and e.ci_high is not None else
                f"{self.cpu} {self.suite}: {c.algorithm} at {c.block} bytes, {c.numerator} "
                f"/ {c.denominator} = ×{e.ratio:.3f} ({e.no_interval})")


def by_session(runs: Sequence[Run]) -> dict[tuple[str, str, str], list[Run]]:
    """The runs of bench sessions, by (CPU, session, suite), in that order: runs pair only
    within one of them (a run without a round or a session pairs with none)."""
    out: dict[tuple[str, str, str], list[Run]] = {}
    for run in runs:
        if run.meta.round is not None and run.meta.session:
            out.setdefault((run.cpu, run.meta.session, run.suite), []).append(run)
    return dict(sorted(out.items()))


def outcomes(runs: Sequence[Run]) -> list[_Outcome]:
    """``runs`` as measure/paired.py reads outcomes."""
    return [_Outcome(r.variant, int(r.meta.round or 0), r.figures) for r in runs]


def rows(runs: Sequence[Run], block: int) -> list[PairedRow]:
    """Every paired ratio at ``block`` bytes the tree's repeated bench sessions allow."""
    out: list[PairedRow] = []
    for (cpu, session, suite), mine in by_session(runs).items():
        outs = outcomes(mine)
        if len({o.round for o in outs}) < 2:
            continue  # one round: nothing is paired more than once
        out += [PairedRow(cpu, session, suite, c)
                for c in comparisons(usable_samples(outs), [block])]
    return out


def text(found: Sequence[PairedRow]) -> list[str]:
    if not found:
        return []
    return ["Paired ratios (alternated samples: Hodges–Lehmann ratio, distribution-free "
            "95 % interval; too few samples and pairs for one: none, and the line says so):",
            *[f"  {r.line()}" for r in found], ""]


def _cell(r: PairedRow) -> str:
    e = r.comparison.estimate
    if e.ci_low is None or e.ci_high is None:
        return f"×{e.ratio:.3f} <span class=\"muted\">({escape(e.no_interval or '')})</span>"
    return (f"×{e.ratio:.3f} [{e.ci_low:.3f}–{e.ci_high:.3f}] "
            f"<span class=\"muted\">±{e.relative_half_width or 0:.1%}</span>")


def html(found: Sequence[PairedRow], block: int) -> str:
    if not found:
        return ""
    body = "".join(
        f"<tr><td>{escape(r.cpu)}</td><td>{escape(r.session)}</td><td>{escape(r.suite)}</td>"
        f"<td>{escape(r.comparison.kind)}</td><td>{escape(r.comparison.numerator)} / "
        f"{escape(r.comparison.denominator)}</td><td>{escape(r.comparison.algorithm)}</td>"
        f"<td>{_cell(r)}</td><td>{escape(r.comparison.estimate.basis)}</td></tr>" for r in found)
    return (f'<h2 id="paired">Paired ratios at {block} bytes</h2>'
            '<p class="muted">Both sides of each comparison are measured in every round of '
            "one bench session, seconds apart. The ratio is the median of the ratios of "
            "every sample of one side to every sample of the other (Hodges–Lehmann), with "
            "the distribution-free 95 % interval of the Mann–Whitney test; a sample the "
            "host disturbed (contended, shared-core) or more than 5 % below its cell's "
            "best is left out. Too few samples for that interval (fewer than 4 a side) "
            "and fewer than 6 same-round pairs: no interval, and the row says so (too "
            "few pairs: n=…), never a Student's t on two or three pairs "
            "(docs/noise.md).</p><table><thead><tr><th>CPU</th>"
            "<th>session</th><th>suite</th><th>comparison</th><th>ratio of</th>"
            "<th>algorithm</th><th>ratio [95 %]</th><th>samples</th></tr></thead><tbody>"
            f"{body}</tbody>"
            "</table>\n")
