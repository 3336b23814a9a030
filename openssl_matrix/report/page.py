"""Report: the results tree as method tables, per-block-size tables, CSV/JSON, charts, HTML.

The method table has the shape of the seed blog's: one table per (CPU, OpenSSL version,
arch), rows are methods (no-asm, asm with CPU extensions masked off, asm with the CPU's
extensions, engines), columns are algorithms at one block size. A cell is the median of
every ``ok`` figure of that method and algorithm over all runs in the tree; figures with
any other status (zero, suspect-time-basis ...) are counted but never averaged in.

``build_report`` writes one folder that opens from disk without a server:

* ``index.html`` - the tables and charts; every cell links to the raw ``openssl speed``
  output it came from, every run to its meta record;
* ``data/cells.csv``, ``data/method-table-<bytes>.csv``, ``data/report.json``;
* ``charts/*.png`` - grouped bars per method table, throughput over block size, and
  per build measured under several CPUs the CPUs side by side (``reportcpus``);
* ``runs/<cpu>/<variant>/<suite>/<run>/`` - copies of each run's meta and figures records
  and raw output, so the folder stays traceable when moved;
* ``reproductions/`` - the latest verdicts of each ``invoke matrix reproduce``.

The folder is built beside the target and swapped in at the end: a failed report never
leaves a half-written one.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import statistics
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from openssl_matrix.core import log
from openssl_matrix.core.clock import now
from openssl_matrix.core.files import current_umask
from openssl_matrix.core.names import fold
from openssl_matrix.core.outputs import (
    check_report_target,
    hold_report,
    remove_stale_reports,
    swap_in,
    write_report_marker,
)
from openssl_matrix.core.resources import templates
from openssl_matrix.core.units import MBPS
from openssl_matrix.report import (
    aeadview,
    bisectview,
    interleavedview,
    pairedview,
    profview,
    ptsview,
    scaling,
)
from openssl_matrix.report.cellpage import (
    Links,
    PageUnit,
    change_rows,
    page_view,
    write_pages,
    write_session_pages,
)
from openssl_matrix.report.charts import DRAWN, Charts
from openssl_matrix.report.cpus import Comparison, comparisons
from openssl_matrix.report.cpus import chart as cpus_chart
from openssl_matrix.report.cpus import text as cpus_text
from openssl_matrix.report.cpus import view as cpus_view
from openssl_matrix.report.history import HISTORY_COLUMNS, RULE, history_json
from openssl_matrix.report.library import write_library
from openssl_matrix.report.ops import ops_observations, write_ops
from openssl_matrix.report.quality import Quality, quality
from openssl_matrix.report.sessions import (
    UNKNOWN,
    Provenance,
    Selection,
    Sessions,
    check_selection,
    session_table,
)
from openssl_matrix.report.types import (
    Cell,
    Group,
    Observation,
    copy_run,
    group_observations,
    left_out,
    observations,
)
from openssl_matrix.report.view import cell_view, href, repro_view, run_folder
from openssl_matrix.results import records
from openssl_matrix.results.filing import SIDE_BY_SIDE, VERDICTS
from openssl_matrix.results.tree import ResultsTree

# ----------------------------------------------------------------------------------
# reading the tree


# ----------------------------------------------------------------------------------
# methods


# ----------------------------------------------------------------------------------
# output


#: openssl speed's own unit, for texts that quote speed (the side-by-side of a reproduction)


@dataclass
class ReportSummary:
    out_dir: Path
    groups: list[Group]
    block_size: int
    charts: list[Path]
    observations: int
    reproductions: int
    side_by_side: list[Comparison] = field(default_factory=list)
    ops_lines: list[str] = field(default_factory=list)
    """The public-key and handshake tables (``report_ops.table_text``)."""
    ops_tables: int = 0
    quality: Quality | None = None
    """The measurement-quality panel over every kind of figure (``reportquality``)."""
    sessions: int = 0
    changes: int = 0
    """Cells whose history has a change (``history``)."""
    library_tables: int = 0
    """The library harness's tables (``report.library``)."""

    scaling_lines: list[str] = field(default_factory=list)
    """The AEAD mask check, scaling (throughput against -multi processes) and
    PTS-comparable sections (``aeadview``, ``scaling``, ``ptsview``)."""

    def text(self) -> str:
        lines = []
        for g in self.groups:
            lines.append(f"{g.key.title} — {self.block_size} bytes, median ± half-width of "
                         "the 95 % interval, " + MBPS.name)
            algs = g.algorithms
            width = max([len(m) for m in g.method_rows()] + [6])
            lines.append("  " + f"{'method':<{width}}  " + "  ".join(f"{a:>28}" for a in algs))
            for m in g.method_rows():
                row = []
                for a in algs:
                    c = g.cell(m, a, self.block_size)
                    row.append(f"{c.pm() if c else MBPS.num(None):>28}")
                lines.append("  " + f"{m:<{width}}  " + "  ".join(row))
            lines.append("")
        lines += cpus_text(self.side_by_side, self.block_size)
        lines += self.scaling_lines
        lines += self.ops_lines
        lines += self.quality.lines() if self.quality else []  # last: seen without scrolling
        lines.append(f"{self.observations} figure(s) in {len(self.groups)} table(s)"
                     + (f" and {self.ops_tables} public-key/handshake table(s)"
                        if self.ops_tables else "")
                     + (f" and {self.library_tables} library table(s)"
                        if self.library_tables else "") + ", "
                     f"{len(self.charts)} chart(s), {self.reproductions} reproduction(s)")
        lines.append(f"{self.sessions} session(s); {self.changes} cell(s) changed (see the "
                     "page's Changes)")
        lines.append(f"report: {self.out_dir / 'index.html'}")
        return "\n".join(lines) + "\n"


def cells_rows(groups: Sequence[Group]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for g in groups:
        for (method, alg, block), cell in _sorted_cells(g):
            vals = cell.ok_values
            first = cell.observations[0]
            rows.append({
                "cpu": g.key.cpu, "version": g.key.version, "arch": g.key.arch,
                "march": g.key.march, "configure": " ".join(g.key.configure),
                "method": method, "algorithm": alg, "block_size": block,
                "evp": first.evp, "mask": first.mask, "ia32cap": first.ia32cap,
                "engine": first.engine, "processes": first.processes,
                "median_bytes_per_s": statistics.median(vals) if vals else None,
                "min_bytes_per_s": min(vals) if vals else None,
                "max_bytes_per_s": max(vals) if vals else None,
                "n": len(vals),
                "ci_low": (e := cell.estimate) and e.ci_low,
                "ci_high": e and e.ci_high,
                "not_ok": json.dumps(cell.other_statuses) if cell.other_statuses else "",
                "forced": any(o.forced for o in cell.current),
                "variants": " ".join(sorted({o.variant for o in cell.current})),
                "runs": " ".join(sorted({f"{run_folder(o)}" for o in cell.current})),
                "session": cell.shown.session if cell.shown else None,
                "session_started": cell.shown.when if cell.shown else None,
                "sessions": len(cell.history),
                "changed": cell.changes[-1].text() if cell.changes else "",
                "page": cell.page,
            })
    return rows


def _csv(rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(fields), lineterminator="\n",
                            extrasaction="ignore")
    writer.writeheader()
    for r in rows:
        writer.writerow({f: ("" if r.get(f) is None else r.get(f)) for f in fields})
    return buf.getvalue()


CELL_FIELDS = ("cpu", "version", "arch", "march", "configure", "method", "algorithm",
               "block_size", "evp", "mask", "ia32cap", "engine", "processes",
               "median_bytes_per_s",
               "min_bytes_per_s", "max_bytes_per_s", "n", "ci_low", "ci_high", "not_ok",
               "forced", "variants", "runs", "session", "session_started", "sessions",
               "changed", "page")


def method_table_rows(groups: Sequence[Group], block: int) -> list[dict[str, Any]]:
    rows = []
    for g in groups:
        for m in g.method_rows():
            row: dict[str, Any] = {"cpu": g.key.cpu, "version": g.key.version,
                                   "arch": g.key.arch, "method": m}
            for a in g.algorithms:
                c = g.cell(m, a, block)
                row[a] = c.median if c else None
            rows.append(row)
    return rows


# -- charts -----------------------------------------------------------------------


# -- html ------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
h3{font-size:1.05em;margin-top:1.5em}
table{border-collapse:collapse;margin:.5em 0 1em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .5em;vertical-align:top}
th{background:#f3f3f3;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums}
.prov{font-size:.75em;color:#666}.prov a{color:#36c}
.bad{color:#b00}.muted{color:#777}figure{margin:1em 0}figcaption{font-size:.85em;color:#555}
img{max-width:100%;border:1px solid #ddd}
.verdict-reproduced{color:#070;font-weight:600}
.verdict-not-reproduced{color:#b00;font-weight:600}
.verdict-not-testable-here{color:#777;font-weight:600}
nav a{margin-right:1em}
.pm{color:#555;font-size:.9em}.flagged{color:#999;font-size:.85em}
.prov .run{white-space:nowrap}.prov a.meta{color:#888}.model{margin:0 0 .3em 0}
table.quality td{vertical-align:middle}
table.sessions td:nth-child(3){text-align:right;font-variant-numeric:tabular-nums}
tr.shown td{background:#f6f6e8}svg.history{display:block;margin:.5em 0}
"""


def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates())),
        autoescape=True,  # every value is escaped for text and attributes alike
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env.get_template("report.html.j2")


def render_html(groups: Sequence[Group], block: int, charts: Mapping[str, list[str]],
                sessions: Sequence[Mapping[str, Any]], repros: Sequence[dict[str, Any]],
                generated: str, tree_root: Path, quality: Quality,
                side_by_side: Sequence[dict[str, Any]] = (),
                changed: Sequence[Mapping[str, Any]] = (), chosen: str = "") -> str:
    views = []
    for g in groups:
        blocks = sorted(g.blocks)
        views.append({
            "slug": g.key.slug, "title": g.key.title, "algorithms": g.algorithms,
            "blocks": blocks,
            "method_rows": [{"method": m, "cells": [cell_view(g.cell(m, a, block))
                                                    for a in g.algorithms]}
                            for m in g.method_rows()],
            "size_rows": [{"method": m, "algorithm": a,
                           "cells": [cell_view(g.cell(m, a, b)) for b in blocks]}
                          for m in g.method_rows() for a in g.algorithms
                          if any(g.cell(m, a, b) for b in blocks)],
            "method_charts": [href(c) for c in charts.get(f"methods:{g.key.slug}", [])],
            "no_chart": not any(c.ok_values for c in g.cells.values()),
            "size_charts": [href(c) for c in charts.get(f"sizes:{g.key.slug}", [])],
        })
    text = _template().render(css=CSS, block=block, groups=views, unit=MBPS,
                              quality=quality.view(),
                              repros=[repro_view(r) for r in repros],
                              session_rows=list(sessions), changes=list(changed),
                              rule=RULE, chosen=chosen or Selection().describe(),
                              side_by_side=list(side_by_side),
                              generated=generated, tree_root=str(tree_root))
    return text if text.endswith("\n") else text + "\n"


# -- the whole report ------------------------------------------------------------


def build_report(tree: ResultsTree, out: Path, *, block_size: int = 8192,
                 selection: Selection | None = None,
                 versions: Sequence[str] = (), charts: Charts = DRAWN) -> ReportSummary:
    """Write the report folder ``out`` from the results tree (replacing an older report).
    Each cell shows the session ``selection`` picks (the latest by default); ``versions``
    (fnmatch patterns) limits the library section to those releases; ``charts`` draws the
    charts (:data:`~openssl_matrix.report.charts.NO_CHARTS`: none)."""
    tree.require()
    selection = selection or Selection()
    sessions = Sessions(tree)
    runs = list(tree.finished_runs())  # the tree read once, a damaged run file
    obs = observations(tree, sessions, runs)  # named first, before the target
    ops_obs = ops_observations(tree, sessions, runs)
    check_selection(selection, {p.session for p in _one_per_run([*obs, *ops_obs])})
    groups = group_observations(obs, selection)
    out = check_report_target(out, tree.root, tree.report_dir())
    out.parent.mkdir(parents=True, exist_ok=True)
    for stale in remove_stale_reports(out):  # what killed reports left (with our marker)
        log.info(f"removed {stale}: the unfinished folder of a report that was stopped")
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    held = None
    try:
        os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp's 0700 would hide the report
        write_report_marker(tmp)
        held = hold_report(tmp)
        summary = _write(tree, tmp, groups, obs, block_size,
                         Shown(out, selection, ops_obs, runs), versions, charts)
        swap_in(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if held is not None:
            held.close()
    summary.out_dir = out
    return summary


@dataclass(frozen=True)
class Shown:
    """What the report shows beyond its tables: where it will live (links into the tree
    are relative to it), which session each cell shows, and the public-key figures."""

    final: Path
    selection: Selection
    ops_obs: Sequence[Any]
    runs: Sequence[records.Run] = ()


def _run_record(run_path: Path, rel: str, files: list[str], o: Observation | Any
                ) -> dict[str, Any]:
    meta = records.read_meta(run_path) or records.RunMeta()
    return {"id": f"{o.cpu}/{o.variant}/{o.suite}/{o.run}", "path": rel,
            "files": files, "status": meta.get("status"),
            "forced": bool(meta.get("forced")), "started": meta.get("started"),
            "session": (o.prov or UNKNOWN).session,
            "cpu_model": (meta.get("host") or {}).get("cpu_model"),
            "image_id": meta.get("image_id"),
            "tarball_sha256": meta.get("tarball_sha256"),
            "source": str(run_path)}


def _write(tree: ResultsTree, out: Path, groups: list[Group], obs: list[Observation],
           block: int, shown: Shown, versions: Sequence[str] = (),
           charts: Charts = DRAWN) -> ReportSummary:
    ops_obs = shown.ops_obs
    (out / "data").mkdir()
    (out / "charts").mkdir()
    # runs: copy those of the sessions the cells show, so every figure's link works from
    # the folder alone; earlier sessions' runs are linked in the tree by the cells' pages
    runs: list[dict[str, Any]] = []
    seen: set[Path] = set()
    current = [o for g in groups for c in g.cells.values() for o in c.current]
    _copy_runs(out, current, runs, seen)
    session_rows = session_table(_one_per_run([*obs, *ops_obs]))
    numbers = {str(r["session"]): n for n, r in enumerate(session_rows, 1)}
    ops = write_ops(tree, out, ops_obs, selection=shown.selection, final=shown.final,
                    css=CSS, numbers=numbers, runs=shown.runs, save=charts.save)
    _copy_runs(out, ops.current, runs, seen)
    panel = quality(current, ops.current,
                    [x for x in left_out(shown.runs) if x.run_path in seen])
    rows = _write_data(out, groups, block)
    # each cell's own page: its history, changes, sessions and runs
    links = Links(shown.final, tree.root.resolve(), frozenset(seen), numbers)
    write_session_pages(out, session_rows, [*obs, *ops_obs], links)
    chosen = shown.selection.describe()
    _write_cell_pages(out, groups, links, chosen)
    changed = [r for g in groups for (m, a, b), c in g.cells.items()
               for r in change_rows(c.title, c.page, c.changes, MBPS.num)]
    changed += ops.changed
    drawn, paths = _draw_charts(out, groups, block, charts)
    # several CPUs' tables of one build side by side
    comps = comparisons(groups)
    side_views = _side_views(out, comps, block, paths)
    repros = _copy_reproductions(tree, out)
    # profiles (invoke matrix profile): copied into profiles/, shown before reproductions
    profiled = profview.profile_rows(tree.root, out), profview.comparison_rows(tree.root, out)
    generated = now("seconds")
    report = {
        "generated": generated, "results_tree": str(tree.root.resolve()), "block_size": block,
        "selection": {"session": shown.selection.session,
                      "since": shown.selection.since.isoformat()
                      if shown.selection.since else None, "shows": chosen},
        "change_rule": RULE,
        "changes": [r["json"] for r in changed],
        "sessions": session_rows,
        "quality": panel.to_json(),
        "method_tables": _method_tables_json(groups, block),
        "cpus_side_by_side": _side_by_side_json(comps, block),
        "history_columns": list(HISTORY_COLUMNS),
        "cells": [{**row, **history_json(c.history, numbers)}
                  for row, c in zip(rows, _cells_in_row_order(groups), strict=True)],
        "ops_cells": ops.json_cells,
        "charts": [f"charts/{p.name}" for p in paths],
        "runs": runs,
        "reproductions": [{"id": r["id"], "summary": r["data"].get("summary"),
                           "side_by_side": r["text"]} for r in repros],
        "profiles": {"cells": profiled[0], "comparisons": profiled[1]},
    }
    page = render_html(groups, block, drawn, session_rows, repros, generated,
                       tree.root.resolve(), panel, side_views, changed, chosen)
    lib = write_library(tree, out, versions)
    page, extra_lines = _extra_sections(tree, out, page, groups, obs, shown, block,
                                        ops.html + lib.html, profiled, report, paths)
    # written once, whole: the paired rows too when no scaling view came (they were lost)
    (out / "data" / "report.json").write_text(
        json.dumps(report, default=str, separators=(",", ":")) + "\n", encoding="utf-8")
    (out / "index.html").write_text(page, encoding="utf-8")
    return ReportSummary(out, groups, block, [*paths, *ops.charts, *lib.charts],
                         len(obs) + len(ops_obs) + lib.figures, len(repros), comps,
                         ops.lines + lib.lines, ops.tables, panel,
                         sessions=len(session_rows), changes=len(changed),
                         library_tables=lib.tables, scaling_lines=extra_lines)


def _write_data(out: Path, groups: Sequence[Group], block: int) -> list[dict[str, Any]]:
    """``data/cells.csv`` and the method table at ``block``; the cells' rows."""
    rows = cells_rows(groups)
    (out / "data" / "cells.csv").write_text(_csv(rows, CELL_FIELDS), encoding="utf-8")
    algs = list(dict.fromkeys(a for g in groups for a in g.algorithms))
    mt = method_table_rows(groups, block)
    (out / "data" / f"method-table-{block}.csv").write_text(
        _csv(mt, ["cpu", "version", "arch", "method", *algs]), encoding="utf-8")
    return rows


def _write_cell_pages(out: Path, groups: Sequence[Group], links: Links, chosen: str) -> None:
    """Each cell's own page: its history, the changes found, what is shown."""
    unit = PageUnit(MBPS.name, MBPS.scale, MBPS.num)
    write_pages(out, ((c.page, page_view(
        title=c.title, back=f"../index.html#{g.key.slug}", history=c.history,
        found=c.changes, shown=c.shown, observations=c.observations,
        value=lambda o: o.bytes_per_s, unit=unit, links=links, chosen=chosen))
        for g in groups for c in g.cells.values()), CSS)


def _side_views(out: Path, comps: Sequence[Comparison], block: int,
                paths: list[Path]) -> list[dict[str, Any]]:
    """Each comparison of several CPUs' tables of one build, its chart drawn (and added
    to ``paths``) when there is one."""
    side_views = []
    for comp in comps:
        p = out / "charts" / f"{comp.slug}-{block}.png"
        drawn = cpus_chart(comp, block, p)
        if drawn:
            paths.append(p)
        side_views.append(cpus_view(comp, block, [f"charts/{p.name}"] if drawn else []))
    return side_views


def _extra_sections(tree: ResultsTree, out: Path, page: str, groups: Sequence[Group],
                    obs: Sequence[Observation], shown: Shown, block: int,
                    ops_and_library: str, profiled: tuple[list[dict[str, Any]], ...],
                    report: dict[str, Any], paths: list[Path]) -> tuple[str, list[str]]:
    """The page with the sections drawn apart from the main template in their places
    (their data added to ``report``, their charts to ``paths``), and the summary's lines
    for them (paired, interleaved, AEAD masks, scaling, PTS, profiles)."""
    pts_rows, masked = ptsview.rows(tree), aeadview.checks(groups)
    paired, scaled = pairedview.rows(shown.runs, block), scaling.views(obs, out / "charts")
    page = _sections(page, ops_and_library, profiled, pts_rows, masked, paired, scaled,
                     block)
    woven = interleavedview.rows(tree.root, out)
    if woven:
        page = _before(page, "sizes", interleavedview.html(woven))
        report["interleaved"] = [r.as_dict() for r in woven]
    bisected = bisectview.rows(tree, out)
    if bisected:
        page = _before(page, "repro", bisectview.html(bisected)).replace(
            '<a href="#repro">', '<a href="#bisections">Bisections</a><a href="#repro">', 1)
        report["bisections"] = [b.as_dict() for b in bisected]
    if paired:
        report["paired"] = [r.as_dict() for r in paired]
    if scaled:
        report["scaling"] = scaled
        paths += [out / str(v["chart"]) for v in scaled if v["chart"]]
    return page, [*pairedview.text(paired), *interleavedview.text(woven),
                  *aeadview.text(masked), *scaling.text(scaled), *ptsview.text(pts_rows),
                  *profview.text(*profiled), *bisectview.text(bisected)]


def _sections(page: str, ops_and_library: str, profiled: tuple[list[dict[str, Any]], ...],
              pts_rows: list[ptsview.PtsRow], masked: Sequence[aeadview.MaskCheck],
              paired: Sequence[pairedview.PairedRow], scaled: Sequence[dict[str, Any]],
              block: int) -> str:
    """The page with the sections drawn apart from the main template put in their
    places: public key, TLS and library, profiles and PTS before the reproductions; the
    AEAD mask checks before the CPUs (or the sizes); paired ratios and scaling before the
    sizes."""
    page = _before(page, "repro", ops_and_library).replace(
        '<a href="#repro">', '<a href="#ops">Public key &amp; TLS</a><a href="#library">'
        'Library</a><a href="#repro">', 1)
    if profiled[0] or profiled[1]:
        page = _before(page, "repro", profview.html(*profiled))
        page = page.replace('<a href="#repro">', '<a href="#profiles">Profiles</a>'
                            '<a href="#repro">', 1)
    if pts_rows:
        page = _before(page, "repro", ptsview.html(pts_rows))
    if masked:
        page = _before(page, "cpus" if '<h2 id="cpus">' in page else "sizes",
                       aeadview.html(masked))
    if paired:
        page = _before(page, "sizes", pairedview.html(paired, block))
    if scaled:
        page = _before(page, "sizes", scaling.html(scaled))
    return page


def _copy_runs(out: Path, figures: Iterable[Any], runs: list[dict[str, Any]],
               seen: set[Path]) -> None:
    """Copy the run of each figure (``run_path``) into the report folder once, its record
    added to ``runs`` and its path to ``seen``."""
    for o in figures:
        if o.run_path in seen:
            continue
        seen.add(o.run_path)
        rel = run_folder(o)
        runs.append(_run_record(o.run_path, rel, copy_run(o.run_path, out / rel), o))


def _method_tables_json(groups: Sequence[Group], block: int) -> list[dict[str, Any]]:
    """report.json's method tables: each group's medians by method and algorithm."""
    return [{
        "title": g.key.title, "cpu": g.key.cpu, "version": g.key.version,
        "arch": g.key.arch, "methods": g.method_rows(), "algorithms": g.algorithms,
        "block_size": block,
        "cells": {m: {a: (c.median if (c := g.cell(m, a, block)) else None)
                      for a in g.algorithms} for m in g.method_rows()},
    } for g in groups]


def _side_by_side_json(comps: Sequence[Any], block: int) -> list[dict[str, Any]]:
    """report.json's side-by-side tables: one build's medians on several CPUs."""
    return [{
        "title": comp.title, "cpus": comp.cpus, "block_size": block,
        "methods": comp.methods(), "algorithms": comp.algorithms(),
        "cells": {m: {a: {cpu: (x.median if (x := comp.cell(m, a, i, block)) else None)
                          for i, cpu in enumerate(comp.cpus)}
                      for a in comp.algorithms()} for m in comp.methods()},
    } for comp in comps]


def _draw_charts(out: Path, groups: Sequence[Group], block: int, draw: Charts,
                 ) -> tuple[dict[str, list[str]], list[Path]]:
    """Each table's method chart and each algorithm's by-size chart, drawn into
    ``out/charts``: the page's links by section, and the files drawn."""
    charts: dict[str, list[str]] = {}
    paths: list[Path] = []
    progress = log.ProgressLine("drawing charts", sum(1 + len(g.algorithms) for g in groups))
    for g in groups:
        p = out / "charts" / f"{g.key.slug}-methods-{block}.png"
        if draw.method(g, block, p, draw.save):
            charts.setdefault(f"methods:{g.key.slug}", []).append(f"charts/{p.name}")
            paths.append(p)
        progress.advance()
        for a in g.algorithms:
            p = out / "charts" / f"{g.key.slug}-{fold(a)}-by-size.png"
            if draw.size(g, a, p, draw.save):
                charts.setdefault(f"sizes:{g.key.slug}", []).append(f"charts/{p.name}")
                paths.append(p)
            progress.advance()
    return charts, paths


def _copy_reproductions(tree: ResultsTree, out: Path) -> list[dict[str, Any]]:
    """The latest reproduction of each spec, its text, verdicts and spec copied into
    ``out/reproductions``: what the page's reproductions section shows."""
    repros: list[dict[str, Any]] = []
    for filed in tree.latest_reproductions():
        dest = out / "reproductions" / f"{filed.spec_id}-{filed.folder.name}"
        dest.mkdir(parents=True)
        for name, path in filed.files():
            shutil.copy2(path, dest / name)
        repros.append({"id": filed.spec_id, "data": dict(filed.verdicts),
                       "text": f"reproductions/{dest.name}/{SIDE_BY_SIDE}",
                       "json": f"reproductions/{dest.name}/{VERDICTS}"})
    return repros


def _before(page: str, section: str, html: str) -> str:
    """``html`` put in before the page's ``<h2 id="section">`` (once)."""
    return page.replace(f'<h2 id="{section}">', html + f'<h2 id="{section}">', 1)


def _one_per_run(obs: Iterable[Any]) -> list[Provenance]:
    """One provenance per run (the figures of a run share it)."""
    seen: dict[Path, Provenance] = {}
    for o in obs:
        if o.run_path not in seen:
            seen[o.run_path] = o.prov or UNKNOWN
    return list(seen.values())


def _sorted_cells(g: Group) -> list[tuple[tuple[str, str, int], Cell]]:
    """A table's cells in row order: method, algorithm, block size."""
    return sorted(g.cells.items(), key=lambda kv: (
        g.methods[kv[0][0]], kv[0][0], g.algorithms.index(kv[0][1]), kv[0][2]))


def _cells_in_row_order(groups: Sequence[Group]) -> list[Cell]:
    """The cells in the order of ``cells_rows``."""
    return [cell for g in groups for _, cell in _sorted_cells(g)]
