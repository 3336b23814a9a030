"""The results tree: ``results/<cpu>/<variant>/<suite>/<run>/``.

Every file is written atomically (temp file + rename). Runs are numbered and a
new run never overwrites an old one. Build records live beside the bench results
in ``results/_builds/<variant>/<digest>/`` (profile names cannot start with ``_``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .errors import ResultsError

BUILDS = "_builds"
IMPORTS = "_imported"


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
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
        return self.meta.get("status") in ("complete", "partial")


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
        fh.write(f"pid {os.getpid()}\n")
        fh.flush()
        self._lock_fh = fh

    def unlock(self) -> None:
        if self._lock_fh is not None:
            fcntl.flock(self._lock_fh, fcntl.LOCK_UN)
            self._lock_fh.close()
            self._lock_fh = None

    # -- runs -----------------------------------------------------------------
    def suite_dir(self, cpu: str, variant: str, suite: str) -> Path:
        return self.root / cpu / variant / suite

    def new_run_dir(self, cpu: str, variant: str, suite: str) -> Path:
        """Create the next numbered run folder (0001, 0002, ...); never reuse one."""
        base = self.suite_dir(cpu, variant, suite)
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

    # -- builds ---------------------------------------------------------------
    def build_dir(self, variant: str, digest: str) -> Path:
        return self.root / BUILDS / variant / digest[:16]

    def build_record(self, variant: str, digest: str) -> dict[str, Any] | None:
        data = read_json(self.build_dir(variant, digest) / "build.json")
        return data if isinstance(data, dict) else None
