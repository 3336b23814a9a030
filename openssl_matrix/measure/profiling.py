"""One variant's cell profiled and filed, and two such profiles compared: what
``invoke matrix profile`` does per variant (``cli/commands/profile.py``) and what a
reproduction does for a claim that asks where its ratio comes from
(``repro/profileclaim.py``): one code path for both.

The variant's image is its newest build on the engine (as the bench picks it); a library
cell runs in the variant's harness image, the others in the variant's image; the profile
image is built FROM that (``perfrun.ensure_profile_image``). The image build and the run
each take the engine's host lock, as build and bench do.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from openssl_matrix.core import log
from openssl_matrix.core.errors import BuildError
from openssl_matrix.engine.backend import Backend
from openssl_matrix.engine.engineinfo import EngineInfo
from openssl_matrix.engine.hostlock import HostLock, engine_key
from openssl_matrix.images.harness import ensure_harness
from openssl_matrix.matrix.kinds import kind_of
from openssl_matrix.matrix.kinds.base import RUNNER_HARNESS
from openssl_matrix.matrix.model import Variant
from openssl_matrix.measure import profileoverhead
from openssl_matrix.measure.perfrun import Cell, ProfileRun, ensure_profile_image
from openssl_matrix.measure.profilecell import run_cell
from openssl_matrix.measure.profilestore import (
    Difference,
    ProfileMeta,
    difference,
    file_difference,
    file_profile,
    meta_of,
)
from openssl_matrix.results.tree import ResultsTree


@dataclass(frozen=True)
class Profiled:
    """One profile filed: the run, its meta.json record and its folder."""

    run: ProfileRun
    meta: ProfileMeta
    folder: Path


@dataclass(frozen=True)
class Compared:
    """Two profiles of one cell compared and filed: the difference, its table, its folder."""

    diff: Difference
    table: str
    folder: Path

    @property
    def share(self) -> float | None:
        return None if math.isnan(self.diff.share) else self.diff.share


def built_image(tree: ResultsTree, backend: Backend, vid: str) -> str:
    """The variant's newest built image that is on this engine (as the bench picks it)."""
    latest = tree.read_latest(vid)
    tags = [latest.tag] if latest is not None else []
    tags += [r.tag for r in sorted(tree.build_records(vid),
                                   key=lambda r: str(r.ended or ""), reverse=True) if r.tag]
    for tag in tags:
        if backend.image_id(tag):
            return tag
    raise BuildError(f"{vid} is not built on this engine: the results tree {tree.root} has "
                     "no build of it whose image is there",
                     hint=f"run `invoke matrix build --only {vid} --results {tree.root}` first")


def base_image(tree: ResultsTree, backend: Backend, v: Variant, cell: Cell, tag: str) -> str:
    """The image the bench runs the cell in: a library cell's harness sibling of the
    variant's image (built from the toolchain image if missing, as the bench does), else
    the variant's image."""
    if kind_of(cell.kind).runner != RUNNER_HARNESS:
        return tag
    return ensure_harness(backend, v, tag, tree.builds_dir(v.id), tree.profiles_work()).tag


def profile_variant(tree: ResultsTree, backend: Backend, v: Variant, cell: Cell,
                    engine_info: EngineInfo, *, overhead: bool = False) -> Profiled:
    """Profile one variant's cell and file it; ``overhead``: the cell also runs unprofiled
    right before and after, and meta.json's ``overhead`` holds the three rates
    (``measure/profileoverhead.py``)."""
    tag = built_image(tree, backend, v.id)
    lock = HostLock(engine_key(engine_info)) if engine_info.id else None
    building = lock.building(f"profile image of {v.id}", say=log.info) if lock else None
    with building or nullcontext():
        base = base_image(tree, backend, v, cell, tag)
        ptag, pid = ensure_profile_image(backend, base, tree.profiles_work())
    version = v.version.version
    what = f"{cell.seconds}s under perf" + (", and unprofiled before and after"
                                            if overhead else "")
    measuring = lock.measuring(f"profile {v.id} {cell.name}", say=log.info) if lock else None
    with measuring or nullcontext(), log.step(f"profile {v.id} {cell.name} ({what})"):
        if overhead:
            run, over = profileoverhead.measure(
                lambda profiled: run_cell(backend, ptag, version, cell, profiled=profiled))
        else:
            run, over = run_cell(backend, ptag, version, cell), None
    meta = meta_of(run, variant=v.id, version=version, image=base,
                   image_id=backend.image_id(base), profile_image=ptag, profile_image_id=pid,
                   cell=cell, engine=engine_info)
    meta["overhead"] = over.as_dict() if over is not None else None
    return Profiled(run, meta, file_profile(tree, run, meta))


def compare_profiled(tree: ResultsTree, cell: Cell, a_name: str, a: Profiled, b_name: str,
                     b: Profiled) -> Compared:
    """Two profiles of one cell, function by function (B − A), filed under
    ``_profiles/compare/``."""
    diff = difference(a_name, a.run, b_name, b.run)
    folder, table = file_difference(tree, cell, diff, a.run, b.run, (a.folder, b.folder))
    return Compared(diff, table, folder)


def summary(meta: ProfileMeta, folder: Path) -> str:
    """A profile's lines as ``invoke matrix profile`` prints them."""
    lines = [f"{meta['variant']} {meta['cell']['name']}: {meta['status']}, "
             f"{meta['samples']} samples, {meta['operations']} ops in "
             f"{meta['speed_seconds']:.2f}s, {meta['ns_per_op']:.1f} ns per "
             f"{meta['unit']} → {folder}"]
    lines += [f"  {row['ns_per_op']:10.2f} ns/op  {row['name']}"
              for row in meta["top_functions"][:10]]
    lines += profileoverhead.overhead_text(meta.get("overhead"))
    return "\n".join(lines)
