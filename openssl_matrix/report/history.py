"""History: a cell's sessions over time, the change-point rule, and the time chart.

The rule (:func:`changes`), stated once, as the page and ``docs/report.md`` say it:

    A session is a **change** when its 95 % interval does not overlap the interval of the
    reference session (the latest earlier session with an interval that was not itself an
    outlier), and the next ``MIN_RUN - 1`` sessions with an interval stay clear of the
    reference on the same side. When the later sessions needed to confirm it are not there
    yet (the change is in the newest session), it is a change *to confirm*; when one of
    them falls back, the session was an **outlier**, never a change, and is never a
    reference. A session without an interval (one sample, or a published report's
    transcribed figures) is shown in the history and never starts or confirms a change.
    The size of a change is ``median / reference median − 1``.

Why non-overlap of 95 % intervals: it is the conservative reading of two intervals
(Schenker & Gentleman, "On judging the significance of differences by examining the
overlap between confidence intervals", *The American Statistician* 55(3), 2001): two
95 % intervals that do not overlap mean a difference significant at a level well below
5 %, where overlapping ones do not prove the absence of one. The minimum run is what asv
(airspeed velocity) gets from its step detection (``asv/step_detect.py``, a penalised
piecewise-constant fit over the commits): one odd sample set is not a step. This code
does not fit steps; it applies the interval rule above, which a reader can check by eye
on the chart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from openssl_matrix.report.sessions import SessionFigure

#: Sessions with an interval that must stay clear of the reference for a change to be
#: confirmed (the changed session included).
MIN_RUN = 2

RULE = (f"a session whose 95 % interval does not overlap the reference session's (the "
        f"latest earlier one with an interval that was not an outlier), with the next "
        f"{MIN_RUN - 1} session(s) staying clear on the same side; in the newest "
        f"session, a change to confirm; sessions without an interval never count "
        f"(Schenker & Gentleman 2001 for the non-overlap test; the minimum run as in "
        f"asv's step detection)")


@dataclass(frozen=True)
class Change:
    """A change of one cell's figure: at which session, from which, by how much, and what
    else changed in the conditions between the two sessions."""

    at: SessionFigure
    reference: SessionFigure
    confirmed: bool
    """False: the change is in the newest session(s); confirm it with another session."""
    conditions: tuple[tuple[str, str | None, str | None], ...]

    @property
    def ratio(self) -> float:
        assert self.at.median is not None and self.reference.median  # intervals imply both
        return self.at.median / self.reference.median - 1

    @property
    def percent(self) -> str:
        return f"{self.ratio * 100:+.1f} %"

    @property
    def date(self) -> str:
        return self.at.when[:10]

    def text(self) -> str:
        """``changed on 2026-12-01 by -12.3 % (to confirm); kernel 6.1.0 → 6.1.1``."""
        out = f"changed on {self.date} by {self.percent}" + ("" if self.confirmed
                                                              else " (to confirm)")
        return out + "".join(f"; {what} {b or '—'} → {a or '—'}"
                             for what, b, a in self.conditions)

    def to_json(self) -> dict[str, object]:
        return {"session": self.at.session, "when": self.at.when,
                "reference_session": self.reference.session,
                "reference_when": self.reference.when, "from": self.reference.median,
                "to": self.at.median, "ratio": self.ratio, "confirmed": self.confirmed,
                "conditions_changed": [{"what": w, "before": b, "after": a}
                                       for w, b, a in self.conditions]}


def _interval(f: SessionFigure) -> tuple[float, float] | None:
    e = f.estimate
    if e is None or e.ci_low is None or e.ci_high is None:
        return None
    return e.ci_low, e.ci_high


def _side(f: SessionFigure, ref: SessionFigure) -> int:
    """+1 above the reference's interval, -1 below, 0 overlapping (or no interval)."""
    a, b = _interval(f), _interval(ref)
    if a is None or b is None:
        return 0
    if a[0] > b[1]:
        return 1
    if a[1] < b[0]:
        return -1
    return 0


def changes(history: Sequence[SessionFigure], min_run: int = MIN_RUN) -> list[Change]:
    """The changes of one cell's history (oldest first) by the rule above."""
    out: list[Change] = []
    ref: SessionFigure | None = None
    with_interval = [f for f in history if _interval(f) is not None]
    for i, f in enumerate(with_interval):
        if ref is None:
            ref = f
            continue
        side = _side(f, ref)
        if side == 0:
            ref = f
            continue
        after = with_interval[i + 1:i + min_run]
        if any(_side(g, ref) != side for g in after):
            continue  # an outlier: never a change, never a reference
        out.append(Change(f, ref, len(after) == min_run - 1,
                          tuple(f.prov.differences(ref.prov))))
        ref = f
    return out


# -- the time chart -------------------------------------------------------------------


def chart_svg(history: Sequence[SessionFigure], found: Sequence[Change], *,
              num: Callable[[float], str], scale: float, unit: str,
              shown: str | None = None, width: int = 560, height: int = 170) -> str:
    """A small SVG time chart: per session its 95 % interval (a bar) and its median (on
    the line), in session order (equal spacing; the dates under the first and last), a
    change as a red dot with a dashed line (its tooltip says what changed), the session
    the figure shows ringed. Inline in a page, no script. Drawn as one path for the
    intervals and one line for the medians, so a long history stays a few bytes per
    session (the page's table beside it has every number)."""
    pts = [(i, f, f.median) for i, f in enumerate(history) if f.median is not None]
    if not pts:
        return ""
    left, right, top, bottom = 64, 12, 10, 30
    spans = [_interval(f) or (m, m) for _, f, m in pts]
    lo, hi = min(a for a, _ in spans) / scale, max(b for _, b in spans) / scale
    pad = (hi - lo) * 0.1 or abs(hi) * 0.05 or 1.0
    lo, hi = lo - pad, hi + pad
    n = len(history)

    def x(i: int) -> float:
        return left + (width - left - right) * (0.5 if n == 1 else i / (n - 1))

    def y(v: float) -> float:
        return top + (height - top - bottom) * (1 - (v / scale - lo) / (hi - lo))

    changed = {c.at.session: c for c in found}
    parts = [f'<svg class="history" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="medians of {n} session(s) with their 95 % intervals">',
             f'<rect x="{left}" y="{top}" width="{width - left - right}" '
             f'height="{height - top - bottom}" fill="none" stroke="#ccc"/>']
    for v in (lo + pad, hi - pad):
        parts.append(f'<text x="{left - 4}" y="{y(v * scale) + 4:.1f}" font-size="10" '
                     f'text-anchor="end" fill="#555">{escape(num(v * scale))}</text>')
    parts.append(f'<text x="4" y="{top + 10}" font-size="10" fill="#555">'
                 f'{escape(unit)}</text>')
    parts.append(f'<text x="{left}" y="{height - 8}" font-size="10" fill="#555">'
                 f'{escape(history[0].when[:10])}</text>')
    if n > 1:
        parts.append(f'<text x="{width - right}" y="{height - 8}" font-size="10" '
                     f'text-anchor="end" fill="#555">{escape(history[-1].when[:10])}</text>')
    bars = "".join(f"M{x(i):.1f} {y(a):.1f}V{y(b):.1f}" for (i, _, _), (a, b)
                   in zip(pts, spans, strict=True) if a != b)
    if bars:
        parts.append(f'<path class="intervals" d="{bars}" stroke="#36c" fill="none"/>')
    line = " ".join(f"{x(i):.1f},{y(m):.1f}" for i, _, m in pts)
    parts.append(f'<polyline class="medians" points="{line}" fill="none" stroke="#36c" '
                 f'stroke-width="1"/>')
    for i, f, m in pts:
        c = changed.get(f.session)
        if c is not None:
            parts.append(f'<line class="change" x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{top}" '
                         f'y2="{height - bottom}" stroke="#b00" stroke-dasharray="3,2"/>'
                         f'<circle class="changed" cx="{x(i):.1f}" cy="{y(m):.1f}" r="4" '
                         f'fill="#b00"><title>{escape(c.text())}</title></circle>')
        if f.session == shown:
            parts.append(f'<circle class="shown" cx="{x(i):.1f}" cy="{y(m):.1f}" r="6" '
                         f'fill="none" stroke="#222"><title>{escape(f.when[:16])}: '
                         f'{escape(num(m))} (the figure shown)</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


#: The columns of a cell's ``history`` rows in report.json: the session's number in
#: ``sessions`` (1 = the oldest; its id, start, engine and conditions are there), the
#: median and 95 % interval of that session's usable figures (bytes/s, ops/s or conn/s),
#: their count, and the cell's image id in that session (an index into ``images``).
HISTORY_COLUMNS = ("session", "median", "ci_low", "ci_high", "n", "image")


def history_json(history: Sequence[SessionFigure], numbers: Mapping[str, int],
                 ) -> dict[str, Any]:
    """A cell's sessions for report.json, one compact row each (``HISTORY_COLUMNS``), so
    the file grows by a few bytes per cell and session."""
    images: list[str | None] = []
    rows = []
    for f in history:
        if f.prov.image_id not in images:
            images.append(f.prov.image_id)
        e = f.estimate

        def r(v: float | None) -> float | None:  # bytes/s to the byte, ops/s to 0.01
            return None if v is None else round(v) if abs(v) >= 1e5 else round(v, 2)

        rows.append([numbers.get(f.session), r(e.median) if e else None,
                     r(e.ci_low) if e else None, r(e.ci_high) if e else None,
                     e.n if e else 0, images.index(f.prov.image_id)])
    return {"history": rows, "images": images}
