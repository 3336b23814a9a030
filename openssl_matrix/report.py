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
import dataclasses
import io
import json
import os
import re
import shutil
import statistics
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2

from . import log, records
from .files import current_umask
from .hostinfo import IA32CAP_BITS, IA32CAP_LABELS
from .names import fold
from .outputs import check_report_target, swap_in, write_report_marker
from .reportcpus import Comparison, comparisons
from .reportcpus import chart as cpus_chart
from .reportcpus import text as cpus_text
from .reportcpus import view as cpus_view
from .reportquality import Quality
from .reportview import Flagged, cell_view, href, repro_view, run_folder
from .results import ResultsTree, read_json
from .speedtypes import STATUS_IMPOSSIBLE, impossible
from .stats import Estimate, estimate
from .units import MBPS, speed_k
from .version import sort_key as version_sort_key

REPRO_DIR = "_reproduce"
TEMPLATES = Path(__file__).resolve().parent / "templates"

#: Statuses whose figure goes into a median: the parser's ok and imprecise, and guard
#: labels that keep a good value (the low-level path, a noisy spread, a busy host). Other
#: statuses (engine not engaged, mask not applied or overreaching, unreadable output) are
#: counted and shown, never averaged in.
USABLE_STATUSES = ("ok", "imprecise", "legacy-path", "noisy", "time-basis")

#: OPENSSL_ia32cap bits this report can name: (word, bit) -> feature.
CAP_BITS: dict[tuple[int, int], str] = {pos: IA32CAP_LABELS[name]
                                         for name, pos in IA32CAP_BITS.items()}


# ----------------------------------------------------------------------------------
# reading the tree


@dataclass(frozen=True)
class Observation:
    """One figure of one run, with what the report needs to place it."""

    cpu: str
    variant: str
    version: str
    asm: bool
    arch: str
    march: str | None
    configure: tuple[str, ...]
    suite: str
    run: str
    run_path: Path
    invocation: str
    mask: str
    ia32cap: str | None
    engine: str | None
    evp: bool
    algorithm: str
    block_size: int
    bytes_per_s: float | None
    status: str
    forced: bool
    host_flags: tuple[str, ...]
    raw_file: str = ""  # the raw output this figure was read from, relative to the run
    published: bool = False  # imported from a published report (`invoke matrix import`)
    decrypt: bool = False
    source: str = ""  # an imported report's source file (name) and run in it
    aead: bool = False  # measured with speed -aead (TLS-like records, aead.py)
    processes: int = 1  # speed -multi N: the figure is the sum over N processes
    pts: bool = False  # pts/openssl's command line (kind: pts, pts.py)

    @property
    def usable(self) -> bool:
        return self.status in USABLE_STATUSES and self.bytes_per_s is not None


def observations(tree: ResultsTree) -> list[Observation]:
    """Every symmetric (bytes per second) figure in the tree."""
    out: list[Observation] = []
    for ref in records.finished_runs(tree.root):
        meta = ref.meta
        figures = ref.figures
        variant = meta.get("variant") or {}
        host = meta.get("host") or {}
        commands = {str(i.get("name")): list(i.get("command") or [])
                    for i in meta.get("invocations") or [] if isinstance(i, dict)}
        suite = meta.get("suite") or {}
        published = meta.get("kind") == "reference"
        source = Path(str(meta.extra.get("source_file") or "a published report")).name \
            if published else ""
        for fig in figures:
            if fig.operation is not None:
                continue
            block = fig.get("block_size")
            if not isinstance(block, int):
                continue
            invocation = str(fig.get("invocation") or "")
            command = commands.get(invocation, [])
            engine = fig.get("engine")
            if engine is None and "-engine" in command:
                idx = command.index("-engine")
                engine = command[idx + 1] if idx + 1 < len(command) else "?"
            value = fig.get("bytes_per_s")
            status = str(fig.get("status") or "?")
            if value is not None and impossible(value):  # NaN, inf, negative, absurd
                value, status = None, STATUS_IMPOSSIBLE
            evp = fig.get("evp")
            if fig.get("path") in ("evp", "legacy"):
                evp = fig.get("path") == "evp"
            out.append(Observation(
                cpu=ref.cpu, variant=ref.variant, version=str(variant.get("version") or "?"),
                asm=bool(variant.get("asm", True)), arch=str(variant.get("arch") or "?"),
                march=variant.get("march"), configure=tuple(variant.get("configure") or ()),
                suite=ref.suite, run=ref.run, run_path=ref.path, invocation=invocation,
                mask=str(fig.get("mask") or "default"), ia32cap=fig.get("ia32cap"),
                engine=engine,
                evp=bool(suite.get("evp", True)) if evp is None else bool(evp),
                algorithm=str(fig.get("algorithm")), block_size=block,
                bytes_per_s=float(value) if isinstance(value, (int, float)) else None,
                status=status, forced=bool(meta.get("forced")),
                host_flags=tuple(host.get("cpu_flags") or ()),
                raw_file="raw/report.txt" if published else f"raw/{invocation}.stdout",
                published=published, decrypt=fig.get("direction") == "decrypt",
                source=source, aead=fig.get("path") == "aead", pts=fig.get("path") == "pts",
                processes=int(fig.get("multi") or 1),
            ))
    return out


# ----------------------------------------------------------------------------------
# methods


def describe_mask(ia32cap: str) -> str:
    """``~0x200000200000000`` -> ``AES-NI & PCLMULQDQ off``."""
    words = ia32cap.split(":")
    names: list[str] = []
    plain: list[str] = []
    for w, text in enumerate(words[:2]):
        if not text:
            continue
        if not text.startswith("~"):
            plain.append(text)
            continue
        try:
            value = int(text[1:], 16)
        except ValueError:
            return f"OPENSSL_ia32cap={ia32cap}"
        known = [(pos, name) for pos, name in CAP_BITS.items() if pos[0] == w]
        names += [name for (_, bit), name in known if value >> bit & 1]
        names += [f"bit {bit}" + (" (word 2)" if w else "") for bit in range(64)
                  if value >> bit & 1 and (w, bit) not in CAP_BITS]
    if plain:
        return f"OPENSSL_ia32cap={ia32cap}"
    return (" & ".join(names) + " off") if names else f"OPENSSL_ia32cap={ia32cap}"


def extensions_label(flags: Sequence[str]) -> str:
    have = [name for flag, name in (("aes", "AES-NI"), ("sha_ni", "SHA ext.")) if flag in flags]
    return " & ".join(have)


def method_of(obs: Observation) -> tuple[int, str]:
    """(sort order, label) of the method an observation measures."""
    path = ("" if obs.evp else " (no -evp)") + (" -aead" if obs.aead else "") + \
        (" decrypt" if obs.decrypt else "") + \
        (f" · {obs.processes} processes" if obs.processes > 1 else "") + \
        (" (pts/openssl way)" if obs.pts else "")
    if obs.published:
        return 6, f"as published{path}"
    if obs.engine:
        return 5, f"engine {obs.engine}{path}"
    if not obs.asm:
        if obs.ia32cap:
            return 1, f"no-asm, {describe_mask(obs.ia32cap)}{path}"
        return 0, f"no-asm{path}"
    if obs.ia32cap:
        return 2, f"asm, {describe_mask(obs.ia32cap)}{path}"
    if not obs.evp:
        return 3, "asm" + path
    ext = extensions_label(obs.host_flags)
    return 4, (f"asm + {ext}" if ext else "asm") + path


@dataclass(frozen=True)
class GroupKey:
    cpu: str
    version: str
    arch: str
    march: str | None
    configure: tuple[str, ...]
    source: str = ""  # an imported report: where its figures come from

    @property
    def title(self) -> str:
        if self.source:  # a published report: named by its source, never "OpenSSL ? · ?"
            version = "version not stated" if self.version in ("", "?") else \
                f"OpenSSL {self.version}"
            return f"{self.cpu.removeprefix('ref-')} (as published: {self.source}) · {version}"
        extra = "".join([f" · -march={self.march}" if self.march else "",
                         f" · {' '.join(self.configure)}" if self.configure else ""])
        return f"{self.cpu} · OpenSSL {self.version} · {self.arch}{extra}"

    @property
    def slug(self) -> str:
        text = "-".join([self.cpu, self.version, self.arch, self.march or "",
                         *self.configure])
        return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


@dataclass
class Cell:
    """Every observation of one method and algorithm at one block size."""

    observations: list[Observation] = field(default_factory=list)

    @property
    def ok_values(self) -> list[float]:
        """Values that go into the median (see ``USABLE_STATUSES``)."""
        return [o.bytes_per_s for o in self.observations
                if o.status in USABLE_STATUSES and o.bytes_per_s is not None]

    @property
    def median(self) -> float | None:
        vals = self.ok_values
        return statistics.median(vals) if vals else None

    @property
    def estimate(self) -> Estimate | None:
        """Median and 95 % interval of the usable values (``stats``). A published report's
        figures are transcribed, not repetitions of one measurement: no interval."""
        e = estimate(self.ok_values)
        if e is not None and any(o.published for o in self.observations):
            return dataclasses.replace(e, ci_low=None, ci_high=None)
        return e

    def error_bar(self, scale: float) -> tuple[float, float]:
        """(below, above) the median for a chart: the interval's half-width, the lower
        arm stopping at zero (no throughput is negative)."""
        e = self.estimate
        hw = e.half_width if e is not None else None
        if e is None or hw is None:
            return 0.0, 0.0
        return min(hw, e.median) / scale, hw / scale

    def pm(self) -> str:
        """``median ± half-width (n=N)`` in MB/s (``units.MBPS``); one sample says so; a
        cell without one usable figure says why (``no ok: all 6 contended``)."""
        e = self.estimate
        if e is None:
            flagged = self.flagged
            return f"no ok: {flagged.what}" if flagged is not None and flagged.statuses \
                else MBPS.num(None)
        hw = e.half_width
        return (MBPS.num(e.median) + (" (one sample)" if hw is None
                                      else f" ± {MBPS.num(hw, e.median)}") + f" (n={e.n})")

    @property
    def flagged(self) -> Flagged | None:
        """What the cell shows without one usable figure (None: it has one)."""
        if self.ok_values:
            return None
        return Flagged.of((o.bytes_per_s for o in self.observations),
                          (o.status for o in self.observations if o.status != "ok"))

    @property
    def other_statuses(self) -> dict[str, int]:
        """Statuses other than ok, used or not (shown beside the figure)."""
        out: dict[str, int] = {}
        for o in self.observations:
            if o.status != "ok":
                out[o.status] = out.get(o.status, 0) + 1
        return out


@dataclass
class Group:
    key: GroupKey
    methods: dict[str, int] = field(default_factory=dict)  # label -> order
    algorithms: list[str] = field(default_factory=list)
    blocks: set[int] = field(default_factory=set)
    cells: dict[tuple[str, str, int], Cell] = field(default_factory=dict)

    def method_rows(self) -> list[str]:
        return sorted(self.methods, key=lambda m: (self.methods[m], m))

    def cell(self, method: str, algorithm: str, block: int) -> Cell | None:
        return self.cells.get((method, algorithm, block))


def group_observations(obs: Iterable[Observation]) -> list[Group]:
    groups: dict[GroupKey, Group] = {}
    for o in obs:
        key = GroupKey(o.cpu, o.version, o.arch, o.march, o.configure, o.source)
        g = groups.setdefault(key, Group(key))
        order, label = method_of(o)
        g.methods[label] = order
        if o.algorithm not in g.algorithms:
            g.algorithms.append(o.algorithm)
        g.blocks.add(o.block_size)
        g.cells.setdefault((label, o.algorithm, o.block_size), Cell()).observations.append(o)
    return [groups[k] for k in sorted(groups, key=lambda k: (k.cpu, version_sort_key(k.version),
                                                             k.arch, k.march or "",
                                                             k.configure))]


# ----------------------------------------------------------------------------------
# output


#: openssl speed's own unit, for texts that quote speed (the side-by-side of a reproduction)
k = speed_k


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
    scaling_lines: list[str] = field(default_factory=list)
    """The scaling section (``scaling``): throughput against -multi processes."""

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
                        if self.ops_tables else "") + ", "
                     f"{len(self.charts)} chart(s), {self.reproductions} reproduction(s)")
        lines.append(f"report: {self.out_dir / 'index.html'}")
        return "\n".join(lines) + "\n"


def cells_rows(groups: Sequence[Group]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for g in groups:
        for (method, alg, block), cell in sorted(g.cells.items(), key=lambda kv: (
                g.methods[kv[0][0]], kv[0][0], g.algorithms.index(kv[0][1]), kv[0][2])):
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
                "forced": any(o.forced for o in cell.observations),
                "variants": " ".join(sorted({o.variant for o in cell.observations})),
                "runs": " ".join(sorted({f"{run_folder(o)}" for o in cell.observations})),
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
               "block_size", "evp", "mask", "ia32cap", "engine", "processes", "median_bytes_per_s",
               "min_bytes_per_s", "max_bytes_per_s", "n", "not_ok", "forced", "variants",
               "runs")


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


def _figure() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return Figure(figsize=(11, 4.8), dpi=100, layout="constrained")


#: One bar series of a grouped bar chart: its label, its cell per algorithm, hatched or not.
BarSeries = tuple[str, Callable[[str], "Cell | None"], bool]

#: The legend's entry for ``flagged_bar``.
FLAGGED_LEGEND = "unfilled, cross-hatched: no usable figure;\nwhat the flagged runs read " \
    "(never a median)"


def series_colors() -> list[str]:
    """The colours a chart gives its series, in order (matplotlib's cycle)."""
    import matplotlib

    return list(matplotlib.rcParams["axes.prop_cycle"].by_key()["color"])


def flagged_bar(ax: Any, at: float, size: float, f: Flagged, color: str, scale: float, *,
                horizontal: bool) -> None:
    """Draw a cell without one usable figure where its bar would be, so its row never
    vanishes from a chart: an unfilled bar cross-hatched in its series' colour at what the
    flagged figures read, with no error bar, labelled with their statuses (``all 2
    contended``) as the table's grey text is; with no value at all, the label alone
    (``no figure: 2 unreadable``) at the axis."""
    style = {"facecolor": "none", "edgecolor": color, "hatch": "xx", "linewidth": 0.8}
    text = {"fontsize": 7, "color": "#555555"}
    if f.value is not None and f.value > 0:
        v = f.value / scale
        if horizontal:
            ax.barh([at], [v], height=size, **style)
            ax.text(v, at, f" {f.what}", va="center", ha="left", **text)
        else:
            ax.bar([at], [v], width=size, **style)
            ax.text(at, v, f" {f.what}", rotation=90, ha="center", va="bottom", **text)
    elif horizontal:
        ax.text(0.005, at, f"no figure: {f.counts}", transform=ax.get_yaxis_transform(),
                va="center", ha="left", **text)
    else:
        ax.text(at, 0.005, f"no figure: {f.counts}", transform=ax.get_xaxis_transform(),
                rotation=90, ha="center", va="bottom", **text)


def legend(ax: Any, series: Sequence[tuple[str, str, bool]], flagged: bool,
           **where: Any) -> None:
    """A legend of (label, colour, hatched) series, with ``FLAGGED_LEGEND`` when a cell
    was drawn by ``flagged_bar`` (a series of only such cells still has its entry)."""
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=color, hatch="//" if hatched else None, label=label)
               for label, color, hatched in series]
    if flagged:
        handles.append(Patch(facecolor="none", edgecolor="#555555", hatch="xx",
                             label=FLAGGED_LEGEND))
    ax.legend(handles=handles, fontsize=8, **where)


def grouped_bars(title: str, algorithms: Sequence[str], series: Sequence[BarSeries],
                 path: Path) -> None:
    """Per algorithm one bar per series (its median, error bars its 95 % interval); a
    cell without one usable figure as ``flagged_bar``."""
    fig = _figure()
    ax = fig.subplots()
    width = 0.8 / len(series)
    colors = series_colors()
    entries: list[tuple[str, str, bool]] = []
    flagged = False
    for i, (label, cell_of, hatched) in enumerate(series):
        color = colors[i % len(colors)]
        xs, ys, lows, highs = [], [], [], []
        for j, a in enumerate(algorithms):
            c = cell_of(a)
            x = j - 0.4 + width * (i + 0.5)
            if c and c.median:
                xs.append(x)
                ys.append(c.median / MBPS.scale)
                low, high = c.error_bar(MBPS.scale)
                lows.append(low)
                highs.append(high)
            elif c and (f := c.flagged) is not None:
                flagged_bar(ax, x, width, f, color, MBPS.scale, horizontal=False)
                flagged = True
        if xs:
            ax.bar(xs, ys, width=width, color=color, yerr=[lows, highs], capsize=2,
                   error_kw={"elinewidth": 0.8}, hatch="//" if hatched else None)
        entries.append((label, color, hatched))
    ax.set_xticks(range(len(algorithms)), algorithms)
    ax.set_ylabel("MB/s (median; bars: 95 % interval)")
    ax.set_title(title, fontsize=10)
    legend(ax, entries, flagged, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.savefig(path)


def method_chart(g: Group, block: int, path: Path) -> bool:
    """Grouped bars of a method table at one block size: every row and algorithm that has
    a figure there, usable or flagged (``flagged_bar``); none when no figure is usable."""
    rows = [m for m in g.method_rows() if any(g.cell(m, a, block) for a in g.algorithms)]
    algs = [a for a in g.algorithms if any(g.cell(m, a, block) for m in rows)]
    if not any((c := g.cell(m, a, block)) and c.median for m in rows for a in algs):
        return False

    def cells(m: str) -> Callable[[str], Cell | None]:
        return lambda a: g.cell(m, a, block)

    grouped_bars(f"{g.key.title}\n{block}-byte blocks", algs,
                 [(m, cells(m), False) for m in rows], path)
    return True


def size_chart(g: Group, algorithm: str, path: Path) -> bool:
    blocks = sorted(b for b in g.blocks
                    if any((c := g.cell(m, algorithm, b)) and c.median for m in g.methods))
    if len(blocks) < 2:
        return False
    fig = _figure()
    ax = fig.subplots()
    for m in g.method_rows():
        pts = [(b, c.median / MBPS.scale, *c.error_bar(MBPS.scale))
               for b in blocks if (c := g.cell(m, algorithm, b)) and c.median]
        if pts:
            ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                        yerr=[[p[2] for p in pts], [p[3] for p in pts]],
                        marker="o", capsize=2, label=m)
    ax.set_xscale("log", base=2)
    ax.set_xticks(blocks, [str(b) for b in blocks])
    ax.set_xlabel("block size (bytes)")
    ax.set_ylabel("MB/s (median; bars: 95 % interval)")
    ax.set_title(f"{algorithm} — {g.key.title}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3)
    fig.savefig(path)
    return True


# -- reproductions ---------------------------------------------------------------


def latest_reproductions(tree: ResultsTree) -> list[tuple[str, Path, dict[str, Any]]]:
    """(spec id, folder, verdicts) of the newest reproduction of each spec."""
    base = tree.root / REPRO_DIR
    out: list[tuple[str, Path, dict[str, Any]]] = []
    if not base.is_dir():
        return out
    for spec_dir in sorted(p for p in base.iterdir() if p.is_dir() and
                           not p.name.startswith(".")):
        runs = sorted((p for p in spec_dir.iterdir() if p.name.isdigit() and
                       (p / "verdicts.json").is_file()), key=lambda p: int(p.name))
        if not runs:
            continue
        data = read_json(runs[-1] / "verdicts.json")
        if isinstance(data, dict):
            out.append((spec_dir.name, runs[-1], data))
    return out


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
"""


def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,  # every value is escaped for text and attributes alike
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env.get_template("report.html.j2")


def render_html(groups: Sequence[Group], block: int, charts: Mapping[str, list[str]],
                runs: Sequence[dict[str, Any]], repros: Sequence[dict[str, Any]],
                generated: str, tree_root: Path, quality: Quality,
                side_by_side: Sequence[dict[str, Any]] = ()) -> str:
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
    run_views = [{
        "id": run["id"], "status": run["status"], "forced": run["forced"],
        "started": run["started"], "cpu_model": run["cpu_model"],
        "image": str(run["image_id"])[:19], "tarball": str(run["tarball_sha256"])[:16],
        "files": [{"href": href(f"{run['path']}/{f}"), "name": f.split("/")[-1]}
                  for f in run["files"]],
    } for run in runs]
    text = _template().render(css=CSS, block=block, groups=views, unit=MBPS,
                              quality=quality.view(),
                              repros=[repro_view(r) for r in repros], runs=run_views,
                              side_by_side=list(side_by_side),
                              generated=generated, tree_root=str(tree_root))
    return text if text.endswith("\n") else text + "\n"


# -- the whole report ------------------------------------------------------------


def _regular(path: Path) -> bool:
    """A regular file, not a symbolic link: the report copies only what the tree holds
    (a link in a results tree could point at any file on the machine)."""
    return path.is_file() and not path.is_symlink()


def _copy_run(src: Path, dest: Path) -> list[str]:
    """Copy a run's meta, figures and raw output; return the copied names (relative)."""
    copied: list[str] = []
    dest.mkdir(parents=True, exist_ok=True)
    for name in (records.META, records.FIGURES):
        if _regular(src / name):
            shutil.copy2(src / name, dest / name)
            copied.append(name)
    raw = src / "raw"
    if raw.is_dir():
        (dest / "raw").mkdir(exist_ok=True)
        for f in sorted(raw.iterdir()):
            if _regular(f):
                shutil.copy2(f, dest / "raw" / f.name)
                copied.append(f"raw/{f.name}")
    return copied


def build_report(tree: ResultsTree, out: Path, *, block_size: int = 8192) -> ReportSummary:
    """Write the report folder ``out`` from the results tree (replacing an older report)."""
    records.require_tree(tree.root)
    obs = observations(tree)  # a damaged run file is named first, before the target
    groups = group_observations(obs)
    out = check_report_target(out, tree.root)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp's 0700 would hide the report
        write_report_marker(tmp)
        summary = _write(tree, tmp, groups, obs, block_size)
        swap_in(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    summary.out_dir = out
    return summary


def _write(tree: ResultsTree, out: Path, groups: list[Group], obs: list[Observation],
           block: int) -> ReportSummary:
    from . import aeadview, ptsview, scaling  # they import this module: page sections
    from .report_ops import ops_observations, write_ops  # public-key and handshake figures
    from .reportquality import quality

    ops_obs = ops_observations(tree)
    panel = quality(obs, ops_obs)
    (out / "data").mkdir()
    (out / "charts").mkdir()
    # runs: copy their files so every link works from the folder alone
    runs: list[dict[str, Any]] = []
    seen: set[Path] = set()
    for o in obs:
        if o.run_path in seen:
            continue
        seen.add(o.run_path)
        rel = run_folder(o)
        files = _copy_run(o.run_path, out / rel)
        meta = records.read_meta(o.run_path) or records.RunMeta()
        runs.append({"id": f"{o.cpu}/{o.variant}/{o.suite}/{o.run}", "path": rel,
                     "files": files, "status": meta.get("status"),
                     "forced": bool(meta.get("forced")), "started": meta.get("started"),
                     "cpu_model": (meta.get("host") or {}).get("cpu_model"),
                     "image_id": meta.get("image_id"),
                     "tarball_sha256": meta.get("tarball_sha256"),
                     "source": str(o.run_path)})
    # data
    rows = cells_rows(groups)
    (out / "data" / "cells.csv").write_text(_csv(rows, CELL_FIELDS), encoding="utf-8")
    algs = list(dict.fromkeys(a for g in groups for a in g.algorithms))
    mt = method_table_rows(groups, block)
    (out / "data" / f"method-table-{block}.csv").write_text(
        _csv(mt, ["cpu", "version", "arch", "method", *algs]), encoding="utf-8")
    # charts
    charts: dict[str, list[str]] = {}
    paths: list[Path] = []
    progress = log.Progress("drawing charts", sum(1 + len(g.algorithms) for g in groups))
    for g in groups:
        p = out / "charts" / f"{g.key.slug}-methods-{block}.png"
        if method_chart(g, block, p):
            charts.setdefault(f"methods:{g.key.slug}", []).append(f"charts/{p.name}")
            paths.append(p)
        progress.advance()
        for a in g.algorithms:
            p = out / "charts" / f"{g.key.slug}-{fold(a)}-by-size.png"
            if size_chart(g, a, p):
                charts.setdefault(f"sizes:{g.key.slug}", []).append(f"charts/{p.name}")
                paths.append(p)
            progress.advance()
    # several CPUs' tables of one build side by side
    comps = comparisons(groups)
    side_views = []
    for comp in comps:
        p = out / "charts" / f"{comp.slug}-{block}.png"
        drawn = cpus_chart(comp, block, p)
        if drawn:
            paths.append(p)
        side_views.append(cpus_view(comp, block, [f"charts/{p.name}"] if drawn else []))
    # reproductions
    repros: list[dict[str, Any]] = []
    for spec_id, folder, data in latest_reproductions(tree):
        dest = out / "reproductions" / f"{spec_id}-{folder.name}"
        dest.mkdir(parents=True)
        for name in ("side-by-side.txt", "verdicts.json", "spec.yaml"):
            if _regular(folder / name):
                shutil.copy2(folder / name, dest / name)
        repros.append({"id": spec_id, "data": data,
                       "text": f"reproductions/{dest.name}/side-by-side.txt",
                       "json": f"reproductions/{dest.name}/verdicts.json"})
    generated = datetime.now(timezone.utc).isoformat(timespec="seconds")
    report = {
        "generated": generated, "results_tree": str(tree.root.resolve()), "block_size": block,
        "quality": panel.to_json(),
        "method_tables": [{
            "title": g.key.title, "cpu": g.key.cpu, "version": g.key.version,
            "arch": g.key.arch, "methods": g.method_rows(), "algorithms": g.algorithms,
            "block_size": block,
            "cells": {m: {a: (c.median if (c := g.cell(m, a, block)) else None)
                          for a in g.algorithms} for m in g.method_rows()},
        } for g in groups],
        "cpus_side_by_side": [{
            "title": comp.title, "cpus": comp.cpus, "block_size": block,
            "methods": comp.methods(), "algorithms": comp.algorithms(),
            "cells": {m: {a: {cpu: (x.median if (x := comp.cell(m, a, i, block)) else None)
                              for i, cpu in enumerate(comp.cpus)}
                          for a in comp.algorithms()} for m in comp.methods()},
        } for comp in comps],
        "cells": rows,
        "charts": [f"charts/{p.name}" for p in paths],
        "runs": runs,
        "reproductions": [{"id": r["id"], "summary": r["data"].get("summary"),
                           "side_by_side": r["text"]} for r in repros],
    }
    (out / "data" / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n",
                                              encoding="utf-8")
    page = render_html(groups, block, charts, runs, repros, generated, tree.root.resolve(),
                       panel, side_views)
    ops = write_ops(tree, out, ops_obs)
    page = page.replace('<h2 id="repro">', ops.html + '<h2 id="repro">', 1).replace(
        '<a href="#repro">', '<a href="#ops">Public key &amp; TLS</a><a href="#repro">', 1)
    pts_rows = ptsview.rows(tree)
    if pts_rows:
        page = page.replace('<h2 id="repro">', ptsview.html(pts_rows) + '<h2 id="repro">', 1)
    masked = aeadview.checks(groups)
    if masked:
        page = page.replace('<h2 id="cpus">', aeadview.html(masked) + '<h2 id="cpus">', 1) \
            if '<h2 id="cpus">' in page else \
            page.replace('<h2 id="sizes">', aeadview.html(masked) + '<h2 id="sizes">', 1)
    scaled = scaling.views(obs, out / "charts")
    if scaled:
        page = page.replace('<h2 id="sizes">', scaling.html(scaled) + '<h2 id="sizes">', 1)
        report["scaling"] = scaled
        (out / "data" / "report.json").write_text(
            json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
        paths += [out / str(v["chart"]) for v in scaled if v["chart"]]
    (out / "index.html").write_text(page, encoding="utf-8")
    return ReportSummary(out, groups, block, [*paths, *ops.charts], len(obs) + ops.figures,
                         len(repros), comps, ops.lines, ops.tables, panel,
                         [*aeadview.text(masked), *scaling.text(scaled),
                          *ptsview.text(pts_rows)])
