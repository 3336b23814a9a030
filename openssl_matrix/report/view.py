"""What the HTML report shows: the view data that ``templates/report.html.j2`` lays out.

Every decision is taken here, in Python: the unit figures are shown in (``units``), how a
cell names the runs behind it, which figures were flagged and why, and the grids of each
reproduction. The template only loops and escapes.
"""

from __future__ import annotations

import math
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from openssl_matrix.core.names import fold
from openssl_matrix.core.units import MBPS, Unit, raw_bytes

if TYPE_CHECKING:
    from openssl_matrix.report.types import Cell


def href(path: str) -> str:
    """A relative link to a file of the report folder, percent-encoded."""
    return urllib.parse.quote(path, safe="/+=,@~")


class RunLike(Protocol):
    """A figure as far as naming its run goes (``report.Observation``,
    ``report_ops.OpsObservation``)."""

    @property
    def cpu(self) -> str: ...
    @property
    def variant(self) -> str: ...
    @property
    def suite(self) -> str: ...
    @property
    def run(self) -> str: ...


def run_folder(o: RunLike) -> str:
    """The run's folder inside the report (its files are copied there)."""
    return f"runs/{o.cpu}/{o.variant}/{o.suite}/{o.run}"


# -- one table cell ----------------------------------------------------------------


def cell_view(cell: Cell | None, unit: Unit = MBPS, *, up: str = "") -> dict[str, Any] | None:
    """A cell: the shown session's median ± half-width of its 95 % interval in ``unit``,
    its sample count, the raw figures in a tooltip, and one link to the cell's own page
    (its sessions, runs, raw outputs and statuses: ``cellpage``), marked when the cell's
    history has a change (``history``). ``up`` prefixes the link (a page in a folder)."""
    if cell is None:
        return None
    vals = cell.ok_values
    est = cell.estimate
    tip = []
    if est is not None:
        tip.append(f"median {raw_bytes(est.median)}")
        if est.ci_low is not None and est.ci_high is not None:
            tip.append(f"95 % interval {unit.text(est.ci_low)} – {unit.text(est.ci_high)}")
    if len(vals) > 1:
        tip.append(f"n={len(vals)}, min {unit.text(min(vals))}, max {unit.text(max(vals))}")
    flagged = cell.other_statuses
    if flagged:
        tip.append("not ok: " + ", ".join(f"{n} {s}" for s, n in sorted(flagged.items())))
    if cell.shown is not None:
        tip.append(f"session {cell.shown.session} ({cell.shown.when[:16]})")
    median = half = None
    if est is not None:
        median = unit.num(est.median)
        half = unit.num(est.half_width, est.median) if est.half_width is not None else None
    found = cell.changes
    sessions = len(cell.history)
    return {"median": median, "half_width": half, "n": len(vals), "tip": "; ".join(tip),
            "page": href(up + cell.page), "sessions": sessions,
            "page_title": f"{cell.title}: {sessions} session(s), their runs and raw outputs",
            "change": found[-1].text() if found else None,
            "low": cell.sits_low,
            "absent": cell.shown is None,
            "flagged": None if vals else flagged_only(cell, unit)}


def flagged_only(cell: Cell, unit: Unit) -> str | None:
    """A cell without one usable figure: what its flagged figures read, named by their
    statuses (``≈ 648.3, all 6 contended``), never as a median of the table."""
    flagged = cell.flagged
    return flagged.text(unit.num) if flagged is not None else None


# -- reproductions ------------------------------------------------------------------


def ratio(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value):
        return "—"
    return f"{value:.2f}×"


def _range(value: Any) -> str:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        lo, hi = ratio(value[0]), ratio(value[1])
        return "" if "—" in (lo, hi) else f"{lo}–{hi}"
    return ""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


#: How a verdict was reached (verdicts.json ``basis``), as the page says it.
BASIS = {"measured": "by our ratio", "cpu model": "by the CPU model",
         "two machines": "from two machines' results"}


def _claim_view(c: Mapping[str, Any]) -> dict[str, Any]:
    verdict = str(c.get("verdict"))
    blocks = [b for b in (c.get("blocks") or [{}]) if isinstance(b, dict)] or [{}]
    basis = str(c.get("basis") or "measured")
    basis = BASIS.get(basis, f"by {basis}")
    # where our ratios come from (repro/pairs.py): interleaved runs, or rounds
    basis += {"interleaved": ", from interleaved runs",
              "mixed": ", from interleaved runs at some sizes"}.get(
        str(c.get("ratio_basis")), "")
    return {
        "id": c.get("id"), "says": c.get("says"), "verdict": verdict,
        "css": "verdict-" + fold(verdict),
        "basis": basis, "depends_on": c.get("depends_on") or "",
        "model": c.get("model") or "",
        "note": c.get("reason") or c.get("stand_in") or "",
        "blocks": [{"block": b.get("block_size", "—"),
                    "reference": ratio(b.get("reference_ratio")),
                    "ours": ratio(b.get("our_ratio")),
                    "range": _range(b.get("our_ratio_range")) or _runs(b),
                    "model_theirs": ratio(b.get("model_their_cpu")),
                    "model_here": ratio(b.get("model_here"))} for b in blocks],
    }


def _runs(b: Mapping[str, Any]) -> str:
    """An interleaved block whose runs disagreed (repro/pairs.py): each run's ratio."""
    if b.get("runs_disagree") is not True:
        return ""
    runs = [ratio(x) for x in b.get("run_ratios") or () if isinstance(x, (int, float))]
    return "runs disagree: " + ", ".join(runs)


def _measurement_view(name: str, m: Mapping[str, Any], unit: Unit) -> dict[str, Any]:
    rows = []
    for f in m.get("figures") or []:
        if not isinstance(f, dict):
            continue
        ref = _number(f.get("reference_bytes_per_s"))
        ours = _number(f.get("ours_median_bytes_per_s"))
        values = [v for v in (_number(x) for x in f.get("ours_values") or []) if v is not None]
        cpb = [_number(f.get("reference_cycles_per_byte")), _number(f.get("ours_cycles_per_byte"))]
        rows.append({
            "block": f.get("block_size", "—"),
            "reference": unit.num(ref), "reference_tip": raw_bytes(ref),
            "ours": unit.num(ours), "ours_tip": raw_bytes(ours),
            "runs": len(values),
            "spread": f"{unit.num(min(values))}–{unit.num(max(values))}"
            if len(values) > 1 else "",
            "cpb": " → ".join("—" if x is None else f"{x:.2f}" for x in cpb)
            if any(x is not None for x in cpb) else "",
            "ratio": ratio(ours / ref) if ours and ref else "—",
        })
    built = str(m.get("variant") or "not measured") + (" (stand-in)" if m.get("stand_in")
                                                       else "")
    return {"name": name, "algorithm": m.get("algorithm"), "machine": m.get("machine"),
            "built": built, "not_measured": m.get("not_measured") or "", "rows": rows}


def repro_view(r: Mapping[str, Any], unit: Unit = MBPS) -> dict[str, Any]:
    """One reproduction: its claims (verdict, basis, the model's words, reference → ours
    ratio per block size) and its measurements (reference → ours figures)."""
    data = r["data"]
    spec: dict[str, Any] = data["spec"] if isinstance(data.get("spec"), dict) else {}
    origin: dict[str, Any] = spec["source"] if isinstance(spec.get("source"), dict) else {}
    measurements = data.get("measurements") if isinstance(data.get("measurements"),
                                                          dict) else {}
    return {"id": spec.get("id"), "title": spec.get("title"),
            "origin": ", ".join(str(x) for x in origin.values() if x),
            "ended": data.get("ended"), "text": href(r["text"]), "json": href(r["json"]),
            "claims": [_claim_view(c) for c in data.get("claims") or [] if isinstance(c, dict)],
            "measurements": [_measurement_view(str(n), m, unit)
                             for n, m in measurements.items() if isinstance(m, dict)]}
