#!/usr/bin/env python3
"""Our pts-openssl suite beside the same binary run the PTS way, on this host.

Run from anywhere (it uses the checkout it lives in)::

    python benchmarks/pts_compare.py                       # 1.1.1w and 3.0.20 asm, 30 s
    python benchmarks/pts_compare.py --seconds 2 --algorithms aes-128-gcm,chacha20-poly1305

For each variant (its image is built if missing, or reused by its content hash):

1. the PTS way: in the variant's container, exactly pts/openssl-3.6.0's test script
   (``openssl speed -multi N -seconds S ARGS > $LOG_FILE 2>&1``, N = every online CPU,
   as pts-core's NUM_CPU_CORES), TimesToRun 3 and more while the result's percent
   standard deviation is at or above 3 % (pts-core's rule, pts.py), each log read as
   pts-core reads it (pts.read_result); PTS reports the mean;
2. ours: the tool's ``pts-openssl`` suite (its Python API, the real engine, the host lock,
   accounting and rounds), the same seconds;

half of the PTS-way runs before our bench, the other half after it. It prints per PTS
result: the PTS-way mean (and spread), our median with its 95 % interval and how many of
our figures were ok, the ratio ours / PTS way, and whether the PTS-way mean lies in our
interval; then what the host accounting said. ``--json FILE`` keeps every sample.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from openssl_matrix.core.stats import estimate  # noqa: E402
from openssl_matrix.engine.backend import DockerBackend, RunLimits  # noqa: E402
from openssl_matrix.engine.engineinfo import EngineInfo  # noqa: E402
from openssl_matrix.engine.hostlock import HostLock, engine_key  # noqa: E402
from openssl_matrix.images.build import Builder  # noqa: E402
from openssl_matrix.images.sources import default_urls  # noqa: E402
from openssl_matrix.matrix import pts  # noqa: E402
from openssl_matrix.matrix.load import load_matrix  # noqa: E402
from openssl_matrix.measure.session import Bencher  # noqa: E402
from openssl_matrix.results.tree import ResultsTree  # noqa: E402

VARIANTS = ("1.1.1w-asm-x86_64", "3.0.20-asm-x86_64")

#: pts/openssl-3.6.0's install.sh writes this test script (the tarball's ./apps/openssl
#: there; the variant image's openssl here). LOG_FILE as pts-core sets it.
PTS_SCRIPT = ('openssl speed -multi "$NUM_CPU_CORES" -seconds "$SECONDS_" "$@" '
              '> "$LOG_FILE" 2>&1; echo $? > /tmp/test-exit-status; cat "$LOG_FILE"')


def online_cpus(backend: DockerBackend, image: str) -> int:
    """pts-core's NUM_CPU_CORES on Linux: /sys/devices/system/cpu/online ("0-N" -> N+1)."""
    res = backend.run(image, ["cat", "/sys/devices/system/cpu/online"],
                      limits=RunLimits(timeout=60))
    text = res.stdout.strip()
    if text.startswith("0-") and text[2:].isdigit():
        return int(text[2:]) + 1
    return os.cpu_count() or 1


def pts_way(backend: DockerBackend, image: str, option: pts.PtsOption, seconds: int,
            ncpu: int) -> tuple[str, float]:
    """One PTS run of one menu entry: its log and its wall time."""
    t0 = time.monotonic()
    res = backend.run(image, ["/bin/sh", "-c", PTS_SCRIPT, "pts-openssl", *option.args],
                      env={"NUM_CPU_CORES": str(ncpu), "SECONDS_": str(seconds),
                           "LOG_FILE": "/tmp/pts-openssl.log"},
                      limits=RunLimits(timeout=3600))
    if res.exit_code != 0:
        raise SystemExit(f"the PTS-way run of {option.name} in {image} failed "
                         f"({res.exit_code}): {res.stderr.strip()[:300]}")
    return res.stdout, time.monotonic() - t0


@dataclasses.dataclass
class Row:
    variant: str
    result: str
    unit: str
    pts_values: list[float]
    reader: str
    ours: list[float]
    ours_statuses: dict[str, int]

    def line(self) -> str:
        mean = statistics.fmean(self.pts_values) if self.pts_values else None
        e = estimate(self.ours)
        ok = sum(1 for _ in self.ours)
        total = sum(self.ours_statuses.values())
        if mean is None or e is None:
            return (f"{self.variant:<20} {self.result:<22} {'—':>14} {'—':>26} "
                    f"(ours ok {ok}/{total}, statuses {self.ours_statuses})")
        lo, hi = e.ci_low, e.ci_high
        inside = "—" if lo is None or hi is None else ("yes" if lo <= mean <= hi else "no")
        hw = "" if e.half_width is None else f" ± {e.half_width / e.median:.1%}"
        return (f"{self.variant:<20} {self.result:<22} {_fmt(mean, self.unit):>14} "
                f"(rsd {pts.percent_std_dev(self.pts_values):.1%}, n={len(self.pts_values)})"
                f"  ours {_fmt(e.median, self.unit):>14}{hw} (ok {ok}/{total})"
                f"  ratio {e.median / mean:.3f}  PTS mean in our interval: {inside}")


def _fmt(value: float, unit: str) -> str:
    return f"{value / 1e6:,.1f} MB/s" if unit == "byte/s" else f"{value:,.1f} {unit}"


def ours_by_result(outcomes: Sequence[Any]) -> dict[str, tuple[list[float], dict[str, int]]]:
    out: dict[str, tuple[list[float], dict[str, int]]] = {}
    for o in outcomes:
        for f in o.figures:
            title = f.get("pts_result")
            if not title:
                continue
            values, statuses = out.setdefault(str(title), ([], {}))
            status = str(f.get("status"))
            statuses[status] = statuses.get(status, 0) + 1
            value = f.get("bytes_per_s") if f.get("block_size") is not None \
                else f.get("ops_per_s")
            if status == "ok" and isinstance(value, (int, float)):
                values.append(float(value))
    return out


def accounting_summary(outcomes: Sequence[Any]) -> list[str]:
    lines = []
    for o in outcomes:
        meta = json.loads((Path(str(o.run_dir)) / "meta.json").read_text())
        for inv in meta.get("invocations") or []:
            acct = inv.get("host_accounting") or {}
            lines.append(f"    {o.variant} round {o.round} {inv.get('name')}: own CPU "
                         f"{acct.get('own_share')} of {acct.get('processes')} CPU(s), others "
                         f"{acct.get('foreign_cores')} core(s), steal "
                         f"{acct.get('steal_cores')}; children "
                         f"{(inv.get('children') or {}).get('balance')}")
    return lines


def compare(m: Any, backend: DockerBackend, engine: EngineInfo, tree: ResultsTree,
            v: Any, suite: Any, names: Sequence[str], seconds: int,
            ) -> tuple[list[Row], list[str], dict[str, Any]]:
    """One variant: the PTS-way runs around our bench, with the engine held throughout."""
    bencher = Bencher(m, backend, tree, engine=engine, git_commit=None,
                      take_host_lock=False)
    rows: list[Row] = []
    out_lines: list[str] = []
    image, _ = bencher.image_for(v)
    ncpu = online_cpus(backend, image)
    logs: dict[str, list[str]] = {}

    def pts_round(option: pts.PtsOption, runs: int, image: str = image, ncpu: int = ncpu,
                  logs: dict[str, list[str]] = logs) -> None:
        for _ in range(runs):
            text, _secs = pts_way(backend, image, option, seconds, ncpu)
            logs.setdefault(option.name, []).append(text)

    options = [pts.OPTIONS[n] for n in names]
    first = (pts.TIMES_TO_RUN + 1) // 2
    print(f"▸ {v.id}: the PTS way, {first} run(s) of each entry before our bench")
    for o in options:
        pts_round(o, first)
    print(f"▸ {v.id}: our pts-openssl suite ({seconds} s)")
    outcomes = bencher.bench([v], suite, "auto")
    print(f"▸ {v.id}: the PTS way, the other run(s), and more while pts-core would")
    for o in options:
        pts_round(o, pts.TIMES_TO_RUN - first)
        while True:  # pts-core's dynamic run count on each of the entry's results
            per = [[pts.read_result(t, r)[0] for t in logs[o.name]] for r in o.results]
            vals = [[x for x in p if x is not None] for p in per]
            run_s = 6.0 * seconds
            if not any(pts.needs_more_runs(x, pts.TIMES_TO_RUN, run_s) for x in vals):
                break
            pts_round(o, 1)
    ours = ours_by_result(outcomes)
    for o in options:
        for r in o.results:
            read = [pts.read_result(t, r) for t in logs[o.name]]
            values = [x for x, _ in read if x is not None]
            reader = next((f"{rd.profile} hint {rd.line_hint!r}" for _, rd in read if rd),
                          "nothing found")
            got, statuses = ours.get(r.title, ([], {}))
            rows.append(Row(v.id, r.title, r.unit, values, reader, got, statuses))
    out_lines += accounting_summary(outcomes)
    sample = {"ncpu": ncpu, "logs": logs,
              "ours": {k: {"values": a, "statuses": b} for k, (a, b) in ours.items()}}
    return rows, out_lines, sample


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(VARIANTS), help="variant ids, comma separated")
    ap.add_argument("--seconds", type=int, default=pts.SECONDS,
                    help=f"-seconds per size (pts/openssl: {pts.SECONDS})")
    ap.add_argument("--algorithms", default=",".join(pts.OPTIONS),
                    help="entries of pts/openssl's menu, comma separated")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "_pts_compare",
                    help="results tree of our runs")
    ap.add_argument("--json", type=Path, help="write every sample here")
    args = ap.parse_args(argv)
    names = [a for a in args.algorithms.split(",") if a]
    bad = pts.unknown(names)
    if bad:
        ap.error(f"not in pts/openssl's menu: {', '.join(bad)}")
    m = load_matrix(ROOT / "matrix.yaml", default_urls=default_urls)
    seconds = args.seconds
    suite = dataclasses.replace(m.suite("pts-openssl"), algorithms=tuple(names),
                                seconds=seconds)
    backend = DockerBackend()
    engine = backend.engine_info()
    tree = ResultsTree(args.out)
    variants = m.select(args.only)
    Builder(m, backend, tree, workdir=args.out / "_work").build(variants)
    rows: list[Row] = []
    samples: dict[str, Any] = {"started": datetime.now(timezone.utc).isoformat(),
                               "seconds": seconds, "profile": pts.PROFILE, "variants": {}}
    out_lines: list[str] = []
    lock = HostLock(engine_key(engine))
    for v in variants:
        with lock.measuring(f"pts_compare {v.id}"):  # the PTS-way runs measure too
            rows_v, lines_v, samples["variants"][v.id] = compare(
                m, backend, engine, tree, v, suite, names, seconds)
        rows += rows_v
        out_lines += lines_v
    print(f"\nPTS way ({pts.PROFILE}: mean of its runs) vs ours (median, 95 % interval) — "
          f"-multi <online CPUs> -seconds {seconds}")
    for row in rows:
        print(row.line())
        print(f"{'':<43}PTS read: {row.reader}")
    print("\nhost accounting of our runs:")
    print("\n".join(out_lines))
    if args.json:
        samples["rows"] = [dataclasses.asdict(r) for r in rows]
        args.json.write_text(json.dumps(samples, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
