"""The report's PTS-comparable table: every figure of a ``kind: pts`` suite that pts/openssl
reports, named as PTS names it and in PTS's unit, with our median and 95 % interval and
the arithmetic mean PTS would report from the same clean runs (pts.py)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from html import escape
from typing import Any

from openssl_matrix.core.stats import estimate
from openssl_matrix.matrix.pts import PROFILE, percent_std_dev
from openssl_matrix.results.tree import ResultsTree


@dataclass
class PtsRow:
    cpu: str
    version: str
    variant: str
    result: str
    unit: str
    processes: int
    values: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)

    def view(self) -> dict[str, Any]:
        e = estimate(self.values)
        scale, unit = (1e6, "MB/s") if self.unit == "byte/s" else (1.0, self.unit)

        def num(x: float | None) -> str:
            return "—" if x is None else f"{x / scale:,.1f}"

        ours = "no ok figure" if e is None else (
            num(e.median) + ("" if e.half_width is None else f" ± {num(e.half_width)}")
            + f" (n={e.n})")
        mean = statistics.fmean(self.values) if self.values else None
        return {"table": f"{self.cpu} · OpenSSL {self.version}", "variant": self.variant,
                "result": self.result, "unit": self.unit, "shown_in": unit,
                "processes": self.processes, "ours": ours,
                "pts_mean": num(mean),
                "rsd": f"{percent_std_dev(self.values):.1%}" if len(self.values) > 1 else "—",
                "statuses": ", ".join(f"{v} {k}" for k, v in sorted(self.statuses.items()))}


def rows(tree: ResultsTree) -> list[PtsRow]:
    found: dict[tuple[str, str, str, int], PtsRow] = {}
    for ref in tree.finished_runs():
        version = str((ref.meta.get("variant") or {}).get("version") or "?")
        for fig in ref.figures:
            title = fig.get("pts_result")
            if not isinstance(title, str):
                continue
            n = int(fig.get("multi") or 1)
            row = found.setdefault((ref.cpu, ref.variant, title, n), PtsRow(
                ref.cpu, version, ref.variant, title, str(fig.get("pts_unit") or ""), n))
            status = str(fig.get("status") or "?")
            row.statuses[status] = row.statuses.get(status, 0) + 1
            value = fig.get("bytes_per_s") if fig.get("block_size") is not None \
                else fig.get("ops_per_s")
            if status == "ok" and isinstance(value, (int, float)):
                row.values.append(float(value))
    return [found[k] for k in sorted(found)]


def text(found: list[PtsRow]) -> list[str]:
    if not found:
        return []
    out = [f"PTS-comparable ({PROFILE}): our median ± half-width of the 95 % interval; "
           "the mean PTS reports from the same clean runs"]
    for r in found:
        v = r.view()
        out.append(f"  {v['table']} · {v['result']} ({v['unit']}, {v['processes']} "
                   f"processes): ours {v['ours']} {v['shown_in']}, mean {v['pts_mean']} "
                   f"(spread {v['rsd']}); {v['statuses']}")
    return [*out, ""]


def html(found: list[PtsRow]) -> str:
    if not found:
        return ""
    head = ("<tr><th>Table</th><th>PTS result</th><th>PTS unit</th><th>Processes</th>"
            "<th>Ours: median ± half-width (n)</th><th>Mean (as PTS reports)</th>"
            "<th>Spread (PTS's rule: ≥ 3 % adds runs)</th><th>Figures</th></tr>")
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(x))}</td>" for x in (
            v["table"], v["result"], v["unit"], v["processes"],
            f"{v['ours']} {v['shown_in']}", f"{v['pts_mean']} {v['shown_in']}", v["rsd"],
            v["statuses"])) + "</tr>"
        for v in (r.view() for r in found))
    return (f'<h2 id="pts">PTS-comparable results ({escape(PROFILE)})</h2>'
            '<p class="muted">Figures of the pts-openssl suite that pts/openssl reports, named '
            "and united as PTS names them (byte/s shown in MB/s); our median with its 95 % "
            "interval over the clean runs, and the arithmetic mean PTS would report from "
            'the same runs. How the two methods compare: docs/pts.md.</p>'
            f"<table>{head}{body}</table>\n")
