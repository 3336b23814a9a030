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
from collections.abc import Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

from openssl_matrix.core.files import write_json_new, write_new
from openssl_matrix.core.jsonfast import rows_indented
from openssl_matrix.results.records import (
    _CHECKS,
    ANY,
    FIGURES,
    SCHEMA,
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
    order, every value checked as ``FigureRecord.from_json`` checks it; None when a row
    needs the general path (``write_figures``' checks, which name what is wrong). An
    import's compact file (results/compact.py) holds these rows."""
    if "schema" in keys or len(set(keys)) != len(keys) or \
            not set(FigureRecord._REQUIRED) <= set(keys):
        return None
    names, types = _field_names(FigureRecord), FigureRecord._TYPES
    checks = [(i, _CHECKS[types.get(k, ANY)]) for i, k in enumerate(keys) if k in names]
    width = len(keys)
    for row in rows:
        if len(row) != width or not all(check(row[i]) for i, check in checks) or \
                not all(math.isfinite(v) for v in row if type(v) is float):
            return None
    ordered = sorted([*keys, "schema"])
    position = {k: i for i, k in enumerate([*keys, "schema"])}
    pick = itemgetter(*(position[k] for k in ordered))
    return ordered, [pick((*row, SCHEMA)) for row in rows]
