"""Interleaved comparisons filed in a results tree (measure/pairrun.py writes them).

``_interleaved/<cpu>/<session>/<pair>/record.json`` is one comparison of two sides (two
builds, or a mask and native), every algorithm of it, with the harness's raw output
beside it as ``raw.txt``. The record is written last: a folder without it was interrupted
and is measured again when the session resumes. ``<pair>`` is
``<bottom>--vs--<top>`` of the sides' names (variant, and mask where there is one).
The record is a :class:`~openssl_matrix.results.pairrecord.PairRecord` both ways.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from openssl_matrix.core.errors import ResultsError
from openssl_matrix.core.files import atomic_write, write_json
from openssl_matrix.core.names import inside, safe_name
from openssl_matrix.results.pairrecord import PairRecord
from openssl_matrix.results.records import RecordError, read_json

INTERLEAVED_DIR = "_interleaved"
RECORD = "record.json"
RAW = "raw.txt"


def cpu_sessions(root: Path, cpu: str) -> Path:
    """``_interleaved/<cpu>``: the interleaved sessions measured under one CPU profile."""
    return root / INTERLEAVED_DIR / cpu


def record_name(cpu: str, session: str, pair: str) -> str:
    """A pair's record as a path relative to the tree (the provenance a verdict names)."""
    return str(Path(INTERLEAVED_DIR) / cpu / session / pair / RECORD)


def pair_dir(root: Path, cpu: str, session: str, pair: str) -> Path:
    """``_interleaved/<cpu>/<session>/<pair>``, each name checked, inside the tree."""
    for key, name in (("cpu", cpu), ("session", session), ("pair", pair)):
        safe_name(name, key, error=ResultsError)
    return inside(root, root / INTERLEAVED_DIR / cpu / session / pair, error=ResultsError)


def file_pair(root: Path, cpu: str, session: str, pair: str, record: PairRecord,
              raw: str) -> Path:
    """File one comparison: its raw output first, its record last."""
    folder = pair_dir(root, cpu, session, pair)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(folder / RAW, raw)
    write_json(folder / RECORD, record.to_json())
    return folder


def rewrite_record(root: Path, cpu: str, session: str, pair: str,
                   record: PairRecord) -> None:
    """Replace a filed comparison's record (its raw output stays as it is)."""
    write_json(pair_dir(root, cpu, session, pair) / RECORD, record.to_json())


def filed_raw(root: Path, cpu: str, session: str, pair: str) -> str:
    """A filed comparison's raw output ("" when there is none)."""
    path = pair_dir(root, cpu, session, pair) / RAW
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def filed_pairs(root: Path, cpu: str, session: str) -> dict[str, PairRecord]:
    """The finished comparisons of one bench session, by pair name."""
    base = root / INTERLEAVED_DIR / cpu / session
    out: dict[str, PairRecord] = {}
    if not base.is_dir():
        return out
    for folder in sorted(p for p in base.iterdir() if p.is_dir()):
        data = _record(folder)
        if data is not None:
            out[folder.name] = data
    return out


@dataclass(frozen=True)
class Filed:
    """One finished comparison: where it is and what it says."""

    cpu: str
    session: str
    folder: Path
    record: PairRecord


def all_pairs(root: Path) -> list[Filed]:
    """Every finished comparison of the tree, by CPU, session and pair name."""
    base = root / INTERLEAVED_DIR
    out: list[Filed] = []
    if not base.is_dir():
        return out
    for cpu in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for session in sorted(p for p in cpu.iterdir() if p.is_dir()):
            for folder in sorted(p for p in session.iterdir() if p.is_dir()):
                data = _record(folder)
                if data is not None:
                    out.append(Filed(cpu.name, session.name, folder, data))
    return out


def _record(folder: Path) -> PairRecord | None:
    if not (folder / RECORD).is_file():
        return None  # interrupted before its record: not finished
    data = read_json(folder / RECORD)
    try:
        return PairRecord.from_json(data, str(folder / RECORD))
    except RecordError as exc:
        raise ResultsError(f"not a comparison record: {exc}",
                           hint="move the folder aside; the next bench measures it again"
                           ) from None
