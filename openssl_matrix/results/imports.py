"""``invoke matrix import``: a published report's runs stored in the results tree.

An import is identified by the source file's sha256 and the name it is imported as
(``ref-NAME``): importing the same file again says where it is and adds nothing; an
import that was stopped (Ctrl-C, a kill, a full disk) is completed by the next one, never
stored twice (the tree is the truth: a run counts once its meta says ``complete``). An
import files its runs compactly (results/compact.py): one file per version folder,
``ref-NAME/<version>/import/runs-<first>-<last>.jsonl``, written under a temporary name
and renamed whole, so a kill leaves none of that file's runs counted. The pasted text is
stored once per import (``report-<sha256>.txt`` beside the first of those files; each
run names it in ``raw_report``). Trees imported before hold a folder per run
(``<run>/meta.json``, ``figures.json``, the first one's ``raw/report.txt``); both are read
alike, and an earlier import's runs in folders count as done for the next."""

from __future__ import annotations

import hashlib
import marshal
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from openssl_matrix.core import log
from openssl_matrix.core.clock import now
from openssl_matrix.core.errors import ResultsError
from openssl_matrix.core.files import atomic_write, new_file_mode, sync_tree
from openssl_matrix.core.names import clip
from openssl_matrix.parse import FIGURE_FIELDS, figure_rows
from openssl_matrix.parse.encoding import paste_text
from openssl_matrix.parse.figures import SpeedRun
from openssl_matrix.results import records as rec
from openssl_matrix.results.compact import SUITE, CompactWriter
from openssl_matrix.results.figurerows import checked_rows
from openssl_matrix.results.tree import ResultsTree


@dataclass(frozen=True, slots=True)
class PastedRun:
    """What an import files of one parsed run: its header's fields, warnings and figures
    (each figure's values in ``FIGURE_FIELDS`` order). Small enough to be spooled
    (:func:`spool`), so that an import parses its paste once, not once to check and count
    and again to write."""

    header: dict[str, Any]
    warnings: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    digest: str = ""  # of what is filed of the run (:func:`run_digest`), once it is known

    @classmethod
    def of(cls, run: SpeedRun) -> PastedRun:
        header = {k: getattr(run.header, k) for k in run.header.__dataclass_fields__}
        return cls(header, tuple(run.warnings), list(figure_rows(run)))

    @property
    def version(self) -> str | None:
        return self.header.get("version")

    @property
    def version_line(self) -> str | None:
        return self.header.get("version_line")


def run_digest(run: PastedRun) -> str:
    """What identifies a run's content across pastes (its header, warnings and figures):
    a paste overlapping an earlier import under the same ``--as`` files no run twice."""
    return run.digest or _digest(marshal.dumps((run.header, run.warnings, run.rows), 4))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


def spool(run: PastedRun, to: IO[bytes]) -> None:
    """Append ``run`` to a spool file (``marshal``: every value is None, a bool, a number
    or text), its length first: :func:`unspool` reads it in one call, not one per value."""
    data = marshal.dumps((run.header, run.warnings, run.rows), 4)
    to.write(len(data).to_bytes(8, "little") + data)


def unspool(spooled: IO[bytes], count: int) -> Iterator[PastedRun]:
    """The ``count`` runs :func:`spool` wrote to ``spooled``, from its start."""
    spooled.seek(0)
    for _ in range(count):
        size = int.from_bytes(spooled.read(8), "little")
        data = spooled.read(size)
        header, warnings, rows = marshal.loads(data)
        yield PastedRun(header, warnings, rows, _digest(data))


def import_report(tree: ResultsTree, raw: bytes, runs: Callable[[], Iterable[PastedRun]],
                  count: int, *, as_: str, source: Path, wait: bool = False,
                  text: str | None = None) -> None:
    """Store the ``count`` runs ``runs()`` gives (parsed from ``raw``, the bytes of
    ``source``, one at a time: a paste of 20,000 runs is not held as runs) under
    ``ref-AS``; ``wait``: queue behind another command holding the tree instead of
    failing. ``text``: ``raw`` decoded (``paste_text``), when the caller has it."""
    target = str(source)
    text = paste_text(raw, target) if text is None else text
    sha256 = hashlib.sha256(raw).hexdigest()
    _import_target(tree.root)
    cpu = f"ref-{as_}"
    tree.lock(wait=wait)
    try:
        # a run folder a killed import left half-written is marked (never counted)
        tree.recover(cpu=cpu, reason="the import writing it was stopped before it finished; "
                     "the next import of the same file stored the run again")
        done, paste_at, seen = _imported_before(tree, cpu, sha256)
        if all(i in done for i in range(1, count + 1)):
            where = sorted({str(p.parent.parent.parent) for p in done.values()})
            print(f"{target} is already imported (sha256 {sha256[:16]}…, --as {as_}): "
                  f"{count} run(s) in {', '.join(where)}; nothing added")
            return
        if done:
            log.info(f"completing an import of {target} that was stopped: {len(done)} of "
                     f"{count} run(s) were stored, storing the rest")
        filed = _file_runs(tree, cpu, runs, (done, seen), paste_at, text, {
            "source_file": str(source.resolve()), "source_sha256": sha256,
            "imported": now("seconds"), "runs_in_report": count})
        sync_tree(tree.root)
        for path, first, last, figures in filed:
            print(f"{path}: runs {first:04d}-{last:04d}, {figures} figure(s)")
        if not filed:
            print(f"{target}: each of its {count} run(s) is already imported under "
                  f"{tree.root / cpu} (an earlier paste held the same runs); nothing added")
    finally:
        tree.unlock()


def _file_runs(tree: ResultsTree, cpu: str, runs: Callable[[], Iterable[PastedRun]],
               before: tuple[dict[int, Path], set[str]], paste_at: Path | None, text: str,
               common: dict[str, Any]) -> list[tuple[Path, int, int, int]]:
    """The runs not filed before (``before``: this file's runs done, by run in report,
    and the digests of every run imported under this CPU) filed in one compact file per
    version folder (compact.py), each renamed into place once whole; the paste stored
    first, once per import, unless ``paste_at`` holds it. Returns each file with its
    first and last run number and its figures."""
    done, seen = before
    mode = new_file_mode()  # the umask read once, not for each run
    keys = sorted([*FIGURE_FIELDS, "schema"])
    writers: dict[str, CompactWriter] = {}
    figures: dict[str, int] = {}
    try:
        for i, run in enumerate(runs(), 1):
            digest = run_digest(run)
            if i in done or digest in seen:
                continue
            seen.add(digest)
            version = run.version or "unknown"
            writer = writers.get(version)
            if writer is None:
                writer = writers[version] = CompactWriter(
                    tree.suite_dir(cpu, version, SUITE), keys, mode=mode)
            if paste_at is None:
                paste_at = writer.suite_dir / f"report-{common['source_sha256'][:16]}.txt"
                atomic_write(paste_at, text, durable=False, mode=mode)
            meta = rec._as(rec.RunMeta, rec.RunMeta(
                status="complete", kind="reference", warnings=list(run.warnings),
                variant={"version": run.version},
                extra={**common, "run_in_report": i, "run_digest": digest,
                       "raw_report": str(paste_at.relative_to(tree.root)),
                       "header": dict(run.header)}), rec.META).to_json()
            writer.add(meta, _figures(run.rows))
            figures[version] = figures.get(version, 0) + len(run.rows)
        return [(path, first, last, figures[version]) for version, writer in writers.items()
                for path, first, last in writer.commit()]
    except BaseException:
        for writer in writers.values():  # what is not renamed into place is not counted
            writer.discard()
        raise


def _figures(rows: list[tuple[Any, ...]]) -> list[Any]:
    """A run's figures as its compact line holds them: rows of values in the file's key
    order, each value checked as ``FigureRecord.from_json`` checks it; a run the fast
    check declines as checked objects (``write_figures``' checks, naming what is wrong)."""
    checked = checked_rows(FIGURE_FIELDS, rows)
    if checked is not None:
        return checked[1]
    return [rec._checked_json(dict(zip(FIGURE_FIELDS, row, strict=True))) for row in rows]


def _import_target(root: Path) -> None:
    """``import --results``: a results tree, a new name or an empty folder; never a file, a
    dangling link, or someone's non-empty folder (ResultsError, as export/report say)."""
    shown = clip(str(root), 200)
    if root.is_symlink() and not root.exists():
        raise ResultsError(f"--results {shown} is a symbolic link to nothing (dangling)",
                           hint="give the results tree itself, or a new folder")
    if root.exists() and not root.is_dir():
        raise ResultsError(f"--results {shown} exists and is not a folder",
                           hint="give the results tree (`invoke matrix bench` writes "
                           "results/), or a new folder")
    if root.is_dir():
        rec.require_tree(root)


def _imported_before(tree: ResultsTree, cpu: str, sha256: str,
                     ) -> tuple[dict[int, Path], Path | None, set[str]]:
    """The finished runs of earlier imports of this file under ``cpu`` (run in report ->
    folder), where its pasted text is stored (None: not yet), and the digest of every
    run imported under ``cpu`` from any file (``run_digest``; runs imported before it
    was recorded have none)."""
    done: dict[int, Path] = {}
    paste_at: Path | None = None
    seen: set[str] = set()
    for *_, path in rec.run_dirs(tree.root, cpu=cpu):
        meta = rec.read_meta(path)
        if meta is None or meta.status != "complete":
            continue
        if isinstance(meta.extra.get("run_digest"), str):
            seen.add(meta.extra["run_digest"])
        if meta.extra.get("source_sha256") != sha256:
            continue
        i = meta.extra.get("run_in_report")
        if isinstance(i, int) and not isinstance(i, bool):
            done.setdefault(i, path)
        held = tree.root / str(meta.extra.get("raw_report") or "")
        if paste_at is None and held != tree.root and held.is_file() and \
                held.resolve().is_relative_to(tree.root.resolve()):
            paste_at = held
    return done, paste_at, seen
