"""Bench: run a speed suite in each variant's image and file the results.

One run of a suite on a variant is one folder ``results/<cpu>/<variant>/<suite>/<run>/``
holding, for every ``openssl speed`` invocation, the exact command, environment,
stdout and stderr (``raw/``), the parsed figures (``figures.json``) and the run's
provenance (``meta.json``). Containers run with no network, no capabilities, a
read-only root and memory/pid limits.
"""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from . import log
from .backend import Backend, RunLimits, RunResult
from .errors import (
    BenchError,
    BuildError,
    DockerUnavailable,
    FatalError,
    ParseError,
    ProfileMismatch,
)
from .hostinfo import CpuInfo, parse_cpuinfo, profile_mismatches
from .model import Mask, Matrix, Suite, Variant
from .parsing import figure_records, parse_speed
from .results import ResultsTree, atomic_write, read_json, write_json

# Ciphers and digests that OpenSSL 3.x moved to the legacy provider.
LEGACY_PROVIDER_ALGS = ("idea", "des-", "des3", "desx", "rc2", "rc4", "rc5", "bf-", "blowfish",
                        "cast", "seed", "md4", "mdc2", "whirlpool", "rmd160", "ripemd")


@dataclass(frozen=True)
class Invocation:
    """One ``openssl speed`` command of a run."""

    name: str
    mask: Mask
    algorithm: str
    command: tuple[str, ...]
    env: dict[str, str]


@dataclass
class CellOutcome:
    variant: str
    status: str  # complete | partial | failed
    run_dir: str | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def version_tuple(version: str) -> tuple[int, int, int, str]:
    parts = version.split(".")
    letters = ""
    patch = parts[2] if len(parts) > 2 else "0"
    digits = "".join(ch for ch in patch if ch.isdigit())
    letters = patch[len(digits):]
    return int(parts[0]), int(parts[1]), int(digits or 0), letters


def speed_invocations(version: str, suite: Suite) -> tuple[list[Invocation], list[str]]:
    """The ``openssl speed`` commands a suite needs on a given OpenSSL version.

    Options a version does not have are left out and reported in the notes.
    """
    notes: list[str] = []
    v = version_tuple(version)
    base = ["openssl", "speed", "-elapsed", "-mr"]
    if suite.seconds is not None:
        if v[:3] >= (1, 1, 1):
            base += ["-seconds", str(suite.seconds)]
        else:
            notes.append(f"-seconds is not in {version} (from 1.1.1); speed's default "
                         "3 s per size was used")
    if suite.bytes is not None:
        if v[:3] >= (1, 1, 1):
            base += ["-bytes", str(suite.bytes)]
        else:
            notes.append(f"-bytes is not in {version} (from 1.1.1); every block size was run")
    out: list[Invocation] = []
    for mask in suite.masks:
        env = {} if mask.ia32cap is None else {"OPENSSL_ia32cap": mask.ia32cap}
        groups: list[tuple[str, list[str]]]
        if suite.evp:
            groups = [(alg, ["-evp", alg]) for alg in suite.algorithms]
        else:
            groups = [("+".join(suite.algorithms), list(suite.algorithms))]
        for name, args in groups:
            provider: list[str] = []
            if v[0] >= 3 and any(a.startswith(LEGACY_PROVIDER_ALGS) for a in args):
                provider = ["-provider", "legacy", "-provider", "default"]
            out.append(Invocation(name=f"{mask.name}--{name}", mask=mask, algorithm=name,
                                  command=tuple(base + provider + args), env=env))
    return out, notes


def cpu_via_container(backend: Backend, image: str) -> tuple[CpuInfo, dict[str, str]]:
    """CPU and kernel as the engine's host sees them (right for remote engines too)."""
    script = ("cat /proc/cpuinfo; echo '==> uname'; uname -srm; echo '==> loadavg'; "
              "cat /proc/loadavg; echo '==> governor'; "
              "cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || "
              "echo unknown; echo '==> boost'; "
              "cat /sys/devices/system/cpu/cpufreq/boost 2>/dev/null || "
              "cat /sys/devices/system/cpu/intel_pstate/no_turbo 2>/dev/null || echo unknown")
    res = backend.run(image, ["/bin/sh", "-c", script], limits=RunLimits(timeout=60))
    if res.exit_code != 0:
        raise BenchError(f"cannot read /proc/cpuinfo in {image}: {res.stderr.strip()[:200]}")
    cpuinfo, _, rest = res.stdout.partition("==> uname")
    extra: dict[str, str] = {}
    key = "uname"
    for line in rest.splitlines():
        if line.startswith("==> "):
            key = line[4:].strip()
            continue
        if line.strip():
            extra[key] = (extra.get(key, "") + " " + line.strip()).strip()
    return parse_cpuinfo(cpuinfo), extra


class Bencher:
    def __init__(self, matrix: Matrix, backend: Backend, tree: ResultsTree, *,
                 engine: dict[str, Any], git_commit: str | None) -> None:
        self.matrix = matrix
        self.backend = backend
        self.tree = tree
        self.engine = engine
        self.git_commit = git_commit

    def image_for(self, variant: Variant) -> tuple[str, dict[str, Any]]:
        """The built image of a variant and its build record."""
        latest = read_json(self.tree.root / "_builds" / variant.id / "latest.json")
        if isinstance(latest, dict):
            record = self.tree.build_record(variant.id, str(latest["digest"]))
            if record and self.backend.image_id(str(latest["tag"])):
                return str(latest["tag"]), record
        raise BuildError(f"{variant.id} is not built (or its image was removed)",
                         hint=f"run `invoke matrix build --only {variant.id}` first")

    def resolve_cpu(self, profile_name: str, image: str, *, force: bool,
                    ) -> tuple[str, CpuInfo, dict[str, str], list[str]]:
        cpu, extra = cpu_via_container(self.backend, image)
        if profile_name == "auto":
            return cpu.slug(), cpu, extra, []
        profile = self.matrix.profile(profile_name)
        reasons = profile_mismatches(profile, cpu)
        if reasons and not force:
            raise ProfileMismatch(
                f"--cpu={profile_name} ({profile.description}) does not describe this host "
                f"({cpu.model}, {cpu.vendor}): " + "; ".join(reasons),
                hint="run on the machine the profile names, use --cpu=auto for this host, "
                "or add --force to run anyway (the results are then marked forced)",
            )
        return profile.name, cpu, extra, reasons

    def bench(self, variants: list[Variant], suite: Suite, profile_name: str, *,
              force: bool = False) -> list[CellOutcome]:
        images: dict[str, tuple[str, dict[str, Any]]] = {}
        missing: dict[str, BuildError] = {}
        for v in variants:
            try:
                images[v.id] = self.image_for(v)
            except BuildError as exc:
                missing[v.id] = exc
        # The CPU check comes first, so a wrong --cpu is refused even before anything
        # is built; it reads /proc/cpuinfo through the engine (right for remote ones).
        probe = next(iter(images.values()))[0] if images else variants[0].base_image
        cpu_name, cpu, extra, mismatch = self.resolve_cpu(profile_name, probe, force=force)
        outcomes: list[CellOutcome] = []
        for vid, err in missing.items():
            log.error(f"{vid}: {err}")
            outcomes.append(CellOutcome(vid, "failed", error=str(err)))
        if not images:
            return outcomes
        if mismatch:
            log.warn(f"--force: profile {profile_name} does not match this host "
                     f"({'; '.join(mismatch)}); results are marked forced")
        log.info(f"CPU: {cpu.model} ({cpu.vendor}); results under "
                 f"{self.tree.root / cpu_name}")
        total = len(images)
        for i, v in enumerate(v for v in variants if v.id in images):
            tag, record = images[v.id]
            try:
                outcomes.append(self._bench_one(v, tag, record, suite, cpu_name, cpu, extra,
                                                profile_name, mismatch, i + 1, total))
            except DockerUnavailable:
                raise
            except FatalError as exc:
                log.error(f"{v.id}: {exc}")
                outcomes.append(CellOutcome(v.id, "failed", error=str(exc)))
        return outcomes

    def _bench_one(self, v: Variant, tag: str, record: dict[str, Any], suite: Suite,
                   cpu_name: str, cpu: CpuInfo, extra: dict[str, str], profile_name: str,
                   mismatch: list[str], index: int, total: int) -> CellOutcome:
        version_res = self.backend.run(tag, ["openssl", "version", "-a"],
                                       limits=RunLimits(timeout=60))
        version_line = version_res.stdout.splitlines()[0] if version_res.stdout else ""
        version = version_line.split()[1] if version_line.startswith("OpenSSL ") else \
            v.version.version
        invocations, notes = speed_invocations(v.version.version, suite)
        run_dir = self.tree.new_run_dir(cpu_name, v.id, suite.name)
        started = _now()
        meta: dict[str, Any] = {
            "status": "running",
            "cpu_profile": profile_name,
            "cpu_dir": cpu_name,
            "forced": bool(mismatch),
            "profile_mismatch": mismatch,
            "variant": v.describe(),
            "suite": {"name": suite.name, "description": suite.description,
                      "algorithms": list(suite.algorithms), "evp": suite.evp,
                      "seconds": suite.seconds, "bytes": suite.bytes,
                      "masks": [{"name": m.name, "ia32cap": m.ia32cap} for m in suite.masks]},
            "image_tag": tag,
            "image_id": record.get("image_id"),
            "build": {k: record.get(k) for k in ("digest", "configure_line", "endbr32",
                                                 "endbr32_warning", "patches_in_image",
                                                 "tarball_sha256", "source_origin",
                                                 "base_image", "base_image_id")},
            "tarball_sha256": record.get("tarball_sha256"),
            "openssl_version_a": version_res.stdout,
            "host": {"cpu_model": cpu.model, "cpu_vendor": cpu.vendor,
                     "cpu_flags": list(cpu.flags), "cpu_mhz": cpu.mhz,
                     "logical_cpus": cpu.logical_cpus, "kernel": extra.get("uname"),
                     "loadavg_before": extra.get("loadavg"),
                     "governor": extra.get("governor"), "boost": extra.get("boost"),
                     "client_machine": platform.node()},
            "docker": self.engine,
            "matrix_path": str(self.matrix.path),
            "matrix_digest": self.matrix.digest,
            "git_commit": self.git_commit,
            "started": started,
            "notes": notes,
            "invocations": [],
        }
        write_json(run_dir / "meta.json", meta)
        log.info(f"▸ [{index}/{total}] {v.id} · suite {suite.name} · "
                 f"{len(invocations)} speed run(s) → {run_dir}")
        figures: list[dict[str, Any]] = []
        warnings: list[str] = list(notes)
        failed = 0
        for n, inv in enumerate(invocations, 1):
            t0 = time.monotonic()
            res = self.backend.run(tag, list(inv.command), env=inv.env,
                                   limits=RunLimits(timeout=3600))
            self._save_raw(run_dir, inv, res)
            entry: dict[str, Any] = {"name": inv.name, "command": list(inv.command),
                                     "env": inv.env, "exit_code": res.exit_code,
                                     "started": res.started, "ended": res.ended,
                                     "seconds": round(res.seconds, 3)}
            if res.exit_code != 0:
                failed += 1
                msg = (f"{inv.name}: `{' '.join(inv.command)}` exited {res.exit_code}: "
                       f"{res.stderr.strip().splitlines()[-1] if res.stderr.strip() else ''}")
                warnings.append(msg)
                log.warn(f"  {v.id}: {msg}")
                entry["status"] = "failed"
            else:
                try:
                    parsed = parse_speed(res.stdout, res.stderr, version=version,
                                         evp=suite.evp)
                except ParseError as perr:
                    parsed = None
                    warnings.append(f"{inv.name}: output not understood: {perr.message}")
                recs = figure_records(parsed) if parsed is not None else []
                for rec in recs:
                    rec.update({"mask": inv.mask.name, "ia32cap": inv.mask.ia32cap,
                                "invocation": inv.name})
                figures.extend(recs)
                if parsed is not None:
                    warnings.extend(f"{inv.name}: {w}" for w in parsed.warnings)
                entry["status"] = "ok" if recs else "no-figures"
                entry["figures"] = len(recs)
                if not recs:
                    failed += 1
                    warnings.append(f"{inv.name}: no figures in the output")
            meta["invocations"].append(entry)
            log.info(f"    [{n}/{len(invocations)}] {inv.name}: {entry['status']} "
                     f"({time.monotonic() - t0:.1f}s)")
        write_json(run_dir / "figures.json", figures)
        meta["ended"] = _now()
        meta["warnings"] = warnings
        status = "complete" if failed == 0 else ("failed" if failed == len(invocations)
                                                 else "partial")
        meta["status"] = status
        write_json(run_dir / "meta.json", meta)
        return CellOutcome(v.id, status, run_dir=str(run_dir), warnings=warnings,
                           figures=figures,
                           error=None if status == "complete" else f"{failed} invocation(s) "
                           f"failed; see {run_dir}/raw")

    @staticmethod
    def _save_raw(run_dir: Any, inv: Invocation, res: RunResult) -> None:
        raw = run_dir / "raw"
        atomic_write(raw / f"{inv.name}.stdout", res.stdout)
        atomic_write(raw / f"{inv.name}.stderr", res.stderr)
