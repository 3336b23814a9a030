"""Bench: a session of cells, each one variant × suite × round (see ``cell.BenchCell``).

One run of a suite on a variant is one folder ``results/<cpu>/<variant>/<suite>/<run>/``
holding, for every ``openssl speed`` invocation, the exact command, environment,
stdout and stderr (``raw/``), the parsed figures and the run's provenance (file names
and shapes: ``records``) with the host accounting around each speed run. Containers run
with no network, no capabilities, a read-only root and memory/pid limits.

The session (``Bencher.bench``) plans and orders the cells, holds the host-wide
measurement lock (``hostlock``: one measurement per Docker engine at a time), lets the
host settle before each cell, keeps a run journal (see ``results.Journal``) and tags
every run folder with the session id, so a bench killed at any point and run again goes
on where it stopped: finished cells are kept and not measured again, a half-written run
folder is marked ``interrupted`` and its cell measured anew, and a failing cell never
stops the others. After the planned rounds it measures again, interleaved, what the host
disturbed (``contended`` figures) and what is still too uncertain (a 95 % interval wider
than the suite's noise threshold), up to ``max_attempts``; every attempt keeps its own
run folder, and the series figures come from clean attempts only (``stats``).
"""

from __future__ import annotations

import platform
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, cast

from openssl_matrix.core import log
from openssl_matrix.core.clock import wall
from openssl_matrix.core.errors import BuildError, DockerUnavailable, FatalError, ProfileMismatch
from openssl_matrix.core.stats import CI_METHOD, LOW_TOLERANCE, estimate, robust_figure
from openssl_matrix.core.statuses import CONTENDED, DISTURBED, SHARED_CORE
from openssl_matrix.engine.backend import Backend, endpoint_is_local
from openssl_matrix.engine.engineinfo import EngineInfo
from openssl_matrix.engine.hostlock import HostLock, engine_key
from openssl_matrix.engine.ship import arrival_on
from openssl_matrix.images.build import work_folder
from openssl_matrix.images.harness import ensure_harness
from openssl_matrix.matrix.kinds.base import RUNNER_HARNESS
from openssl_matrix.matrix.model import Matrix, Suite, Variant, as_jsonable
from openssl_matrix.matrix.pts import max_runs as pts_max_runs
from openssl_matrix.matrix.pts import percent_std_dev
from openssl_matrix.matrix.pts import result_for as pts_result_for
from openssl_matrix.measure import hostacct, paired
from openssl_matrix.measure.benchfigure import (
    BenchFigure,
    RateKey,
    SeriesHead,
    SeriesRow,
    SettleRecord,
)
from openssl_matrix.measure.cell import (
    TREE_LABEL,
    BenchCell,
    CellOutcome,
    RunContext,
    cpu_via_container,
    outcome_from,
)
from openssl_matrix.measure.guards import spread
from openssl_matrix.measure.hostinfo import CpuInfo, parse_cpuinfo, profile_mismatches
from openssl_matrix.measure.pairrun import interleave_session, interleaves_comparisons
from openssl_matrix.measure.robust import PAIRED_ATTEMPTS, PAIRED_TARGET
from openssl_matrix.results import records
from openssl_matrix.results.pairrecord import PairRecord
from openssl_matrix.results.records import FINISHED
from openssl_matrix.results.tree import Journal, ResultsTree, RunRef

#: Seconds a cell waits for a quiet host before it measures anyway (``--settle``; the
#: command line's default: the Python API's is 0, no wait).
DEFAULT_SETTLE = 20.0
#: Attempts per figure at most: planned rounds plus re-measurements of contended figures
#: and extra rounds for figures whose interval is too wide (a single-round bench
#: re-measures a contended figure at most twice). The command line's default; the
#: Python API's ``max_attempts`` is 0: the planned rounds only, each figure judged.
MAX_ATTEMPTS = 6


def interleaved(variants: Sequence[Variant], rounds: int) -> list[tuple[int, Variant]]:
    """The order of a repeated bench: round by round, every variant once per round.

    Runs of one variant are never back to back (unless it is alone), and where that
    allows, each round starts one variant later than the previous one, so no variant
    always runs first (after an idle spell) or last.
    """
    order: list[tuple[int, Variant]] = []
    n = len(variants)
    for r in range(rounds):
        shift = r % n if n else 0
        this = [*variants[shift:], *variants[:shift]]
        if n > 1 and order and this[0] == order[-1][1]:
            shift = (shift + 1) % n
            this = [*variants[shift:], *variants[:shift]]
        order.extend((r + 1, v) for v in this)
    return order



@dataclass(frozen=True)
class FollowUp:
    """More attempts one variant needs after the planned rounds."""

    invocations: tuple[str, ...]
    why: str


#: Which figures' spread asks for another round: ``interval`` (a 95 % interval wider than
#: the threshold) or pts-core's (the percent standard deviation of the figures PTS reports).
RULE_PTS_CORE = "pts-core"


def follow_ups(outcomes: Sequence[CellOutcome], rounds: int, threshold: float,
               max_attempts: int, *, widen: bool = True, rule: str = "interval",
               paired_attempts: int = 0, paired_rounds: bool = True) -> dict[str, FollowUp]:
    """Which invocations of which variant to measure again, and why (pure).

    An invocation needs another attempt when it has fewer clean samples than ``rounds``
    (its other attempts were contended or failed), or when ``rounds`` > 1 and the 95 %
    interval of one of its figures is wider than ``threshold`` of the median (only with
    ``widen``: the rounds come from the suite, not from an explicit ``--repeat``); never
    beyond ``max_attempts`` attempts. Both sides of a comparison whose paired ratio's
    interval is wider than ``PAIRED_TARGET`` get another attempt, up to
    ``paired_attempts`` (at least ``max_attempts``). With ``rule=RULE_PTS_CORE`` (a suite
    whose kind is ``pts_comparable``, ``kind: pts``) the widening test is pts-core's
    instead: the percent standard deviation of a figure PTS reports at or above
    ``threshold`` (pts.py). ``paired_rounds`` False (a suite that measures its
    comparisons interleaved, pairrun.py): no rounds for comparisons.
    """
    attempts, clean, values = _tally(outcomes)
    need: dict[str, list[str]] = {}
    why: dict[str, set[str]] = {}
    for (variant, inv), n in attempts.items():
        if n >= max(max_attempts, rounds):
            continue
        if clean[(variant, inv)] < rounds:
            need.setdefault(variant, []).append(inv)
            why.setdefault(variant, set()).add(CONTENDED)
            continue
        mine = values.get((variant, inv), {})
        if rounds >= 2 and rule != RULE_PTS_CORE and any(  # slowed by a core's other
                # thread (stats.robust_figure)
                r is not None and r.kept < rounds for key, vals in mine.items()
                if key[1] is not None for r in [robust_figure(vals)]):
            need.setdefault(variant, []).append(inv)
            why.setdefault(variant, set()).add(SHARED_CORE)
        if rounds < 2 or not widen:
            continue
        if rule == RULE_PTS_CORE:  # only the figures PTS reports decide, as pts-core would
            wide = any(percent_std_dev(vals) >= threshold for key, vals in mine.items()
                       if pts_result_for(str(key[0]), key[2], key[1]) is not None)
        else:
            wide = any(w is not None and w > threshold for vals in mine.values()
                       if (e := estimate(vals)) is not None
                       for w in [e.relative_half_width])
        if wide:
            if inv not in need.get(variant, []):
                need.setdefault(variant, []).append(inv)
            why.setdefault(variant, set()).add("interval")
    if rounds >= 2 and widen and rule != RULE_PTS_CORE and paired_rounds:  # comparisons as such
        limit = max(max_attempts, rounds, paired_attempts)
        for c in paired.wide(outcomes, PAIRED_TARGET):
            sides = [(v, inv) for v, inv, _, _ in c.cells]
            if any(attempts.get(side, limit) >= limit for side in sides):
                continue  # one side at its limit: a round of the other has no partner
            for variant, inv in sides:
                if inv not in need.get(variant, []):
                    need.setdefault(variant, []).append(inv)
                why.setdefault(variant, set()).add("paired")
    text = _why_text(threshold, rule)
    return {v: FollowUp(tuple(invs), "; ".join(text[w] for w in sorted(why[v])))
            for v, invs in need.items()}


Side = tuple[str, str]  # (variant, invocation)


def _tally(outcomes: Sequence[CellOutcome],
           ) -> tuple[dict[Side, int], dict[Side, int],
                      dict[Side, dict[tuple[Any, ...], list[float]]]]:
    """Per (variant, invocation): attempts, clean attempts (no figure disturbed), and the
    clean values of each figure (algorithm, block size, operation)."""
    attempts: dict[Side, int] = {}
    clean: dict[Side, int] = {}
    values: dict[Side, dict[tuple[Any, ...], list[float]]] = {}
    for o in outcomes:
        seen: dict[str, bool] = {}
        for f in o.figures:
            inv = str(f.invocation)
            ok = f.status not in DISTURBED
            seen[inv] = seen.get(inv, True) and ok
            unit: RateKey = "bytes_per_s" if f.block_size is not None else "ops_per_s"
            if ok and isinstance(value := f.get(unit), (int, float)):
                key = (f.algorithm, f.block_size, f.operation)
                values.setdefault((o.variant, inv), {}).setdefault(key, []).append(
                    float(value))
        for inv, ok in seen.items():
            attempts[(o.variant, inv)] = attempts.get((o.variant, inv), 0) + 1
            clean[(o.variant, inv)] = clean.get((o.variant, inv), 0) + int(ok)
    return attempts, clean, values


def _why_text(threshold: float, rule: str) -> dict[str, str]:
    """Why a follow-up round measures again, in words, per reason."""
    return {CONTENDED: "re-measuring figures the host disturbed",
            "paired": "an extra round: a paired ratio's 95 % interval wider than "
                      f"±{PAIRED_TARGET:.0%}",
            SHARED_CORE: "re-measuring figures with samples more than "
                         f"{LOW_TOLERANCE * 100:g} % below their cell's best (a shared core "
                         "the guest cannot see)",
            "interval": (f"an extra round: spread at or above {threshold:.0%} of the mean "
                         "(pts-core's rule)" if rule == RULE_PTS_CORE else
                         f"an extra round: 95 % interval wider than ±{threshold:.0%}")}


def _mismatch(name: str, description: str, cpu: CpuInfo, reasons: list[str],
              ) -> ProfileMismatch:
    return ProfileMismatch(
        f"--cpu={name} ({description}) does not describe this host ({cpu.model}, "
        f"{cpu.vendor}): " + "; ".join(reasons),
        hint="run on the machine the profile names, use --cpu=auto for this host, or add "
        "--force to run anyway (the results are then marked forced)")


def build_command(variant_ids: Sequence[str], tree_root: Path) -> str:
    """The command that builds ``variant_ids`` into the results tree ``tree_root``."""
    tree = "" if tree_root == Path("results") else f" --results {tree_root}"
    return f"invoke matrix build --only {','.join(variant_ids)}{tree}"


#: Each variant's image tag and its build record (``Bencher.image_for``).
Images = dict[str, tuple[str, records.BuildRecord]]


class Bencher:
    def __init__(self, matrix: Matrix, backend: Backend, tree: ResultsTree, *,
                 engine: EngineInfo, git_commit: str | None,
                 settle: float = 0.0, wait_for_host: bool = True,
                 max_attempts: int = 0, take_host_lock: bool = True,
                 suites: Sequence[str] = ()) -> None:
        self.matrix = matrix
        self.backend = backend
        self.tree = tree
        self.engine = engine
        self.git_commit = git_commit
        self.settle = settle
        self.wait_for_host = wait_for_host
        self.max_attempts = max_attempts
        self.take_host_lock = take_host_lock  # False: the caller holds it (benchmarks)
        self.session: str | None = None  # the run journal's id, written into each run record
        self.finished_sessions: list[Journal] = []  # kept open by bench(keep_open=True)
        # The suites the command runs on these variants: a variant that is not built is
        # then reported once, naming them all, not once per suite (``_say_unbuilt``).
        self.suites = tuple(suites)
        self._told_unbuilt: set[str] = set()
        #: each suite's interleaved comparisons (pairrun.py) of this command, for the summary
        self.interleaved: dict[str, list[PairRecord]] = {}

    def image_for(self, variant: Variant) -> tuple[str, records.BuildRecord]:
        """The built image of a variant and its build record.

        The latest pointer names the newest build; when that image is not on this engine (a
        profile's remote engine built its own), the newest recorded build whose image is
        here is used.
        """
        latest = self.tree.read_latest(variant.id)
        if latest is not None:
            record = self.tree.read_build(variant.id, latest.digest)
            if record is not None and self.backend.image_id(latest.tag):
                return latest.tag, self._arrival(variant.id, record)
        candidates = [r for r in self.tree.build_records(variant.id) if r.tag]
        # newest first, by the key as written (a missing ``ended`` sorts as "")
        for rec in sorted(candidates, key=lambda r: str(r.to_json().get("ended", "")),
                          reverse=True):
            if self.backend.image_id(rec.tag):
                return rec.tag, self._arrival(variant.id, rec)
        where = self.engine.endpoint or "this engine"
        raise BuildError(f"{variant.id} is not built on {where}: the results tree "
                         f"{self.tree.root} has no build of it whose image is there",
                         hint=f"run `{build_command([variant.id], self.tree.root)}` first "
                         "(an image already on the engine, found by its content hash, is "
                         "reused, not rebuilt; with --cpu=PROFILE it builds on a profile's "
                         "Docker engine)")

    def _arrival(self, variant_id: str, record: records.BuildRecord) -> records.BuildRecord:
        """The build record, with how the image reached this engine if it was shipped
        here (ship.py) rather than built here."""
        shipped = arrival_on(self.tree.build_dir(variant_id, record.digest), self.engine)
        return replace(record, extra={**record.extra, "shipped": shipped}) if shipped \
            else record

    def resolve_cpu(self, profile_name: str, image: str, *, force: bool,
                    ) -> tuple[str, CpuInfo, dict[str, str], list[str]]:
        cpu, extra = cpu_via_container(self.backend, image)
        if profile_name == "auto":
            return cpu.slug(), cpu, extra, []
        profile = self.matrix.profile(profile_name)
        reasons = profile_mismatches(profile, cpu)
        if reasons and not force:
            raise _mismatch(profile_name, profile.description, cpu, reasons)
        return profile.name, cpu, extra, reasons

    def refuse_early(self, profile_name: str) -> None:
        """Refuse a profile that does not describe this machine before waiting for the
        engine's measurement lock (another bench may hold it for an hour), when the engine
        runs on this machine: a local socket and this kernel, so this machine's
        /proc/cpuinfo is what a container there reads. Else the check comes after the
        lock, through the engine, as always."""
        if not endpoint_is_local(self.engine) or \
                self.engine.kernel != platform.release():
            return
        try:
            cpu = parse_cpuinfo(Path("/proc/cpuinfo").read_text(encoding="utf-8",
                                                                errors="replace"))
        except OSError:
            return
        profile = self.matrix.profile(profile_name)
        reasons = profile_mismatches(profile, cpu)
        if reasons:
            raise _mismatch(profile_name, profile.description, cpu, reasons)

    def host_lock(self) -> HostLock | None:
        """The engine's measurement lock; None for an engine that has no ID (a fake)."""
        return HostLock(engine_key(self.engine)) if self.engine.id else None

    def bench(self, variants: list[Variant], suite: Suite, profile_name: str, *,
              force: bool = False, repeat: int | None = None, fresh: bool = False,
              keep_open: bool = False) -> list[CellOutcome]:
        """Run ``suite`` on every variant (``repeat`` rounds, interleaved); resume the open
        session of the same command.

        Call it holding the results tree's lock; it takes the engine's measurement lock
        itself (waiting for another bench or a build step, or refusing with
        ``wait_for_host`` False). ``fresh`` starts a new session even if an interrupted
        one is open (its finished cells are then measured again). ``keep_open`` leaves a
        finished session open for :meth:`close_sessions` (a command running several
        suites closes them together, so an interruption in the second suite does not make
        a rerun measure the first again).
        """
        lock = self.host_lock() if self.take_host_lock else None
        if lock is not None and profile_name != "auto" and not force:
            self.refuse_early(profile_name)
        if lock is None or not self._any_image(variants):
            # nothing to measure (no variant is built): say so now, not after waiting
            # for another engineer's build or bench to release the host
            return self._bench(variants, suite, profile_name, force=force, repeat=repeat,
                               fresh=fresh, keep_open=keep_open)
        with lock.measuring(f"{suite.name} → {self.tree.root}", wait=self.wait_for_host,
                            say=log.info):
            return self._bench(variants, suite, profile_name, force=force, repeat=repeat,
                               fresh=fresh, keep_open=keep_open)

    def _say_unbuilt(self, variant_id: str, err: BuildError, suite: Suite) -> None:
        """Report a variant with no image: once per Bencher when it knows the command's
        suites (none of them can run on it), naming them; else once per suite."""
        if variant_id in self._told_unbuilt:
            return
        names = self.suites or (suite.name,)
        log.error(f"{err.message}; {'suite' if len(names) == 1 else 'suites'} "
                  f"{', '.join(names)} cannot run on it\n  hint: {err.hint}")
        if self.suites:
            self._told_unbuilt.add(variant_id)

    def _any_image(self, variants: Sequence[Variant]) -> bool:
        """Whether any of ``variants`` has a built image on this engine."""
        for v in variants:
            try:
                self.image_for(v)
            except BuildError:
                continue
            return True
        return False

    def _bench(self, variants: list[Variant], suite: Suite, profile_name: str, *,
               force: bool, repeat: int | None, fresh: bool, keep_open: bool,
               ) -> list[CellOutcome]:
        images, missing = self._images(variants, suite)
        # The CPU check comes first, so a wrong --cpu is refused even before anything
        # is built; it reads /proc/cpuinfo through the engine (right for remote ones).
        probe = next(iter(images.values()))[0] if images else variants[0].base_image
        cpu_name, cpu, extra, mismatch = self.resolve_cpu(profile_name, probe, force=force)
        outcomes: list[CellOutcome] = []
        for vid, err in missing.items():
            self._say_unbuilt(vid, err, suite)
            outcomes.append(CellOutcome(vid, "failed", error=str(err), unbuilt=True))
        if not images:
            return outcomes
        if mismatch:
            log.warn(f"--force: profile {profile_name} does not match this host "
                     f"({'; '.join(mismatch)}); results are marked forced")
        log.info(f"CPU: {cpu.model} ({cpu.vendor}); results under "
                 f"{self.tree.cpu_dir(cpu_name)}")
        ready = [v for v in variants if v.id in images]
        rounds = repeat or suite.repeat
        order = interleaved(ready, rounds)
        journal = self._open_session(variants, suite, cpu_name, profile_name, rounds,
                                     fresh=fresh)
        series = self._series(journal, rounds, order)
        ctx = RunContext(matrix=self.matrix, backend=self.backend, tree=self.tree,
                         engine=self.engine, git_commit=self.git_commit, session=journal.id,
                         cpu_name=cpu_name, cpu=cpu, extra=extra, profile_name=profile_name,
                         mismatch=mismatch)
        run_outcomes: list[CellOutcome] = []
        cells = [BenchCell(ctx, v, *images[v.id], suite, round=r, index=i + 1,
                           total=len(order), series=series) for i, (r, v) in enumerate(order)]
        try:
            for cell in cells:
                run_outcomes.append(self._run_cell(journal, cell))
            run_outcomes += self._follow_up(journal, ctx, ready, images, suite, rounds,
                                            series, run_outcomes, widen=repeat is None)
            self.interleaved[suite.name] = interleave_session(
                ctx, ready, images, suite, work_folder(self.matrix.path.parent))
        except (DockerUnavailable, KeyboardInterrupt):
            kept = sum(o.status in FINISHED for o in run_outcomes)
            log.error(f"bench stopped: {kept} run(s) of this session are finished and kept "
                      f"(journal {journal.path}); rerun the same command to measure the rest")
            raise
        outcomes.extend(run_outcomes)
        if series is not None:
            self._file_series(series, suite, cpu_name, run_outcomes)
        self._close_session(journal, outcomes, keep_open=keep_open)
        return outcomes

    def _images(self, variants: Sequence[Variant], suite: Suite,
                ) -> tuple[Images, dict[str, BuildError]]:
        """Each variant's image and build record (for a library suite, its harness
        sibling's), and the error of each variant that has none."""
        images: Images = {}
        missing: dict[str, BuildError] = {}
        for v in variants:
            try:
                images[v.id] = self.image_for(v)
            except BuildError as exc:
                missing[v.id] = exc
        if suite.suite_kind.runner == RUNNER_HARNESS:  # each variant image's harness sibling
            images = self._harness_images(variants, images, missing)
        return images, missing

    @staticmethod
    def _series(journal: Journal, rounds: int,
                order: Sequence[tuple[int, Variant]]) -> SeriesHead | None:
        """The repeated bench's series (None for one round), kept in the journal so that a
        resumed repeated bench goes on with the same series."""
        if rounds <= 1:
            return None
        kept = journal.data.get("series")
        if isinstance(kept, dict):  # the journal's own, written below by an earlier run
            series = cast(SeriesHead, kept)
        else:
            series = SeriesHead(id=wall().strftime("%Y%m%dT%H%M%S.%fZ"), rounds=rounds,
                                order=[f"{r}:{v.id}" for r, v in order])
            journal.data["series"] = series
            journal.save()
        log.info(f"{rounds} rounds, interleaved: "
                 + " → ".join(f"{v.id}#{r}" for r, v in order))
        return series

    def _harness_images(self, variants: Sequence[Variant],
                        images: Images,
                        missing: dict[str, BuildError],
                        ) -> Images:
        """Each variant image's library-harness sibling (built here if missing, see
        harness.py); a variant whose harness cannot be built joins ``missing``."""
        out: Images = {}
        for v in variants:
            if v.id not in images:
                continue
            tag, record = images[v.id]
            try:
                img = ensure_harness(self.backend, v, tag, self.tree,
                                     work_folder(self.matrix.path.parent))
            except BuildError as exc:
                missing[v.id] = exc
                continue
            out[v.id] = (img.tag, replace(record, extra={**record.extra, "harness": {
                "tag": img.tag, "digest": img.digest, "variant_tag": img.variant_tag,
                "built_now": img.built}}))
        return out

    def _follow_up(self, journal: Journal, ctx: RunContext, ready: list[Variant],
                   images: Images, suite: Suite, rounds: int,
                   series: SeriesHead | None, done: list[CellOutcome], *,
                   widen: bool) -> list[CellOutcome]:
        """Attempts beyond the planned rounds, one variant after the other each time."""
        out: list[CellOutcome] = []
        next_round = rounds + 1
        limit = max(rounds, self.max_attempts if rounds > 1 else min(self.max_attempts, 3))
        rule = RULE_PTS_CORE if suite.suite_kind.pts_comparable else "interval"
        # comparisons narrow with more samples of both sides (the command line's bench)
        paired_limit = max(limit, PAIRED_ATTEMPTS) if self.max_attempts and widen else 0
        if rule == RULE_PTS_CORE and widen:  # pts-core's own maximum for runs of this length
            limit = max(limit, pts_max_runs(rounds, 6.0 * (suite.seconds or 3)))
        while True:
            finished = [o for o in [*done, *out] if o.status in FINISHED]
            todo = follow_ups(finished, rounds, suite.noise_threshold, limit, widen=widen,
                              rule=rule, paired_attempts=paired_limit,
                              paired_rounds=not interleaves_comparisons(ready, suite))
            if not todo:
                return out
            for v in ready:
                if v.id not in todo:
                    continue
                need = todo[v.id]
                log.info(f"  {v.id}: {need.why} ({len(need.invocations)} speed run(s))")
                cell = BenchCell(ctx, v, *images[v.id], suite, round=next_round,
                                 series=series, only=need.invocations, why=need.why)
                out.append(self._run_cell(journal, cell))
            next_round += 1
            if next_round > max(limit, paired_limit):
                return out

    def _settle(self) -> SettleRecord | None:
        """Wait (up to ``settle`` seconds, with a countdown) until the host is quiet.

        Only for a local engine that identifies itself: its host is this machine, whose
        /proc/stat is read directly. Returns what was seen, for the run's metadata.
        """
        if self.settle <= 0 or not self.engine.id or not endpoint_is_local(self.engine):
            return None
        t0 = time.monotonic()
        seen = hostacct.sample_quiet(1.0)
        while not seen.quiet and time.monotonic() - t0 < self.settle:
            left = self.settle - (time.monotonic() - t0)
            log.info(f"    settling: {seen.reason()} — measuring when quiet, in at most "
                     f"{left:.0f}s")
            seen = hostacct.sample_quiet(min(2.0, max(0.5, left)))
        return SettleRecord(waited_s=round(time.monotonic() - t0, 1), quiet=seen.quiet,
                            last=seen.reason(), limit_s=self.settle)

    def _file_series(self, series: SeriesHead, suite: Suite, cpu_name: str,
                     outcomes: list[CellOutcome]) -> None:
        """Write each variant's median, interval and spread over the rounds beside its runs."""
        for variant in dict.fromkeys(o.variant for o in outcomes):
            mine = [o for o in outcomes if o.variant == variant]
            rows = summarize_series(mine, suite.noise_threshold)
            records.write_series(self.tree.suite_dir(cpu_name, variant, suite.name), {
                **series, "variant": variant, "suite": suite.name,
                "noise_threshold": suite.noise_threshold, "ci_method": CI_METHOD,
                "runs": [o.run_dir for o in mine],
                "statuses": [o.status for o in mine], "figures": rows})
            noisy = [r for r in rows if r["noisy"]]
            if noisy:
                log.warn(f"{variant}: {len(noisy)} figure(s) spread more than "
                         f"{suite.noise_threshold:.0%} over {series['rounds']} runs (noisy): "
                         + ", ".join(f"{r['invocation']} {r['block_size'] or r['operation']}"
                                     f" cv {r['cv']:.1%}" for r in noisy[:4]))

    # -- the session: journal, resume, isolation of failures -------------------
    def _open_session(self, variants: list[Variant], suite: Suite, cpu_name: str,
                      profile_name: str, rounds: int, *, fresh: bool) -> Journal:
        # in a lab the other engines write their CPUs' folders meanwhile: only ours
        for path in self.tree.recover(cpu_name if self.tree.shared else None):
            log.warn(f"{path}: left half-written by an interrupted bench; marked "
                     "'interrupted' (raw output kept, not counted)")
        orphans = self.backend.remove_containers({TREE_LABEL: self._tree_id()})
        if orphans:
            log.warn(f"removed {len(orphans)} container(s) an interrupted bench left running "
                     f"({', '.join(orphans)})")
        journal = self.tree.journal("bench", {
            "cpu": cpu_name, "profile": profile_name, "suite": as_jsonable(suite),
            "variants": sorted(v.id for v in variants), "rounds": rounds,
        }, fresh=fresh)
        self.session = journal.id
        if journal.resumed:
            log.info(f"resuming the interrupted bench session {journal.id} (started "
                     f"{journal.data.get('started')}): cells it finished are kept and not "
                     "measured again (--fresh measures everything again)")
        return journal

    def _close_session(self, journal: Journal, outcomes: list[CellOutcome], *,
                       keep_open: bool) -> None:
        unfinished = list(dict.fromkeys(o.variant for o in outcomes
                                        if o.status not in FINISHED))
        if not unfinished:
            if keep_open:
                self.finished_sessions.append(journal)
            else:
                journal.close("finished")
            return
        # a variant that is not built was reported with the command that builds it
        failed = [v for v in unfinished if not any(o.unbuilt for o in outcomes
                                                   if o.variant == v)]
        if failed:
            log.warn(f"{len(failed)} cell(s) did not finish ({', '.join(failed)}): "
                     "rerunning the same command measures only those (--fresh starts over)")

    def close_sessions(self) -> None:
        """Close the finished sessions ``bench(keep_open=True)`` left open."""
        for journal in self.finished_sessions:
            journal.close("finished")
        self.finished_sessions.clear()


    def _tree_id(self) -> str:
        return str(self.tree.root.resolve())

    def finished_runs(self, session: str, cpu_name: str, variant: str, suite: str,
                      tag: str, round_no: int = 1) -> list[RunRef]:
        """Run folders of a cell (one round of a variant) that ``session`` finished with
        image ``tag``."""
        return [RunRef(r.cpu, r.variant, r.suite, r.run, r.path)
                for r in self.tree.finished_runs(cpu=cpu_name, variant=variant, suite=suite,
                                                 figures=False)
                if r.meta.session == session and r.meta.image_tag == tag
                and r.meta.round_no == round_no]

    def _run_cell(self, journal: Journal, cell: BenchCell) -> CellOutcome:
        """Run one cell unless this session finished it; a failure fails only this cell."""
        v, round_no, suite, tag, cpu_name = (cell.variant, cell.round, cell.suite, cell.tag,
                                             cell.ctx.cpu_name)
        name = cell.name
        done = self.finished_runs(journal.id, cpu_name, v.id, suite.name, tag, round_no)
        if done:
            ref = done[0]
            log.info(f"  {name}: finished earlier in this session ({ref.path}): kept, "
                     "not measured again")
            entry = journal.cell(name)
            if entry is None or entry.get("status") not in FINISHED:
                journal.record(name, str(ref.meta.get("status")), image=tag,
                               run_dir=str(ref.path.relative_to(self.tree.root)))
            return outcome_from(v.id, ref)
        journal.record(name, "running", image=tag)
        try:
            settled = self._settle()
            if settled is not None and not settled["quiet"]:
                log.warn(f"  {name}: the host did not settle in {self.settle:.0f}s "
                         f"({settled['last']}); measuring, the accounting will tell")
            outcome = cell.run(settled)
        except (FatalError, KeyboardInterrupt) as exc:
            left = self.tree.recover(cpu_name, v.id, suite.name,
                                     reason=f"stopped: {type(exc).__name__}: {exc}")
            if isinstance(exc, (DockerUnavailable, KeyboardInterrupt)):
                journal.record(name, "interrupted", image=tag, error=str(exc))
                raise
            log.error(f"{v.id}: {exc}")
            outcome = CellOutcome(v.id, "failed", run_dir=str(left[0]) if left else None,
                                  error=str(exc), round=round_no)
        except Exception as exc:  # a bug: keep its traceback, let the other cells go on
            left = self.tree.recover(cpu_name, v.id, suite.name,
                                     reason=f"internal error: {type(exc).__name__}: {exc}")
            log_path = self.tree.write_error_log(left[0], traceback.format_exc()) if left \
                else self.tree.write_session_error_log(journal, v.id, traceback.format_exc())
            log.error(f"{v.id}: internal error ({type(exc).__name__}: {exc}); traceback in "
                      f"{log_path}; the other cells go on")
            outcome = CellOutcome(v.id, "failed", run_dir=str(left[0]) if left else None,
                                  error=f"internal error {type(exc).__name__}: {exc} "
                                  f"(traceback: {log_path})", round=round_no)
        journal.record(name, outcome.status, image=tag,
                       run_dir=str(Path(outcome.run_dir).relative_to(self.tree.root))
                       if outcome.run_dir else None, error=outcome.error)
        return outcome


def summarize_series(outcomes: Sequence[CellOutcome], threshold: float,
                     ) -> list[SeriesRow]:
    """Each figure over repeated runs: median and 95 % interval of its clean samples
    (``stats``), min, max and coefficient of variation; contended attempts are counted,
    never used. A figure with no clean sample keeps the status ``contended`` and the
    median of what was measured."""
    groups: dict[tuple[Any, ...], list[BenchFigure]] = {}
    for o in outcomes:
        for f in o.figures:
            key = (f.invocation, f.algorithm, f.block_size,
                   f.operation)
            groups.setdefault(key, []).append(f)
    rows: list[SeriesRow] = []
    for (invocation, algorithm, block, operation), figs in groups.items():
        unit: RateKey | Literal["bytes"] = "bytes_per_s" if block is not None else "ops_per_s"
        if any(f.get("unit") == "bytes" for f in figs):  # a library memory figure
            unit = "bytes"
        clean = [f for f in figs if f.status not in DISTURBED]
        used = clean or figs
        values = [v for f in used if isinstance(v := f.get(unit), (int, float))]
        s = spread(values, threshold)
        e = estimate(values)
        cycles_key: Literal["cycles_per_byte", "cycles_per_op"] = \
            "cycles_per_byte" if block is not None else "cycles_per_op"
        cyc = [c for f in used if isinstance(c := f.get(cycles_key), (int, float))]
        cs = spread(cyc, threshold)
        statuses = sorted({str(f.status) for f in clean}) if clean else \
            [CONTENDED]
        median, low, high = (s.median if s else None), (e.ci_low if e else None), \
            (e.ci_high if e else None)
        method, robust = CI_METHOD, robust_figure(values) if clean and block is not None \
            and unit == "bytes_per_s" else None
        if robust is not None:  # throughput: the samples within 5 % of the best (robust)
            median, low, high = robust.median, robust.ci_low, robust.ci_high
            method = robust.ci_method or CI_METHOD
        rows.append({
            "invocation": invocation, "algorithm": algorithm, "block_size": block,
            "operation": operation, "unit": unit, "samples": values,
            "n": s.n if s else 0, "clean": bool(clean), "attempts": len(figs),
            "clean_n": len(values) if clean else 0,
            "contended": len(figs) - len(clean),
            "median": median, "ci_low": low, "ci_high": high, "ci_method": method,
            "median_all": s.median if s else None,
            "best": robust.best if robust else None,
            "shared_core": robust.low if robust else 0,
            "min": s.min if s else None, "max": s.max if s else None,
            "cv": s.cv if s else None, "noisy": bool(s and s.noisy),
            "median_cycles": cs.median if cs else None,
            "statuses": statuses,
        })
    return rows
