"""One cell of a bench: one variant × one suite × one round, in one run folder.

``RunContext`` is what every cell of a bench session shares (engine, results tree, the CPU
the results are filed under); ``BenchCell`` is one variant × suite × round with everything
its run needs, and ``BenchCell.run`` measures it: the probes (system state, ``openssl version
-a``, engines, capability vectors), each ``openssl speed`` invocation with its host
accounting (``hostacct``), the guards, and the run folder (its records and
``raw/``). A cell may be limited to some invocations (``only``): a
re-measurement of figures found contended, or an extra round for figures whose interval
is still too wide; its run folder says so.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import cast

from openssl_matrix.core import log
from openssl_matrix.core.clock import now as _now
from openssl_matrix.core.errors import BenchError, ParseError
from openssl_matrix.core.files import atomic_write
from openssl_matrix.core.statuses import CANNOT_RUN, CONTENDED
from openssl_matrix.core.units import cycles
from openssl_matrix.core.version import Version, series
from openssl_matrix.engine.backend import Backend, RunLimits, RunResult, endpoint_is_local
from openssl_matrix.engine.engineinfo import EngineInfo
from openssl_matrix.matrix.isa import parse_cpuinfo_line
from openssl_matrix.matrix.kinds.base import RUNNER_HARNESS, RUNNER_S_TIME
from openssl_matrix.matrix.model import Matrix, Profile, Suite, Variant
from openssl_matrix.matrix.pts import PROFILE as PTS_PROFILE
from openssl_matrix.matrix.pts import result_for as pts_result_for
from openssl_matrix.measure import coreclock, guards, hostacct, portshare
from openssl_matrix.measure.benchfigure import (
    BenchFigure,
    FindingRecord,
    SeriesHead,
    SettleRecord,
    bench_figures,
)
from openssl_matrix.measure.guards import (
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
    time_basis_findings,
)
from openssl_matrix.measure.hostinfo import (
    SYSTEM_SCRIPT,
    CpuInfo,
    SystemState,
    clock_hz,
    parse_system_state,
)
from openssl_matrix.measure.invocation import CpuTimes, Invocation, split_times
from openssl_matrix.measure.library import library_invocations, parse_library
from openssl_matrix.measure.multiacct import multi_findings
from openssl_matrix.measure.runrecord import InvocationEntry, RunRecord
from openssl_matrix.measure.speedcmd import speed_invocations
from openssl_matrix.measure.tlsbench import parse_tls
from openssl_matrix.measure.topology import (
    TOPOLOGY_SCRIPT,
    CpuTopology,
    parse_cpulist,
    parse_topology,
)
from openssl_matrix.parse import figure_records, parse_speed
from openssl_matrix.results import records
from openssl_matrix.results.tree import ResultsTree, RunRef

#: Label on every bench container: the results tree it writes for (see remove_containers).
TREE_LABEL = "openssl-matrix.tree"
# Speed containers get Docker's highest CPU weight. With the default weight a speed run
# shares the CPU equally with every other container, so a `docker build` beside it (ours
# or anyone's) cut 1.1.1w's aes-128-cbc at 8192 B from ~1.2 GB/s to 0.41-0.56 GB/s on a
# 2-core host; at this weight it measured 1.18-1.32 GB/s under the same builds
# (benchmarks/run.py, docs/performance.md). It orders containers only: it takes nothing
# from processes outside Docker and changes nothing on an idle machine.
SPEED_CPU_SHARES = 262144

#: The reader of each runner's output that is not ``openssl speed``'s (a kind's runner).
_READERS: dict[str, Callable[[Invocation, str], tuple[
    list[BenchFigure], float | None, list[Finding], list[str]]]] = {
    RUNNER_S_TIME: parse_tls, RUNNER_HARNESS: parse_library}


@dataclass(frozen=True)
class CellOutcome:
    """What one cell (variant × suite × round) came to: its status, run folder, figures
    and findings, or the error that stopped it. Frozen: made once, when the cell ends."""

    variant: str
    status: str  # complete | partial | failed
    run_dir: str | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    figures: list[BenchFigure] = field(default_factory=list)
    round: int = 1
    findings: list[FindingRecord] = field(default_factory=list)
    reused: bool = False  # finished earlier in this (resumed) session, not measured again
    unbuilt: bool = False  # failed before measuring: the variant has no image on this engine


def cpu_via_container(backend: Backend, image: str) -> tuple[CpuInfo, dict[str, str]]:
    """CPU and kernel as the engine's host sees them (right for remote engines too)."""
    cpu, state = system_state(backend, image)
    return cpu, state.extra


def system_state(backend: Backend, image: str) -> tuple[CpuInfo, SystemState]:
    """CPU, load, frequency governor and boost, read in a container on the engine's host."""
    res = backend.run(image, ["/bin/sh", "-c", f"{SYSTEM_SCRIPT}; {TOPOLOGY_SCRIPT}"],
                      limits=RunLimits(timeout=60))
    if res.exit_code != 0:
        raise BenchError(f"cannot read /proc/cpuinfo in {image}: {res.stderr.strip()[:200]}")
    return parse_system_state(res.stdout)


def bench_cpus(pin: str | None, topology: CpuTopology | None, cpu: CpuInfo) -> tuple[int, ...]:
    """The CPUs a bench container may use: the profile's cpuset, else what a container on
    the engine was allowed, else every CPU /proc/cpuinfo lists."""
    if pin:
        return parse_cpulist(pin)
    if topology is not None and topology.allowed:
        return topology.allowed
    return tuple(range(max(1, cpu.logical_cpus)))


@dataclass(frozen=True)
class RunContext:
    """What every cell of one bench session shares: the engine, where results go and
    what CPU they are for."""

    matrix: Matrix
    backend: Backend
    tree: ResultsTree
    engine: EngineInfo
    git_commit: str | None
    session: str | None
    cpu_name: str
    cpu: CpuInfo
    extra: dict[str, str]
    profile_name: str
    mismatch: list[str]
    #: the port-share readings of this session, per set of cores (portshare.py)
    ports: portshare.PortBaseline = field(default_factory=portshare.PortBaseline)

    @property
    def profile(self) -> Profile | None:
        return None if self.profile_name == "auto" else self.matrix.profile(self.profile_name)

    def tree_id(self) -> str:
        return str(self.tree.root.resolve())

    def limits(self, timeout: float, suite: Suite | None = None, *,
               cpuset: str | None = None) -> RunLimits:
        """Container limits for this tree; devices only when the suite asks and the host
        has them (see :meth:`device_notes`)."""
        devices = tuple(d for d in (suite.devices if suite else ()) if self.host_has(d))
        return RunLimits(timeout=timeout, devices=devices, cpuset=cpuset,
                         labels=((TREE_LABEL, self.tree_id()),
                                 ("openssl-matrix.pid", str(os.getpid()))))

    def host_has(self, device: str) -> bool:
        if endpoint_is_local(self.engine):
            return Path(device).exists()
        return True  # a remote engine: Docker itself says if the device is missing

    def device_notes(self, suite: Suite) -> list[str]:
        return [f"the suite asks for {d}, which this host does not have: it was not passed "
                "to the container (figures come from the software path)"
                for d in suite.devices if not self.host_has(d)]


@dataclass(frozen=True)
class _Run:
    """A cell's run as its invocations find it: its folder and first record, the host
    it saw, and what was checked once before them (``_start``, then ``_prepare``, each
    making it anew). Frozen: what the invocations gather is in their ``_Attempt``s."""

    run_dir: Path
    meta: RunRecord
    """The run's record as it started (``status: running``), the checks added."""
    pin: str | None
    version: str
    run_cpu: CpuInfo
    topology: CpuTopology | None
    cpus: tuple[int, ...]
    invocations: tuple[Invocation, ...]
    clock_before: dict[str, object]
    notes: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    """The CPU's findings (can the binary run on it?), before any invocation's."""
    engine_checks: Mapping[str, EngineCheck] = field(default_factory=dict)
    vectors: Mapping[str, tuple[int, int] | None] = field(default_factory=dict)


@dataclass(frozen=True)
class _Attempt:
    """One invocation as it ended: its entry in the run's record, its figures, findings
    and warnings, and the core probe read right after it (the next one's "before").
    Frozen: built once, when the invocation ends; the run is their sum (``_finish``)."""

    name: str
    entry: InvocationEntry
    probe: dict[str, object]
    figures: tuple[BenchFigure, ...] = ()
    findings: tuple[Finding, ...] = ()
    warnings: tuple[str, ...] = ()
    failed: bool = False


@dataclass(frozen=True)
class BenchCell:
    """One variant × suite × round of a session, with everything its run needs."""

    ctx: RunContext
    variant: Variant
    tag: str
    record: records.BuildRecord
    suite: Suite
    round: int = 1
    index: int = 1
    total: int = 1
    series: SeriesHead | None = None
    only: tuple[str, ...] | None = None
    """Measure only these invocations (None: all of the suite's)."""
    why: str | None = None
    """Why this cell was added (a re-measurement, an extra round); None: planned."""

    @property
    def name(self) -> str:
        if self.series is None and self.round == 1:
            return self.variant.id
        return f"{self.variant.id}#{self.round}"

    def invocations(self, cpus: int | None = None) -> tuple[list[Invocation], list[str]]:
        """The cell's commands; ``cpus``: how many CPUs ``multi: all`` means."""
        if self.suite.suite_kind.runner == RUNNER_HARNESS:  # per operation and threads
            invocations, notes = library_invocations(
                self.variant.version.version, self.suite, self.ctx.cpu.logical_cpus or 1)
        else:
            invocations, notes = speed_invocations(
                self.variant.version.version, self.suite,
                (*self.variant.version.configure, *self.variant.configure), cpus=cpus)
        if self.only is not None:
            wanted = set(self.only)
            invocations = [i for i in invocations if i.name in wanted]
        return invocations, notes

    # -- the run -----------------------------------------------------------------------

    def run(self, settled: SettleRecord | None = None) -> CellOutcome:
        """Measure the cell; ``settled`` (what the wait for a quiet host saw) goes into
        the run's metadata."""
        run = self._prepare(self._start(settled))
        attempts: list[_Attempt] = []
        probe = run.clock_before  # the port-share reading right before each invocation
        for n, inv in enumerate(run.invocations, 1):
            attempts.append(self._invoke(run, n, inv, probe))
            probe = attempts[-1].probe
        return self._finish(run, tuple(attempts))

    def _start(self, settled: SettleRecord | None) -> _Run:
        """The run's folder and first record: the image, the host and its clock."""
        ctx, v, tag = self.ctx, self.variant, self.tag
        profile = ctx.profile
        pin = profile.cpuset if profile is not None else None
        run_cpu, state = system_state(ctx.backend, tag)
        version_res = ctx.backend.run(tag, ["openssl", "version", "-a"],
                                      limits=ctx.limits(60))
        version_line = version_res.stdout.splitlines()[0] if version_res.stdout else ""
        printed = Version.find(version_line) if version_line.startswith("OpenSSL ") else None
        version = str(printed) if printed is not None else v.version.version
        topology = parse_topology(state.extra)
        cpus = bench_cpus(pin, topology, run_cpu)
        invocations, notes = self.invocations(len(cpus))
        notes += ctx.device_notes(self.suite)
        clock, clock_source = clock_hz(profile, run_cpu, forced=bool(ctx.mismatch))
        run_dir = ctx.tree.new_run_dir(ctx.cpu_name, v.id, self.suite.name)
        meta = self._first_meta(run_cpu, state, version_res.stdout, topology, pin, clock,
                                clock_source, notes, settled)
        # the cores' effective clock right before the speed runs (and after them, below):
        # cycles per byte in core cycles (coreclock.py); the nominal clock stays above
        clock_before = self._probe(pin, aes=True)
        meta["host"]["core_clock"] = coreclock.run_clock(clock_before, {})
        records.write_meta(run_dir, meta)
        self._announce(run_dir, invocations, notes)
        return _Run(run_dir, meta, pin, version, run_cpu, topology, cpus, tuple(invocations),
                    clock_before, notes=tuple(notes))

    def _first_meta(self, run_cpu: CpuInfo, state: SystemState, version_a: str,
                    topology: CpuTopology | None, pin: str | None, clock: float | None,
                    clock_source: str | None, notes: list[str], settled: SettleRecord | None,
                    ) -> RunRecord:
        """The run's record as it starts (``status: running``)."""
        ctx, v, record, profile = self.ctx, self.variant, self.record, self.ctx.profile
        return {
            "status": "running",
            "cpu_profile": ctx.profile_name,
            "cpu_dir": ctx.cpu_name,
            "forced": bool(ctx.mismatch),
            "profile_mismatch": ctx.mismatch,
            "profile": profile.describe() if profile is not None else None,
            "variant": v.describe(),
            "suite": self.suite.describe(),
            "image_tag": self.tag,
            "image_id": record.get("image_id"),
            "build": {k: record.get(k) for k in ("digest", "configure_line",
                                                 "configure_line_in_image", "source_facts",
                                                 "endbr32",
                                                 "endbr64", "endbr32_warning",
                                                 "patches_in_image", "tarball_sha256",
                                                 "source_origin", "base_image",
                                                 "base_image_id", "engine", "shipped",
                                                 "harness")},
            "tarball_sha256": record.get("tarball_sha256"),
            "openssl_version_a": version_a,
            "host": {"cpu_model": ctx.cpu.model, "cpu_vendor": ctx.cpu.vendor,
                     # CPUID's family and model: the core, where a VM masks the name
                     "cpu_family": ctx.cpu.family, "cpu_model_number": ctx.cpu.model_number,
                     "cpu_flags": list(ctx.cpu.flags), "cpu_mhz": run_cpu.mhz,
                     "logical_cpus": ctx.cpu.logical_cpus, "kernel": ctx.extra.get("uname"),
                     "microcode": run_cpu.microcode,
                     "loadavg_before": state.loadavg,
                     "governor": state.governor, "boost": state.boost,
                     "client_machine": platform.node()},
            "pinning": {"cpuset": pin,
                        "source": f"profile {ctx.profile_name}" if pin else None},
            "topology": None if topology is None else topology.as_dict(),
            "speed_cpu_shares": SPEED_CPU_SHARES,
            "clock_hz": clock,
            "clock_source": clock_source,
            "round": self.round,
            "series": self.series,
            "subset": None if self.only is None else {"invocations": list(self.only),
                                                      "why": self.why},
            "docker": ctx.engine.to_json(),
            "matrix_path": str(ctx.matrix.path),
            "matrix_digest": ctx.matrix.digest,
            "git_commit": ctx.git_commit,
            "started": _now(),
            "session": ctx.session,
            "settle": settled,
            "notes": notes,
            "invocations": [],
        }

    def _announce(self, run_dir: Path, invocations: list[Invocation], notes: list[str],
                  ) -> None:
        """The progress line of the run, and what the suite asks that this version
        cannot do, said up front."""
        v, suite = self.variant, self.suite
        where = "+" if self.why else f"{self.index}/{self.total}"
        log.info(f"▸ [{where}] {v.id} · suite {suite.name}"
                 + (f" · round {self.round}" if self.series else "")
                 + (f" · {self.why}" if self.why else "")
                 + f" · {len(invocations)} "
                 + suite.suite_kind.run_noun
                 + f" run(s) → {run_dir}")
        if not self.why:  # what the suite asks and this version cannot do, said up front
            for note in notes:
                log.info(f"    note: {note}")

    def _prepare(self, run: _Run) -> _Run:
        """What is checked once before the invocations: the CPU, the engines, the
        capability vectors (the run anew, with them)."""
        checks = self._check_engines(run.run_dir)
        vectors = self._capability_vectors(run.version, list(run.invocations), run.run_dir)
        meta: RunRecord = {
            **run.meta, "engine_checks": {k: asdict(c) for k, c in checks.items()},
            "capability_vectors": {k: (None if w is None else [hex(w[0]), hex(w[1])])
                                   for k, w in vectors.items()}}
        return replace(run, meta=meta, findings=tuple(self._cpu_findings(run.run_cpu)),
                       engine_checks=checks, vectors=vectors)

    def _invoke(self, run: _Run, n: int, inv: Invocation, before: dict[str, object],
                ) -> _Attempt:
        """One invocation in its container: raw output kept, host accounting and port
        share read around it (``before``: the reading right before it), figures parsed
        and judged: its attempt."""
        ctx, tag, suite, pin = self.ctx, self.tag, self.suite, run.pin
        t0 = time.monotonic()
        res = ctx.backend.run(tag, inv.exec_command, env=inv.env,
                              limits=replace(ctx.limits(3600, suite, cpuset=pin),
                                             cpu_shares=SPEED_CPU_SHARES))
        # and right after it (the last one's is the clock's reading after the runs)
        after = self._probe(pin, aes=n == len(run.invocations))
        ports = portshare.run_readings(before, after, ctx.ports)
        _save_raw(run.run_dir, inv, res)
        with_samples, times = split_times(res.stderr)
        speed_stderr, acct = hostacct.from_stderr(
            with_samples, processes=inv.multi or 1,
            cpu_seconds=None if times is None else times.user + times.system)
        entry: InvocationEntry = {"name": inv.name, "command": list(inv.command),
                                 "exec": inv.exec_command, "env": inv.env,
                                 "engine": inv.engine, "path": inv.path,
                                 "direction": inv.direction, "multi": inv.multi,
                                 "exit_code": res.exit_code,
                                 "started": res.started, "ended": res.ended,
                                 "seconds": round(res.seconds, 3),
                                 "cpu_times": None if times is None else asdict(times),
                                 "host_accounting": None if acct is None
                                 else acct.as_dict(), "port_share": ports}
        flagged = ""  # the progress line says which figures a guard flagged
        said: list[str] = []  # and a TLS run's guards say why, after it
        if res.exit_code != 0:
            attempt = _Attempt(inv.name, {**entry, "status": "failed"}, after,
                               warnings=(self._failed(inv, res, speed_stderr),), failed=True)
        else:
            attempt, flagged, said = self._take(run, inv, res.stdout, speed_stderr, times,
                                                acct, ports, entry, after)
        self._progress(n, len(run.invocations), attempt.entry, acct,
                       f"{flagged} ({time.monotonic() - t0:.1f}s")
        for w in said:
            log.warn(f"  {self.variant.id}: {w}")
        return attempt

    def _progress(self, n: int, total: int, entry: InvocationEntry,
                  acct: hostacct.HostAccounting | None, tail: str) -> None:
        """An invocation's progress line: its status, what a guard flagged, its time and
        the host around it."""
        host = "" if acct is None else f"; {acct.describe()}"
        per_figure = entry.get("host_accounting")
        if self.suite.suite_kind.accounting_fields and isinstance(per_figure, dict):
            # such a kind's entry holds one reading per figure (``_take``)
            readings = cast("dict[str, hostacct.AccountingRecord | None]", per_figure)
            busy = [a["foreign_cores"] for a in readings.values() if a]
            host = f"; others up to {max(busy):.2f} core(s) busy" if busy else ""
        log.info(f"    [{n}/{total}] {entry['name']}: {entry['status']}{tail}{host})")

    def _failed(self, inv: Invocation, res: RunResult, speed_stderr: str) -> str:
        """An invocation that exited non-zero, said: the warning it files."""
        last = speed_stderr.strip().splitlines()[-1] if speed_stderr.strip() else ""
        msg = f"{inv.name}: `{' '.join(inv.command)}` exited {res.exit_code}: {last}"
        if res.exit_code == 132 or "Illegal instruction" in res.stderr:
            msg += " (SIGILL: the binary uses an instruction this CPU lacks)"
        log.warn(f"  {self.variant.id}: {msg}")
        return msg

    def _take(self, run: _Run, inv: Invocation, stdout: str, speed_stderr: str,
              times: CpuTimes | None, acct: hostacct.HostAccounting | None,
              ports: portshare.PortReadings, entry: InvocationEntry, after: dict[str, object],
              ) -> tuple[_Attempt, str, list[str]]:
        """A finished invocation's figures, parsed and judged; its entry in the record
        completed. (its attempt, flagged note, warnings to say after the progress line)."""
        said: list[str] = []  # a TLS run's guards say why, after the progress line
        recs, elapsed, inv_findings, parse_warnings = self._parse_one(
            inv, stdout, speed_stderr, run.version, times, acct, run.engine_checks,
            run.vectors, run.run_cpu)
        entry = {**entry, "elapsed_measured": elapsed}
        inv_findings = [*inv_findings, *portshare.port_findings(inv.name, ports)]
        if inv.multi:  # per child: did each get its CPU? (multiacct)
            child_found, bal = multi_findings(inv.name, inv.multi, stdout, acct)
            entry["children"] = bal.as_dict()
            if run.topology is not None:
                entry["placement"] = run.topology.placement(inv.multi, run.cpus)
            if child_found and not any(f.code == CONTENDED for f in inv_findings):
                inv_findings = [*inv_findings, *child_found]
        fields = self.suite.suite_kind.accounting_fields
        if fields:  # one accounting per s_time run or harness window, taken inside
            entry["host_accounting"] = {
                " ".join(str(r.get(f)) for f in fields): r.host_accounting for r in recs}
            recs = [r.without("host_accounting") for r in recs]
        if self.suite.suite_kind.warnings_named:  # its guards applied per operation
            warnings, said = list(parse_warnings), parse_warnings
        else:
            warnings = [f"{inv.name}: {w}" for w in parse_warnings]
        entry["status"] = "ok" if recs else "no-figures"
        entry["figures"] = len(recs)
        if not recs:
            warnings.append(f"{inv.name}: no figures in the output")
        return (_Attempt(inv.name, entry, after, figures=tuple(recs),
                         findings=tuple(inv_findings), warnings=tuple(warnings),
                         failed=not recs), flagged_note(recs, inv_findings), said)

    def _finish(self, run: _Run, attempts: tuple[_Attempt, ...]) -> CellOutcome:
        """Findings across invocations, core cycles, the figures and the final record:
        the run's attempts summed."""
        v, run_dir = self.variant, run.run_dir
        by_invocation = {a.name: list(a.figures) for a in attempts if not a.failed}
        findings = [*run.findings, *(f for a in attempts for f in a.findings),
                    *cross_findings(list(run.invocations), by_invocation, run.version,
                                    run.run_cpu.flags, bool(run.vectors))]
        after = attempts[-1].probe if attempts else self._probe(run.pin, aes=True)
        meta: RunRecord = {**run.meta, "invocations": [a.entry for a in attempts],
                           "host": {**run.meta["host"], "core_clock": coreclock.run_clock(
                               run.clock_before, after)}}
        clock = core_cycles(meta, meta["clock_hz"])
        figures = [with_cycles(rec, clock) for rec in apply_findings(
            [f for a in attempts for f in a.figures], findings)]
        warnings = [*run.notes, *(w for a in attempts for w in a.warnings)]
        for f in findings:
            text = f"{f.code}: " + (f"{f.invocation}: " if f.invocation else "") + f.message
            if text not in warnings:
                warnings.append(text)
                log.warn(f"  {v.id}: {text}")
        records.write_figures(run_dir, [f.to_json() for f in figures])
        failed = sum(a.failed for a in attempts)
        status = "complete" if failed == 0 else ("failed" if failed == len(attempts)
                                                 else "partial")
        meta.update({"ended": _now(), "warnings": warnings, "status": status,
                     "findings": [f.as_dict() for f in findings]})
        records.write_meta(run_dir, meta)
        return CellOutcome(v.id, status, run_dir=str(run_dir), warnings=warnings,
                           figures=figures, round=self.round,
                           findings=[f.as_dict() for f in findings],
                           error=None if status == "complete" else f"{failed} invocation(s) "
                           f"failed; see {run_dir}/raw")

    # -- per-run checks -----------------------------------------------------------------

    def _parse_one(self, inv: Invocation, stdout: str, speed_stderr: str, version: str,
                   times: CpuTimes | None, acct: hostacct.HostAccounting | None,
                   engine_checks: Mapping[str, EngineCheck],
                   vectors: Mapping[str, tuple[int, int] | None], cpu: CpuInfo,
                   ) -> tuple[list[BenchFigure], float | None, list[Finding], list[str]]:
        kind = self.suite.suite_kind
        reader = _READERS.get(kind.runner)
        if reader is not None:
            return reader(inv, stdout)
        try:
            parsed = parse_speed(stdout, speed_stderr, version=version,
                                 evp=kind.speed_evp(inv.path, inv.command))
        except ParseError as perr:
            return [], None, [], [f"output not understood: {perr.message}"]
        recs = [self._ran(rec, inv, acct) for rec in bench_figures(figure_records(parsed))]
        elapsed = sum(p.seconds_reported for p in parsed.progress) or None
        found: list[Finding] = []
        if inv.engine is not None:
            found += engine_findings(inv.name, inv.engine, engine_checks.get(inv.engine),
                                     speed_stderr, path=inv.path, version=version)
        # An engine that does the work lets the process wait; a software run must compute.
        contended = guards.contended_findings(inv.name, acct, software=inv.engine is None)
        found += contended
        if not contended:  # a process that waited for a CPU is contention, not offload
            found += time_basis_findings(inv.name, times, elapsed)
        legacy, legacy_notes = legacy_path_findings(
            inv.name, version, inv.path, [str(r.algorithm) for r in recs])
        found += legacy
        if inv.ia32cap is not None:
            if vectors.get("") is not None and vectors.get(inv.mask.name) is not None:
                found += mask_vector_findings(inv.name, inv.mask.name, inv.ia32cap,
                                              vectors.get(""), vectors.get(inv.mask.name))
            else:  # not observable (before 3.0): what the version's parser does with it
                found += mask_syntax_findings(inv.name, inv.mask.name, inv.ia32cap, version,
                                              cpu.flags)
        return recs, elapsed, found, [*parsed.warnings, *legacy_notes]

    def _ran(self, rec: BenchFigure, inv: Invocation, acct: hostacct.HostAccounting | None,
             ) -> BenchFigure:
        """A speed figure with what ran it: the invocation, the host around it and, for a
        PTS-comparable kind, the PTS result it is (a new record)."""
        if rec.algorithm == "evp" and len(inv.algorithms) == 1:
            rec = rec.with_(algorithm=inv.algorithms[0])  # -multi labels the EVP row "evp"
        rec = rec.with_(mask=inv.mask.name, ia32cap=inv.ia32cap, invocation=inv.name,
                        engine=inv.engine, path=inv.path, direction=inv.direction,
                        multi=inv.multi)
        if acct is not None:
            rec = rec.with_(own_share=None if acct.own_share is None
                            else round(acct.own_share, 4),
                            foreign_cores=round(acct.foreign_cores, 4),
                            steal_cores=round(acct.steal_cores, 4))
        if self.suite.suite_kind.pts_comparable:  # the PTS result it is, in PTS's unit
            res = pts_result_for(str(rec.algorithm), rec.operation, rec.block_size)
            if res is not None:
                rec = rec.with_(pts_result=res.title, pts_unit=res.unit,
                                pts_profile=PTS_PROFILE)
        return rec

    def _probe(self, pin: str | None, *, aes: bool = False) -> dict[str, object]:
        """One reading of the core probe (clock, port share; AESENC's latency with
        ``aes``), the session's port-share readings started first where it has none
        for these cores (portshare.py)."""
        got = coreclock.reading(self.ctx.backend, pin, aes=aes)
        if "ports_per_cycle" in got and self.ctx.ports.share(got) is None:
            for _ in range(portshare.CALIBRATION_READINGS):
                self.ctx.ports.observe(coreclock.reading(self.ctx.backend, pin, aes=False))
        return got

    def _cpu_findings(self, cpu: CpuInfo) -> list[Finding]:
        """Can this binary run on the CPU its results are filed under?"""
        v, profile, mismatch = self.variant, self.ctx.profile, self.ctx.mismatch
        endbr32 = self.record.get("endbr32")
        endbr = endbr32 if isinstance(endbr32, int) else None
        has, lacks = measured_cpu_sets(cpu.flags)
        out = [Finding(CANNOT_RUN, f"on this host ({cpu.model}): {p}")
               for p in cpu_compat_problems(arch=v.arch, march=v.march, endbr32=endbr,
                                            has=has, lacks=lacks)]
        if profile is not None and mismatch:
            has, lacks = profile_cpu_sets(profile.flags, profile.lacks, profile.march)
            out += [Finding(CANNOT_RUN,
                            f"on the {profile.name} CPU ({profile.description}): {p}; these "
                            "figures were measured elsewhere and could not be measured there")
                    for p in cpu_compat_problems(arch=v.arch, march=v.march, endbr32=endbr,
                                                 has=has, lacks=lacks)]
        return out

    def _check_engines(self, run_dir: Path) -> dict[str, EngineCheck]:
        checks: dict[str, EngineCheck] = {}
        for engine in self.suite.engines:
            if engine is None:
                continue
            res = self.ctx.backend.run(self.tag, ["openssl", "engine", "-t", "-c", engine],
                                       limits=RunLimits(timeout=60))
            atomic_write(run_dir / "raw" / f"engine-check--{engine}.stdout", res.stdout)
            atomic_write(run_dir / "raw" / f"engine-check--{engine}.stderr", res.stderr)
            checks[engine] = read_engine_check(engine, res.exit_code, res.stdout, res.stderr)
            log.info(f"    engine {engine}: {checks[engine].detail}")
        return checks

    def _capability_vectors(self, version: str, invocations: list[Invocation],
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
            res = self.ctx.backend.run(self.tag, ["openssl", "version", "-c"], env=env,
                                       limits=RunLimits(timeout=60))
            label = name or "unmasked"
            atomic_write(run_dir / "raw" / f"cpuinfo--{label}.stdout", res.stdout)
            out[name] = parse_cpuinfo_line(res.stdout) if res.exit_code == 0 else None
        return out


def flagged_note(recs: Sequence[BenchFigure], found: Sequence[Finding]) -> str:
    """``, flagged: 2 contended of 4 figure(s)`` for a progress line, or nothing: a speed
    run's findings flag all its figures, a TLS run's figures carry their own status."""
    codes = sorted({f.code for f in found})
    if codes:
        return f", flagged: {', '.join(codes)}"
    bad = [str(r.status) for r in recs if r.status not in (None, "ok")]
    if not bad:
        return ""
    what = ", ".join(f"{bad.count(s)} {s}" for s in sorted(set(bad)))
    return f", flagged: {what} of {len(recs)} figure(s)"


def _save_raw(run_dir: Path, inv: Invocation, res: RunResult) -> None:
    raw = run_dir / "raw"
    atomic_write(raw / f"{inv.name}.stdout", res.stdout)
    atomic_write(raw / f"{inv.name}.stderr", res.stderr)


def outcome_from(variant: str, ref: RunRef) -> CellOutcome:
    """The outcome of a cell finished earlier, read back from its run folder."""
    meta = ref.meta
    figures = bench_figures(records.figures_as_dicts(records.read_figures(ref.path)))
    status = str(meta.get("status"))
    return CellOutcome(variant, status, run_dir=str(ref.path),
                       warnings=list(meta.get("warnings") or []),
                       figures=figures,
                       error=None if status == "complete" else f"see {ref.path}/raw",
                       round=int(meta.get("round") or 1),
                       findings=list(meta.get("findings") or []), reused=True)


def cross_findings(invocations: list[Invocation],
                   by_invocation: dict[str, list[BenchFigure]], version: str,
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


def with_cycles(rec: BenchFigure, clock: float | None) -> BenchFigure:
    """A figure with the core clock it is counted in and its cycles per byte or per
    operation (a new record; ``guards`` is there, empty if no guard concerned it)."""
    multi = rec.multi or 1
    return rec.with_(
        clock_hz=clock, cycles_per_byte=cycles(rec.bytes_per_s, clock, multi),
        cycles_per_op=cycles(rec.ops_per_s if rec.block_size is None else None,
                                    clock, multi),
        guards=list(rec.guards))


def core_cycles(meta: RunRecord, nominal: float | None) -> float | None:
    """The clock cycles are counted in: the cores' own, measured around the run
    (coreclock.py), where it was; the nominal clock (a profile's ``clock_ghz``, the model
    name's GHz, ``cpu MHz``) stays in ``meta`` as ``nominal_clock`` for provenance, and is
    used where nothing was measured (a remote engine). Updates ``meta``'s clock fields."""
    ghz = (meta["host"].get("core_clock") or {}).get("ghz")
    if not isinstance(ghz, (int, float)) or ghz <= 0:
        return nominal
    meta["nominal_clock"] = {"hz": nominal, "source": meta.get("clock_source")}
    clock = float(ghz) * 1e9
    meta["clock_hz"] = clock
    meta["clock_source"] = (f"measured: the cores' clock around the run, {ghz:.2f} GHz "
                            "(coreclock.py)")
    return clock

