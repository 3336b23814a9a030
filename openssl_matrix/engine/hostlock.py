"""One measurement at a time per Docker engine: the host-wide measurement lock.

The results tree's lock (``results.ResultsTree.lock``) keeps two benches off one tree;
two trees on one host still measured at the same time, each disturbing the other while
its speed process got 98 % of a CPU. This lock is keyed by the Docker engine's ID, not by
a tree, and lives in a machine-wide folder (``/run/lock/openssl-matrix``; else
``locks/`` in the cache folder, ``core.cachedir.cache_dir()``;
``$OPENSSL_MATRIX_LOCK_DIR`` overrides), so every bench and build of this tool on this
machine against that engine sees it.

Two ``flock(2)`` files per engine; a lock dies with its process (kill -9 included):

* ``<key>.gate``: a bench takes it exclusively for its whole session (waiting benches
  queue here, a progress line naming the holder); a build takes it shared for an
  instant before each step, so a build *pauses between steps* while a bench waits or
  measures;
* ``<key>.lock``: a build step holds it shared while ``docker build`` runs; a bench takes
  it exclusively after the gate, so it *waits for the build step in progress* and never
  measures beside one.

A remote engine is keyed by its ID too, but only clients on this machine see the lock.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO

from openssl_matrix.core.cachedir import cache_dir
from openssl_matrix.core.clock import now
from openssl_matrix.core.errors import ResultsError
from openssl_matrix.core.files import open_lock, read_bounded_text
from openssl_matrix.core.settings import environment_settings

SYSTEM_DIR = Path("/run/lock/openssl-matrix")


class EngineBusy(ResultsError):
    """Another measurement holds the engine and the caller would not wait (exit 9)."""

#: Seconds between "still waiting" lines.
PROGRESS_EVERY = 10.0
#: What a waiter says when the holder has not named itself (yet).
UNNAMED = "another process"
#: How long a waiter gives a holder that just took the lock to name itself (20 × 50 ms).
NAME_TRIES = 20
NAME_PAUSE_S = 0.05


def lock_dir(system: Path = SYSTEM_DIR) -> Path:
    """Where the locks live: the first of these that can be written (``system`` is the
    machine-wide folder; a test names one that cannot be)."""
    override = environment_settings().lock_dir
    if override is not None:
        path = override
        path.mkdir(parents=True, exist_ok=True)
        return path
    try:
        system.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            system.chmod(0o1777)  # every user of this machine shares the engine
        if os.access(system, os.W_OK):
            return system
    except OSError:
        pass
    cache = cache_dir() / "locks"
    cache.mkdir(parents=True, exist_ok=True)
    return cache


def engine_key(engine: Mapping[str, object]) -> str:
    """A file-name-safe key for a Docker engine: its ID, else its endpoint."""
    raw = str(engine.get("id") or engine.get("endpoint") or "local")
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", raw)[:120] or "local"


def _me(what: str) -> str:
    command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))
    return f"{what}: pid {os.getpid()} ({command[:160]}) since {now('seconds')}"


def _try(fh: IO[str], mode: int) -> bool:
    try:
        fcntl.flock(fh, mode | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES):
            raise
        return False


class HostLock:
    """The measurement lock of one Docker engine (see the module docstring)."""

    def __init__(self, key: str, directory: Path | None = None) -> None:
        self.key = key
        self.dir = directory or lock_dir()
        self.gate = self.dir / f"{key}.gate"
        self.lock = self.dir / f"{key}.lock"

    def _open(self, path: Path) -> IO[str]:
        fh = open_lock(path)  # never a FIFO or a link: the open would block or go astray
        with contextlib.suppress(OSError):
            os.chmod(path, 0o666)
        return fh

    def holder(self, *, builds_only: bool = False) -> str:
        """Who holds the gate (a bench), or which builds hold the lock."""
        text = ""
        if not builds_only:
            with contextlib.suppress(OSError):
                text = read_bounded_text(self.gate, "lock").strip()
        builds = []
        for path in sorted(self.dir.glob(f"{self.key}.build.*")):
            pid = path.name.rsplit(".", 1)[-1].split("-")[0]
            if pid.isdigit() and Path(f"/proc/{pid}").exists():
                with contextlib.suppress(OSError):
                    builds.append(read_bounded_text(path, "lock").strip())
        return "; ".join([t for t in (text,) if t] + builds) or UNNAMED

    def _wait(self, fh: IO[str], mode: int, *, wait: bool, what: str,
              say: Callable[[str], None], builds_only: bool = False) -> None:
        if _try(fh, mode):
            return
        holder = self.holder(builds_only=builds_only)
        # A bench names itself in the gate just after it takes the lock: asked in between,
        # the gate is still empty. Give it a moment before calling it "another process".
        for _ in range(NAME_TRIES):
            if holder != UNNAMED:
                break
            time.sleep(NAME_PAUSE_S)
            if _try(fh, mode):
                return
            holder = self.holder(builds_only=builds_only)
        if not wait:
            fh.close()
            raise EngineBusy(
                f"another measurement holds this Docker engine ({holder})",
                hint="wait for it (rerun without --no-wait: the bench queues behind it); "
                "two measurements at once disturb each other's figures")
        t0 = time.monotonic()
        say(f"waiting for the host's measurement lock ({what}); held by {holder}")
        next_note = t0 + PROGRESS_EVERY
        while not _try(fh, mode):
            time.sleep(0.5)
            now = time.monotonic()
            if now >= next_note:
                next_note = now + PROGRESS_EVERY
                current = self.holder(builds_only=builds_only)
                say(f"  … still waiting ({now - t0:.0f}s)"
                    + ("" if current == holder else f"; now held by {current}"))
                holder = current
        say(f"  got the measurement lock after {time.monotonic() - t0:.0f}s")

    @contextlib.contextmanager
    def measuring(self, what: str, *, wait: bool = True,
                  say: Callable[[str], None] = print) -> Iterator[None]:
        """Hold the engine for a measurement: no other bench, no build step of this tool."""
        gate = self._open(self.gate)
        lock: IO[str] | None = None
        try:
            self._wait(gate, fcntl.LOCK_EX, wait=wait, what=what, say=say)
            gate.seek(0)
            gate.truncate()
            gate.write(_me(f"bench {what}") + "\n")
            gate.flush()
            lock = self._open(self.lock)
            self._wait(lock, fcntl.LOCK_EX, wait=wait, what=f"{what}: a build step ends",
                       say=say, builds_only=True)
            yield
        finally:
            if lock is not None and not lock.closed:
                lock.close()
            if not gate.closed:
                with contextlib.suppress(OSError):
                    gate.seek(0)
                    gate.truncate()
                gate.close()

    @contextlib.contextmanager
    def building(self, what: str, say: Callable[[str], None] = print) -> Iterator[None]:
        """Hold the engine for one build step, after any bench that measures or waits."""
        gate = self._open(self.gate)
        try:
            self._wait(gate, fcntl.LOCK_SH, wait=True, what=f"build {what} pauses while a "
                       "bench measures", say=say)
        finally:
            gate.close()  # only a checkpoint: a bench that comes now waits for the lock
        lock = self._open(self.lock)
        note = self.dir / f"{self.key}.build.{os.getpid()}-{threading.get_ident()}"
        try:
            fcntl.flock(lock, fcntl.LOCK_SH)
            with contextlib.suppress(OSError):
                note.write_text(_me(f"build {what}") + "\n", encoding="utf-8")
            yield
        finally:
            lock.close()
            with contextlib.suppress(OSError):
                note.unlink()
