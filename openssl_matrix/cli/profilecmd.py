"""``invoke matrix profile --only VARIANT --algorithm ALG --bytes N`` (or ``--suite NAME
--cell TEXT``): where a cell's time goes.

Runs one cell (an ``openssl speed`` algorithm at a block size, or any cell of a matrix
suite: a public-key operation, a TLS handshake, a library-harness operation at a thread
count; ``measure/profilecell.py``) under ``perf`` in the variant's profile image
(``measure/perfrun.py``; for a library suite it is built FROM the variant's harness
image, the image the bench runs that suite in), files the profile under
``<results>/_profiles/<variant>/<cell>/``
(``measure/profilestore.py``) and prints its top functions per operation; ``--compare A,B``
profiles both builds and prints (and files) the function-by-function difference with the
share of the measured gap it explains; ``--agree`` profiles one build's cell twice and
prints (and files) whether the two agree on the top functions within their counting
uncertainty (``measure/profileagree.py``). The engine comes in as a seam from
``commands.handlers`` (this module does not import commands.py: imports go one way).
"""

from __future__ import annotations

import json as _json
import math
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from openssl_matrix.cli.paths import matrix_path, results_root
from openssl_matrix.core import log
from openssl_matrix.core.errors import BuildError, ConfigError, UsageError
from openssl_matrix.core.names import ALPHABET, clip, name_problem
from openssl_matrix.engine.backend import Backend
from openssl_matrix.engine.hostlock import HostLock, engine_key
from openssl_matrix.images.harness import ensure_harness
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.model import MAX_BYTES, MAX_SECONDS, Matrix, Suite, Variant
from openssl_matrix.measure.perfrun import (
    Cell,
    ProfileRun,
    SpeedCell,
    ensure_profile_image,
)
from openssl_matrix.measure.profileagree import agreement_of, file_agreement
from openssl_matrix.measure.profilecell import resolve, run_cell
from openssl_matrix.measure.profilestore import (
    difference,
    file_difference,
    file_profile,
    meta_of,
)
from openssl_matrix.results import records
from openssl_matrix.results.records import PROFILES_DIR

DEFAULT_SECONDS = 3


#: the longest --cell text taken (the longest cell name is far shorter)
MAX_CELL = 300


def _name(flag: str, value: str, what: str, hint: str, *, given: str | None = None) -> str:
    """A flag's name value (a variant id, suite or algorithm), stripped: refused, naming
    the flag and what was given (``given``: the whole flag, when ``value`` is a part of
    it; quoted, cut short), when it is empty or not a safe name."""
    name = value.strip()
    problem = "it is empty" if not name else name_problem(name)
    if problem is not None:
        part = "" if given is None else f"{clip(value)} "
        problem = problem.removeprefix(clip(name)).strip()
        raise UsageError(f"{flag} {clip(value if given is None else given)}: {part}is not "
                         f"{what}: {problem}", hint=f"{hint}; names are {ALPHABET}")
    return name


def _cell_text(text: str) -> str:
    """--cell's text: printable, not blank, not over :data:`MAX_CELL` characters."""
    bad = sorted({c for c in text if not c.isprintable()})
    problem = ("blank" if not text.strip() else f"longer than {MAX_CELL} characters"
               if len(text) > MAX_CELL else f"contains {', '.join(clip(c) for c in bad[:5])}"
               if bad else None)
    if problem is not None:
        raise UsageError(f"--cell {clip(text)}: {problem}",
                         hint="name one cell of --suite as its figures are named, e.g. "
                         "--suite pkey --cell rsa2048:sign (docs/profile.md)")
    return text


def _bounded(flag: str, value: int, high: int, what: str, example: str) -> int:
    if not 1 <= value <= high:
        raise UsageError(f"{flag}={clip(value)}: expected a whole number from 1 to {high} "
                         f"({what})", hint=f"e.g. {example}")
    return value


def _names(only: str, compare: str) -> list[str]:
    """The variant ids to profile: --only's one, or --compare's two different ones."""
    hint = "`invoke matrix list --all` lists the variant ids"
    if only and compare:
        raise UsageError(f"--only {clip(only)} and --compare {clip(compare)}: give one",
                         hint="--only VARIANT profiles one build, --compare A,B two")
    if not compare:
        if not only.strip():
            raise UsageError("`invoke matrix profile` needs --only VARIANT (one variant) or "
                             "--compare A,B", hint="e.g. --only 3.0.20-asm-x86_64 "
                             "--algorithm sha256 --bytes 16 (docs/profile.md)")
        return [_name("--only", only, "one variant id",
                      hint + " (one id, no pattern; two builds: --compare A,B)")]
    parts = compare.split(",")
    if len(parts) != 2:
        raise UsageError(f"--compare {clip(compare)}: takes two variants, A,B "
                         f"(got {len(parts)} part{'s' if len(parts) != 1 else ''})",
                         hint="e.g. --compare 3.0.20-asm-x86_64,3.0.20-no-asm-x86_64; one "
                         "build: --only VARIANT")
    a, b = (_name("--compare", p, "a variant id", hint + "; --compare takes A,B",
                  given=compare) for p in parts)
    if a == b:
        raise UsageError(f"--compare {clip(compare)}: names {a} twice",
                         hint="compare two different builds, e.g. --compare "
                         "3.0.20-asm-x86_64,3.0.20-no-asm-x86_64; one build: --only VARIANT")
    return [a, b]


def _variant(m: Matrix, vid: str, flag: str) -> Variant:
    try:
        found = [v for v in m.select(vid, every=True) if v.id == vid]
    except ConfigError:
        found = []
    if not found:
        raise UsageError(f"{flag} {clip(vid)}: the matrix {m.path} declares no such variant",
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


def _cell(v: Variant, suite: Suite | None, text: str, speed: SpeedCell | None,
          seconds: int) -> Cell:
    """The variant's cell: the bench's own invocation of it on that version."""
    version = v.version.version
    if suite is None:
        assert speed is not None
        return speed.cell(version)
    return resolve(suite, text, version, (*v.version.configure, *v.configure),
                   seconds or None)


def _base_image(root: Path, backend: Backend, v: Variant, suite: Suite | None,
                tag: str) -> str:
    """The image the bench runs the cell in: a library suite's harness sibling of the
    variant's image (built from the toolchain image if missing, as the bench does), else
    the variant's image."""
    if suite is None or suite.kind != "library":
        return tag
    return ensure_harness(backend, v, tag, root / "_builds" / v.id,
                          root / PROFILES_DIR / ".work").tag


def _profile_one(root: Path, backend: Backend, m: Matrix, vid: str, cell: Cell,
                 suite: Suite | None, engine_info: dict[str, Any],
                 ) -> tuple[ProfileRun, dict[str, Any], Path]:
    """Profile one variant: the image builds and the run each under the engine's host lock
    (a build step, then a measurement: no bench of this tool measures beside either)."""
    v = _variant(m, vid, "--only")
    tag = _image(root, backend, vid)
    lock = HostLock(engine_key(engine_info)) if engine_info.get("id") else None
    building = lock.building(f"profile image of {vid}", say=log.info) if lock else None
    with building or nullcontext():
        base = _base_image(root, backend, v, suite, tag)
        ptag, pid = ensure_profile_image(backend, base, root / PROFILES_DIR / ".work")
    measuring = lock.measuring(f"profile {vid} {cell.name}", say=log.info) if lock else None
    with measuring or nullcontext(), \
            log.step(f"profile {vid} {cell.name} ({cell.seconds}s under perf)"):
        run = run_cell(backend, ptag, v.version.version, cell)
    meta = meta_of(run, variant=vid, version=v.version.version, image=base,
                   image_id=backend.image_id(base), profile_image=ptag, profile_image_id=pid,
                   cell=cell, engine=engine_info)
    folder = file_profile(root, run, meta)
    return run, meta, folder


def _summary(meta: dict[str, Any], folder: Path) -> str:
    lines = [f"{meta['variant']} {meta['cell']['name']}: {meta['status']}, "
             f"{meta['samples']} samples, {meta['operations']} ops in "
             f"{meta['speed_seconds']:.2f}s, {meta['ns_per_op']:.1f} ns per "
             f"{meta['unit']} → {folder}"]
    lines += [f"  {row['ns_per_op']:10.2f} ns/op  {row['name']}"
              for row in meta["top_functions"][:10]]
    return "\n".join(lines)


def _suite(m: Matrix, name: str) -> Suite:
    found = [s for s in m.suites if s.name == name]
    if not found:
        raise UsageError(f"--suite {clip(name)}: the matrix {m.path} has no such suite",
                         hint="give one of its suites: " + ", ".join(
                             f"{s.name} ({s.kind or 'speed'})" for s in m.suites))
    return found[0]


def _form(algorithm: str, bytes: int, suite: str, cell: str) -> None:
    """One of the two ways to name the cell, whole."""
    if suite or cell:
        if algorithm or bytes:
            raise UsageError("--suite/--cell and --algorithm/--bytes name the cell two ways: "
                             "give one", hint="--suite pkey --cell rsa2048:sign, or "
                             "--algorithm sha256 --bytes 16")
        if not (suite and cell):
            raise UsageError("--suite NAME and --cell TEXT go together",
                             hint="e.g. --suite library-quick --cell "
                             "pkey-decode-pem-rsa2048:t1 (docs/profile.md)")
    elif not algorithm or not bytes:
        raise UsageError("`invoke matrix profile` needs --algorithm ALG --bytes N, or "
                         "--suite NAME --cell TEXT",
                         hint="e.g. --algorithm sha256 --bytes 16, or --suite pkey --cell "
                         "rsa2048:sign (docs/profile.md)")


def cmd_profile(*, target: str, matrix: str, results: str, only: str, algorithm: str,
                bytes: int, suite: str, cell: str, seconds: int, compare: str, json: bool,
                engine: Callable[[str | None, bool], Backend], agree: bool = False) -> int:
    if agree and compare:
        raise UsageError(f"--agree and --compare {clip(compare)}: give one",
                         hint="--agree profiles one build's cell twice (--only VARIANT) and "
                         "checks the two agree; --compare A,B profiles two builds")
    names = _names(only, compare)
    _form(algorithm, bytes, suite, cell)
    flag = "--compare" if compare else "--only"
    if seconds:
        _bounded("--seconds", seconds, MAX_SECONDS, "the matrix's bound on a suite's "
                 "seconds", "--seconds=3, or leave --seconds out for the default")
    m = load_matrix(matrix_path(matrix), default_urls=default_urls)
    root = results_root(matrix, results)
    picked = _suite(m, _name("--suite", suite, "a suite name", "give a suite of the "
                             "matrix by name")) if suite else None
    speed = None
    if picked is None:
        speed = SpeedCell(_name("--algorithm", algorithm, "a speed algorithm",
                                "give one as `openssl speed -evp` takes it, e.g. sha256"),
                          _bounded("--bytes", bytes, MAX_BYTES,
                                   "the matrix's bound on a suite's block size",
                                   "--bytes=16"),
                          seconds or DEFAULT_SECONDS)
    else:
        _cell_text(cell)
    # an unknown variant, suite or cell is refused before the engine is reached
    cells = [_cell(_variant(m, vid, flag), picked, cell, speed, seconds) for vid in names]
    backend = engine(None, False)
    info = backend.engine_info()
    if agree:  # the same cell twice, one run after the other
        names, cells = names * 2, cells * 2
    done = [_profile_one(root, backend, m, vid, c, picked, info)
            for vid, c in zip(names, cells, strict=True)]
    out: dict[str, Any] = {"profiles": [{"folder": str(f), **meta} for _, meta, f in done]}
    text = [_summary(meta, f) for _, meta, f in done]
    if compare:
        (a, _, fa), (b, _, fb) = done
        diff = difference(names[0], a, names[1], b)
        folder, table = file_difference(root, cells[0], diff, a, b, (fa, fb))
        out["compare"] = {"folder": str(folder), "gap_ns_per_op": diff.gap_ns,
                          "explained_share": None if math.isnan(diff.share) else diff.share}
        text += ["", table.rstrip("\n"), f"→ {folder}"]
    if agree:
        (first, _, f1), (second, _, f2) = done
        ag = agreement_of(first, second)
        folder, table = file_agreement(root, names[0], cells[0], ag, first, second, (f1, f2))
        out["agree"] = {"folder": str(folder), "verdict": ag.verdict, "beyond": ag.beyond,
                        "rows": len(ag.rows), "k_sigma": ag.k}
        text += ["", table.rstrip("\n"), f"→ {folder}"]
    print(_json.dumps(out, indent=2, default=str) if json else "\n".join(text))
    return 0
