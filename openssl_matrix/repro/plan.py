"""Reproduce, step 2: the plan - which variant and suite measures each measurement,
and the matrix document that builds and runs exactly that."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from openssl_matrix.core.errors import FatalError
from openssl_matrix.matrix.kinds import kind_of
from openssl_matrix.matrix.kinds.base import FIGURES_BLOCKS, FIGURES_HANDSHAKES, FIGURES_THREADS
from openssl_matrix.matrix.load import SUITE_KEYS
from openssl_matrix.matrix.model import Matrix, Variant, variant_id
from openssl_matrix.parse.algorithms import speed_argument
from openssl_matrix.repro.resolve import (
    Environment,
    HostFacts,
    ResolvedVersion,
    requirement_problem,
)
from openssl_matrix.repro.spec import OP_BLOCK, Measurement, ReportSpec

#: s_time's mode for each TLS operation of a measurement.
TLS_MODES = {"handshake": "new", "resume": "reuse"}

# ----------------------------------------------------------------------------------
# the plan: which variant and suite measures each measurement


@dataclass
class PlannedMeasurement:
    measurement: str
    variant: str | None = None
    version: str | None = None  # the release built
    stand_in: bool = False
    suite: str | None = None
    mask: str | None = None
    blocks: tuple[int, ...] = ()
    problem: str | None = None
    skipped: str | None = None  # why it is not measured although it could be


@dataclass
class SuiteGroup:
    name: str
    variant: str
    definition: dict[str, Any]
    measurements: list[str] = field(default_factory=list)


def needed_blocks(spec: ReportSpec) -> dict[str, tuple[int, ...]]:
    """Block sizes each measurement is needed at (from the claims that use it)."""
    out: dict[str, set[int]] = {name: set() for name in spec.measurements}
    for claim in spec.claims:
        for name in (claim.numerator, claim.denominator):
            out[name].update(spec.claim_blocks(claim))
    for name, m in spec.measurements.items():
        if not out[name]:
            out[name].update(m.reference or {OP_BLOCK if m.operation else 8192: 0.0})
    return {k: tuple(sorted(v)) for k, v in out.items()}


def mask_name(ia32cap: str | None, disable: Sequence[str] = ()) -> str:
    if disable:
        return "off-" + "-".join(disable)
    if ia32cap is None:
        return "native"
    text = ia32cap.lower().replace("~", "not-").replace(":", "-w2-")
    return "cap-" + "".join(ch if ch.isalnum() else "-" for ch in text).strip("-")


def mask_definition(m: Measurement) -> dict[str, Any]:
    """The suite mask that reproduces a measurement's masking."""
    name = mask_name(m.ia32cap, m.disable)
    if m.disable:
        return {"name": name, "disable": list(m.disable)}
    if m.ia32cap is not None:
        return {"name": name, "ia32cap": m.ia32cap}
    return {"name": name}


def suite_supports(key: str) -> bool:
    return key in SUITE_KEYS


Plan = tuple[dict[str, PlannedMeasurement], dict[str, SuiteGroup], dict[str, dict[str, Any]]]

#: What measurements share a suite: variant, -evp, engine, -decrypt, kind.
GroupKey = tuple[str, bool, str | None, bool, str]


def plan(spec: ReportSpec, resolved: Mapping[str, ResolvedVersion], facts: HostFacts,
         cpu_dir: str | None = None, judged: set[str] | None = None) -> Plan:
    """Decide variant, suite and mask per measurement, or why it cannot be measured.

    ``cpu_dir``: the CPU profile (results folder) measured for; a measurement only claims
    comparing two machines use is measured only for its own machine's profile.
    ``judged``: the measurements the claims that can be judged here use (from
    ``canjudge.judgeable``); the others are not measured.
    Returns (planned per measurement, suite groups by name, variant cells by id).
    """
    blocks = needed_blocks(spec)
    planned: dict[str, PlannedMeasurement] = {}
    cells: dict[str, dict[str, Any]] = {}
    grouped: dict[GroupKey, list[str]] = {}
    wanted = spec.wanted()
    for name, m in spec.measurements.items():
        p = PlannedMeasurement(name, blocks=blocks[name])
        planned[name] = p
        found = _plan_measurement(spec, p, resolved, facts, cpu_dir, judged, wanted)
        if found is None:
            continue
        vid, cell = found
        cells[vid] = cell
        grouped.setdefault((vid, m.evp, m.engine, m.decrypt, m.kind), []).append(name)
    return planned, _suite_groups(spec, planned, grouped), cells


def _plan_measurement(spec: ReportSpec, p: PlannedMeasurement,
                      resolved: Mapping[str, ResolvedVersion], facts: HostFacts,
                      cpu_dir: str | None, judged: set[str] | None,
                      wanted: Collection[str]) -> tuple[str, dict[str, Any]] | None:
    """Fill in one measurement's plan: its variant and mask, and the variant's cell to
    build (returned with its id); or why it is skipped or cannot be measured (None)."""
    name = p.measurement
    m = spec.measurements[name]
    if name not in wanted:
        p.skipped = ("no claim compares it (name it in measure.rows to measure it "
                     "anyway)")
        return None
    if judged is not None and name not in judged and not any(
            name == r or m.table == r for r in spec.measure.rows):
        p.skipped = "only claims that cannot be judged here compare it"
        return None
    build = spec.builds[m.build]
    rv = resolved[build.version]
    if rv.release is None:
        p.problem = rv.problem
        return None
    p.version, p.stand_in = rv.release, rv.stand_in
    p.skipped = _stand_in_refused(spec, name, build.version, rv)
    if p.skipped:
        return None
    problems = _measurement_problems(spec, m, facts)
    if problems:
        p.problem = "; ".join(problems)
        return None
    vid = variant_id(rv.release, "asm" if build.asm else "no-asm", build.arch, "default",
                     build.configure)
    elsewhere = _other_machines_profile(spec, name, cpu_dir)
    mask = "default" if m.operation else mask_name(m.ia32cap, m.disable)
    if elsewhere:  # the variant and mask are kept: its results are looked up there
        p.variant, p.mask = vid, mask
        p.skipped = (f"only claims comparing two machines use it: it is measured for "
                     f"its machine's profile (`invoke matrix reproduce {spec.id} "
                     f"--cpu={elsewhere}`)")
        return None
    p.variant = vid
    p.mask = mask
    return vid, {"version": rv.release, "asm": "asm" if build.asm else "no-asm",
                 "arch": build.arch, "configure": list(build.configure)}


def _stand_in_refused(spec: ReportSpec, name: str, version: str,
                      rv: ResolvedVersion) -> str | None:
    """Why a measurement is not measured on the stand-in its version has here, if it or
    every claim that compares it refuses it; else None."""
    m = spec.measurements[name]
    if rv.stand_in and not m.stand_in:
        return (f"it refuses stand-ins (stand_in: false) and {version} stands "
                f"in as {rv.release} here")
    users = [c for c in spec.claims if name in (c.numerator, c.denominator)]
    if rv.stand_in and users and not any(c.stand_in for c in users) and \
            not any(name == r or m.table == r for r in spec.measure.rows):
        return (f"the claims that compare it are about {version} itself and "
                f"refuse the stand-in {rv.release}")
    return None


def _measurement_problems(spec: ReportSpec, m: Measurement, facts: HostFacts) -> list[str]:
    """Why this host or this openssl-matrix cannot measure a measurement (none: it can)."""
    problems = [x for x in (requirement_problem(n, facts)
                            for n in spec.measurement_needs(m)) if x]
    if m.engine and not suite_supports("engine"):
        problems.append(f"needs `openssl speed -engine {m.engine}`, which this "
                        "openssl-matrix cannot run yet (suites have no 'engine' key)")
    if m.decrypt and not suite_supports("decrypt"):
        problems.append("needs `openssl speed -decrypt`, which this openssl-matrix "
                        "cannot run yet (suites have no 'decrypt' key)")
    cpus = facts.cpu.logical_cpus or 0
    if m.suite_kind.figures == FIGURES_THREADS and cpus and m.threads > cpus:
        problems.append(f"needs {m.threads} threads each on its own CPU, and this host "
                        f"has {cpus}: more threads than CPUs measure time-slicing, not "
                        "the contention between threads the claim is about")
    return problems


def _suite_groups(spec: ReportSpec, planned: Mapping[str, PlannedMeasurement],
                  grouped: Mapping[GroupKey, list[str]]) -> dict[str, SuiteGroup]:
    """One suite per group of measurements, named by a digest of its definition; each
    planned measurement is told its suite's name."""
    groups: dict[str, SuiteGroup] = {}
    for (vid, evp, engine, decrypt, kind), names in grouped.items():
        definition = _suite_definition(spec, planned, names, evp, kind)
        if engine:
            definition["engine"] = engine
        if decrypt:
            definition["decrypt"] = True
        digest = hashlib.sha256(json.dumps({k: v for k, v in definition.items()
                                            if k != "description"}, sort_keys=True)
                                .encode()).hexdigest()[:10]
        sname = f"repro-{digest}"
        group = groups.setdefault(sname + "@" + vid, SuiteGroup(sname, vid, definition))
        group.measurements.extend(names)
        for n in names:
            planned[n].suite = sname
    return groups


def _suite_definition(spec: ReportSpec, planned: Mapping[str, PlannedMeasurement],
                      names: Sequence[str], evp: bool, kind: str) -> dict[str, Any]:
    """The suite that measures a group's measurements: speed (with its masks and, if one,
    its block size), library, tls or pkey."""
    figures = kind_of(kind).figures
    pk = figures != FIGURES_BLOCKS
    algorithms: list[str] = []
    masks: dict[str, dict[str, Any]] = {}
    sizes: set[int] = set()
    for n in names:
        m = spec.measurements[n]
        word = m.algorithm if pk else speed_argument(m.algorithm, evp)
        if word not in algorithms:
            algorithms.append(word)
        mdef = mask_definition(m)
        masks[mdef["name"]] = mdef
        sizes.update(planned[n].blocks)
    definition: dict[str, Any] = {
        "description": f"reproduce {spec.id}: " + ", ".join(names),
        "algorithms": algorithms, "evp": evp, "seconds": spec.measure.seconds,
        "masks": sorted(masks.values(), key=lambda d: (d["name"] != "native", d["name"])),
    }
    if figures == FIGURES_THREADS:  # the harness: its operations at the threads named
        ms = [spec.measurements[n] for n in names]
        definition = {"description": definition["description"], "kind": kind,
                      "algorithms": algorithms,
                      "threads": sorted({t for x in ms
                                         for t in x.thread_counts or (x.threads,)}),
                      "seconds": spec.measure.seconds}
    elif figures == FIGURES_HANDSHAKES:  # a tls suite of the keys, protocols, pinnings
        ms = [spec.measurements[n] for n in names]
        definition = {"description": definition["description"], "kind": kind,
                      "algorithms": algorithms,
                      "protocols": sorted({str(x.protocol) for x in ms}),
                      "modes": sorted({TLS_MODES[str(x.operation)] for x in ms}),
                      "pinning": sorted({x.pinning for x in ms}),
                      "seconds": spec.measure.seconds}
    elif pk:  # public-key figures: a pkey suite (no path, masks or block sizes)
        definition = {"description": definition["description"], "kind": kind,
                      "algorithms": algorithms, "seconds": spec.measure.seconds}
    elif len(sizes) == 1:
        definition["bytes"] = next(iter(sizes))
    return definition


def _other_machines_profile(spec: ReportSpec, name: str, cpu_dir: str | None) -> str | None:
    """The profile a measurement is for, when only two-machine claims use it and this run
    is for another profile; else None."""
    m = spec.measurements[name]
    profile = spec.machines[m.machine].profile
    if cpu_dir is None or profile is None or profile == cpu_dir:
        return None
    users = [c for c in spec.claims if name in (c.numerator, c.denominator)]
    if not users or any(spec.measurements[c.numerator].machine ==
                        spec.measurements[c.denominator].machine for c in users):
        return None
    if any(name == r or m.table == r for r in spec.measure.rows):
        return None
    return profile


def generated_matrix(spec: ReportSpec, env: Environment,
                     resolved: Mapping[str, ResolvedVersion],
                     cells: Mapping[str, Mapping[str, Any]],
                     groups: Mapping[str, SuiteGroup]) -> dict[str, Any]:
    """A matrix document that declares exactly what the reproduction builds and runs."""
    versions: dict[str, Any] = {}
    for rv in resolved.values():
        if rv.release is None or rv.release in versions:
            continue
        entry = dict(env.versions.get(rv.release) or {})
        entry["sha256"] = rv.sha256
        entry["urls"] = list(rv.urls)
        versions[rv.release] = entry
    plain = [c for c in cells.values() if not c["configure"]]
    asm_axis = sorted({c["asm"] for c in plain}) or ["asm"]
    arch_axis = sorted({c["arch"] for c in plain}) or ["x86_64"]
    include = [{"version": c["version"], "asm": c["asm"], "arch": c["arch"],
                "configure": list(c["configure"])} for c in cells.values() if c["configure"]]
    suites = {g.name: g.definition for g in groups.values()}
    doc: dict[str, Any] = {
        "schema": 1,
        "defaults": dict(env.defaults),
        "versions": versions,
        "axes": {"asm": asm_axis, "arch": arch_axis},
        "suites": suites,
        "default_suite": next(iter(suites)),
    }
    if include:
        doc["include"] = include
    if env.profiles:
        doc["profiles"] = dict(env.profiles)
    if env.sources_dirs:
        doc["sources_dirs"] = [str(p.resolve()) for p in env.sources_dirs]
    return doc



def find_variant(m: Matrix, cell: Mapping[str, Any]) -> Variant:
    """The variant of the generated matrix that builds ``cell`` (matched by what it is,
    not by its id, so the matrix may name variants as it likes)."""
    extra = tuple(cell["configure"])
    found = [v for v in m.variants
             if v.version.version == cell["version"] and v.asm == (cell["asm"] == "asm")
             and v.arch == cell["arch"] and v.march is None
             and (not extra or v.configure[-len(extra):] == extra)]
    if not found:
        raise FatalError(f"{m.path}: no variant builds {cell}: this is a bug in reproduce",
                         hint="please report it with the spec you ran")
    return min(found, key=lambda v: len(v.configure))



