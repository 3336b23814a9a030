"""The results tree: ``results/<cpu>/<variant>/<suite>/<run>/``.

Every file is written atomically (temp file + rename). Runs are numbered and a
new run never overwrites an old one. Build records live beside the bench results
in ``results/_builds/<variant>/<digest>/`` (profile names cannot start with ``_``).

Interruptions are the normal case. A run folder is "running" until its last write
marks it complete, partial or failed; a folder left "running" (or without meta.json)
by a killed process is found by :meth:`ResultsTree.recover`, marked ``interrupted``
(its raw output kept for inspection) and never counted. A run journal
(``results/_journal/<kind>-<key>.json``, see :class:`Journal`) remembers which cells
of a build or bench session are finished, so rerunning the same command after an
interruption goes on where it stopped instead of starting over.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from .errors import ResultsError
from .names import inside, safe_name
from .outputs import refuse_special

BUILDS = "_builds"
IMPORTS = "_imported"
JOURNALS = "_journal"
#: meta.json statuses of a run that finished (its figures count).
FINISHED = ("complete", "partial")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def current_umask() -> int:
    """The process umask, read without changing it (os.umask would race other threads)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the new one, never half.

    Only a regular file (or a new name) is replaced: a device, a folder, a FIFO or a
    symbolic link at ``path`` is refused (the rename would replace the node itself). The
    file gets the mode of the file it replaces, else 0666 less the umask (mkstemp's 0600
    would make results unreadable to the rest of the team)."""
    refuse_special(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~current_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: Path, obj: Any) -> None:
    atomic_write(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError) as exc:
        raise ResultsError(f"{path}: unreadable ({exc})",
                           hint="move the damaged file away and rerun") from None


@dataclass(frozen=True)
class RunRef:
    """One finished (or unfinished) run in the tree."""

    cpu: str
    variant: str
    suite: str
    run: str
    path: Path

    @property
    def meta(self) -> dict[str, Any]:
        data = read_json(self.path / "meta.json")
        return data if isinstance(data, dict) else {}

    @property
    def complete(self) -> bool:
        return self.meta.get("status") in FINISHED


def new_numbered_dir(base: Path) -> Path:
    """Create the next numbered folder under base (0001, 0002, ...); never reuse one,
    even when another process creates the same number first."""
    base.mkdir(parents=True, exist_ok=True)
    numbers = [int(p.name) for p in base.iterdir() if p.name.isdigit()]
    n = max(numbers, default=0) + 1
    while True:
        path = base / f"{n:04d}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            n += 1


class ResultsTree:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock_fh: IO[str] | None = None

    # -- locking --------------------------------------------------------------
    def lock(self, *, wait: bool = False) -> None:
        """Take the tree's lock; a second bench on the same tree is refused."""
        self.root.mkdir(parents=True, exist_ok=True)
        fh = (self.root / ".lock").open("a+", encoding="utf-8")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise ResultsError(
                f"{self.root} is in use by {holder}",
                hint="wait for it to finish, or pass --wait to queue behind it",
            ) from None
        fh.seek(0)
        fh.truncate()
        command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))
        fh.write(f"pid {os.getpid()} ({command[:200]}) since {_now()}\n")
        fh.flush()
        self._lock_fh = fh

    def unlock(self) -> None:
        if self._lock_fh is not None:
            fcntl.flock(self._lock_fh, fcntl.LOCK_UN)
            self._lock_fh.close()
            self._lock_fh = None

    # -- runs -----------------------------------------------------------------
    def suite_dir(self, cpu: str, variant: str, suite: str) -> Path:
        """``<cpu>/<variant>/<suite>``: each name checked (names.safe_name), the folder
        checked to stay inside the tree."""
        for key, name in (("cpu", cpu), ("variant", variant), ("suite", suite)):
            safe_name(name, key, error=ResultsError)
        return inside(self.root, self.root / cpu / variant / suite, error=ResultsError)

    def new_run_dir(self, cpu: str, variant: str, suite: str) -> Path:
        """Create the next numbered run folder (0001, 0002, ...); never reuse one."""
        return new_numbered_dir(self.suite_dir(cpu, variant, suite))

    def runs(self) -> Iterator[RunRef]:
        """Every run folder, in a stable order."""
        if not self.root.is_dir():
            return
        for cpu in sorted(p for p in self.root.iterdir() if p.is_dir()):
            if cpu.name.startswith((".", "_")) and cpu.name != IMPORTS:
                continue
            for variant in sorted(p for p in cpu.iterdir() if p.is_dir()):
                for suite in sorted(p for p in variant.iterdir() if p.is_dir()):
                    for run in sorted(p for p in suite.iterdir() if p.is_dir()):
                        if run.name.isdigit():
                            yield RunRef(cpu.name, variant.name, suite.name, run.name, run)

    # -- interrupted runs -----------------------------------------------------
    def recover(self, cpu: str | None = None, variant: str | None = None,
                suite: str | None = None, *, reason: str = "") -> list[Path]:
        """Mark half-written run folders as ``interrupted``; return them.

        A folder is half-written when its meta.json still says ``running`` or is missing
        (killed between creating the folder and the first write). Call this only while
        holding the tree's lock: then no live process is writing such a folder. Its raw
        output is kept for inspection; its figures are never counted. ``cpu``/``variant``/
        ``suite`` narrow the search to one cell. Stale temp files of atomic writes are
        removed.
        """
        found: list[Path] = []
        for ref in self.runs():
            if (cpu, variant, suite) != (None, None, None) and \
                    (ref.cpu, ref.variant, ref.suite) != (cpu, variant, suite):
                continue
            _remove_stale_tmp(ref.path)
            try:
                meta = read_json(ref.path / "meta.json")
            except ResultsError:
                damaged = ref.path / "meta.json.damaged"
                os.replace(ref.path / "meta.json", damaged)
                meta = {"damaged_meta": damaged.name}
            if isinstance(meta, dict) and meta.get("status") not in (None, "running"):
                continue
            record: dict[str, Any] = dict(meta) if isinstance(meta, dict) else {}
            raw = ref.path / "raw"
            record["status"] = "interrupted"
            record["interrupted"] = {
                "detected": _now(),
                "reason": reason or "the process writing it was stopped before it finished "
                "(killed, interrupted, or the Docker engine went away)",
                "raw_files_kept": sorted(p.name for p in raw.iterdir()) if raw.is_dir() else [],
                "note": "not counted: the cell is measured again in a new run folder",
            }
            write_json(ref.path / "meta.json", record)
            found.append(ref.path)
        return found

    # -- journals -------------------------------------------------------------
    def journal(self, kind: str, identity: Mapping[str, Any], *, fresh: bool = False,
                ) -> Journal:
        """The open journal of the session ``identity`` describes, or a new one.

        ``identity`` is what makes two commands "the same" (for bench: the CPU, the
        suite's definition and the variants). An open journal of the same identity is
        resumed unless ``fresh``; then it is closed as abandoned and a new one begun.
        """
        canon = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
        key = hashlib.sha256(f"{kind}\0{canon}".encode()).hexdigest()[:16]
        path = self.root / JOURNALS / f"{kind}-{key}.json"
        data = read_json(path)
        if isinstance(data, dict) and data.get("status") == "open":
            if not fresh:
                data.setdefault("resumes", []).append({"at": _now(), "pid": os.getpid()})
                journal = Journal(path, data, resumed=True)
                journal.save()
                return journal
            Journal(path, data).close("abandoned")
        data = {"kind": kind, "id": f"{kind}-{key}-{int(time.time() * 1000)}",
                "identity": json.loads(canon), "status": "open", "started": _now(),
                "pid": os.getpid(), "cells": {}}
        journal = Journal(path, data)
        journal.save()
        return journal

    # -- builds ---------------------------------------------------------------
    def build_dir(self, variant: str, digest: str) -> Path:
        safe_name(variant, "variant", error=ResultsError)
        safe_name(digest[:16], "digest", error=ResultsError)
        return inside(self.root, self.root / BUILDS / variant / digest[:16],
                      error=ResultsError)

    def build_record(self, variant: str, digest: str) -> dict[str, Any] | None:
        data = read_json(self.build_dir(variant, digest) / "build.json")
        return data if isinstance(data, dict) else None


def _remove_stale_tmp(folder: Path) -> None:
    """Temp files of atomic writes in a run folder: leftovers of a killed process (the
    caller holds the lock, so no live process is writing there)."""
    for tmp in folder.rglob(".*.tmp"):
        with contextlib.suppress(OSError):
            tmp.unlink()


@dataclass
class Journal:
    """Which cells of one build or bench session are finished.

    Saved atomically after every change, so a process killed at any point leaves a
    journal that is either before or after a cell's record, never half. The results
    tree stays the truth: a cell counts as finished only if what the journal points at
    is still there (see ``Bencher`` and ``Builder``). When every cell is finished the
    journal is closed (moved to ``_journal/closed/``) and the next identical command
    starts a new session.
    """

    path: Path
    data: dict[str, Any]
    resumed: bool = False
    _closed: bool = field(default=False, repr=False)

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def cells(self) -> dict[str, dict[str, Any]]:
        cells = self.data.setdefault("cells", {})
        assert isinstance(cells, dict)
        return cells

    def cell(self, name: str) -> dict[str, Any] | None:
        entry = self.cells.get(name)
        return entry if isinstance(entry, dict) else None

    def record(self, name: str, status: str, **info: Any) -> None:
        self.cells[name] = {"status": status, "at": _now(), **info}
        self.save()

    def save(self) -> None:
        if not self._closed:
            write_json(self.path, self.data)

    def close(self, status: str = "finished") -> Path:
        """Close the session: the next identical command starts a new one."""
        self.data["status"] = status
        self.data["ended"] = _now()
        dest = self.path.parent / "closed" / f"{self.id}-{status}.json"
        write_json(dest, self.data)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._closed = True
        return dest
