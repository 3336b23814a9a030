"""The report's interleaved ratios: both sides of a comparison in one process, read back.

A speed suite with ``interleave`` measures each of its comparisons once more after its
rounds (measure/pairrun.py): the two builds (or a mask and native) in alternating 5-ms
windows of one harness process, so a neighbour on the core slows both alike. The page
shows the newest bench session's pairs of each CPU, every algorithm's ratio with its
95 % interval (batch means, measure/interleave.py), each linked to the harness's raw
output (copied into the report folder, so it opens from disk).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from openssl_matrix.results.interleaved import RAW, Filed, all_pairs

FOLDER = "interleaved"
DISTURBED = ("; disturbed: fewer than 12 blocks unslowed, so slowed ones are used too and "
             "the ratio may not be the code's")


@dataclass(frozen=True)
class InterleavedRow:
    cpu: str
    session: str
    kind: str
    numerator: str
    denominator: str
    algorithm: str
    block: int
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    blocks: int
    preempted: int
    raw: str  #: the raw output, relative to the report folder
    slowed: int = 0
    #: fewer than interleave.MIN_KEPT unslowed blocks: every unpreempted block was used
    disturbed: bool = False
    direction: str = ""  #: "digest", "encrypt" or "decrypt"
    #: the slower side's rate over its best in the session's pairs (measure/pairregime.py)
    rate_share: float | None = None
    low: bool = False  #: that share more than 10 % below 1: a neighbour held the run down
    #: the harness runs behind the row and each one's own ratio; with several, the ratio
    #: is their random-effects mean (measure/runsmeta.py), widened when they disagree
    runs: int = 1
    run_ratios: tuple[float | None, ...] = ()
    runs_disagree: bool = False
    ci_method: str = "t95-batches"

    @property
    def half_width(self) -> float | None:
        if self.ratio is None or self.ci_low is None or self.ci_high is None:
            return None
        return (self.ci_high - self.ci_low) / 2 / self.ratio

    def as_dict(self) -> dict[str, Any]:
        return {"cpu": self.cpu, "session": self.session, "kind": self.kind,
                "numerator": self.numerator, "denominator": self.denominator,
                "algorithm": self.algorithm, "block_size": self.block, "ratio": self.ratio,
                "ci_low": self.ci_low, "ci_high": self.ci_high, "blocks": self.blocks,
                "preempted": self.preempted, "slowed": self.slowed,
                "disturbed": self.disturbed, "direction": self.direction,
                "rate_share": self.rate_share, "low": self.low, "runs": self.runs,
                "run_ratios": list(self.run_ratios), "runs_disagree": self.runs_disagree,
                "ci_method": self.ci_method, "raw": self.raw}

    def line(self) -> str:
        alg = self.algorithm + (" decrypt" if self.direction == "decrypt" else "")
        what = f"{self.cpu}: {alg} at {self.block} bytes, {self.numerator} / {self.denominator}"
        if self.ratio is None:
            return f"{what}: no block without a preempted window"
        if self.half_width is None:
            return f"{what} = ×{self.ratio:.3f} ({self.blocks} blocks: no interval)"
        return (f"{what} = ×{self.ratio:.3f} [{self.ci_low:.3f}–{self.ci_high:.3f}] "
                f"({self.blocks} blocks{DISTURBED if self.disturbed else ''}"
                f"{self._low()}{self._runs()})")

    def runs_text(self) -> str:
        """Each run's own ratio: ``×1.195, ×1.078, ×1.035`` (``-``: a run without one)."""
        return ", ".join("-" if x is None else f"×{x:.3f}" for x in self.run_ratios)

    def _runs(self) -> str:
        if self.runs < 2:
            return ""
        if self.runs_disagree:
            return (f"; {self.runs} runs disagree beyond their intervals: "
                    f"{self.runs_text()}, the interval widened by their spread")
        return f"; {self.runs} runs: {self.runs_text()}"

    def _low(self) -> str:
        if not self.low or self.rate_share is None:
            return ""
        return (f"; sits low: a side ran at {self.rate_share:.0%} of its best in the "
                "session's other pairs")


def _newest(filed: Sequence[Filed]) -> list[Filed]:
    """The pairs of each CPU's newest bench session (by the latest start of its pairs); a
    reproduction's runs (repro/pairs.py) are its verdicts' and shown with them."""
    filed = [f for f in filed if f.record.reproduction is None]
    latest: dict[str, tuple[str, str]] = {}
    for f in filed:
        started = f.record.started
        if f.cpu not in latest or (started, f.session) > latest[f.cpu]:
            latest[f.cpu] = (started, f.session)
    keep = {(cpu, s) for cpu, (_, s) in latest.items()}
    return [f for f in filed if (f.cpu, f.session) in keep]


def rows(root: Path, out: Path | None = None) -> list[InterleavedRow]:
    """Every algorithm of the newest session's pairs per CPU; with ``out``, each pair's
    raw output is copied to ``out/interleaved/<cpu>/<session>/<pair>/raw.txt``."""
    found: list[InterleavedRow] = []
    for f in _newest(all_pairs(root)):
        rel = Path(FOLDER) / f.cpu / f.session / f.folder.name / RAW
        if out is not None and (f.folder / RAW).is_file():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f.folder / RAW, out / rel)
        rec = f.record
        for row in rec.algorithms:
            e = row.estimate
            found.append(InterleavedRow(
                f.cpu, f.session, rec.kind, rec.numerator, rec.denominator, row.algorithm,
                row.block_size, _num(row.ratio), _num(row.ci_low), _num(row.ci_high),
                0 if e is None else e.blocks, 0 if e is None else e.preempted,
                rel.as_posix(), 0 if e is None else (e.slowed or 0),
                e is not None and e.disturbed is True, row.direction,
                _num(row.rate_share), row.low is True, row.runs or 1,
                () if e is None else tuple(d.ratio for d in e.runs_detail or ()),
                e is not None and e.runs_disagree is True,
                (None if e is None else e.ci_method) or "t95-batches"))
    return found


def _num(value: float | None) -> float | None:
    return None if value is None else float(value)


def text(found: Sequence[InterleavedRow]) -> list[str]:
    if not found:
        return []
    return ["Interleaved ratios (both sides in one process, alternating 5-ms windows: the "
            "geometric mean of batches of 10 blocks, Student's t 95 % interval over the "
            "batches):",
            *[f"  {r.line()}" for r in found], ""]


def _cell(r: InterleavedRow) -> str:
    if r.ratio is None:
        return '<span class="muted">no block without a preempted window</span>'
    if r.half_width is None or r.ci_low is None or r.ci_high is None:
        return f'×{r.ratio:.3f} <span class="muted">(too few blocks for an interval)</span>'
    return (f"×{r.ratio:.3f} [{r.ci_low:.3f}–{r.ci_high:.3f}] "
            f'<span class="muted">±{r.half_width:.1%}</span>'
            + ('<br><span class="bad">disturbed</span>' if r.disturbed else "")
            + (f'<br><span class="bad">sits low: a side at {r.rate_share:.0%} of its best'
               "</span>" if r.low and r.rate_share is not None else "")
            + (f'<br><span class="bad">runs disagree</span> <span class="muted">'
               f"{escape(r.runs_text())}</span>" if r.runs_disagree else
               f'<br><span class="muted">{r.runs} runs: {escape(r.runs_text())}</span>'
               if r.runs > 1 and r.run_ratios else ""))


def html(found: Sequence[InterleavedRow]) -> str:
    if not found:
        return ""
    body = "".join(
        f"<tr><td>{escape(r.cpu)}</td><td>{escape(r.kind)}</td><td>{escape(r.numerator)} / "
        f"{escape(r.denominator)}</td><td>{escape(r.algorithm)}"
        f"{' decrypt' if r.direction == 'decrypt' else ''}</td><td>{r.block}</td>"
        f"<td>{_cell(r)}</td><td>{r.blocks} ({r.preempted} preempted, {r.slowed} slowed)</td>"
        f'<td><a href="{escape(r.raw)}">raw</a></td></tr>' for r in found)
    return ('<h2 id="interleaved">Interleaved ratios</h2>'
            '<p class="muted">Each comparison measured once more with both sides in one '
            "process of the interleaving harness, in 5-ms windows that alternate A B B A, "
            "so a neighbour on the core slows both sides alike. The ratio is the geometric "
            "mean of batches of 10 blocks with Student's t 95 % interval over the batches "
            "(neighbouring blocks share a neighbour: they are not independent); a block with a "
            "window the thread did not have the CPU for 90 % of, or with a side more than "
            "10 % below its usual rate (a neighbour slows two code paths unequally), is "
            "left out (<em>disturbed</em>: fewer than 12 blocks were left, all were used). "
            "<em>Sits low</em>: a side ran more than 10 % below its own best in the "
            "session's other pairs, and did again when its pair was measured again. "
            "An algorithm run several times shows each run's ratio; the ratio is then their "
            "random-effects mean, its interval widened by how far the runs lie apart, and "
            "<em>runs disagree</em> marks runs further apart than their own intervals allow "
            "(a neighbour that stayed for a whole run moved it). "
            "The newest "
            "bench session of each CPU (docs/noise.md).</p><table><thead><tr><th>CPU</th>"
            "<th>comparison</th><th>ratio of</th><th>algorithm</th><th>bytes</th>"
            "<th>ratio [95 %]</th><th>blocks</th><th>output</th></tr></thead><tbody>"
            f"{body}</tbody></table>\n")
