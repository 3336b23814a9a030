"""Bench: run a speed suite in each variant's image and file the results.

One run of a suite on a variant is one folder ``results/<cpu>/<variant>/<suite>/<run>/``
holding, for every ``openssl speed`` invocation, the exact command, environment,
stdout and stderr (``raw/``), the parsed figures (``figures.json``) and the run's
provenance (``meta.json``). Containers run with no network, no capabilities, a
read-only root and memory/pid limits.

A bench is a session of cells (one variant × one suite). The outer loop keeps a run
journal (see ``results.Journal``) and tags every run folder with the session id, so a
bench killed at any point and run again goes on where it stopped: finished cells are
kept and not measured again, a half-written run folder is marked ``interrupted`` and
its cell measured anew, and a failing cell never stops the others.
"""

from __future__ import annotations

import functools
import os
import platform
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import log
from .backend import Backend, RunLimits, RunResult
from .errors import BenchError, BuildError, DockerUnavailable, FatalError, ProfileMismatch
from .hostinfo import CpuInfo, parse_cpuinfo, profile_mismatches
from .model import Mask, Matrix, Suite, Variant, as_jsonable
from .parsing import figure_records, parse_speed
from .results import FINISHED, Journal, ResultsTree, RunRef, atomic_write, read_json, write_json

#: Label on every bench container: the results tree it writes for (see remove_containers).
TREE_LABEL = "openssl-matrix.tree"

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
    reused: bool = False  # finished earlier in this (resumed) session, not measured again


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
        self.session: str | None = None  # the run journal's id, written into each meta.json
        self.finished_sessions: list[Journal] = []  # kept open by bench(keep_open=True)

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
              force: bool = False, fresh: bool = False, keep_open: bool = False,
              ) -> list[CellOutcome]:
        """Run ``suite`` on every variant; resume the open session of the same command.

        Call it holding the results tree's lock. ``fresh`` starts a new session even if
        an interrupted one is open (its finished cells are then measured again).
        ``keep_open`` leaves a finished session open for :meth:`close_sessions` (a command
        running several suites closes them together, so an interruption in the second
        suite does not make a rerun measure the first again).
        """
        images: dict[str, tuple[str, dict[str, Any]]] = {}
        outcomes: list[CellOutcome] = []
        for v in variants:
            try:
                images[v.id] = self.image_for(v)
            except BuildError as exc:
                log.error(f"{v.id}: {exc}")
                outcomes.append(CellOutcome(v.id, "failed", error=str(exc)))
        if not images:
            return outcomes
        first_image = next(iter(images.values()))[0]
        cpu_name, cpu, extra, mismatch = self.resolve_cpu(profile_name, first_image,
                                                          force=force)
        if mismatch:
            log.warn(f"--force: profile {profile_name} does not match this host "
                     f"({'; '.join(mismatch)}); results are marked forced")
        log.info(f"CPU: {cpu.model} ({cpu.vendor}); results under "
                 f"{self.tree.root / cpu_name}")
        journal = self._open_session(variants, suite, cpu_name, profile_name, fresh=fresh)
        total = len(images)
        try:
            for i, v in enumerate(v for v in variants if v.id in images):
                tag, record = images[v.id]
                outcomes.append(self._cell(journal, v, tag, suite, cpu_name, functools.partial(
                    self._bench_one, v, tag, record, suite, cpu_name, cpu, extra,
                    profile_name, mismatch, i + 1, total)))
        except (DockerUnavailable, KeyboardInterrupt):
            kept = sum(o.status in FINISHED for o in outcomes)
            log.error(f"bench stopped: {kept} of {len(variants)} cell(s) of this session are "
                      f"finished and kept (journal {journal.path}); rerun the same command "
                      "to measure the rest")
            raise
        self._close_session(journal, outcomes, len(variants), keep_open=keep_open)
        return outcomes

    # -- the session: journal, resume, isolation of failures -------------------
    def _open_session(self, variants: list[Variant], suite: Suite, cpu_name: str,
                      profile_name: str, *, fresh: bool) -> Journal:
        for path in self.tree.recover():
            log.warn(f"{path}: left half-written by an interrupted bench; marked "
                     "'interrupted' (raw output kept, not counted)")
        orphans = self.backend.remove_containers({TREE_LABEL: self._tree_id()})
        if orphans:
            log.warn(f"removed {len(orphans)} container(s) an interrupted bench left running "
                     f"({', '.join(orphans)})")
        journal = self.tree.journal("bench", {
            "cpu": cpu_name, "profile": profile_name, "suite": as_jsonable(suite),
            "variants": sorted(v.id for v in variants),
        }, fresh=fresh)
        self.session = journal.id
        if journal.resumed:
            log.info(f"resuming the interrupted bench session {journal.id} (started "
                     f"{journal.data.get('started')}): cells it finished are kept and not "
                     "measured again (--fresh measures everything again)")
        return journal

    def _close_session(self, journal: Journal, outcomes: list[CellOutcome],
                       cells: int, *, keep_open: bool) -> None:
        unfinished = [o.variant for o in outcomes if o.status not in FINISHED]
        if not unfinished and len(outcomes) == cells:
            if keep_open:
                self.finished_sessions.append(journal)
            else:
                journal.close("finished")
        else:
            log.warn(f"{len(unfinished)} cell(s) did not finish ({', '.join(unfinished)}): "
                     "rerunning the same command measures only those (--fresh starts over)")

    def close_sessions(self) -> None:
        """Close the finished sessions ``bench(keep_open=True)`` left open."""
        for journal in self.finished_sessions:
            journal.close("finished")
        self.finished_sessions.clear()

    def _tree_id(self) -> str:
        return str(self.tree.root.resolve())

    def _limits(self, timeout: float, suite: Suite | None = None) -> RunLimits:
        """Container limits for this tree; devices only when the suite asks and the host
        has them (see :meth:`_device_notes`)."""
        devices = tuple(d for d in (suite.devices if suite else ()) if self._host_has(d))
        return RunLimits(timeout=timeout, devices=devices,
                         labels=((TREE_LABEL, self._tree_id()),
                                 ("openssl-matrix.pid", str(os.getpid()))))

    def _host_has(self, device: str) -> bool:
        endpoint = str(self.engine.get("endpoint") or "local")
        if endpoint == "local" or endpoint.startswith("unix://"):
            return Path(device).exists()
        return True  # a remote engine: Docker itself says if the device is missing

    def _device_notes(self, suite: Suite) -> list[str]:
        return [f"the suite asks for {d}, which this host does not have: it was not passed "
                "to the container (figures come from the software path)"
                for d in suite.devices if not self._host_has(d)]

    def finished_runs(self, session: str, cpu_name: str, variant: str, suite: str,
                      tag: str) -> list[RunRef]:
        """Run folders of a cell that ``session`` finished with image ``tag``."""
        base = self.tree.suite_dir(cpu_name, variant, suite)
        if not base.is_dir():
            return []
        found = []
        for run in sorted(p for p in base.iterdir() if p.is_dir() and p.name.isdigit()):
            ref = RunRef(cpu_name, variant, suite, run.name, run)
            meta = ref.meta
            if meta.get("session") == session and meta.get("status") in FINISHED and \
                    meta.get("image_tag") == tag:
                found.append(ref)
        return found

    def _cell(self, journal: Journal, v: Variant, tag: str, suite: Suite, cpu_name: str,
              run: Callable[[], CellOutcome]) -> CellOutcome:
        """Run one cell unless this session finished it; a failure fails only this cell."""
        done = self.finished_runs(journal.id, cpu_name, v.id, suite.name, tag)
        if done:
            ref = done[0]
            log.info(f"  {v.id}: finished earlier in this session ({ref.path}): kept, "
                     "not measured again")
            if journal.cell(v.id) is None or journal.cells[v.id].get("status") not in FINISHED:
                journal.record(v.id, str(ref.meta.get("status")), image=tag,
                               run_dir=str(ref.path.relative_to(self.tree.root)))
            return _outcome_from(v.id, ref)
        journal.record(v.id, "running", image=tag)
        try:
            outcome = run()
        except (FatalError, KeyboardInterrupt) as exc:
            left = self.tree.recover(cpu_name, v.id, suite.name,
                                     reason=f"stopped: {type(exc).__name__}: {exc}")
            if isinstance(exc, (DockerUnavailable, KeyboardInterrupt)):
                journal.record(v.id, "interrupted", image=tag, error=str(exc))
                raise
            log.error(f"{v.id}: {exc}")
            outcome = CellOutcome(v.id, "failed", run_dir=str(left[0]) if left else None,
                                  error=str(exc))
        except Exception as exc:  # a bug: keep its traceback, let the other cells go on
            left = self.tree.recover(cpu_name, v.id, suite.name,
                                     reason=f"internal error: {type(exc).__name__}: {exc}")
            log_path = left[0] / "error.log" if left else \
                journal.path.parent / f"{journal.id}-{v.id}-error.log"
            atomic_write(log_path, traceback.format_exc())
            log.error(f"{v.id}: internal error ({type(exc).__name__}: {exc}); traceback in "
                      f"{log_path}; the other cells go on")
            outcome = CellOutcome(v.id, "failed", run_dir=str(left[0]) if left else None,
                                  error=f"internal error {type(exc).__name__}: {exc} "
                                  f"(traceback: {log_path})")
        journal.record(v.id, outcome.status, image=tag,
                       run_dir=str(Path(outcome.run_dir).relative_to(self.tree.root))
                       if outcome.run_dir else None, error=outcome.error)
        return outcome

    def _bench_one(self, v: Variant, tag: str, record: dict[str, Any], suite: Suite,
                   cpu_name: str, cpu: CpuInfo, extra: dict[str, str], profile_name: str,
                   mismatch: list[str], index: int, total: int) -> CellOutcome:
        version_res = self.backend.run(tag, ["openssl", "version", "-a"],
                                       limits=self._limits(60))
        version_line = version_res.stdout.splitlines()[0] if version_res.stdout else ""
        version = version_line.split()[1] if version_line.startswith("OpenSSL ") else \
            v.version.version
        invocations, notes = speed_invocations(v.version.version, suite)
        notes += self._device_notes(suite)
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
            "session": self.session,
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
                                   limits=self._limits(3600, suite))
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
                parsed = parse_speed(res.stdout, res.stderr, version=version, evp=suite.evp)
                recs = figure_records(parsed)
                for rec in recs:
                    rec.update({"mask": inv.mask.name, "ia32cap": inv.mask.ia32cap,
                                "invocation": inv.name})
                figures.extend(recs)
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


def _outcome_from(variant: str, ref: RunRef) -> CellOutcome:
    """The outcome of a cell finished earlier, read back from its run folder."""
    meta = ref.meta
    figures = read_json(ref.path / "figures.json")
    status = str(meta.get("status"))
    return CellOutcome(variant, status, run_dir=str(ref.path),
                       warnings=list(meta.get("warnings") or []),
                       figures=figures if isinstance(figures, list) else [],
                       error=None if status == "complete" else f"see {ref.path}/raw",
                       reused=True)
