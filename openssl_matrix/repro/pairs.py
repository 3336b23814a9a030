"""Reproduce: claims judged from interleaved runs (the pair harness, measure/pairrun.py).

A claim whose two sides run the same EVP cipher or digest loop (same algorithm and
direction, no engine), or the same single-thread operation of the library harness that the
pair harness also runs (``LIBRARY_OPERATIONS``: private-key decoding, CMAC, HMAC), on
builds the harness can load (1.1.0 or newer, x86_64, one base image; a mask against native
counts) is measured once more after the reproduction's rounds the way ``bench`` measures
its comparisons: both sides' libcrypto in one process, alternating 5-ms windows,
``SECONDS`` per algorithm at each block size the claim is judged at (a library operation:
once, per operation), run again while the interval is wider than ±2 % (pairrun.again). Two
windows side by side see the same neighbour, so that ratio's interval stays narrow on a
host whose one-second figures spread by 20 % (docs/noise.md, section 6); the judge prefers
it to the ratio of rounds; several runs of one size are units of a random-effects mean
(measure/runsmeta.py), and a trend across block sizes is the quotient of its two sizes'
interleaved ratios (``trend_ratio``). Every other claim (public-key and TLS figures, other
library operations or several threads, the low-level path, an engine, two algorithms, two
machines, a trend across thread counts) is judged from rounds, and says so.

Each run is filed like a bench session's pairs: ``_interleaved/<cpu>/repro-<id>-<stamp>/
<pair>--<bytes>[--decrypt]/`` (``<pair>--operation/`` for a library operation; results/
interleaved.py), with the harness's raw output. A
later reproduction of the same spec reuses a finished run made in the same harness image
(the image's tag hashes every side's image and the harness), unless ``--force``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from openssl_matrix.core import log
from openssl_matrix.core.errors import BuildError, DockerUnavailable, FatalError
from openssl_matrix.core.version import series
from openssl_matrix.images.pairimage import OLDEST, ensure_pair_image, pair_tag
from openssl_matrix.matrix.kinds.base import FIGURES_THREADS
from openssl_matrix.matrix.model import Mask, Suite, Variant
from openssl_matrix.measure.interleave import LIBRARY_OPERATIONS, OPERATION, WINDOW_MS
from openssl_matrix.measure.pairrun import PairPlan, Side, measure_pair, short_row, timeout
from openssl_matrix.measure.runsmeta import Unit, quotient, unit_of_row
from openssl_matrix.measure.speedcmd import mask_value
from openssl_matrix.parse.algorithms import speed_argument
from openssl_matrix.repro.plan import PlannedMeasurement, mask_name
from openssl_matrix.repro.spec import OP_BLOCK, Measurement, ReportSpec
from openssl_matrix.results.interleaved import record_name
from openssl_matrix.results.pairrecord import PairRecord
from openssl_matrix.results.tree import ResultsTree

#: Seconds per algorithm and block size of a reproduction's interleaved runs.
SECONDS = 2
#: The start of a container and the harness's warm-up, for --check's estimate.
RUN_OVERHEAD_SECONDS = 2.0
_HARNESS = ("the pair harness times EVP cipher and digest loops and the library harness's "
            "single-thread " + ", ".join(LIBRARY_OPERATIONS) + " only")


@dataclass(frozen=True)
class ClaimPair:
    """A claim the harness can time: ``top`` (its first measurement) over ``bottom``."""

    claim: str
    top: str
    bottom: str
    algorithm: str  #: the EVP name both sides run, or the library operation's
    decrypt: bool
    blocks: tuple[int, ...]


@dataclass(frozen=True)
class PairRatio:
    """One block size's interleaved ratio (top / bottom) and where it is filed."""

    ratio: float
    ci_low: float | None
    ci_high: float | None
    blocks: int  #: A B B A blocks of windows kept
    disturbed: bool
    record: str  #: the record's folder, relative to the results tree (a trend: both)
    #: the harness runs behind it; with several, each run's own ratio and whether they
    #: disagree beyond their intervals (the interval is then the runs' random-effects
    #: one, measure/runsmeta.py)
    runs: int = 1
    run_ratios: tuple[float, ...] = ()
    runs_disagree: bool = False
    #: the log-ratio's standard error and its degrees of freedom (a trend's quotient)
    log_se: float | None = None
    ci_df: float | None = None


@dataclass
class Interleaving:
    """What the harness gave a claim: a ratio per block size, and why the claim (or the
    block sizes without a ratio) is judged from rounds instead."""

    ratios: dict[int, PairRatio] = field(default_factory=dict)
    why_rounds: str | None = None


def measurement_mask(m: Measurement) -> Mask:
    """The suite mask a measurement runs under (plan.mask_definition's, as a Mask)."""
    return Mask(mask_name(m.ia32cap, m.disable), m.ia32cap, tuple(m.disable))


def _side_refusal(m: Measurement) -> str | None:
    """Why the harness cannot time one side's figures, or None."""
    if m.suite_kind.figures == FIGURES_THREADS:  # the library harness's operation
        if m.algorithm not in LIBRARY_OPERATIONS:
            return f"{m.name} is the library harness's {m.algorithm}: {_HARNESS}"
        if m.threads != 1 or len(m.thread_counts) > 1:
            return (f"{m.name} runs {m.algorithm} on {m.threads} threads: the pair harness "
                    "runs one thread")
        return None
    if not m.suite_kind.interleavable:
        return f"{m.name} is {m.suite_kind.figure_noun}: {_HARNESS}"
    if not m.evp:
        return f"{m.name} runs the low-level (non-EVP) path: {_HARNESS}"
    if m.engine:
        return f"{m.name} runs through -engine {m.engine}: the harness loads no engine"
    return None


def claim_pair(spec: ReportSpec, claim_id: str, planned: Mapping[str, PlannedMeasurement],
               versions: Mapping[str, tuple[str, str]]) -> ClaimPair | str:
    """The claim's interleaved run, or why it is judged from rounds. ``versions``: each
    planned variant's OpenSSL version and architecture."""
    claim = next(c for c in spec.claims if c.id == claim_id)
    a, b = (spec.measurements[n] for n in (claim.numerator, claim.denominator))
    if a.machine != b.machine:
        return "it compares two machines: each side comes from its own machine's runs"
    if claim.trend is not None and claim.trend_of != "bytes":
        return "a trend across thread counts: the pair harness runs one thread"
    for m in (a, b):
        why = _side_refusal(m)
        if why:
            return why
    if a.algorithm != b.algorithm:
        return (f"its sides run different algorithms ({a.algorithm}, {b.algorithm}): the "
                "harness runs one algorithm on both")
    if a.decrypt != b.decrypt:
        return "its sides run different directions (encrypt, decrypt)"
    sides = []
    for m in (a, b):
        p = planned[m.name]
        if p.variant is None or p.problem or p.skipped or p.variant not in versions:
            return f"{m.name} is not measured here"
        version, arch = versions[p.variant]
        if series(version) < OLDEST:
            return (f"{m.name} is OpenSSL {version}, older than 1.1.0 (the harness needs "
                    "1.1.0's EVP calls)")
        if arch != "x86_64":
            return f"{m.name} is built for {arch} (the harness is built for x86_64 only)"
        mask = measurement_mask(m)
        value, why_not = mask_value(mask, version)
        if (mask.ia32cap or mask.disable) and value is None:
            return f"{m.name}: its mask cannot be set on {version} ({'; '.join(why_not)})"
        sides.append((p.variant, mask.name))
    if sides[0] == sides[1]:
        return "both sides are the same build and mask"
    if a.suite_kind.figures == FIGURES_THREADS:  # one figure, per operation
        return ClaimPair(claim.id, a.name, b.name, a.algorithm, False, (OP_BLOCK,))
    return ClaimPair(claim.id, a.name, b.name, speed_argument(a.algorithm, True), a.decrypt,
                     tuple(spec.claim_blocks(claim)))


def claim_pairs(spec: ReportSpec, planned: Mapping[str, PlannedMeasurement],
                versions: Mapping[str, tuple[str, str]],
                ) -> tuple[dict[str, ClaimPair], dict[str, str]]:
    """Each claim's interleaved run, and why each other claim is judged from rounds."""
    pairs: dict[str, ClaimPair] = {}
    why: dict[str, str] = {}
    for c in spec.claims:
        got = claim_pair(spec, c.id, planned, versions)
        if isinstance(got, ClaimPair):
            pairs[c.id] = got
        else:
            why[c.id] = got
    return pairs, why


@dataclass
class _Run:
    """One harness run: a pair of sides at one block size and direction."""

    plan: PairPlan
    block: int
    decrypt: bool
    algorithms: list[str] = field(default_factory=list)
    claims: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        if self.block == OP_BLOCK:  # library operations: no block size
            return f"{self.plan.name}--operation"
        return f"{self.plan.name}--{self.block}" + ("--decrypt" if self.decrypt else "")

    def suite(self) -> Suite:
        return Suite(f"repro-pair-{self.block}", "a reproduction's interleaved run",
                     tuple(self.algorithms), True, None, self.block, (),
                     directions=("decrypt",) if self.decrypt else ("encrypt",),
                     interleave=SECONDS)


def _side(spec: ReportSpec, name: str, planned: Mapping[str, PlannedMeasurement],
          variants: Mapping[str, tuple[Variant, str]]) -> Side:
    m = spec.measurements[name]
    variant = variants[str(planned[name].variant)][0]
    mask = measurement_mask(m)
    value, _ = mask_value(mask, variant.version.version)
    return Side(variant, mask.name, value)


def runs_of(spec: ReportSpec, pairs: Mapping[str, ClaimPair],
            planned: Mapping[str, PlannedMeasurement],
            variants: Mapping[str, tuple[Variant, str]]) -> list[_Run]:
    """The harness runs the claims need: one per pair of sides, block size and direction,
    with every algorithm the claims on it compare."""
    runs: dict[str, _Run] = {}
    for cp in pairs.values():
        plan = PairPlan("claim", _side(spec, cp.top, planned, variants),
                        _side(spec, cp.bottom, planned, variants))
        for block in cp.blocks:
            run = _Run(plan, block, cp.decrypt)
            run = runs.setdefault(run.name, run)
            if cp.algorithm not in run.algorithms:
                run.algorithms.append(cp.algorithm)
            run.claims.append(cp.claim)
    return list(runs.values())


def _earlier(tree: ResultsTree, cpu: str, spec_id: str, run: _Run, tag: str,
             ) -> tuple[str, PairRecord] | None:
    """A finished run of the same pair, block and algorithms made in the same harness
    image by an earlier reproduction of the spec: its session and record."""
    for session in reversed([s for s in tree.pair_sessions(cpu)
                             if s.startswith(f"repro-{spec_id}-")]):
        rec = tree.filed_pairs(cpu, session).get(run.name)
        if rec is None or rec.exit_code != 0 or rec.pair_image != tag:
            continue
        have = {r.algorithm for r in rec.algorithms if r.estimate is not None}
        if set(run.algorithms) <= have:
            return session, rec
    return None


def measure_claim_pairs(spec: ReportSpec, pairs: Mapping[str, ClaimPair],
                        planned: Mapping[str, PlannedMeasurement],
                        variants: Mapping[str, tuple[Variant, str]], backend: Any,
                        tree: ResultsTree, cpu: str, *, session: str, workdir: Path,
                        limits: Callable[[float], Any], force: bool = False,
                        hold: Callable[[], AbstractContextManager[Any]] = nullcontext,
                        ) -> dict[str, Interleaving]:
    """Run (or reuse) every claim's interleaved runs and file them under ``session``;
    what each claim got. ``variants``: variant id → (variant, image tag) of the built
    variants; ``limits``: a container's limits for a time limit in seconds; ``hold``:
    the engine's measurement lock, taken only when something is measured."""
    out = {c: Interleaving() for c in pairs}
    if not pairs:
        return out
    runs = runs_of(spec, pairs, planned, variants)
    used = sorted({s.variant.id: s.variant for r in runs
                   for s in (r.plan.top, r.plan.bottom)}.values(), key=lambda v: v.id)
    if len({v.base_image for v in used}) > 1:
        for il in out.values():
            il.why_rounds = "its builds have different base images (one process loads both)"
        return out
    sides = [(v, variants[v.id][1]) for v in used]
    tag = pair_tag(sides)
    filed: dict[str, tuple[str, PairRecord]] = {}
    for run in runs:  # an earlier reproduction's run in the same harness image: reused
        earlier = None if force else _earlier(tree, cpu, spec.id, run, tag)
        if earlier is not None:
            log.info(f"    {run.name}: reusing the run filed by an earlier reproduction in "
                     f"the same harness image ({earlier[0]}; --force measures again)")
            filed[run.name] = earlier
    todo = [r for r in runs if r.name not in filed]
    why: str | None = None
    if todo:
        with hold():
            why = _measure_runs(spec, todo, sides, backend, tree, cpu, session, workdir,
                                limits, filed)
    for cp in pairs.values():
        out[cp.claim] = _claim_ratios(cp, runs, filed, cpu)
        if why and out[cp.claim].why_rounds:  # the harness image could not be built
            out[cp.claim].why_rounds = why
    return out


def _measure_runs(spec: ReportSpec, todo: Sequence[_Run], sides: Sequence[tuple[Variant, str]],
                  backend: Any, tree: ResultsTree, cpu: str, session: str, workdir: Path,
                  limits: Callable[[float], Any],
                  filed: dict[str, tuple[str, PairRecord]]) -> str | None:
    """Build the harness image if it is missing, measure and file ``todo`` (into
    ``filed``); why nothing could be measured, or None."""
    try:
        image = ensure_pair_image(backend, sides, tree.builds_dir(), workdir)
    except BuildError as exc:
        log.warn(f"interleaved runs skipped: {exc.message} (hint: {exc.hint})")
        return f"the pair harness could not be built: {exc.message}"
    log.info(f"interleaved runs: {len(todo)} run(s), {SECONDS} s an algorithm in "
             f"{WINDOW_MS}-ms windows")
    for i, run in enumerate(todo, 1):
        got = _measure(backend, image.tag, run, limits, f"[{i}/{len(todo)}]")
        if got is not None:
            rec = replace(got[0], pair_image=image.tag, reproduction=spec.id,
                          claims=tuple(sorted(set(run.claims))), block_size=run.block)
            tree.file_pair(cpu, session, run.name, rec, got[1])
            filed[run.name] = (session, rec)
    return None


def _measure(backend: Any, tag: str, run: _Run, limits: Callable[[float], Any],
             step: str) -> tuple[PairRecord, str] | None:
    suite = run.suite()
    try:
        rec, raw = measure_pair(backend, tag, run.plan, suite,
                                lambda n: limits(timeout(suite, n)),
                                directions=suite.directions)
    except DockerUnavailable:
        raise
    except FatalError as exc:  # this run failed: the claims on it are judged from rounds
        log.warn(f"    {step} {run.name}: not measured: {exc.message}")
        return None
    where = "per operation" if run.block == OP_BLOCK else f"at {run.block} bytes"
    log.info(f"    {step} {run.plan.top.label} / {run.plan.bottom.label} {where}: "
             + ", ".join(short_row(r) for r in rec.algorithms))
    return rec, raw


def _claim_ratios(cp: ClaimPair, runs: Sequence[_Run],
                  filed: Mapping[str, tuple[str, PairRecord]], cpu: str) -> Interleaving:
    """A claim's ratio at each block size from its runs' records, and what is missing."""
    il = Interleaving()
    missing: list[str] = []
    directions = ("decrypt" if cp.decrypt else "encrypt", "digest", OPERATION)
    for run in runs:
        if cp.claim not in run.claims:
            continue
        session, rec = filed.get(run.name, ("", None))
        row = None if rec is None else rec.row(cp.algorithm, directions)
        where = "the operation" if run.block == OP_BLOCK else f"{run.block} bytes"
        if rec is None or row is None or rec.exit_code != 0:
            errors = "; ".join(() if rec is None else rec.errors) or "the run failed"
            missing.append(f"{where} ({errors})")
            continue
        e = row.estimate
        if e is None:
            missing.append(f"{where} (no block of windows had CPU time: the harness "
                           "timed nothing)")
            continue
        unit = unit_of_row(row)
        il.ratios[run.block] = PairRatio(
            e.ratio, e.ci_low, e.ci_high, e.blocks, bool(e.disturbed),
            record_name(cpu, session, run.name), row.runs or 1, e.run_ratios,
            bool(e.runs_disagree), None if unit is None else unit.se,
            None if unit is None else unit.df)
    if missing:
        il.why_rounds = "the interleaved run gave no ratio at " + ", ".join(missing)
    return il


def trend_ratio(il: Interleaving | None, trend: tuple[int, int]) -> PairRatio | None:
    """A trend claim's quotient from its interleaved runs: the ratio at ``trend[1]`` over
    the ratio at ``trend[0]``, each from its own runs (independent), the interval from the
    two log standard errors (runsmeta.quotient); None where either size has no interval."""
    if il is None:
        return None
    first, last = (il.ratios.get(b) for b in trend)
    if first is None or last is None or first.log_se is None or last.log_se is None \
            or first.ci_df is None or last.ci_df is None:
        return None
    got = quotient(Unit(math.log(last.ratio), last.log_se, last.ci_df),
                   Unit(math.log(first.ratio), first.log_se, first.ci_df))
    lo, hi = got.ci
    return PairRatio(got.ratio, lo, hi, first.blocks + last.blocks,
                     first.disturbed or last.disturbed, f"{first.record}, {last.record}",
                     max(first.runs, last.runs), (), first.runs_disagree or last.runs_disagree,
                     got.se, got.df)
