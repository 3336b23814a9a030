"""Reproduce, step 4: the reproduction as JSON, as the side-by-side text, and its
folder under ``<results>/_reproduce/<id>/<NNNN>/``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from openssl_matrix.core.statuses import CONTENDED, USABLE_STATUSES
from openssl_matrix.core.units import cycles
from openssl_matrix.core.units import speed_k as k
from openssl_matrix.matrix.kinds.base import FIGURES_THREADS
from openssl_matrix.repro.judge import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    REPRODUCED,
    ClaimResult,
    Ours,
    Reproduction,
    expectation_text,
    ratio_text,
)
from openssl_matrix.repro.profileclaim import where_lines
from openssl_matrix.repro.resolve import ResolvedVersion
from openssl_matrix.repro.spec import OP_BLOCK, Measurement
from openssl_matrix.results import records
from openssl_matrix.results.tree import ResultsTree

# ----------------------------------------------------------------------------------
# output


def _x(value: float | None) -> str:
    return "—" if value is None else f"{ratio_text(value)}×"


def cycles_per_byte(clock_ghz: float | None, bytes_per_s: float | None) -> float | None:
    """Cycles per byte at a clock given in GHz (units.cycles does the arithmetic)."""
    return cycles(bytes_per_s, clock_ghz * 1e9 if clock_ghz else None)


def _size(block: int, *, bare: bool = False) -> str:
    """A block size as shown; a public-key figure (``OP_BLOCK``) is one per operation."""
    if block == OP_BLOCK:
        return "op/s" if bare else "the operation's figure"
    return str(block) if bare else f"{block} bytes"


def as_json(rep: Reproduction) -> dict[str, Any]:
    spec = rep.spec
    measurements: dict[str, Any] = {}
    for name, m in spec.measurements.items():
        p = rep.planned[name]
        o = rep.ours[name]
        machine = spec.machines[m.machine]
        blocks = sorted(set(m.reference) | set(o.blocks))
        measurements[name] = {
            "build": m.build, "algorithm": m.algorithm, "evp": m.evp,
            "unknown": list(m.unknown), "ia32cap": m.ia32cap,
            "disable": list(m.disable),
            "engine": m.engine, "decrypt": m.decrypt, "command_as_reported": m.command,
            "machine": machine.name, "version_built": p.version, "stand_in": p.stand_in,
            "variant": p.variant, "suite": p.suite, "mask": p.mask,
            "not_measured": p.skipped or p.problem,
            "runs": o.runs, "image_id": o.image_id, "statuses": o.statuses,
            "figures": [{
                "block_size": b,  # with several thread counts: the count (as "threads")
                "threads": b if m.thread_counts else None,
                "reference_bytes_per_s": m.reference.get(b),
                "ours_median_bytes_per_s": o.median(b),
                "ours_values": o.values(b),
                "reference_cycles_per_byte": cycles_per_byte(machine.clock_ghz,
                                                             m.reference.get(b)),
                "ours_cycles_per_byte": cycles_per_byte(o.clock_ghz, o.median(b)),
            } for b in blocks],
            "clock_ghz": o.clock_ghz, "clock_source": o.clock_source,
            "nominal_ghz": o.nominal_ghz,
        }
    return {
        "spec": {"id": spec.id, "title": spec.title, "path": str(spec.path),
                 "sha256": spec.digest,
                 "source": {k: getattr(spec.source, k) for k in
                            ("kind", "where", "url", "author", "date")}},
        "started": rep.started, "ended": rep.ended, "host": rep.host,
        "versions": {k: {"release_built": v.release, "stand_in": v.stand_in,
                         "sha256": v.sha256, "origin": v.origin, "problem": v.problem}
                     for k, v in rep.resolved.items()},
        "claims": [{
            "id": r.claim.id, "says": r.claim.says, "where": r.claim.where,
            "compare": [r.claim.numerator, r.claim.denominator], "expect": r.claim.expect,
            "tolerance": r.claim.tolerance, "verdict": r.verdict, "reason": r.reason,
            "stand_in": r.stand_in_note, "versions_built": r.versions,
            "unstable_at": r.unstable, "figure_labels": r.labels,
            "depends_on": r.claim.depends_on, "basis": r.basis, "model": r.model,
            "method": r.method, "ratio_basis": r.ratio_basis, "ratio_note": r.ratio_note,
            "profile": r.claim.profile, "profiled": rep.where.get(r.claim.id),
            "blocks": [{"block_size": b.block,
                        "trend": list(b.trend) if b.trend is not None else None,
                        "trend_of": b.trend_of if b.trend is not None else None,
                        "reference_ratio": b.reference,
                        "our_ratio": b.ours, "our_ratio_range": b.ours_range,
                        "pairs": b.pairs, "target": b.target, "passed": b.passed,
                        "ci_95": list(b.ci) if b.ci is not None else None,
                        "no_interval": b.no_interval if b.ci is None else None,
                        "basis": b.basis, "interleaved_record": b.record,
                        "runs_disagree": b.runs_disagree, "run_ratios": list(b.run_ratios),
                        "stable": b.stable, "model_their_cpu": b.model_theirs,
                        "model_here": b.model_here,
                        "reference_meets_claim": b.reference_passes} for b in r.blocks],
        } for r in rep.results],
        "measurements": measurements,
        "warnings": rep.warnings,
        "summary": summary_counts(rep),
    }


def accounting_text(labels: Mapping[str, int]) -> str:
    """What the host accounting said about the figures behind a claim: a busy machine is
    named only when the accounting flagged figures contended."""
    contended = labels.get(CONTENDED, 0)
    if contended:
        return (f"the host accounting flagged {contended} figure(s) contended (left out): "
                "measure again on a quieter host, or raise measure.repeat")
    return ("the host accounting found the host quiet for every figure used: the spread "
            "is the runs' own, not another program's; raise measure.repeat for a narrower "
            "interval")


def summary_counts(rep: Reproduction) -> dict[str, int]:
    out = {REPRODUCED: 0, NOT_REPRODUCED: 0, INCONCLUSIVE: 0, NOT_TESTABLE: 0}
    for r in rep.results:
        out[r.verdict] += 1
    return out


_MARKS = {REPRODUCED: "✓", NOT_REPRODUCED: "✕", INCONCLUSIVE: "?", NOT_TESTABLE: "–"}


def render_text(rep: Reproduction) -> str:
    """The side-by-side text: header, claims, table rows, measurements, summary."""
    spec = rep.spec
    lines = _header_lines(rep)
    lines += ["", "Claims (ratio = first / second measurement; reference vs ours)"]
    for r in rep.results:
        lines += _claim_lines(rep, r)
    lines += table_grids(rep)
    lines += ["", "Measurements (1000s of bytes/s, median of our runs; c/B = cycles per byte "
              "where both clocks are known)"]
    for name, m in spec.measurements.items():
        lines += _measurement_lines(rep, name, m)
    counts = summary_counts(rep)
    lines += ["", "Summary: " + ", ".join(f"{v} {k}" for k, v in counts.items())]
    for w in rep.warnings:
        lines.append(f"  warning: {w}")
    return "\n".join(lines) + "\n"


def _header_lines(rep: Reproduction) -> list[str]:
    """The spec's title and source, their machines, ours, and the versions."""
    spec = rep.spec
    s = spec.source
    lines = [f"Reproduction of {spec.id}: {spec.title}",
             "  source: " + ", ".join(x for x in (s.kind, s.where, s.author, s.date, s.url)
                                      if x)]
    for mach in spec.machines.values():
        clock = f" @ {mach.clock_ghz:g} GHz" if mach.clock_ghz else ""
        lines.append(f"  their machine {mach.name}: {mach.cpu}{clock}"
                     + (f", {mach.os}" if mach.os else ""))
    mhz = rep.host.get("cpu_mhz")
    lines.append(f"  our machine: {rep.host.get('cpu_model')}"
                 + (f" @ {mhz / 1000:.2f} GHz" if isinstance(mhz, (int, float)) else "")
                 + f", kernel {rep.host.get('kernel')}; results under {rep.host.get('cpu_dir')}")
    lines.append("  versions:")
    lines += version_lines(rep.resolved, found="built from its release tarball")
    return lines


def _claim_lines(rep: Reproduction, r: ClaimResult) -> list[str]:
    """One claim: its verdict, what it compares, why, its labels and its blocks."""
    c = r.claim
    lines = [f"  {_MARKS[r.verdict]} [{r.verdict}] {c.id}: {c.says}"
             + (f" ({c.where})" if c.where else "")]
    lines.append(f"      {c.numerator} / {c.denominator}, expected {c.expect}"
                 + (f" (a trend: the ratio at {c.trend[1]} {c.trend_of} over the ratio "
                    f"at {c.trend[0]}; reference and ours are that quotient)"
                    if c.trend is not None else ""))
    if r.reason:
        lines.append(f"      reason: {r.reason}")
    if r.model:
        lines.append(f"      {'by the model' if r.basis == 'cpu model' else r.basis}: "
                     f"{r.model}")
    if r.method:
        lines.append(f"      method: {r.method}")
    if r.blocks and r.basis != "two machines":
        lines.append(f"      ratio from: {basis_text(r)}")
    if r.stand_in_note:
        lines.append(f"      stand-in: {r.stand_in_note}")
    if r.labels:
        lines += _label_lines(r.labels)
    if r.unstable and r.verdict != INCONCLUSIVE:
        lines.append(f"      spread: at {', '.join(map(_size, r.unstable))} single pairs "
                     "fall on both sides of the expectation; the verdict is the 95 % "
                     "interval's")
    if r.verdict == INCONCLUSIVE and r.ratio_basis == "interleaved":
        lines.append("      host: the interleaved interval (blocks of windows a neighbour "
                     "slowed left out, its runs combined as units) still straddles the band: "
                     "our ratio lies at the band's edge"
                     + (", and its runs disagree" if any(b.runs_disagree for b in r.blocks)
                        else ""))
    elif r.unstable or r.verdict == INCONCLUSIVE:
        lines.append("      host: " + accounting_text(r.labels))
    if r.blocks:
        lines += _block_lines(rep, r)
    return lines + where_lines(rep.where.get(c.id))


def basis_text(r: ClaimResult) -> str:
    """Where a claim's ratios come from, in words: interleaved runs (with their records)
    or rounds of speed runs (with why)."""
    if r.ratio_basis == "interleaved":
        records_ = sorted({b.record for b in r.blocks if b.record})
        return ("interleaved runs (both sides in one process, alternating 5-ms windows; "
                "docs/noise.md section 6): " + ", ".join(records_))
    if r.ratio_basis == "mixed":
        return str(r.ratio_note)
    return "rounds of speed runs (Hodges–Lehmann ratio of both sides' samples)" + \
        (f": {r.ratio_note}" if r.ratio_note else "")


def _label_lines(labels: Mapping[str, int]) -> list[str]:
    """The guard labels of a claim's figures: those kept and those left out."""
    lines = []
    used = {k: v for k, v in labels.items() if k in USABLE_STATUSES}
    left = {k: v for k, v in labels.items() if k not in USABLE_STATUSES}
    if used:
        lines.append("      figures used carry guard labels: "
                     + ", ".join(f"{k} ×{v}" for k, v in used.items())
                     + f" (values kept; see the warnings in each run's {records.META})")
    if left:
        lines.append("      figures left out: "
                     + ", ".join(f"{k} ×{v}" for k, v in left.items()))
    return lines


def _block_lines(rep: Reproduction, r: ClaimResult) -> list[str]:
    """A claim's table: per block, reference and our ratio, the expectation, our runs."""
    c = r.claim
    lines = [f"      {'block':>6}  {'reference':>9}  {'ours':>8}  "
             f"{'expected':<14} {'our runs':<18}"]
    for b in r.blocks:
        mark = "" if b.passed is None else ("✓" if b.passed else "✕")
        rng = f"{b.pairs} × {b.ours_range[0]:.2f}–{b.ours_range[1]:.2f}" \
            if b.ours_range and b.pairs > 1 else (f"{b.pairs}" if b.pairs else "")
        if b.ci is None and b.no_interval and b.ours is not None:
            rng += " no 95 %"  # the reason says why: too few pairs (judge.straddle_text)
        if b.basis == "interleaved" and b.ci is not None:
            rng = f"interleaved {ratio_text(b.ci[0])}–{ratio_text(b.ci[1])}"
            if b.runs_disagree:  # the runs' spread widened it: show each run's ratio
                rng += " runs disagree: " + ", ".join(ratio_text(x) for x in b.run_ratios)
        expected = expectation_text(c, b.target)
        if b.by_model:
            expected = (f"model {b.model_here:.2f}× ±15 %" if b.model_here is not None
                        else "direction")
        label = rep.spec.measurements[c.numerator].unit if b.block == OP_BLOCK else \
            f"{b.trend[0]}→{b.trend[1]}" if b.trend is not None else \
            _size(b.block, bare=True)
        lines.append(f"      {label:>6}  {_x(b.reference):>9}  "
                     f"{_x(b.ours):>8}  "
                     f"{expected:<14} {rng:<18} {mark}")
    return lines


def _measurement_what(m: Measurement) -> str:
    """What a measurement runs, in the words of the side-by-side text."""
    what = f"{m.algorithm}{' -evp' if m.evp else ''}" + \
        (" (the report does not say whether with -evp)" if "evp" in m.unknown else "") + \
        (f" ia32cap={m.ia32cap}" if m.ia32cap else "") + \
        (f" with {'+'.join(m.disable)} off" if m.disable else "") + \
        (f" -engine {m.engine}" if m.engine else "") + (" -decrypt" if m.decrypt else "")
    if m.protocol is not None:
        what = f"{m.protocol} {m.algorithm} {m.operation} ({m.pinning})"
    elif m.suite_kind.figures == FIGURES_THREADS:
        what = f"library {m.algorithm} at " + \
            f"{', '.join(map(str, m.thread_counts or (m.threads,)))} thread(s)"
    elif m.operation is not None:
        what = f"{m.algorithm} {m.operation}"
    return what


def _measurement_lines(rep: Reproduction, name: str, m: Measurement) -> list[str]:
    """One measurement: what, which build, its figures beside the reference, our clock."""
    p = rep.planned[name]
    o = rep.ours[name]
    built = f"{p.variant}" + (" (stand-in)" if p.stand_in else "") if p.variant else \
        "not measured"
    lines = [f"  {name}: {_measurement_what(m)} · {m.build} → {built}"]
    if p.skipped:
        lines.append(f"      not measured: {p.skipped}")
    elif p.problem:
        lines.append(f"      not measured: {p.problem}")
    clock_ghz = rep.spec.machines[m.machine].clock_ghz
    for size in sorted(set(m.reference) | set(o.blocks)):
        lines.append(_figure_line(m, o, size, clock_ghz))
    if o.runs:
        lines.append(f"      runs: {', '.join(o.runs)}")
    if o.clock_ghz and m.operation is None:
        lines.append("      our c/B: " + (
            f"the cores' clock measured around the runs, {o.clock_ghz:.2f} GHz (median "
            f"of {len(o.measured)}; nominal {o.nominal_ghz or 0:.2f} GHz: provenance)"
            if o.clock_source == "measured" else
            f"at the nominal {o.clock_ghz:.2f} GHz (the cores' clock was not measured: "
            "not core cycles on a boosting CPU)"))
    return lines


def _figure_line(m: Measurement, o: Ours, size: int,
                 their_clock_ghz: float | None) -> str:
    """One size (or thread count) of a measurement: reference and ours, with our runs'
    spread and, for bytes per second, cycles per byte."""
    ref = m.reference.get(size)
    mine = o.median(size)
    spread = o.spread(size)
    n = len(o.values(size))
    sp = f" ({n} runs, {k(spread[0])}–{k(spread[1])})" if spread and n > 1 else \
        (f" ({n} run)" if n == 1 else "")
    if m.operation is not None:  # one figure in operations per second
        ops = (f" ({n} runs, {spread[0]:,.1f}–{spread[1]:,.1f})" if spread and n > 1
               else sp)
        unit = m.unit if m.protocol is not None or m.suite_kind.figures == FIGURES_THREADS else \
            f"{m.operation}/s"
        if m.thread_counts:  # a figure per thread count
            unit = f"{size} thr, {unit}"
        return (f"      {unit:>12}: reference "
                f"{'—' if ref is None else f'{ref:,.1f}':>12}   ours "
                f"{'—' if mine is None else f'{mine:,.1f}':>12}{ops}")
    cpb_ref = cycles_per_byte(their_clock_ghz, ref)
    cpb_ours = cycles_per_byte(o.clock_ghz, mine)
    cpb = ""
    if cpb_ref is not None or cpb_ours is not None:
        cpb = (f"   c/B {cpb_ref:.2f}" if cpb_ref is not None else "   c/B —") + \
            (f" vs {cpb_ours:.2f}" if cpb_ours is not None else " vs —")
    return (f"      {size:>6} bytes: reference {k(ref):>16}   ours {k(mine):>16}"
            f"{sp}{cpb}")


def version_lines(resolved: Mapping[str, ResolvedVersion], indent: str = "    ",
                  found: str | None = None) -> list[str]:
    """One line per version of the spec: the release itself, its stand-in, or why neither
    (``found``: what to say of a release that is there; default: built from its tarball)."""
    lines = []
    for name, rv in resolved.items():
        if rv.release == name:
            lines.append(f"{indent}{name}: {found or rv.origin or 'available'}")
        elif rv.release:
            lines.append(f"{indent}{name}: stand-in {rv.release} — {rv.problem}")
        else:
            lines.append(f"{indent}{name}: not available — {rv.problem}")
    return lines


def table_grids(rep: Reproduction) -> list[str]:
    """The report's table rows (``algorithms:``) side by side: reference → ours."""
    spec = rep.spec
    rows: dict[str, list[Measurement]] = {}
    for m in spec.measurements.values():
        if m.table:
            rows.setdefault(m.table, []).append(m)
    if not rows:
        return []
    by_machine: dict[str, list[str]] = {}
    for row, ms in rows.items():
        by_machine.setdefault(ms[0].machine, []).append(row)
    out: list[str] = []
    for machine, names in by_machine.items():
        algs = list(dict.fromkeys(m.algorithm for n in names for m in rows[n]))
        block = next(iter(rows[names[0]][0].reference), 8192)
        width = max(len(n) for n in names)
        out += ["", f"Table rows for {spec.machines[machine].label} at {block} bytes "
                "(1000s of bytes/s, reference → ours; — not measured here)",
                "  " + " " * width + "  " + "  ".join(f"{a:>27}" for a in algs)]
        for n in names:
            cells = []
            for a in algs:
                cell = spec.measurements.get(f"{n}.{a}")
                if cell is None:
                    cells.append(f"{'':>27}")
                    continue
                ref = cell.reference.get(block)
                ours = rep.ours[cell.name].median(block)
                ref_text = "—" if ref is None else f"{ref / 1000:,.0f}"
                ours_text = "—" if ours is None else f"{ours / 1000:,.0f}"
                cells.append(f"{ref_text + ' → ' + ours_text:>27}")
            out.append(f"  {n:<{width}}  " + "  ".join(cells))
    return out


def write_reproduction(rep: Reproduction, tree: ResultsTree) -> Path:
    """File the reproduction in a new folder ``_reproduce/<id>/<NNNN>/`` of ``tree``."""
    out = tree.new_reproduction_dir(rep.spec.id)
    rep.out_dir = out
    warning = tree.file_reproduction(out, as_json(rep), render_text(rep), rep.spec.path)
    if warning is not None:
        rep.warnings.append(warning)
    return out


