"""Bench: run a speed suite in each variant's image and file the results.

One run of a suite on a variant is one folder ``results/<cpu>/<variant>/<suite>/<run>/``
holding, for every ``openssl speed`` invocation, the exact command, environment,
stdout and stderr (``raw/``), the parsed figures and the run's provenance (the
records of :mod:`openssl_matrix.records`). Containers run with no network, no capabilities, a
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
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import guards, log, records
from .backend import Backend, RunLimits, RunResult, endpoint_is_local
from .clock import now as _now
from .errors import (
    BenchError,
    BuildError,
    DockerUnavailable,
    FatalError,
    ParseError,
    ProfileMismatch,
)
from .guards import (
    EngineCheck,
    Finding,
    apply_findings,
    cpu_compat_problems,
    engine_findings,
    engine_vs_builtin_findings,
    legacy_path_findings,
    mask_effect_findings,
    mask_names_off,
    mask_syntax_findings,
    mask_vector_findings,
    measured_cpu_sets,
    profile_cpu_sets,
    read_engine_check,
    split_times,
    spread,
    time_basis_findings,
)
from .hostinfo import (
    SYSTEM_SCRIPT,
    CpuInfo,
    SystemState,
    clock_hz,
    parse_cpuinfo_line,
    parse_system_state,
    profile_mismatches,
    render_ia32cap,
)
from .model import Mask, Matrix, Profile, Suite, Variant, as_jsonable
from .parsing import figure_records, parse_speed
from .records import FINISHED
from .results import Journal, ResultsTree, RunRef, atomic_write
from .version import Version, series

#: Label on every bench container: the results tree it writes for (see remove_containers).
TREE_LABEL = "openssl-matrix.tree"

# Ciphers and digests that OpenSSL 3.x moved to the legacy provider.
LEGACY_PROVIDER_ALGS = ("idea", "des-", "des3", "desx", "rc2", "rc4", "rc5", "bf-", "blowfish",
                        "cast", "seed", "md4", "mdc2", "whirlpool", "rmd160", "ripemd")

#: ``openssl speed`` options: (first version that has it, first version without it).
#: From apps/speed.c of each series; engines are gone in 4.0.
SPEED_OPTIONS: dict[str, tuple[tuple[int, int, int], tuple[int, int, int] | None]] = {
    "-elapsed": ((0, 9, 8), None), "-evp": ((0, 9, 8), None), "-decrypt": ((0, 9, 8), None),
    "-engine": ((0, 9, 8), (4, 0, 0)), "-multi": ((0, 9, 8), None), "-mr": ((0, 9, 8), None),
    "-mb": ((1, 0, 2), None), "-misalign": ((1, 0, 2), None),
    "-async_jobs": ((1, 1, 0), None),
    "-seconds": ((1, 1, 1), None), "-bytes": ((1, 1, 1), None), "-primes": ((1, 1, 1), None),
    "-aead": ((1, 1, 1), None),
    "-hmac": ((3, 0, 0), None), "-cmac": ((3, 0, 0), None), "-provider": ((3, 0, 0), None),
    "-provider-path": ((3, 0, 0), None), "-propquery": ((3, 0, 0), None),
    "-config": ((3, 1, 0), None), "-mlock": ((3, 1, 0), None),
    "-kem-algorithms": ((3, 2, 0), None), "-signature-algorithms": ((3, 2, 0), None),
    "-testmode": ((3, 4, 0), None),
}

#: The wrapper every speed invocation runs in: the shell's ``times`` after speed gives
#: the user and system CPU seconds of speed and its children (the time-basis guard).
SPEED_WRAPPER = 'openssl "$@"; rc=$?; echo +CPUTIMES >&2; times >&2; exit $rc'
WRAPPER_NAME = "openssl-speed"
# Speed containers get Docker's highest CPU weight. With the default weight a speed run
# shares the CPU equally with every other container, so a `docker build` beside it (ours
# or anyone's) cut 1.1.1w's aes-128-cbc at 8192 B from ~1.2 GB/s to 0.41-0.56 GB/s on a
# 2-core host; at this weight it measured 1.18-1.32 GB/s under the same builds
# (benchmarks/run.py, docs/performance.md). It orders containers only: it takes nothing
# from processes outside Docker and changes nothing on an idle machine.
SPEED_CPU_SHARES = 262144


def has_option(option: str, version: str) -> bool:
    """Whether ``openssl speed`` of ``version`` has ``option``."""
    first, gone = SPEED_OPTIONS[option]
    v = series(version)
    return v >= first and (gone is None or v < gone)


def _since(option: str) -> str:
    first, gone = SPEED_OPTIONS[option]
    text = "from " + ".".join(map(str, first))
    return text + (f", gone in {'.'.join(map(str, gone))}" if gone else "")


@dataclass(frozen=True)
class Invocation:
    """One ``openssl speed`` command of a run."""

    name: str
    mask: Mask
    algorithm: str
    command: tuple[str, ...]
    env: dict[str, str]
    engine: str | None = None
    path: str = "evp"
    direction: str = "encrypt"
    ia32cap: str | None = None
    """OPENSSL_ia32cap as given to this version (None: unmasked)."""
    multi: int | None = None
    algorithms: tuple[str, ...] = ()

    @property
    def exec_command(self) -> list[str]:
        """What the container runs: ``command`` inside the CPU-times wrapper."""
        return ["/bin/sh", "-c", SPEED_WRAPPER, WRAPPER_NAME, *self.command[1:]]


def unwrap_speed(command: Sequence[str]) -> tuple[str, ...]:
    """The ``openssl ...`` command inside ``Invocation.exec_command`` (else as given)."""
    cmd = tuple(command)
    if cmd[:3] == ("/bin/sh", "-c", SPEED_WRAPPER) and len(cmd) > 3 and cmd[3] == WRAPPER_NAME:
        return ("openssl", *cmd[4:])
    return cmd


@dataclass
class CellOutcome:
    variant: str
    status: str  # complete | partial | failed
    run_dir: str | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    round: int = 1
    findings: list[dict[str, Any]] = field(default_factory=list)
    reused: bool = False  # finished earlier in this (resumed) session, not measured again


def mask_value(mask: Mask, version: str) -> tuple[str | None, list[str]]:
    """OPENSSL_ia32cap for ``mask`` on ``version`` (None: unmasked or not expressible)."""
    if mask.disable:
        return render_ia32cap(mask.disable, version)
    return mask.ia32cap, []


def speed_invocations(version: str, suite: Suite, configure: Sequence[str] = (),
                      ) -> tuple[list[Invocation], list[str]]:
    """The ``openssl speed`` commands a suite needs on a given OpenSSL version.

    One invocation per mask x engine x path x direction x algorithm (the low-level path
    runs all algorithms in one invocation). Options a version does not have are left out
    and reported in the notes, as are settings that cannot apply (``-decrypt`` on the
    low-level path, a mask the version cannot express). A ``pkey`` suite spells each
    algorithm for the version (pkey.py) and refuses, in the notes, those it lacks; a
    ``tls`` suite is planned by tlsbench.py. ``configure``: the variant's options.
    """
    notes: list[str] = []
    if suite.kind == "tls":
        from .tlsbench import tls_invocations

        return tls_invocations(version, suite, tuple(configure))
    if suite.kind == "pkey":
        from .pkey import plan as pk_plan

        planned = pk_plan(version, suite.algorithms, tuple(configure))
        notes += [r.note() for r in planned.refused]
        suite = replace(suite, algorithms=tuple(arg for _, arg, _ in planned.runs))
        if not suite.algorithms:
            return [], notes
    v = series(version)
    multi = suite.multi
    if multi is not None and not has_option("-multi", version):
        notes.append(f"-multi is not in {version} ({_since('-multi')}); one process was run")
        multi = None
    # With -multi and -mr the parent prints its sums without a +H of its own; its human
    # table is read instead (the parser takes the sizes from the children's +H records).
    base = ["openssl", "speed", "-elapsed"] + ([] if multi else ["-mr"])
    for opt, value in (("-seconds", suite.seconds), ("-bytes", suite.bytes)):
        if value is None:
            continue
        if has_option(opt, version):
            base += [opt, str(value)]
        else:
            notes.append(f"{opt} is not in {version} ({_since(opt)}); "
                         + (("speed's default 10 s per operation was used"
                             if suite.kind == "pkey" else
                             "speed's default 3 s per size was used") if opt == "-seconds"
                            else "every block size was run"))
    if multi is not None:
        base += ["-multi", str(multi)]
    if suite.providers is not None and not has_option("-provider", version):
        notes.append(f"-provider is not in {version} ({_since('-provider')}); the suite's "
                     "providers were not passed")
    out: list[Invocation] = []
    noted: set[str] = set()

    def note_once(text: str) -> None:
        if text not in noted:
            noted.add(text)
            notes.append(text)

    for mask in suite.masks:
        ia32cap, mask_notes = mask_value(mask, version)
        for n in mask_notes:
            note_once(f"mask {mask.name}: {n}")
        if ia32cap is None and (mask.disable or mask.ia32cap):
            continue
        env = {} if ia32cap is None else {"OPENSSL_ia32cap": ia32cap}
        for engine in suite.engines:
            if engine is not None and not has_option("-engine", version):
                note_once(f"-engine is not in {version} ({_since('-engine')}); the {engine} "
                          "engine was not measured")
                continue
            for path in suite.paths:
                for direction in suite.directions:
                    if direction == "decrypt" and path == "legacy":
                        note_once("-decrypt applies to EVP ciphers only: the low-level path "
                                  "was measured encrypting")
                        continue
                    out.extend(_invocations_for(v, suite, mask, ia32cap, env, engine, path,
                                                direction, multi, base))
    return out, notes


def _invocations_for(v: tuple[int, int, int], suite: Suite, mask: Mask,
                     ia32cap: str | None, env: dict[str, str], engine: str | None, path: str,
                     direction: str, multi: int | None, base: list[str]) -> list[Invocation]:
    groups: list[tuple[str, list[str], tuple[str, ...]]]
    if path == "evp":
        groups = [(alg, ["-evp", alg], (alg,)) for alg in suite.algorithms]
    elif path == "pkey":  # one invocation per algorithm, spelled for the version
        groups = [(alg.lower(), [alg], (alg,)) for alg in suite.algorithms]
    else:
        groups = [("+".join(suite.algorithms), list(suite.algorithms), suite.algorithms)]
    out = []
    for alg_name, args, algs in groups:
        opts: list[str] = []
        if engine is not None:
            opts += ["-engine", engine]
        if v[0] >= 3:
            if suite.providers is not None:
                for p in suite.providers:
                    opts += ["-provider", p]
            elif any(a.startswith(LEGACY_PROVIDER_ALGS) for a in algs):
                opts += ["-provider", "legacy", "-provider", "default"]
        if direction == "decrypt":
            opts.append("-decrypt")
        parts = [mask.name]
        if engine is not None:
            parts.append(engine)
        if path == "legacy" and suite.evp:
            parts.append("legacy")
        if direction == "decrypt":
            parts.append("decrypt")
        parts.append(alg_name)
        out.append(Invocation(
            name="--".join(parts), mask=mask, algorithm=alg_name,
            command=tuple(base + opts + args), env=dict(env), engine=engine, path=path,
            direction=direction, ia32cap=ia32cap, multi=multi, algorithms=algs,
        ))
    return out


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


def cpu_via_container(backend: Backend, image: str) -> tuple[CpuInfo, dict[str, str]]:
    """CPU and kernel as the engine's host sees them (right for remote engines too)."""
    cpu, state = system_state(backend, image)
    return cpu, state.extra


def system_state(backend: Backend, image: str) -> tuple[CpuInfo, SystemState]:
    """CPU, load, frequency governor and boost, read in a container on the engine's host."""
    res = backend.run(image, ["/bin/sh", "-c", SYSTEM_SCRIPT], limits=RunLimits(timeout=60))
    if res.exit_code != 0:
        raise BenchError(f"cannot read /proc/cpuinfo in {image}: {res.stderr.strip()[:200]}")
    return parse_system_state(res.stdout)


@dataclass(frozen=True)
class RunContext:
    """What every run of one bench shares: where results go and what CPU they are for."""

    cpu_name: str
    cpu: CpuInfo
    extra: dict[str, str]
    profile_name: str
    profile: Profile | None
    mismatch: list[str]


class Bencher:
    def __init__(self, matrix: Matrix, backend: Backend, tree: ResultsTree, *,
                 engine: dict[str, Any], git_commit: str | None) -> None:
        self.matrix = matrix
        self.backend = backend
        self.tree = tree
        self.engine = engine
        self.git_commit = git_commit
        self.session: str | None = None  # the run journal's id, written into each run record
        self.finished_sessions: list[Journal] = []  # kept open by bench(keep_open=True)

    def image_for(self, variant: Variant) -> tuple[str, dict[str, Any]]:
        """The built image of a variant and its build record.

        The latest pointer names the newest build; when that image is not on this engine (a
        profile's remote engine built its own), the newest recorded build whose image is
        here is used.
        """
        latest = records.read_latest(self.tree.root, variant.id)
        if latest is not None:
            record = self.tree.build_record(variant.id, latest.digest)
            if record and self.backend.image_id(latest.tag):
                return latest.tag, record
        candidates = [r.to_json() for r in records.build_records(self.tree.root, variant.id)
                      if r.tag]
        for rec in sorted(candidates, key=lambda r: str(r.get("ended", "")), reverse=True):
            if self.backend.image_id(str(rec["tag"])):
                return str(rec["tag"]), rec
        where = self.engine.get("endpoint", "this engine")
        raise BuildError(f"{variant.id} is not built on {where} (or its image was removed)",
                         hint=f"run `invoke matrix build --only {variant.id}` first (with "
                         "--cpu=PROFILE to build on a profile's Docker engine)")

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
              force: bool = False, repeat: int | None = None, fresh: bool = False,
              keep_open: bool = False) -> list[CellOutcome]:
        """Run ``suite`` on every variant (``repeat`` rounds, interleaved); resume the open
        session of the same command.

        Call it holding the results tree's lock. ``fresh`` starts a new session even if
        an interrupted one is open (its finished cells are then measured again).
        ``keep_open`` leaves a finished session open for :meth:`close_sessions` (a command
        running several suites closes them together, so an interruption in the second
        suite does not make a rerun measure the first again).
        """
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
        ready = [v for v in variants if v.id in images]
        rounds = repeat or suite.repeat
        order = interleaved(ready, rounds)
        journal = self._open_session(variants, suite, cpu_name, profile_name, rounds,
                                     fresh=fresh)
        series: dict[str, Any] | None = None
        if rounds > 1:
            # kept in the journal, so a resumed repeated bench goes on with the same series
            series = journal.data.get("series")
            if not isinstance(series, dict):
                series = {"id": datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ"),
                          "rounds": rounds, "order": [f"{r}:{v.id}" for r, v in order]}
                journal.data["series"] = series
                journal.save()
            log.info(f"{rounds} rounds, interleaved: "
                     + " → ".join(f"{v.id}#{r}" for r, v in order))
        run_outcomes: list[CellOutcome] = []
        try:
            for i, (round_no, v) in enumerate(order):
                tag, record = images[v.id]
                run_outcomes.append(self._cell(
                    journal, v, round_no, rounds, tag, suite, cpu_name, functools.partial(
                        self._bench_one, v, tag, record, suite, cpu_name, cpu, extra,
                        profile_name, mismatch, i + 1, len(order), round_no=round_no,
                        series=series)))
        except (DockerUnavailable, KeyboardInterrupt):
            kept = sum(o.status in FINISHED for o in run_outcomes)
            log.error(f"bench stopped: {kept} of {len(order)} run(s) of this session are "
                      f"finished and kept (journal {journal.path}); rerun the same command "
                      "to measure the rest")
            raise
        outcomes.extend(run_outcomes)
        if series is not None:
            self._file_series(series, suite, cpu_name, run_outcomes)
        self._close_session(journal, outcomes, keep_open=keep_open)
        return outcomes

    def _file_series(self, series: dict[str, Any], suite: Suite, cpu_name: str,
                     outcomes: list[CellOutcome]) -> None:
        """Write each variant's median/spread over the rounds beside its runs."""
        for variant in dict.fromkeys(o.variant for o in outcomes):
            mine = [o for o in outcomes if o.variant == variant]
            rows = summarize_series(mine, suite.noise_threshold)
            records.write_series(self.tree.suite_dir(cpu_name, variant, suite.name), {
                **series, "variant": variant, "suite": suite.name,
                "noise_threshold": suite.noise_threshold, "runs": [o.run_dir for o in mine],
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
        for path in self.tree.recover():
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

    def _limits(self, timeout: float, suite: Suite | None = None, *,
                cpuset: str | None = None) -> RunLimits:
        """Container limits for this tree; devices only when the suite asks and the host
        has them (see :meth:`_device_notes`)."""
        devices = tuple(d for d in (suite.devices if suite else ()) if self._host_has(d))
        return RunLimits(timeout=timeout, devices=devices, cpuset=cpuset,
                         labels=((TREE_LABEL, self._tree_id()),
                                 ("openssl-matrix.pid", str(os.getpid()))))

    def _host_has(self, device: str) -> bool:
        if endpoint_is_local(self.engine):
            return Path(device).exists()
        return True  # a remote engine: Docker itself says if the device is missing

    def _device_notes(self, suite: Suite) -> list[str]:
        return [f"the suite asks for {d}, which this host does not have: it was not passed "
                "to the container (figures come from the software path)"
                for d in suite.devices if not self._host_has(d)]

    def finished_runs(self, session: str, cpu_name: str, variant: str, suite: str,
                      tag: str, round_no: int = 1) -> list[RunRef]:
        """Run folders of a cell (one round of a variant) that ``session`` finished with
        image ``tag``."""
        return [RunRef(r.cpu, r.variant, r.suite, r.run, r.path)
                for r in records.finished_runs(self.tree.root, cpu=cpu_name, variant=variant,
                                               suite=suite, figures=False)
                if r.meta.session == session and r.meta.image_tag == tag
                and r.meta.round_no == round_no]

    def _cell(self, journal: Journal, v: Variant, round_no: int, rounds: int, tag: str,
              suite: Suite, cpu_name: str, run: Callable[[], CellOutcome]) -> CellOutcome:
        """Run one cell (a variant's round) unless this session finished it; a failure
        fails only this cell."""
        name = v.id if rounds == 1 else f"{v.id}#{round_no}"
        done = self.finished_runs(journal.id, cpu_name, v.id, suite.name, tag, round_no)
        if done:
            ref = done[0]
            log.info(f"  {name}: finished earlier in this session ({ref.path}): kept, "
                     "not measured again")
            entry = journal.cell(name)
            if entry is None or entry.get("status") not in FINISHED:
                journal.record(name, str(ref.meta.get("status")), image=tag,
                               run_dir=str(ref.path.relative_to(self.tree.root)))
            return _outcome_from(v.id, ref)
        journal.record(name, "running", image=tag)
        try:
            outcome = run()
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
            log_path = left[0] / "error.log" if left else \
                journal.path.parent / f"{journal.id}-{v.id}-error.log"
            atomic_write(log_path, traceback.format_exc())
            log.error(f"{v.id}: internal error ({type(exc).__name__}: {exc}); traceback in "
                      f"{log_path}; the other cells go on")
            outcome = CellOutcome(v.id, "failed", run_dir=str(left[0]) if left else None,
                                  error=f"internal error {type(exc).__name__}: {exc} "
                                  f"(traceback: {log_path})", round=round_no)
        journal.record(name, outcome.status, image=tag,
                       run_dir=str(Path(outcome.run_dir).relative_to(self.tree.root))
                       if outcome.run_dir else None, error=outcome.error)
        return outcome

    def _bench_one(self, v: Variant, tag: str, record: dict[str, Any], suite: Suite,
                   cpu_name: str, cpu: CpuInfo, extra: dict[str, str], profile_name: str,
                   mismatch: list[str], index: int, total: int, *, round_no: int = 1,
                   series: dict[str, Any] | None = None) -> CellOutcome:
        profile = None if profile_name == "auto" else self.matrix.profile(profile_name)
        pin = profile.cpuset if profile is not None else None
        run_cpu, state = system_state(self.backend, tag)
        version_res = self.backend.run(tag, ["openssl", "version", "-a"],
                                       limits=self._limits(60))
        version_line = version_res.stdout.splitlines()[0] if version_res.stdout else ""
        printed = Version.find(version_line) if version_line.startswith("OpenSSL ") else None
        version = str(printed) if printed is not None else v.version.version
        invocations, notes = speed_invocations(v.version.version, suite,
                                               (*v.version.configure, *v.configure))
        notes += self._device_notes(suite)
        clock, clock_source = clock_hz(profile, run_cpu, forced=bool(mismatch))
        run_dir = self.tree.new_run_dir(cpu_name, v.id, suite.name)
        started = _now()
        meta: dict[str, Any] = {
            "status": "running",
            "cpu_profile": profile_name,
            "cpu_dir": cpu_name,
            "forced": bool(mismatch),
            "profile_mismatch": mismatch,
            "profile": profile.describe() if profile is not None else None,
            "variant": v.describe(),
            "suite": suite.describe(),
            "image_tag": tag,
            "image_id": record.get("image_id"),
            "build": {k: record.get(k) for k in ("digest", "configure_line", "endbr32",
                                                 "endbr64", "endbr32_warning",
                                                 "patches_in_image", "tarball_sha256",
                                                 "source_origin", "base_image",
                                                 "base_image_id")},
            "tarball_sha256": record.get("tarball_sha256"),
            "openssl_version_a": version_res.stdout,
            "host": {"cpu_model": cpu.model, "cpu_vendor": cpu.vendor,
                     "cpu_flags": list(cpu.flags), "cpu_mhz": run_cpu.mhz,
                     "logical_cpus": cpu.logical_cpus, "kernel": extra.get("uname"),
                     "loadavg_before": state.loadavg,
                     "governor": state.governor, "boost": state.boost,
                     "client_machine": platform.node()},
            "pinning": {"cpuset": pin, "source": f"profile {profile_name}" if pin else None},
            "speed_cpu_shares": SPEED_CPU_SHARES,
            "clock_hz": clock,
            "clock_source": clock_source,
            "round": round_no,
            "series": series,
            "docker": self.engine,
            "matrix_path": str(self.matrix.path),
            "matrix_digest": self.matrix.digest,
            "git_commit": self.git_commit,
            "started": started,
            "session": self.session,
            "notes": notes,
            "invocations": [],
        }
        records.write_meta(run_dir, meta)
        log.info(f"▸ [{index}/{total}] {v.id} · suite {suite.name}"
                 + (f" · round {round_no}" if series else "")
                 + f" · {len(invocations)} speed run(s) → {run_dir}")
        findings: list[Finding] = []
        warnings: list[str] = list(notes)
        findings.extend(self._cpu_findings(v, record, run_cpu, profile, mismatch))
        engine_checks = self._check_engines(tag, suite, run_dir)
        meta["engine_checks"] = {k: asdict(c) for k, c in engine_checks.items()}
        vectors = self._capability_vectors(tag, version, invocations, run_dir)
        meta["capability_vectors"] = {k: (None if w is None else [hex(w[0]), hex(w[1])])
                                      for k, w in vectors.items()}
        figures: list[dict[str, Any]] = []
        by_invocation: dict[str, list[dict[str, Any]]] = {}
        failed = 0
        for n, inv in enumerate(invocations, 1):
            t0 = time.monotonic()
            res = self.backend.run(tag, inv.exec_command, env=inv.env,
                                   limits=replace(self._limits(3600, suite, cpuset=pin),
                                                  cpu_shares=SPEED_CPU_SHARES))
            self._save_raw(run_dir, inv, res)
            speed_stderr, times = split_times(res.stderr)
            entry: dict[str, Any] = {"name": inv.name, "command": list(inv.command),
                                     "exec": inv.exec_command, "env": inv.env,
                                     "engine": inv.engine, "path": inv.path,
                                     "direction": inv.direction, "multi": inv.multi,
                                     "exit_code": res.exit_code,
                                     "started": res.started, "ended": res.ended,
                                     "seconds": round(res.seconds, 3),
                                     "cpu_times": None if times is None else asdict(times)}
            if res.exit_code != 0:
                failed += 1
                last = speed_stderr.strip().splitlines()[-1] if speed_stderr.strip() else ""
                msg = f"{inv.name}: `{' '.join(inv.command)}` exited {res.exit_code}: {last}"
                if res.exit_code == 132 or "Illegal instruction" in res.stderr:
                    msg += " (SIGILL: the binary uses an instruction this CPU lacks)"
                warnings.append(msg)
                log.warn(f"  {v.id}: {msg}")
                entry["status"] = "failed"
            else:
                recs, elapsed, inv_findings, parse_warnings = self._parse_one(
                    inv, res.stdout, speed_stderr, version, times, engine_checks, vectors,
                    run_cpu)
                entry["elapsed_measured"] = elapsed
                figures.extend(recs)
                by_invocation[inv.name] = recs
                findings.extend(inv_findings)
                warnings.extend(f"{inv.name}: {w}" for w in parse_warnings)
                entry["status"] = "ok" if recs else "no-figures"
                entry["figures"] = len(recs)
                if not recs:
                    failed += 1
                    warnings.append(f"{inv.name}: no figures in the output")
            meta["invocations"].append(entry)
            log.info(f"    [{n}/{len(invocations)}] {inv.name}: {entry['status']} "
                     f"({time.monotonic() - t0:.1f}s)")
        findings.extend(cross_findings(invocations, by_invocation, version, run_cpu.flags,
                                       bool(vectors)))
        apply_findings(figures, findings)
        for rec in figures:
            rec["clock_hz"] = clock
            rec["cycles_per_byte"] = guards.cycles(rec.get("bytes_per_s"), clock,
                                                   rec.get("multi") or 1)
            rec["cycles_per_op"] = guards.cycles(
                rec.get("ops_per_s") if rec.get("block_size") is None else None,
                clock, rec.get("multi") or 1)
            rec.setdefault("guards", [])
        for f in findings:
            text = f"{f.code}: " + (f"{f.invocation}: " if f.invocation else "") + f.message
            if text not in warnings:
                warnings.append(text)
                log.warn(f"  {v.id}: {text}")
        records.write_figures(run_dir, figures)
        meta["ended"] = _now()
        meta["warnings"] = warnings
        meta["findings"] = [f.as_dict() for f in findings]
        status = "complete" if failed == 0 else ("failed" if failed == len(invocations)
                                                 else "partial")
        meta["status"] = status
        records.write_meta(run_dir, meta)
        return CellOutcome(v.id, status, run_dir=str(run_dir), warnings=warnings,
                           figures=figures, round=round_no,
                           findings=[f.as_dict() for f in findings],
                           error=None if status == "complete" else f"{failed} invocation(s) "
                           f"failed; see {run_dir}/raw")

    # -- per-run checks -----------------------------------------------------------------

    def _parse_one(self, inv: Invocation, stdout: str, speed_stderr: str, version: str,
                   times: guards.CpuTimes | None, engine_checks: dict[str, EngineCheck],
                   vectors: dict[str, tuple[int, int] | None], cpu: CpuInfo,
                   ) -> tuple[list[dict[str, Any]], float | None, list[Finding], list[str]]:
        if inv.path == "tls":
            from .tlsbench import parse_tls

            return parse_tls(inv, stdout)
        try:
            parsed = parse_speed(stdout, speed_stderr, version=version,
                                 evp=inv.path == "evp")
        except ParseError as perr:
            return [], None, [], [f"output not understood: {perr.message}"]
        recs = figure_records(parsed)
        for rec in recs:
            if rec.get("algorithm") == "evp" and len(inv.algorithms) == 1:
                rec["algorithm"] = inv.algorithms[0]  # -multi labels the EVP row "evp"
            rec.update({"mask": inv.mask.name, "ia32cap": inv.ia32cap,
                        "invocation": inv.name, "engine": inv.engine, "path": inv.path,
                        "direction": inv.direction, "multi": inv.multi})
        elapsed = sum(p.seconds_reported for p in parsed.progress) or None
        found: list[Finding] = []
        if inv.engine is not None:
            found += engine_findings(inv.name, inv.engine, engine_checks.get(inv.engine),
                                     speed_stderr, path=inv.path, version=version)
        found += time_basis_findings(inv.name, times, elapsed)
        legacy, legacy_notes = legacy_path_findings(
            inv.name, version, inv.path, [str(r.get("algorithm")) for r in recs])
        found += legacy
        if inv.ia32cap is not None:
            if vectors.get("") is not None and vectors.get(inv.mask.name) is not None:
                found += mask_vector_findings(inv.name, inv.mask.name, inv.ia32cap,
                                              vectors.get(""), vectors.get(inv.mask.name))
            else:  # not observable (before 3.0): what the version's parser does with it
                found += mask_syntax_findings(inv.name, inv.mask.name, inv.ia32cap, version,
                                              cpu.flags)
        return recs, elapsed, found, [*parsed.warnings, *legacy_notes]

    def _cpu_findings(self, v: Variant, record: dict[str, Any], cpu: CpuInfo,
                      profile: Profile | None, mismatch: list[str]) -> list[Finding]:
        """Can this binary run on the CPU its results are filed under?"""
        endbr32 = record.get("endbr32")
        endbr = endbr32 if isinstance(endbr32, int) else None
        has, lacks = measured_cpu_sets(cpu.flags)
        out = [Finding(guards.CANNOT_RUN, f"on this host ({cpu.model}): {p}")
               for p in cpu_compat_problems(arch=v.arch, march=v.march, endbr32=endbr,
                                            has=has, lacks=lacks)]
        if profile is not None and mismatch:
            has, lacks = profile_cpu_sets(profile.flags, profile.lacks, profile.march)
            out += [Finding(guards.CANNOT_RUN,
                            f"on the {profile.name} CPU ({profile.description}): {p}; these "
                            "figures were measured elsewhere and could not be measured there")
                    for p in cpu_compat_problems(arch=v.arch, march=v.march, endbr32=endbr,
                                                 has=has, lacks=lacks)]
        return out

    def _check_engines(self, tag: str, suite: Suite, run_dir: Path,
                       ) -> dict[str, EngineCheck]:
        checks: dict[str, EngineCheck] = {}
        for engine in suite.engines:
            if engine is None:
                continue
            res = self.backend.run(tag, ["openssl", "engine", "-t", "-c", engine],
                                   limits=RunLimits(timeout=60))
            atomic_write(run_dir / "raw" / f"engine-check--{engine}.stdout", res.stdout)
            atomic_write(run_dir / "raw" / f"engine-check--{engine}.stderr", res.stderr)
            checks[engine] = read_engine_check(engine, res.exit_code, res.stdout, res.stderr)
            log.info(f"    engine {engine}: {checks[engine].detail}")
        return checks

    def _capability_vectors(self, tag: str, version: str, invocations: list[Invocation],
                            run_dir: Path) -> dict[str, tuple[int, int] | None]:
        """3.x: the effective OPENSSL_ia32cap without a mask ("") and under each mask."""
        if series(version)[0] < 3:
            return {}
        masks = {inv.mask.name: inv.ia32cap for inv in invocations if inv.ia32cap}
        if not masks:
            return {}
        out: dict[str, tuple[int, int] | None] = {}
        for name, value in [("", None), *masks.items()]:
            env = {} if value is None else {"OPENSSL_ia32cap": value}
            res = self.backend.run(tag, ["openssl", "version", "-c"], env=env,
                                   limits=RunLimits(timeout=60))
            label = name or "unmasked"
            atomic_write(run_dir / "raw" / f"cpuinfo--{label}.stdout", res.stdout)
            out[name] = parse_cpuinfo_line(res.stdout) if res.exit_code == 0 else None
        return out

    @staticmethod
    def _save_raw(run_dir: Any, inv: Invocation, res: RunResult) -> None:
        raw = run_dir / "raw"
        atomic_write(raw / f"{inv.name}.stdout", res.stdout)
        atomic_write(raw / f"{inv.name}.stderr", res.stderr)


def _outcome_from(variant: str, ref: RunRef) -> CellOutcome:
    """The outcome of a cell finished earlier, read back from its run folder."""
    meta = ref.meta
    figures = records.figures_as_dicts(records.read_figures(ref.path))
    status = str(meta.get("status"))
    return CellOutcome(variant, status, run_dir=str(ref.path),
                       warnings=list(meta.get("warnings") or []),
                       figures=figures,
                       error=None if status == "complete" else f"see {ref.path}/raw",
                       round=int(meta.get("round") or 1),
                       findings=list(meta.get("findings") or []), reused=True)


def cross_findings(invocations: list[Invocation],
                   by_invocation: dict[str, list[dict[str, Any]]], version: str,
                   cpu_flags: Sequence[str], have_vectors: bool) -> list[Finding]:
    """Guards that compare invocations: engine vs built-in code, masked vs unmasked."""
    found: list[Finding] = []
    index = {(i.mask.name, i.engine, i.path, i.direction, i.algorithm): i for i in invocations}
    natives = {i.mask.name for i in invocations if i.ia32cap is None}
    for inv in invocations:
        recs = by_invocation.get(inv.name)
        if not recs:
            continue
        if inv.engine is not None:
            builtin = index.get((inv.mask.name, None, inv.path, inv.direction, inv.algorithm))
            if builtin is not None and by_invocation.get(builtin.name):
                found += engine_vs_builtin_findings(inv.name, inv.engine, recs,
                                                    by_invocation[builtin.name])
        if inv.ia32cap is not None and not have_vectors:
            off = mask_names_off(inv.ia32cap, inv.mask.disable)
            for native in natives:
                ref = index.get((native, inv.engine, inv.path, inv.direction, inv.algorithm))
                if ref is not None and by_invocation.get(ref.name):
                    found += mask_effect_findings(inv.name, inv.mask.name, off, recs,
                                                  by_invocation[ref.name], cpu_flags)
                    break
    return found


def summarize_series(outcomes: Sequence[CellOutcome], threshold: float,
                     ) -> list[dict[str, Any]]:
    """Median, min, max and coefficient of variation of each figure over repeated runs."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for o in outcomes:
        for f in o.figures:
            key = (f.get("invocation"), f.get("algorithm"), f.get("block_size"),
                   f.get("operation"))
            groups.setdefault(key, []).append(f)
    rows: list[dict[str, Any]] = []
    for (invocation, algorithm, block, operation), figs in groups.items():
        unit = "bytes_per_s" if block is not None else "ops_per_s"
        values = [f[unit] for f in figs if isinstance(f.get(unit), (int, float))]
        s = spread(values, threshold)
        cycles_key = "cycles_per_byte" if block is not None else "cycles_per_op"
        cyc = [f[cycles_key] for f in figs if isinstance(f.get(cycles_key), (int, float))]
        cs = spread(cyc, threshold)
        rows.append({
            "invocation": invocation, "algorithm": algorithm, "block_size": block,
            "operation": operation, "unit": unit, "samples": values,
            "n": s.n if s else 0, "median": s.median if s else None,
            "min": s.min if s else None, "max": s.max if s else None,
            "cv": s.cv if s else None, "noisy": bool(s and s.noisy),
            "median_cycles": cs.median if cs else None,
            "statuses": sorted({str(f.get("status")) for f in figs}),
        })
    return rows
