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
from itertools import chain, count
from json import dumps
from json.encoder import encode_basestring_ascii
from operator import attrgetter, is_
from pathlib import Path
from typing import Any

from openssl_matrix.cli.table import BLOCK_SIZES, JSON, Command
from openssl_matrix.core.errors import UsageError
from openssl_matrix.core.files import read_bounded
from openssl_matrix.core.jsonfast import dumps_indented, fill, layout, mark, rows_indented
from openssl_matrix.core.names import clip
from openssl_matrix.parse import FIGURE_FIELDS, figure_records, figure_rows, iter_paste
from openssl_matrix.parse.encoding import paste_text
from openssl_matrix.parse.figures import (
    MAX_BLOCK_SIZE,
    STATUS_OK,
    Figure,
    FigureRow,
    SpeedHeader,
    SpeedRun,
    figure_parts,
    figure_values,
)

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


#: Layouts of ``parse --json``'s runs (core/jsonfast.layout), by warnings, figures and
#: level: a run's text is its values filled into the layout of its shape.
_LAYOUTS: dict[tuple[int, int, int], list[str]] = {}
_HEADER_FIELDS = tuple(SpeedHeader.__dataclass_fields__)
_HEADER_VALUES = attrgetter(*_HEADER_FIELDS)


def _run_layout(warnings: int, figures: int, level: int) -> list[str]:
    key = (warnings, figures, level)
    texts = _LAYOUTS.get(key)
    if texts is None:
        marks = map(mark, count())
        records = [dict(zip(FIGURE_FIELDS, marks, strict=False)) for _ in range(figures)]
        skeleton: Any = records if warnings < 0 else {  # (-1: the records alone)
            "run": next(marks), "header": dict(zip(_HEADER_FIELDS, marks, strict=False)),
            "warnings": [next(marks) for _ in range(warnings)], "records": records,
        }
        if len(_LAYOUTS) >= 64:
            _LAYOUTS.clear()
        texts = _LAYOUTS[key] = layout(skeleton, level=level)
    return texts


def parse_run_json(number: int, run: SpeedRun, level: int = 1) -> str:
    """``dumps_indented(parse_run_record(number, run), level=level)``: the run's values
    filled into the layout of a run of as many warnings (core/jsonfast.layout), its
    records' text after them (:func:`_records_json`): no dict per figure, one C-encoder
    call per run and one per distinct table of figures."""
    text = fill(_run_layout(len(run.warnings), 0, level),
                [number, *_HEADER_VALUES(run.header), *run.warnings])
    if text is None:
        text = dumps_indented(dict(parse_run_record(number, run, records=False), records=[]),
                              level=level)
    if not run.figures:
        return text
    tail = f"[]\n{'  ' * level}}}"
    assert text.endswith(tail)
    return text[:-len(tail)] + _records_json(run, level + 1) + f"\n{'  ' * level}}}"


#: Texts of runs' figures (records, table lines), by the ids of what the figures are kept
#: as (parse.figures.figure_parts: figures and rows; and the level), with those (kept
#: alive: their ids are not reused): the runs of a paste share their repeated figures
#: and rows (parse/shapes.py), and so their texts.
_BY_FIGURES: dict[tuple[Any, ...], tuple[tuple[Any, ...], Any]] = {}


def _kept(key: tuple[Any, ...], figures: tuple[Any, ...]) -> Any:
    kept = _BY_FIGURES.get(key)
    return kept[1] if kept is not None and all(map(is_, kept[0], figures)) else None


def _keep(key: tuple[Any, ...], figures: tuple[Any, ...], text: Any) -> None:
    if len(_BY_FIGURES) >= 32:
        _BY_FIGURES.clear()
    _BY_FIGURES[key] = (figures, text)


def _records_json(run: SpeedRun, level: int) -> str:
    """``rows_indented(FIGURE_FIELDS, figure_rows(run), level=level)``."""
    parts = figure_parts(run.figures)
    key = (level, *map(id, parts))
    text = _kept(key, parts)
    if text is None and parts and all(type(p) is FigureRow for p in parts):
        text = _rows_json(parts, level)  # type: ignore[arg-type]
        _keep(key, parts, text)
    if text is None:
        text = fill(_run_layout(-1, len(run.figures), level),
                    list(chain.from_iterable(figure_rows(run))))
        if text is None:
            text = rows_indented(FIGURE_FIELDS, figure_rows(run), level=level)
        _keep(key, parts, text)
    return str(text)


#: ``%``-templates of a row's records (parse.figures.FigureRow) by its shape and level: as
#: the first records of a table and as later ones (see :func:`_rows_json`); bounded.
_ROW_TEMPLATES: dict[tuple[Any, ...], tuple[str, str]] = {}
_NAMES = [encode_basestring_ascii(k) + ": " for k in FIGURE_FIELDS]


def _row_templates(shape: tuple[Any, ...], level: int) -> tuple[str, str]:
    """The text ``rows_indented`` gives a row's records, as a ``%``-template of their
    bytes/s (``%r``: the encoder writes a float by its repr), ops/s and printed tokens
    (digits, a point and ``k``: written as they are), which alone differ between rows of
    one shape; its constants are encoded here, once."""
    key = (shape, level)
    kept = _ROW_TEMPLATES.get(key)
    if kept is None:
        algorithm, label, evp, sizes = shape
        row, field = "  " * (level + 1), "  " * (level + 2)
        inner = [f",\n{field}{name}" for name in _NAMES]
        records = []
        for size in sizes:
            values = [*(dumps(v).replace("%", "%%") for v in (algorithm, label, evp, size)),
                      "%r", "%r", "null", dumps(STATUS_OK), '""', "null", "null", '"%s"']
            records.append("".join(chain.from_iterable(zip(inner, values, strict=True))))
        first = f"[\n{row}{{\n{field}{_NAMES[0]}" + records[0][len(inner[0]):]
        later = f"\n{row}}},\n{row}{{\n{field}{_NAMES[0]}" + records[0][len(inner[0]):]
        rest = "".join(f"\n{row}}},\n{row}{{\n{field}{_NAMES[0]}{r[len(inner[0]):]}"
                       for r in records[1:])
        if len(_ROW_TEMPLATES) >= 256:
            _ROW_TEMPLATES.clear()
        kept = _ROW_TEMPLATES[key] = (first + rest, later + rest)
    return kept


def _rows_json(parts: Sequence[FigureRow], level: int) -> str:
    """``rows_indented(FIGURE_FIELDS, values, level=level)`` of figures kept as rows: each
    row's template (:func:`_row_templates`) filled with its figures' varying values."""
    texts = []
    first = True
    for part in parts:
        template = _row_templates(part.shape, level)[0 if first else 1]
        first = False
        texts.append(template % tuple(chain.from_iterable(
            (v[4], v[5], v[11]) for v in part.values())))
    texts.append(f"\n{'  ' * (level + 1)}}}\n{'  ' * level}]")
    return "".join(texts)


def parse_table(figures: Sequence[Figure]) -> list[str]:
    """Parsed figures as two tables with their units: throughput (bytes per second, at a
    block size) and operations (per second: signatures, handshakes ...)."""
    parts = figure_parts(figures)
    key = ("table", *map(id, parts))
    kept = _kept(key, parts)
    if kept is None:
        kept = _table(list(figure_values(figures)))
        _keep(key, parts, kept)
    return list(kept)


def _table(figures: Sequence[tuple[Any, ...]]) -> list[str]:
    """The tables of figures given as their values (parse.figures.figure_values: the
    algorithm id first, block size 4th, bytes/s, ops/s, operation, status, detail)."""
    throughput = [f for f in figures if f[6] is None]
    operations = [f for f in figures if f[6] is not None]
    lines: list[str] = []
    if throughput:
        lines += ["throughput, bytes per second (speed prints 1000s of bytes/s: 305049.90k "
                  "is 305,049,900 bytes/s)",
                  f"{'algorithm':<22} {'block (bytes)':>13} {'bytes/s':>17} {'MB/s':>10}  status"]
        for algorithm, _, _, block, value, _, _, status, detail, *_ in throughput:
            # a block size no speed table has is not kept (parse.figures.sane): the
            # detail says what was printed, never "None"
            why = f": {detail}" if block is None and detail else ""
            lines.append(f"{algorithm:<22} {'—' if block is None else block!s:>13} "
                         + (f"{value:>17,.0f} {value / 1e6:>10,.2f}" if value is not None
                            else f"{'—':>17} {'—':>10}") + f"  {status}{why}")
    if operations:
        lines += ["operations per second",
                  f"{'algorithm':<22} {'operation':>13} {'ops/s':>17}  status"]
        for algorithm, _, _, _, _, value, operation, status, *_ in operations:
            lines.append(f"{algorithm:<22} {operation!s:>13} "
                         + (f"{value:>17,.1f}" if value is not None else f"{'—':>17}")
                         + f"  {status}")
    if not figures:
        lines.append("no figures")
    return lines
