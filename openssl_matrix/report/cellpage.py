"""A cell's own page and a session's page (``templates/cell.html.j2``, ``session.html.j2``).

The report's tables show one figure per cell and one link to the cell's page, so the main
page grows with the number of cells, not with the number of runs. A cell's page has its
figure, its history chart and changes, the runs of the session it shows (each linked to
its raw output and metadata, with its status), and one short row per session: its
figure, statuses, and what changed in its conditions since the session before. Each
session's own page (one per session of the tree, numbered oldest first as in the main
page's Sessions table) lists its runs and conditions. So the pages grow with cells ×
sessions by one table row each, and with runs by one row each: the report's size follows
what it shows, not the tree's.

The runs of the sessions the cells show are copied into the report folder (``runs/...``)
and linked there, so each figure stays traceable when the folder is moved; every other
run is linked into the results tree (relative links from the report folder), never
copied.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import jinja2

from openssl_matrix.core.resources import templates
from openssl_matrix.report.history import RULE, Change, chart_svg
from openssl_matrix.report.sessions import UNKNOWN, Provenance, SessionFigure, by_session
from openssl_matrix.report.view import RunLike, href
from openssl_matrix.results import records


class PageObservation(RunLike, Protocol):
    """A figure as a page lists it (``report.Observation``, ``report_ops.OpsObservation``):
    what names its run (``view.RunLike``) and what the page shows of it."""

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
    """Where pages link a run's files, from a folder one level below the report's: the
    copy in the report (the shown sessions' runs) or the results tree (every other run);
    and each session's page, by its number."""

    out: Path
    """The report folder as it will be once swapped in."""
    tree: Path
    copied: frozenset[Path]
    """Run folders (in the tree) copied into the report's ``runs/``."""
    numbers: Mapping[str, int]
    """Session id -> its number (oldest first), naming its page ``sessions/<n>.html``."""

    def run_dir(self, o: PageObservation) -> str:
        if o.run_path in self.copied:
            return f"../runs/{o.cpu}/{o.variant}/{o.suite}/{o.run}"
        return os.path.relpath(o.run_path, self.out / "cells")

    def session_page(self, session: str, up: str = "../") -> str | None:
        n = self.numbers.get(session)
        return None if n is None else f"{up}sessions/{n}.html"


def estimate_text(f: SessionFigure, unit: PageUnit) -> str:
    e = f.estimate
    if e is None:
        return "no usable figure"
    hw = e.half_width
    return unit.num(e.median) + ("" if hw is None else f" ± {unit.num(hw)}") + f" (n={e.n})"


def _run_links(obs: Sequence[PageObservation], value: Callable[[Any], float | None],
               unit: PageUnit, links: Links) -> list[dict[str, Any]]:
    out = []
    suites = {o.suite for o in obs}
    for o in sorted(obs, key=lambda o: (o.variant, o.suite, o.run)):
        base = links.run_dir(o)
        v = value(o)
        out.append({"name": o.run if len(suites) == 1 else f"{o.suite}/{o.run}",
                    "raw": href(f"{base}/{o.raw_file}"), "meta": href(f"{base}/{records.META}"),
                    "title": f"{o.variant}/{o.suite}/{o.run}: "
                             f"{unit.num(v) if v is not None else '—'} [{o.status}]",
                    "mark": "" if o.status == "ok" else o.status, "usable": o.usable})
    return out


def _session_rows(history: Sequence[SessionFigure], unit: PageUnit, links: Links,
                  found: Sequence[Change], shown: str | None) -> list[dict[str, Any]]:
    changed = {c.at.session: c for c in found}
    rows = []
    before: Provenance | None = None
    for f in history:
        c = changed.get(f.session)
        conditions = [] if before is None else f.prov.differences(before)
        rows.append({"when": f.when[:16].replace("T", " "), "number": links.numbers.get(
            f.session, "?"), "page": href(links.session_page(f.session) or ""),
            "figure": estimate_text(f, unit), "shown": f.session == shown,
            "not_ok": ", ".join(f"{n} {s}" for s, n in f.statuses),
            "conditions": "; ".join(f"{w} → {a or '—'}" for w, _, a in conditions),
            "change": c.text() if c else ""})
        before = f.prov
    rows.reverse()  # newest first
    return rows


def page_view(*, title: str, back: str, history: Sequence[SessionFigure],
              found: Sequence[Change], shown: SessionFigure | None,
              observations: Sequence[PageObservation], value: Callable[[Any], float | None],
              unit: PageUnit, links: Links, chosen: str) -> dict[str, Any]:
    """What ``templates/cell.html.j2`` lays out for one cell."""
    sid = shown.session if shown is not None else None
    current = by_session(observations).get(sid, []) if sid is not None else []
    return {
        "title": title, "back": back, "unit": unit.name, "chosen": chosen,
        "figure": estimate_text(shown, unit) if shown is not None else None,
        "shown": None if shown is None else {
            "session": shown.session, "when": shown.when,
            "page": href(links.session_page(shown.session) or "")},
        "sessions": len(history), "rule": RULE,
        "changes": [c.text() for c in found],
        "chart": chart_svg(history, found, num=unit.num, scale=unit.scale, unit=unit.name,
                           shown=sid),
        "runs": _run_links(current, value, unit, links),
        "rows": _session_rows(history, unit, links, found, sid),
        "tree": str(links.tree),
    }


def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates())), autoescape=True,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


#: The stylesheet the cell and session pages share (written once, beside index.html).
STYLESHEET = "report.css"


def write_pages(out: Path, pages: Iterable[tuple[str, Mapping[str, Any]]], css: str) -> int:
    """Write each (page path relative to ``out``, cell view) page, and the stylesheet
    ``css`` they link; return how many pages."""
    template = _env().get_template("cell.html.j2")
    count = 0
    (out / "cells").mkdir(exist_ok=True)
    (out / STYLESHEET).write_text(css, encoding="utf-8")
    for path, view in pages:
        (out / path).write_text(template.render(**view), encoding="utf-8")
        count += 1
    return count


def write_session_pages(out: Path, sessions: Sequence[Mapping[str, Any]],
                        observations: Iterable[PageObservation], links: Links) -> int:
    """One page per session of the tree (``sessions``: ``sessions.session_table``'s rows,
    numbered in order): its conditions and its runs, each linked to its folder, with the
    statuses of its figures."""
    runs: dict[str, dict[Path, tuple[PageObservation, dict[str, int]]]] = {}
    for o in observations:
        sid = (o.prov or UNKNOWN).session
        _, counts = runs.setdefault(sid, {}).setdefault(o.run_path, (o, {}))
        counts[o.status] = counts.get(o.status, 0) + 1
    template = _env().get_template("session.html.j2")
    (out / "sessions").mkdir(exist_ok=True)
    for n, row in enumerate(sessions, 1):
        entries = sorted(runs.get(str(row["session"]), {}).values(),
                         key=lambda e: (e[0].cpu, e[0].variant, e[0].suite, e[0].run))
        view = [{"name": f"{o.variant}/{o.suite}/{o.run}",
                 "href": href(links.run_dir(o) + "/"),
                 "image": ((o.prov or UNKNOWN).image_id or "—")[:19],
                 "statuses": ", ".join(f"{c} {s}" for s, c in sorted(counts.items())),
                 "copied": o.run_path in links.copied} for o, counts in entries]
        (out / "sessions" / f"{n}.html").write_text(
            template.render(number=n, session=row, runs=view, tree=str(links.tree)),
            encoding="utf-8")
    return len(sessions)


def change_rows(title: str, page: str, found: Sequence[Change],
                num: Callable[[float], str]) -> list[dict[str, Any]]:
    """The page's "Changes" rows of one cell (its latest change), and report.json's."""
    if not found:
        return []
    c = found[-1]
    return [{"title": title, "page": href(page), "date": c.date, "percent": c.percent,
             "confirmed": c.confirmed, "before": num(c.reference.median or 0),
             "after": num(c.at.median or 0),
             "conditions": [f"{w}: {b or '—'} → {a or '—'}" for w, b, a in c.conditions],
             "json": {"cell": title, "page": page, **c.to_json(),
                      "changes": len(found)}}]
