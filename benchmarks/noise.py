#!/usr/bin/env python3
"""Noise benchmark: do comparisons hold to ±2 % where single figures spread far wider?

Run from anywhere (it uses the checkout it lives in)::

    python benchmarks/noise.py                  # the README's bench as typed, then the table
    python benchmarks/noise.py --tree DIR       # the table of a results tree on record
                                                # (e.g. ../shared/data/noisy-epyc-2026-12-02)

Without ``--tree`` it runs ``invoke matrix build`` (images already on the engine are
reused) and ``invoke matrix bench --cpu=auto`` (the default matrix and suite, the README's
main job) into a fresh results tree, and times the bench. Then, for every bench session
of the tree with two rounds or more, it prints:

1. per paired comparison (asm/no-asm, a newer release against an older one, a mask
   against native; measure/paired.py): the spread of each side's single figures (half the
   range of its clean samples over their median), the paired ratio with its 95 %
   interval, and whether that interval is within ±2 % — the goal for every comparison
   with a side that spreads more than ±10 %;
2. the ``ok`` figures more than 5 % below the best sample of their cell, and what flagged
   each: its status (``contended``, ``shared-core`` from the port-share probe), or the
   value rule that leaves it out of the median (core/stats.py) — the goal: none unflagged;
3. the port-share probe's readings (share of the session's usual reading) and the host
   accounting's verdicts;
4. where the suite interleaves (``interleave:``; measure/pairrun.py), each comparison
   measured again with both sides in one process: the same single-figure spreads beside
   the interleaved ratio's 95 % interval, and whether that is within ±2 %, whether a
   side sat low (measure/pairregime.py), and where an algorithm was run several times and
   its runs disagree beyond their own intervals, each run's ratio (measure/runsmeta.py);
5. each interleaved comparison measured in several bench sessions of the tree: its ratio
   in each and how far apart they lie (what an interval inside one session cannot show).

Every number comes from the tree's records; ``--json`` writes them beside the table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from openssl_matrix.core.stats import LOW_TOLERANCE  # noqa: E402
from openssl_matrix.core.statuses import DISTURBED, SHARED_CORE  # noqa: E402
from openssl_matrix.measure.paired import comparisons, usable_samples  # noqa: E402
from openssl_matrix.measure.robust import PAIRED_TARGET  # noqa: E402
from openssl_matrix.report.pairedview import by_session, outcomes  # noqa: E402
from openssl_matrix.results import records  # noqa: E402
from openssl_matrix.results.interleaved import all_pairs, filed_pairs  # noqa: E402

#: A side whose single figures spread more than this is where the goal applies.
WIDE_SPREAD = 0.10


def run_bench(tree: Path) -> float:
    """The README's bench as typed, into ``tree``; its wall time."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    built = subprocess.run(["invoke", "matrix", "build", f"--results={tree}"], cwd=ROOT,
                           env=env, text=True, check=False)  # images on the engine: reused
    if built.returncode != 0:
        sys.exit(f"the build exited {built.returncode}")
    t0 = time.monotonic()
    res = subprocess.run(["invoke", "matrix", "bench", "--cpu=auto", f"--results={tree}"],
                         cwd=ROOT, env=env, text=True, check=False)
    if res.returncode not in (0, 4):  # 4: done, some figures flagged (docs/exit-codes.md)
        sys.exit(f"the bench exited {res.returncode}")
    return time.monotonic() - t0


def spread(values: list[float]) -> float | None:
    if len(values) < 2:
        return None
    return (max(values) - min(values)) / 2 / statistics.median(values)


def woven(tree: Path, cpu: str, session: str,
          clean: dict[tuple[str, str, str, int], list[float]]) -> list[dict[str, Any]]:
    """The session's interleaved comparisons beside the spreads of their sides' cells."""
    rows = []
    for rec in filed_pairs(tree, cpu, session).values():
        top, bottom = rec.top, rec.bottom
        for row in rec.algorithms:
            alg, block = row.algorithm, row.block_size
            sa = spread(clean.get((top.variant, f"{top.mask}--{alg}", alg, block), []))
            sb = spread(clean.get((bottom.variant, f"{bottom.mask}--{alg}", alg, block), []))
            lo, hi, ratio = row.ci_low, row.ci_high, row.ratio
            w = (hi - lo) / 2 / ratio if lo is not None and hi is not None and ratio else None
            e = row.estimate
            rows.append({"kind": rec.kind, "numerator": rec.numerator,
                         "denominator": rec.denominator, "algorithm": alg, "block": block,
                         "ratio": ratio, "ci_low": lo, "ci_high": hi, "half_width": w,
                         "blocks": None if e is None else e.blocks,
                         "preempted": None if e is None else e.preempted,
                         "spread_numerator": sa, "spread_denominator": sb,
                         "goal_applies": max(sa or 0, sb or 0) > WIDE_SPREAD,
                         "within": w is not None and w <= PAIRED_TARGET,
                         "rate_share": row.rate_share, "low": row.low is True,
                         "again": bool(row.set_aside), "runs": row.runs or 1,
                         "runs_disagree": e is not None and e.runs_disagree is True,
                         "run_ratios": [] if e is None else [d.ratio for d in
                                                             e.runs_detail or ()]})
    return rows


def between_sessions(tree: Path) -> list[dict[str, Any]]:
    """Each interleaved comparison measured in more than one bench session of a CPU:
    its ratio in each, and how far the sessions' ratios lie apart."""
    seen: dict[tuple[str, str, str, str], list[tuple[str, float]]] = {}
    for f in all_pairs(tree):
        for row in f.record.algorithms:
            if row.ratio is not None:
                key = (f.cpu, f.folder.name, row.algorithm, row.direction)
                seen.setdefault(key, []).append((f.session, float(row.ratio)))
    out = []
    for (cpu, pair, alg, direction), got in sorted(seen.items()):
        if len(got) < 2:
            continue
        ratios = [r for _, r in got]
        out.append({"cpu": cpu, "pair": pair, "algorithm": alg, "direction": direction,
                    "ratios": ratios, "apart": max(ratios) / min(ratios) - 1})
    return out


def between_table(rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    print("\n  interleaved comparisons measured in several bench sessions (ratio per session)")
    for r in rows:
        ratios = ", ".join(f"{v:.3f}" for v in r["ratios"])
        print(f"  {r['pair'][:70]:<70} {r['algorithm']:<12} {ratios:<24} "
              f"apart {r['apart']:.1%}")
    near = sum(r["apart"] <= 2 * PAIRED_TARGET for r in rows)
    print(f"  sessions within ±{PAIRED_TARGET:.0%} of each other (apart ≤ "
          f"{2 * PAIRED_TARGET:.0%}): {near} of {len(rows)}")


def analyse(runs: list[records.Run], tree: Path | None = None,
            session: tuple[str, str, str] | None = None) -> dict[str, Any]:
    outs = outcomes(runs)
    clean: dict[tuple[str, str, str, int], list[float]] = {}
    everything: dict[tuple[str, str, str, int], list[tuple[float, str]]] = {}
    for o in outs:
        for f in o.figures:
            value, block = f.get("bytes_per_s"), f.get("block_size")
            if not isinstance(value, (int, float)) or not isinstance(block, int):
                continue
            key = (o.variant, str(f.get("invocation")), str(f.get("algorithm")), block)
            everything.setdefault(key, []).append((float(value), str(f.get("status"))))
            if f.get("status") not in DISTURBED:
                clean.setdefault(key, []).append(float(value))
    rows = []
    for c in comparisons(usable_samples(outs)):
        a, b = c.cells
        sa, sb = spread(clean.get(a, [])), spread(clean.get(b, []))
        w = c.estimate.relative_half_width
        rows.append({"kind": c.kind, "numerator": c.numerator, "denominator": c.denominator,
                     "algorithm": c.algorithm, "block": c.block, "basis": c.estimate.basis,
                     "ratio": c.estimate.ratio, "ci_low": c.estimate.ci_low,
                     "ci_high": c.estimate.ci_high, "half_width": w,
                     "pairs": c.estimate.pairs, "ci_method": c.estimate.method,
                     "no_interval": c.estimate.no_interval,
                     "spread_numerator": sa, "spread_denominator": sb,
                     "goal_applies": max(sa or 0, sb or 0) > WIDE_SPREAD,
                     "within": w is not None and w <= PAIRED_TARGET})
    total = by_value = 0
    by_status: dict[str, int] = {}
    for samples in everything.values():
        clean_values = [v for v, s in samples if s not in DISTURBED]
        best = max(clean_values) if clean_values else None
        for v, s in samples:
            if best is None or v >= best * (1 - LOW_TOLERANCE):
                continue
            total += 1
            if s in DISTURBED:
                by_status[s] = by_status.get(s, 0) + 1
            else:  # the value rule leaves every clean sample this low out of the median
                by_value += 1
    low = {"total": total, "by_status": by_status, "by_value_rule": by_value,
           "unflagged": total - by_value - sum(by_status.values())}
    shares: list[float] = []
    probe_flags = contended = invocations = 0
    for r in runs:
        meta = json.loads((r.path / records.META).read_text(encoding="utf-8"))
        for entry in meta.get("invocations", []):
            invocations += 1
            ps = entry.get("port_share") or {}
            shares += [side["share_of_usual"] for side in (ps.get("before"), ps.get("after"))
                       if isinstance(side, dict) and isinstance(side.get("share_of_usual"),
                                                                float)]
        codes = [f.get("code") for f in meta.get("findings", [])]
        probe_flags += codes.count(SHARED_CORE)
        contended += codes.count("contended")
    interleaved = [] if tree is None or session is None else \
        woven(tree, session[0], session[1], clean)
    return {"rounds": len({o.round for o in outs}), "runs": len(runs), "comparisons": rows,
            "interleaved": interleaved,
            "low": low, "probe": {"invocations": invocations, "readings": len(shares),
                                  "share_min": min(shares) if shares else None,
                                  "share_median": statistics.median(shares) if shares
                                  else None, "shared_core_findings": probe_flags},
            "contended_findings": contended}


def pct(x: float | None) -> str:
    return "—" if x is None else f"±{x:.1%}"


def table(key: tuple[str, str, str], a: dict[str, Any]) -> None:
    cpu, session, suite = key
    print(f"\n{cpu} · session {session} · suite {suite}: {a['runs']} runs, "
          f"{a['rounds']} rounds")
    print(f"  {'comparison':<58} {'algorithm':<12} {'spread A':>9} {'spread B':>9} "
          f"{'paired ratio [95 %]':>26} {'samples':>8}  goal")
    for r in a["comparisons"]:
        name = f"{r['numerator']} / {r['denominator']}"
        ci = (f"×{r['ratio']:.3f} [{r['ci_low']:.3f}–{r['ci_high']:.3f}]"
              if r["ci_low"] is not None else f"×{r['ratio']:.3f} (none)")
        goal = ("ok" if r["within"] else "MISSED") if r["goal_applies"] else \
            ("within" if r["within"] else "-")
        # no interval: its words ("too few pairs: n=2, 2+3 samples", stats.RatioEstimate)
        width = r.get("no_interval") or pct(r["half_width"])
        print(f"  {name[:58]:<58} {r['algorithm']:<12} {pct(r['spread_numerator']):>9} "
              f"{pct(r['spread_denominator']):>9} {ci:>26} {r['basis'].split()[0]:>8}  {goal} "
              f"({width})")
    applies = [r for r in a["comparisons"] if r["goal_applies"]]
    print(f"  comparisons with a side spreading over ±{WIDE_SPREAD:.0%}: {len(applies)}; "
          f"of them within ±{PAIRED_TARGET:.0%}: {sum(r['within'] for r in applies)}")
    within = sum(r["within"] for r in a["comparisons"])
    print(f"  all comparisons within ±{PAIRED_TARGET:.0%}: {within} of {len(a['comparisons'])}")
    low = a["low"]
    print(f"  samples more than {LOW_TOLERANCE:.0%} below their cell's best: {low['total']} "
          f"(flagged by status: {low['by_status'] or 0}; left out by the value rule: "
          f"{low['by_value_rule']}; unflagged: {low['unflagged']})")
    p = a["probe"]
    if p["readings"]:
        print(f"  port-share probe: {p['readings']} readings around {p['invocations']} "
              f"invocations, share of the usual min {p['share_min']:.2f}, median "
              f"{p['share_median']:.3f}; {p['shared_core_findings']} shared-core finding(s)")
    else:
        print("  port-share probe: no readings in this tree (recorded before the probe)")
    print(f"  host accounting: {a['contended_findings']} contended finding(s)")
    if a.get("interleaved"):
        woven_table(a["interleaved"])


def woven_table(rows: list[dict[str, Any]]) -> None:
    print(f"\n  interleaved (both sides in one process, 5-ms windows A B B A)\n"
          f"  {'comparison':<58} {'algorithm':<12} {'spread A':>9} {'spread B':>9} "
          f"{'interleaved ratio [95 %]':>26} {'blocks':>7}  goal")
    for r in rows:
        name = f"{r['numerator']} / {r['denominator']}"
        ci = ("no ratio" if r["ratio"] is None else
              f"×{r['ratio']:.3f} [{r['ci_low']:.3f}–{r['ci_high']:.3f}]"
              if r["ci_low"] is not None else f"×{r['ratio']:.3f} (none)")
        goal = ("ok" if r["within"] else "MISSED") if r["goal_applies"] else \
            ("within" if r["within"] else "-")
        if r.get("no_interval"):  # "too few pairs: n=2, 2+3 samples" (stats.RatioEstimate)
            goal += f" ({r['no_interval']})"
        print(f"  {name[:58]:<58} {r['algorithm']:<12} {pct(r['spread_numerator']):>9} "
              f"{pct(r['spread_denominator']):>9} {ci:>26} {r['blocks'] or 0:>7}  {goal} "
              f"({pct(r['half_width'])})" + (" sits low" if r.get("low") else "")
              + (" (measured again)" if r.get("again") else "")
              + (f" runs disagree: {_ratios(r['run_ratios'])}" if r.get("runs_disagree")
                 else ""))
    applies = [r for r in rows if r["goal_applies"]]
    print(f"  interleaved comparisons with a side spreading over ±{WIDE_SPREAD:.0%}: "
          f"{len(applies)}; of them within ±{PAIRED_TARGET:.0%}: "
          f"{sum(r['within'] for r in applies)}")
    print(f"  all interleaved comparisons within ±{PAIRED_TARGET:.0%}: "
          f"{sum(r['within'] for r in rows)} of {len(rows)}; sitting low (a side more "
          f"than 10 % below its best in the session's other pairs): "
          f"{sum(bool(r.get('low')) for r in rows)}, measured again: "
          f"{sum(bool(r.get('again')) for r in rows)}; run more than once: "
          f"{sum((r.get('runs') or 1) > 1 for r in rows)}, their runs disagreeing beyond "
          f"their intervals (measure/runsmeta.py): "
          f"{sum(bool(r.get('runs_disagree')) for r in rows)}")


def _ratios(values: list[Any]) -> str:
    return ", ".join("-" if not isinstance(v, (int, float)) else f"{v:.3f}" for v in values)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, help="a results tree on record (no bench run)")
    ap.add_argument("--json", type=Path, help="write the numbers here too")
    args = ap.parse_args()
    wall = None
    tree = args.tree
    if tree is None:
        tree = Path(tempfile.mkdtemp(prefix="noise-bench-")) / "results"
        print(f"bench into {tree} (the README's bench as typed) ...", flush=True)
        wall = run_bench(tree)
    found = {k: analyse(v, tree, k) for k, v in by_session(
        list(records.finished_runs(tree))).items()}
    if wall is not None:
        print(f"\nbench wall time: {wall:.0f} s")
    for key, a in found.items():
        if a["rounds"] >= 2:
            table(key, a)
    apart = between_sessions(tree)
    between_table(apart)
    if args.json:
        args.json.write_text(json.dumps({"tree": str(tree), "bench_wall_s": wall,
                                         "sessions": [{"key": list(k), **a}
                                                      for k, a in found.items()],
                                         "between_sessions": apart},
                                        indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
