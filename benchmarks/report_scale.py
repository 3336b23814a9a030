#!/usr/bin/env python3
"""How the report scales with history: page size, report folder size and time for results
trees of 500, 2,500 and 10,000 runs (issue 28).

    python benchmarks/report_scale.py                 # 500, 2,500 and 10,000 runs
    python benchmarks/report_scale.py --sizes 2500    # one size
    python benchmarks/report_scale.py --seed results  # replicate a real tree's session

**The synthetic load.** A seed session is made once: by default one ``bench --repeat 3``
session of the test suite's fake matrix (two versions × asm/no-asm, two algorithms at six
block sizes, a native and a masked invocation: 12 runs, 96 table cells), through the real
Builder and Bencher against the fake engine (``tests/sessiontrees.py``), or, with
``--seed TREE``, the newest session of a real results tree. Its run folders are then
copied into distinct sessions until the tree holds the wanted number of runs: each copy
gets a new session id, a start 6 hours after the previous session's, and its figures
(``figures.json``) multiplied by the session's level and a per-run factor: level 1 with a
0.2 % spread between sessions, dropping to 0.92 from 70 % of the sessions on (a synthetic
step, so the change list has something to find), each run ×(1 ± 0.3 %). The raw outputs
are copied unchanged (they are the seed's). Every number below is of that load; none is
a measurement of OpenSSL.

Per size it prints the report's wall time (``report`` in this process, charts included),
the size of ``index.html``, the report folder against the tree (apparent bytes of every
file), the cells that changed, and what this machine's own host accounting
(``hostacct``: foreign CPU and steal around the report) said: ok or contended. The goal
for 2,500 runs: ``index.html`` under 2 MB, the folder under 10 % of the tree, under 15 s.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from openssl_matrix.measure import hostacct  # noqa: E402
from openssl_matrix.report.page import build_report  # noqa: E402
from openssl_matrix.results import records  # noqa: E402
from openssl_matrix.results.tree import ResultsTree, new_numbered_dir  # noqa: E402

#: The goals of issue 28 for a tree of 2,500 runs.
PAGE_MAX = 2_000_000
FOLDER_SHARE_MAX = 0.10
SECONDS_MAX = 15.0
#: The synthetic load (see the module's text).
SESSION_GAP = timedelta(hours=6)
SESSION_SPREAD = 0.002
RUN_SPREAD = 0.003
STEP_AT = 0.7
STEP_LEVEL = 0.92


def fake_seed(work: Path) -> ResultsTree:
    """One ``bench --repeat 3`` session of the fake matrix (tests/sessiontrees.py)."""
    work.mkdir(parents=True)
    os.environ["OPENSSL_MATRIX_CACHE"] = str(work / "cache")
    from tests.conftest import write_fake_matrix
    from tests.sessiontrees import bench_sessions, widen

    matrix = write_fake_matrix(work)
    widen(matrix)
    return bench_sessions(matrix, work, [1.0])


def seed_runs(tree: ResultsTree) -> list[records.Run]:
    """The finished runs of the seed's newest session."""
    journals = records.journal_runs(tree.root)
    runs = list(records.finished_runs(tree.root, figures=False))
    if not runs:
        raise SystemExit(f"{tree.root}: no finished runs to replicate")
    by: dict[str, list[records.Run]] = {}
    for r in runs:
        by.setdefault(records.run_session(r, journals)[0], []).append(r)
    return max(by.values(), key=lambda rs: min(r.meta.started or "" for r in rs))


def _scale(figures: list[dict[str, object]], factor: float) -> list[dict[str, object]]:
    for f in figures:
        for key in ("bytes_per_s", "ops_per_s"):
            value = f.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                f[key] = value * factor
    return figures


def replicate(seed: list[records.Run], dest: Path, runs: int) -> int:
    """A results tree at ``dest`` of about ``runs`` runs: the seed session copied into
    distinct sessions (the synthetic load above); returns the sessions made."""
    sessions = max(1, math.ceil(runs / len(seed)))
    shutil.copytree(seed[0].path.parents[3] / records.BUILDS, dest / records.BUILDS)
    base = datetime.fromisoformat(min(r.meta.started or "" for r in seed))
    rng = random.Random(28)
    for k in range(sessions):
        level = (STEP_LEVEL if k >= STEP_AT * sessions else 1.0) * rng.gauss(1, SESSION_SPREAD)
        start = base + k * SESSION_GAP
        session = f"bench-synthetic-{k:05d}"
        for i, run in enumerate(seed):
            folder = new_numbered_dir(dest / run.cpu / run.variant / run.suite)
            shutil.copytree(run.path / "raw", folder / "raw", dirs_exist_ok=True)
            meta = json.loads((run.path / records.META).read_text())
            meta.update(session=session,
                        started=(start + timedelta(seconds=10 * i)).isoformat(
                            timespec="milliseconds"))
            if isinstance(meta.get("series"), dict):
                meta["series"] = {**meta["series"], "id": f"synthetic-{k:05d}"}
            (folder / records.META).write_text(json.dumps(meta))
            figures = json.loads((run.path / records.FIGURES).read_text())
            (folder / records.FIGURES).write_text(json.dumps(
                _scale(figures, level * rng.gauss(1, RUN_SPREAD))))
    return sessions


def folder_bytes(path: Path, skip: str | None = None) -> int:
    total = 0
    for top, dirs, files in os.walk(path):
        if skip is not None and Path(top) == path:
            dirs[:] = [d for d in dirs if d != skip]
        total += sum(os.lstat(os.path.join(top, f)).st_size for f in files)
    return total


@dataclass(frozen=True)
class Row:
    runs: int
    sessions: int
    seconds: float
    cpu_seconds: float
    """The report's own CPU time (user + system): what the wall time is on a quiet host."""
    page_bytes: int
    report_bytes: int
    tree_bytes: int
    cell_pages: int
    changed: int
    host: str

    @property
    def share(self) -> float:
        return self.report_bytes / self.tree_bytes

    def verdict(self) -> str:
        misses = [what for what, ok in (
            (f"page {self.page_bytes / 1e6:.2f} MB", self.page_bytes < PAGE_MAX),
            (f"folder {self.share:.1%} of the tree", self.share < FOLDER_SHARE_MAX),
            (f"{self.seconds:.1f} s", self.seconds < SECONDS_MAX)) if not ok]
        return "meets the goals" if not misses else "misses: " + ", ".join(misses)


def measure(seed: list[records.Run], work: Path, runs: int) -> Row:
    dest = work / f"tree-{runs}"
    sessions = replicate(seed, dest, runs)
    tree = ResultsTree(dest)
    out = dest / "_report"
    before, cpu0, t0 = hostacct.read_host_stat(), os.times(), time.perf_counter()
    summary = build_report(tree, out)
    seconds = time.perf_counter() - t0
    cpu1, after = os.times(), hostacct.read_host_stat()
    cpu = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
    acct = hostacct.accounting(before, after, cpu_seconds=cpu)
    reasons = hostacct.contention_reasons(acct, software=False)
    host = ("ok" if not reasons else "contended: " + "; ".join(reasons)) + (
        f" ({acct.describe()})" if acct is not None else "")
    count = sum(1 for _ in records.run_dirs(dest))
    return Row(count, sessions, seconds, cpu, (out / "index.html").stat().st_size,
               folder_bytes(out), folder_bytes(dest, skip="_report"),
               sum(1 for _ in (out / "cells").iterdir()), summary.changes, host)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="500,2500,10000", help="run counts, comma separated")
    ap.add_argument("--seed", default="", help="a results tree whose newest session is "
                    "replicated (default: one fake-engine session, tests/sessiontrees.py)")
    ap.add_argument("--json", default="", help="also write the rows to this JSON file")
    ap.add_argument("--keep", action="store_true", help="keep the trees (printed)")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="report-scale-"))
    try:
        seed = seed_runs(ResultsTree(Path(args.seed)) if args.seed else fake_seed(work / "seed"))
        print(f"seed: {len(seed)} run(s) of one session ({seed[0].path.parents[3]})",
              file=sys.stderr)
        rows = [measure(seed, work, int(n)) for n in args.sizes.split(",")]
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"trees kept in {work}", file=sys.stderr)
    print(f"{'runs':>6} {'sessions':>8} {'report s':>8} {'cpu s':>6} {'index.html':>11} "
          f"{'report':>9} "
          f"{'tree':>9} {'share':>6} {'cells':>6} {'changed':>7}  goals (2,500: <2 MB, "
          "<10 %, <15 s) · host accounting")
    for r in rows:
        print(f"{r.runs:>6} {r.sessions:>8} {r.seconds:>8.1f} {r.cpu_seconds:>6.1f} "
              f"{r.page_bytes / 1e6:>8.2f} MB "
              f"{r.report_bytes / 1e6:>6.1f} MB {r.tree_bytes / 1e6:>6.1f} MB "
              f"{r.share:>6.1%} {r.cell_pages:>6} {r.changed:>7}  {r.verdict()} · {r.host}")
    if args.json:
        Path(args.json).write_text(json.dumps([{**asdict(r), "share": r.share,
                                                "verdict": r.verdict()} for r in rows],
                                              indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
