"""A release bisection on a Docker engine: ``bisect.py``'s ``measure`` through the Builder
and the Bencher, so every step is built and measured as ``build`` and ``bench`` do.

Each release is the matrix's variant ``<release>-<build>`` (``3.0.13-asm-x86_64`` for
the default build ``asm-x86_64``; the matrix's ``catalogue: true`` declares every
catalogue release, as opt-in variants). A release is built the first time a step needs it
(an image already built is reused by its content hash, as ``build`` does); one that does
not build is skipped with the build's first error line and its log.

A step's rounds are one ``Bencher.bench`` of the step's release and both ends of its
range, ``repeat`` rounds interleaved, of the cell's suite narrowed to the cell: its one
algorithm, its one mask and, where the suite sets one, its block size, under the suite's
name with ``-bisect`` appended (so the narrowed runs never mix with the full suite's in its
folder). Every run lands in the results tree with its provenance and session, like any
bench run; the bench's own re-measurements are off (``max_attempts`` 0): the bisection
decides when it needs more rounds. A figure the host disturbed (``contended``,
``shared-core``) is no sample.

The result is written to ``<results>/_bisect/<cell>--<good>--<bad>/<NNNN>/``
(``bisection.json``, ``summary.txt``); nothing there is overwritten.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from openssl_matrix.core import log
from openssl_matrix.core.errors import ConfigError, FatalError, SourceError
from openssl_matrix.core.files import atomic_write
from openssl_matrix.core.statuses import DISTURBED
from openssl_matrix.core.version import Version, VersionError
from openssl_matrix.engine.backend import Backend
from openssl_matrix.engine.engineinfo import EngineInfo
from openssl_matrix.images.build import Builder
from openssl_matrix.images.gitsource import Commit, commit_variant, tree_version
from openssl_matrix.matrix.model import Matrix, Suite, Variant
from openssl_matrix.measure.benchfigure import BenchFigure
from openssl_matrix.measure.cell import CellOutcome
from openssl_matrix.measure.session import Bencher
from openssl_matrix.results.records import FINISHED
from openssl_matrix.results.tree import ResultsTree
from openssl_matrix.sweep.bisect import (
    MAX_ROUNDS,
    ROUNDS,
    Bisection,
    Cell,
    Step,
    Unmeasurable,
    bisect,
    judge,
    summary,
)
from openssl_matrix.sweep.bisectpair import EnginePairs
from openssl_matrix.sweep.bisectresume import Replaying, measure_key, range_name

#: Where bisections are written in a results tree.
#: The build part of a release's variant id when ``--build`` does not say.
DEFAULT_BUILD = "asm-x86_64"


def cell_suite(m: Matrix, cell: Cell) -> Suite:
    """The cell's suite narrowed to the cell (module docstring); ConfigError saying what
    the suite has when the cell names something it does not measure."""
    suite = m.suite(cell.suite)
    if not suite.suite_kind.bisectable:
        raise ConfigError(f"suite {suite.name} is a {suite.kind} suite: bisection measures "
                          "`openssl speed` throughput cells (a speed suite) only, so far",
                          hint="docs/bisect.md says what is not done yet")
    if cell.algorithm not in suite.algorithms:
        raise ConfigError(f"suite {suite.name} does not measure {cell.algorithm}",
                          hint=f"its algorithms: {', '.join(suite.algorithms)}")
    masks = [x for x in suite.masks if x.name == cell.mask] if cell.mask else \
        list(suite.masks[:1])
    if not masks:
        raise ConfigError(f"suite {suite.name} has no mask {cell.mask}",
                          hint="its masks: " + ", ".join(x.name for x in suite.masks)
                          + " (leave the mask out for the suite's first)")
    if suite.bytes is not None and suite.bytes != cell.block:
        raise ConfigError(f"suite {suite.name} measures {suite.bytes}-byte blocks only "
                          f"(-bytes {suite.bytes}), not {cell.block}",
                          hint=f"name its block size: {cell.suite}:{cell.algorithm}:"
                          f"{suite.bytes}")
    engines = (None,) if None in suite.engines else suite.engines[:1]
    # a suite of every block size is narrowed to the cell's (-bytes, 1.1.1 on: one size
    # measured instead of six); its name says so, so its runs never mix with a
    # bisection of another size of the same suite
    name = f"{suite.name}-bisect" if suite.bytes is not None else \
        f"{suite.name}-bisect-{cell.block}"
    return replace(suite, name=name, bytes=cell.block, algorithms=(cell.algorithm,),
                   masks=tuple(masks), engines=engines, legacy=False,
                   directions=suite.directions[:1], multi=suite.multi[:1], repeat=1)


def cell_sample(figures: Sequence[BenchFigure], cell: Cell, mask: str,
                ) -> float | None:
    """The cell's bytes/s among one run's figures (None: not there, or disturbed)."""
    found = [f for f in figures
             if f.algorithm == cell.algorithm and f.block_size == cell.block
             and (f.invocation or "").split("--")[0] == mask]
    exact = [f for f in found if f.invocation == f"{mask}--{cell.algorithm}"]
    for f in exact or found[:1]:
        value = f.bytes_per_s
        if f.status in DISTURBED or not isinstance(value, (int, float)) or value <= 0:
            return None
        return float(value)
    return None


def rounds_of(outcomes: Sequence[CellOutcome], release_of: Mapping[str, str], cell: Cell,
              mask: str) -> list[dict[str, float | None]]:
    """One bench's outcomes as rounds: round number → release → sample."""
    by_round: dict[int, dict[str, float | None]] = {}
    for o in outcomes:
        if o.variant not in release_of or o.unbuilt:
            continue
        row = by_round.setdefault(o.round, {})
        row[release_of[o.variant]] = cell_sample(o.figures, cell, mask) \
            if o.status in FINISHED else None
    return [by_round[r] for r in sorted(by_round)]


class EngineMeasure:
    """``bisect.Measure`` on a Docker engine: builds what a step needs, then benches."""

    def __init__(self, m: Matrix, backend: Backend, tree: ResultsTree, cell: Cell, *,
                 build: str, cpu_profile: str, engine: Mapping[str, Any],
                 git_commit: str | None, wait: bool, compiler_cache: bool = True) -> None:
        self.m = m
        self.tree = tree
        self.cell = cell
        self.suite = cell_suite(m, cell)
        self.mask = self.suite.masks[0].name
        self.build = build
        self.cpu_profile = cpu_profile
        self.wait = wait
        # neighbouring releases share most of their sources: one compiler cache a series
        self.builder = Builder(m, backend, tree, workdir=tree.bisect_dir(".work"),
                               compiler_cache="openssl-matrix" if compiler_cache else None)
        self.bencher = Bencher(m, backend, tree, engine=EngineInfo.of(engine),
                               git_commit=git_commit, max_attempts=0)
        self.ready: dict[str, Variant] = {}
        self.broken: dict[str, str] = {}

    def variant(self, release: str) -> Variant:
        vid = f"{release}-{self.build}"
        try:
            found = [v for v in self.m.select(vid) if v.id == vid]
        except ConfigError:
            found = []
        if not found:
            raise Unmeasurable(release, f"the matrix {self.m.path} declares no variant {vid} "
                               "(catalogue: true declares every catalogue release; "
                               "`invoke matrix list --all` lists them)")
        return found[0]

    def ensure(self, release: str) -> Variant:
        """The release's variant, built (once; a failed build is remembered)."""
        if release in self.broken:
            raise Unmeasurable(release, self.broken[release])
        if release in self.ready:
            return self.ready[release]
        v = self.variant(release)
        with log.step(f"build {v.id} for the bisection"):
            outcomes = self.builder.build([v])
        for o in outcomes:
            if o.variant == v.id and o.status == "failed":
                first = (o.error or "failed").splitlines()[0]
                why = f"the build of {v.id} failed: {first}" + (
                    f" (log: {o.log_path})" if o.log_path else "")
                self.broken[release] = why
                raise Unmeasurable(release, why)
        self.ready[release] = v
        return v

    def __call__(self, releases: Sequence[str], rounds: int) -> list[dict[str, float | None]]:
        variants = [self.ensure(r) for r in releases]
        release_of = {v.id: r for v, r in zip(variants, releases, strict=True)}
        log.info(f"▸ {rounds} round(s): " + " · ".join(releases)
                 + f" ({self.cell.text()})")
        self.tree.lock(wait=self.wait)
        try:
            outcomes = self.bencher.bench(variants, self.suite, self.cpu_profile,
                                          repeat=rounds)
        finally:
            self.tree.unlock()
        for o in outcomes:
            if o.unbuilt and o.variant in release_of:
                raise Unmeasurable(release_of[o.variant], o.error or "no image on the engine")
        return rounds_of(outcomes, release_of, self.cell, self.mask)


def base_variant(m: Matrix, release: str, build: str) -> Variant:
    """The matrix's variant of ``build`` for a tree at ``release``: that release's own
    when the matrix declares it (``catalogue: true`` declares every release), else the
    newest declared release of its series: its patches, engines and base image. A
    development series no release was ever made of (master's ``1.1.2-dev`` of 2018-09,
    which became 3.0) takes the newest declared release before it of the same major
    version: the tree it grew from."""
    def series(text: str) -> str:
        v = Version.parse(text)
        return f"{v.major}.{v.minor}" if v.major >= 3 else f"{v.major}.{v.minor}.{v.patch}"

    try:
        want, mine = series(release), Version.parse(release)
    except VersionError as exc:
        raise ConfigError(str(exc)) from None
    ours = [v for v in m.all_variants or m.variants if v.id == f"{v.version.version}-{build}"]
    found = [v for v in ours if v.version.series_name == want]
    exact = [v for v in found if v.version.version == release]
    if exact or found:
        return exact[0] if exact else max(found, key=lambda v: Version.parse(v.version.version))
    older = [v for v in ours if _older_of_major(v.version.version, mine)]
    if older:
        return max(older, key=lambda v: Version.parse(v.version.version))
    raise ConfigError(f"the matrix {m.path} declares no {build} variant of the {want} "
                      f"series, nor of an older one of its major version, whose build a "
                      f"tree at {release} would take",
                      hint="declare one (catalogue: true declares every release)")


def _older_of_major(text: str, than: Version) -> bool:
    try:
        v = Version.parse(text)
    except VersionError:
        return False
    return v.major == than.major and v < than


class GitMeasure(EngineMeasure):
    """:class:`EngineMeasure` over commits of a local git tree: each "release" is a
    commit's short hash, built from its ``git archive`` (images/gitsource.py) as the
    matrix's variant of ``build`` for the tree's series."""

    def __init__(self, m: Matrix, backend: Backend, tree: ResultsTree, cell: Cell, *,
                 git: Path, commits: Mapping[str, Commit], build: str, cpu_profile: str,
                 engine: Mapping[str, Any], git_commit: str | None, wait: bool,
                 compiler_cache: bool = True) -> None:
        super().__init__(m, backend, tree, cell, build=build, cpu_profile=cpu_profile,
                         engine=engine, git_commit=git_commit, wait=wait,
                         compiler_cache=compiler_cache)
        self.git = git
        self.commits = dict(commits)
        self.archives = tree.bisect_dir(".git-archives")

    def variant(self, release: str) -> Variant:
        commit = self.commits[release]
        try:
            base = base_variant(self.m, tree_version(self.git, commit.sha), self.build)
            return commit_variant(base, self.git, commit, self.archives)
        except (SourceError, ConfigError) as exc:
            raise Unmeasurable(release, exc.message) from None


def run_step(measure: EngineMeasure, candidate: str, good: str, bad: str, *,
             interleaved: bool = True) -> Step:
    """One ``git bisect run`` call: the candidate judged against both ends
    (``bisect.judge``: interleaved pairs where the harness can time the cell, else
    rounds); an end that cannot be measured is a FatalError (the run must stop: nothing
    can be compared with it)."""
    try:
        return judge(candidate, good, bad, measure,
                     pair=EnginePairs(measure) if interleaved else None)
    except Unmeasurable as exc:
        raise FatalError(f"cannot measure {exc.release}, a reference of the step: "
                         f"{exc.reason}", hint="GOOD and BAD must build and run the cell"
                         ) from None


def run_bisection(m: Matrix, backend: Backend, tree: ResultsTree, cell: Cell,
                  releases: Sequence[str], *, build: str = DEFAULT_BUILD,
                  cpu_profile: str = "auto", engine: Mapping[str, Any] | None = None,
                  git_commit: str | None = None, wait: bool = False, rounds: int = ROUNDS,
                  max_rounds: int = MAX_ROUNDS, compiler_cache: bool = True,
                  measure: EngineMeasure | None = None, fresh: bool = False,
                  interleaved: bool = True) -> tuple[Bisection, Path]:
    """Bisect ``cell`` over ``releases`` (GOOD first) on ``backend``; write the result.
    ``measure``: how releases are built and measured (default: the matrix's releases;
    :class:`GitMeasure` for commits). What an earlier bisection of the same range,
    measured the same way, measured is replayed instead of measured again, unless
    ``fresh`` (sweep/bisectresume.py). Steps are decided from interleaved pairs where
    the pair harness can time the cell (sweep/bisectpair.py), unless not ``interleaved``."""
    engine_measure = measure if measure is not None else EngineMeasure(
        m, backend, tree, cell, build=build, cpu_profile=cpu_profile, engine=engine or {},
        git_commit=git_commit, wait=wait, compiler_cache=compiler_cache)  # checks the cell
    progress = tree.bisection_progress(range_name(cell, releases[0], releases[-1]),
                                       measure_key(build, cpu_profile, engine or {}))
    if fresh and (aside := progress.set_aside()) is not None:
        log.info(f"--fresh: the earlier measurements are set aside as {aside}")
    replaying = Replaying(engine_measure, progress,
                          EnginePairs(engine_measure) if interleaved else None)
    if replaying.recorded:
        log.info(f"resuming: {len(replaying.recorded)} measurement(s) of an earlier "
                 f"bisection of this range are replayed ({progress.path})")
    try:
        result = bisect(releases, replaying, rounds=rounds, max_rounds=max_rounds,
                        pair=replaying.pair if interleaved else None)
    except Unmeasurable as exc:  # an end: nothing can be compared with it
        raise FatalError(f"cannot measure {exc.release}, an end of the bisection: "
                         f"{exc.reason}", hint="GOOD and BAD must build and run the cell; "
                         "pick ends that do") from None
    out = write_bisection(tree, cell, result, build=build, cpu_profile=cpu_profile,
                          resumed={"replayed": replaying.replayed,
                                   "measured": replaying.measured,
                                   "progress": str(progress.path)})
    return result, out


def write_bisection(tree: ResultsTree, cell: Cell, result: Bisection, *, build: str,
                    cpu_profile: str, resumed: Mapping[str, Any] | None = None) -> Path:
    """``<results>/_bisect/<cell>--<good>--<bad>/<NNNN>/``, the next free number;
    ``resumed`` says how many measurements were replayed and how many made."""
    root = tree.bisect_dir(range_name(cell, result.good, result.bad))
    taken = [int(p.name) for p in root.glob("[0-9][0-9][0-9][0-9]") if p.is_dir()] \
        if root.is_dir() else []
    out = root / f"{max(taken, default=0) + 1:04d}"
    doc = {"schema": 1, "cell": cell.text(), "build": build, "cpu_profile": cpu_profile,
           **result.as_dict(), **({"resumed": dict(resumed)} if resumed else {})}
    atomic_write(out / "bisection.json", json.dumps(doc, indent=2) + "\n")
    atomic_write(out / "summary.txt", "\n".join(summary(result)) + "\n")
    return out

