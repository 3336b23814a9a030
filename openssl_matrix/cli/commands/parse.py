"""``invoke matrix parse FILE``: pasted ``openssl speed`` output or a whole report, read
and printed (tables, or ``--json``); the paste helpers ``import`` and ``reproduce --draft``
share.

Like every command module it imports only what it needs (the parser): not Docker, the
report, the bench or the lab, which took about a second of every ``parse`` before it read
its first byte (issue 35).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from openssl_matrix.cli.table import BLOCK_SIZES, JSON, Command
from openssl_matrix.core.errors import UsageError
from openssl_matrix.core.files import read_bounded
from openssl_matrix.core.jsonfast import dumps_indented, rows_indented
from openssl_matrix.core.names import clip
from openssl_matrix.parse import FIGURE_FIELDS, figure_records, figure_rows, iter_paste
from openssl_matrix.parse.encoding import paste_text
from openssl_matrix.parse.figures import MAX_BLOCK_SIZE, Figure, SpeedRun

#: A pasted report (`parse`, `import`, `reproduce --draft`) larger than this is not one.
MAX_REPORT_BYTES = 64 * 1024 * 1024


COMMAND = Command("parse", "parse pasted `openssl speed` output or a whole report", "FILE",
                  flags=(JSON, BLOCK_SIZES))


def run(*, target: str, matrix: str, results: str, json: bool,
        block_sizes: str = "") -> int:
    sizes = block_sizes_flag(block_sizes)
    try:
        raw = read_bounded(Path(target), cap=MAX_REPORT_BYTES)
    except OSError as exc:
        raise UsageError(f"cannot read {clip(target, 200)}: {exc.strerror}") from None
    text = paste_text(raw, target)
    del raw
    # run by run as the paste is read, each dropped once written: neither the runs nor
    # the output (~6x the paste) are ever held whole
    runs = iter_paste(text, block_sizes=sizes)
    del text
    write = sys.stdout.write
    i = 0
    for run in runs:
        i += 1
        if json:
            write(("[\n  " if i == 1 else ",\n  ") + parse_run_json(i, run))
            continue
        lines = [f"run {i}: {run.header.version_line or '(no version header)'}"]
        lines += [f"  {line}" for line in parse_table(run.figures)]
        lines += [f"  warning: {w}" for w in run.warnings]
        write("\n".join(lines) + "\n")
    if json:
        write("\n]\n" if i else "[]\n")
    return 0


def block_sizes_flag(text: str) -> tuple[int, ...] | None:
    """``--block-sizes 16,64,...``: ascending block sizes in bytes (None when not given)."""
    if not text.strip():
        return None
    words = [w.strip() for w in text.split(",")]
    if not all(w.isdigit() and 0 < int(w) <= MAX_BLOCK_SIZE for w in words) or \
            [int(w) for w in words] != sorted({int(w) for w in words}):
        raise UsageError(f"--block-sizes {clip(text, 80)!r}: expected block sizes in bytes, "
                         "ascending, comma separated",
                         hint="as speed prints them in its header: --block-sizes "
                         "16,64,256,1024,8192,16384")
    return tuple(int(w) for w in words)


def parse_run_record(number: int, run: SpeedRun, *, records: bool = True) -> dict[str, Any]:
    """What ``parse --json`` prints for the ``number``-th run of a paste (``records``:
    with its figures' records)."""
    header = {k: getattr(run.header, k) for k in run.header.__dataclass_fields__}
    return {"run": number, "header": header, "warnings": list(run.warnings),
            **({"records": figure_records(run)} if records else {})}


def parse_run_json(number: int, run: SpeedRun, level: int = 1) -> str:
    """``dumps_indented(parse_run_record(number, run), level=level)``, its records written
    by ``rows_indented`` from the figures (no dict per figure)."""
    text = dumps_indented(dict(parse_run_record(number, run, records=False), records=[]),
                          level=level)
    if not run.figures:
        return text
    tail = f"[]\n{'  ' * level}}}"
    assert text.endswith(tail)
    return (text[:-len(tail)] + rows_indented(FIGURE_FIELDS, figure_rows(run), level=level + 1)
            + f"\n{'  ' * level}}}")


def parse_table(figures: Sequence[Figure]) -> list[str]:
    """Parsed figures as two tables with their units: throughput (bytes per second, at a
    block size) and operations (per second: signatures, handshakes ...)."""
    throughput = [f for f in figures if f.operation is None]
    operations = [f for f in figures if f.operation is not None]
    lines: list[str] = []
    if throughput:
        lines += ["throughput, bytes per second (speed prints 1000s of bytes/s: 305049.90k "
                  "is 305,049,900 bytes/s)",
                  f"{'algorithm':<22} {'block (bytes)':>13} {'bytes/s':>17} {'MB/s':>10}  status"]
        for fig in throughput:
            value, block = fig.bytes_per_s, fig.block_size
            # a block size no speed table has is not kept (parse.figures.sane): the
            # detail says what was printed, never "None"
            why = f": {fig.detail}" if block is None and fig.detail else ""
            lines.append(f"{fig.algorithm:<22} {'—' if block is None else block!s:>13} "
                         + (f"{value:>17,.0f} {value / 1e6:>10,.2f}" if value is not None
                            else f"{'—':>17} {'—':>10}") + f"  {fig.status}{why}")
    if operations:
        lines += ["operations per second",
                  f"{'algorithm':<22} {'operation':>13} {'ops/s':>17}  status"]
        for fig in operations:
            value = fig.ops_per_s
            lines.append(f"{fig.algorithm:<22} {fig.operation!s:>13} "
                         + (f"{value:>17,.1f}" if value is not None else f"{'—':>17}")
                         + f"  {fig.status}")
    if not figures:
        lines.append("no figures")
    return lines
