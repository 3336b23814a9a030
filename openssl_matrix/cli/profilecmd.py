"""``invoke matrix profile --only VARIANT --algorithm ALG --bytes N``: where a cell's time goes.

Runs one ``openssl speed`` cell under ``perf`` in the variant's profile image
(``measure/perfrun.py``), files the profile under ``<results>/_profiles/<variant>/<cell>/``
(``measure/profilestore.py``) and prints its top functions per operation; ``--compare A,B``
profiles both builds and prints (and files) the function-by-function difference with the
share of the measured gap it explains. The engine comes in as a seam from
``commands.handlers`` (this module does not import commands.py: imports go one way).
"""

from __future__ import annotations

import json as _json
import math
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from openssl_matrix.core import log
from openssl_matrix.core.errors import BuildError, ConfigError, UsageError
from openssl_matrix.engine.backend import Backend
from openssl_matrix.engine.hostlock import HostLock, engine_key
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.model import Matrix, Variant
from openssl_matrix.measure.perfrun import (
    Cell,
    ProfileRun,
    SpeedCell,
    ensure_profile_image,
    run_speed,
)
from openssl_matrix.measure.profilestore import (
    difference,
    file_difference,
    file_profile,
    meta_of,
)
from openssl_matrix.results import records
from openssl_matrix.results.records import PROFILES_DIR

DEFAULT_SECONDS = 3


def _variant(m: Matrix, vid: str) -> Variant:
    try:
        found = [v for v in m.select(vid, every=True) if v.id == vid]
    except ConfigError:
        found = []
    if not found:
        raise UsageError(f"the matrix {m.path} declares no variant {vid}",
                         hint="`invoke matrix list --all` lists them; give one id, no pattern")
    return found[0]


def _image(root: Path, backend: Backend, vid: str) -> str:
    """The variant's newest built image that is on this engine (as the bench picks it)."""
    latest = records.read_latest(root, vid)
    tags = [latest.tag] if latest is not None else []
    tags += [r.tag for r in sorted(records.build_records(root, vid),
                                   key=lambda r: str(r.ended or ""), reverse=True) if r.tag]
    for tag in tags:
        if backend.image_id(tag):
            return tag
    raise BuildError(f"{vid} is not built on this engine: the results tree {root} has no "
                     "build of it whose image is there",
                     hint=f"run `invoke matrix build --only {vid} --results {root}` first")


def _profile_one(root: Path, backend: Backend, m: Matrix, vid: str, speed: SpeedCell,
                 engine_info: dict[str, Any]) -> tuple[ProfileRun, dict[str, Any], Path]:
    """Profile one variant: the image build and the run each under the engine's host lock
    (a build step, then a measurement: no bench of this tool measures beside either)."""
    v = _variant(m, vid)
    cell: Cell = speed.cell(v.version.version)
    tag = _image(root, backend, vid)
    lock = HostLock(engine_key(engine_info)) if engine_info.get("id") else None
    building = lock.building(f"profile image of {vid}", say=log.info) if lock else None
    with building or nullcontext():
        ptag, pid = ensure_profile_image(backend, tag, root / PROFILES_DIR / ".work")
    measuring = lock.measuring(f"profile {vid} {cell.name}", say=log.info) if lock else None
    with measuring or nullcontext(), \
            log.step(f"profile {vid} {cell.name} ({cell.seconds}s under perf)"):
        run = run_speed(backend, ptag, v.version.version, cell)
    meta = meta_of(run, variant=vid, version=v.version.version, image=tag,
                   image_id=backend.image_id(tag), profile_image=ptag, profile_image_id=pid,
                   cell=cell, engine=engine_info)
    folder = file_profile(root, run, meta)
    return run, meta, folder


def _summary(meta: dict[str, Any], folder: Path) -> str:
    lines = [f"{meta['variant']} {meta['cell']['name']}: {meta['status']}, "
             f"{meta['samples']} samples, {meta['operations']} ops in "
             f"{meta['speed_seconds']:.2f}s, {meta['ns_per_op']:.1f} ns/op → {folder}"]
    lines += [f"  {row['ns_per_op']:10.2f} ns/op  {row['name']}"
              for row in meta["top_functions"][:10]]
    return "\n".join(lines)


def cmd_profile(*, target: str, matrix: str, results: str, only: str, algorithm: str,
                bytes: int, seconds: int, compare: str, json: bool,
                engine: Callable[[str | None, bool], Backend]) -> int:
    names = [p.strip() for p in (compare or only).split(",") if p.strip()]
    if compare and len(names) != 2:
        raise UsageError("--compare takes two variants: --compare A,B")
    if not compare and len(names) != 1:
        raise UsageError("`invoke matrix profile` needs --only VARIANT (one variant) or "
                         "--compare A,B", hint="e.g. --only 3.0.20-asm-x86_64 --algorithm "
                         "sha256 --bytes 16 (docs/profile.md)")
    if not algorithm or not bytes:
        raise UsageError("`invoke matrix profile` needs --algorithm ALG --bytes N",
                         hint="e.g. --algorithm sha256 --bytes 16")
    cell = SpeedCell(algorithm.strip(), bytes, seconds or DEFAULT_SECONDS)
    m = load_matrix(matrix or "matrix.yaml", default_urls=default_urls)
    root = Path(results or "results")
    for vid in names:
        _variant(m, vid)  # an unknown variant is refused before the engine is reached
    backend = engine(None, False)
    info = backend.engine_info()
    done = [_profile_one(root, backend, m, vid, cell, info) for vid in names]
    out: dict[str, Any] = {"profiles": [{"folder": str(f), **meta} for _, meta, f in done]}
    text = [_summary(meta, f) for _, meta, f in done]
    if compare:
        (a, _, fa), (b, _, fb) = done
        diff = difference(names[0], a, names[1], b)
        folder, table = file_difference(root, cell, diff, a, b, (fa, fb))
        out["compare"] = {"folder": str(folder), "gap_ns_per_op": diff.gap_ns,
                          "explained_share": None if math.isnan(diff.share) else diff.share}
        text += ["", table.rstrip("\n"), f"→ {folder}"]
    print(_json.dumps(out, indent=2, default=str) if json else "\n".join(text))
    return 0
