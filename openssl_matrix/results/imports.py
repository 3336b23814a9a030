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
import json
import marshal
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
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
from openssl_matrix.results.figurerows import rows_ok
from openssl_matrix.results.tree import ResultsTree

#: The keys of an imported figure's values as its compact line holds them, in the
#: parser's order (compact.py's header; each figure's ``schema`` is the file's).
FIGURE_KEYS = tuple(FIGURE_FIELDS)
#: Runs whose figures are checked at once (:func:`pasted_runs`).
BATCH = 256
_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


@dataclass(frozen=True, slots=True)
class PastedRun:
    """What an import files of one parsed run: its header's fields, warnings and figures,
    the figures checked (as ``FigureRecord.from_json`` checks them) and encoded once, as
    the run's line of a compact file holds them (``figures_json``: rows of values in
    :data:`FIGURE_KEYS` order). Small enough to be spooled (:func:`spool`), so that an
    import parses its paste once, not once to check and count and again to write."""

    header: dict[str, Any]
    warnings: tuple[str, ...]
    figures_json: str
    figures: int = field(compare=False)
    #: what identifies the run's content across pastes (header, warnings and figures): a
    #: paste overlapping an earlier import under the same ``--as`` files no run twice
    digest: str = field(compare=False)

    @classmethod
    def of(cls, run: SpeedRun, rows: list[tuple[Any, ...]] | None = None, *,
           checked: bool = False) -> PastedRun:
        """The run as an import files it (``rows``: its :func:`figure_rows`, when the
        caller has them; ``checked``: they passed ``rows_ok`` already)."""
        header = {k: getattr(run.header, k) for k in run.header.__dataclass_fields__}
        rows = list(figure_rows(run)) if rows is None else rows
        warnings = tuple(run.warnings)
        figures = _encode(rows if checked or rows_ok(FIGURE_KEYS, rows) else
                          [rec._checked_json(dict(zip(FIGURE_KEYS, row, strict=True)))
                           for row in rows])
        digest = hashlib.sha256(marshal.dumps((header, warnings), 4))
        digest.update(figures.encode("utf-8"))
        return cls(header, warnings, figures, len(rows), digest.hexdigest()[:32])

    @property
    def rows(self) -> list[tuple[Any, ...]]:
        """Each figure's values in ``FIGURE_FIELDS`` order (read back from ``figures_json``)."""
        return [tuple(item) if isinstance(item, list) else
                tuple(item[k] for k in FIGURE_KEYS) for item in json.loads(self.figures_json)]

    @property
    def version(self) -> str | None:
        return self.header.get("version")

    @property
    def version_line(self) -> str | None:
        return self.header.get("version_line")


def pasted_runs(runs: Iterable[SpeedRun]) -> Iterator[PastedRun]:
    """Each run as :meth:`PastedRun.of` gives it, the figures of :data:`BATCH` runs at a
    time checked together (one check of each column for them all, not one per run: an
    import checks 440,000 figures); a batch that fails is checked run by run, and a run
    that fails goes through ``write_figures``' checks, which name what is wrong."""
    held: list[SpeedRun] = []
    for run in runs:
        held.append(run)
        if len(held) == BATCH:
            yield from _batch(held)
            held = []
    yield from _batch(held)


def _batch(runs: list[SpeedRun]) -> Iterator[PastedRun]:
    rows = [list(figure_rows(run)) for run in runs]
    checked = rows_ok(FIGURE_KEYS, [row for each in rows for row in each])
    for run, each in zip(runs, rows, strict=True):
        yield PastedRun.of(run, each, checked=checked)


def spool(run: PastedRun, to: IO[bytes]) -> None:
    """Append ``run`` to a spool file (``marshal``: every value is None, a bool, a number
    or text; the figures one text), its length first: :func:`unspool` reads it in one call."""
    data = marshal.dumps((run.header, run.warnings, run.figures_json, run.figures,
                          run.digest), 4)
    to.write(len(data).to_bytes(8, "little") + data)


def unspool(spooled: IO[bytes], count: int) -> Iterator[PastedRun]:
    """The ``count`` runs :func:`spool` wrote to ``spooled``, from its start."""
    spooled.seek(0)
    for _ in range(count):
        size = int.from_bytes(spooled.read(8), "little")
        yield PastedRun(*marshal.loads(spooled.read(size)))


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
    writers: dict[str, CompactWriter] = {}
    figures: dict[str, int] = {}
    shared: dict[str, Any] | None = None  # what every run's meta holds
    checked = False
    try:
        for i, run in enumerate(runs(), 1):
            if i in done or run.digest in seen:
                continue
            seen.add(run.digest)
            version = run.version or "unknown"
            writer = writers.get(version)
            if writer is None:
                suite = tree.suite_dir(cpu, version, SUITE)
                if paste_at is None:
                    paste_at = suite / f"report-{common['source_sha256'][:16]}.txt"
                    atomic_write(paste_at, text, durable=False, mode=mode)
                if shared is None:
                    shared = {**common, "raw_report": str(paste_at.relative_to(tree.root)),
                              "status": "complete", "kind": "reference", "schema": rec.SCHEMA}
                writer = writers[version] = CompactWriter(suite, FIGURE_KEYS, shared, mode=mode)
            # with ``shared``, what RunMeta(...).to_json() gave, key for key; checked as
            # meta.json is read for the first run, and for each other in what can differ
            assert shared is not None
            meta = {"run_in_report": i, "run_digest": run.digest, "header": run.header,
                    "warnings": list(run.warnings), "variant": {"version": run.version}}
            if not checked or not all(type(w) is str for w in run.warnings) or \
                    type(run.version) not in (str, type(None)):
                rec._as(rec.RunMeta, {**shared, **meta}, rec.META)
                checked = True
            writer.add(meta, run.figures_json)
            figures[version] = figures.get(version, 0) + run.figures
        return [(path, first, last, figures[version]) for version, writer in writers.items()
                for path, first, last in writer.commit()]
    except BaseException:
        for writer in writers.values():  # what is not renamed into place is not counted
            writer.discard()
        raise


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
