"""``invoke matrix import FILE --as NAME``: a published report's figures stored as
reference results under ``results/ref-NAME/``.

Like ``parse``, it imports the parser and the results tree only (not Docker, the report,
the bench or the lab: issue 35).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from openssl_matrix.cli.commands.parse import MAX_REPORT_BYTES
from openssl_matrix.cli.paths import results_tree
from openssl_matrix.cli.table import WAIT, Command, Flag
from openssl_matrix.core.errors import ParseError, UsageError
from openssl_matrix.core.files import read_bounded
from openssl_matrix.core.names import clip, name_problem, safe_name
from openssl_matrix.parse import iter_paste
from openssl_matrix.parse.encoding import paste_text
from openssl_matrix.results.imports import import_report, pasted_runs, spool, unspool

#: The spool's buffer (a run's line is ~3 kB; the spool of 20,000 runs tens of MB).
SPOOL_BUFFER = 1 << 20

COMMAND = Command("import", "store a published report's figures as reference results", "FILE",
                  "--as NAME", flags=(
    WAIT,
    Flag("as_", "", "name for the imported report (results go under results/ref-NAME)"),
))


def run(*, target: str, matrix: str, results: str, as_: str, wait: bool = False) -> int:
    """Store a published report's figures in the results tree as reference results.

    An import is identified by the source file's sha256 and ``--as``: importing the same
    file again says where it is and adds nothing; an import that was stopped (Ctrl-C, a
    kill, a full disk) is completed by the next one, never stored twice. The pasted text
    is stored once per import (``report-<sha256>.txt``), not per run; the runs are filed as
    one file per version folder (results/compact.py).
    """
    if not as_ or not re.match(r"^[a-z0-9][a-z0-9._-]*\Z", as_) or name_problem(as_):
        raise UsageError("`invoke matrix import FILE` needs --as NAME (lower-case letters, "
                         "digits, '.', '_', '-'" + (f"; got {clip(as_)}" if as_ else "") + ")",
                         hint="e.g. --as ivy-bridge-blog-2013")
    try:
        raw = read_bounded(Path(target), cap=MAX_REPORT_BYTES)
    except OSError as exc:
        raise UsageError(f"cannot read {clip(target, 200)}: {exc.strerror}") from None
    text = paste_text(raw, target)
    count = 0
    # parsed once: each run checked and counted, and spooled to an unnamed temporary
    # file (outside the tree: every folder name is checked before anything is written
    # there), then filed from the spool; the runs of a large paste are never all held
    with tempfile.TemporaryFile(buffering=SPOOL_BUFFER) as spooled:
        versions: set[str] = set()  # each checked once, not once a run
        for run in pasted_runs(iter_paste(text)):
            count += 1
            if (run.version or "unknown") not in versions:
                safe_name(run.version or "unknown",
                          f"{target}: run {count}: the version in its header", error=ParseError)
                versions.add(run.version or "unknown")
            spool(run, count, spooled)
        if not count:
            raise UsageError(f"{target}: no `openssl speed` output found in it")
        import_report(results_tree(results, matrix), raw, lambda: unspool(spooled, count),
                      count, as_=as_, source=Path(target), wait=wait, text=text)
    return 0
