"""Report tables and charts for figures in operations per second: public-key operations
(``kind: pkey`` suites) and TLS handshakes (``kind: tls``), by version.

``report.build_report`` calls :func:`write_ops` and puts the HTML it returns into the
page. One table per (CPU, suite kind, arch): rows are algorithm and operation (for TLS:
protocol, server key, full handshake or resumption, pinning), columns are the variants in
version order; a cell is the median of every usable figure over all runs (the statuses of
core.statuses.USABLE_STATUSES), with the range and count, the ratio to the table's first column,
and one link per run to the raw output it was read from. Higher is better everywhere.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import jinja2

from openssl_matrix.core.names import fold
from openssl_matrix.core.resources import templates
from openssl_matrix.core.stats import compare, estimate
from openssl_matrix.core.version import sort_key
from openssl_matrix.matrix.kinds import find_kind
from openssl_matrix.matrix.kinds.base import FIGURES_OPERATIONS
from openssl_matrix.matrix.pkey import ALGORITHMS
from openssl_matrix.report.cellpage import Links, PageUnit, change_rows, page_view, write_pages
from openssl_matrix.report.charts import (
    SaveFigure,
    flagged_bar,
    legend,
    new_figure,
    save_figure,
    series_colors,
)
from openssl_matrix.report.history import Change, changes, history_json
from openssl_matrix.report.sessions import (
    UNKNOWN,
    Provenance,
    Selection,
    SessionFigure,
    Sessions,
    split,
)
from openssl_matrix.report.types import Flagged, ReleaseColumn
from openssl_matrix.report.view import href as _href
from openssl_matrix.report.view import run_folder
from openssl_matrix.results import records
from openssl_matrix.results.tree import ResultsTree


@dataclass(frozen=True)
class OpsObservation(ReleaseColumn):
    cpu: str
    variant: str
    version: str
    asm: bool
    arch: str
    kind: str
    suite: str
    run: str
    run_path: Path
    invocation: str
    algorithm: str
    operation: str
    row: str
    value: float | None
    status: str
    raw_file: str
    bottleneck: str | None = None
    round: int = 1
    short: str = ""
    """The row's name in charts."""
    prov: Provenance | None = None
    """The run's session and conditions (``sessions``)."""


def _unit(kind: str) -> str:
    """The unit of a table's figures (its kind's)."""
    facts = find_kind(kind)
    return "ops/s" if facts is None else facts.figure_unit


def _log_scale(kind: str) -> bool:
    """Whether a table's chart has a log axis (its kind's figures span decades)."""
    facts = find_kind(kind)
    return facts is None or facts.log_scale


def _title(kind: str) -> str:
    facts = find_kind(kind)
    return kind if facts is None or facts.table_title is None else facts.table_title


def _refuses(kind: str) -> bool:
    """Whether a table's run notes say which operations a version could not measure
    (a kind of operations spelled per version: ``pkey.plan``)."""
    facts = find_kind(kind)
    return facts is not None and facts.figures == FIGURES_OPERATIONS


def ops_observations(tree: ResultsTree, sessions: Sessions | None = None,
                     runs: Iterable[records.Run] | None = None) -> list[OpsObservation]:
    """Every ops-per-second figure of a pkey or tls run in the tree (or of its finished
    ``runs``, read once by the caller), with its session."""
    sessions = sessions or Sessions(tree)
    out: list[OpsObservation] = []
    for run in tree.finished_runs() if runs is None else runs:
        meta = run.meta
        suite = meta.suite or {}
        kind = str(suite.get("kind") or "speed")
        facts = find_kind(kind)
        if facts is None or facts.table_title is None:  # no table of operations
            continue
        variant = meta.variant or {}
        prov = sessions.provenance(run)
        for figure in run.figures:
            if figure.operation is None:
                continue
            fig = figure.to_json()
            value = figure.ops_per_s
            out.append(OpsObservation(
                cpu=run.cpu, variant=run.variant, version=str(variant.get("version") or "?"),
                asm=bool(variant.get("asm", True)), arch=str(variant.get("arch") or "?"),
                kind=kind, suite=run.suite, run=run.run, run_path=run.path,
                invocation=str(figure.invocation or ""), algorithm=figure.algorithm,
                operation=str(figure.operation), row=facts.row_label(fig),
                short=facts.short_label(fig),
                value=float(value) if value is not None else None,
                status=figure.status or "?", raw_file=f"raw/{figure.invocation}.stdout",
                bottleneck=fig.get("bottleneck"), round=int(meta.round or 1), prov=prov))
    return out


@dataclass
class OpsTable:
    cpu: str
    kind: str
    arch: str
    rows: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    cells: dict[tuple[str, str], list[OpsObservation]] = field(default_factory=dict)
    short: dict[str, str] = field(default_factory=dict)
    algorithm: dict[str, str] = field(default_factory=dict)
    """Row -> the figures' algorithm id (``kem-ml-kem-768``)."""
    refused: dict[tuple[str, str], str] = field(default_factory=dict)
    """(algorithm id, column) -> why the runs of that column did not measure it."""
    selection: Selection = field(default_factory=Selection)
    """Which session each cell shows (the latest by default; ``sessions``)."""

    @cached_property
    def _sessions(self) -> dict[tuple[str, str], tuple[list[SessionFigure],
                                                       SessionFigure | None,
                                                       list[OpsObservation]]]:
        out = {}
        for key, obs in self.cells.items():
            history = self.selection.keep(split(obs, lambda o: o.value))
            shown = self.selection.choose(history)
            sid = shown.session if shown is not None else None
            out[key] = (history, shown, [o for o in obs if (o.prov or UNKNOWN).session == sid])
        return out

    def history(self, row: str, column: str) -> list[SessionFigure]:
        """The cell's sessions, oldest first, one entry each."""
        return self._sessions[(row, column)][0] if (row, column) in self.cells else []

    def shown(self, row: str, column: str) -> SessionFigure | None:
        return self._sessions[(row, column)][1] if (row, column) in self.cells else None

    def current(self, row: str, column: str) -> list[OpsObservation]:
        """The figures of the session the cell shows: the only ones its figure uses."""
        return self._sessions[(row, column)][2] if (row, column) in self.cells else []

    def changes(self, row: str, column: str) -> list[Change]:
        return changes(self.history(row, column))

    def page(self, row: str, column: str) -> str:
        """The cell's own page in the report folder (``cellpage``)."""
        digest = hashlib.sha256(row.encode()).hexdigest()[:8]
        return f"cells/{self.slug}--{fold(self.short.get(row, row))[:40]}-{digest}--" \
            f"{fold(column)}.html"

    def refusal(self, row: str, column: str) -> str | None:
        return self.refused.get((self.algorithm.get(row, ""), column))

    @property
    def title(self) -> str:
        return f"{self.cpu} · {self.arch} · {_title(self.kind)}"

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9.]+", "-", f"{self.kind}-{self.cpu}-{self.arch}").strip("-")

    def values(self, row: str, column: str) -> list[float]:
        """The usable figures of the cell's shown session."""
        return [o.value for o in self.current(row, column)
                if o.usable and o.value is not None]

    def median(self, row: str, column: str) -> float | None:
        vals = self.values(row, column)
        return statistics.median(vals) if vals else None

    def flagged(self, row: str, column: str) -> Flagged | None:
        """What a cell with figures but not one usable shows instead (None otherwise)."""
        obs = self.current(row, column)
        if not obs or self.values(row, column):
            return None
        return Flagged.of((o.value for o in obs), (o.status for o in obs))

    def error_bar(self, row: str, column: str, *, log: bool) -> tuple[float, float]:
        """(below, above) the median for a chart: the 95 % interval's half-width (``stats``,
        as the bulk charts), the lower arm stopping at zero, or on a log axis (which has
        no zero) at a tenth of the median."""
        e = estimate(self.values(row, column))
        hw = e.half_width if e is not None else None
        if e is None or hw is None:
            return 0.0, 0.0
        return min(hw, 0.9 * e.median if log else e.median), hw

    def ratio(self, row: str, column: str) -> tuple[float, float, float] | None:
        """The ratio to the first column as a comparison (stats.compare: Hodges–Lehmann
        of both cells' clean samples, distribution-free 95 % interval); with too few
        samples for that interval, the median ratio and the widest the ranges allow."""
        if not self.columns or column == self.columns[0]:
            return None
        a, b = self.values(row, column), self.values(row, self.columns[0])
        if not a or not b or min(b) <= 0:
            return None
        e = compare(a, b)
        if e is not None and e.ci_low is not None and e.ci_high is not None:
            return e.ratio, e.ci_low, e.ci_high
        return (statistics.median(a) / statistics.median(b), min(a) / max(b),
                max(a) / min(b))


def ops_tables(obs: Sequence[OpsObservation],
               selection: Selection | None = None) -> list[OpsTable]:
    tables: dict[tuple[str, str, str], OpsTable] = {}
    sel = selection or Selection()
    for o in obs:
        t = tables.setdefault((o.cpu, o.kind, o.arch),
                              OpsTable(o.cpu, o.kind, o.arch, selection=sel))
        if o.row not in t.rows:
            t.rows.append(o.row)
            t.short[o.row] = o.short or o.row
            t.algorithm[o.row] = o.algorithm
        if o.column not in t.columns:
            t.columns.append(o.column)
        t.cells.setdefault((o.row, o.column), []).append(o)
    for t in tables.values():
        t.columns.sort(key=lambda c: (sort_key(c.split()[0]), c))
        t.rows.sort()
    return [tables[k] for k in sorted(tables)]


_NOT_MEASURED = re.compile(r"^(\S+): not measured: (.+)$")


def add_refusals(tree: ResultsTree, tables: Sequence[OpsTable],
                 runs: Iterable[records.Run] | None = None) -> None:
    """Note in each table why a column lacks a public-key row: the run's notes say which
    algorithm its version or build could not measure (``pkey.plan``)."""
    by_key = {(t.cpu, t.arch): t for t in tables if _refuses(t.kind)}
    for run in tree.finished_runs(figures=False) if runs is None else runs:
        variant = run.meta.variant or {}
        t = by_key.get((run.cpu, str(variant.get("arch") or "?")))
        if t is None or str((run.meta.suite or {}).get("kind")) != t.kind:
            continue
        column = str(variant.get("version") or "?") + ("" if variant.get("asm", True)
                                                       else " no-asm")
        for note in run.meta.get("notes") or ():
            m = _NOT_MEASURED.match(str(note))
            alg = ALGORITHMS.get(m.group(1)) if m else None
            if m and alg is not None:
                t.refused.setdefault((alg.figure, column), m.group(2))


def _fmt(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def value_text(t: OpsTable, row: str, column: str) -> str:
    """A cell as a figure is shown everywhere: ``median ± half-width of the 95 % interval
    (n=…)`` over its usable figures; ``(n=1)`` alone with one; with none, what the flagged
    figures read, named by their statuses (``≈ 1,234, all 2 contended``), never a median."""
    e = estimate(t.values(row, column))
    if e is not None:
        hw = e.half_width
        return f"{_fmt(e.median)}" + (f" ± {_fmt(hw)}" if hw is not None else "") \
            + f" (n={e.n})"
    flagged = t.flagged(row, column) or Flagged(None, ())
    return flagged.text(_fmt) or f"no figure ({flagged.counts})"


def table_text(t: OpsTable) -> list[str]:
    """The terminal's version of one table (``invoke matrix report``)."""
    unit = _unit(t.kind)
    cells = {(r, c): value_text(t, r, c) if t.cells.get((r, c))
             else "not measured" if t.refusal(r, c) else "—"
             for r in t.rows for c in t.columns}
    width = max([len(r) for r in t.rows] + [4])
    colw = max([len(v) for v in cells.values()] + [len(c) + 8 for c in t.columns])
    lines = [f"{t.title} — median ± half-width of the 95 % interval, {unit}; flagged "
             "figures (contended …) never count",
             "  " + f"{'what':<{width}}  " + "  ".join(f"{'OpenSSL ' + c:>{colw}}"
                                                        for c in t.columns)]
    for r in t.rows:
        lines.append("  " + f"{r:<{width}}  " + "  ".join(f"{cells[(r, c)]:>{colw}}"
                                                         for c in t.columns))
    return [*lines, *(f"  {x}" for x in refusal_lines(t)), ""]


def refusal_lines(t: OpsTable) -> list[str]:
    """What the table's runs did not measure and why, one line per algorithm."""
    refused: dict[str, list[tuple[str, str]]] = {}
    for (alg, column), why in sorted(t.refused.items()):
        refused.setdefault(alg, []).append((column, why))
    return [f"{alg}: not measured on {', '.join(c for c, _ in where)}: {where[0][1]}"
            for alg, where in refused.items()]


def _cell_view(t: OpsTable, row: str, column: str) -> dict[str, Any] | None:
    """What the template shows for one cell (see templates/report_ops.html.j2): the shown
    session's figure and one link to the cell's own page (``cellpage``)."""
    obs = t.cells.get((row, column))
    if not obs:
        why = t.refusal(row, column)
        return {"refused": why.split(" (")[0], "why": why} if why else None
    vals = t.values(row, column)
    ratio = t.ratio(row, column)
    current = t.current(row, column)
    found = t.changes(row, column)
    shown = t.shown(row, column)
    sessions = len(t.history(row, column))
    return {"refused": None,
            "value": value_text(t, row, column) if current else "not in this session",
            "usable": bool(vals),
            "spread": f"range {_fmt(min(vals))}–{_fmt(max(vals))}" if len(vals) > 1 else None,
            "ratio": None if ratio is None else
            f"×{ratio[0]:.2f} [{ratio[1]:.2f}–{ratio[2]:.2f}]",
            "bottleneck": ", ".join(sorted({o.bottleneck for o in current if o.bottleneck})),
            "page": _href(t.page(row, column)), "sessions": sessions,
            "title": f"{row} · OpenSSL {column}: {sessions} session(s)"
                     + (f", showing {shown.session}" if shown else ""),
            "change": found[-1].text() if found else None}


# Why the public-key chart has a log axis where every other chart is linear: one table
# holds RSA-4096 signing (~200 ops/s here) and RSA-2048 verification (~50,000 ops/s); on
# a linear axis the slow operations' bars, often the ones versions differ in most, are a
# few pixels wide. The TLS chart's rates stay within one order of magnitude: linear.
# Both carry the 95 % intervals as error bars, like the bulk charts (docs/report.md).


def chart_rows(t: OpsTable) -> list[str]:
    """The rows a chart shows: every row with a figure, usable or flagged (a row of only
    contended figures is drawn by ``report.flagged_bar``, never left out); none when not
    one figure of the table is usable. With several versions, rows only one version has
    are left to the table (3.2+ speed adds generic kem-/sig- RSA rows), except
    ML-KEM/ML-DSA."""
    rows = [r for r in t.rows if any(t.cells.get((r, c)) for c in t.columns)]
    if len(t.columns) > 1:
        rows = [r for r in rows if "-ml-" in r
                or sum(1 for c in t.columns if t.cells.get((r, c))) > 1] or rows
    return rows if any(t.median(r, c) for r in rows for c in t.columns) else []


def chart(t: OpsTable, path: Path, save: SaveFigure = save_figure) -> bool:
    """Bars per row (``chart_rows``) and version: medians with their 95 % intervals, a
    cell without one usable figure as ``charts.flagged_bar``."""
    rows = chart_rows(t)
    if not rows:
        return False
    fig = new_figure(max(3.0, 0.42 * len(rows) * max(1, len(t.columns)) / 2 + 1.5))
    ax = fig.subplots()
    height = 0.8 / max(1, len(t.columns))
    log = _log_scale(t.kind)  # see above
    if log:
        ax.set_xscale("log")
    colors = series_colors()
    entries: list[tuple[str, str, bool]] = []
    flagged = False
    for i, c in enumerate(t.columns):
        color = colors[i % len(colors)]
        ys, xs, lows, highs = [], [], [], []
        for j, r in enumerate(rows):
            y = j - 0.4 + height * (i + 0.5)
            m = t.median(r, c)
            if m:
                ys.append(y)
                xs.append(m)
                low, high = t.error_bar(r, c, log=log)
                lows.append(low)
                highs.append(high)
            elif (f := t.flagged(r, c)) is not None:
                flagged_bar(ax, y, height, f, color, 1.0, horizontal=True)
                flagged = True
        if ys:
            ax.barh(ys, xs, height=height, color=color, xerr=[lows, highs], capsize=2,
                    error_kw={"elinewidth": 0.8})
        entries.append((f"OpenSSL {c}", color, False))
    ax.set_yticks(range(len(rows)), [t.short.get(r, r) for r in rows], fontsize=8)
    ax.invert_yaxis()
    if not log:
        ax.set_xlabel("connections per second (median; bars: 95 % interval; higher is "
                      "better)")
    else:
        ax.set_xlabel("operations per second (median, log scale; bars: 95 % interval; "
                      "higher is better)")
    ax.set_title(t.title, fontsize=10)
    legend(ax, entries, flagged, loc="lower right")
    ax.grid(axis="x", which="both", alpha=0.3)
    save(fig, path)
    return True


CELL_FIELDS = ("cpu", "kind", "arch", "row", "column", "median", "ci_low", "ci_high",
               "min", "max", "n",
               "ratio_to_first", "ratio_low", "ratio_high", "not_usable", "runs", "session",
               "session_started", "sessions", "changed", "page")


def cell_rows(tables: Sequence[OpsTable]) -> list[dict[str, Any]]:
    out = []
    for t in tables:
        for r in t.rows:
            for c in t.columns:
                obs = t.current(r, c)
                if not t.cells.get((r, c)):
                    continue
                shown = t.shown(r, c)
                found = t.changes(r, c)
                vals = t.values(r, c)
                ratio = t.ratio(r, c)
                e = estimate(vals)
                out.append({
                    "cpu": t.cpu, "kind": t.kind, "arch": t.arch, "row": r, "column": c,
                    "median": t.median(r, c), "ci_low": e.ci_low if e else None,
                    "ci_high": e.ci_high if e else None, "min": min(vals) if vals else None,
                    "max": max(vals) if vals else None, "n": len(vals),
                    "ratio_to_first": ratio[0] if ratio else None,
                    "ratio_low": ratio[1] if ratio else None,
                    "ratio_high": ratio[2] if ratio else None,
                    "not_usable": len(obs) - len(vals),
                    "runs": " ".join(sorted({run_folder(o) for o in obs})),
                    "session": shown.session if shown else None,
                    "session_started": shown.when if shown else None,
                    "sessions": len(t.history(r, c)),
                    "changed": found[-1].text() if found else "",
                    "page": t.page(r, c)})
    return out


@dataclass(frozen=True)
class OpsSection:
    """What :func:`write_ops` made: the page's section, charts, counts, terminal lines,
    the figures its cells show, their changes and their rows with history for
    report.json."""

    html: str
    charts: list[Path]
    figures: int
    tables: int
    lines: list[str]
    current: list[OpsObservation] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)
    json_cells: list[dict[str, Any]] = field(default_factory=list)


def _page_unit(t: OpsTable) -> PageUnit:
    return PageUnit(_unit(t.kind), 1.0, _fmt)


def write_ops(tree: ResultsTree, out: Path,
              obs: Sequence[OpsObservation] | None = None, *,
              selection: Selection | None = None, final: Path | None = None,
              css: str = "", numbers: Mapping[str, int] | None = None,
              runs: Sequence[records.Run] = (),
              save: SaveFigure = save_figure) -> OpsSection:
    """Tables, charts, cell pages and data of the ops-per-second figures ``obs`` (default:
    read from the tree) into the report folder ``out`` (``final``: where it will live, for
    the cell pages' links into the tree; ``save``: what writes a chart). Copies nothing:
    ``report`` copies the runs the cells show (``OpsSection.current``)."""
    obs = ops_observations(tree) if obs is None else obs
    tables = ops_tables(obs, selection)
    add_refusals(tree, tables, runs or None)
    charts: list[Path] = []
    views = []
    current = [o for t in tables for key in t.cells for o in t.current(*key)]
    for t in tables:
        path = out / "charts" / f"{t.slug}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        drawn = chart(t, path, save)
        if drawn:
            charts.append(path)
        views.append({"slug": t.slug, "title": t.title, "columns": t.columns,
                      "rows": [{"name": r, "cells": [_cell_view(t, r, c) for c in t.columns]}
                               for r in t.rows],
                      "refused": refusal_lines(t),
                      "chart": _href(f"charts/{path.name}") if drawn else None,
                      "no_chart": not drawn})
    links = Links(final or out, tree.root.resolve(), frozenset(o.run_path for o in current),
                  numbers or {})
    chosen = (selection or Selection()).describe()
    write_pages(out, ((t.page(r, c), page_view(
        title=f"{t.title} · {r} · OpenSSL {c}", back=f"../index.html#{t.slug}",
        history=t.history(r, c), found=t.changes(r, c), shown=t.shown(r, c),
        observations=t.cells[(r, c)], value=lambda o: o.value, unit=_page_unit(t), links=links,
        chosen=chosen)) for t in tables for (r, c) in t.cells), css)
    changed = [x for t in tables for (r, c) in t.cells
               for x in change_rows(f"{t.title} · {r} · OpenSSL {c}", t.page(r, c),
                                    t.changes(r, c), _fmt)]
    rows = cell_rows(tables)
    history = {(t.cpu, t.kind, t.arch, r, c): t.history(r, c) for t in tables
               for (r, c) in t.cells}
    json_cells = [{**row, **history_json(history[
        (row["cpu"], row["kind"], row["arch"], row["row"], row["column"])], numbers or {})}
        for row in rows]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(CELL_FIELDS), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    (out / "data").mkdir(exist_ok=True)
    (out / "data" / "ops-cells.csv").write_text(buf.getvalue(), encoding="utf-8")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates())), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    text = env.get_template("report_ops.html.j2").render(tables=views)
    return OpsSection(text if text.endswith("\n") else text + "\n", charts, len(obs),
                      len(tables), [line for t in tables for line in table_text(t)],
                      current, changed, json_cells)
