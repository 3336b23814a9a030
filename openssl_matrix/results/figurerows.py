"""An import's figures.json: rows of figure values written as :func:`records.write_figures`
writes the same figures as mappings — the same checks, the same bytes — without a dict
per figure (an import of 20,000 runs writes 440,000) and by one C-encoder call for a
run's values (core/jsonfast.rows_indented). The file is created in place in the run
folder the import has just made, before that folder's meta.json: the folder counts only
once meta.json (atomic, written after it) says ``complete``, so a kill in the middle
leaves a folder the tree's recovery marks ``interrupted`` (docs/robustness.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from openssl_matrix.core.files import write_json_new, write_new
from openssl_matrix.core.jsonfast import rows_indented
from openssl_matrix.parse import figure_rows as parse_figure_rows
from openssl_matrix.parse.figures import FigureTable, SpeedRun, figure_parts
from openssl_matrix.results.records import (
    _CHECKS,
    ANY,
    BOOL,
    FIGURES,
    INT,
    NUM,
    OPT_BOOL,
    OPT_INT,
    OPT_STR,
    SCHEMA,
    STR,
    FigureRecord,
    _checked_json,
    _field_names,
)


def write_figure_rows(run_dir: Path, keys: Sequence[str], rows: Sequence[Sequence[Any]], *,
                      mode: int) -> int:
    """``records.write_figures(run_dir, [dict(zip(keys, row)) for row in rows])`` into a
    new folder (``mode``: the new file's, files.new_file_mode): each value checked as
    ``FigureRecord.from_json`` checks it; a row the fast path cannot take (a value of
    the wrong type, a NaN, an odd key) sends every row through ``write_figures``' own
    checks, which name what is wrong. Returns the number of figures."""
    text = _rows_text(keys, rows)
    if text is None:
        checked = [_checked_json(dict(zip(keys, row, strict=True))) for row in rows]
        write_json_new(run_dir / FIGURES, checked, mode=mode)
    else:
        write_new(run_dir / FIGURES, text + "\n", mode=mode)
    return len(rows)


def _rows_text(keys: Sequence[str], rows: Sequence[Sequence[Any]]) -> str | None:
    """The file's text (the figures' keys sorted, ``schema`` among them, as
    ``write_json`` writes them), or None when the general path must decide."""
    ordered = checked_rows(keys, rows)
    if ordered is None:
        return None
    if not rows:
        return "[]"
    return rows_indented(ordered[0], ordered[1])


def checked_rows(keys: Sequence[str], rows: Sequence[Sequence[Any]],
                 ) -> tuple[list[str], list[tuple[Any, ...]]] | None:
    """The figures' keys sorted (``schema`` among them) and each row's values in that
    order, every value checked as ``FigureRecord.from_json`` checks it (:func:`rows_ok`);
    None when a row needs the general path (``write_figures``' checks, which name what
    is wrong)."""
    if not rows_ok(keys, rows):
        return None
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in keys]
    ordered = sorted([*keys, "schema"])
    by_key = dict(zip(keys, columns, strict=True))
    by_key["schema"] = (SCHEMA,) * len(rows)
    return ordered, list(zip(*(by_key[k] for k in ordered), strict=True)) if rows else []


def figure_rows(run: SpeedRun) -> Iterator[tuple[Any, ...]]:
    """Each figure's values of a parsed run in ``parse.FIGURE_FIELDS`` order: the one
    place the results layer reads a run's figures (an import reads 440,000)."""
    return parse_figure_rows(run)


def figure_key(run: SpeedRun) -> tuple[int, ...] | None:
    """The ids of what a run's figures are kept as (its figures, or the rows and figures
    of a ``FigureTable``, which the parser shares between runs whose lines repeat): two
    runs with the same key have the same figure values while the first run's
    ``figures`` is held (an id is reused only once its object is gone). None for a
    sequence of another kind."""
    figures = run.figures
    if type(figures) is tuple or type(figures) is FigureTable:
        return tuple(map(id, figure_parts(figures)))
    return None


def rows_ok(keys: Sequence[str], rows: Sequence[Sequence[Any]]) -> bool:
    """Whether every row of figure values (in ``keys`` order, ``schema`` not among them)
    passes ``FigureRecord.from_json``'s checks; False when one needs the general path:
    :func:`types_ok`, and every float finite (in any column, as ``read_json`` refuses
    NaN and infinities anywhere)."""
    if not types_ok(keys, rows):
        return False
    columns = zip(*rows, strict=True) if rows else [() for _ in keys]
    return all(map(_finite, columns))


def types_ok(keys: Sequence[str], rows: Sequence[Sequence[Any]]) -> bool:
    """:func:`rows_ok` but for the floats' finiteness (which the caller checks, e.g. by
    an encoder that refuses NaN and infinities): every row as wide as ``keys`` and each
    value of the exact type its key takes. Checked a column at a time, by the set of its
    values' types (an import checks 440,000 figures, the rows of many runs at once;
    a column is a slice of the rows' values laid end to end)."""
    if "schema" in keys or len(set(keys)) != len(keys) or \
            not set(FigureRecord._REQUIRED) <= set(keys):
        return False
    names, types = _field_names(FigureRecord), FigureRecord._TYPES
    kinds = [types.get(key, ANY) if key in names else ANY for key in keys]
    width = len(keys)
    if not set(map(len, rows)) <= {width}:
        return False
    flat = list(chain.from_iterable(rows))  # a column: a slice of it
    for j, kind in enumerate(kinds):
        allowed = _ALLOWED.get(kind)
        if allowed is not None:
            if not set(map(type, flat[j::width])) <= allowed:
                return False
        elif kind != ANY and not all(map(_CHECKS[kind], flat[j::width])):
            return False
    return True


_NONE = type(None)
#: The exact types each kind of value takes (a subclass goes the general way).
_ALLOWED: dict[str, frozenset[type]] = {
    STR: frozenset({str}), OPT_STR: frozenset({str, _NONE}), INT: frozenset({int}),
    OPT_INT: frozenset({int, _NONE}), NUM: frozenset({int, float, _NONE}),
    BOOL: frozenset({bool}), OPT_BOOL: frozenset({bool, _NONE})}
_NUMBERS = frozenset({int, float, bool, _NONE})


def _finite(column: Sequence[Any]) -> bool:
    """Whether every float of a column is finite."""
    kinds = set(map(type, column))
    if float not in kinds:
        return True
    if kinds <= _NUMBERS:  # (falsy values are 0, 0.0, None, False: all finite)
        return all(map(math.isfinite, filter(None, column)))
    return all(math.isfinite(v) for v in column if type(v) is float)
