"""The report's *Bisections* section (issue 33 item 6): each bisection's path of steps.

For the newest bisection of each cell and pair of ends (``invoke matrix bisect``): its
status, the ends' ratio, each move (the adjacent pair where the figure moved, both
figures with their intervals and the ratio with its interval, or the range it could not
narrow and why), and every step of the path — the release measured, its decision against
both ends, what decided it (interleaved pairs and their runs, or rounds, and why rounds)
and both ratios, or why it was skipped. The record and the
printed summary are copied into the report folder (``bisections/``) so the page links to
them from disk."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from openssl_matrix.results.bisections import RECORD, SUMMARY
from openssl_matrix.results.tree import ResultsTree

FOLDER = "bisections"


@dataclass(frozen=True)
class BisectionRow:
    """One filed bisection, as the page and report.json show it."""

    cell: str
    build: str
    cpu: str
    good: str
    bad: str
    status: str
    ends: Mapping[str, Any] | None
    moves: tuple[Mapping[str, Any], ...]
    steps: tuple[Mapping[str, Any], ...]
    record: str  #: the copied bisection.json, relative to the report folder
    summary: str | None  #: the copied summary.txt, when there is one

    def as_dict(self) -> dict[str, Any]:
        return {"cell": self.cell, "build": self.build, "cpu": self.cpu, "good": self.good,
                "bad": self.bad, "status": self.status, "ends": self.ends,
                "moves": list(self.moves), "steps": list(self.steps),
                "record": self.record, "summary": self.summary}


def _maps(value: Any) -> tuple[Mapping[str, Any], ...]:
    return tuple(v for v in value if isinstance(v, Mapping)) if isinstance(value, list) \
        else ()


def rows(tree: ResultsTree, out: Path | None = None) -> list[BisectionRow]:
    """The newest bisection of every cell and pair of ends; with ``out``, each one's
    record and summary copied to ``out/bisections/NNN/``."""
    found = []
    for n, f in enumerate(tree.bisections(), 1):
        rel = Path(FOLDER) / f"{n:03d}"
        summary = None
        if out is not None:
            (out / rel).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f.folder / RECORD, out / rel / RECORD)
            if (f.folder / SUMMARY).is_file():
                shutil.copyfile(f.folder / SUMMARY, out / rel / SUMMARY)
                summary = (rel / SUMMARY).as_posix()
        r = f.record
        ends = r.get("ends")
        found.append(BisectionRow(
            str(r.get("cell", "?")), str(r.get("build", "")), str(r.get("cpu_profile", "")),
            str(r.get("good", "?")), str(r.get("bad", "?")), str(r.get("status", "?")),
            ends if isinstance(ends, Mapping) else None, _maps(r.get("moves")),
            _maps(r.get("steps")), (rel / RECORD).as_posix(), summary))
    return found


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def ratio_text(ratio: Mapping[str, Any] | None) -> str:
    """``×0.701 [0.690–0.712] (5 pairs)``, or what is missing."""
    if not isinstance(ratio, Mapping) or _num(ratio.get("ratio")) is None:
        return "—"
    text = f"×{_num(ratio.get('ratio')):.3f}"
    low, high = _num(ratio.get("ci_low")), _num(ratio.get("ci_high"))
    pairs = ratio.get("pairs")
    if (low is None or high is None) and ratio.get("basis") != "interleaved" \
            and isinstance(pairs, int):  # rounds: fewer than 6 pairs (stats.MIN_PAIRS)
        return text + f" (too few pairs: n={pairs})"
    text += f" [{low:.3f}–{high:.3f}]" if low is not None and high is not None \
        else " (no interval)"
    if ratio.get("basis") == "interleaved":
        return text + (f" ({pairs} interleaved blocks)" if isinstance(pairs, int) else
                       " (interleaved)")
    return text + (f" ({pairs} pairs)" if isinstance(pairs, int) else "")


def basis_text(s: Mapping[str, Any]) -> str:
    """What decided a step: ``interleaved, 1 run`` or ``rounds, 5`` (older records
    without a basis were decided from rounds)."""
    if s.get("basis") == "interleaved":
        runs = s.get("pair_runs")
        return f"interleaved, {runs} run{'' if runs == 1 else 's'}"
    return f"rounds, {s.get('rounds', '?')}"


def figure_text(figure: Mapping[str, Any] | None) -> str:
    """A release's figure in its unit as measured: ``median [low–high] (n)``."""
    if not isinstance(figure, Mapping) or _num(figure.get("median")) is None:
        return "—"
    text = f"{_num(figure.get('median')):,.0f}"
    low, high = _num(figure.get("ci_low")), _num(figure.get("ci_high"))
    if low is not None and high is not None:
        text += f" [{low:,.0f}–{high:,.0f}]"
    n = figure.get("n")
    return text + (f" (n={n})" if isinstance(n, int) else "")


def _move_line(m: Mapping[str, Any]) -> str:
    before, after = str(m.get("before", "?")), str(m.get("after", "?"))
    if m.get("found") is True:
        return (f"moved between {before} and {after}: {figure_text(m.get('before_figure'))}"
                f" → {figure_text(m.get('after_figure'))}, {ratio_text(m.get('ratio'))}")
    return f"not narrowed between {before} and {after}: {m.get('why') or 'no reason given'}"


def _step_line(s: Mapping[str, Any]) -> str:
    line = f"{s.get('release', '?')}: {s.get('decision', '?')}"
    if s.get("reason"):
        return f"{line} ({s.get('reason')})"
    why = f" (rounds because {s.get('why_rounds')})" if s.get("why_rounds") else ""
    return (f"{line} ({basis_text(s)}){why}; vs good "
            f"{ratio_text(s.get('vs_good'))}, vs bad {ratio_text(s.get('vs_bad'))}")


def text(found: Sequence[BisectionRow]) -> list[str]:
    """The summary's lines: each bisection, its moves and its path."""
    if not found:
        return []
    lines = ["Bisections (newest of each cell and pair of ends; docs/bisect.md):"]
    for b in found:
        lines.append(f"  {b.cell} {b.good} → {b.bad}"
                     f"{f' ({b.build})' if b.build else ''}: {b.status}; ends "
                     f"{ratio_text(b.ends)}")
        lines += [f"    {_move_line(m)}" for m in b.moves]
        lines += [f"    step {_step_line(s)}" for s in b.steps]
    return [*lines, ""]


def _step_row(s: Mapping[str, Any]) -> str:
    reason = escape(str(s.get("reason") or (
        f"from rounds: {s.get('why_rounds')}" if s.get("why_rounds") else "")))
    return (f"<tr><td>{escape(str(s.get('release', '?')))}</td>"
            f"<td>{escape(str(s.get('decision', '?')))}</td>"
            f"<td>{escape(basis_text(s))}</td>"
            f"<td>{escape(ratio_text(s.get('vs_good')))}</td>"
            f"<td>{escape(ratio_text(s.get('vs_bad')))}</td><td>{reason}</td></tr>")


def _one(b: BisectionRow) -> str:
    links = f'<a href="{escape(b.record)}">record</a>' + (
        f', <a href="{escape(b.summary)}">summary</a>' if b.summary else "")
    moves = "".join(f"<li>{escape(_move_line(m))}</li>" for m in b.moves) or \
        "<li>no move: no step larger than its interval</li>"
    steps = "".join(_step_row(s) for s in b.steps)
    where = ", ".join(x for x in (b.build, b.cpu) if x)
    return (f"<h3>{escape(b.cell)}: {escape(b.good)} → {escape(b.bad)}</h3>"
            f"<p><strong>{escape(b.status)}</strong>"
            f"{f' ({escape(where)})' if where else ''}; {escape(b.bad)} over "
            f"{escape(b.good)} {escape(ratio_text(b.ends))} — {links}</p><ul>{moves}</ul>"
            "<table><thead><tr><th>step</th><th>decision</th><th>decided from</th>"
            "<th>over the good end [95 %]</th><th>over the bad end [95 %]</th>"
            f"<th>skipped, or rounds, because</th></tr></thead><tbody>{steps}</tbody>"
            "</table>")


def html(found: Sequence[BisectionRow]) -> str:
    if not found:
        return ""
    return ('<h2 id="bisections">Bisections</h2>'
            '<p class="muted">Which release moved a figure (<code>invoke matrix bisect</code>,'
            " docs/bisect.md): each step compared with both ends — interleaved (both builds' "
            "EVP loops alternating in one process) where the pair harness can time the cell, "
            "else in the same rounds — and decided from the ratios' 95 % intervals (like "
            "the good end, like the bad end, undecided), so noise cannot flip a step; a move "
            "is named only when it is narrowed to two adjacent releases. The newest "
            f"bisection of each cell and pair of ends.</p>{''.join(_one(b) for b in found)}\n")
