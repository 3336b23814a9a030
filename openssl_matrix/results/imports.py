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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import IO, Any

from openssl_matrix.core import log
from openssl_matrix.core.clock import now
from openssl_matrix.core.errors import ResultsError
from openssl_matrix.core.files import atomic_write, new_file_mode, sync_tree
from openssl_matrix.core.names import clip
from openssl_matrix.parse import FIGURE_FIELDS
from openssl_matrix.parse.encoding import paste_text
from openssl_matrix.parse.figures import SpeedHeader, SpeedRun
from openssl_matrix.results import records as rec
from openssl_matrix.results.compact import SUITE, CompactWriter
from openssl_matrix.results.figurerows import figure_key, figure_rows, types_ok
from openssl_matrix.results.tree import ResultsTree

#: The keys of an imported figure's values as its compact line holds them, in the
#: parser's order (compact.py's header; each figure's ``schema`` is the file's).
FIGURE_KEYS = tuple(FIGURE_FIELDS)
#: Runs whose figures are checked at once (:func:`pasted_runs`).
BATCH = 256
#: Distinct figure tuples whose JSON is kept (:func:`pasted_runs`: a paste's copies of a
#: run hold the parser's very figures, whose values are read, checked and encoded once).
CACHED = 256
#: (no ``check_circular``: what is encoded is the parser's scalars, in lists and dicts
#: made here; the text is the same)
_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False,
                          check_circular=False).encode
_HEADER_KEYS = tuple(SpeedHeader.__dataclass_fields__)
_HEADER_VALUES = attrgetter(*_HEADER_KEYS)
#: A run's figures' JSON as its line holds them: (the run's ``figures``, kept so that
#: the ids of what they are kept as, the key, are not reused), the text as bytes, the
#: number of figures.
_Held = tuple[Sequence[Any] | None, bytes, int]
#: A run as spooled: (run in report, version, digest, figures, its compact line, whether
#: its meta's types need the full check when filed).
Spooled = tuple[int, str | None, str, int, bytes, bool]


@dataclass(frozen=True, slots=True)
class PastedRun:
    """What an import files of one parsed run: its header's fields, warnings and figures,
    the figures checked (as ``FigureRecord.from_json`` checks them) and encoded once, as
    the run's line of a compact file holds them (``figures_json``: rows of values in
    :data:`FIGURE_KEYS` order, UTF-8). Spooled as its compact line (:func:`spool`), so
    that an import parses its paste once and encodes each run once."""

    header: dict[str, Any]
    warnings: tuple[str, ...]
    figures_json: bytes
    figures: int = field(compare=False)
    #: what identifies the run's content across pastes (header, warnings and figures): a
    #: paste overlapping an earlier import under the same ``--as`` files no run twice
    digest: str = field(compare=False)

    @classmethod
    def of(cls, run: SpeedRun, held: _Held | None = None) -> PastedRun:
        """The run as an import files it (``held``: its figures' JSON and count, when
        :func:`pasted_runs` has them)."""
        header = dict(zip(_HEADER_KEYS, _HEADER_VALUES(run.header), strict=True))
        if held is None:
            rows = list(figure_rows(run))
            held = (None, _figures_json(rows, types_ok(FIGURE_KEYS, rows)), len(rows))
        warnings = tuple(run.warnings)
        digest = hashlib.sha256(marshal.dumps((header, warnings), 4))
        digest.update(held[1])
        return cls(header, warnings, held[1], held[2], digest.hexdigest()[:32])

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


def _figures_json(rows: list[tuple[Any, ...]], typed: bool) -> bytes:
    """A run's figures as its compact line holds them: rows of values where their types
    passed (``typed``: :func:`types_ok`) and every float is finite (the encoder refuses
    any other: ``allow_nan=False``), else whole objects through ``write_figures``'
    checks, which name what is wrong."""
    if typed:
        try:
            return _encode(rows).encode("utf-8")
        except ValueError:  # a NaN or an infinity
            pass
    return _encode([rec._checked_json(dict(zip(FIGURE_KEYS, row, strict=True)))
                    for row in rows]).encode("utf-8")


def pasted_runs(runs: Iterable[SpeedRun], *, batch: int = BATCH,
                cached: int = CACHED) -> Iterator[PastedRun]:
    """Each run as :meth:`PastedRun.of` gives it; the figures of ``batch`` runs at a
    time checked together (one check of each column for them all, not one per run: an
    import checks 440,000 figures), and a tuple of figures the parser gave an earlier run
    (the same objects: a paste's copies of one run) read, checked and encoded once (while
    at least one run in eight shares its figures with an earlier one; ``cached``: the most
    tuples held)."""
    held: list[SpeedRun] = []
    cache: dict[tuple[int, ...], _Held] | None = {}
    counts = [0, 0]  # runs, runs whose figures were held
    for run in runs:
        held.append(run)
        if len(held) == batch:
            yield from _batch(held, cache, counts, cached)
            held = []
            if cache is not None and counts[0] >= 4 * batch and counts[1] * 8 < counts[0]:
                cache = None  # few runs share their figures: not worth holding them
    yield from _batch(held, cache, counts, cached)


def _batch(runs: list[SpeedRun], cache: dict[tuple[int, ...], _Held] | None,
           counts: list[int], cached: int) -> Iterator[PastedRun]:
    # a run's figures by the ids of what they are kept as, while the run's ``figures``
    # is held in the cache (figure_key)
    keys = [None if cache is None else figure_key(run) for run in runs]
    found = [None if key is None or cache is None else cache.get(key) for key in keys]
    counts[0] += len(runs)
    counts[1] += len(runs) - found.count(None)
    missing: dict[tuple[int, ...] | int, SpeedRun] = {}  # (a run not keyed: by its place)
    for at, (key, run, got) in enumerate(zip(keys, runs, found, strict=True)):
        if got is None:
            missing.setdefault(at if key is None else key, run)
    computed: dict[tuple[int, ...] | int, _Held] = {}
    if missing:
        rows = [list(figure_rows(run)) for run in missing.values()]
        typed = types_ok(FIGURE_KEYS, [row for each in rows for row in each])
        if cache is not None and len(cache) + len(missing) > cached:
            cache.clear()
        for (slot, run), each in zip(missing.items(), rows, strict=True):
            computed[slot] = (run.figures, _figures_json(
                each, typed or types_ok(FIGURE_KEYS, each)), len(each))
            if cache is not None and isinstance(slot, tuple):
                cache[slot] = computed[slot]
    for at, (run, key, got) in enumerate(zip(runs, keys, found, strict=True)):
        yield PastedRun.of(run, got if got is not None else
                           computed[at if key is None else key])


def spool(run: PastedRun, number: int, to: IO[bytes]) -> None:
    """Append ``run``, the ``number``-th of its paste, to a spool file as its compact file
    will hold it (its line, :func:`line`) with what filing it needs, its length first
    (``marshal``): :func:`unspool` reads it in one call. A run whose meta's types are
    odd is checked here as its meta.json would be (a named error before anything is
    written), and again when filed."""
    meta = {"run_in_report": number, "run_digest": run.digest, "header": run.header,
            "warnings": list(run.warnings), "variant": {"version": run.version}}
    plain = all(type(w) is str for w in run.warnings) and \
        type(run.version) in (str, type(None))
    if not plain:
        rec._as(rec.RunMeta, {**_PROVISIONAL, **meta}, rec.META)
    data = marshal.dumps((number, run.version, run.digest, run.figures,
                          b"[%s,%s]" % (_encode(meta).encode("utf-8"), run.figures_json),
                          not plain), 4)
    to.write(len(data).to_bytes(8, "little") + data)


#: What every run's meta holds beside its own, as its types are (:func:`spool`'s check
#: of an odd run before the import's own values are known; :func:`_file_runs` checks
#: the import's first run with them).
_PROVISIONAL = {"source_file": "", "source_sha256": "", "imported": "", "runs_in_report": 1,
                "raw_report": "", "status": "complete", "kind": "reference",
                "schema": rec.SCHEMA}


def unspool(spooled: IO[bytes], count: int) -> Iterator[Spooled]:
    """The ``count`` runs :func:`spool` wrote to ``spooled``, from its start."""
    spooled.seek(0)
    read = spooled.read
    for _ in range(count):
        yield marshal.loads(read(int.from_bytes(read(8), "little")))


def import_report(tree: ResultsTree, raw: bytes, runs: Callable[[], Iterable[Spooled]],
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


def _file_runs(tree: ResultsTree, cpu: str, runs: Callable[[], Iterable[Spooled]],
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
        for i, version_of, digest, count, line, odd in runs():
            if i in done or digest in seen:
                continue
            seen.add(digest)
            version = version_of or "unknown"
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
            # (spool checked those)
            if not checked or odd:
                assert shared is not None
                rec._as(rec.RunMeta, {**shared, **json.loads(line)[0]}, rec.META)
                checked = True
            writer.add_line(line)
            figures[version] = figures.get(version, 0) + count
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
