"""What each ``invoke matrix <command>`` does, as plain functions returning an exit code."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from . import log
from .backend import DockerBackend
from .errors import (
    BenchError,
    BuildError,
    DockerUnavailable,
    FatalError,
    ProfileMismatch,
    UsageError,
)
from .model import Matrix, load_matrix
from .render import render as render_variant
from .results import ResultsTree, atomic_write
from .sources import default_urls


def _matrix(path: str) -> Matrix:
    return load_matrix(path or "matrix.yaml", default_urls=default_urls)


def _tree(results: str) -> ResultsTree:
    return ResultsTree(Path(results or "results"))


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, cwd=Path(__file__).resolve().parent.parent)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """Let SIGTERM (a `kill`, a stopping CI job) clean up like Ctrl-C does: containers
    removed, the run folder marked interrupted, the journal saved."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def cmd_list(*, target: str, matrix: str, results: str, json: bool) -> int:
    m = _matrix(matrix)
    tree = _tree(results)
    rows = []
    for v in m.variants:
        info = v.describe()
        latest = tree.root / "_builds" / v.id / "latest.json"
        info["image"] = None
        if latest.exists():
            from .results import read_json

            rec = read_json(latest)
            if isinstance(rec, dict):
                info["image"] = rec.get("tag")
        rows.append(info)
    if json:
        import json as _json

        print(_json.dumps(rows, indent=2))
        return 0
    width = max(len(r["id"]) for r in rows)
    print(f"{'variant':<{width}}  {'version':<8} {'asm':<6} {'arch':<6} {'march':<12} image")
    for r in rows:
        print(f"{r['id']:<{width}}  {r['version']:<8} {'asm' if r['asm'] else 'no-asm':<6} "
              f"{r['arch']:<6} {r['march'] or 'default':<12} {r['image'] or '(not built)'}")
    print(f"\n{len(rows)} variant(s) from {m.path}; suites: "
          + ", ".join(s.name + (" (default)" if s.name == m.default_suite else "")
                      for s in m.suites))
    return 0


def cmd_render(*, target: str, matrix: str, results: str, only: str, output: str) -> int:
    m = _matrix(matrix)
    out = Path(output or "dockerfiles/rendered")
    for v in m.select(only):
        r = render_variant(v)
        path = out / f"{v.id}.Dockerfile"
        atomic_write(path, r.dockerfile)
        print(path)
    return 0


def cmd_build(*, target: str, matrix: str, results: str, only: str, jobs: int | None,
              force: bool) -> int:
    from .build import Builder

    m = _matrix(matrix)
    variants = m.select(only)
    backend = DockerBackend()
    builder = Builder(m, backend, _tree(results))
    with _terminate_as_interrupt():
        outcomes = builder.build(variants, jobs=int(jobs or 1), force=force)
    print("\nbuild summary")
    width = max(len(o.variant) for o in outcomes)
    for o in outcomes:
        mark = {"built": "✓ built", "up-to-date": "✓ up to date", "failed": "✕ FAILED"}[o.status]
        extra = f"{o.seconds:.0f}s" if o.status == "built" else ""
        endbr = o.record.get("endbr32") if o.record else None
        print(f"  {o.variant:<{width}}  {mark:<14} {extra:>6}  {o.tag or ''}"
              + (f"  endbr32={endbr}" if endbr is not None else ""))
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
              force: bool, wait: bool, fresh: bool = False) -> int:
    from .bench import Bencher, CellOutcome
    from .results import FINISHED

    if not cpu:
        raise UsageError("`invoke matrix bench` needs --cpu=PROFILE",
                         hint="--cpu=auto measures this host; named profiles are in the "
                         "matrix's 'profiles'")
    m = _matrix(matrix)
    variants = m.select(only)
    names = [n.strip() for n in (suite or "").split(",") if n.strip()] or [""]
    suites = [m.suite(n or None) for n in names]
    if cpu != "auto":
        m.profile(cpu)
    tree = _tree(results)
    backend = DockerBackend()
    tree.lock(wait=wait)
    per_suite: list[tuple[str, list[CellOutcome], str | None]] = []
    try:
        with _terminate_as_interrupt():
            bencher = Bencher(m, backend, tree, engine=backend.engine_info(),
                              git_commit=_git_commit())
            for the_suite in suites:
                try:
                    outcomes = bencher.bench(variants, the_suite, cpu, force=force, fresh=fresh,
                                             keep_open=len(suites) > 1)
                except (DockerUnavailable, ProfileMismatch):
                    raise
                except FatalError as exc:  # one failing suite never stops the others
                    log.error(f"suite {the_suite.name}: {exc}")
                    per_suite.append((the_suite.name, [], str(exc)))
                    continue
                per_suite.append((the_suite.name, outcomes, None))
            if all(error is None and all(o.status in FINISHED for o in outs)
                   for _, outs, error in per_suite):
                bencher.close_sessions()
    finally:
        tree.unlock()
    failures: list[str] = []
    for name, outcomes, error in per_suite:
        the_suite = m.suite(name)
        if len(suites) > 1:
            print(f"\n== suite {name}")
        _print_bench_summary(outcomes, the_suite.bytes or 8192)
        if error:
            failures.append(f"suite {name}: {error.splitlines()[0]}")
        for o in outcomes:
            if o.status != "complete":
                where = f"{o.run_dir}/raw" if o.run_dir else "(no run folder)"
                failures.append(f"{name} · {o.variant}: {o.status} — "
                                f"{(o.error or '').splitlines()[0] if o.error else ''} "
                                f"[{where}]")
    if failures:
        print("\nfailures (raw output and logs in the folders named):")
        for f in failures:
            print(f"  ✕ {f}")
        raise BenchError(f"{len(failures)} cell(s) or suite(s) did not complete",
                         hint="the others finished and are kept; fix the cause and rerun the "
                         "same command: only what did not finish is measured again")
    return 0


def _print_bench_summary(outcomes: list[Any], block: int) -> None:
    print(f"\nbench summary (MB/s at {block} bytes; status other than ok is shown)")
    for o in outcomes:
        print(f"  {o.variant}: {o.status}" + (f" — {o.run_dir}" if o.run_dir else "")
              + (" (finished earlier in this session, not measured again)"
                 if getattr(o, "reused", False) else ""))
        if o.error:
            print(f"      {o.error.splitlines()[0]}")
        cells: dict[str, dict[str, str]] = {}
        for f in o.figures:
            if f.get("block_size") != block:
                continue
            value = f.get("bytes_per_s")
            text = f"{value / 1e6:,.1f}" if isinstance(value, (int, float)) else "—"
            if f.get("status") != "ok":
                text += f" [{f.get('status')}]"
            cells.setdefault(str(f.get("mask")), {})[str(f.get("algorithm"))] = text
        for mask, algs in cells.items():
            print(f"      {mask:<12} " + "  ".join(f"{a} {t}" for a, t in algs.items()))
        for w in o.warnings:
            print(f"      warning: {w}")


def cmd_export(*, target: str, matrix: str, results: str, format: str,
               output: str) -> int:
    from .export import render

    fmt = format or "csv"
    if fmt not in ("csv", "jsonl"):
        raise UsageError(f"--format {fmt!r} is not one of csv, jsonl")
    text = render(_tree(results), fmt)
    if output:
        atomic_write(Path(output), text)
        log.info(f"wrote {output}")
    else:
        sys.stdout.write(text)
    return 0


def cmd_parse(*, target: str, matrix: str, results: str, json: bool) -> int:
    from .parsing import figure_records, parse_report

    try:
        text = Path(target).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot read {target}: {exc.strerror}") from None
    runs = parse_report(text)
    out: list[dict[str, Any]] = []
    for i, run in enumerate(runs, 1):
        header = {k: getattr(run.header, k) for k in run.header.__dataclass_fields__}
        out.append({"run": i, "header": header, "warnings": list(run.warnings),
                    "records": figure_records(run)})
    if json:
        import json as _json

        print(_json.dumps(out, indent=2))
        return 0
    for r in out:
        print(f"run {r['run']}: {r['header'].get('version_line') or '(no version header)'}")
        for rec in r["records"]:
            value = rec.get("bytes_per_s") if rec.get("bytes_per_s") is not None \
                else rec.get("ops_per_s")
            print(f"  {rec['algorithm']:<20} {rec.get('block_size') or rec.get('operation')!s:<8}"
                  f" {value!s:>16}  {rec['status']}")
        for w in r["warnings"]:
            print(f"  warning: {w}")
    return 0


def cmd_pin(*, target: str, matrix: str, results: str, file: str) -> int:
    from .sources import pin_source

    if not file:
        raise UsageError("`invoke matrix pin VERSION` needs --file PATH (a tarball you trust)")
    lock = Path(matrix or "matrix.yaml").with_suffix(".lock")
    digest = pin_source(target, Path(file), lock)
    print(f"pinned openssl {target}: sha256 {digest} (recorded in {lock})")
    return 0


HANDLERS: dict[str, Callable[..., int]] = {
    "list": cmd_list,
    "render": cmd_render,
    "build": cmd_build,
    "bench": cmd_bench,
    "export": cmd_export,
    "parse": cmd_parse,
    "pin": cmd_pin,
}
