"""``invoke matrix reproduce REPORT --check``: everything that can be known about a
reproduction without Docker and without measuring.

1. the spec loads (``reportspec.load_spec`` validated it before this runs);
2. the report's own figures against its claims: each claim's ratio from the report's
   figures, whether it meets the claim as transcribed (else the transcription is wrong),
   and for a claim that depends on the CPU whether the CPU model explains it; for a claim
   comparing two machines, the two CPU profiles it needs;
3. the versions, resolved from the cache and ``sources_dirs`` only (no download), with
   the stand-in that would be built when the original cannot be had;
4. per claim, whether it can be judged here (or on the profiles given with ``--cpu``)
   and if not exactly what is missing (``canjudge``), with "N of M claims can be judged";
5. the plan, for the claims that can be judged only: the variants to build, the speed
   suites and what each measures, and about how long the builds and runs take, per
   profile given. The machine is read from this host's ``/proc/cpuinfo`` (the Docker
   engine's host, when it is another machine, may differ).
"""

from __future__ import annotations

import platform
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.core.names import clip
from openssl_matrix.core.version import Version, VersionError
from openssl_matrix.matrix.kinds import kind_of
from openssl_matrix.measure.cpumodel import (
    MODEL_MIN_BLOCK,
    Core,
    agrees,
    core_of_cpu,
    path_cost,
    predicted_ratio,
)
from openssl_matrix.measure.hostinfo import CpuInfo, parse_cpuinfo
from openssl_matrix.measure.interleave import WINDOW_MS
from openssl_matrix.repro.canjudge import (
    HERE,
    closest_profile,
    judgeable,
    judged_measurements,
    summary,
)
from openssl_matrix.repro.judge import (
    machine_profiles,
    model_on_their_cpu,
    passes,
    two_machines,
)
from openssl_matrix.repro.ourcycles import masked_capabilities
from openssl_matrix.repro.pairs import RUN_OVERHEAD_SECONDS as PAIR_OVERHEAD_SECONDS
from openssl_matrix.repro.pairs import SECONDS as PAIR_SECONDS
from openssl_matrix.repro.pairs import claim_pairs
from openssl_matrix.repro.plan import PlannedMeasurement, plan
from openssl_matrix.repro.profileclaim import check_line
from openssl_matrix.repro.resolve import (
    Environment,
    HostFacts,
    probe_af_alg,
    probe_dev_crypto,
    resolve_versions,
)
from openssl_matrix.repro.spec import OP_BLOCK, BuildSpec, Claim, ReportSpec
from openssl_matrix.repro.unknowns import assumption_text, with_twins
from openssl_matrix.repro.verdicts import version_lines
from openssl_matrix.results import records

#: Rough costs for the estimate: a build of one variant on this project's 2-core machine
#: (README: four variants in 6.5 minutes) and the start of one ``openssl speed`` container.
BUILD_SECONDS = 100
RUN_OVERHEAD_SECONDS = 1.5
#: Block sizes ``openssl speed`` runs without ``-bytes`` (1.1.1 and 3.x: 16 ... 16384).
DEFAULT_SIZES = 6


@dataclass
class CheckReport:
    spec: ReportSpec
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # the report contradicts its claims
    #: entries of the spec nothing uses (a version no build uses, a build no measurement
    #: uses): likely slips of transcription, not contradictions
    warnings: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def local_facts() -> HostFacts:
    """This host as /proc/cpuinfo shows it, without Docker."""
    try:
        cpu = parse_cpuinfo(Path("/proc/cpuinfo").read_text(encoding="utf-8"))
    except OSError:
        cpu = CpuInfo("unknown", "unknown", (), None, 0)
    uname = " ".join((platform.system(), platform.release(), platform.machine()))
    return HostFacts(cpu, {"uname": uname}, probe_af_alg(True), probe_dev_crypto(True))


def _run_line(d: Mapping[str, Any]) -> tuple[str, int]:
    """What a planned suite runs, in words, and how many timed runs that is (its kind's
    words)."""
    return kind_of(d.get("kind")).run_line(d)


def check(spec: ReportSpec, env: Environment, results: Path,
          facts: HostFacts | None = None, profiles: tuple[str, ...] = ()) -> CheckReport:
    """``profiles``: the ``--cpu`` names the reproduction will run on (empty: here)."""
    given = tuple(profiles) or (HERE,)
    for name in given:
        if name != HERE and name not in env.profiles:
            raise ConfigError(f"--cpu={name}: no CPU profile of that name in "
                              f"{env.matrix_path or 'the matrix'}"
                              + closest_profile(name, list(env.profiles)),
                              hint="profiles are declared under 'profiles' in the matrix "
                                   "(docs/matrix.md#profilesname)")
    rep = CheckReport(spec)
    out = rep.lines
    out.append(f"Check of {spec.id}: {spec.title}")
    out.append(f"  spec: {spec.path} loads ({len(spec.measurements)} measurement(s), "
               f"{len(spec.claims)} claim(s))")
    facts = facts or local_facts()
    here = core_of_cpu(facts.cpu.vendor, facts.cpu.family, facts.cpu.model_number,
                       facts.cpu.model)
    out += ["", "The report's own figures against its claims"]
    for claim in spec.claims:
        out += _claim_lines(spec, claim, env, rep.problems, here)
    resolved = resolve_versions(spec, env, offline=True)
    out += ["", "Versions (from the cache and sources_dirs; nothing is downloaded here)"]
    out += version_lines(resolved, indent="  ")
    plans = judgeable(spec, resolved, env, facts, given)
    where = "here" if given == (HERE,) else "on " + ", ".join(given)
    out += ["", f"Claims that can be judged {where}"]
    out += [p.line() for p in plans]
    for p in plans:
        rep.problems += [f"claim {p.claim}: {m.text}" for m in p.missing
                         if m.kind == "no-profile" and "is not in the matrix" in m.text]
    out.append("  " + summary(plans, given))
    # a method the report leaves open is planned both ways (evp: unknown, unknowns.py)
    full, twins = with_twins(spec)
    judged = judged_measurements(full, plans + [p for p in judgeable(
        full, resolved, env, facts, given) if p.claim in twins])
    for profile in given:
        cpu_dir = facts.cpu.slug() if profile == HERE else profile
        out += _plan_lines(full, resolved, facts, cpu_dir, judged, results, profile, env)
    unused, releases = unused_entries(spec), other_releases(spec)
    itself = same_measurement_claims(spec)
    rep.warnings = unused + releases + itself
    out += ["", "Summary: " + summary(plans, given) + "; "
            + ("the report's figures meet every claim as transcribed" if not rep.problems else
               f"{len(rep.problems)} problem(s) in the spec: check it")
            + (f"; {len(unused)} unused entr{'y' if len(unused) == 1 else 'ies'}"
               if unused else "")
            + (f"; {len(releases)} build(s) naming another release than their version"
               if releases else "")
            + (f"; {len(itself)} claim(s) comparing a build with itself" if itself else "")]
    out += [f"  warning: {p}" for p in rep.problems + rep.warnings]
    return rep


def unused_entries(spec: ReportSpec) -> list[str]:
    """A version no build uses and a build no measurement uses, each with what to do: such
    an entry is usually a slip (the version a report's text names, beside the one its
    build printed), and nothing would ever measure it."""
    out: list[str] = []
    used_versions = sorted({b.version for b in spec.builds.values()})
    # an entry that only gives a stand-in's checksum or urls is used by that stand-in
    stand_ins = {spec.versions[v].stand_in for v in used_versions if v in spec.versions}
    for name in spec.versions:
        if name not in used_versions and name not in stand_ins:
            out.append(f"versions.{name}: no build uses it (the builds use "
                       f"{', '.join(used_versions)}): delete it, or name it in a build's "
                       f"version. Where the report's text says {name} but its output "
                       "printed another version, the output is what ran: keep that one "
                       "and say so in the spec's notes")
    used_builds = {m.build for m in spec.measurements.values()}
    for name in spec.builds:
        if name not in used_builds:
            out.append(f"builds.{name}: no measurement uses it: delete it, or name it in "
                       "a measurement's build")
    return out


#: What makes two measurements of one build on one machine measure different things
#: (``elapsed``: the report's time basis, which its own figures show even where ours
#: cannot: freebsd-cryptodev-elapsed's user-time claim).
_HOW = ("algorithm", "evp", "ia32cap", "engine", "decrypt", "disable", "operation",
        "protocol", "pinning", "threads", "thread_counts", "elapsed")


def same_measurement_claims(spec: ReportSpec) -> list[str]:
    """A claim whose two sides are one build measured the same way on one machine: here
    both sides would measure one thing (a ratio of 1, whatever the report printed). A
    draft gives two runs of one version and header one build: a baseline and a patched
    build of the same snapshot land there."""
    out: list[str] = []
    for i, claim in enumerate(spec.claims):
        a, b = spec.measurements[claim.numerator], spec.measurements[claim.denominator]
        ba, bb = spec.builds[a.build], spec.builds[b.build]
        if a.machine != b.machine or _built(ba) != _built(bb) or any(
                getattr(a, k) != getattr(b, k) for k in _HOW):
            continue
        if a.build == b.build:
            out.append(f"claims[{i}] ({claim.id}) compares {a.name} with {b.name}: the same "
                       f"build ({a.build}) measured the same way, so here both sides would "
                       f"measure one thing. If the report's two runs were two builds (a "
                       f"patch, another commit, other options), give {a.name} a build of its "
                       f"own under builds; if one run differed in a setting (a mask, "
                       f"-decrypt, an engine), write it in that measurement (disable:, "
                       f"decrypt:, engine:)")
        else:
            out.append(f"claims[{i}] ({claim.id}) compares {a.name} with {b.name}: builds."
                       f"{a.build} and builds.{b.build} are built alike here (version "
                       f"{ba.version}, the same asm, arch and configure), so both sides would "
                       f"measure one thing. Write what tells them apart (configure:, asm:, "
                       f"another version); a difference a build cannot express here (a "
                       f"patch) leaves the claim for the report's own figures only: say so "
                       f"in its notes")
    return out


def _built(b: BuildSpec) -> tuple[object, ...]:
    """What a build is made of here (its name and as_reported are words)."""
    return b.version, b.asm, b.arch, b.configure


#: A release number anywhere in free text ("FreeBSD's OpenSSL (1.0.1e-freebsd, cc -O)",
#: "printed 1.1.1p."), not part of a longer number or word.
_RELEASE_IN_TEXT = re.compile(r"(?<![0-9A-Za-z.])(\d+\.\d+\.\d+[a-z]{0,2})"
                              r"(?![0-9A-Za-z]|\.\d)")


def other_releases(spec: ReportSpec) -> list[str]:
    """A build whose ``as_reported`` names a letter release of its version's series but
    not the one its version entry is (version 1.1.1t while the output printed 1.1.1p),
    naming both: the version entry is what is built here, the output is what ran."""
    out: list[str] = []
    for name, build in spec.builds.items():
        try:
            entry = Version.parse(build.version)
        except VersionError:
            continue
        named = [Version.parse(t) for t in _RELEASE_IN_TEXT.findall(build.as_reported or "")]
        series = [v for v in named if (v.major, v.minor, v.patch) ==
                  (entry.major, entry.minor, entry.patch)]
        if not series or any(v.letters == entry.letters for v in series):
            continue
        printed = ", ".join(dict.fromkeys(v.text for v in series))
        out.append(f"builds.{name}: its as_reported ({clip(build.as_reported)}) names "
                   f"release {printed}, but its version entry is {build.version}, so "
                   f"{build.version} would be built for it. Where the report's output "
                   f"printed {printed}, that is what ran: declare versions.{series[0].text} "
                   f"and write version: {series[0].text} in builds.{name}; where the "
                   f"report's text says {build.version}, keep it and say why in the spec's "
                   "notes")
    return out


def _plan_lines(spec: ReportSpec, resolved: Mapping[str, Any], facts: HostFacts,
                cpu_dir: str, judged: set[str], results: Path, profile: str,
                env: Environment) -> list[str]:
    out: list[str] = []
    planned, groups, cells = plan(spec, resolved, facts, cpu_dir, judged=judged)
    if profile == HERE:
        out += ["", f"Plan on this machine ({facts.cpu.model}, as /proc/cpuinfo shows it)"]
    else:
        prof = env.profiles.get(profile) or {}
        host = prof.get("docker_host") if isinstance(prof, Mapping) else None
        model = prof.get("model") if isinstance(prof, Mapping) else None
        out += ["", f"Plan on profile {profile} ({model or 'CPU as the profile describes it'}"
                + (f", engine {host})" if host else ", on this machine's engine)")]
    built = {vid for vid in cells if records.read_latest(results, vid) is not None}
    for vid in cells:
        out.append(f"  build {vid}" + (" (built before: reused when its image is present)"
                                       if vid in built else ""))
    seconds = BUILD_SECONDS * (len(cells) - len(built))
    repeat = spec.measure.repeat
    for g in groups.values():
        d = g.definition
        line, runs = _run_line(d)
        sizes = 1 if "bytes" in d or "kind" in d else DEFAULT_SIZES
        per = runs * (d["seconds"] * sizes + RUN_OVERHEAD_SECONDS)
        seconds += per * repeat
        out.append(f"  run {g.variant} · {line} × {repeat}: {', '.join(g.measurements)}")
    lines, extra = _interleave_lines(spec, planned, cells)
    out += lines
    seconds += extra
    for name, p in planned.items():
        if p.problem:
            out.append(f"  not measured: {name}: {p.problem}")
        elif p.skipped:
            out.append(f"  not measured: {name}: {p.skipped}")
    pair_text = f", interleaved runs {PAIR_SECONDS} s an algorithm and block size" \
        if extra else ""
    out.append(f"  about {_duration(seconds)} (builds ~{BUILD_SECONDS} s per variant "
               f"not built yet, speed runs {spec.measure.seconds} s per block size"
               f"{pair_text}; more on a busy machine)" if cells else "  nothing is planned: "
               "no claim that can be judged needs a measurement here")
    return out


def _interleave_lines(spec: ReportSpec, planned: Mapping[str, PlannedMeasurement],
                      cells: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], int]:
    """Which claims are measured again interleaved after the rounds (pairs.py) and judged
    from that ratio, which from rounds and why; and about how long the runs take."""
    versions = {vid: (str(c["version"]), str(c["arch"])) for vid, c in cells.items()}
    pairs, why = claim_pairs(spec, planned, versions)
    measured = {n for n, p in planned.items() if p.variant and not p.problem and not p.skipped}
    out: list[str] = []
    runs: set[tuple[str, str, bool, int]] = set()
    for cp in pairs.values():
        runs.update((cp.top, cp.bottom, cp.decrypt, b) for b in cp.blocks)
        where = "per operation" if cp.blocks == (OP_BLOCK,) else \
            f"at {', '.join(map(str, cp.blocks))} bytes"
        out.append(f"  interleave for {cp.claim}: {cp.top} / {cp.bottom}, {cp.algorithm}"
                   f"{' -decrypt' if cp.decrypt else ''} {where} (both sides in one "
                   f"process, alternating {WINDOW_MS}-ms windows, {PAIR_SECONDS} s each): "
                   "judged from that ratio")
    for claim, reason in why.items():
        c = next(x for x in spec.claims if x.id == claim)
        if c.numerator in measured and c.denominator in measured:
            out.append(f"  judged from rounds: {claim}: {reason}")
    return out, round(len(runs) * (PAIR_SECONDS + PAIR_OVERHEAD_SECONDS))


def _claim_lines(spec: ReportSpec, claim: Claim, env: Environment, problems: list[str],
                 here: Core | None) -> list[str]:
    assert isinstance(claim, Claim)
    depends = ("compares two machines: its size depends on their CPUs"
               if two_machines(spec, claim) else
               {"cpu": "its size depends on the CPU",
                "threads": "its size depends on the thread count and the CPUs running them"
                }.get(claim.depends_on, "a property of the code path"))
    lines = [f"  {claim.id} ({claim.expect}; {depends})"]
    method = assumption_text(spec, claim)
    if method:
        lines.append(f"      method: {method}")
    if claim.profile:
        lines.append(check_line(spec, claim))
    for block in spec.claim_blocks(claim):
        ref = spec.reference_ratio(claim, block)
        where = spec.measurements[claim.numerator].unit if block == OP_BLOCK else \
            f"{block:>6} {claim.trend_of if claim.trend is not None else 'bytes'}"
        if ref is None:
            lines.append(f"      {where}: the report prints no figure for one side")
            continue
        if claim.trend is not None:  # the claim is on the quotient of the two, below
            lines.append(f"      {where}: {ref:.2f}×")
            continue
        target = claim.ratio if claim.ratio is not None else ref
        ok = passes(claim.expect, ref, target, claim.tolerance)
        lines.append(f"      {where}: {ref:.2f}× {'meets' if ok else 'does NOT meet'}"
                     " the claim")
        if not ok:
            problems.append(f"claim {claim.id}: the report's own figures give {ref:.2f}× at "
                            f"{block} bytes, which does not meet it as transcribed")
    trend = spec.reference_trend(claim)
    if claim.trend is not None and trend is not None:
        first, last = claim.trend
        ok = passes(claim.expect, trend, claim.ratio or trend, claim.tolerance)
        lines.append(f"      trend {first} → {last} {claim.trend_of}: {trend:.2f}× (the ratio "
                     f"at {last} over the ratio at {first}) "
                     f"{'meets' if ok else 'does NOT meet'} the claim")
        if not ok:
            problems.append(f"claim {claim.id}: the report's own figures give a trend of "
                            f"{trend:.2f}× from {first} to {last} {claim.trend_of}, which "
                            "does not meet it as transcribed")
    if two_machines(spec, claim):
        wanted = machine_profiles(spec, claim)
        missing = [p for p in wanted if p is None or p not in env.profiles]
        lines.append(f"      compares two machines: judged from the results of CPU profiles "
                     f"{' and '.join(str(p) for p in wanted)}"
                     + (f" (not in the matrix: {', '.join(map(str, missing))})"
                        if missing else ""))
    if claim.depends_on == "cpu":
        model = model_on_their_cpu(spec, claim)
        if isinstance(model, str):
            lines.append(f"      CPU model: {model}")
        else:
            big = [b for b in spec.claim_blocks(claim) if b >= MODEL_MIN_BLOCK]
            refs = [r for r in (spec.reference_ratio(claim, b) for b in big) if r is not None]
            seen = refs[-1] if refs else claim.ratio
            fits = seen is not None and all(agrees(r, model.ratio) for r in refs or [seen])
            lines.append(f"      CPU model: {model.ratio:.2f}× predicted ({model.text()})"
                         + (f"; the report has {seen:.2f}×: "
                            + ("explained" if fits else "NOT explained") if seen else ""))
            mine = _here(spec, claim, here)
            if mine:
                lines.append(f"      here: {mine}")
    return lines


def _here(spec: ReportSpec, claim: Claim, here: Core | None) -> str | None:
    """What the model predicts on this machine's core (for a 1.1.1 or later build, as
    the releases and stand-ins built here are)."""
    if here is None:
        return ("the CPU model does not know this machine's CPU: judged on its direction, "
                "with the per-core constants calibrated from our runs")
    their = spec.machines[spec.measurements[claim.numerator].machine].model_core
    if their is not None and their.name == here.name:
        return f"the same core ({here.label}): judged as measured"
    costs = [path_cost(here, m.algorithm, evp=m.evp, decrypt=m.decrypt,
                       masked=masked_capabilities(m), series=(1, 1, 1),
                       asm=spec.builds[m.build].asm, engine=m.engine)
             for m in (spec.measurements[claim.numerator],
                       spec.measurements[claim.denominator])]
    model = predicted_ratio(here, costs[0], costs[1])
    if isinstance(model, str):
        return f"not testable by the model: {model}"
    return (f"the model predicts {model.ratio:.2f}× ({model.text()}); our ratio is judged "
            "on its direction and against that")


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"
