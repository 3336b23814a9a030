"""The report's charts (matplotlib): grouped bars per method table, throughput over block
size, and the hatching of cells without a usable figure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openssl_matrix.core.units import MBPS
from openssl_matrix.report.types import Cell, Flagged, Group

#: Why matplotlib is imported inside the functions that draw: importing it took 1.6-2.5 s
#: (2026-12-01, this project's 2-core machine, host contended: load 6.6), paid by every
#: command that imports the report page (each ``invoke matrix`` run) but drawn only by
#: ``report``. The one other such import in the package is docker's, nowhere: the engine
#: imports it at the top, being the one module that uses it.
LAZY_MATPLOTLIB = "matplotlib: 1.6-2.5 s to import, needed only to draw"


def new_figure(height: float = 4.8) -> Any:
    """An empty 11-inch-wide figure drawn without a display."""
    import matplotlib  # lazy: LAZY_MATPLOTLIB

    matplotlib.use("Agg")
    from matplotlib.figure import Figure  # lazy: LAZY_MATPLOTLIB

    return Figure(figsize=(11, height), dpi=100, layout="constrained")


def save_figure(fig: Any, path: Path) -> None:
    """Write a drawn figure to its file (what :class:`Charts` does by default)."""
    fig.savefig(path)


#: What writes a drawn figure to its file: :func:`save_figure`, or a test's own (to read
#: what was drawn) passed down as a parameter.
SaveFigure = Callable[[Any, Path], None]

#: One bar series of a grouped bar chart: its label, its cell per algorithm, hatched or not.
BarSeries = tuple[str, Callable[[str], "Cell | None"], bool]
#: The legend's entry for ``flagged_bar``.
FLAGGED_LEGEND = "unfilled, cross-hatched: no usable figure;\nwhat the flagged runs read " \
    "(never a median)"


def series_colors() -> list[str]:
    """The colours a chart gives its series, in order (matplotlib's cycle)."""
    import matplotlib  # lazy: LAZY_MATPLOTLIB

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
    from matplotlib.patches import Patch  # lazy: LAZY_MATPLOTLIB

    handles = [Patch(facecolor=color, hatch="//" if hatched else None, label=label)
               for label, color, hatched in series]
    if flagged:
        handles.append(Patch(facecolor="none", edgecolor="#555555", hatch="xx",
                             label=FLAGGED_LEGEND))
    ax.legend(handles=handles, fontsize=8, **where)


def grouped_bars(title: str, algorithms: Sequence[str], series: Sequence[BarSeries],
                 path: Path, save: SaveFigure = save_figure) -> None:
    """Per algorithm one bar per series (its median, error bars its 95 % interval); a
    cell without one usable figure as ``flagged_bar``."""
    fig = new_figure()
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
    save(fig, path)


def method_chart(g: Group, block: int, path: Path, save: SaveFigure = save_figure) -> bool:
    """Grouped bars of a method table at one block size: every row and algorithm that has
    a figure there, usable or flagged (``flagged_bar``); none when no figure is usable."""
    rows = [m for m in g.method_rows() if any(g.cell(m, a, block) for a in g.algorithms)]
    algs = [a for a in g.algorithms if any(g.cell(m, a, block) for m in rows)]
    if not any((c := g.cell(m, a, block)) and c.median for m in rows for a in algs):
        return False

    def cells(m: str) -> Callable[[str], Cell | None]:
        return lambda a: g.cell(m, a, block)

    grouped_bars(f"{g.key.title}\n{block}-byte blocks", algs,
                 [(m, cells(m), False) for m in rows], path, save)
    return True


def size_chart(g: Group, algorithm: str, path: Path, save: SaveFigure = save_figure) -> bool:
    blocks = sorted(b for b in g.blocks
                    if any((c := g.cell(m, algorithm, b)) and c.median for m in g.methods))
    if len(blocks) < 2:
        return False
    fig = new_figure()
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
    save(fig, path)
    return True


@dataclass(frozen=True)
class Charts:
    """What draws the report's charts: a table's method chart and an algorithm's chart by
    block size, each given its file and saying whether it drew one. The report takes it
    as a parameter (``DRAWN`` by default), so a caller that needs no pictures — a test of
    the page's files, a fuzzer — passes :data:`NO_CHARTS` instead of patching the module.
    ``save`` writes each drawn figure (of these and of the public-key and handshake
    charts) to its file: a test that reads what was drawn passes its own."""

    method: Callable[[Group, int, Path, SaveFigure], bool] = method_chart
    size: Callable[[Group, str, Path, SaveFigure], bool] = size_chart
    save: SaveFigure = save_figure


def _none(*_: Any) -> bool:
    return False


DRAWN = Charts()
NO_CHARTS = Charts(method=_none, size=_none)
