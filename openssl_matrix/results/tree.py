"""The results tree: ``results/<cpu>/<variant>/<suite>/<run>/``.

Every file is written atomically (temp file + rename). Runs are numbered and a
new run never overwrites an old one. Build records live beside the bench results
in ``results/_builds/<variant>/<digest>/`` (profile names cannot start with ``_``).

Interruptions are the normal case. A run folder is "running" until its last write
marks it complete, partial or failed; a folder left "running" (or without its metadata file)
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
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from openssl_matrix.core import log
from openssl_matrix.core.clock import epoch_ms
from openssl_matrix.core.clock import now as _now
from openssl_matrix.core.errors import ResultsError
from openssl_matrix.core.files import UnreadableFile, open_lock, read_bounded, write_json
from openssl_matrix.core.names import inside, safe_name
from openssl_matrix.results import compact, interleaved, records
from openssl_matrix.results.bisections import Progress, latest_bisections
from openssl_matrix.results.bisections import progress as bisection_progress
from openssl_matrix.results.pairrecord import PairRecord
from openssl_matrix.results.profiles import Filed, profiles_work
from openssl_matrix.results.records import JOURNALS, read_json

#: The report's default folder and the lab's logs, inside the tree.
REPORT_DIR = "_report"
LAB_DIR = "_lab"


@dataclass(frozen=True)
class RunRef:
    """One finished (or unfinished) run in the tree."""

    cpu: str
    variant: str
    suite: str
    run: str
    path: Path

    @property
    def meta(self) -> records.RunMeta:
        """The run's validated metadata (an empty record while it has none)."""
        return records.read_meta(self.path) or records.RunMeta()

    @property
    def complete(self) -> bool:
        return self.meta.finished


def builds_root(root: Path) -> Path:
    """``_builds/`` of the tree at ``root``: build and ship records, claims, harness build
    contexts (:meth:`ResultsTree.builds_dir`, for code given the root alone)."""
    return root / records.BUILDS


def new_numbered_dir(base: Path, *, after: int | None = None) -> Path:
    """Create the next numbered folder under base (0001, 0002, ...); never reuse one,
    even when another process creates the same number first. ``after``: the number the
    caller made last there (it holds the tree's lock), so the folder is not listed again
    for each new run (an import of 20,000 runs)."""
    if after is None:
        base.mkdir(parents=True, exist_ok=True)  # (with ``after``, the caller made it)
        numbers = [int(p.name) for p in base.iterdir() if p.name.isdigit()]
        n = max(numbers, default=0) + 1
    else:
        n = after + 1
    while True:
        path = base / f"{n:04d}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            n += 1


#: Set by a lab (``lab.py``) in the environment of the engine workers it starts: "PID:TREE".
LAB_ENV = "OPENSSL_MATRIX_LAB_TREE"


def lab_worker() -> bool:
    """Whether this process (or thread, in tests) is an engine worker of a running lab:
    ``$OPENSSL_MATRIX_LAB_TREE`` names its parent (or itself)."""
    pid = os.environ.get(LAB_ENV, "").partition(":")[0]
    return pid.isdigit() and int(pid) in (os.getppid(), os.getpid())


class ResultsTree:
    def __init__(self, root: Path, *, name_pause: float | None = None) -> None:
        """``name_pause``: how long a refused :meth:`lock` pauses between its looks for
        the holder's name (``NAME_PAUSE_S``; a test shortens it)."""
        self.root = root
        self.name_pause = NAME_PAUSE_S if name_pause is None else name_pause
        self._lock_fh: IO[str] | None = None
        #: True while the lock is a lab's, held for this process (several engines write
        #: the tree at once, each under its own CPU): recover only your own CPU's folders.
        self.shared = False

    def _lab_holds_lock(self) -> bool:
        """Whether the lab that started this process (or runs this one's engines in
        threads) holds this tree's lock: ``$OPENSSL_MATRIX_LAB_TREE`` names its pid and
        this tree, the lock file names that pid, and the lock is taken."""
        pid, _, root = os.environ.get(LAB_ENV, "").partition(":")
        if not lab_worker():
            return False
        if Path(root) != self.root.resolve():
            return False
        path = self.root / ".lock"
        try:
            holder = read_bounded(path, "lock").decode("utf-8", errors="replace")
            with open_lock(path) as fh:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    return holder.startswith(f"pid {pid} ")
                fcntl.flock(fh, fcntl.LOCK_UN)  # nobody holds it: not delegated
        except OSError:
            return False
        return False

    # -- locking --------------------------------------------------------------
    def lock(self, *, wait: bool = False) -> None:
        """Take the tree's lock; a second bench or import on the same tree is refused, or
        with ``wait`` waits for it (saying for whom). An engine worker of a lab shares its
        lab's lock instead (:attr:`shared`)."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self._lab_holds_lock():
            self.shared = True
            return
        try:
            fh = open_lock(self.root / ".lock")
        except UnreadableFile as exc:
            raise ResultsError(f"{self.root / '.lock'}: {exc.strerror}; it is the results "
                               "tree's lock file", hint="move it away (it holds no results) "
                               "and rerun") from None
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            holder = _holder_named(fh, self.name_pause)
            if holder is None:  # released while we looked: take it after all
                fh.close()
                self.lock(wait=wait)
                return
            if not wait:
                fh.close()
                raise ResultsError(
                    f"{self.root} is in use by {holder}",
                    hint="wait for it to finish, or pass --wait to queue behind it",
                ) from None
            log.info(f"{self.root} is in use by {holder}: waiting for it (--wait)")
            fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        fh.truncate()
        command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))
        fh.write(f"pid {os.getpid()} ({command[:200]}) since {_now()}\n")
        fh.flush()
        self._lock_fh = fh

    def unlock(self) -> None:
        self.shared = False
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
        for cpu, variant, suite, run, path in records.run_dirs(self.root):
            yield RunRef(cpu, variant, suite, run, path)

    # -- interrupted runs -----------------------------------------------------
    def recover(self, cpu: str | None = None, variant: str | None = None,
                suite: str | None = None, *, reason: str = "") -> list[Path]:
        """Mark half-written run folders as ``interrupted``; return them.

        A folder is half-written when its metadata still says ``running`` or is missing
        (killed between creating the folder and the first write). Call this only while
        holding the tree's lock: then no live process is writing such a folder. Its raw
        output is kept for inspection; its figures are never counted. ``cpu``/``variant``/
        ``suite`` narrow the search (to one CPU, one cell). Stale temp files of atomic writes are
        removed.
        """
        found: list[Path] = []
        for tmp in compact.stale_temporaries(self.root, cpu):  # a killed import's
            with contextlib.suppress(OSError):
                tmp.unlink()
        if not self.shared:  # a lab's engines share the journals: only the lab cleans them
            if (self.root / JOURNALS).is_dir():
                _remove_stale_tmp(self.root / JOURNALS)
            for tmp in self.root.glob(".*.tmp"):  # export.csv and its kind, at the top
                with contextlib.suppress(OSError):
                    tmp.unlink()
        for c, v, s, run, path in records.run_dirs(self.root, cpu=cpu, variant=variant,
                                                   suite=suite):
            ref = RunRef(c, v, s, run, path)
            _remove_stale_tmp(ref.path)
            record: dict[str, Any] = {}
            try:
                meta = records.read_meta(ref.path)
            except ResultsError:
                damaged = ref.path / f"{records.META}.damaged"
                os.replace(ref.path / records.META, damaged)
                meta = None
                record = {"damaged_meta": damaged.name}
            if meta is not None:
                if meta.status != "running":
                    continue
                record = meta.to_json()
            raw = ref.path / "raw"
            record["status"] = "interrupted"
            record["interrupted"] = {
                "detected": _now(),
                "reason": reason or "the process writing it was stopped before it finished "
                "(killed, interrupted, or the Docker engine went away)",
                "raw_files_kept": sorted(p.name for p in raw.iterdir()) if raw.is_dir() else [],
                "note": "not counted: the cell is measured again in a new run folder",
            }
            records.write_meta(ref.path, record)
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
        data = {"kind": kind, "id": f"{kind}-{key}-{tree_clock(path.parent, new=True)}",
                "identity": json.loads(canon), "status": "open", "started": _now(),
                "pid": os.getpid(), "cells": {}}
        journal = Journal(path, data)
        journal.save()
        return journal

    # -- builds ---------------------------------------------------------------
    def build_dir(self, variant: str, digest: str) -> Path:
        return records.build_dir(self.root, variant, digest)

    def read_latest(self, variant: str) -> records.Latest | None:
        """The newest build of a variant as ``latest.json`` names it; None if never built."""
        return records.read_latest(self.root, variant)

    def write_latest(self, variant: str, digest: str, tag: str) -> None:
        records.write_latest(self.root, variant, digest, tag)

    def build_records(self, variant: str) -> list[records.BuildRecord]:
        """Every recorded build of a variant (any digest), in folder order."""
        return records.build_records(self.root, variant)

    def builds_dir(self, variant: str | None = None) -> Path:
        """``_builds/`` (a harness image's build context goes below it), or a variant's
        ``_builds/<variant>/`` (its build records, its harness's context)."""
        return builds_root(self.root) if variant is None else builds_root(self.root) / variant

    def claims_dir(self) -> Path:
        """``_builds/_claims/``: a lab's engines' claims on the images they build."""
        return builds_root(self.root) / "_claims"

    def cpu_dir(self, cpu: str) -> Path:
        """``<cpu>/``: the runs measured under one CPU profile."""
        return self.root / cpu

    def bisect_dir(self, name: str) -> Path:
        """``_bisect/<name>``: a range's bisections (``<cell>--<good>--<bad>``), or the
        bisections' build folder (``.work``) and commit archives (``.git-archives``)."""
        return self.root / records.BISECT_DIR / name

    # -- ship records: how an image reached an engine (engine/ship.py hands them up) --
    def ships(self) -> list[records.ShipRecord]:
        """Every ship record in the tree (variants', base and toolchain images')."""
        return records.read_ships(self.root)

    def file_ship(self, variant: str, digest: str, engine_key: str,
                  record: records.ShipRecord) -> None:
        """File how a variant's image reached the engine ``engine_key``, beside its build
        record."""
        records.write_ship(self.build_dir(variant, digest), engine_key, record)

    def file_image_ship(self, tag: str, engine_key: str, record: records.ShipRecord) -> None:
        """File how a base or toolchain image reached the engine ``engine_key``."""
        records.write_ship(records.images_dir(self.root, tag), engine_key, record)

    def toolchain_log(self, name: str) -> Path:
        """``_builds/_toolchain/<name>.log``: the log of a toolchain image's build."""
        safe_name(name, "toolchain image", error=ResultsError)
        return inside(self.root, self.root / records.BUILDS / "_toolchain" / f"{name}.log",
                      error=ResultsError)

    # -- reading: what the report, export and the judge ask of the tree --------
    def require(self) -> None:
        """Refuse a folder that is not a results tree (for export and report)."""
        records.require_tree(self.root)

    def finished_runs(self, *, cpu: str | None = None, variant: str | None = None,
                      suite: str | None = None, figures: bool = True,
                      ) -> Iterator[records.Run]:
        """Every finished run (complete or partial), validated; see
        :func:`records.finished_runs`."""
        return records.finished_runs(self.root, cpu=cpu, variant=variant, suite=suite,
                                     figures=figures)

    def bisections(self) -> list[Filed]:
        """The newest finished bisection of every cell and pair of ends."""
        return latest_bisections(self.root)

    def bisection_progress(self, range_name: str, key: str) -> Progress:
        """The measurements so far of one bisection range, measured one way."""
        return bisection_progress(self.root, range_name, key)

    def journal_runs(self) -> dict[str, str]:
        """Which bench session each run belongs to, from the journals (run path → id)."""
        return records.journal_runs(self.root)

    def journal_files(self, kind: str) -> list[Path]:
        """The journals of one kind of session (``bench``), in name order."""
        return sorted((self.root / JOURNALS).glob(f"{kind}-*.json"))

    # -- places of the tree's own folders ---------------------------------------
    def report_dir(self) -> Path:
        """Where ``invoke matrix report`` writes by default."""
        return self.root / REPORT_DIR

    def repro_dir(self, spec_id: str | None = None) -> Path:
        """``_reproduce/`` or a reproduction's folder ``_reproduce/<id>``."""
        base = self.root / records.REPRO_DIR
        if spec_id is None:
            return base
        safe_name(spec_id, "report id", error=ResultsError)
        return inside(self.root, base / spec_id, error=ResultsError)

    def lab_dir(self, stamp: str, command: str) -> Path:
        """``_lab/<stamp>-<command>``: one lab run's engine logs and states."""
        return inside(self.root, self.root / LAB_DIR / f"{stamp}-{command}",
                      error=ResultsError)

    def build_record(self, variant: str, digest: str) -> dict[str, Any] | None:
        """The build record of a variant's build, validated, as its JSON object."""
        rec = self.read_build(variant, digest)
        return None if rec is None else rec.to_json()

    def read_build(self, variant: str, digest: str) -> records.BuildRecord | None:
        """The build record of a variant's build, validated; None if there is none."""
        return records.read_build(self.build_dir(variant, digest))

    # -- interleaved comparisons (results/interleaved.py) ----------------------
    def file_pair(self, cpu: str, session: str, pair: str, record: PairRecord,
                  raw: str) -> Path:
        """File one comparison of a session: its raw output first, its record last."""
        return interleaved.file_pair(self.root, cpu, session, pair, record, raw)

    def rewrite_pair(self, cpu: str, session: str, pair: str, record: PairRecord) -> None:
        """Replace a filed comparison's record (its raw output stays)."""
        interleaved.rewrite_record(self.root, cpu, session, pair, record)

    def filed_pairs(self, cpu: str, session: str) -> dict[str, PairRecord]:
        """The finished comparisons of one session, by pair name."""
        return interleaved.filed_pairs(self.root, cpu, session)

    def pair_sessions(self, cpu: str) -> list[str]:
        """The sessions with interleaved comparisons under one CPU profile, by name."""
        base = interleaved.cpu_sessions(self.root, cpu)
        return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []

    def filed_pair_raw(self, cpu: str, session: str, pair: str) -> str:
        """A filed comparison's raw output ("" when there is none)."""
        return interleaved.filed_raw(self.root, cpu, session, pair)

    # -- profiles -------------------------------------------------------------
    def new_profile_dir(self, variant: str, cell: str, under: str | None = None) -> Path:
        """A new numbered folder for one profile of a variant's cell,
        ``_profiles/<variant>/<cell>/NNNN`` (``under``: a folder of that cell's, such as
        ``agree``; ``variant`` "compare": two builds' comparisons), each name checked."""
        base = records.profile_dir(self.root, variant, cell)
        if under is not None:
            safe_name(under, "folder", error=ResultsError)
            base = base / under
        return new_numbered_dir(base)

    def profiles_work(self) -> Path:
        """``_profiles/.work``: the profiling images' build context."""
        return profiles_work(self.root)


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
        tree_clock(self.path.parent)  # before the journal: a kill between is a kill before
        self.save()

    def save(self) -> None:
        if not self._closed:
            write_json(self.path, self.data)

    def close(self, status: str = "finished") -> Path:
        """Close the session: the next identical command starts a new one."""
        tree_clock(self.path.parent)
        self.data["status"] = status
        self.data["ended"] = _now()
        dest = self.path.parent / "closed" / f"{self.id}-{status}.json"
        write_json(dest, self.data)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._closed = True
        return dest


#: The newest wall-clock time (ms) a tree's journals have seen: ``_journal/.clock``.
CLOCK_FILE = ".clock"


def tree_clock(journals: Path, *, new: bool = False) -> int:
    """The tree's clock in ms, moved on to the wall clock when that is later (``new``: a
    session begins, and gets a time after every one before it, even when the wall clock
    went back or stood still since: its id is then unique and in order, and its closed
    journal never replaces another's). The report orders a cell's sessions by it where
    the wall clock went back (report/sessions.py)."""
    path = journals / CLOCK_FILE
    try:
        text = read_bounded(path, cap=64).decode("ascii", "replace").strip()
    except (OSError, UnreadableFile):
        text = ""
    seen = int(text) if text.isdigit() and len(text) < 20 else 0
    at = max(epoch_ms(), seen + 1) if new else max(epoch_ms(), seen)
    if at != seen:
        with contextlib.suppress(OSError):  # a clock not kept orders less, breaks nothing
            write_json(path, at, durable=False)
    return at


#: How long a refused ``lock`` waits for the holder to write its name: a holder writes it
#: just after taking the flock, so asked in between the file is empty (or names the
#: previous holder, whose process is gone).
NAME_TRIES = 20
NAME_PAUSE_S = 0.05


def _holder_named(fh: IO[str], pause: float) -> str | None:
    """Who holds the tree's lock, as the holder wrote it (``pid N (command) since …``);
    "another process" if no live holder has named itself within NAME_TRIES pauses; None
    if the lock came free meanwhile."""
    for attempt in range(NAME_TRIES + 1):
        fh.seek(0)
        text = fh.read().strip()
        pid = text.split()[1] if text.startswith("pid ") and len(text.split()) > 1 else ""
        if pid.isdigit() and Path(f"/proc/{pid}").exists():
            return text
        if attempt == NAME_TRIES:
            break
        time.sleep(pause)
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue
        fcntl.flock(fh, fcntl.LOCK_UN)
        return None
    return "another process"
