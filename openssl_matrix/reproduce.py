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

import hashlib
import json
import os
import socket
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from . import log
from .backend import Backend
from .bench import Bencher, cpu_via_container
from .build import Builder
from .errors import DockerUnavailable, FatalError, SourceError
from .hostinfo import CpuInfo
from .model import SUITE_KEYS, Matrix, Variant, load_matrix, variant_id
from .parsing import canonical_algorithm
from .report import REPRO_DIR, USABLE_STATUSES
from .reportspec import OP_BLOCK, Claim, Measurement, ReportSpec, VersionRef
from .results import ResultsTree, atomic_write, new_numbered_dir, read_json, write_json
from .sources import KNOWN_SHA256, default_urls, fetch_source_info, read_pins

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_TESTABLE = "not testable here"


# ----------------------------------------------------------------------------------
# where the user's matrix fits in


@dataclass(frozen=True)
class Environment:
    """What the user's own matrix contributes: version entries, defaults, pins, sources."""

    matrix_path: Path | None
    versions: Mapping[str, Any]
    defaults: Mapping[str, Any]
    profiles: Mapping[str, Any]
    sources_dirs: tuple[Path, ...]
    lock_file: Path | None
    mirrors: Callable[[str], list[str]] = default_urls

    @classmethod
    def from_matrix(cls, path: Path | None) -> Environment:
        """Read the user's matrix if there is one (it is optional for reproduce)."""
        if path is None or not path.is_file():
            return cls(None, {}, {}, {}, (), path.with_suffix(".lock") if path else None)
        m = load_matrix(path, default_urls=default_urls)
        raw = m.raw
        return cls(path, dict(raw.get("versions") or {}), dict(raw.get("defaults") or {}),
                   dict(raw.get("profiles") or {}), m.sources_dirs, path.with_suffix(".lock"))


@dataclass(frozen=True)
class ResolvedVersion:
    """A spec version as it will be built here (``release``), or why it cannot be."""

    name: str
    release: str | None
    stand_in: bool
    sha256: str | None
    urls: tuple[str, ...]
    origin: str | None
    problem: str | None  # why the version itself cannot be used (even if a stand-in can)


def _sha_for(version: str, ref: VersionRef | None, env: Environment) -> str | None:
    if ref is not None and ref.sha256:
        return ref.sha256
    entry = env.versions.get(version)
    if isinstance(entry, dict) and entry.get("sha256"):
        return str(entry["sha256"])
    if env.lock_file is not None:
        pinned = read_pins(env.lock_file).get(version)
        if pinned:
            return pinned
    return KNOWN_SHA256.get(version)


def _urls_for(version: str, ref: VersionRef | None, env: Environment) -> tuple[str, ...]:
    urls: list[str] = list(ref.urls) if ref is not None else []
    entry = env.versions.get(version)
    if isinstance(entry, dict):
        urls += [str(u) for u in entry.get("urls") or []]
    urls += env.mirrors(version)
    return tuple(dict.fromkeys(urls))


def _obtain(version: str, ref: VersionRef | None, env: Environment,
            ) -> tuple[str | None, tuple[str, ...], str | None, str | None]:
    """(sha256, urls, origin, problem) for one release."""
    if ref is not None and not ref.release:
        what = ref.as_reported or version
        return None, (), None, (f"{version} ({what}) was a development snapshot, not a "
                                "release: no release tarball of it exists")
    sha = _sha_for(version, ref, env)
    if sha is None:
        return None, (), None, (
            f"no sha256 is known for OpenSSL {version}, and an unverified tarball is never "
            f"built: get openssl-{version}.tar.gz from a source you trust and pin it with "
            f"`invoke matrix pin {version} --file PATH`")
    urls = _urls_for(version, ref, env)
    try:
        found = fetch_source_info(version, sha, urls, local_dirs=env.sources_dirs,
                                  lock_file=env.lock_file)
    except SourceError as exc:
        return sha, urls, None, (
            f"the source of OpenSSL {version} is not obtainable here ({_attempts(exc)}): put "
            f"openssl-{version}.tar.gz (sha256 {sha[:12]}…) into a sources_dirs folder of the "
            f"matrix, or pin it with `invoke matrix pin {version} --file PATH`")
    return sha, urls, str(found.origin), None


def _attempts(exc: SourceError) -> str:
    """The places a failed fetch tried, one short reason each."""
    import re
    import urllib.parse

    parts: list[str] = []
    for line in exc.message.splitlines()[1:]:
        line = line.strip()
        if not line.startswith("- "):
            continue
        where, _, why = line[2:].partition(": ")
        host = urllib.parse.urlparse(where).netloc or where
        earlier = re.search(r"already failed in this run \((.*)\)$", why)
        if earlier:
            why = earlier.group(1)
        why = why.split(" (")[0]
        parts.append(f"{host}: {why}" if why else where)
    return "; ".join(parts) or exc.message.splitlines()[0]


def resolve_versions(spec: ReportSpec, env: Environment) -> dict[str, ResolvedVersion]:
    """Each version of the spec, resolved to the release that will be built here."""
    out: dict[str, ResolvedVersion] = {}
    cache: dict[str, tuple[str | None, tuple[str, ...], str | None, str | None]] = {}

    def obtain(version: str, ref: VersionRef | None) -> tuple[str | None, tuple[str, ...],
                                                              str | None, str | None]:
        if version not in cache:
            cache[version] = _obtain(version, ref, env)
        return cache[version]

    for name, ref in spec.versions.items():
        sha, urls, origin, problem = obtain(name, ref)
        if problem is None:
            out[name] = ResolvedVersion(name, name, False, sha, urls, origin, None)
            continue
        if ref.stand_in is not None:
            s_sha, s_urls, s_origin, s_problem = obtain(ref.stand_in,
                                                       spec.versions.get(ref.stand_in))
            if s_problem is None:
                out[name] = ResolvedVersion(name, ref.stand_in, True, s_sha, s_urls, s_origin,
                                            problem)
                continue
            problem += f"; its stand-in {ref.stand_in} is not usable either: {s_problem}"
        out[name] = ResolvedVersion(name, None, False, None, (), None, problem)
    return out


# ----------------------------------------------------------------------------------
# what the machine can do


@dataclass(frozen=True)
class HostFacts:
    cpu: CpuInfo
    extra: Mapping[str, str]
    af_alg: tuple[bool | None, str]
    dev_crypto: tuple[bool | None, str]


def probe_af_alg(local_engine: bool) -> tuple[bool | None, str]:
    """Whether the kernel offers AF_ALG (containers share the engine host's kernel)."""
    if not local_engine:
        return None, "the Docker engine is remote, so its kernel's AF_ALG cannot be probed here"
    family = getattr(socket, "AF_ALG", None)
    if family is None:
        return False, "this Python has no AF_ALG support, so the kernel cannot be probed"
    try:
        with socket.socket(family, socket.SOCK_SEQPACKET, 0) as sock:
            sock.bind(("skcipher", "cbc(aes)"))
    except OSError as exc:
        return False, f"socket(AF_ALG) / bind skcipher cbc(aes) failed: {exc.strerror or exc}"
    return True, "socket(AF_ALG) bound skcipher cbc(aes)"


def probe_dev_crypto(local_engine: bool) -> tuple[bool | None, str]:
    if not local_engine:
        return None, "the Docker engine is remote, so its /dev/crypto cannot be checked here"
    if Path("/dev/crypto").exists():
        return True, "/dev/crypto exists"
    return False, "this host has no /dev/crypto"


def engine_is_local() -> bool:
    host = os.environ.get("DOCKER_HOST", "")
    return host == "" or host.startswith("unix://")


def requirement_problem(need: str, facts: HostFacts) -> str | None:
    """Why this machine cannot meet ``need``, or None when it can."""
    cpu = f"this CPU ({facts.cpu.model}, {facts.cpu.vendor})"
    flags = set(facts.cpu.flags)
    flag_needs = {"aes-ni": ("aes", "AES-NI"), "sha-ext": ("sha_ni", "the SHA extensions"),
                  "pclmulqdq": ("pclmulqdq", "PCLMULQDQ"), "avx": ("avx", "AVX"),
                  "avx2": ("avx2", "AVX2")}
    if need in flag_needs:
        flag, what = flag_needs[need]
        return None if flag in flags else f"needs {what}; {cpu} has no '{flag}' flag"
    if need == "padlock":
        if "ace_en" in flags:
            return None
        return (f"needs VIA PadLock (the ACE unit, CPU flag 'ace_en'); {cpu} has none")
    if need == "af_alg":
        ok, detail = facts.af_alg
        if ok:
            return None
        kernel = facts.extra.get("uname", "this kernel")
        return f"needs the kernel crypto API (AF_ALG); the kernel lacks it ({kernel}: {detail})"
    if need == "dev-crypto":
        ok, detail = facts.dev_crypto
        return None if ok else f"needs /dev/crypto (cryptodev); {detail}"
    return f"unknown requirement {need!r}"


# ----------------------------------------------------------------------------------
# the plan: which variant and suite measures each measurement


@dataclass
class Planned:
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


def plan(spec: ReportSpec, resolved: Mapping[str, ResolvedVersion], facts: HostFacts,
         ) -> tuple[dict[str, Planned], dict[str, SuiteGroup], dict[str, dict[str, Any]]]:
    """Decide variant, suite and mask per measurement, or why it cannot be measured.

    Returns (planned per measurement, suite groups by name, variant cells by id).
    """
    blocks = needed_blocks(spec)
    planned: dict[str, Planned] = {}
    cells: dict[str, dict[str, Any]] = {}
    grouped: dict[tuple[str, bool, str | None, bool, bool], list[str]] = {}
    wanted = spec.wanted()
    for name, m in spec.measurements.items():
        p = Planned(name, blocks=blocks[name])
        planned[name] = p
        if name not in wanted:
            p.skipped = ("no claim compares it (name it in measure.rows to measure it "
                         "anyway)")
            continue
        build = spec.builds[m.build]
        rv = resolved[build.version]
        if rv.release is None:
            p.problem = rv.problem
            continue
        p.version, p.stand_in = rv.release, rv.stand_in
        users = [c for c in spec.claims if name in (c.numerator, c.denominator)]
        if rv.stand_in and users and not any(c.stand_in for c in users) and \
                not any(name == r or m.table == r for r in spec.measure.rows):
            p.skipped = (f"the claims that compare it are about {build.version} itself and "
                         f"refuse the stand-in {rv.release}")
            continue
        problems = [x for x in (requirement_problem(n, facts)
                                for n in spec.measurement_needs(m)) if x]
        if m.engine and not suite_supports("engine"):
            problems.append(f"needs `openssl speed -engine {m.engine}`, which this "
                            "openssl-matrix cannot run yet (suites have no 'engine' key)")
        if m.decrypt and not suite_supports("decrypt"):
            problems.append("needs `openssl speed -decrypt`, which this openssl-matrix "
                            "cannot run yet (suites have no 'decrypt' key)")
        if problems:
            p.problem = "; ".join(problems)
            continue
        vid = variant_id(rv.release, "asm" if build.asm else "no-asm", build.arch, "default",
                         build.configure)
        cells[vid] = {"version": rv.release, "asm": "asm" if build.asm else "no-asm",
                      "arch": build.arch, "configure": list(build.configure)}
        p.variant = vid
        p.mask = "default" if m.operation else mask_name(m.ia32cap, m.disable)
        grouped.setdefault((vid, m.evp, m.engine, m.decrypt, m.operation is not None),
                           []).append(name)
    groups: dict[str, SuiteGroup] = {}
    for (vid, evp, engine, decrypt, pk), names in grouped.items():
        algorithms: list[str] = []
        masks: dict[str, dict[str, Any]] = {}
        sizes: set[int] = set()
        for n in names:
            m = spec.measurements[n]
            if m.algorithm not in algorithms:
                algorithms.append(m.algorithm)
            mdef = mask_definition(m)
            masks[mdef["name"]] = mdef
            sizes.update(planned[n].blocks)
        definition: dict[str, Any] = {
            "description": f"reproduce {spec.id}: " + ", ".join(names),
            "algorithms": algorithms, "evp": evp, "seconds": spec.measure.seconds,
            "masks": sorted(masks.values(), key=lambda d: (d["name"] != "native", d["name"])),
        }
        if pk:  # public-key figures: a pkey suite (no path, masks or block sizes)
            definition = {"description": definition["description"], "kind": "pkey",
                          "algorithms": algorithms, "seconds": spec.measure.seconds}
        elif len(sizes) == 1:
            definition["bytes"] = next(iter(sizes))
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
    return planned, groups, cells


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


# ----------------------------------------------------------------------------------
# our figures


@dataclass
class Ours:
    """Our figures for one measurement: bytes/s per block size, run by run."""

    per_run: list[tuple[str, dict[int, float]]] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    clock_ghz: float | None = None
    cpu: str | None = None
    image_id: str | None = None

    @property
    def runs(self) -> list[str]:
        return [run for run, _ in self.per_run]

    @property
    def blocks(self) -> list[int]:
        return sorted({b for _, values in self.per_run for b in values})

    def values(self, block: int) -> list[float]:
        return [values[block] for _, values in self.per_run if block in values]

    def median(self, block: int) -> float | None:
        vals = self.values(block)
        return statistics.median(vals) if vals else None

    def spread(self, block: int) -> tuple[float, float] | None:
        vals = self.values(block)
        return (min(vals), max(vals)) if vals else None


def paired_ratios(num: Ours, den: Ours, block: int) -> list[float]:
    """Ratios of figures taken together: from the same run folder, else run by run in order.

    On a shared machine the load drifts; a ratio of two figures measured seconds apart is
    steadier than a ratio of medians taken minutes apart.
    """
    a = {run: v[block] for run, v in num.per_run if block in v}
    b = {run: v[block] for run, v in den.per_run if block in v}
    common = [run for run in a if run in b]
    if common:
        return [a[run] / b[run] for run in common if b[run] > 0]
    return [x / y for x, y in zip(a.values(), b.values(), strict=False) if y > 0]


def matching_runs(tree: ResultsTree, cpu_dir: str, variant: str, suite: str,
                  image_id: str | None, definition: Mapping[str, Any]) -> list[Path]:
    """Finished runs of exactly this suite on this image, oldest first."""
    base = tree.suite_dir(cpu_dir, variant, suite)
    if not base.is_dir():
        return []
    found: list[Path] = []
    for run in sorted(p for p in base.iterdir() if p.is_dir() and p.name.isdigit()):
        meta = read_json(run / "meta.json")
        if not isinstance(meta, dict) or meta.get("status") not in ("complete", "partial"):
            continue
        if image_id is not None and meta.get("image_id") != image_id:
            continue
        s = meta.get("suite") or {}
        if list(s.get("algorithms") or []) != list(definition["algorithms"]):
            continue
        found.append(run)
    return found


def collect(measurement: Measurement, planned: Planned, runs: Sequence[Path]) -> Ours:
    ours = Ours()
    want = canonical_algorithm(measurement.algorithm)
    if measurement.operation is not None:
        from .pkey import ALGORITHMS

        want = ALGORITHMS[measurement.algorithm].figure
    for run in runs:
        figures = read_json(run / "figures.json")
        meta = read_json(run / "meta.json")
        if not isinstance(figures, list):
            continue
        values: dict[int, float] = {}
        for fig in figures:
            if fig.get("mask") != planned.mask or fig.get("algorithm") != want:
                continue
            if fig.get("operation") != measurement.operation:
                continue
            if measurement.operation is None and fig.get("direction", "encrypt") != (
                    "decrypt" if measurement.decrypt else "encrypt"):
                continue
            status = str(fig.get("status"))
            ours.statuses[status] = ours.statuses.get(status, 0) + 1
            value = fig.get("bytes_per_s")
            block = fig.get("block_size")
            if measurement.operation is not None:
                value, block = fig.get("ops_per_s"), OP_BLOCK
            if status not in USABLE_STATUSES or not isinstance(value, (int, float)) or \
                    not isinstance(block, int):
                continue
            values[block] = float(value)
        if values:
            ours.per_run.append((str(run), values))
            if isinstance(meta, dict):
                host = meta.get("host") or {}
                mhz = host.get("cpu_mhz")
                ours.clock_ghz = float(mhz) / 1000 if isinstance(mhz, (int, float)) else None
                ours.cpu = host.get("cpu_model")
                ours.image_id = meta.get("image_id")
    return ours


# ----------------------------------------------------------------------------------
# verdicts


@dataclass
class BlockJudgement:
    block: int
    reference: float | None
    ours: float | None  # median of the paired ratios
    target: float
    passed: bool | None
    reference_passes: bool | None
    ours_range: tuple[float, float] | None = None
    pairs: int = 0

    @property
    def stable(self) -> bool | None:
        """False when our slowest and fastest pair would give different verdicts."""
        if self.passed is None or self.ours_range is None or self.pairs < 2:
            return None
        return self.passed == self._passes(self.ours_range[0]) == \
            self._passes(self.ours_range[1])

    expect: str = "ratio"
    tolerance: float = 0.25

    def _passes(self, value: float) -> bool:
        return passes(self.expect, value, self.target, self.tolerance)


@dataclass
class ClaimResult:
    claim: Claim
    verdict: str
    reason: str | None = None
    blocks: list[BlockJudgement] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)  # measurement -> release used
    stand_in_note: str | None = None
    labels: dict[str, int] = field(default_factory=dict)  # figure statuses other than ok

    @property
    def unstable(self) -> list[int]:
        """Block sizes where our own spread straddles the expectation."""
        return [b.block for b in self.blocks if b.stable is False]


def passes(expect: str, value: float, target: float, tolerance: float) -> bool:
    if expect == "faster":
        return value >= 1 + tolerance
    if expect == "slower":
        return value <= 1 / (1 + tolerance)
    if expect == "same":
        return abs(value - 1) <= tolerance
    return abs(value / target - 1) <= tolerance


def expectation_text(claim: Claim, target: float) -> str:
    t = claim.tolerance
    if claim.expect == "faster":
        return f"≥ {1 + t:.2f}×"
    if claim.expect == "slower":
        return f"≤ {1 / (1 + t):.2f}×"
    if claim.expect == "same":
        return f"{1 - t:.2f}–{1 + t:.2f}×"
    return f"{target:.2f}× ±{t * 100:.0f} %"


def judge(spec: ReportSpec, claim: Claim, planned: Mapping[str, Planned],
          ours: Mapping[str, Ours], resolved: Mapping[str, ResolvedVersion]) -> ClaimResult:
    sides = (claim.numerator, claim.denominator)
    result = ClaimResult(claim, NOT_TESTABLE)
    problems: dict[str, list[str]] = {}  # reason -> the measurements it stops
    notes: list[str] = []
    for name in sides:
        p = planned[name]
        version = spec.builds[spec.measurements[name].build].version
        rv = resolved[version]
        if p.version:
            result.versions[name] = p.version
        if p.problem:
            problems.setdefault(p.problem, []).append(name)
        elif p.stand_in and not claim.stand_in:
            problems.setdefault(f"this claim is about {version} itself and accepts no "
                                f"stand-in ({rv.problem})", []).append(name)
        elif p.stand_in:
            note = f"{p.version} stands in for {version}"
            if note not in notes:
                notes.append(note)
    if problems:
        result.reason = "; ".join(text if len(problems) == 1 and len(names) == len(sides)
                                  else f"{', '.join(names)}: {text}"
                                  for text, names in problems.items())
        return result
    result.stand_in_note = "; ".join(notes) or None
    for name in sides:
        for status, n in ours[name].statuses.items():
            if status != "ok":
                result.labels[status] = result.labels.get(status, 0) + n
    for block in spec.claim_blocks(claim):
        ref = spec.reference_ratio(claim, block)
        target = claim.ratio if claim.ratio is not None else (ref if ref is not None else 1.0)
        ratios = paired_ratios(ours[claim.numerator], ours[claim.denominator], block)
        value = statistics.median(ratios) if ratios else None
        result.blocks.append(BlockJudgement(
            block, ref, value, target,
            None if value is None else passes(claim.expect, value, target, claim.tolerance),
            None if ref is None else passes(claim.expect, ref, target, claim.tolerance),
            (min(ratios), max(ratios)) if ratios else None, len(ratios), claim.expect,
            claim.tolerance))
    missing = [b.block for b in result.blocks if b.ours is None]
    if missing:
        detail = []
        for name in sides:
            o = ours[name]
            bad = {k: v for k, v in o.statuses.items() if k != "ok"}
            detail.append(f"{name}: {len(o.runs)} run(s)"
                          + (f", figures {bad}" if bad else ""))
        result.reason = (f"no usable figure at block size(s) {', '.join(map(str, missing))} "
                         f"({'; '.join(detail)}); see the raw output of the runs")
        return result
    ok = all(b.passed for b in result.blocks)
    result.verdict = REPRODUCED if ok else NOT_REPRODUCED
    return result


# ----------------------------------------------------------------------------------
# the whole thing


@dataclass
class Reproduction:
    spec: ReportSpec
    resolved: dict[str, ResolvedVersion]
    planned: dict[str, Planned]
    ours: dict[str, Ours]
    results: list[ClaimResult]
    host: dict[str, Any]
    warnings: list[str]
    started: str
    ended: str = ""
    out_dir: Path | None = None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def host_facts(backend: Backend, image: str) -> HostFacts:
    cpu, extra = cpu_via_container(backend, image)
    local = engine_is_local()
    return HostFacts(cpu, extra, probe_af_alg(local), probe_dev_crypto(local))


def reproduce(spec: ReportSpec, env: Environment, backend: Backend, tree: ResultsTree, *,
              cpu_profile: str = "auto", force: bool = False, wait: bool = False,
              engine: Mapping[str, Any] | None = None, git_commit: str | None = None,
              ) -> Reproduction:
    """Resolve, plan, build, bench, judge; write the reproduction folder."""
    started = _now()
    warnings: list[str] = []
    with log.step(f"resolve the versions of {spec.id}"):
        resolved = resolve_versions(spec, env)
    for rv in resolved.values():
        if rv.release is None:
            log.warn(f"{rv.name}: {rv.problem}")
        elif rv.stand_in:
            log.warn(f"{rv.name}: using stand-in {rv.release}: {rv.problem}")
    base_image = str(env.defaults.get("base_image") or "debian:bookworm")
    if backend.image_id(base_image) is None:
        raise DockerUnavailable(
            f"base image {base_image} is not present in the Docker engine: reproduce reads "
            "the CPU through it and builds on it",
            hint="`bash .ci/setup` makes debian:bookworm from Debian's mirror; or `docker "
            f"pull {base_image}` where a registry is reachable")
    facts = host_facts(backend, base_image)
    planned, groups, cells = plan(spec, resolved, facts)
    root = tree.root / REPRO_DIR / spec.id
    ours: dict[str, Ours] = {name: Ours() for name in spec.measurements}
    if cells:
        doc = generated_matrix(spec, env, resolved, cells, groups)
        mpath = root / "matrix.yaml"
        atomic_write(mpath, "# generated by `invoke matrix reproduce " + spec.id +
                     "`: what the reproduction builds and runs\n" +
                     yaml.safe_dump(doc, sort_keys=False))
        m = load_matrix(mpath, default_urls=default_urls)
        _build_and_bench(spec, m, backend, tree, planned, groups, cells, cpu_profile,
                         facts, force=force, wait=wait, engine=engine, git_commit=git_commit,
                         warnings=warnings, ours=ours)
    results = [judge(spec, c, planned, ours, resolved) for c in spec.claims]
    for r in results:
        for b in r.blocks:
            if b.reference_passes is False:
                warnings.append(f"claim {r.claim.id}: the report's own figures give "
                                f"{b.reference:.2f}× at {b.block} bytes, which does not meet "
                                "the claim as transcribed; check the spec")
    host = {"cpu_model": facts.cpu.model, "cpu_vendor": facts.cpu.vendor,
            "cpu_mhz": facts.cpu.mhz, "kernel": facts.extra.get("uname"),
            "af_alg": facts.af_alg[1], "dev_crypto": facts.dev_crypto[1],
            "cpu_dir": facts.cpu.slug() if cpu_profile == "auto" else cpu_profile,
            "docker": dict(engine or {}), "git_commit": git_commit}
    rep = Reproduction(spec, resolved, planned, ours, results, host, warnings, started)
    rep.ended = _now()
    rep.out_dir = write_reproduction(rep, root)
    return rep


def _build_and_bench(spec: ReportSpec, m: Matrix, backend: Backend, tree: ResultsTree,
                     planned: dict[str, Planned], groups: Mapping[str, SuiteGroup],
                     cells: Mapping[str, Any], cpu_profile: str, facts: HostFacts, *,
                     force: bool, wait: bool, engine: Mapping[str, Any] | None,
                     git_commit: str | None, warnings: list[str],
                     ours: dict[str, Ours]) -> None:
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
    builder = Builder(m, backend, tree, workdir=tree.root / REPRO_DIR / ".work")
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
        return
    bencher = Bencher(m, backend, tree, engine=dict(engine or {}), git_commit=git_commit)
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


def _fail_variant(planned: Mapping[str, Planned], vid: str, reason: str) -> None:
    for p in planned.values():
        if p.variant == vid and p.problem is None:
            p.problem = reason


# ----------------------------------------------------------------------------------
# output


def _k(value: float | None) -> str:
    return "—" if value is None else f"{value / 1000:,.2f}k"


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def cycles_per_byte(clock_ghz: float | None, bytes_per_s: float | None) -> float | None:
    if not clock_ghz or not bytes_per_s:
        return None
    return clock_ghz * 1e9 / bytes_per_s


def as_json(rep: Reproduction) -> dict[str, Any]:
    spec = rep.spec
    measurements: dict[str, Any] = {}
    for name, m in spec.measurements.items():
        p = rep.planned[name]
        o = rep.ours[name]
        machine = spec.machines[m.machine]
        blocks = sorted(set(m.reference) | set(o.blocks))
        measurements[name] = {
            "build": m.build, "algorithm": m.algorithm, "evp": m.evp, "ia32cap": m.ia32cap,
            "disable": list(m.disable),
            "engine": m.engine, "decrypt": m.decrypt, "command_as_reported": m.command,
            "machine": machine.name, "version_built": p.version, "stand_in": p.stand_in,
            "variant": p.variant, "suite": p.suite, "mask": p.mask,
            "not_measured": p.skipped or p.problem,
            "runs": o.runs, "image_id": o.image_id, "statuses": o.statuses,
            "figures": [{
                "block_size": b,
                "reference_bytes_per_s": m.reference.get(b),
                "ours_median_bytes_per_s": o.median(b),
                "ours_values": o.values(b),
                "reference_cycles_per_byte": cycles_per_byte(machine.clock_ghz,
                                                             m.reference.get(b)),
                "ours_cycles_per_byte": cycles_per_byte(o.clock_ghz, o.median(b)),
            } for b in blocks],
        }
    return {
        "spec": {"id": spec.id, "title": spec.title, "path": str(spec.path),
                 "sha256": spec.digest,
                 "source": {k: getattr(spec.source, k) for k in
                            ("kind", "where", "url", "author", "date")}},
        "started": rep.started, "ended": rep.ended, "host": rep.host,
        "versions": {k: {"release_built": v.release, "stand_in": v.stand_in,
                         "sha256": v.sha256, "origin": v.origin, "problem": v.problem}
                     for k, v in rep.resolved.items()},
        "claims": [{
            "id": r.claim.id, "says": r.claim.says, "where": r.claim.where,
            "compare": [r.claim.numerator, r.claim.denominator], "expect": r.claim.expect,
            "tolerance": r.claim.tolerance, "verdict": r.verdict, "reason": r.reason,
            "stand_in": r.stand_in_note, "versions_built": r.versions,
            "unstable_at": r.unstable, "figure_labels": r.labels,
            "blocks": [{"block_size": b.block, "reference_ratio": b.reference,
                        "our_ratio": b.ours, "our_ratio_range": b.ours_range,
                        "pairs": b.pairs, "target": b.target, "passed": b.passed,
                        "stable": b.stable,
                        "reference_meets_claim": b.reference_passes} for b in r.blocks],
        } for r in rep.results],
        "measurements": measurements,
        "warnings": rep.warnings,
        "summary": summary_counts(rep),
    }


def summary_counts(rep: Reproduction) -> dict[str, int]:
    out = {REPRODUCED: 0, NOT_REPRODUCED: 0, NOT_TESTABLE: 0}
    for r in rep.results:
        out[r.verdict] += 1
    return out


def render_text(rep: Reproduction) -> str:
    spec = rep.spec
    s = spec.source
    lines = [f"Reproduction of {spec.id}: {spec.title}",
             "  source: " + ", ".join(x for x in (s.kind, s.where, s.author, s.date, s.url)
                                      if x)]
    for mach in spec.machines.values():
        clock = f" @ {mach.clock_ghz:g} GHz" if mach.clock_ghz else ""
        lines.append(f"  their machine {mach.name}: {mach.cpu}{clock}"
                     + (f", {mach.os}" if mach.os else ""))
    mhz = rep.host.get("cpu_mhz")
    lines.append(f"  our machine: {rep.host.get('cpu_model')}"
                 + (f" @ {mhz / 1000:.2f} GHz" if isinstance(mhz, (int, float)) else "")
                 + f", kernel {rep.host.get('kernel')}; results under {rep.host.get('cpu_dir')}")
    lines.append("  versions:")
    for name, rv in rep.resolved.items():
        if rv.release == name:
            lines.append(f"    {name}: built from its release tarball")
        elif rv.release:
            lines.append(f"    {name}: stand-in {rv.release} — {rv.problem}")
        else:
            lines.append(f"    {name}: not available — {rv.problem}")
    lines += ["", "Claims (ratio = first / second measurement; reference vs ours)"]
    marks = {REPRODUCED: "✓", NOT_REPRODUCED: "✕", NOT_TESTABLE: "–"}
    for r in rep.results:
        c = r.claim
        lines.append(f"  {marks[r.verdict]} [{r.verdict}] {c.id}: {c.says}"
                     + (f" ({c.where})" if c.where else ""))
        lines.append(f"      {c.numerator} / {c.denominator}, expected {c.expect}")
        if r.reason:
            lines.append(f"      reason: {r.reason}")
        if r.stand_in_note:
            lines.append(f"      stand-in: {r.stand_in_note}")
        if r.labels:
            used = {k: v for k, v in r.labels.items() if k in USABLE_STATUSES}
            left = {k: v for k, v in r.labels.items() if k not in USABLE_STATUSES}
            if used:
                lines.append("      figures used carry guard labels: "
                             + ", ".join(f"{k} ×{v}" for k, v in used.items())
                             + " (values kept; see the warnings in each run's meta.json)")
            if left:
                lines.append("      figures left out: "
                             + ", ".join(f"{k} ×{v}" for k, v in left.items()))
        if r.unstable:
            lines.append(f"      unsure: at {', '.join(map(str, r.unstable))} bytes our runs "
                         "fall on both sides of the expectation (a busy machine?); measure "
                         "again on a quiet one, or raise measure.repeat")
        if r.blocks:
            lines.append(f"      {'block':>6}  {'reference':>9}  {'ours':>8}  "
                         f"{'expected':<14} {'our runs':<18}")
            for b in r.blocks:
                mark = "" if b.passed is None else ("✓" if b.passed else "✕")
                rng = f"{b.pairs} × {b.ours_range[0]:.2f}–{b.ours_range[1]:.2f}" \
                    if b.ours_range and b.pairs > 1 else (f"{b.pairs}" if b.pairs else "")
                lines.append(f"      {b.block:>6}  {_x(b.reference):>9}  {_x(b.ours):>8}  "
                             f"{expectation_text(c, b.target):<14} {rng:<18} {mark}")
    lines += table_grids(rep)
    lines += ["", "Measurements (1000s of bytes/s, median of our runs; c/B = cycles per byte "
              "where both clocks are known)"]
    for name, m in spec.measurements.items():
        p = rep.planned[name]
        o = rep.ours[name]
        machine = spec.machines[m.machine]
        what = f"{m.algorithm}{' -evp' if m.evp else ''}" + \
            (f" ia32cap={m.ia32cap}" if m.ia32cap else "") + \
            (f" with {'+'.join(m.disable)} off" if m.disable else "") + \
            (f" -engine {m.engine}" if m.engine else "") + (" -decrypt" if m.decrypt else "")
        if m.operation is not None:
            what = f"{m.algorithm} {m.operation}"
        built = f"{p.variant}" + (" (stand-in)" if p.stand_in else "") if p.variant else \
            "not measured"
        lines.append(f"  {name}: {what} · {m.build} → {built}")
        if p.skipped:
            lines.append(f"      not measured: {p.skipped}")
        elif p.problem:
            lines.append(f"      not measured: {p.problem}")
        for size in sorted(set(m.reference) | set(o.blocks)):
            ref = m.reference.get(size)
            mine = o.median(size)
            spread = o.spread(size)
            n = len(o.values(size))
            sp = f" ({n} runs, {_k(spread[0])}–{_k(spread[1])})" if spread and n > 1 else \
                (f" ({n} run)" if n == 1 else "")
            cpb_ref = cycles_per_byte(machine.clock_ghz, ref)
            cpb_ours = cycles_per_byte(o.clock_ghz, mine)
            cpb = ""
            if cpb_ref is not None or cpb_ours is not None:
                cpb = (f"   c/B {cpb_ref:.2f}" if cpb_ref is not None else "   c/B —") + \
                    (f" vs {cpb_ours:.2f}" if cpb_ours is not None else " vs —")
            if m.operation is not None:
                ops = (f" ({n} runs, {spread[0]:,.1f}–{spread[1]:,.1f})" if spread and n > 1
                       else sp)
                lines.append(f"      {m.operation + '/s':>12}: reference "
                             f"{'—' if ref is None else f'{ref:,.1f}':>12}   ours "
                             f"{'—' if mine is None else f'{mine:,.1f}':>12}{ops}")
                continue
            lines.append(f"      {size:>6} bytes: reference {_k(ref):>16}   ours {_k(mine):>16}"
                         f"{sp}{cpb}")
        if o.runs:
            lines.append(f"      runs: {', '.join(o.runs)}")
    counts = summary_counts(rep)
    lines += ["", "Summary: " + ", ".join(f"{v} {k}" for k, v in counts.items())]
    for w in rep.warnings:
        lines.append(f"  warning: {w}")
    return "\n".join(lines) + "\n"


def table_grids(rep: Reproduction) -> list[str]:
    """The report's table rows (``algorithms:``) side by side: reference → ours."""
    spec = rep.spec
    rows: dict[str, list[Measurement]] = {}
    for m in spec.measurements.values():
        if m.table:
            rows.setdefault(m.table, []).append(m)
    if not rows:
        return []
    by_machine: dict[str, list[str]] = {}
    for row, ms in rows.items():
        by_machine.setdefault(ms[0].machine, []).append(row)
    out: list[str] = []
    for machine, names in by_machine.items():
        algs = list(dict.fromkeys(m.algorithm for n in names for m in rows[n]))
        block = next(iter(rows[names[0]][0].reference), 8192)
        width = max(len(n) for n in names)
        out += ["", f"Table rows for {spec.machines[machine].cpu} at {block} bytes "
                "(1000s of bytes/s, reference → ours; — not measured here)",
                "  " + " " * width + "  " + "  ".join(f"{a:>27}" for a in algs)]
        for n in names:
            cells = []
            for a in algs:
                cell = spec.measurements.get(f"{n}.{a}")
                if cell is None:
                    cells.append(f"{'':>27}")
                    continue
                ref = cell.reference.get(block)
                ours = rep.ours[cell.name].median(block)
                ref_text = "—" if ref is None else f"{ref / 1000:,.0f}"
                ours_text = "—" if ours is None else f"{ours / 1000:,.0f}"
                cells.append(f"{ref_text + ' → ' + ours_text:>27}")
            out.append(f"  {n:<{width}}  " + "  ".join(cells))
    return out


def write_reproduction(rep: Reproduction, root: Path) -> Path:
    out = new_numbered_dir(root)
    rep.out_dir = out
    write_json(out / "verdicts.json", as_json(rep))
    atomic_write(out / "side-by-side.txt", render_text(rep))
    try:
        atomic_write(out / "spec.yaml", rep.spec.path.read_text(encoding="utf-8"))
    except OSError as exc:
        rep.warnings.append(f"could not copy the spec: {exc}")
    return out

