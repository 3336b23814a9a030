"""``invoke matrix report``: tables, charts and a static HTML page from the results
tree."""

from __future__ import annotations

from pathlib import Path

from openssl_matrix.cli.paths import results_tree
from openssl_matrix.cli.shared import bounded
from openssl_matrix.cli.table import Command, Flag
from openssl_matrix.matrix.model import MAX_BYTES
from openssl_matrix.report.charts import DRAWN, Charts
from openssl_matrix.report.page import build_report
from openssl_matrix.report.sessions import Selection

COMMAND = Command("report", "tables, charts and a static HTML page from the results tree",
                  flags=(
    Flag("output", "", "write the report to this folder (default <results>/_report)"),
    Flag("block_size", 0, "block size of the method tables and charts (default 8192)",
         low=1, unset="8192"),
    Flag("versions", "", "fnmatch patterns over release versions, comma separated "
         "('3.0.*'): the library section shows those releases only, in release order"),
    Flag("session", "", "the bench session whose figures the cells show (an id from the "
         "report's Sessions table, or a unique start of one; default: each cell's latest "
         "session); the other sessions stay in each cell's history"),
    Flag("since", "", "leave out sessions started before this ISO date or time "
         "(2026-12-01, 2026-12-01T08:00; UTC unless it says)"),
))


def run(*, target: str, matrix: str, results: str, output: str,
        block_size: int, session: str = "", since: str = "",
        versions: str = "", charts: Charts = DRAWN) -> int:
    tree = results_tree(results, matrix)
    out = Path(output) if output else tree.report_dir()
    summary = build_report(tree, out,
                           block_size=bounded("--block-size", block_size or 8192, 1, MAX_BYTES),
                           selection=Selection.of(session, since),
                           versions=tuple(p.strip() for p in versions.split(",") if p.strip()),
                           charts=charts)
    print(summary.text(), end="")
    return 0
