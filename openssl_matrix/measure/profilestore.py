"""Profiles filed in the results tree, and two of them compared.

One profile is ``_profiles/<variant>/<cell>/<NNNN>/`` (the folder is skipped by every
reader of bench runs, as ``_builds`` is): ``perf-script.txt`` (perf's own text),
``stacks.folded`` (one ``root;…;leaf count`` line per stack, the folded format of
flamegraph.pl, speedscope and others), ``flame.svg`` and ``meta.json`` (provenance, the
work done, time per operation, the host accounting and the ``ok``/``contended`` status).
A comparison is ``_profiles/compare/<A>-vs-<B>-<cell>/<NNNN>/``: ``diff.json``, ``diff.txt``
(the table printed) and ``diff.svg`` (B's flame graph at A's work, coloured against A's).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from openssl_matrix.core.clock import now as _now
from openssl_matrix.core.files import atomic_write, write_json
from openssl_matrix.engine.engineinfo import EngineInfo
from openssl_matrix.measure.benchfigure import FindingRecord
from openssl_matrix.measure.flamesvg import flame_svg
from openssl_matrix.measure.hostacct import AccountingRecord
from openssl_matrix.measure.perfrun import EVENT, FREQUENCY_HZ, Cell, CellRecord, ProfileRun
from openssl_matrix.measure.profile import Row, compare, fold, folded_text, per_operation
from openssl_matrix.measure.profile import self_time_ns as _self_time
from openssl_matrix.measure.profileoverhead import OverheadRecord
from openssl_matrix.results.tree import ResultsTree

SCRIPT = "perf-script.txt"
FOLDED = "stacks.folded"
SVG = "flame.svg"
META = "meta.json"
TOP = 15


def _leaf_key(run: ProfileRun) -> Counter[str]:
    """Self time (ns) per ``function (library)``: one name in two libraries stays two."""
    out: Counter[str] = Counter()
    for s in run.samples:
        out[_leaf_name(*s.frames[0], False)] += s.period_ns
    return out


def _leaf_name(func: str, lib: str, by_library: bool) -> str:
    return lib if by_library else f"{func} ({lib})"


def sampling_sd(run: ProfileRun, *, by_library: bool = False) -> dict[str, float]:
    """Each entry's counting uncertainty in ns per operation (one standard deviation):
    samples arrive as a Poisson count, so a sum of periods has variance ≈ Σ period²."""
    squares: Counter[str] = Counter()
    for s in run.samples:
        squares[_leaf_name(*s.frames[0], by_library)] += s.period_ns ** 2
    return {k: math.sqrt(v) / run.operations for k, v in squares.items()}


def functions_per_op(run: ProfileRun) -> dict[str, float]:
    return per_operation(_leaf_key(run), run.operations)


def libraries_per_op(run: ProfileRun) -> dict[str, float]:
    return per_operation(_self_time(run.samples, by_library=True), run.operations)


class TopRow(TypedDict):
    """A function or library and its self time per operation (``top_functions``)."""

    name: str
    ns_per_op: float


class _ProfileStart(TypedDict):
    """The keys every profile's ``meta.json`` has (JSON on disk, written once)."""

    kind: str
    schema: int
    status: str
    variant: str
    version: str
    image: str
    image_id: str | None
    profile_image: str
    profile_image_id: str
    cell: CellRecord
    suite: str | None
    unit: str
    command: list[str]
    profiler: dict[str, object]
    samples: int
    sampled_ns: int
    operations: int
    speed_seconds: float
    measured_seconds: float
    window: tuple[float, float] | None
    ns_per_op: float
    sampled_ns_per_op: float
    host: AccountingRecord | None
    findings: list[FindingRecord]
    started: str
    ended: str
    engine: dict[str, object]
    top_functions: list[TopRow]
    libraries: list[TopRow]
    recorded: str


class ProfileMeta(_ProfileStart, total=False):
    """A profile's ``meta.json`` (:func:`meta_of`; ``overhead`` where it was measured)."""

    overhead: OverheadRecord | None


class DiffRow(TypedDict):
    """A function or library in a comparison of two profiles (a row of ``diff.json``)."""

    name: str
    a_ns_per_op: float
    b_ns_per_op: float
    diff_ns_per_op: float
    diff_sd_ns_per_op: float


def _top(values: dict[str, float], n: int = TOP) -> list[TopRow]:
    rows = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return [{"name": k, "ns_per_op": round(v, 4)} for k, v in rows]


def meta_of(run: ProfileRun, *, variant: str, version: str, image: str, image_id: str | None,
            profile_image: str, profile_image_id: str, cell: Cell,
            engine: EngineInfo) -> ProfileMeta:
    """The profile's meta.json: what ran where, what perf sampled and the work it did."""
    return {
        "kind": "profile", "schema": 1, "status": run.status, "variant": variant,
        "version": version, "image": image, "image_id": image_id,
        "profile_image": profile_image, "profile_image_id": profile_image_id,
        "cell": cell.describe(), "suite": cell.suite or None, "unit": cell.unit,
        "command": list(run.command),
        "profiler": {"tool": "perf record", "event": EVENT, "frequency_hz": FREQUENCY_HZ,
                     "call_graph": "fp (-g)", "where": "inside the profile container"},
        "samples": len(run.samples), "sampled_ns": run.sampled_ns,
        "operations": run.operations, "speed_seconds": run.seconds,
        "measured_seconds": run.seconds, "window": run.extra.get("window"),
        "ns_per_op": run.ns_per_op,
        "sampled_ns_per_op": run.sampled_ns / run.operations,
        "host": run.accounting.as_dict() if run.accounting else None,
        "findings": [f.as_dict() for f in run.findings],
        "started": run.result.started, "ended": run.result.ended,
        "engine": {"endpoint": engine.endpoint, "server_version": engine.server_version,
                   "kernel": engine.kernel, "ncpu": engine.ncpu},
        "top_functions": _top(functions_per_op(run)),
        "libraries": _top(libraries_per_op(run), 50),
        "recorded": _now(),
    }


def file_profile(tree: ResultsTree, run: ProfileRun, meta: ProfileMeta) -> Path:
    """Write one profile's four files into a new numbered folder; meta.json last."""
    folder = tree.new_profile_dir(str(meta["variant"]), str(meta["cell"]["name"]))
    folded = fold(run.samples)
    atomic_write(folder / SCRIPT, run.script)
    atomic_write(folder / FOLDED, folded_text(folded))
    title = (f"{meta['variant']} {meta['cell']['name']}: {len(run.samples)} samples, "
             f"{run.ns_per_op:.1f} ns/op ({run.status})")
    atomic_write(folder / SVG, flame_svg(folded, title))
    write_json(folder / META, meta)
    return folder


# -- two builds ------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """Two profiles of one cell: rows per function and per library, the explained share."""

    a: str
    b: str
    gap_ns: float
    functions: list[Row]
    libraries: list[Row]
    share: float
    sd_ns: dict[str, float]
    """Per row name (function or library): the 1σ counting uncertainty of its B − A."""

    def sd(self, name: str) -> float:
        return self.sd_ns.get(name, 0.0)


def difference(a_name: str, a: ProfileRun, b_name: str, b: ProfileRun) -> Difference:
    gap = b.ns_per_op - a.ns_per_op
    funcs, share = compare(functions_per_op(a), functions_per_op(b), gap)
    libs, _ = compare(libraries_per_op(a), libraries_per_op(b), gap)
    sd: dict[str, float] = {}
    for by_library in (False, True):
        sa, sb = sampling_sd(a, by_library=by_library), sampling_sd(b, by_library=by_library)
        sd |= {k: math.hypot(sa.get(k, 0.0), sb.get(k, 0.0)) for k in set(sa) | set(sb)}
    return Difference(a_name, b_name, gap, funcs, libs, share, sd)


def _row(r: Row, d: Difference) -> DiffRow:
    return {"name": r.name, "a_ns_per_op": round(r.a_ns, 4), "b_ns_per_op": round(r.b_ns, 4),
            "diff_ns_per_op": round(r.diff_ns, 4), "diff_sd_ns_per_op": round(d.sd(r.name), 4)}


def table(d: Difference, a_ns: float, b_ns: float, *, rows: int = 12) -> str:
    """The differential table as printed: libraries, then the top functions."""
    share = "—" if math.isnan(d.share) else f"{d.share:.0%}"
    head = (f"measured: {d.a} {a_ns:.1f} ns/op, {d.b} {b_ns:.1f} ns/op, gap "
            f"{d.gap_ns:+.1f} ns/op; the profiles' differences sum to "
            f"{sum(r.diff_ns for r in d.functions):+.1f} ns/op: {share} of the gap explained")
    out = [head, ""]
    for title, items in (("library", d.libraries), ("function", d.functions[:rows])):
        width = max([len(title), *(len(r.name) for r in items)])
        wa, wb = max(10, len(d.a)), max(10, len(d.b))
        out.append(f"{title:<{width}}  {d.a:>{wa}}  {d.b:>{wb}}  {'B − A':>9}  {'±1σ':>6}")
        out += [f"{r.name:<{width}}  {r.a_ns:{wa}.2f}  {r.b_ns:{wb}.2f}  {r.diff_ns:+9.2f}"
                f"  {d.sd(r.name):6.2f}" for r in items]
        out.append("")
    out.append("(ns per operation: each build's sampled self time over the cell's own count "
               "of operations; "
               "rows sorted by their contribution to the gap; ±1σ: the sample counts' own "
               "uncertainty, not the host's noise)")
    return "\n".join(out) + "\n"


def file_difference(tree: ResultsTree, cell: Cell, d: Difference, a: ProfileRun, b: ProfileRun,
                    folders: tuple[Path, Path]) -> tuple[Path, str]:
    """Write diff.json, diff.txt and diff.svg; return the folder and the table."""
    folder = tree.new_profile_dir("compare", f"{d.a}-vs-{d.b}-{cell.name}")
    text = table(d, a.ns_per_op, b.ns_per_op)
    scaled: Counter[str] = Counter()  # B's samples per A's operation count: same work
    for stack, n in fold(b.samples).items():
        scaled[stack] = n * a.operations / b.operations  # type: ignore[assignment]
    svg = flame_svg(scaled, f"{d.b} {cell.name} at {d.a}'s work: red where {d.b} spends "
                    f"more per operation than {d.a} (or {d.a} has no such frame), blue less",
                    baseline=fold(a.samples))
    atomic_write(folder / "diff.txt", text)
    atomic_write(folder / "diff.svg", svg)
    write_json(folder / "diff.json", {
        "kind": "profile-compare", "schema": 1, "cell": cell.name, "a": d.a, "b": d.b,
        "a_profile": str(folders[0]), "b_profile": str(folders[1]),
        "a_status": a.status, "b_status": b.status,
        "a_ns_per_op": a.ns_per_op, "b_ns_per_op": b.ns_per_op, "gap_ns_per_op": d.gap_ns,
        "explained_ns_per_op": sum(r.diff_ns for r in d.functions),
        "explained_share": None if math.isnan(d.share) else d.share,
        "libraries": [_row(r, d) for r in d.libraries],
        "functions": [_row(r, d) for r in d.functions],
        "recorded": _now()})
    return folder, text
