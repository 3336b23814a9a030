"""The sampled profiles filed in a results tree, read back (what the report shows).

``_profiles/<variant>/<cell>/<NNNN>/meta.json`` is one profile and
``_profiles/compare/<A>-vs-<B>-<cell>/<NNNN>/diff.json`` one comparison of two
(measure/profilestore.py writes them). A folder whose record is missing (a profile
interrupted before its meta.json, written last) or damaged is passed over: it was never
finished."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openssl_matrix.core.errors import ResultsError
from openssl_matrix.results.records import PROFILES_DIR, read_json

#: One profile's files (``_profiles/<variant>/<cell>/<NNNN>/``, results/filing.py writes
#: them): perf's own text, the folded stacks, the flame graph, and its meta.json, last.
PROFILE_SCRIPT = "perf-script.txt"
PROFILE_FOLDED = "stacks.folded"
PROFILE_SVG = "flame.svg"
PROFILE_META = "meta.json"
#: A comparison of two builds' profiles (``_profiles/compare/<A>-vs-<B>-<cell>/<NNNN>/``).
DIFF_TEXT = "diff.txt"
DIFF_SVG = "diff.svg"
DIFF_JSON = "diff.json"

#: The folder of comparisons, beside the variants' folders under ``_profiles``.
COMPARE = "compare"


@dataclass(frozen=True)
class Filed:
    """The newest finished profile (or comparison) of one cell: its folder and record."""

    folder: Path
    record: dict[str, Any]

    def files(self, names: tuple[str, ...]) -> list[tuple[str, Path]]:
        """Those of ``names`` that are regular files of its folder, each with its path."""
        return [(n, self.folder / n) for n in names if is_regular(self.folder / n)]


def is_regular(path: Path) -> bool:
    """A regular file, not a symbolic link (a link in a results tree could point at any
    file on the machine): what the report copies."""
    return path.is_file() and not path.is_symlink()


def newest_numbered(cell_dir: Path, record: str) -> Filed | None:
    """The highest-numbered ``NNNN/`` folder of ``cell_dir`` whose ``record`` reads as a
    JSON object (a folder without it, or with a damaged one, was never finished)."""
    numbered = sorted((p for p in cell_dir.iterdir() if p.name.isdigit() and p.is_dir()),
                      key=lambda p: int(p.name), reverse=True)
    for folder in numbered:
        try:
            data = read_json(folder / record)
        except ResultsError:
            continue
        if isinstance(data, dict):
            return Filed(folder, data)
    return None


def _cells(root: Path, compare: bool) -> list[Path]:
    base = root / PROFILES_DIR
    if not base.is_dir():
        return []
    tops = [base / COMPARE] if compare else sorted(
        p for p in base.iterdir() if p.is_dir() and p.name != COMPARE
        and not p.name.startswith("."))
    return [c for top in tops if top.is_dir()
            for c in sorted(top.iterdir()) if c.is_dir() and not c.name.startswith(".")]


def latest_profiles(root: Path) -> list[Filed]:
    """The newest finished profile of every variant and cell, in name order."""
    return [f for c in _cells(root, False) if (f := newest_numbered(c, PROFILE_META)) is not None]


def latest_comparisons(root: Path) -> list[Filed]:
    """The newest finished comparison of every pair of builds and cell, in name order."""
    return [f for c in _cells(root, True) if (f := newest_numbered(c, DIFF_JSON)) is not None]


def profiles_work(root: Path) -> Path:
    """``_profiles/.work`` of the tree at ``root``: the profiling images' build context."""
    return root / PROFILES_DIR / ".work"
