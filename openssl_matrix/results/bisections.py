"""The bisections filed in a results tree, read back (what the report shows).

``_bisect/<cell>--<good>--<bad>/<NNNN>/bisection.json`` is one bisection of a cell between
two ends (sweep/bisectrun.py writes it, with ``summary.txt`` as printed); a later one of the
same cell and ends takes the next number. A folder whose record is missing or damaged was
never finished and is passed over."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from openssl_matrix.core import jsonread
from openssl_matrix.core.errors import ResultsError
from openssl_matrix.core.files import read_bounded_text
from openssl_matrix.core.names import inside, safe_name
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


#: A bisection's measurements as they are made (one JSON line each), for resuming.
PROGRESS = "progress-{key}.jsonl"


class Progress:
    """``_bisect/<cell>--<good>--<bad>/progress-<key>.jsonl``: every measurement a
    bisection made, in order, one JSON object a line, appended and flushed to disk as it
    is made; ``key`` names the build, CPU profile and engine, so that only a bisection
    measured the same way replays it. A line cut short by a crash is ignored."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def entries(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        out = []
        for line in read_bounded_text(self.path, "results").splitlines():
            try:
                entry = jsonread.loads(line)
            except ValueError:
                break  # a torn last line: what follows it was never acknowledged
            if not isinstance(entry, dict):
                break
            out.append(entry)
        return out

    def append(self, entry: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def set_aside(self) -> Path | None:
        """Move the progress aside (``--fresh``): kept, never replayed again."""
        if not self.path.is_file():
            return None
        n = 1
        while (aside := self.path.with_name(f"{self.path.stem}.set-aside-{n}.jsonl")).exists():
            n += 1
        os.replace(self.path, aside)
        return aside


def progress(root: Path, range_name: str, key: str) -> Progress:
    """The progress file of one bisection range measured one way (names checked)."""
    for what, name in (("bisection", range_name), ("bisection key", key)):
        safe_name(name, what, error=ResultsError)
    base = root / BISECT_DIR / range_name
    return Progress(inside(root, base / PROGRESS.format(key=key), error=ResultsError))
