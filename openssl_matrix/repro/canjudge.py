"""Which claims of a report can get a verdict here, and for the others exactly what is
missing: the plan ``reproduce --check`` judges before anything is built.

A claim gets a verdict when both its measurements can be measured where it will be run
(this machine, or the CPU profiles given with ``--cpu``) and, when its size depends on
the CPU, the CPU model can carry it from the report's CPU to ours (or the CPU is the
same). Each reason a claim cannot is a :class:`Missing` of one kind:

``no-sha256``   a version with no trusted checksum (and no usable stand-in)
``no-tarball``  a version whose tarball is not here (offline: cache and sources_dirs)
``no-release``  a development snapshot: no release tarball exists
``stand-in``    the claim, or one of its measurements, refuses the stand-in built instead
``no-profile``  a two-machine claim whose machines have no profile in the matrix, or
                whose profiles are not among those given with ``--cpu``
``cpu``         its size depends on the CPU, ours differs, and the model cannot carry it
                from the report's CPU (it does not know that CPU, or that code path);
                where the model does not know *our* core, or misses our figure, the claim
                is still judged (on the model's word on their CPU and the direction)
``needs``       the machine lacks what a measurement needs (AES-NI, AF_ALG, PadLock ...)
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from openssl_matrix.core.names import clip
from openssl_matrix.measure.cpumodel import Core, core_of_cpu, core_of_march, predicted_ratio
from openssl_matrix.repro.judge import _cost, machine_profiles, model_on_their_cpu, two_machines
from openssl_matrix.repro.resolve import (
    Environment,
    HostFacts,
    ResolvedVersion,
    requirement_problem,
)
from openssl_matrix.repro.spec import Claim, ReportSpec

KINDS = ("no-sha256", "no-tarball", "no-release", "stand-in", "no-profile", "cpu", "needs")

#: The run on this machine (no ``--cpu``, or ``--cpu=auto``).
HERE = "auto"


@dataclass(frozen=True)
class Missing:
    kind: str  # one of KINDS
    text: str


@dataclass(frozen=True)
class ClaimPlan:
    """Whether one claim can be judged where the reproduction runs, and if not why."""

    claim: str
    missing: tuple[Missing, ...]
    profiles: tuple[str, ...]  # where its measurements are measured

    @property
    def judgeable(self) -> bool:
        return not self.missing

    def line(self) -> str:
        if self.judgeable:
            where = " and ".join(self.profiles) if self.profiles != (HERE,) else "this machine"
            return f"  {self.claim}: can be judged ({where})"
        return f"  {self.claim}: cannot be judged here: " + "; ".join(
            f"[{m.kind}] {m.text}" for m in self.missing)


def closest_profile(name: str, profiles: Sequence[str]) -> str:
    """`` (closest: NAME)`` for a profile name the matrix lacks, or the defined ones."""
    close = difflib.get_close_matches(name, list(profiles), n=1)
    if close:
        return f" (closest: {close[0]})"
    return f" (the matrix has {', '.join(profiles)})" if profiles else \
        " (the matrix defines no profiles)"


def profile_core(env: Environment, name: str, facts: HostFacts) -> Core | None:
    """The core the model sees for a run on ``name`` (``auto``: this host's CPU)."""
    if name != HERE:
        p = env.profiles.get(name)
        if isinstance(p, Mapping):
            found = core_of_march(str(p.get("march") or "")) or core_of_cpu(
                str(p.get("vendor") or "") or None, None, None, str(p.get("model") or "") or None)
            if found is not None or p.get("docker_host"):
                return found
    cpu = facts.cpu
    return core_of_cpu(cpu.vendor, cpu.family, cpu.model_number, cpu.model)


def _version_missing(spec: ReportSpec, name: str, claim: Claim,
                     resolved: Mapping[str, ResolvedVersion]) -> list[Missing]:
    m = spec.measurements[name]
    version = spec.builds[m.build].version
    rv = resolved[version]
    if rv.release is None:
        problem = rv.problem or "not obtainable"
        kind = "no-release" if "development snapshot" in problem else \
            "no-sha256" if "no sha256" in problem else "no-tarball"
        return [Missing(kind, f"{name} needs OpenSSL {version}: {problem}")]
    if rv.stand_in and not claim.stand_in:
        return [Missing("stand-in", f"the claim is about {version} itself (stand_in: false) "
                        f"and {version} is not here ({rv.problem}); its stand-in "
                        f"{rv.release} is refused")]
    if rv.stand_in and not m.stand_in:
        return [Missing("stand-in", f"{name} refuses stand-ins (stand_in: false) and "
                        f"{version} is not here ({rv.problem})")]
    return []


def _versions_missing(spec: ReportSpec, names: tuple[str, str], claim: Claim,
                      resolved: Mapping[str, ResolvedVersion]) -> list[Missing]:
    """What the claim's versions lack; both sides of one version lacking the same thing
    are named in one reason, not the same sentence twice."""
    first, second = (_version_missing(spec, n, claim, resolved) for n in names)
    a, b = names
    if a != b and len(first) == len(second) == 1 and first[0].kind == second[0].kind and \
            first[0].text.startswith(f"{a} needs ") and \
            first[0].text[len(a):] == second[0].text[len(b):]:
        return [Missing(first[0].kind, f"{a} and {b} need{first[0].text[len(a) + 6:]}")]
    return first + (second if a != b else [])


def judgeable(spec: ReportSpec, resolved: Mapping[str, ResolvedVersion], env: Environment,
              facts: HostFacts, profiles: Sequence[str] = (HERE,)) -> list[ClaimPlan]:
    """One :class:`ClaimPlan` per claim, in the spec's order, for a reproduction run on
    ``profiles`` (``auto``: this machine)."""
    given = tuple(profiles) or (HERE,)
    out: list[ClaimPlan] = []
    for claim in spec.claims:
        names = (claim.numerator, claim.denominator)
        missing = _versions_missing(spec, names, claim, resolved)
        where: tuple[str, ...] = given
        if two_machines(spec, claim):
            wanted = machine_profiles(spec, claim)
            machines = [spec.measurements[n].machine for n in names]
            for mach, prof in zip(machines, wanted, strict=True):
                if prof is None:
                    missing.append(Missing("no-profile", f"it compares two machines and "
                                           f"machines.{mach} names no CPU profile (describe "
                                           "that CPU as a profile: docs/reports.md#a-cpu-the-"
                                           "report-does-not-name)"))
                elif prof not in env.profiles:
                    missing.append(Missing("no-profile", f"profile {prof!r} of machines."
                                           f"{mach} is not in the matrix"
                                           + closest_profile(prof, list(env.profiles))))
            named = [p for p in wanted if p is not None and p in env.profiles]
            if len(named) == 2 and not set(named) <= set(given):
                missing.append(Missing("no-profile", f"it compares {named[0]} with "
                                       f"{named[1]}: run with --cpu={named[0]},{named[1]}"))
            where = tuple(p for p in wanted if p is not None)
        else:
            for n in dict.fromkeys(names):
                m = spec.measurements[n]
                if all(p == HERE or not _remote(env, p) for p in given):
                    for need in spec.measurement_needs(m):
                        problem = requirement_problem(need, facts)
                        if problem:
                            missing.append(Missing("needs", f"{n} {problem}"))
            if claim.depends_on == "cpu":
                for p in given:
                    why = _model_gap(spec, claim, profile_core(env, p, facts), resolved)
                    if why:
                        missing.append(Missing("cpu", why if p == HERE else f"on {p}: {why}"))
        out.append(ClaimPlan(claim.id, tuple(dict.fromkeys(missing)), where))
    return out


def _remote(env: Environment, profile: str) -> bool:
    p = env.profiles.get(profile)
    return isinstance(p, Mapping) and bool(p.get("docker_host"))


def _model_gap(spec: ReportSpec, claim: Claim, ours: Core | None,
               resolved: Mapping[str, ResolvedVersion]) -> str | None:
    """Why the CPU model cannot carry a CPU-dependent claim from the report's CPU to
    ``ours``, or None when it can (or the core is the same)."""
    machine = spec.machines[spec.measurements[claim.numerator].machine]
    theirs = machine.model_core
    if ours is not None and theirs is not None and ours.name == theirs.name:
        return None
    their_model = model_on_their_cpu(spec, claim)
    if isinstance(their_model, str):
        ours_differ = f" (ours differs from {clip(machine.cpu)})" if machine.cpu_named else ""
        return f"its size depends on the CPU{ours_differ}, and {their_model}"
    if ours is None:  # judged on the model's word on their CPU and the direction here
        return None
    costs = []
    for n in (claim.numerator, claim.denominator):
        rv = resolved[spec.builds[spec.measurements[n].build].version]
        costs.append(_cost(spec, n, ours, rv.release or spec.builds[
            spec.measurements[n].build].version))
    predicted_ratio(ours, costs[0], costs[1])  # a miss here is the model's, not a gap
    return None


def summary(plans: Sequence[ClaimPlan], profiles: Sequence[str] = (HERE,)) -> str:
    n = sum(1 for p in plans if p.judgeable)
    where = "here" if tuple(profiles) in ((), (HERE,)) else \
        "on " + " and ".join(profiles)
    return f"{n} of {len(plans)} claims can be judged {where}"


def judged_measurements(spec: ReportSpec, plans: Sequence[ClaimPlan]) -> set[str]:
    """The measurements the judgeable claims compare (the only ones worth measuring)."""
    ok = {p.claim for p in plans if p.judgeable}
    return {n for c in spec.claims if c.id in ok for n in (c.numerator, c.denominator)}
