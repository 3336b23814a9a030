"""What each ``invoke matrix <command>`` does, as plain functions returning an exit code."""

from __future__ import annotations

import inspect
import json as _json
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from openssl_matrix.cli.bisectcmd import cmd_bisect
from openssl_matrix.cli.pastecmd import (
    MAX_REPORT_BYTES,
    block_sizes_flag,
    cmd_import,
    cmd_parse,
)
from openssl_matrix.cli.paths import matrix_path, results_root, results_tree
from openssl_matrix.cli.profilecmd import cmd_profile
from openssl_matrix.cli.summary import (
    SuiteOutcomes,
    bench_failed,
    bench_summaries,
)
from openssl_matrix.cli.table import terminate_as_interrupt as _terminate_as_interrupt
from openssl_matrix.core import log
from openssl_matrix.core.errors import (
    BuildError,
    ConfigError,
    DockerUnavailable,
    FatalError,
    LabError,
    ProfileMismatch,
    UsageError,
)
from openssl_matrix.core.files import atomic_write, read_bounded
from openssl_matrix.core.names import clip, inside, name_problem, safe_name
from openssl_matrix.core.outputs import (
    RenderedFolder,
    check_output_file,
    refuse_foreign_file,
)
from openssl_matrix.core.resources import USER_REPORTS, project_reports, user_folder
from openssl_matrix.core.version import sort_key
from openssl_matrix.engine.backend import Backend, DockerBackend
from openssl_matrix.engine.buildclaims import POLL
from openssl_matrix.engine.engines import describe_spec
from openssl_matrix.engine.hostlock import EngineBusy
from openssl_matrix.engine.ship import Peer, Shipper, check_mode, check_registry
from openssl_matrix.images.build import Builder
from openssl_matrix.images.render import render as render_variant
from openssl_matrix.images.sources import check_version, default_urls, pin_source, read_pins
from openssl_matrix.lab.run import (
    Launcher,
    close_sessions,
    lab_outcome,
    print_summaries,
    run_lab,
    run_peers,
    split_cpus,
    tree_for_lab,
)
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.model import MAX_BYTES, MAX_REPEAT, NAME, Matrix, Suite, Variant
from openssl_matrix.matrix.patches import endbr32_warning
from openssl_matrix.measure.cpumodel import core_of_cpu, core_of_march, summary
from openssl_matrix.measure.hostinfo import parse_cpuinfo, profile_mismatches
from openssl_matrix.measure.session import DEFAULT_SETTLE, MAX_ATTEMPTS, Bencher, build_command
from openssl_matrix.parse.encoding import paste_text
from openssl_matrix.report.charts import DRAWN, Charts
from openssl_matrix.report.medians import SESSION_FIELDS, session_medians
from openssl_matrix.report.page import build_report
from openssl_matrix.report.sessions import Selection
from openssl_matrix.repro.check import check as check_spec
from openssl_matrix.repro.draft import check_draft, draft_spec, refuse_existing, write_draft
from openssl_matrix.repro.draft import summary as draft_summary
from openssl_matrix.repro.resolve import Environment
from openssl_matrix.repro.run import reproduce
from openssl_matrix.repro.specload import find_spec, load_spec
from openssl_matrix.repro.verdicts import as_json, render_text
from openssl_matrix.results.export import records, render, render_rows, written_by_export
from openssl_matrix.results.records import FINISHED
from openssl_matrix.results.tree import ResultsTree, lab_worker
from openssl_matrix.sweep.table import build_status, describe_versions, sha256_status


def _matrix(path: str) -> Matrix:
    return load_matrix(matrix_path(path), default_urls=default_urls)


def bounded(flag: str, value: Any, low: int, high: int) -> int:
    """A whole-number flag within [low, high], else UsageError naming the range."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UsageError(f"{flag} {clip(value, 40)}: expected a whole number from {low} to "
                         f"{high}")
    return value


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, cwd=Path(__file__).resolve().parents[2])
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def cmd_list(*, target: str, matrix: str, results: str, json: bool, only: str = "",
             all: bool = False) -> int:
    """The default selection; --all adds the opt-in variants; --only filters."""
    m = _matrix(matrix)
    tree = results_tree(results, matrix)
    pins = read_pins(m.path.with_suffix(".lock"))
    rows = []
    selected = m.select(only or None, every=all)
    for v in selected:
        info = v.describe()
        info["sha256_status"] = sha256_status(v.version.version, v.version.sha256, pins,
                                              v.version)
        info["builds_here"] = build_status(v.version.version, v.arch, v.asm,
                                           declared_sha256=v.version.sha256)
        info["image"] = None
        info["endbr32"] = None
        info["endbr32_warning"] = None
        latest = tree.read_latest(v.id)
        if latest is not None:
            info["image"] = latest.tag
            record = tree.build_record(v.id, latest.digest)
            if record:
                info["endbr32"] = record.get("endbr32")
                info["endbr32_warning"] = _endbr32_warning(v, record)
        rows.append(info)
    if json:
        print(_json.dumps(rows, indent=2))
        return 0
    width = max(len(r["id"]) for r in rows)
    pwidth = max(7, *(len(",".join(p["name"] for p in r["patches"])) for r in rows))
    print(f"{'variant':<{width}}  {'version':<8} {'asm':<6} {'arch':<6} {'march':<10} "
          f"{'build':<8} {'patches':<{pwidth}} image")
    for r in rows:
        patches = ",".join(p["name"] for p in r["patches"]) or "-"
        endbr = f"  endbr32={r['endbr32']}" if r["endbr32"] is not None else ""
        print(f"{r['id']:<{width}}  {r['version']:<8} {'asm' if r['asm'] else 'no-asm':<6} "
              f"{r['arch']:<6} {r['march'] or 'default':<10} "
              f"{'default' if r['default'] else 'opt-in':<8} {patches:<{pwidth}} "
              f"{r['image'] or '(not built)'}{endbr}")
        if r["endbr32_warning"]:
            print(f"    ⚠ {r['endbr32_warning']}")
        elif r["sigill_cpus"] and r["endbr32"] is None:
            print(f"    meant for {', '.join(r['sigill_cpus'])} (no ENDBR32 allowed): the count "
                  "is checked when it is built")
    print("\nversions (checksum; known to build on this kind of machine, from the release "
          "sweep in docs/building.md):")
    print("\n".join(describe_versions(selected, pins)))
    n_default = sum(1 for r in rows if r["default"])
    hidden = len(m.all_variants) - len(rows)
    more = f"; {hidden} more not shown: `invoke matrix list --all`" \
        if hidden > 0 and not all else ""
    print(f"\n{len(rows)} variant(s) from {m.path}, {n_default} built by default "
          f"(opt-in ones are built with --only PATTERN){more}; suites: "
          + ", ".join(s.name + (" (default)" if s.name == m.default_suite else "")
                      for s in m.suites))
    return 0


def cmd_render(*, target: str, matrix: str, results: str, only: str, output: str,
               all: bool = False) -> int:
    m = _matrix(matrix)
    out = Path(output or "dockerfiles/rendered")
    rendered = [(inside(out, out / f"{safe_name(v.id, 'variant id')}.Dockerfile"),
                 render_variant(v).dockerfile) for v in m.select(only or None, every=all)]
    folder = RenderedFolder(out)
    for path, text in rendered:  # every refusal before the first write
        folder.check(path, text)
    for path, text in rendered:
        folder.write(path, text)
        print(path)
    return 0


def _endbr32_warning(variant: Variant | None, record: dict[str, Any] | None) -> str | None:
    """"will die with SIGILL" for a variant meant for a CPU without ENDBR32 whose built
    libcrypto has some (from its build record)."""
    if variant is None or not record:
        return None
    count = record.get("endbr32")
    return endbr32_warning(variant.id, variant.sigill_cpus,
                           count if isinstance(count, int) else None)


#: How a command reaches a Docker engine: (``base_url``, ``allow_plain_tcp``) -> the
#: engine. ``base_url`` None is the environment's (DOCKER_HOST, the current context), else
#: a profile's docker_host or a lab peer's; ``allow_plain_tcp`` lets ``tcp://`` without TLS
#: through. The command line's is :func:`docker_engine`; the fake-engine tests hand their
#: own to :func:`handlers`. No command makes an engine any other way.
EngineFactory = Callable[[str | None, bool], Backend]


def docker_engine(base_url: str | None, allow_plain_tcp: bool) -> Backend:
    """The real engine, through the Docker SDK (engine/backend.py)."""
    return DockerBackend(base_url, allow_plain_tcp=allow_plain_tcp)


def _backend_for(m: Matrix, cpu: str, allow_plain_tcp: bool, engine: EngineFactory,
                 ) -> Backend:
    """The Docker engine of a CPU profile (its docker_host), else the environment's."""
    profile = m.profile(cpu) if cpu and cpu != "auto" else None
    if profile is not None and profile.docker_host:
        log.info(f"profile {profile.name}: Docker engine {profile.docker_host}")
        return engine(profile.docker_host, allow_plain_tcp)
    return engine(None, allow_plain_tcp)


def _lab(command: str, m: Matrix, cpus: list[str], flags: dict[str, Any], results: str, *,
         launcher: Launcher | None, wait: bool = False) -> int:
    """``--cpu=a,b,...``: every profile's engine at once (lab.py)."""
    for name in cpus:
        if name != "auto":
            m.profile(name)  # an unknown profile is refused before any engine starts
    tree = results_tree(results, str(m.path))
    if command == "bench":
        with _terminate_as_interrupt(), tree_for_lab(tree, wait=wait):
            states = run_lab(m, command, cpus, flags, tree, launch=launcher)
            if all(s.code == 0 for s in states):
                close_sessions(tree, m, cpus, flags)
    else:
        with _terminate_as_interrupt():
            states = run_lab(m, command, cpus, flags, tree, launch=launcher)
    print_summaries(states)
    lab_outcome(states, cpus)
    return 0


def _peers(m: Matrix, cpu: str, allow_plain_tcp: bool, engine: EngineFactory,
           ) -> Callable[[], list[Any]]:
    """The engines images may be shipped from, connected when first needed: the local
    engine (the one `build` without a remote profile uses), when it is not the target,
    and in a lab the run's other engines (``lab.run_peers``). Engines the command does
    not name are never contacted; one that cannot be reached is left out with a warning."""
    target = m.profile(cpu) if cpu and cpu != "auto" else None
    mine = (target.docker_host if target is not None else None) or "local"
    wanted = {} if mine == "local" else {"local": "the local engine"}
    for names, url in run_peers():  # read now: in the worker's own thread
        if url != mine:
            wanted[url] = f"{names} ({url})" if url != "local" else \
                f"{names} (the local engine)"

    def connect() -> list[Peer]:
        found = []
        for url, label in wanted.items():
            try:
                backend = engine(None if url == "local" else url, allow_plain_tcp)
                found.append(Peer(label, backend, backend.engine_info()))
            except FatalError as exc:  # unreachable, or refused (plain tcp://)
                log.warn(f"{label} is not reachable: no images are shipped from it "
                         f"({exc.message})")
        return found

    return connect


def cmd_build(*, target: str, matrix: str, results: str, only: str, jobs: int | None,
              force: bool, cpu: str, all: bool = False, allow_plain_tcp: bool = False,
              images: str = "", registry: str = "", ccache: bool = False,
              engine: EngineFactory = docker_engine, launcher: Launcher | None = None,
              claim_poll: float = POLL) -> int:
    n_jobs = bounded("--jobs", jobs or 1, 1, 64)
    mode = check_mode(images)
    registry = check_registry(registry, mode) or ""
    m = _matrix(matrix)
    variants = m.select(only or None, every=all)
    cpus = split_cpus(cpu)
    if len(cpus) > 1:
        return _lab("build", m, cpus, {
            "matrix": matrix, "results": results, "only": only, "jobs": jobs, "force": force,
            "all": all, "allow_plain_tcp": allow_plain_tcp, "images": images,
            "registry": registry, "ccache": ccache}, results, launcher=launcher)
    backend = _backend_for(m, cpu, allow_plain_tcp, engine)
    tree = results_tree(results, matrix)
    shipper = Shipper(backend, backend.engine_info(), mode, _peers(m, cpu, allow_plain_tcp, engine),
                      tree.ships, registry=registry or None)
    in_lab = lab_worker()
    builder = Builder(m, backend, tree, images=shipper,
                      engine_tag=(cpu or "auto") if in_lab else None,
                      claims=in_lab and bool(run_peers()), claim_poll=claim_poll,
                      compiler_cache="openssl-matrix" if ccache else None)
    with _terminate_as_interrupt():
        outcomes = builder.build(variants, jobs=n_jobs, force=force)
    by_id = {v.id: v for v in variants}
    print("\nbuild summary")
    width = max(len(o.variant) for o in outcomes)
    for o in outcomes:
        mark = {"built": "✓ built", "up-to-date": "✓ up to date", "shipped": "✓ shipped",
                "failed": "✕ FAILED"}[o.status]
        extra = f"{o.seconds:.0f}s" if o.status in ("built", "shipped") else ""
        endbr = o.record.get("endbr32") if o.record else None
        print(f"  {o.variant:<{width}}  {mark:<14} {extra:>6}  {o.tag or ''}"
              + (f"  endbr32={endbr}" if endbr is not None else ""))
        warning = _endbr32_warning(by_id.get(o.variant), o.record)
        if warning:
            print(f"      ⚠ {warning}")
        if o.status == "failed":
            print(f"      {(o.error or '').splitlines()[0]}")
            if o.log_path:
                print(f"      log: {o.log_path}")
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        raise BuildError(f"{len(failed)} of {len(outcomes)} variant(s) failed to build",
                         hint="the other variants were built; see the logs above")
    return 0


def cmd_bench(*, target: str, matrix: str, results: str, cpu: str, only: str, suite: str,
              force: bool, wait: bool, repeat: int | None, fresh: bool = False,
              settle: str | float | None = None, no_wait: bool = False,
              allow_plain_tcp: bool = False, engine: EngineFactory = docker_engine,
              launcher: Launcher | None = None) -> int:
    if not split_cpus(cpu):
        raise UsageError("`invoke matrix bench` needs --cpu=PROFILE",
                         hint="--cpu=auto measures this host; named profiles are in the "
                         "matrix's 'profiles'")
    m = _matrix(matrix)
    variants = m.select(only)
    names = [n.strip() for n in (suite or "").split(",") if n.strip()] or [""]
    suites = [m.suite(n or None) for n in names]
    if repeat:
        bounded("--repeat", repeat, 1, MAX_REPEAT)
    settle_s = _settle_seconds(settle)
    cpus = split_cpus(cpu)
    if len(cpus) > 1:
        return _lab("bench", m, cpus, {
            "matrix": matrix, "results": results, "only": only, "suite": suite,
            "force": force, "wait": False, "repeat": repeat, "fresh": fresh,
            "settle": settle, "no_wait": no_wait, "allow_plain_tcp": allow_plain_tcp},
            results, launcher=launcher, wait=wait)
    tree = results_tree(results, matrix)
    backend = _backend_for(m, cpu, allow_plain_tcp, engine)
    tree.lock(wait=wait)
    try:
        with _terminate_as_interrupt():
            bencher = Bencher(m, backend, tree, engine=backend.engine_info(),
                              git_commit=_git_commit(), settle=settle_s,
                              wait_for_host=not no_wait, max_attempts=MAX_ATTEMPTS,
                              suites=[s.name for s in suites])
            per_suite = _bench_suites(bencher, tree, variants, suites, cpu, force=force,
                                      repeat=repeat, fresh=fresh)
            # in a lab, the lab closes the sessions once every engine finished, so a
            # rerun after one engine failed does not measure the others again
            if not tree.shared and all(error is None and all(o.status in FINISHED
                                                             for o in outs)
                                       for _, outs, error in per_suite):
                bencher.close_sessions()
    finally:
        tree.unlock()
    failures, cells, unbuilt = bench_summaries(m, per_suite, len(suites) > 1, repeat,
                                                bencher.interleaved)
    # a variant that is not built: one line, whatever the number of suites
    failures += [f"{vid}: not built on this engine — {'suite' if len(names) == 1 else 'suites'}"
                 f" {', '.join(names)} could not run on it; run "
                 f"`{build_command([vid], tree.root)}` first" for vid, names in unbuilt.items()]
    if failures:
        bench_failed(failures, cells, unbuilt, per_suite, tree.root)
    return 0


def _settle_seconds(settle: str | float | None) -> float:
    """``--settle``: the seconds to wait for a quiet host before each cell (0 to 3600)."""
    try:
        settle_s = DEFAULT_SETTLE if settle in (None, "") else float(str(settle))
    except ValueError:
        settle_s = -1.0
    if not 0 <= settle_s <= 3600:  # also refuses nan and inf
        raise UsageError(f"--settle {settle}: give the seconds to wait for a quiet host "
                         "before each cell, 0 to 3600 (0: do not wait)")
    return settle_s


def _bench_suites(bencher: Bencher, tree: ResultsTree, variants: list[Variant],
                  suites: list[Suite], cpu: str, *, force: bool, repeat: int | None,
                  fresh: bool) -> SuiteOutcomes:
    """Bench every suite in turn; a suite that fails is noted and the next one runs
    (unless the engine is gone, the CPU is the wrong one or the engine is busy)."""
    per_suite: SuiteOutcomes = []
    for the_suite in suites:
        try:
            outcomes = bencher.bench(variants, the_suite, cpu, force=force,
                                     repeat=int(repeat) if repeat else None,
                                     fresh=fresh,
                                     keep_open=len(suites) > 1 or tree.shared)
        except (DockerUnavailable, ProfileMismatch, EngineBusy):
            raise  # the engine is gone, the wrong CPU or busy: no suite can run
        except FatalError as exc:  # one failing suite never stops the others
            log.error(f"suite {the_suite.name}: {exc}")
            per_suite.append((the_suite.name, [], str(exc)))
            continue
        per_suite.append((the_suite.name, outcomes, None))
    return per_suite


def cmd_profiles(*, target: str, matrix: str, results: str, json: bool) -> int:
    """The matrix's CPU profiles, and which of them describes the machine this runs on."""
    m = _matrix(matrix)
    try:
        here = parse_cpuinfo(Path("/proc/cpuinfo").read_text(encoding="utf-8"))
    except OSError:
        here = None
    rows = []
    for p in m.profiles:
        info = p.describe()
        if p.docker_host:
            info["this_machine"] = None
            info["engine"] = describe_spec(p.docker_host)
        elif here is not None:
            info["this_machine"] = profile_mismatches(p, here) or True
        core = core_of_march(p.march)
        info["cpu_model"] = summary(core) if core is not None else None
        rows.append(info)
    if json:
        print(_json.dumps({"this_machine": here.model if here else None, "auto": here.slug()
                           if here else None, "profiles": rows}, indent=2))
        return 0
    if here is not None:
        print(f"this machine: {here.model} ({here.vendor}); --cpu=auto files results "
              f"under {here.slug()}")
        mine = core_of_cpu(here.vendor, here.family, here.model_number, here.model)
        print(f"  CPU model: {summary(mine) if mine else 'this core is not in the model'}")
    for r in rows:
        engine = r.get("engine") or {}
        how = str(engine.get("transport"))
        if how == "tcp (no TLS)":
            how += ": refused without --allow-plain-tcp; for TLS set DOCKER_CERT_PATH or " \
                "use a context (docs/lab.md)"
        elif engine.get("tls_verify") is False:
            how += ", the engine's certificate is not checked"
        where = "local engine" if not r["docker_host"] else \
            f"engine {r['docker_host']} — {engine['problem']}" if engine.get("problem") else \
            f"engine {r['docker_host']} ({how})"
        match = r.get("this_machine")
        verdict = ("matches this machine" if match is True else "remote: checked at bench "
                   "time" if match is None else "not this machine: " + "; ".join(match))
        clock = f"{r['clock_ghz']} GHz" if r["clock_ghz"] else "clock from the host"
        print(f"  {r['name']:<14} {r['description']}\n"
              f"  {'':<14} march={r['march'] or '-'}, {clock}, "
              f"cpuset={r['cpuset'] or '-'}, {where}; {verdict}")
        if r["cpu_model"]:
            print(f"  {'':<14} CPU model: {r['cpu_model']}")
    return 0


def cmd_export(*, target: str, matrix: str, results: str, format: str,
               output: str, per_session: bool = False, force: bool = False) -> int:
    fmt = format or "csv"
    if fmt not in ("csv", "jsonl"):
        raise UsageError(f"--format {fmt!r} is not one of csv, jsonl")
    tree = results_tree(results, matrix)
    dest = check_output_file(output, tree.root) if output else None
    if dest is not None:  # a file export did not write is left alone (unless --force)
        refuse_foreign_file(dest, written_by_export, "export", force=force)
    text = render_rows(list(session_medians(records(tree))), SESSION_FIELDS, fmt) \
        if per_session else render(tree, fmt)
    if dest is not None:
        atomic_write(dest, text)
        log.info(f"wrote {output}")
    else:
        sys.stdout.write(text)
    return 0


def cmd_pin(*, target: str, matrix: str, results: str, file: str, force: bool) -> int:
    if not file:
        raise UsageError("`invoke matrix pin VERSION` needs --file PATH (a tarball you trust)")
    check_version(target)  # before the matrix: the version named is the first thing said
    lock = _pins_beside(matrix_path(matrix))
    digest = pin_source(target, Path(file), lock, force=force)
    print(f"pinned openssl {target}: sha256 {digest} (recorded in {lock})")
    return 0


def _pins_beside(matrix: Path) -> Path:
    """The lock (pins) file of an existing matrix file: ``m.yaml`` -> ``m.lock`` beside it.
    A mistyped --matrix is refused (a pin there would have no effect), as is a matrix whose
    lock file would be the matrix itself (``--matrix m.lock``)."""
    shown = str(matrix)[:200]
    if not matrix.is_file():
        raise ConfigError(f"{shown}: no such matrix file" if not matrix.exists() else
                          f"{shown}: not a regular file", hint="pin records the tarball's "
                          "sha256 in the lock file beside the matrix: give --matrix the "
                          "matrix.yaml you build with")
    lock = matrix.with_suffix(".lock")
    if lock.resolve() == matrix.resolve():
        raise ConfigError(f"{shown} is a lock file name, not a matrix (the pin would "
                          "overwrite it)", hint="give --matrix the matrix's .yaml file")
    return lock


def _reports_dirs(matrix: str) -> list[Path]:
    """Where a spec id is looked up: reports/ beside the matrix file first (a user's spec
    of a shipped id takes precedence), then the reports the project ships."""
    beside = user_folder(matrix_path(matrix), USER_REPORTS)
    return [*([beside] if beside else []), project_reports()]


def _default_releases(matrix: str) -> list[str]:
    """The releases a plain `build` of the user's matrix makes, oldest first (none without
    a matrix file): a draft offers them as stand-ins."""
    path = Path(matrix or "matrix.yaml")
    if not path.is_file():
        return []
    return sorted({v.version.version for v in _matrix(str(path)).variants}, key=sort_key)


def _draft(target: str, matrix: str, paste: str, spec_id: str, force: bool,
           block_sizes: str) -> str:
    """``reproduce --draft PASTE --as ID``: the spec drafted (repro/draft.py) and written to
    reports/ID.yaml beside the matrix; its id."""
    if not paste:
        raise UsageError("--as names the spec that --draft writes: give --draft PASTE too",
                         hint="invoke matrix reproduce --draft paste.txt --as my-report")
    if target:
        raise UsageError(f"`reproduce --draft` writes a new spec: give its id with --as, not "
                         f"as REPORT ({clip(target)})", hint=f"--draft {clip(paste)} --as ID")
    if not spec_id or not NAME.match(spec_id) or name_problem(spec_id):
        got = f"; got {clip(spec_id)}" if spec_id else ""
        raise UsageError("`invoke matrix reproduce --draft PASTE` needs --as ID (lower-case "
                         f"letters, digits, '.', '_', '-'{got})", hint="e.g. --as openssl-1234")
    sizes = block_sizes_flag(block_sizes)
    path = matrix_path(matrix).parent / USER_REPORTS / f"{spec_id}.yaml"
    refuse_existing(path, force=force)  # before reading the paste; write_draft checks again
    try:
        raw = read_bounded(Path(paste), cap=MAX_REPORT_BYTES)
    except OSError as exc:
        raise UsageError(f"cannot read {clip(paste, 200)}: {exc.strerror}") from None
    text = paste_text(raw, paste)  # a BOM, UTF-16 with one, or refused by its encoding
    drafted = draft_spec(text, spec_id, source=paste, block_sizes=sizes,
                         here=_default_releases(matrix))
    check_draft(drafted, path, text, sizes)
    write_draft(drafted, path, force=force)
    print(draft_summary(drafted, path, spec_id, (p.stem for p in
                                                 project_reports().glob("*.yaml"))), end="")
    return spec_id


def cmd_reproduce(*, target: str, matrix: str, results: str, cpu: str, force: bool,
                  wait: bool, json: bool, check: bool = False,
                  allow_plain_tcp: bool = False, draft: str = "", as_: str = "",
                  block_sizes: str = "", engine: EngineFactory = docker_engine,
                  mirrors: Callable[[str], list[str]] = default_urls) -> int:
    if draft or as_:
        target = _draft(target, matrix, draft, as_, force, block_sizes)
        if not check:  # a draft is checked on request, never measured
            return 0
    elif block_sizes:
        raise UsageError("--block-sizes is read with --draft PASTE only",
                         hint="a spec's block sizes are the keys of its reference figures")
    spec = load_spec(find_spec(target, _reports_dirs(matrix)))
    env = Environment.from_matrix(matrix_path(matrix), mirrors)
    if check:
        report = check_spec(spec, env, results_root(matrix, results),
                            profiles=tuple(split_cpus(cpu)))
        if json:
            print(_json.dumps({"spec": spec.id, "path": str(spec.path),
                               "problems": report.problems, "warnings": report.warnings,
                               "text": report.text()},
                              indent=2))
        else:
            print(report.text(), end="")
        return 0
    m = _matrix(matrix)
    profiles = split_cpus(cpu) or ["auto"]
    for name in profiles:
        if name != "auto":
            m.profile(name)  # an unknown profile is refused before any engine is reached
    rep = None
    failed: list[tuple[int, str, FatalError]] = []
    for i, profile in enumerate(profiles):
        # one profile after the other, each on its own engine (its docker_host): they
        # write the same reproduction folder; the last one judges from all of them
        if len(profiles) > 1:
            log.info(f"═ reproduce {spec.id} --cpu={profile} ({i + 1} of {len(profiles)})")
        try:
            backend = _backend_for(m, profile, allow_plain_tcp, engine)
            rep = reproduce(spec, env, backend, results_tree(results, matrix), cpu_profile=profile,
                            force=force, wait=wait, engine=backend.engine_info(),
                            git_commit=_git_commit(), max_attempts=MAX_ATTEMPTS)
        except FatalError as exc:
            if len(profiles) == 1:
                raise
            log.error(f"reproduce --cpu={profile}: {exc}")
            failed.append((i, profile, exc))
    if rep is not None:
        if json:
            print(_json.dumps(as_json(rep), indent=2, default=str))
        else:
            print(render_text(rep), end="")
        log.info(f"written to {rep.out_dir} (verdicts.json, side-by-side.txt)")
    if failed:
        mask = 0
        for i, _, _ in failed:
            mask |= 1 << min(i, 4)
        raise LabError(f"{len(failed)} of {len(profiles)} profile(s) did not reproduce: "
                       + "; ".join(f"{p} (exit {e.exit_code}: {e.message.splitlines()[0]})"
                                   for _, p, e in failed), mask=mask,
                       hint="the verdicts above use the profiles that ran (and any earlier "
                       "results of the others); fix the cause and rerun the same command")
    return 0


def cmd_report(*, target: str, matrix: str, results: str, output: str,
               block_size: int, session: str = "", since: str = "",
               versions: str = "", charts: Charts = DRAWN) -> int:
    tree = results_tree(results, matrix)
    out = Path(output) if output else tree.report_dir()
    summary = build_report(tree, out,
                           block_size=bounded("--block-size", block_size or 8192, 1, MAX_BYTES),
                           selection=Selection.of(session, since),
                           versions=tuple(p.strip() for p in versions.split(",") if p.strip()),
                           charts=charts)
    print(summary.text(), end="")
    return 0


def _wired(handler: Callable[..., int], **seams: Any) -> Callable[..., int]:
    """``handler`` with its seams bound; its signature is its command's flags alone (what
    the command table and its test check)."""
    bound = partial(handler, **seams)
    sig = inspect.signature(handler)
    bound.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[p for name, p in sig.parameters.items() if name not in seams])
    return bound


def handlers(engine: EngineFactory = docker_engine, *,
             launcher: Launcher | None = None,
             charts: Charts = DRAWN,
             mirrors: Callable[[str], list[str]] = default_urls,
             claim_poll: float = POLL) -> dict[str, Callable[..., int]]:
    """The command table's handlers: every engine a command reaches comes from ``engine``,
    a lab's engine workers are started by ``launcher`` (None: worker processes, see
    lab/run.py), the report's charts are drawn by ``charts`` (tests pass NO_CHARTS),
    ``reproduce`` downloads a release it has no URL for from ``mirrors`` (the official
    ones; a test offline passes none), a lab's build looks at a peer's claim every
    ``claim_poll`` seconds. The one place the engine is chosen."""
    return {
        "list": cmd_list, "render": cmd_render,
        "build": _wired(cmd_build, engine=engine, launcher=launcher, claim_poll=claim_poll),
        "bench": _wired(cmd_bench, engine=engine, launcher=launcher),
        "profiles": cmd_profiles,
        "export": cmd_export, "parse": cmd_parse, "pin": cmd_pin,
        "import": cmd_import, "report": _wired(cmd_report, charts=charts),
        "reproduce": _wired(cmd_reproduce, engine=engine, mirrors=mirrors),
        "bisect": _wired(cmd_bisect, engine=engine, backend_for=_backend_for,
                         git_commit=_git_commit),
        "profile": _wired(cmd_profile, engine=engine),
    }


#: What ``invoke matrix``, ``python -m openssl_matrix`` and a lab's worker process run.
HANDLERS = handlers()
