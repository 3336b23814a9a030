"""The bisections filed in a results tree, read back (what the report shows).

``_bisect/<cell>--<good>--<bad>/<NNNN>/bisection.json`` is one bisection of a cell between
two ends (sweep/bisectrun.py writes it, with ``summary.txt`` as printed); a later one of the
same cell and ends takes the next number. A folder whose record is missing or damaged was
never finished and is passed over."""

from __future__ import annotations

from pathlib import Path

from openssl_matrix.results.profiles import Filed, newest_numbered
from openssl_matrix.results.records import BISECT_DIR

RECORD = "bisection.json"
SUMMARY = "summary.txt"


def latest_bisections(root: Path) -> list[Filed]:
    """The newest finished bisection of every cell and pair of ends, in name order."""
    base = root / BISECT_DIR
    if not base.is_dir():
        return []
    ranges = sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))
    return [f for r in ranges if (f := newest_numbered(r, RECORD)) is not None]
