"""An import's runs filed compactly: one file per import and version folder.

A bench run keeps its folder (``<cpu>/<variant>/<suite>/<run>/`` with ``meta.json``,
``figures.json`` and ``raw/``): it is written while it is measured, a kill leaves it
half-written and the tree's recovery marks it ``interrupted``. An import of a published
report has no such life: all its runs are known once the paste is parsed. Filing 20,000
of them as 20,000 folders and 40,000 files cost 20–30 s on this project's disk, so an
import writes, per version folder (``ref-NAME/<version>/import/``), one JSON-lines file
named by the run numbers it holds::

    runs-0001-0500.jsonl
    {"format": "openssl-matrix imported runs", "schema": 1, "figure_keys": [...],
     "meta": {<what every run's meta holds: the source file, its sha256, status, ...>}}
    [{<the rest of run 0001's meta>}, [<figure row>, ...]]
    [{<the rest of run 0002's meta>}, [<figure row>, ...]]
    ...

Line *k* (after the header) is run ``first + k - 1``; its meta is what ``meta.json``
held (``RunMeta.to_json()``): the header's ``meta`` and the line's own keys; each figure
a row of values in ``figure_keys`` order, with the file's ``schema`` (or a whole object
where an odd figure could not be a row). The file is streamed to a
temporary name (``.runs-*.tmp``) and renamed once complete, so a kill leaves no run of it
counted and the temporary file is removed by the tree's recovery. A file larger than
:data:`MAX_FILE_BYTES` is split into several, each with its own range.

The runs in such a file are seen by every reader as the old folders were: ``run_dirs``
lists ``<suite>/0001`` … (a path with no folder behind it), and ``read_meta`` and
``read_figures`` of such a path read its line (records.py). This module only finds and
reads the lines; records.py validates them.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from openssl_matrix.core import jsonread
from openssl_matrix.core.errors import ResultsError
from openssl_matrix.core.files import fault_point, read_bounded
from openssl_matrix.core.jsonfast import dumps_indented

FORMAT = "openssl-matrix imported runs"
SUITE = "import"  #: the suite folder of an import's runs: ``ref-NAME/<version>/import/``
PREFIX = "runs-"
SUFFIX = ".jsonl"
_NAME = re.compile(r"runs-(\d{4,9})-(\d{4,9})\.jsonl\Z")
#: The most bytes one compact file holds (the results reader's cap is 256 MB).
MAX_FILE_BYTES = 64 << 20
#: A compact file's write buffer: a run's line is ~3 kB, a file tens of MB (fewer, larger
#: writes than the default 8 kB buffer's).
WRITE_BUFFER = 1 << 20
#: Parsed files kept (a report reads every run, then a copied run's meta by its path).
_CACHED = 4
_cache: dict[Path, tuple[tuple[int, int, int], list[bytes], dict[str, Any]]] = {}
#: The run line parsed last, by (file, line, the id of the file's lines as read), and its Entry.
_last: list[tuple[tuple[Path, int, int], Entry]] = []


def damaged(path: Path, what: str) -> ResultsError:
    """A compact file that cannot be read: named, with how to set it aside."""
    return ResultsError(
        f"{path}: damaged: {what}",
        hint=f"set it aside: move {path} out of the results tree (for example `mv {path} "
        "/tmp/`) and rerun; its runs are then gone from the tree, nothing else is affected")


def compact_files(suite_dir: Path) -> list[tuple[int, int, Path]]:
    """The compact files of a suite folder as (first run, last run, path), by first."""
    try:
        names = os.listdir(suite_dir)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for name in names:
        m = _NAME.match(name)
        if m and int(m[1]) <= int(m[2]):
            found.append((int(m[1]), int(m[2]), suite_dir / name))
    return sorted(found)


def run_paths(suite_dir: Path) -> list[tuple[str, Path]]:
    """Every run of a suite folder as (name, path), run folders and the runs of compact
    files alike, in the order of their names as text (as the folders were always listed)."""
    found: dict[str, Path] = {}
    with os.scandir(suite_dir) as entries:
        for entry in entries:
            if entry.name.isdigit() and entry.is_dir():
                found[entry.name] = suite_dir / entry.name
    for first, last, _path in compact_files(suite_dir):
        for n in range(first, last + 1):
            found.setdefault(f"{n:04d}", suite_dir / f"{n:04d}")
    return sorted(found.items())


def last_number(suite_dir: Path) -> int:
    """The highest run number used in a suite folder, by a folder or a compact file."""
    numbers = [last for _, last, _ in compact_files(suite_dir)]
    with contextlib.suppress(FileNotFoundError):
        numbers += [int(p.name) for p in suite_dir.iterdir() if p.name.isdigit()]
    return max(numbers, default=0)


@dataclass(frozen=True)
class Entry:
    """One run's line of a compact file, parsed: its meta and figures as JSON objects."""

    file: Path
    meta: Any
    figures: list[Any]


def _locate(run_dir: Path) -> tuple[int, Path] | None:
    """The first run number and path of the compact file holding the run ``run_dir``
    names (a path with no folder behind it); None when no compact file holds it."""
    name = run_dir.name
    if not name.isdigit() or run_dir.is_dir():
        return None
    n = int(name)
    for first, last, path in compact_files(run_dir.parent):
        if first <= n <= last and name == f"{n:04d}":
            return first, path
    return None


def holder(run_dir: Path) -> Path:
    """What holds a run: its folder, or the compact file its line is in (what to move out
    of the tree to set the run aside)."""
    found = _locate(run_dir)
    return run_dir if found is None else found[1]


def run_entry(run_dir: Path) -> Entry | None:
    """The line of the compact file holding the run ``run_dir`` names (a path with no
    folder behind it); None when no compact file holds it."""
    found = _locate(run_dir)
    if found is None:
        return None
    first, path = found
    lines, head = _lines(path)
    at = int(run_dir.name) - first
    if at >= len(lines):
        raise damaged(path, f"it names runs up to {path.name} and holds {len(lines)}")
    key = (path, at, id(lines))  # (the lines of the file as read last)
    if _last and _last[0][0] == key:  # a run's meta, then its figures: one parse
        return _last[0][1]
    entry = _parse(path, lines[at], head)
    _last[:] = [(key, entry)]
    return entry


def run_files(run_dir: Path) -> dict[str, str | Path]:
    """What a report copies of a compactly filed run ({} for a run with a folder): its
    ``meta.json`` and ``figures.json`` as its folder would have held them, byte for byte,
    and the paste its import stored (by its path relative to the run, as the meta's
    ``raw_report`` names it from the tree's root: the copy keeps the link working)."""
    entry = run_entry(run_dir)
    if entry is None:
        return {}
    out: dict[str, str | Path] = {
        name: dumps_indented(obj, sort_keys=True, default=str, allow_nan=False) + "\n"
        for name, obj in (("meta.json", entry.meta), ("figures.json", entry.figures))}
    root = run_dir.parents[3]  # <root>/<cpu>/<version>/import/<run>
    held = entry.meta.get("raw_report") if isinstance(entry.meta, dict) else None
    paste = root / held if isinstance(held, str) and held else None
    if paste is not None and paste.is_file() and \
            paste.resolve().is_relative_to(root.resolve()):
        out[os.path.relpath(paste, run_dir)] = paste
    return out


def _lines(path: Path) -> tuple[list[bytes], dict[str, Any]]:
    """The run lines of a compact file and its header (the file read once while it
    is unchanged: a report lists every run, then reads a copied run again by its path)."""
    try:
        st = os.stat(path)
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        held = _cache.get(path)
        if held is not None and held[0] == stamp:
            return held[1], held[2]
        data = read_bounded(path, "results")
    except OSError as exc:
        raise damaged(path, f"unreadable ({exc.strerror or exc})") from None
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    try:
        head = jsonread.loads(lines[0].decode("utf-8")) if lines else None
    except (UnicodeDecodeError, ValueError) as exc:
        raise damaged(path, f"its first line is not JSON ({exc})") from None
    keys = head.get("figure_keys") if isinstance(head, dict) else None
    if not isinstance(head, dict) or head.get("format") != FORMAT or \
            not isinstance(keys, list) or not all(isinstance(k, str) for k in keys) or \
            not isinstance(head.get("meta", {}), dict):
        raise damaged(path, f"its first line is not the header of {FORMAT!r}")
    if not isinstance(head.get("schema"), int) or head["schema"] > 1:
        raise damaged(path, f"written with schema {head.get('schema')!r}; this "
                      "openssl-matrix reads up to 1 (upgrade it to read this tree)")
    while len(_cache) >= _CACHED:
        _cache.pop(next(iter(_cache)))
    _cache[path] = (stamp, lines[1:], head)
    return lines[1:], head


def _reject_constant(name: str) -> Any:
    raise ValueError(f"holds {name}, which is not a number JSON allows")


def _parse(path: Path, line: bytes, head: dict[str, Any]) -> Entry:
    """A run's line: its meta object (the header's ``meta`` and the line's) and its
    figures as objects (each row with the header's ``figure_keys``)."""
    keys = head["figure_keys"]
    try:
        data = jsonread.loads(line.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise damaged(path, f"a run's line is not JSON ({exc})") from None
    if not isinstance(data, list) or len(data) != 2 or not isinstance(data[1], list):
        raise damaged(path, "a run's line is not [meta, figures]")
    meta, rows = data
    if isinstance(meta, dict):
        meta = {**head.get("meta", {}), **meta}
    figures: list[Any] = []
    width = len(keys)
    for row in rows:
        if isinstance(row, list):
            if len(row) != width:
                raise damaged(path, f"a figure row has {len(row)} values for {width} keys")
            figure = dict(zip(keys, row, strict=True))
            figure.setdefault("schema", head["schema"])  # (every figure is of the file's)
            figures.append(figure)
        else:
            figures.append(row)  # an object (or damage: the figure reader names it)
    return Entry(path, meta, figures)


class CompactWriter:
    """The compact file(s) of one import in one suite folder: runs appended to a
    temporary file, renamed into place by :meth:`commit` (numbered after every run
    already there), or removed by :meth:`discard`."""

    def __init__(self, suite_dir: Path, keys: Sequence[str], meta: dict[str, Any], *,
                 mode: int) -> None:
        """``meta``: what the meta of every run of the import holds (in the header)."""
        self.suite_dir = suite_dir
        self.keys = list(keys)
        self.meta = meta
        self.mode = mode
        suite_dir.mkdir(parents=True, exist_ok=True)
        self._parts: list[tuple[str, IO[bytes], list[int]]] = []  # tmp, file, [runs, size]
        self._dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode

    def _open(self) -> tuple[str, IO[bytes], list[int]]:
        fd, tmp = tempfile.mkstemp(prefix=f".{PREFIX}", suffix=".tmp", dir=self.suite_dir)
        os.fchmod(fd, self.mode)
        fh = os.fdopen(fd, "wb", buffering=WRITE_BUFFER)
        part = (tmp, fh, [0, 0])
        self._parts.append(part)
        head = self._dumps({"format": FORMAT, "schema": 1, "figure_keys": self.keys,
                            "meta": self.meta})
        self._write(part, head)
        return part

    def _write(self, part: tuple[str, IO[bytes], list[int]], text: str) -> None:
        self._write_bytes(part, text.encode("utf-8") + b"\n")

    def _write_bytes(self, part: tuple[str, IO[bytes], list[int]], data: bytes) -> None:
        try:
            part[1].write(data)
        except OSError as exc:
            if exc.filename is None:
                exc.filename = part[0]  # a full disk names the file being written
            raise
        part[2][1] += len(data)

    def add_line(self, line: bytes) -> None:
        """Append a run's line: ``[meta,figures]`` (JSON, UTF-8, no line break), its meta
        what it holds beyond the writer's ``meta``, its figures rows of values in the
        writer's key order (or whole objects); encoded and checked by the import, once
        for each run, as it is parsed (results/imports.py)."""
        part = self._parts[-1] if self._parts else self._open()
        if part[2][0] and part[2][1] + len(line) > MAX_FILE_BYTES:
            part = self._open()
        self._write_bytes(part, line + b"\n")
        part[2][0] += 1

    @property
    def runs(self) -> int:
        return sum(p[2][0] for p in self._parts)

    def commit(self) -> list[tuple[Path, int, int]]:
        """Flush, sync and rename each temporary file to its final name; returns each
        file with its first and last run number."""
        done: list[tuple[Path, int, int]] = []
        while self._parts:
            tmp, fh, (count, _size) = self._parts[0]
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()
            first = last_number(self.suite_dir) + 1
            final = self.suite_dir / f"{PREFIX}{first:04d}-{first + count - 1:04d}{SUFFIX}"
            fault_point(final)  # (files.write_faults: a crash test's kill or full device)
            os.replace(tmp, final)
            self._parts.pop(0)
            done.append((final, first, first + count - 1))
        return done

    def discard(self) -> None:
        """Remove what was not committed (an import stopped before its end)."""
        for tmp, fh, _ in self._parts:
            with contextlib.suppress(OSError):
                fh.close()
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        self._parts.clear()


def stale_temporaries(root: Path, cpu: str | None = None) -> Iterator[Path]:
    """Temporary files a killed import left in a tree (under one CPU's folder): its
    compact files' and its paste's (``<cpu>/<version>/import/.*.tmp``)."""
    yield from root.glob(f"{'*' if cpu is None else glob.escape(cpu)}/*/{SUITE}/.*.tmp")
