"""The files of a results tree that code above ``results/`` writes or reads beside its
records: a run's raw output, an internal error's traceback, a bisection's record and
summary, a reproduction's verdicts, text and spec copy, a profile comparison's and a
profile agreement's files, a build's Dockerfiles. Their names live here (and in
records.py, interleaved.py, bisections.py) only; ``ResultsTree``'s methods call these
functions, so every caller goes through the one door (issue 34).

Every write is an atomic write of ``core/files.py`` (temp file, fsync, rename), as
before: the files on disk are byte for byte what the callers wrote themselves."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openssl_matrix.core.files import atomic_write, write_json
from openssl_matrix.results.bisections import RECORD as BISECTION_RECORD
from openssl_matrix.results.bisections import SUMMARY as BISECTION_SUMMARY
from openssl_matrix.results.profiles import (
    DIFF_JSON,
    DIFF_SVG,
    DIFF_TEXT,
    PROFILE_FOLDED,
    PROFILE_META,
    PROFILE_SCRIPT,
    PROFILE_SVG,
    is_regular,
)
from openssl_matrix.results.records import FIGURES, META, read_json

#: A run's raw output folder (``<run>/raw/``): each invocation's stdout and stderr, the
#: engine checks, the capability vectors, an import's pasted text.
RAW = "raw"
#: An imported run's pasted text, in ``raw/`` of its import's first run folder.
PASTED = "report.txt"
#: The traceback of an internal error, in the run or build folder it stopped.
ERROR_LOG = "error.log"
#: The build logs of the harness images, ``<kind>-<digest>.log``: the library harness's
#: (``_builds/<variant>/``) and the interleaving harness's (``_builds/``).
HARNESS = "harness"
PAIRBENCH = "pairbench"
#: A build's Dockerfile as rendered, and as built through ccache, beside build.json.
DOCKERFILE = "Dockerfile"
DOCKERFILE_CCACHE = "Dockerfile.ccache"
#: A reproduction's files (``_reproduce/<id>/<NNNN>/``).
VERDICTS = "verdicts.json"
SIDE_BY_SIDE = "side-by-side.txt"
SPEC_COPY = "spec.yaml"
REPRODUCTION_FILES = (SIDE_BY_SIDE, VERDICTS, SPEC_COPY)
#: The matrix a reproduction builds and runs, in ``_reproduce/<id>/``, and the folder of
#: its builds' contexts (``_reproduce/.work``).
REPRO_MATRIX = "matrix.yaml"
REPRO_WORK = ".work"
#: An agreement of two profiles of one build (a profile's and a comparison's files are
#: named in profiles.py, their reader).
AGREE_TEXT = "agree.txt"
AGREE_JSON = "agree.json"


def write_raw(run_dir: Path, name: str, text: str) -> Path:
    """``<run>/raw/<name>``: one raw output of a run, kept beside its figures."""
    path = run_dir / RAW / name
    atomic_write(path, text)
    return path


def has_raw(run_dir: Path, name: str) -> bool:
    """Whether ``<run>/raw/<name>`` is a file."""
    return (run_dir / RAW / name).is_file()


def write_error_log(folder: Path, text: str, prefix: str = "") -> Path:
    """``<folder>/error.log``: the traceback of an internal error in a run or a build
    (``<prefix>-error.log`` with a prefix: a session's, beside its journal)."""
    path = folder / (f"{prefix}-{ERROR_LOG}" if prefix else ERROR_LOG)
    atomic_write(path, text)
    return path


def build_log(build_dir: Path, engine_tag: str | None) -> Path:
    """A build's log: ``build.log``, or ``build-<engine>.log`` built on a lab's engine."""
    return build_dir / (f"build-{engine_tag}.log" if engine_tag else "build.log")


def write_dockerfiles(build_dir: Path, dockerfile: str, built: str | None) -> None:
    """A build's ``Dockerfile`` and, built through ccache, ``Dockerfile.ccache``."""
    atomic_write(build_dir / DOCKERFILE, dockerfile)
    if built is not None:
        atomic_write(build_dir / DOCKERFILE_CCACHE, built)


def run_files(run_dir: Path) -> Iterator[tuple[str, Path]]:
    """A run's meta, figures and raw outputs that are regular files, each as its name
    relative to the run (``raw/x.stdout``) and its path; raw outputs in name order."""
    for name in (META, FIGURES):
        if is_regular(run_dir / name):
            yield name, run_dir / name
    raw = run_dir / RAW
    if raw.is_dir():
        for f in sorted(raw.iterdir()):
            if is_regular(f):
                yield f"{RAW}/{f.name}", f


def published_raw(root: Path, run_dir: Path, held: str) -> str:
    """Where an imported run's pasted text is, relative to the run: its own
    ``raw/report.txt``, else the one copy its import stored (``held``, the meta's
    ``raw_report``: in the import's first run folder; the report lays runs out as the
    tree does)."""
    if has_raw(run_dir, PASTED) or not held:
        return f"{RAW}/{PASTED}"
    return os.path.relpath(root / held, run_dir)


# -- bisections -------------------------------------------------------------------------


def file_bisection(range_dir: Path, record: Mapping[str, Any], summary: list[str]) -> Path:
    """``<range>/<NNNN>/`` (the next free number) with ``bisection.json`` and, as printed,
    ``summary.txt``."""
    taken = [int(p.name) for p in range_dir.glob("[0-9][0-9][0-9][0-9]") if p.is_dir()] \
        if range_dir.is_dir() else []
    out = range_dir / f"{max(taken, default=0) + 1:04d}"
    atomic_write(out / BISECTION_RECORD, json.dumps(dict(record), indent=2) + "\n")
    atomic_write(out / BISECTION_SUMMARY, "\n".join(summary) + "\n")
    return out


# -- reproductions ----------------------------------------------------------------------


@dataclass(frozen=True)
class FiledReproduction:
    """The newest reproduction of one spec, read back: its folder and its verdicts (the
    very JSON object ``verdicts.json`` holds)."""

    spec_id: str
    folder: Path
    verdicts: Mapping[str, Any]

    def files(self) -> list[tuple[str, Path]]:
        """Its side-by-side text, verdicts and spec copy that are regular files."""
        return [(n, self.folder / n) for n in REPRODUCTION_FILES
                if is_regular(self.folder / n)]


def file_reproduction(out: Path, verdicts: Mapping[str, Any], text: str,
                      spec: Path) -> str | None:
    """Write a reproduction's ``verdicts.json``, ``side-by-side.txt`` and a copy of its
    spec into its new folder ``out``; a warning if the spec could not be copied."""
    write_json(out / VERDICTS, verdicts)
    atomic_write(out / SIDE_BY_SIDE, text)
    try:
        atomic_write(out / SPEC_COPY, spec.read_text(encoding="utf-8"))
    except OSError as exc:
        return f"could not copy the spec: {exc}"
    return None


def write_reproduction_matrix(spec_dir: Path, text: str) -> Path:
    """``_reproduce/<id>/matrix.yaml``: the matrix a reproduction generated."""
    path = spec_dir / REPRO_MATRIX
    atomic_write(path, text)
    return path


def latest_reproductions(base: Path) -> list[FiledReproduction]:
    """The newest reproduction of each spec under ``_reproduce/`` with a verdicts object."""
    out: list[FiledReproduction] = []
    if not base.is_dir():
        return out
    for spec_dir in sorted(p for p in base.iterdir() if p.is_dir() and
                           not p.name.startswith(".")):
        runs = sorted((p for p in spec_dir.iterdir() if p.name.isdigit() and
                       (p / VERDICTS).is_file()), key=lambda p: int(p.name))
        if not runs:
            continue
        data = read_json(runs[-1] / VERDICTS)
        if isinstance(data, dict):
            out.append(FiledReproduction(spec_dir.name, runs[-1], data))
    return out


# -- profile comparisons and agreements ---------------------------------------------------


def file_profile(folder: Path, script: str, folded: str, svg: str,
                 meta: Mapping[str, Any]) -> None:
    """One profile's four files; ``meta.json`` last (it marks the profile finished)."""
    atomic_write(folder / PROFILE_SCRIPT, script)
    atomic_write(folder / PROFILE_FOLDED, folded)
    atomic_write(folder / PROFILE_SVG, svg)
    write_json(folder / PROFILE_META, meta)


def file_difference(folder: Path, text: str, svg: str, record: Mapping[str, Any]) -> None:
    """Two builds' profiles compared: ``diff.txt``, ``diff.svg``, then ``diff.json``."""
    atomic_write(folder / DIFF_TEXT, text)
    atomic_write(folder / DIFF_SVG, svg)
    write_json(folder / DIFF_JSON, record)


def file_agreement(folder: Path, text: str, record: Mapping[str, Any]) -> None:
    """Two profiles of one cell taken apart: ``agree.txt``, then ``agree.json``."""
    atomic_write(folder / AGREE_TEXT, text)
    write_json(folder / AGREE_JSON, record)
