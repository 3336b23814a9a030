"""A bench session's interleaved comparisons: which pairs, run in the harness, filed.

After a speed suite with ``interleave: SECONDS`` has run its rounds, every comparison
the paired tables make of it (paired.py: a mask against native, asm against no-asm, a
newer release against an older one with the same build options and mask) is measured
once more the interleaved way (interleave.py): both sides in one process, alternating
5-ms windows, SECONDS per algorithm at the suite's block size (8192 bytes where it names
none), one container per pair, run again (``again``) for the algorithms whose
interval is still wider than ±2 %. Each pair is filed under ``_interleaved/`` (results/
interleaved.py) with the harness's raw output; a resumed session measures only the
pairs it has not filed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from openssl_matrix.core import log
from openssl_matrix.core.errors import BuildError, DockerUnavailable, FatalError
from openssl_matrix.images.pairimage import BINARY, ensure_pair_image, library_path, refusal
from openssl_matrix.matrix.model import Mask, Suite, Variant
from openssl_matrix.measure.interleave import (
    SECONDS,
    WINDOW_MS,
    AlgorithmRun,
    PairOutput,
    parse_output,
)
from openssl_matrix.measure.paired import newer, variant_parts
from openssl_matrix.measure.pairregime import LOW, annotate, best_rates, low_algorithms, merged
from openssl_matrix.measure.robust import PAIRED_TARGET
from openssl_matrix.measure.runsmeta import projected_half, row_of
from openssl_matrix.measure.speedcmd import mask_value
from openssl_matrix.results.pairrecord import PairRecord, PairRow, PairSide
from openssl_matrix.results.tree import ResultsTree

#: Block size when the suite names none.
DEFAULT_BYTES = 8192
#: Further runs of a pair for the algorithms whose interval is wider than PAIRED_TARGET.
FOLLOW_UPS = 2
#: Runs in all, at most, of an algorithm still wider than PAIRED_TARGET after
#: 1 + FOLLOW_UPS: each further run only while its pooled interval is near enough the
#: target that this many runs should reach it (``again``). Twelve: a run is a couple of
#: seconds an algorithm, and on the EPYC VM of 2026-12-04 the three rows still wide after
#: three runs (±2.7–3.7 %) would have needed 5.5–10.3 runs in all (docs/noise.md).
MAX_RUNS = 12


@dataclass(frozen=True)
class Side:
    variant: Variant
    mask: str  #: the suite's mask name ("native" for none)
    ia32cap: str | None

    @property
    def name(self) -> str:
        return f"{self.variant.id}--{self.mask}"

    @property
    def label(self) -> str:
        return f"{self.variant.id} {self.mask}"


@dataclass(frozen=True)
class PairPlan:
    """``top`` over ``bottom``: the harness's side B over its side A."""

    kind: str  #: "mask/native", "asm/no-asm" or "release"
    top: Side
    bottom: Side

    @property
    def name(self) -> str:
        return f"{self.bottom.name}--vs--{self.top.name}"


def _sides(variant: Variant, masks: Sequence[Mask]) -> tuple[list[Side], list[str]]:
    out = [Side(variant, "native", None)]
    notes: list[str] = []
    for m in masks:
        if m.name == "native":
            continue
        value, why = mask_value(m, variant.version.version)
        if value is None:
            notes += [f"{variant.id} {m.name}: {w}" for w in why] or [
                f"{variant.id} {m.name}: no OPENSSL_ia32cap value: not compared"]
            continue
        out.append(Side(variant, m.name, value))
    return out, notes


def plan_pairs(variants: Sequence[Variant], suite: Suite) -> tuple[list[PairPlan], list[str]]:
    """Every pair the suite's comparisons need among ``variants``, and what was left out."""
    notes: list[str] = []
    usable: list[Variant] = []
    for v in variants:
        why = refusal(v)
        if why is None and usable and v.base_image != usable[0].base_image:
            # the harness image is the first variant's: another libc is not sound beside it
            why = (f"{v.id}: base image {v.base_image}, not {usable[0].base_image} as "
                   f"{usable[0].id}'s (one process loads both builds)")
        if why is None:
            usable.append(v)
        else:
            notes.append(f"not compared interleaved: {why}")
    sides: dict[str, list[Side]] = {}
    for v in usable:
        sides[v.id], more = _sides(v, suite.masks)
        notes += more
    pairs: list[PairPlan] = []
    for v in usable:
        native = sides[v.id][0]
        pairs += [PairPlan("mask/native", s, native) for s in sides[v.id][1:]]
    for v in usable:
        parts = variant_parts(v.id)
        if parts is None:
            continue
        version, build, rest = parts
        for o in usable:
            oparts = variant_parts(o.id)
            if o is v or oparts is None:
                continue
            kind = ""
            if build == "asm" and oparts == (version, "no-asm", rest):
                kind = "asm/no-asm"
            elif oparts[1:] == (build, rest) and newer(version, oparts[0]):
                kind = "release"
            if not kind:
                continue
            theirs = {s.mask: s for s in sides[o.id]}
            pairs += [PairPlan(kind, s, theirs[s.mask]) for s in sides[v.id]
                      if s.mask in theirs]
    return pairs, notes


def command(pair: PairPlan, suite: Suite, algorithms: Sequence[str], *,
            decrypt: bool = False) -> list[str]:
    cmd = [BINARY, "--a", library_path(pair.bottom.variant),
           "--b", library_path(pair.top.variant)]
    for flag, side in (("--a-cap", pair.bottom), ("--b-cap", pair.top)):
        if side.ia32cap is not None:
            cmd += [flag, side.ia32cap]
    cmd += ["--bytes", str(suite.bytes or DEFAULT_BYTES), "--window-ms", str(WINDOW_MS),
            "--seconds", str(suite.interleave or SECONDS)]
    return cmd + (["--decrypt"] if decrypt else []) + list(algorithms)


def grouped_runs(text: str) -> tuple[PairOutput, list[list[AlgorithmRun]]]:
    """The harness output of one or more runs of a pair (their texts one after the
    other): each algorithm and direction's runs, in order of first appearance."""
    out = parse_output(text)
    runs: dict[tuple[str, str], list[AlgorithmRun]] = {}
    for run in out.runs:
        runs.setdefault((run.algorithm, run.direction), []).append(run)
    return out, list(runs.values())


def again(row: PairRow, runs: int) -> bool:
    """Whether an algorithm's row over ``runs`` runs is run once more: wider than the
    target, and either within the first ``1 + FOLLOW_UPS`` runs or, up to ``MAX_RUNS``,
    narrow enough that ``MAX_RUNS`` runs in all should reach the target. A row of runs as
    units (runsmeta.py) projects its standard error, the runs' disagreement included, as
    one over the square root of the runs, its t quantile at a degree of freedom more a
    run; a pooled row's batch-means half-width shrinks as one over the square root of
    the blocks pooled."""
    if not wide(row):
        return False
    if runs < 1 + FOLLOW_UPS:
        return True
    ratio, lo, hi = row.ratio, row.ci_low, row.ci_high
    if runs >= MAX_RUNS or ratio is None or lo is None or hi is None:
        return False
    projected = projected_half(row, runs, MAX_RUNS - runs)
    if projected is not None:
        return projected <= PAIRED_TARGET
    half = (hi - lo) / 2 / ratio
    return runs * (half / PAIRED_TARGET) ** 2 <= MAX_RUNS


def wide(row: PairRow) -> bool:
    """Whether a row's interval is wider than the comparisons' target (no ratio: wider)."""
    ratio, lo, hi = row.ratio, row.ci_low, row.ci_high
    if ratio is None or lo is None or hi is None:
        return True
    return (hi - lo) / 2 / ratio > PAIRED_TARGET


#: A record's ``method``: how its ratios were made.
METHOD_TEXT = (
    "interleaved A B B A windows; blocks with a preempted window, or with "
    "a side more than 10 % below its usual rate, left out; the ratio is the "
    "geometric mean of batches of 10 kept blocks, its 95 % interval "
    "Student's t over the batches; an algorithm whose interval is wider "
    f"than ±{PAIRED_TARGET:.0%} is run again, up to {1 + FOLLOW_UPS} runs "
    f"(up to {MAX_RUNS} while that many should reach it); with several runs "
    "each run is a unit: their random-effects mean (DerSimonian-Laird, "
    "t with Welch-Satterthwaite degrees of freedom), the pooled blocks' "
    "estimate kept beside it")


def record_of(pair: PairPlan, cmd: Sequence[str], text: str, exit_code: int,
              started: str, seconds: float) -> PairRecord:
    """The filed record: both sides, the command, and each algorithm's estimate over
    every run of it in ``text``."""
    out, groups = grouped_runs(text)
    rows: list[PairRow] = []
    for first, *more in groups:
        rows.append(PairRow(
            algorithm=first.algorithm, block_size=first.block, direction=first.direction,
            window_ms=first.window_ms, seconds=first.seconds, runs=1 + len(more),
            windows=sum(len(r.windows) for r in (first, *more)),
            estimate=row_of((first, *more))))
    return PairRecord(
        kind=pair.kind, numerator=pair.top.label, denominator=pair.bottom.label,
        top=PairSide(pair.top.variant.id, pair.top.mask, pair.top.ia32cap,
                     out.versions.get(1)),
        bottom=PairSide(pair.bottom.variant.id, pair.bottom.mask, pair.bottom.ia32cap,
                        out.versions.get(0)),
        command=tuple(cmd), exit_code=exit_code, started=started,
        seconds=round(seconds, 3), errors=tuple(out.errors), algorithms=tuple(rows),
        method=METHOD_TEXT)


def timeout(suite: Suite, algorithms: int) -> float:
    """A container's time limit for one run of ``algorithms`` (each one ``interleave``
    seconds, and a retry of its warm-up), with room for a slow start."""
    return 120.0 + 3.0 * algorithms * (suite.interleave or SECONDS)


def measure_pair(backend: Any, image: str, pair: PairPlan, suite: Suite,
                 limits: Any, *, directions: Sequence[str] | None = None,
                 ) -> tuple[PairRecord, str]:
    """Run the pair in each of the suite's directions (decrypt: the ciphers only), again
    for the algorithms whose interval is still wide (``again``: up to ``FOLLOW_UPS`` more
    times, up to ``MAX_RUNS`` in all while that should reach the target); its
    record and every run's raw output. ``limits``: a function of the number of
    algorithms a run has, giving the container's limits. ``directions``: the directions
    run, in order (default: encrypt, then decrypt when the suite has it; decrypt alone
    runs every algorithm with ``--decrypt``)."""
    cmd = command(pair, suite, suite.algorithms)
    texts: list[str] = []
    t0 = time.monotonic()
    started, exit_code, stderr = "", 0, ""
    order = directions or ("encrypt", *(d for d in suite.directions if d == "decrypt"))
    for direction in order:
        decrypt = direction == "decrypt"
        algorithms = list(suite.algorithms)
        if decrypt and texts:  # what the encrypt runs measured as ciphers
            rec = record_of(pair, cmd, "".join(texts), 0, started, 0.0)
            algorithms = [r.algorithm for r in rec.algorithms if r.direction == "encrypt"]
        for runs in range(1, MAX_RUNS + 1):
            if not algorithms or exit_code != 0:
                break
            res = backend.run(image, command(pair, suite, algorithms, decrypt=decrypt),
                              env={}, limits=limits(len(algorithms)))
            started = started or res.started
            texts.append(res.stdout)
            exit_code, stderr = res.exit_code, res.stderr
            rec = record_of(pair, cmd, "".join(texts), 0, started, 0.0)
            algorithms = [r.algorithm for r in rec.algorithms
                          if r.algorithm in algorithms and again(r, runs)
                          and (r.direction == "decrypt") == decrypt]
    text = "".join(texts)
    rec = record_of(pair, cmd, text, exit_code, started, time.monotonic() - t0)
    if exit_code != 0:
        rec = replace(rec, errors=(*rec.errors, f"exit {exit_code}: {stderr.strip()[-400:]}"))
    return rec, text + ("\n# stderr\n" + stderr if stderr else "")


def to_measure(pairs: Sequence[PairPlan], done: Mapping[str, PairRecord]) -> list[PairPlan]:
    """The pairs not filed yet, or filed from a run that failed (measured again)."""
    return [p for p in pairs if p.name not in done or done[p.name].exit_code != 0]


def harness_refusal(variants: Sequence[Variant], suite: Suite) -> str | None:
    """Why the pair harness cannot time ``suite`` on ``variants`` side by side, or None:
    an EVP cipher or digest loop (a speed suite's EVP path) of 1.1.0 or later, x86_64,
    every side on the first's base image (one process loads both builds). The rule a bench
    session's interleaved comparisons and a bisection's steps follow."""
    if not suite.suite_kind.interleavable:
        return f"suite {suite.name} is a {suite.kind} suite: the pair harness times EVP " \
               "cipher and digest loops only"
    if not suite.evp:
        return f"suite {suite.name} runs the low-level (non-EVP) path: the pair harness " \
               "times EVP cipher and digest loops only"
    for v in variants:
        why = refusal(v)
        if why is None and v.base_image != variants[0].base_image:
            why = (f"{v.id}: base image {v.base_image}, not {variants[0].base_image} as "
                   f"{variants[0].id}'s (one process loads both builds)")
        if why is not None:
            return why
    return None


def interleaves_comparisons(variants: Sequence[Variant], suite: Suite) -> bool:
    """Whether the suite's interleaved run measures every comparison the paired tables
    make of ``variants`` (then the bench spends no rounds on them)."""
    return bool(suite.interleave) and harness_refusal(variants, suite) is None


def interleave_session(ctx: Any, variants: Sequence[Variant], images: Mapping[str, Any],
                       suite: Suite, workdir: Path) -> list[PairRecord]:
    """Measure and file every pair of the session not filed yet; the session's records.

    ``ctx``: the bench's RunContext (backend, tree, cpu_name, session, limits);
    ``images``: variant id → (image tag, build record) of the variants that ran;
    ``workdir``: where the harness image's build context is written.
    """
    if not suite.interleave or not suite.suite_kind.interleavable or not suite.evp:
        return []
    ready = [v for v in variants if v.id in images]
    pairs, notes = plan_pairs(ready, suite)
    for n in notes:
        log.info(f"  interleaved: {n}")
    if not pairs:
        return []
    tree: ResultsTree = ctx.tree
    done = tree.filed_pairs(ctx.cpu_name, ctx.session)
    todo = to_measure(pairs, done)
    again = _regime_todo(pairs, done) if not todo else []
    if not todo and not again:
        return [done[p.name] for p in pairs if p.name in done]
    used = sorted({v.id: v for p in pairs for v in (p.top.variant, p.bottom.variant)}
                  .values(), key=lambda v: v.id)
    try:
        image = ensure_pair_image(ctx.backend, [(v, images[v.id][0]) for v in used],
                                  tree.builds_dir(), workdir)
    except BuildError as exc:
        log.warn(f"interleaved comparisons skipped: {exc.message} (hint: {exc.hint})")
        return [done[p.name] for p in pairs if p.name in done]
    if todo:
        log.info(f"interleaved comparisons: {len(todo)} pair(s), {len(suite.algorithms)} "
                 f"algorithm(s), {suite.interleave} s each in {WINDOW_MS}-ms windows")
    for i, pair in enumerate(todo, 1):
        got = _measure(ctx, image.tag, pair, suite, f"[{i}/{len(todo)}]")
        if got is not None:
            tree.file_pair(ctx.cpu_name, ctx.session, pair.name, *got)
            done[pair.name] = got[0]
    again = again or _regime_todo(pairs, done)
    if again:
        log.info(f"interleaved: {len(again)} pair(s) ran with a side more than "
                 f"{LOW:.0%} below its best in this session's other pairs: measured again")
    for i, (pair, algorithms) in enumerate(again, 1):
        got = _measure(ctx, image.tag, pair, replace(suite, algorithms=tuple(algorithms)),
                       f"[again {i}/{len(again)}]")
        old = done[pair.name]
        best = best_rates([*done.values(), *([got[0]] if got else [])])
        rec = replace(old if got is None else merged(old, got[0], best), regime_checked=True)
        raw = tree.filed_pair_raw(ctx.cpu_name, ctx.session, pair.name)
        more = "" if got is None else f"# measured again: a side sat low\n{got[1]}"
        tree.file_pair(ctx.cpu_name, ctx.session, pair.name, rec, raw + more)
        done[pair.name] = rec
    filed = [p for p in pairs if p.name in done]
    records = annotate([done[p.name] for p in filed])
    for p, rec in zip(filed, records, strict=True):
        tree.rewrite_pair(ctx.cpu_name, ctx.session, p.name, rec)
    return records


def _regime_todo(pairs: Sequence[PairPlan], done: Mapping[str, PairRecord],
                 ) -> list[tuple[PairPlan, list[str]]]:
    """The filed pairs not measured again yet with an algorithm whose side sits low."""
    best = best_rates([done[p.name] for p in pairs if p.name in done])
    out = []
    for p in pairs:
        rec = done.get(p.name)
        if rec is None or rec.regime_checked or rec.exit_code != 0:
            continue
        low = low_algorithms(rec, best)
        if low:
            out.append((p, low))
    return out


def _measure(ctx: Any, tag: str, pair: PairPlan, suite: Suite, step: str,
             ) -> tuple[PairRecord, str] | None:
    """One pair measured (its record and raw output), or None when its run failed."""
    try:
        rec, raw = measure_pair(ctx.backend, tag, pair, suite,
                                lambda n: ctx.limits(timeout(suite, n), suite))
    except DockerUnavailable:
        raise
    except FatalError as exc:  # this pair's run failed: the others are still measured
        log.warn(f"    {step} {pair.top.label} / {pair.bottom.label}: not measured: "
                 f"{exc.message}")
        return None
    log.info(f"    {step} {pair.top.label} / {pair.bottom.label}: "
             + ", ".join(short_row(r) for r in rec.algorithms))
    return rec, raw


def short_row(row: PairRow) -> str:
    """One algorithm row of a pair's record as a progress line shows it:
    ``sha256 1.002× ±0.5%`` (``-`` without a ratio)."""
    ratio, lo, hi = row.ratio, row.ci_low, row.ci_high
    if ratio is None:
        return f"{row.algorithm} -"
    if lo is not None and hi is not None:
        return f"{row.algorithm} {ratio:.3f}× ±{(hi - lo) / 2 / ratio:.1%}"
    return f"{row.algorithm} {ratio:.3f}×"
