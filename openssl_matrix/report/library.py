"""Report tables and charts of the library suite (``kind: library``, see library.py).

``report.build_report`` calls :func:`write_library` and puts the HTML it returns into the
page; ``invoke matrix report`` prints :attr:`LibrarySection.lines`. Per (CPU, arch):

* a table per thread count: rows are the harness's operations, columns the releases in
  release order (the release-by-release view: a regression and the release that fixed
  it are read along a row); a cell is ``median ± half-width of the 95 % interval (n)`` of
  the usable figures in operations per second, the µs per operation the median means
  (threads × 1e6 / ops/s: one thread's time per operation), the ratio to the first
  column, and a link per run to its raw output. Contended and other flagged figures
  never count; a cell with none usable shows what they read, grey, named by status;
* the memory table: exact bytes (per handshake, per idle connection, per SSL_CTX), with
  a note when two runs of one release disagree (they should not);
* a thread-scaling chart: throughput against threads, one line per release, one panel
  per operation, so a release whose throughput stops growing with threads stands out;
* a release chart: each operation's 1-thread median relative to the first release.

``versions`` (fnmatch patterns, ``3.0.*``) limits all of it to some releases.
"""

from __future__ import annotations

import fnmatch
import html
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openssl_matrix.core.stats import RatioEstimate, compare, estimate
from openssl_matrix.core.version import sort_key
from openssl_matrix.matrix.kinds import find_kind
from openssl_matrix.matrix.kinds.base import RUNNER_HARNESS
from openssl_matrix.report.charts import new_figure, series_colors
from openssl_matrix.report.types import Flagged, ReleaseColumn, copy_run
from openssl_matrix.report.view import href as _href
from openssl_matrix.report.view import run_folder
from openssl_matrix.results import records
from openssl_matrix.results.tree import ResultsTree


@dataclass(frozen=True)
class LibObservation(ReleaseColumn):
    cpu: str
    variant: str
    version: str
    asm: bool
    arch: str
    suite: str
    run: str
    run_path: Path
    invocation: str
    op: str
    threads: int
    value: float | None
    """ops/s (timed) or bytes (memory)"""
    status: str
    memory: bool
    api: str | None = None
    client_bytes: int | None = None
    raw_file: str = ""


def library_observations(tree: ResultsTree, versions: Sequence[str] = ()
                         ) -> list[LibObservation]:
    """Every figure of a library run in the tree (of the ``versions`` patterns, if given)."""
    out: list[LibObservation] = []
    for run in tree.finished_runs():
        meta = run.meta
        kind = find_kind((meta.suite or {}).get("kind"))
        if kind is None or kind.runner != RUNNER_HARNESS:
            continue
        variant = meta.variant or {}
        version = str(variant.get("version") or "?")
        if versions and not any(fnmatch.fnmatchcase(version, p) for p in versions):
            continue
        for figure in run.figures:
            fig = figure.to_json()
            memory = fig.get("unit") == "bytes"
            value = fig.get("bytes") if memory else figure.ops_per_s
            threads = fig.get("threads")
            client = fig.get("client_bytes")
            out.append(LibObservation(
                cpu=run.cpu, variant=run.variant, version=version,
                asm=bool(variant.get("asm", True)), arch=str(variant.get("arch") or "?"),
                suite=run.suite, run=run.run, run_path=run.path,
                invocation=str(figure.invocation or ""), op=figure.algorithm,
                threads=threads if isinstance(threads, int) else 1,
                value=float(value) if isinstance(value, (int, float)) else None,
                status=figure.status or "?", memory=memory,
                api=fig.get("api") if isinstance(fig.get("api"), str) else None,
                client_bytes=client if isinstance(client, int) else None,
                raw_file=f"raw/{figure.invocation}.stdout"))
    return out


@dataclass
class LibTable:
    cpu: str
    arch: str
    threads: int | None
    """None: the memory table."""
    rows: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    cells: dict[tuple[str, str], list[LibObservation]] = field(default_factory=dict)

    @property
    def title(self) -> str:
        what = ("memory (bytes, exact: OpenSSL's allocator hooks)" if self.threads is None
                else f"{self.threads} thread(s) (operations per second, higher is better)")
        return f"{self.cpu} · {self.arch} · library · {what}"

    @property
    def slug(self) -> str:
        t = "memory" if self.threads is None else f"t{self.threads}"
        return re.sub(r"[^A-Za-z0-9.]+", "-", f"library-{self.cpu}-{self.arch}-{t}").strip("-")

    def values(self, row: str, column: str) -> list[float]:
        return [o.value for o in self.cells.get((row, column), [])
                if o.usable and o.value is not None]

    def median(self, row: str, column: str) -> float | None:
        vals = self.values(row, column)
        return statistics.median(vals) if vals else None

    def ratio(self, row: str, column: str) -> float | None:
        if not self.columns or column == self.columns[0]:
            return None
        a, b = self.median(row, column), self.median(row, self.columns[0])
        return None if a is None or not b else a / b

    def comparison(self, row: str, column: str) -> RatioEstimate | None:
        """The ratio to the first release as a comparison (stats.compare), for a timed
        table with samples enough for its 95 % interval; None otherwise."""
        if self.threads is None or not self.columns or column == self.columns[0]:
            return None
        e = compare(self.values(row, column), self.values(row, self.columns[0]))
        return e if e is not None and e.ci_low is not None else None


def library_tables(obs: Sequence[LibObservation]) -> list[LibTable]:
    tables: dict[tuple[str, str, int], LibTable] = {}
    for o in obs:
        t_key = -1 if o.memory else o.threads
        t = tables.setdefault((o.cpu, o.arch, t_key),
                              LibTable(o.cpu, o.arch, None if o.memory else o.threads))
        if o.op not in t.rows:
            t.rows.append(o.op)
        if o.column not in t.columns:
            t.columns.append(o.column)
        t.cells.setdefault((o.op, o.column), []).append(o)
    for t in tables.values():
        t.columns.sort(key=lambda c: (sort_key(c.split()[0]), c))
        t.rows.sort()
    # memory last, thread counts in order
    return [tables[k] for k in sorted(tables, key=lambda k: (k[0], k[1], k[2] < 0, k[2]))]


def _fmt(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.2f}"


def cell_text(t: LibTable, row: str, column: str) -> str:
    obs = t.cells.get((row, column), [])
    if not obs:
        return "—"
    vals = t.values(row, column)
    if t.threads is None:  # memory: exact; every run should say the same
        if not vals:
            return "failed"
        distinct = sorted(set(vals))
        text = f"{_fmt(distinct[0])} B" if len(distinct) == 1 else \
            f"{_fmt(min(distinct))}–{_fmt(max(distinct))} B (runs differ)"
        clients = sorted({o.client_bytes for o in obs if o.client_bytes is not None})
        if clients:
            text += f"; client {_fmt(clients[0])} B" if len(clients) == 1 else \
                f"; client {_fmt(clients[0])}–{_fmt(clients[-1])} B"
        return text
    e = estimate(vals)
    if e is None:
        flagged = Flagged.of((o.value for o in obs), (o.status for o in obs))
        return flagged.text(_fmt) or f"no figure ({flagged.counts})"
    hw = e.half_width
    us = 1e6 * (t.threads or 1) / e.median if e.median else None
    return (f"{_fmt(e.median)}" + (f" ± {_fmt(hw)}" if hw is not None else "")
            + f" (n={e.n})" + (f", {_fmt(us)} µs/op" if us else ""))


def table_lines(t: LibTable) -> list[str]:
    cells = {(r, c): cell_text(t, r, c) for r in t.rows for c in t.columns}
    width = max([len(r) for r in t.rows] + [9])
    colw = max([len(v) for v in cells.values()] + [len(c) + 8 for c in t.columns])
    unit = "bytes" if t.threads is None else \
        "ops/s, median ± half-width of the 95 % interval (n), and the µs/op it means"
    lines = [f"{t.title} — {unit}; flagged figures (contended …) never count",
             "  " + f"{'operation':<{width}}  " + "  ".join(f"{'OpenSSL ' + c:>{colw}}"
                                                             for c in t.columns)]
    for r in t.rows:
        lines.append("  " + f"{r:<{width}}  " + "  ".join(f"{cells[(r, c)]:>{colw}}"
                                                         for c in t.columns))
    apis = sorted({f"{o.column}: {o.api}" for obs in t.cells.values() for o in obs
                   if o.op.startswith("fetch-") and o.api})
    if apis:
        lines.append("  fetch-*: the API measured — " + "; ".join(apis))
    return [*lines, ""]


def scaling_chart(tables: Sequence[LibTable], path: Path) -> bool:
    """Throughput against threads, one line per release, a panel per operation."""
    timed = [t for t in tables if t.threads is not None]
    counts = sorted({t.threads for t in timed if t.threads is not None})
    if len(counts) < 2:
        return False
    ops = sorted({r for t in timed for r in t.rows})
    columns = sorted({c for t in timed for c in t.columns},
                     key=lambda c: (sort_key(c.split()[0]), c))
    by_t = {t.threads: t for t in timed}
    ncol = 4
    nrow = (len(ops) + ncol - 1) // ncol
    fig = new_figure(2.6 * nrow + 0.8)
    fig.set_size_inches(14, 2.6 * nrow + 0.8)
    axes = fig.subplots(nrow, ncol, squeeze=False)
    colors = series_colors()
    drawn = False
    for i, op in enumerate(ops):
        ax = axes[i // ncol][i % ncol]
        for j, c in enumerate(columns):
            color = colors[j % len(colors)]
            xs, ys, errs, fx, fy = [], [], [], [], []
            for n in counts:
                t = by_t.get(n)
                e = estimate(t.values(op, c)) if t else None
                if e is not None and e.median:
                    xs.append(n)
                    ys.append(e.median)
                    errs.append(e.half_width or 0.0)
                elif t is not None and t.cells.get((op, c)):
                    f = Flagged.of((o.value for o in t.cells[(op, c)]),
                                   (o.status for o in t.cells[(op, c)]))
                    if f.value:
                        fx.append(n)
                        fy.append(f.value)
            if xs:
                ax.errorbar(xs, ys, yerr=errs, marker="o", color=color,
                            label=f"OpenSSL {c}", capsize=2, linewidth=1.2)
                drawn = True
            if fx:  # no usable figure: what the flagged runs read, hollow and dashed
                ax.plot(fx, fy, marker="o", markerfacecolor="none", linestyle="--",
                        color=color, linewidth=0.8,
                        label=f"OpenSSL {c}: no usable figure (flagged runs read)")
                drawn = True
        ax.set_title(op, fontsize=8)
        ax.set_xticks(counts)
        ax.tick_params(labelsize=7)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    for k in range(len(ops), nrow * ncol):
        axes[k // ncol][k % ncol].set_visible(False)
    if not drawn:
        return False
    seen: dict[str, Any] = {}
    for row in axes:
        for ax in row:
            for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
                seen.setdefault(label, h)
    fig.legend(list(seen.values()), list(seen), loc="outside upper center",
               ncol=min(3, len(seen)), fontsize=8)
    fig.supxlabel("threads", fontsize=9)
    fig.supylabel("ops/s (median; bars: 95 % interval)",
                  fontsize=9)
    fig.savefig(path)
    return True


def release_chart(t: LibTable, path: Path) -> bool:
    """Each operation's median relative to the first release, in release order."""
    if t.threads is None or len(t.columns) < 2:
        return False
    fig = new_figure(5.5)
    ax = fig.subplots()
    colors = series_colors()
    drawn = False
    for i, r in enumerate(t.rows):
        xs, ys = [], []
        for j, c in enumerate(t.columns):
            v = 1.0 if j == 0 and t.median(r, c) else t.ratio(r, c)
            if v is not None:
                xs.append(j)
                ys.append(v)
        if len(xs) > 1:
            ax.plot(xs, ys, marker="o", color=colors[i % len(colors)], label=r,
                    linestyle="-" if i < len(colors) else "--", linewidth=1.1)
            drawn = True
    if not drawn:
        return False
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks(range(len(t.columns)), [f"OpenSSL {c}" for c in t.columns], fontsize=8)
    ax.set_ylabel(f"ops/s relative to OpenSSL {t.columns[0]} (median; higher is better)")
    ax.set_title(f"{t.title}: release by release", fontsize=10)
    ax.legend(fontsize=7, ncol=2, loc="best")
    ax.grid(alpha=0.3)
    fig.savefig(path)
    return True


@dataclass(frozen=True)
class LibrarySection:
    html: str
    charts: list[Path]
    figures: int
    tables: int
    lines: list[str]


def _cell_html(t: LibTable, row: str, column: str) -> str:
    obs = t.cells.get((row, column), [])
    if not obs:
        return '<td class="num muted">—</td>'
    text = html.escape(cell_text(t, row, column))
    usable = bool(t.values(row, column))
    body = text if usable else f'<span class="bad">no usable figure</span><br>' \
        f'<span class="flagged">{text}</span>'
    ratio = t.ratio(row, column)
    cmp = t.comparison(row, column)
    if cmp is not None and cmp.ci_low is not None and cmp.ci_high is not None:
        body += (f'<br><span class="muted">×{cmp.ratio:.3f} [{cmp.ci_low:.3f}–'
                 f'{cmp.ci_high:.3f}]</span>')
    elif ratio is not None:
        body += f'<br><span class="muted">×{ratio:.2f}</span>'
    links = []
    for k, o in enumerate(sorted(obs, key=lambda o: (o.variant, o.run)), 1):
        mark = "" if o.status == "ok" else f" [{html.escape(o.status)}]"
        raw = html.escape(_href(f"{run_folder(o)}/{o.raw_file}"))
        meta = html.escape(_href(f"{run_folder(o)}/{records.META}"))
        title = html.escape(f"{o.variant} run {o.run}: {_fmt(o.value)}{mark}")
        links.append(f'<a href="{raw}" title="{title}">{k}</a><a href="{meta}">m</a>'
                     + (f'<span class="bad">{mark}</span>' if mark else ""))
    return f'<td class="num">{body}<div class="prov">{" ".join(links)}</div></td>'


def write_library(tree: ResultsTree, out: Path, versions: Sequence[str] = ()
                  ) -> LibrarySection:
    """Tables and charts of the library figures into the report folder ``out``."""
    obs = library_observations(tree, versions)
    tables = library_tables(obs)
    for o in obs:
        if not (out / run_folder(o)).exists():
            copy_run(o.run_path, out / run_folder(o))
    (out / "charts").mkdir(parents=True, exist_ok=True)
    charts: list[Path] = []
    parts = ['<h2 id="library">Inside the library (harness: operations per second at a '
             'thread count; memory in bytes)</h2>']
    if not tables:
        parts.append("<p>No library results yet: <code>invoke matrix bench --cpu=auto "
                     "--suite library</code>.</p>")
    else:
        parts.append('<p class="muted">Medians over every usable figure of all runs ± the '
                     "half-width of the 95 % interval (n), and the µs per operation the "
                     "median means (threads × 10⁶ ÷ ops/s); ×ratio to the first column, as a "
                     "comparison with its 95 % interval where both cells have samples "
                     "enough (Hodges–Lehmann, Mann–Whitney: docs/noise.md). "
                     "Columns are the releases in release order. What each operation "
                     "measures: docs/library.md.</p>")
    for key in sorted({(t.cpu, t.arch) for t in tables}):
        mine = [t for t in tables if (t.cpu, t.arch) == key]
        p = out / "charts" / f"library-{re.sub(r'[^A-Za-z0-9.]+', '-', '-'.join(key))}" \
            "-scaling.png"
        if scaling_chart(mine, p):
            charts.append(p)
            parts.append(f'<figure><img src="{html.escape(_href("charts/" + p.name))}" '
                         f'alt="thread scaling {html.escape(" ".join(key))}"><figcaption>'
                         "Throughput against threads, per release: a line that stops "
                         "rising is a release whose throughput does not grow with threads "
                         "(on this host, at most its CPU count). Hollow, dashed: no usable "
                         "figure (every run flagged, e.g. contended): what the runs read, "
                         "never a median.</figcaption></figure>")
        for t in mine:
            parts.append(f'<h3 id="{t.slug}">{html.escape(t.title)}</h3>')
            parts.append("<table><tr><th>Operation</th>" + "".join(
                f"<th>OpenSSL {html.escape(c)}</th>" for c in t.columns) + "</tr>")
            for r in t.rows:
                parts.append(f"<tr><th>{html.escape(r)}</th>"
                             + "".join(_cell_html(t, r, c) for c in t.columns) + "</tr>")
            parts.append("</table>")
            rp = out / "charts" / f"{t.slug}-releases.png"
            if release_chart(t, rp):
                charts.append(rp)
                parts.append(f'<figure><img src="{html.escape(_href("charts/" + rp.name))}" '
                             f'alt="releases {html.escape(t.title)}"><figcaption>Each '
                             "operation's median relative to the first release, release by "
                             "release.</figcaption></figure>")
    lines = [line for t in tables for line in table_lines(t)]
    return LibrarySection("\n".join(parts) + "\n", charts, len(obs), len(tables), lines)
