"""Reproduce a published benchmark report from its spec (``reports/<id>.yaml``).

``reproduce`` resolves the report's OpenSSL versions to sources that can be used here
(the version itself, or a declared stand-in when the original cannot be obtained),
checks what each measurement needs from the machine (AES-NI, VIA PadLock, AF_ALG ...),
builds the variants and runs the speed suites through the ordinary Builder and Bencher
(results land in the results tree like any bench run), and judges each claim: the
reference ratio against ours, since the CPUs differ. Every claim ends as one of

* ``reproduced`` - our ratio meets the claim at every block size it is judged at;
* ``not reproduced`` - it does not (the numbers are shown);
* ``not testable here`` - with the reason (a missing CPU feature, a kernel without
  AF_ALG, a source that cannot be obtained offline, a failed build ...).

Each reproduction is written to ``<results>/_reproduce/<id>/<NNNN>/`` (verdicts.json,
side-by-side.txt and a copy of the spec); nothing there is ever overwritten.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from openssl_matrix.core import log
from openssl_matrix.core.clock import now
from openssl_matrix.core.errors import DockerUnavailable, FatalError
from openssl_matrix.core.files import atomic_write
from openssl_matrix.engine.backend import Backend, RunLimits
from openssl_matrix.engine.engineinfo import EngineInfo
from openssl_matrix.engine.hostlock import HostLock, engine_key
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import matrix_from_document
from openssl_matrix.matrix.model import Matrix, Variant
from openssl_matrix.measure.cell import TREE_LABEL
from openssl_matrix.measure.cpumodel import Core, core_of_cpu, core_of_march
from openssl_matrix.measure.session import Bencher
from openssl_matrix.repro.canjudge import ClaimPlan, judgeable, judged_measurements
from openssl_matrix.repro.judge import (
    INCONCLUSIVE,
    NOT_TESTABLE,
    ClaimResult,
    Ours,
    Reproduction,
    collect,
    judge,
    machine_profiles,
    matching_runs,
    profile_runs,
    two_machines,
)
from openssl_matrix.repro.pairs import Interleaving, claim_pairs, measure_claim_pairs
from openssl_matrix.repro.plan import (
    PlannedMeasurement,
    SuiteGroup,
    find_variant,
    generated_matrix,
    plan,
)
from openssl_matrix.repro.profilerun import profile_claims
from openssl_matrix.repro.resolve import (
    Environment,
    HostFacts,
    ResolvedVersion,
    host_facts,
    resolve_versions,
)
from openssl_matrix.repro.spec import Claim, ReportSpec
from openssl_matrix.repro.unknowns import fold, with_twins
from openssl_matrix.repro.verdicts import write_reproduction
from openssl_matrix.results.tree import ResultsTree

#: Extra rounds a reproduction measures while a claim's interval straddles its band.
MAX_EXTRA_ROUNDS = 4


def reproduce(spec: ReportSpec, env: Environment, backend: Backend, tree: ResultsTree, *,
              cpu_profile: str = "auto", force: bool = False, wait: bool = False,
              engine: Mapping[str, Any] | None = None, git_commit: str | None = None,
              max_attempts: int = 0) -> Reproduction:
    """Resolve, plan, build, bench, judge; write the reproduction folder.

    ``max_attempts`` is the bench's (see ``bench.MAX_ATTEMPTS``): the command line
    re-measures contended figures as ``bench`` does; the Python API's 0 measures the
    planned rounds only."""
    started = now("seconds")
    warnings: list[str] = []
    # a method the report leaves open is measured both ways (evp: unknown, unknowns.py)
    spec, twins = with_twins(spec)
    resolved = _resolved(spec, env)
    base_image = _base_image(env, backend)
    facts = host_facts(backend, base_image, engine)
    cpu_dir = facts.cpu.slug() if cpu_profile == "auto" else cpu_profile
    # what --check says cannot be judged here is not measured, and says why (issue 27);
    # claims comparing two machines are judged from both profiles' results in the tree
    plans = {p.claim: p for p in judgeable(spec, resolved, env, facts,
                                           tuple(cpu_profile.split(",")))}
    judged = judged_measurements(spec, list(plans.values())) | {
        n for c in spec.claims if two_machines(spec, c) for n in (c.numerator, c.denominator)}
    planned, groups, cells = plan(spec, resolved, facts, cpu_dir, judged=judged)
    root = tree.repro_dir(spec.id)
    ours: dict[str, Ours] = {name: Ours() for name in spec.measurements}
    built: dict[str, tuple[Variant, str]] = {}  # variant id -> (variant, image tag)
    if cells:
        m = _matrix(spec, env, resolved, cells, groups, root)

        def bench(s: ReportSpec, sub: Mapping[str, SuiteGroup], *, force: bool) -> None:
            built.update(_build_and_bench(
                s, m, backend, tree, planned, sub, cells, cpu_profile, facts, force=force,
                wait=wait, engine=engine, git_commit=git_commit, warnings=warnings,
                ours=ours, max_attempts=max_attempts))
        bench(spec, groups, force=force)
    # the claims the pair harness can time are measured again interleaved (pairs.py)
    interleaved = _interleave(spec, planned, built, backend, tree, cpu_dir, engine,
                              force=force, wait=wait)
    here = host_core(facts, env, cpu_profile)
    profiles = profile_figures(spec, tree, planned)

    def verdicts() -> list[ClaimResult]:
        return [judge(spec, c, planned, ours, resolved, here=here, profiles=profiles,
                      interleaved=interleaved)
                if two_machines(spec, c) or plans[c.id].judgeable
                else unjudgeable(c, plans[c.id]) for c in spec.claims]

    results = verdicts()
    extra = 0
    where: dict[str, dict[str, Any]] = {}
    if cells:
        results, extra = _extra_rounds(spec, results, groups, verdicts, bench)
        # claims that ask where their ratio comes from: both sides profiled, compared
        where = profile_claims(spec, m, backend, tree, planned, dict(engine or {}),
                               warnings)
    results = fold(results, twins)
    if extra:
        warnings.append(f"{extra} extra round(s) for claims whose interval straddled their "
                        f"band (at most {MAX_EXTRA_ROUNDS})")
    warnings += _reference_warnings(results)
    rep = Reproduction(spec, resolved, planned, ours, results,
                       _host_record(facts, cpu_profile, engine, git_commit), warnings,
                       started)
    rep.where = where
    rep.ended = now("seconds")
    rep.out_dir = write_reproduction(rep, root)
    return rep


def _resolved(spec: ReportSpec, env: Environment) -> dict[str, ResolvedVersion]:
    """The spec's versions resolved to releases (a stand-in or a missing one warned of)."""
    with log.step(f"resolve the versions of {spec.id}"):
        resolved = resolve_versions(spec, env)
    for rv in resolved.values():
        if rv.release is None:
            log.warn(f"{rv.name}: {rv.problem}")
        elif rv.stand_in:
            log.warn(f"{rv.name}: using stand-in {rv.release}: {rv.problem}")
    return resolved


def _matrix(spec: ReportSpec, env: Environment, resolved: Mapping[str, ResolvedVersion],
            cells: Mapping[str, Mapping[str, Any]], groups: Mapping[str, SuiteGroup],
            root: Path) -> Matrix:
    """The matrix that builds and runs the plan, written to ``root/matrix.yaml``."""
    doc = generated_matrix(spec, env, resolved, cells, groups)
    mpath = root / "matrix.yaml"
    # written for the record (and to rerun by hand); the matrix is built from doc
    atomic_write(mpath, "# generated by `invoke matrix reproduce " + spec.id +
                 "`: what the reproduction builds and runs\n" +
                 yaml.safe_dump(doc, sort_keys=False))
    return matrix_from_document(doc, path=mpath, default_urls=default_urls)


def _base_image(env: Environment, backend: Backend) -> str:
    """The base image the CPU is read through and the builds start from; it must be in
    the engine."""
    base_image = str(env.defaults.get("base_image") or "debian:bookworm")
    if backend.image_id(base_image) is None:
        raise DockerUnavailable(
            f"base image {base_image} is not present in the Docker engine: reproduce reads "
            "the CPU through it and builds on it",
            hint="`bash .ci/setup` makes debian:bookworm from Debian's mirror; or `docker "
            f"pull {base_image}` where a registry is reachable")
    return base_image


def _extra_rounds(spec: ReportSpec, results: list[ClaimResult],
                  groups: Mapping[str, SuiteGroup],
                  verdicts: Callable[[], list[ClaimResult]],
                  bench: Callable[..., None]) -> tuple[list[ClaimResult], int]:
    """More rounds while claims are inconclusive: the verdicts after them, and how many
    extra rounds were measured."""
    extra = 0
    while extra < MAX_EXTRA_ROUNDS:
        # a claim whose paired-ratio interval straddles its band gets more rounds (of its
        # own measurements only), as bench does for wide intervals, up to a limit
        # (not a claim judged from interleaved runs only: rounds do not change it)
        open_ = [r for r in results if r.verdict == INCONCLUSIVE and r.basis != "two machines"
                 and r.ratio_basis != "interleaved"]
        names = {n for r in open_ for n in (r.claim.numerator, r.claim.denominator)}
        sub = {k: g for k, g in groups.items() if names & set(g.measurements)}
        if not sub:
            break
        extra += 1
        log.info(f"▸ {len(open_)} claim(s) straddle their band ("
                 + ", ".join(r.claim.id for r in open_)
                 + f"): extra round {extra} of at most {MAX_EXTRA_ROUNDS}")
        more = replace(spec, measure=replace(spec.measure, repeat=spec.measure.repeat + extra))
        bench(more, sub, force=False)
        results = verdicts()
    return results, extra


def _interleave(spec: ReportSpec, planned: Mapping[str, PlannedMeasurement],
                built: Mapping[str, tuple[Variant, str]], backend: Backend,
                tree: ResultsTree, cpu_dir: str, engine: Mapping[str, Any] | None, *,
                force: bool, wait: bool) -> dict[str, Interleaving]:
    """Each claim's interleaved ratios (the claims the harness can time, measured now or
    reused), and why each other claim is judged from rounds."""
    versions = {vid: (v.version.version, v.arch) for vid, (v, _) in built.items()}
    pairs, why = claim_pairs(spec, planned, versions)
    out = {c: Interleaving(why_rounds=w) for c, w in why.items()}
    if not pairs:
        return out
    session = f"repro-{spec.id}-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}"
    labels = ((TREE_LABEL, str(tree.root.resolve())), ("openssl-matrix.pid", str(os.getpid())))
    lock = HostLock(engine_key(dict(engine))) if engine and engine.get("id") else None

    def hold() -> AbstractContextManager[Any]:
        # the engine's measurement lock, waited for as the rounds' Bencher waits for it
        return lock.measuring(f"{spec.id} interleaved → {tree.root}", wait=True,
                              say=log.info) if lock is not None else nullcontext()

    tree.lock(wait=wait)
    try:
        out.update(measure_claim_pairs(
            spec, pairs, planned, built, backend, tree, cpu_dir, session=session,
            workdir=tree.repro_dir() / ".work", force=force, hold=hold,
            limits=lambda seconds: RunLimits(timeout=seconds, labels=labels)))
    finally:
        tree.unlock()
    return out


def _reference_warnings(results: Sequence[ClaimResult]) -> list[str]:
    """A warning for each block where the report's own figures miss the claim as
    transcribed (a slip in the spec, most likely)."""
    warnings = []
    for r in results:
        for b in r.blocks:
            if b.reference_passes is False:
                warnings.append(f"claim {r.claim.id}: the report's own figures give "
                                f"{b.reference:.2f}× at {b.where}, which does not meet "
                                "the claim as transcribed; check the spec")
    return warnings


def _host_record(facts: HostFacts, cpu_profile: str, engine: Mapping[str, Any] | None,
                 git_commit: str | None) -> dict[str, Any]:
    """What the reproduction records of the host it ran on."""
    return {"cpu_model": facts.cpu.model, "cpu_vendor": facts.cpu.vendor,
            "cpu_mhz": facts.cpu.mhz, "kernel": facts.extra.get("uname"),
            "af_alg": facts.af_alg[1], "dev_crypto": facts.dev_crypto[1],
            "cpu_dir": facts.cpu.slug() if cpu_profile == "auto" else cpu_profile,
            "docker": dict(engine or {}), "git_commit": git_commit}


def unjudgeable(claim: Claim, why: ClaimPlan) -> ClaimResult:
    """The verdict on a claim that cannot be judged here: not testable, with --check's
    reasons (nothing was measured for it)."""
    return ClaimResult(claim, NOT_TESTABLE, reason="; ".join(
        f"[{m.kind}] {m.text}" for m in why.missing))


def _build_and_bench(spec: ReportSpec, m: Matrix, backend: Backend, tree: ResultsTree,
                     planned: dict[str, PlannedMeasurement], groups: Mapping[str, SuiteGroup],
                     cells: Mapping[str, Any], cpu_profile: str, facts: HostFacts, *,
                     force: bool, wait: bool, engine: Mapping[str, Any] | None,
                     git_commit: str | None, warnings: list[str],
                     ours: dict[str, Ours], max_attempts: int = 0,
                     ) -> dict[str, tuple[Variant, str]]:
    """Build the variants, bench the groups' rounds, fill ``ours``; the built variants
    with their image tags."""
    variants = {key: find_variant(m, cell) for key, cell in cells.items()}
    for key, v in variants.items():  # the matrix's own ids from here on
        for p in planned.values():
            if p.variant == key:
                p.variant = v.id
        for g in groups.values():
            if g.variant == key:
                g.variant = v.id
    variants = {v.id: v for v in variants.values()}
    usable: dict[str, Variant] = {}
    for vid, v in variants.items():
        if backend.image_id(v.base_image) is None:
            _fail_variant(planned, vid, f"base image {v.base_image} is not present in the "
                          "Docker engine (`bash .ci/setup` makes debian:bookworm; for other "
                          "bases see OPENSSL_MATRIX_EXTRA_BASES there)")
        else:
            usable[vid] = v
    builder = Builder(m, backend, tree, workdir=tree.repro_dir() / ".work")
    if usable:
        with log.step(f"build {len(usable)} variant(s) for {spec.id}"):
            outcomes = builder.build(list(usable.values()))
        for o in outcomes:
            if o.status == "failed":
                first = (o.error or "").splitlines()[0] if o.error else "failed"
                _fail_variant(planned, o.variant, f"the build of {o.variant} failed: {first}"
                              + (f" (log: {o.log_path})" if o.log_path else ""))
                usable.pop(o.variant, None)
    todo = [g for g in groups.values() if g.variant in usable]
    if not todo:
        return {}
    bencher = Bencher(m, backend, tree, engine=EngineInfo.of(engine or {}), git_commit=git_commit,
                      max_attempts=max_attempts)
    cpu_dir = facts.cpu.slug() if cpu_profile == "auto" else cpu_profile
    images = {vid: bencher.image_for(v) for vid, v in usable.items()}
    suites = {s.name: s for s in m.suites}
    have = {id(g): matching_runs(tree, cpu_dir, g.variant, g.name,
                                 images[g.variant][1].get("image_id"), g.definition)
            for g in todo}
    rounds = spec.measure.repeat if force else \
        max(0, spec.measure.repeat - min(len(v) for v in have.values()))
    if rounds:
        tree.lock(wait=wait)
        try:
            for r in range(rounds):
                for g in todo:
                    if not force and len(have[id(g)]) + r >= spec.measure.repeat:
                        continue
                    log.info(f"▸ round {r + 1}/{rounds}: {g.variant} · {g.name} "
                             f"({', '.join(g.measurements)})")
                    try:
                        cells_done = bencher.bench([usable[g.variant]], suites[g.name],
                                                   cpu_profile, force=False)
                    except FatalError as exc:
                        warnings.append(f"{g.variant} {g.name}: {exc.message}")
                        continue
                    for cell in cells_done:
                        warnings.extend(f"{cell.variant}: {w}" for w in cell.warnings)
        finally:
            tree.unlock()
    else:
        log.info(f"every suite has {spec.measure.repeat} finished run(s) on the current "
                 "images: reusing them (--force measures again)")
    for g in todo:
        runs = matching_runs(tree, cpu_dir, g.variant, g.name,
                             images[g.variant][1].get("image_id"), g.definition)
        for name in g.measurements:
            ours[name] = collect(spec.measurements[name], planned[name], runs)
    return {vid: (usable[vid], images[vid][0]) for vid in {g.variant for g in todo}}



def host_core(facts: HostFacts, env: Environment, cpu_profile: str) -> Core | None:
    """The core the CPU model sees here: the named profile's ``march``, else the host's
    CPUID family and model, else its name."""
    profile = env.profiles.get(cpu_profile) if cpu_profile != "auto" else None
    if isinstance(profile, Mapping) and profile.get("march"):
        found = core_of_march(str(profile["march"]))
        if found is not None:
            return found
    cpu = facts.cpu
    return core_of_cpu(cpu.vendor, cpu.family, cpu.model_number, cpu.model)


def profile_figures(spec: ReportSpec, tree: ResultsTree,
                    planned: Mapping[str, PlannedMeasurement]) -> dict[str, Ours]:
    """For claims comparing two machines: each side's figures from the results its
    machine's CPU profile filed (any engine: the image id is not asked for)."""
    out: dict[str, Ours] = {}
    for claim in spec.claims:
        if not two_machines(spec, claim):
            continue
        for name, profile in zip((claim.numerator, claim.denominator),
                                 machine_profiles(spec, claim), strict=True):
            p = planned[name]
            if profile is None or p.variant is None or name in out:
                continue
            m = spec.measurements[name]
            out[name] = collect(m, p, profile_runs(tree, profile, p.variant, m))
    return out


def _fail_variant(planned: Mapping[str, PlannedMeasurement], vid: str, reason: str) -> None:
    for p in planned.values():
        if p.variant == vid and p.problem is None:
            p.problem = reason


