"""The report's scaling section: throughput against the number of ``-multi`` processes.

For every table of the report (one CPU, version, build) and every method and algorithm
measured at two process counts or more at one block size, the median per process count
with its 95 % interval, the ideal line (the 1-process median times N) and the efficiency
(median over ideal), per version and method. Beside it, the CPU topology the runs
recorded (topology.py) and where their processes could run ("2 processes on CPUs 0-1 (2
cores): one core each"), so a flat line on SMT siblings is read as such, not guessed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from openssl_matrix.core.resources import templates
from openssl_matrix.core.units import MBPS
from openssl_matrix.measure.topology import CpuTopology
from openssl_matrix.report.charts import new_figure
from openssl_matrix.report.types import Cell, GroupKey, Observation, method_of
from openssl_matrix.results import records


@dataclass
class Line:
    """One method and algorithm over process counts, at one block size."""

    key: GroupKey
    method: str
    algorithm: str
    block: int
    cells: dict[int, Cell] = field(default_factory=dict)

    @property
    def base(self) -> float | None:
        """The 1-process median: the ideal line's slope."""
        c = self.cells.get(1)
        return c.median if c is not None else None

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for n in sorted(self.cells):
            c = self.cells[n]
            ideal = None if self.base is None else self.base * n
            med = c.median
            out.append({"processes": n, "figure": c.pm(),
                        "median_bytes_per_s": med,
                        "ideal": MBPS.num(ideal) if ideal is not None else "—",
                        "efficiency": (f"{med / ideal:.0%}" if med is not None and ideal
                                       else "—"),
                        "statuses": ", ".join(f"{v} {k}" for k, v in
                                              sorted(c.other_statuses.items())) or "ok"})
        return out


def lines(obs: Sequence[Observation]) -> list[Line]:
    """Every (table, method, algorithm, block) measured at two process counts or more."""
    found: dict[tuple[GroupKey, str, str, int], Line] = {}
    for o in obs:
        if o.published:
            continue
        key = GroupKey(o.cpu, o.version, o.arch, o.march, o.configure, o.source)
        _, method = method_of(dataclasses.replace(o, processes=1))
        line = found.setdefault((key, method, o.algorithm, o.block_size),
                                Line(key, method, o.algorithm, o.block_size))
        line.cells.setdefault(o.processes, Cell()).observations.append(o)
    return [ln for ln in found.values() if len(ln.cells) >= 2]


def topology_notes(obs: Sequence[Observation]) -> dict[GroupKey, list[str]]:
    """Per table: the CPU topology its -multi runs recorded and where their processes
    could run (from each run's meta.json)."""
    out: dict[GroupKey, list[str]] = {}
    seen: set[Path] = set()
    for o in obs:
        if o.processes < 2 or o.run_path in seen:
            continue
        seen.add(o.run_path)
        meta = records.read_meta(o.run_path)
        if meta is None:
            continue
        key = GroupKey(o.cpu, o.version, o.arch, o.march, o.configure, o.source)
        notes = out.setdefault(key, [])
        topo = CpuTopology.from_dict(meta.get("topology"))
        if topo is not None and f"topology: {topo.describe()}" not in notes:
            notes.append(f"topology: {topo.describe()}")
        pin = (meta.get("pinning") or {}).get("cpuset")
        for inv in meta.get("invocations") or []:
            place = inv.get("placement") if isinstance(inv, dict) else None
            if isinstance(place, str):
                text = place + (f" (pinned by the profile's cpuset {pin})" if pin else "")
                if text not in notes:
                    notes.append(text)
    return out


def chart(key: GroupKey, block: int, group_lines: Sequence[Line], path: Path) -> bool:
    """Throughput against processes, one line per method and algorithm, each with its
    ideal line (dashed, from the 1-process median). A count without one usable figure is
    drawn as the method charts draw such a cell: an unfilled marker at what its flagged
    runs read, labelled with their statuses, never a median (its "ideal" dotted when the
    1-process figure is flagged too). None at all when no count has a figure."""
    drawable = [ln for ln in group_lines
                if any(c.median or (c.flagged and c.flagged.value) for c in ln.cells.values())]
    if not drawable:
        return False
    fig = new_figure()
    ax = fig.subplots()
    counts: set[int] = set()
    flagged_any = False
    for i, ln in enumerate(drawable):
        color = f"C{i % 10}"
        pts = [(n, c.median / MBPS.scale, *c.error_bar(MBPS.scale))
               for n, c in sorted(ln.cells.items()) if c.median]
        counts.update(n for n, *_ in pts)
        if pts:
            ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                        yerr=[[p[2] for p in pts], [p[3] for p in pts]], marker="o",
                        capsize=3, color=color, label=f"{ln.algorithm} — {ln.method}")
        flagged = [(n, c.flagged.value, c.flagged.what) for n, c in sorted(ln.cells.items())
                   if not c.median and c.flagged is not None and c.flagged.value]
        for n, value, what in flagged:
            flagged_any = True
            counts.add(n)
            y = (value or 0.0) / MBPS.scale
            ax.plot([n], [y], marker="o", markerfacecolor="none", markeredgecolor=color,
                    linestyle="none")
            ax.annotate(what, (n, y), fontsize=7, color=color, xytext=(4, 4),
                        textcoords="offset points")
        base = ln.cells.get(1)
        xs = sorted(ln.cells)
        if base is not None and base.median:
            ax.plot(xs, [base.median * n / MBPS.scale for n in xs], linestyle="--",
                    color=color, alpha=0.5,
                    label=f"ideal: {ln.algorithm} — {ln.method}: 1-process median × N")
        elif base is not None and base.flagged is not None and base.flagged.value:
            ax.plot(xs, [base.flagged.value * n / MBPS.scale for n in xs], linestyle=":",
                    color=color, alpha=0.5,
                    label=f"{ln.algorithm} — {ln.method}: flagged 1-process figure × N "
                    "(not a median)")
    if flagged_any:
        ax.plot([], [], marker="o", markerfacecolor="none", markeredgecolor="grey",
                linestyle="none", label="unfilled: no usable figure, what flagged runs read")
    ax.set_xticks(sorted(counts), [str(n) for n in sorted(counts)])
    ax.set_xlabel("processes (openssl speed -multi N)")
    ax.set_ylabel(f"{MBPS.name}, sum over processes (median; bars: 95 % interval)")
    ax.set_title(f"{key.title} — {block}-byte blocks", fontsize=10)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3)
    fig.savefig(path)
    return True


def views(obs: Sequence[Observation], charts_dir: Path) -> list[dict[str, Any]]:
    """The scaling section of the page (and report.json): per table and block size its
    lines' rows, the chart, the topology notes."""
    found = lines(obs)
    notes = topology_notes(obs)
    by_table: dict[tuple[GroupKey, int], list[Line]] = {}
    for ln in found:
        by_table.setdefault((ln.key, ln.block), []).append(ln)
    out: list[dict[str, Any]] = []
    for (key, block), group_lines in sorted(by_table.items(),
                                            key=lambda kv: (kv[0][0].slug, kv[0][1])):
        path = charts_dir / f"{key.slug}-scaling-{block}.png"
        drawn = chart(key, block, group_lines, path)
        out.append({"title": key.title, "slug": key.slug, "block": block,
                    "notes": notes.get(key, []),
                    "chart": f"charts/{path.name}" if drawn else None,
                    "lines": [{"method": ln.method, "algorithm": ln.algorithm,
                               "rows": ln.rows()} for ln in sorted(
                                   group_lines, key=lambda x: (x.algorithm, x.method))]})
    return out


def text(views_: Sequence[dict[str, Any]]) -> list[str]:
    """The section for the terminal."""
    out: list[str] = []
    for v in views_:
        out.append(f"{v['title']} — scaling at {v['block']} bytes ({MBPS.name}, sum over "
                   "processes; ideal = 1-process median × N)")
        for note in v["notes"]:
            out.append(f"  {note}")
        for ln in v["lines"]:
            cells = "  ".join(f"{r['processes']}: {r['figure']} (ideal {r['ideal']}, "
                              f"{r['efficiency']}; {r['statuses']})" for r in ln["rows"])
            out.append(f"  {ln['algorithm']} · {ln['method']}: {cells}")
        out.append("")
    return out


def html(views_: Sequence[dict[str, Any]]) -> str:
    """The page's section (empty without lines: nothing was measured at two counts)."""
    if not views_:
        return ""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates())), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.get_template("scaling.html.j2").render(views=views_, unit=MBPS)
