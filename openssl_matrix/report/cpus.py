"""Report: method tables of several CPUs side by side.

A results tree filled by several engines (``--cpu=a,b``, or one profile after another)
holds the same build (OpenSSL version, arch, -march, Configure options) measured under
several CPU profiles. ``report.group_observations`` keeps one method table per CPU; this
module puts the tables of one build next to each other: rows are the methods, and under
each algorithm one column per CPU, so a reader compares machines along a row. Each cell
is the same :class:`report.Cell` as in the per-CPU table (its median, interval and runs),
never a number recomputed here. Published reports (``ref-*``) are left out: their
figures are compared by ``reproduce``, with their claims.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openssl_matrix.core.units import MBPS
from openssl_matrix.report.charts import grouped_bars
from openssl_matrix.report.view import cell_view, href

if TYPE_CHECKING:
    from openssl_matrix.report.types import Cell, Group


@dataclass(frozen=True)
class Comparison:
    """One build measured under several CPUs."""

    groups: tuple[Group, ...]  # one per CPU, in CPU order

    @property
    def cpus(self) -> list[str]:
        return [g.key.cpu for g in self.groups]

    @property
    def title(self) -> str:
        k = self.groups[0].key
        extra = "".join([f" · -march={k.march}" if k.march else "",
                         f" · {' '.join(k.configure)}" if k.configure else ""])
        return f"OpenSSL {k.version} · {k.arch}{extra} on {', '.join(self.cpus)}"

    @property
    def slug(self) -> str:
        k = self.groups[0].key
        text = "-".join(["cpus", k.version, k.arch, k.march or "", *k.configure])
        return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")

    def methods(self) -> list[str]:
        order: dict[str, int] = {}
        for g in self.groups:
            order.update(g.methods)
        return sorted(order, key=lambda m: (order[m], m))

    def algorithms(self) -> list[str]:
        return list(dict.fromkeys(a for g in self.groups for a in g.algorithms))

    def cell(self, method: str, algorithm: str, cpu: int, block: int) -> Cell | None:
        return self.groups[cpu].cell(method, algorithm, block)


def comparisons(groups: Sequence[Group]) -> list[Comparison]:
    """The builds of the tree measured under more than one CPU (published ones aside)."""
    by_build: dict[tuple[Any, ...], list[Group]] = {}
    for g in groups:
        if g.key.source:
            continue
        k = g.key
        by_build.setdefault((k.version, k.arch, k.march, k.configure), []).append(g)
    return [Comparison(tuple(sorted(gs, key=lambda g: g.key.cpu)))
            for gs in by_build.values() if len({g.key.cpu for g in gs}) > 1]


def text(comps: Sequence[Comparison], block: int) -> list[str]:
    """The terminal form: per build, a row per method, per algorithm a column per CPU."""
    lines: list[str] = []
    for c in comps:
        lines.append(f"CPUs side by side: {c.title} — {block} bytes, median ± half-width "
                     f"of the 95 % interval, {MBPS.name}")
        methods = c.methods()
        width = max([len(m) for m in methods] + [6])
        cols = [(a, i, cpu) for a in c.algorithms() for i, cpu in enumerate(c.cpus)]
        colw = max([24] + [len(f"{a} @ {cpu}") for a, _, cpu in cols])
        lines.append("  " + f"{'method':<{width}}  "
                     + "  ".join(f"{f'{a} @ {cpu}':>{colw}}" for a, _, cpu in cols))
        for m in methods:
            row = [(cell.pm() if (cell := c.cell(m, a, i, block)) else MBPS.num(None))
                   for a, i, _ in cols]
            lines.append("  " + f"{m:<{width}}  " + "  ".join(f"{v:>{colw}}" for v in row))
        lines.append("")
    return lines


def view(c: Comparison, block: int, charts: Sequence[str]) -> dict[str, Any]:
    """What the HTML template lays out for one comparison."""
    algs = c.algorithms()
    return {
        "slug": c.slug, "title": c.title, "cpus": c.cpus, "algorithms": algs,
        "rows": [{"method": m, "cells": [cell_view(c.cell(m, a, i, block))
                                         for a in algs for i in range(len(c.cpus))]}
                 for m in c.methods()],
        "charts": [href(p) for p in charts],
    }


def chart(c: Comparison, block: int, path: Path) -> bool:
    """Grouped bars: per algorithm, one bar per CPU and method, each named by its CPU
    (every second CPU's bars hatched)."""
    algs = c.algorithms()

    def cells(m: str, i: int) -> Callable[[str], Cell | None]:
        return lambda a: c.cell(m, a, i, block)

    series = [(f"{cpu} · {m}", cells(m, i), i % 2 == 1)
              for i, cpu in enumerate(c.cpus) for m in c.methods()
              if any(c.cell(m, a, i, block) for a in algs)]
    if not any((x := cell_of(a)) and x.median for _, cell_of, _ in series for a in algs):
        return False
    grouped_bars(f"{c.title}\n{block}-byte blocks, CPUs side by side", algs, series, path)
    return True
