"""A cell's own page: its figure, its history chart and changes, and every session with
its runs, raw outputs and statuses (``templates/cell.html.j2``).

The report's tables show one figure per cell and one link here, so the main page grows
with the number of cells, not with the number of runs. The runs of the session a cell
shows are copied into the report folder (``runs/...``) and linked there, so the figure
stays traceable when the folder is moved; the runs of earlier sessions are linked into
the results tree (relative links from the report folder), never copied, so the report's
size follows what it shows.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import jinja2

from . import records
from .history import RULE, Change, chart_svg
from .reportview import href
from .sessions import Provenance, SessionFigure, by_session

TEMPLATES = Path(__file__).resolve().parent / "templates"


class PageObservation(Protocol):
    """A figure as its cell page lists it (``report.Observation``,
    ``report_ops.OpsObservation``)."""

    @property
    def cpu(self) -> str: ...
    @property
    def variant(self) -> str: ...
    @property
    def suite(self) -> str: ...
    @property
    def run(self) -> str: ...
    @property
    def run_path(self) -> Path: ...
    @property
    def raw_file(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def usable(self) -> bool: ...
    @property
    def prov(self) -> Provenance | None: ...


@dataclass(frozen=True)
class PageUnit:
    """How a page prints a figure: its unit's name, divisor for charts, and format."""

    name: str
    scale: float
    num: Callable[[float], str]


@dataclass(frozen=True)
class Links:
    """Where a page links a run's files: the copy in the report (the shown sessions'
    runs) or the results tree (every other run), relative to the cell pages' folder."""

    out: Path
    """The report folder as it will be once swapped in."""
    tree: Path
    copied: frozenset[Path]
    """Run folders (in the tree) copied into the report's ``runs/``."""

    def run_dir(self, o: PageObservation) -> str:
        if o.run_path in self.copied:
            return f"../runs/{o.cpu}/{o.variant}/{o.suite}/{o.run}"
        return os.path.relpath(o.run_path, self.out / "cells")


def estimate_text(f: SessionFigure, unit: PageUnit) -> str:
    e = f.estimate
    if e is None:
        return "no usable figure"
    hw = e.half_width
    return unit.num(e.median) + ("" if hw is None else f" ± {unit.num(hw)}") + f" (n={e.n})"


def _session_rows(history: Sequence[SessionFigure], obs: Sequence[PageObservation],
                  value: Callable[[Any], float | None], unit: PageUnit, links: Links,
                  found: Sequence[Change], shown: str | None) -> list[dict[str, Any]]:
    groups = by_session(obs)
    changed = {c.at.session: c for c in found}
    rows = []
    for f in reversed(history):
        runs = []
        for o in sorted(groups.get(f.session, []), key=lambda o: (o.variant, o.suite, o.run)):
            base = links.run_dir(o)
            v = value(o)
            runs.append({"name": o.run if len({x.suite for x in groups[f.session]}) == 1
                         else f"{o.suite}/{o.run}",
                         "raw": href(f"{base}/{o.raw_file}"),
                         "meta": href(f"{base}/{records.META}"),
                         "title": f"{o.variant}/{o.suite}/{o.run}: "
                                  f"{unit.num(v) if v is not None else '—'} [{o.status}]",
                         "mark": "" if o.status == "ok" else o.status, "usable": o.usable})
        c = changed.get(f.session)
        p = f.prov
        rows.append({"when": f.when[:19].replace("T", " "), "session": f.session,
                     "derived": p.derived, "engine": p.engine,
                     "image": (p.image_id or "—")[:19], "kernel": p.kernel or "—",
                     "figure": estimate_text(f, unit), "shown": f.session == shown,
                     "not_ok": ", ".join(f"{n} {s}" for s, n in f.statuses),
                     "change": c.text() if c else "", "runs": runs})
    return rows


def page_view(*, title: str, back: str, history: Sequence[SessionFigure],
              found: Sequence[Change], shown: SessionFigure | None,
              observations: Sequence[PageObservation], value: Callable[[Any], float | None],
              unit: PageUnit, links: Links, chosen: str) -> dict[str, Any]:
    """What ``templates/cell.html.j2`` lays out for one cell."""
    sid = shown.session if shown is not None else None
    return {
        "title": title, "back": back, "unit": unit.name, "chosen": chosen,
        "figure": estimate_text(shown, unit) if shown is not None else None,
        "shown": None if shown is None else {"session": shown.session, "when": shown.when},
        "sessions": len(history), "rule": RULE,
        "changes": [c.text() for c in found],
        "chart": chart_svg(history, found, num=unit.num, scale=unit.scale, unit=unit.name,
                           shown=sid),
        "rows": _session_rows(history, observations, value, unit, links, found, sid),
        "tree": str(links.tree),
    }


def _template() -> jinja2.Template:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.get_template("cell.html.j2")


def write_pages(out: Path, pages: Iterable[tuple[str, Mapping[str, Any]]], css: str) -> int:
    """Write each (page path relative to ``out``, view) page; return how many."""
    template = _template()
    count = 0
    (out / "cells").mkdir(exist_ok=True)
    for path, view in pages:
        (out / path).write_text(template.render(css=css, **view), encoding="utf-8")
        count += 1
    return count
