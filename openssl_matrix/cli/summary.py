"""What a bench prints when it ends: the summary of its cells, and the per-figure rows of a
repeated bench (median, interval, clean samples, spread, noisy and contended counts); the
failures of its suites and cells, and what to do next.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from openssl_matrix.core.errors import BenchError
from openssl_matrix.core.stats import LOW_TOLERANCE
from openssl_matrix.core.statuses import CONTENDED
from openssl_matrix.matrix.model import Matrix
from openssl_matrix.measure import opsummary
from openssl_matrix.measure.benchfigure import SeriesRow
from openssl_matrix.measure.cell import CellOutcome
from openssl_matrix.measure.paired import comparisons, usable_samples
from openssl_matrix.measure.session import (
    build_command,
    summarize_series,
)
from openssl_matrix.results.pairrecord import PairRecord, PairRow
from openssl_matrix.results.records import FINISHED


def mbs(value: Any) -> str:
    return f"{value / 1e6:,.1f}" if isinstance(value, (int, float)) else "—"


def print_bench_summary(outcomes: list[Any], block: int, noise: float = 0.05,
                         planned: int | None = None,
                         interleaved: Sequence[PairRecord] = ()) -> None:
    print(f"\nbench summary (MB/s at {block} bytes, cycles/byte when the clock is known; "
          "public-key operations in ops/s, handshakes in conn/s; a status other than ok "
          "says what the figure is not)")
    rounds = max((o.round for o in outcomes), default=1)
    for o in outcomes:
        _print_outcome(o, block, rounds)
    if rounds > 1:
        more = rounds - planned if planned and rounds > planned else 0
        print(f"\n  over {planned or rounds} interleaved rounds"
              + (f" (+{more} for re-measurements and wide intervals)" if more else "")
              + ": median ± half-width of the 95 % "
              f"interval (t) in MB/s (public-key ops/s, handshakes conn/s), clean samples n, "
              f"[min–max], coefficient of variation "
              f"(noisy above {noise:.0%}); contended attempts never count")
    rows_all: list[SeriesRow] = []
    for variant in dict.fromkeys(o.variant for o in outcomes):
        runs = [o for o in outcomes if o.variant == variant and o.status != "failed"]
        rows = summarize_series(runs, noise)
        rows_all += rows
        if rounds > 1:
            _print_series(variant, runs, rows, block)
    if rounds > 1:
        _print_warnings_once(outcomes)
        print_comparisons([o for o in outcomes if o.status != "failed"], block)
    print_interleaved(interleaved)
    _print_totals(rows_all)


def _print_outcome(o: Any, block: int, rounds: int) -> None:
    """One cell's line, its error, and (for a bench of one round) its figures at
    ``block`` bytes and its warnings."""
    if getattr(o, "unbuilt", False):  # said once, with the fix, under failures
        print(f"  {o.variant}: not built — not measured")
        return
    print(f"  {o.variant}" + (f" round {o.round}" if rounds > 1 else "")
          + f": {o.status}" + (f" — {o.run_dir}" if o.run_dir else "")
          + (" (finished earlier in this session, not measured again)"
             if getattr(o, "reused", False) else ""))
    if o.error:
        print(f"      {o.error.splitlines()[0]}")
    if rounds > 1:
        return
    for f in o.figures:
        if opsummary.is_ops(f):  # pkey / tls suites
            print(opsummary.figure_line(f))
            continue
        if f.block_size != block:
            continue
        cpb = f.cycles_per_byte
        text = mbs(f.bytes_per_s) + (f" ({cpb:.2f} c/B)" if cpb else "")
        status = f.status
        name = str(f.invocation)
        if "+" in name:
            name = f"{name.rsplit('--', 1)[0]}--[{f.get('algorithm')}]"
        print(f"      {name:<36} {text:>22}"
              + ("" if status == "ok" else f"  [{status}]"))
    for w in o.warnings:
        print(f"      warning: {w}")


def _print_series(variant: str, runs: list[Any], rows: list[SeriesRow],
                  block: int) -> None:
    """A repeated bench's rows of one variant: each figure's median, interval, clean
    samples, range, spread and flags."""
    print(f"  {variant} ({len(runs)} run(s))")
    units = opsummary.units_by_figure(f for o in runs for f in o.figures)
    for row in rows:
        if opsummary.is_ops(row):
            unit = units.get((row["invocation"], row["algorithm"], row["operation"]))
            print(opsummary.series_line(row, unit or "ops/s"))
            continue
        if row["block_size"] != block:
            continue
        cv = f"{row['cv']:.1%}" if row["cv"] is not None else "—"
        cyc = f" {row['median_cycles']:.2f} c/B" if row["median_cycles"] else ""
        flags = [s for s in row["statuses"] if s != "ok"]
        n = f"n={row['n']}" if row.get("clean", True) else \
            f"n=0 clean of {row['attempts']}"
        print(f"      {row['invocation']!s:<36} {pm(row):>20} ({n}) "
              f"[{mbs(row['min'])}–{mbs(row['max'])}] cv {cv}{cyc}"
              + ("  NOISY" if row["noisy"] else "")
              + (f"  [{', '.join(flags)}]" if flags else "")
              + (f"  ({row['contended']} contended attempt(s) left out)"
                 if row.get("contended") and row.get("clean") else ""))


def _print_warnings_once(outcomes: list[Any]) -> None:
    """A repeated bench's warnings, each once, the contended ones left out."""
    warned: set[str] = set()
    for o in outcomes:
        for w in o.warnings:
            if w not in warned and not w.startswith(f"{CONTENDED}: "):
                warned.add(w)
                print(f"      warning ({o.variant}): {w}")


def _print_totals(rows_all: list[SeriesRow]) -> None:
    """The closing lines: figures and flags, shared-core samples left out, and the
    public-key/handshake share."""
    print("\n  " + flag_summary(rows_all))
    low = sum(int(r.get("shared_core") or 0) for r in rows_all)
    if low:
        pct = f"{LOW_TOLERANCE * 100:g} %"
        print(f"  {low} clean sample(s) more than {pct} below their cell's best, left out of "
              "the medians as shared-core (a core whose other thread the guest cannot see: "
              "docs/noise.md)")
    ops = [r for r in rows_all if opsummary.is_ops(r)]
    if ops and len(ops) < len(rows_all):
        print("  of which public-key/handshake: " + flag_summary(ops))


def pm(row: SeriesRow) -> str:
    """``median ± half-width`` in MB/s (``median`` alone with one sample)."""
    lo, hi = row.get("ci_low"), row.get("ci_high")
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
        return f"{mbs(row['median'])} ± {(hi - lo) / 2 / 1e6:,.1f}"
    return mbs(row.get("median"))


def flag_summary(rows: list[SeriesRow]) -> str:
    """One line: how many figures were reported, how many flagged and why."""
    counts: Counter[str] = Counter()
    for row in rows:
        worst = [s for s in row["statuses"] if s != "ok"]
        counts[worst[0] if worst else "ok"] += 1
    attempts = sum(int(r.get("attempts") or 0) for r in rows)
    contended = sum(int(r.get("contended") or 0) for r in rows)
    flagged = sum(n for s, n in counts.items() if s != "ok")
    parts = [f"{n} {s}" for s, n in sorted(counts.items(), key=lambda x: -x[1]) if s != "ok"]
    return (f"{len(rows)} figure(s) from {attempts} measurement(s): {counts['ok']} ok, "
            f"{flagged} flagged" + (f" ({', '.join(parts)})" if parts else "")
            + f"; {contended} attempt(s) found the host busy (contended) and were left "
            "out or measured again")


def print_comparisons(outcomes: list[Any], block: int) -> None:
    """The paired ratios at ``block`` bytes (paired.py): alternated samples of both
    sides, contended and shared-core ones and those 5 % below their best left out."""
    found = comparisons(usable_samples(outcomes), [block])
    if not found:
        return
    print(f"\n  paired ratios at {block} bytes (Hodges–Lehmann ratio of alternated samples, "
          "distribution-free 95 % interval; disturbed samples and those more than "
          f"{LOW_TOLERANCE:.0%} below their cell's best left out)")
    for c in found:
        print(f"      {c.kind:<12} {c.algorithm:<14} {c.numerator} / {c.denominator}: "
              f"{c.estimate.text()}")


def print_interleaved(records: Sequence[PairRecord]) -> None:
    """The interleaved comparisons (measure/pairrun.py): both sides in one process, in
    alternating 5-ms windows; the geometric mean of batches of A B B A blocks' ratios."""
    if not records:
        return
    print("\n  interleaved ratios (both sides in one process, alternating 5-ms windows: "
          "geometric mean of batches of 10 blocks, Student's t 95 % interval over the "
          "batches; blocks with a "
          "preempted window or a side more than 10 % below its usual rate left out)")
    for rec in records:
        for row in rec.algorithms:
            alg = row.algorithm + (" dec" if row.direction == "decrypt" else "")
            print(f"      {rec.kind:<12} {alg:<14} {rec.numerator} / "
                  f"{rec.denominator}: {interleaved_text(row)}")
        for err in rec.errors:
            print(f"      {rec.kind:<12} {rec.numerator} / {rec.denominator}: {err}")


def interleaved_text(row: PairRow) -> str:
    """``1.234× ±0.8 % (180 blocks, 4 preempted)``, or why there is no ratio."""
    e = row.estimate
    if e is None:
        return f"no ratio: every block of its {row.windows} windows was preempted"
    ratio, lo, hi = e.ratio, e.ci_low, e.ci_high
    width = (f" ±{(hi - lo) / 2 / ratio:.1%}" if lo is not None and hi is not None
             else " (too few blocks for 95 %)")
    slowed = f", {e.slowed} slowed" if e.slowed else ""
    runs = f", {row.runs} runs" if (row.runs or 1) > 1 else ""
    if e.runs_disagree is True:  # measure/runsmeta.py: the interval is widened
        runs += f" that disagree: {', '.join(f'{r:.3f}' for r in e.run_ratios)}"
    mixed = "; every block kept: a neighbour slowed most" if e.disturbed else ""
    share = row.rate_share
    low = (f"; sits low: a side at {share:.0%} of its best in the session's other pairs"
           if row.low and share is not None else "")
    return (f"{ratio:.3f}×{width} ({e.blocks} blocks, "
            f"{e.preempted} preempted{slowed}{runs}{mixed}{low})")


#: Each suite a bench ran: its name, its cells' outcomes, the error that stopped it.
SuiteOutcomes = list[tuple[str, list[CellOutcome], str | None]]


def bench_summaries(m: Matrix, per_suite: SuiteOutcomes, several: bool, repeat: int | None,
                     interleaved: Mapping[str, Sequence[PairRecord]],
                     ) -> tuple[list[str], int, dict[str, list[str]]]:
    """Print each suite's summary; return the failures (a line each), how many cells and
    suites did not complete, and the suites each unbuilt variant could not run."""
    failures: list[str] = []
    cells = 0  # cells and suites that did not complete (each unbuilt variant per suite)
    unbuilt: dict[str, list[str]] = {}  # variant -> the suites that could not run on it
    for name, outcomes, error in per_suite:
        the_suite = m.suite(name)
        if several:
            print(f"\n== suite {name}")
        print_bench_summary(outcomes, the_suite.bytes or 8192, the_suite.noise_threshold,
                             int(repeat) if repeat else the_suite.repeat,
                             interleaved.get(name, []))
        if error:
            failures.append(f"suite {name}: {error.splitlines()[0]}")
            cells += 1
        for o in outcomes:
            if o.status == "complete":
                continue
            cells += 1
            if o.unbuilt:
                unbuilt.setdefault(o.variant, []).append(name)
                continue
            where = f"{o.run_dir}/raw" if o.run_dir else "(no run folder)"
            rnd = f" round {o.round}" if o.round > 1 else ""
            failures.append(f"{name} · {o.variant}{rnd}: {o.status} — "
                            f"{(o.error or '').splitlines()[0] if o.error else ''} "
                            f"[{where}]")
    return failures, cells, unbuilt


def bench_failed(failures: Sequence[str], cells: int, unbuilt: Mapping[str, list[str]],
                  per_suite: SuiteOutcomes, root: Path) -> NoReturn:
    """Print the failures and stop with what to do next."""
    print("\nfailures (raw output and logs in the folders named):")
    for f in failures:
        print(f"  ✕ {f}")
    done = any(o.status in FINISHED for _, outs, _ in per_suite for o in outs)
    raise BenchError(f"{cells} cell(s) or suite(s) did not complete",
                     hint=("the others finished and are kept; " if done else
                           "nothing was measured; ")
                     + (f"build what is missing (`{build_command(list(unbuilt), root)}`)"
                        if len(unbuilt) > 1 else "fix the cause")
                     + " and rerun the same command: only what did not finish is "
                     "measured again")
