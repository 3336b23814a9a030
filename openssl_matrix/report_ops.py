"""Report tables and charts for figures in operations per second: public-key operations
(``kind: pkey`` suites) and TLS handshakes (``kind: tls``), by version.

``report.build_report`` calls :func:`write_ops` and puts the HTML it returns into the
page. One table per (CPU, suite kind, arch): rows are algorithm and operation (for TLS:
protocol, server key, full handshake or resumption, pinning), columns are the variants in
version order; a cell is the median of every usable figure over all runs (the statuses of
report.USABLE_STATUSES), with the range and count, the ratio to the table's first column,
and one link per run to the raw output it was read from. Higher is better everywhere.
"""

from __future__ import annotations

import csv
import io
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from . import records
from .report import USABLE_STATUSES, _copy_run
from .reportview import href as _href
from .results import ResultsTree
from .stats import estimate
from .version import sort_key

TEMPLATES = Path(__file__).resolve().parent / "templates"
KIND_TITLE = {"pkey": "Public-key operations (operations per second, higher is better)",
              "tls": "TLS handshakes (connections per second, higher is better)"}


@dataclass(frozen=True)
class OpsObservation:
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

    @property
    def usable(self) -> bool:
        return self.status in USABLE_STATUSES and self.value is not None

    @property
    def column(self) -> str:
        return self.version + ("" if self.asm else " no-asm")


def _short_label(fig: dict[str, Any], kind: str) -> str:
    if kind == "tls":
        op = "full" if fig.get("operation") == "handshake" else "resumed"
        return f"{fig.get('protocol')} {fig.get('key')} {op} {fig.get('tls_pinning')}"
    return f"{fig.get('algorithm')} {fig.get('operation')}"


def _row_label(fig: dict[str, Any], kind: str) -> str:
    if kind == "tls":
        op = "full handshake" if fig.get("operation") == "handshake" else "resumption"
        return (f"{fig.get('protocol_label') or fig.get('protocol')} · {fig.get('key')} · "
                f"{fig.get('cipher')} · {fig.get('group')} · {op} · {fig.get('tls_pinning')}")
    return f"{fig.get('algorithm')} {fig.get('operation')}"


def ops_observations(tree: ResultsTree) -> list[OpsObservation]:
    """Every ops-per-second figure of a pkey or tls run in the tree."""
    out: list[OpsObservation] = []
    for run in records.finished_runs(tree.root):
        meta = run.meta
        suite = meta.suite or {}
        kind = str(suite.get("kind") or "speed")
        if kind not in ("pkey", "tls"):
            continue
        variant = meta.variant or {}
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
                operation=str(figure.operation), row=_row_label(fig, kind),
                short=_short_label(fig, kind),
                value=float(value) if value is not None else None,
                status=figure.status or "?", raw_file=f"raw/{figure.invocation}.stdout",
                bottleneck=fig.get("bottleneck"), round=int(meta.round or 1)))
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

    @property
    def title(self) -> str:
        return f"{self.cpu} · {self.arch} · {KIND_TITLE.get(self.kind, self.kind)}"

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9.]+", "-", f"{self.kind}-{self.cpu}-{self.arch}").strip("-")

    def values(self, row: str, column: str) -> list[float]:
        return [o.value for o in self.cells.get((row, column), [])
                if o.usable and o.value is not None]

    def median(self, row: str, column: str) -> float | None:
        vals = self.values(row, column)
        return statistics.median(vals) if vals else None

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
        """Median ratio to the first column, with the widest ratio the ranges allow."""
        if not self.columns or column == self.columns[0]:
            return None
        a, b = self.values(row, column), self.values(row, self.columns[0])
        if not a or not b or min(b) <= 0:
            return None
        return (statistics.median(a) / statistics.median(b), min(a) / max(b),
                max(a) / min(b))


def ops_tables(obs: Sequence[OpsObservation]) -> list[OpsTable]:
    tables: dict[tuple[str, str, str], OpsTable] = {}
    for o in obs:
        t = tables.setdefault((o.cpu, o.kind, o.arch), OpsTable(o.cpu, o.kind, o.arch))
        if o.row not in t.rows:
            t.rows.append(o.row)
            t.short[o.row] = o.short or o.row
        if o.column not in t.columns:
            t.columns.append(o.column)
        t.cells.setdefault((o.row, o.column), []).append(o)
    for t in tables.values():
        t.columns.sort(key=lambda c: (sort_key(c.split()[0]), c))
        t.rows.sort()
    return [tables[k] for k in sorted(tables)]


def _fmt(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def _rel(o: OpsObservation) -> str:
    return f"runs/{o.cpu}/{o.variant}/{o.suite}/{o.run}"


def _cell_view(t: OpsTable, row: str, column: str) -> dict[str, Any] | None:
    """What the template shows for one cell (see templates/report_ops.html.j2)."""
    obs = t.cells.get((row, column))
    if not obs:
        return None
    vals = t.values(row, column)
    med = t.median(row, column)
    ratio = t.ratio(row, column)
    links = []
    for o in sorted(obs, key=lambda o: (o.variant, o.run)):
        mark = "" if o.status == "ok" else f" [{o.status}]"
        links.append({"raw": _href(f"{_rel(o)}/{o.raw_file}"),
                      "meta": _href(f"{_rel(o)}/{records.META}"),
                      "title": f"{o.variant} run {o.run}: {_fmt(o.value)}{mark}",
                      "mark": mark, "usable": o.usable})
    return {"median": None if med is None else _fmt(med),
            "spread": f"{_fmt(min(vals))}–{_fmt(max(vals))} n={len(vals)}"
            if len(vals) > 1 else None,
            "ratio": None if ratio is None else
            f"×{ratio[0]:.2f} [{ratio[1]:.2f}–{ratio[2]:.2f}]",
            "bottleneck": ", ".join(sorted({o.bottleneck for o in obs if o.bottleneck})),
            "links": links}


# Why the public-key chart has a log axis where every other chart is linear: one table
# holds RSA-4096 signing (~200 ops/s here) and RSA-2048 verification (~50,000 ops/s); on
# a linear axis the slow operations' bars, often the ones versions differ in most, are a
# few pixels wide. The TLS chart's rates stay within one order of magnitude: linear.
# Both carry the 95 % intervals as error bars, like the bulk charts (docs/report.md).


def chart(t: OpsTable, path: Path) -> bool:
    """Bars per row and version. With several versions, rows only one version has are left
    to the table (3.2+ speed adds generic kem-/sig- RSA rows), except ML-KEM/ML-DSA."""
    rows = [r for r in t.rows if any(t.median(r, c) for c in t.columns)]
    if len(t.columns) > 1:
        rows = [r for r in rows if "-ml-" in r
                or sum(1 for c in t.columns if t.median(r, c)) > 1] or rows
    if not rows:
        return False
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, max(3.0, 0.42 * len(rows) * max(1, len(t.columns)) / 2 + 1.5)),
                 dpi=100, layout="constrained")
    ax = fig.subplots()
    height = 0.8 / max(1, len(t.columns))
    log = t.kind != "tls"  # see above
    for i, c in enumerate(t.columns):
        ys, xs, lows, highs = [], [], [], []
        for j, r in enumerate(rows):
            m = t.median(r, c)
            if m:
                ys.append(j - 0.4 + height * (i + 0.5))
                xs.append(m)
                low, high = t.error_bar(r, c, log=log)
                lows.append(low)
                highs.append(high)
        ax.barh(ys, xs, height=height, label=f"OpenSSL {c}", xerr=[lows, highs],
                capsize=2, error_kw={"elinewidth": 0.8})
    ax.set_yticks(range(len(rows)), [t.short.get(r, r) for r in rows], fontsize=8)
    ax.invert_yaxis()
    if not log:
        ax.set_xlabel("connections per second (median; bars: 95 % interval; higher is "
                      "better)")
    else:
        ax.set_xscale("log")
        ax.set_xlabel("operations per second (median, log scale; bars: 95 % interval; "
                      "higher is better)")
    ax.set_title(t.title, fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.savefig(path)
    return True


CELL_FIELDS = ("cpu", "kind", "arch", "row", "column", "median", "min", "max", "n",
               "ratio_to_first", "ratio_low", "ratio_high", "not_usable", "runs")


def cell_rows(tables: Sequence[OpsTable]) -> list[dict[str, Any]]:
    out = []
    for t in tables:
        for r in t.rows:
            for c in t.columns:
                obs = t.cells.get((r, c))
                if not obs:
                    continue
                vals = t.values(r, c)
                ratio = t.ratio(r, c)
                out.append({
                    "cpu": t.cpu, "kind": t.kind, "arch": t.arch, "row": r, "column": c,
                    "median": t.median(r, c), "min": min(vals) if vals else None,
                    "max": max(vals) if vals else None, "n": len(vals),
                    "ratio_to_first": ratio[0] if ratio else None,
                    "ratio_low": ratio[1] if ratio else None,
                    "ratio_high": ratio[2] if ratio else None,
                    "not_usable": len(obs) - len(vals),
                    "runs": " ".join(sorted({_rel(o) for o in obs}))})
    return out


def write_ops(tree: ResultsTree, out: Path) -> tuple[str, list[Path], int]:
    """Tables, charts and data of the ops-per-second figures into the report folder
    ``out``; returns the HTML section, the charts written and the figure count."""
    obs = ops_observations(tree)
    tables = ops_tables(obs)
    charts: list[Path] = []
    views = []
    for o in obs:
        if not (out / _rel(o)).exists():
            _copy_run(o.run_path, out / _rel(o))
    for t in tables:
        path = out / "charts" / f"{t.slug}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        drawn = chart(t, path)
        if drawn:
            charts.append(path)
        views.append({"slug": t.slug, "title": t.title, "columns": t.columns,
                      "rows": [{"name": r, "cells": [_cell_view(t, r, c) for c in t.columns]}
                               for r in t.rows],
                      "chart": _href(f"charts/{path.name}") if drawn else None})
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(CELL_FIELDS), lineterminator="\n")
    writer.writeheader()
    for row in cell_rows(tables):
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    (out / "data").mkdir(exist_ok=True)
    (out / "data" / "ops-cells.csv").write_text(buf.getvalue(), encoding="utf-8")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    text = env.get_template("report_ops.html.j2").render(tables=views)
    return text if text.endswith("\n") else text + "\n", charts, len(obs)
