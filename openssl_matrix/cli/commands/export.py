"""``invoke matrix export``: every figure in the results tree as flat records (CSV or
JSON lines), or one row per session and figure."""

from __future__ import annotations

import sys

from openssl_matrix.cli.paths import results_tree
from openssl_matrix.cli.table import Command, Flag
from openssl_matrix.core import log
from openssl_matrix.core.errors import UsageError
from openssl_matrix.core.files import atomic_write
from openssl_matrix.core.outputs import check_output_file, refuse_foreign_file
from openssl_matrix.report.medians import SESSION_FIELDS, session_medians
from openssl_matrix.results.export import records, render, render_rows, written_by_export

COMMAND = Command("export", "every figure in the results tree as flat records", flags=(
    Flag("force", False, "replace an --output file that export did not write"),
    Flag("format", "", "csv (default) or jsonl"),
    Flag("output", "", "write to this file instead of stdout"),
    Flag("per_session", False, "one row per session and figure: the median and 95 % "
         "interval of that session's usable figures (never pooled across sessions)"),
))


def run(*, target: str, matrix: str, results: str, format: str,
        output: str, per_session: bool = False, force: bool = False) -> int:
    fmt = format or "csv"
    if fmt not in ("csv", "jsonl"):
        raise UsageError(f"--format {fmt!r} is not one of csv, jsonl")
    tree = results_tree(results, matrix)
    dest = check_output_file(output, tree.root) if output else None
    if dest is not None:  # a file export did not write is left alone (unless --force)
        refuse_foreign_file(dest, written_by_export, "export", force=force)
    text = render_rows(list(session_medians(records(tree))), SESSION_FIELDS, fmt) \
        if per_session else render(tree, fmt)
    if dest is not None:
        atomic_write(dest, text)
        log.info(f"wrote {output}")
    else:
        sys.stdout.write(text)
    return 0
