"""The report's *Profiles* section: where the time goes, per cell and between two builds.

For the newest profile of each variant and cell (``invoke matrix profile``): its status
(a profile the host disturbed is ``contended``, as a figure would be), samples, the time
per operation measured and sampled, the top functions, and its flame graph, copied into
the report folder (``profiles/``) with its folded stacks and record so the page opens from
disk. For the newest comparison of each pair: both builds' time per operation, the gap,
the share of it the per-function differences explain, the rows that explain most, and
the differential flame graph."""

from __future__ import annotations

import html as _html
import shutil
from pathlib import Path
from typing import Any

from openssl_matrix.measure.profileoverhead import verdict
from openssl_matrix.results.profiles import (
    DIFF_JSON,
    DIFF_SVG,
    DIFF_TEXT,
    PROFILE_FOLDED,
    PROFILE_META,
    PROFILE_SVG,
    latest_comparisons,
    latest_profiles,
)

TOP = 3
PROFILE_FILES = (PROFILE_SVG, PROFILE_FOLDED, PROFILE_META)
COMPARE_FILES = (DIFF_SVG, DIFF_TEXT, DIFF_JSON)


def _copy(files: list[tuple[str, Path]], dest: Path) -> dict[str, str]:
    """Copy ``files`` (name, path: a filed folder's regular files) into ``dest``: name →
    copied path."""
    dest.mkdir(parents=True, exist_ok=True)
    out: dict[str, str] = {}
    for name, path in files:
        shutil.copy2(path, dest / name)
        out[name] = str(dest / name)
    return out


def _num(value: Any, digits: int = 1) -> str:
    return f"{value:,.{digits}f}" if isinstance(value, (int, float)) else "—"


def profile_rows(root: Path, out: Path) -> list[dict[str, Any]]:
    rows = []
    for n, f in enumerate(latest_profiles(root), 1):
        r = f.record
        cell: dict[str, Any] = r["cell"] if isinstance(r.get("cell"), dict) else {}
        rel = f"profiles/{n:03d}"
        files = _copy(f.files(PROFILE_FILES), out / rel)
        tops = [t for t in r.get("top_functions") or [] if isinstance(t, dict)][:TOP]
        rows.append({
            "variant": str(r.get("variant", "?")), "cell": str(cell.get("name", "?")),
            "unit": str(r.get("unit") or cell.get("unit") or "operation"),
            "status": str(r.get("status", "?")), "samples": r.get("samples"),
            "ns_per_op": r.get("ns_per_op"), "sampled_ns_per_op": r.get("sampled_ns_per_op"),
            "operations": r.get("operations"), "recorded": r.get("recorded"),
            "top": [(str(t.get("name")), t.get("ns_per_op")) for t in tops],
            "svg": f"{rel}/{PROFILE_SVG}" if PROFILE_SVG in files else None,
            "folded": f"{rel}/{PROFILE_FOLDED}" if PROFILE_FOLDED in files else None,
            "meta": f"{rel}/{PROFILE_META}", "source": str(f.folder),
            "overhead": _overhead(r.get("overhead"))})
    return rows


def _overhead(record: Any) -> dict[str, Any] | None:
    """The profiler's cost on the figure, when the profile measured it (``--overhead``)."""
    if not isinstance(record, dict) or not isinstance(record.get("ratio"), (int, float)):
        return None
    runs = [r for r in record.get("runs") or [] if isinstance(r, dict)]
    return {"ratio": record["ratio"], "cost": record.get("cost"),
            "spread": record.get("spread"), "told_apart": bool(record.get("told_apart")),
            "contended": bool(record.get("contended")),
            "rates": [(str(r.get("role")), r.get("ops_per_s"), str(r.get("status")))
                      for r in runs]}


def _cost(o: dict[str, Any] | None) -> str:
    """The overhead's cell: profiled/unprofiled, the spread of the two unprofiled runs."""
    if o is None:
        return '<span class="muted">not measured</span>'
    spread = o["spread"] if isinstance(o["spread"], (int, float)) else float("nan")
    cost = o["cost"] if isinstance(o["cost"], (int, float)) else float("nan")
    rates = "<br>".join(f"{_e(role)}: {_num(ops, 0)} ops/s ({_e(status)})"
                        for role, ops, status in o["rates"])
    told = verdict({"told_apart": o["told_apart"], "cost": o["cost"]})
    said = "" if told == "more than the spread" else f"<br>{_e(told)}"
    css = ' class="bad"' if o["contended"] else ""
    return (f"<span{css}>{o['ratio']:.3f}× (cost {cost:+.1%}); unprofiled runs differ "
            f"by {spread:.1%}{said}</span><br><span class=\"muted\">{rates}</span>")


def comparison_rows(root: Path, out: Path) -> list[dict[str, Any]]:
    rows = []
    for n, f in enumerate(latest_comparisons(root), 1):
        r = f.record
        rel = f"profiles/compare-{n:03d}"
        files = _copy(f.files(COMPARE_FILES), out / rel)
        funcs = [x for x in r.get("functions") or [] if isinstance(x, dict)][:TOP]
        rows.append({
            "a": str(r.get("a", "?")), "b": str(r.get("b", "?")), "cell": str(r.get("cell")),
            "statuses": (str(r.get("a_status")), str(r.get("b_status"))),
            "a_ns": r.get("a_ns_per_op"), "b_ns": r.get("b_ns_per_op"),
            "gap": r.get("gap_ns_per_op"), "share": r.get("explained_share"),
            "top": [(str(x.get("name")), x.get("diff_ns_per_op")) for x in funcs],
            "svg": f"{rel}/{DIFF_SVG}" if DIFF_SVG in files else None,
            "text": f"{rel}/{DIFF_TEXT}" if DIFF_TEXT in files else None,
            "source": str(f.folder)})
    return rows


def _e(text: object) -> str:
    return _html.escape(str(text))


def _tops(rows: list[tuple[str, Any]]) -> str:
    return "<br>".join(f"{_e(name)}: {_num(ns, 2)}" for name, ns in rows) or "—"


def _links(pairs: tuple[tuple[str, str | None], ...]) -> str:
    return " · ".join(f'<a href="{_e(href)}">{label}</a>' for label, href in pairs if href)


def _figure(src: str, alt: str, caption: str) -> str:
    return (f'<figure><img class="flame" src="{_e(src)}" alt="{_e(alt)}" '
            f'style="max-width:100%"><figcaption>{_e(caption)}</figcaption></figure>')


def html(profiles: list[dict[str, Any]], comparisons: list[dict[str, Any]]) -> str:
    if not profiles and not comparisons:
        return ""
    out = ['<h2 id="profiles">Profiles: where the time goes</h2>',
           '<p class="muted">Sampled with <code>perf record -e cpu-clock -g</code> inside the '
           "variant's profile image (<code>invoke matrix profile</code>; docs/profile.md). "
           "Time per operation: the run's own count of operations; <i>sampled</i> is what "
           "perf saw on a CPU (a VM's lost time is not sampled). A profile the host "
           "disturbed is <span class=\"bad\">contended</span>, as a figure would be.</p>"]
    if profiles:
        out.append("<table><tr><th>Variant</th><th>Cell</th><th>Status</th><th>Samples</th>"
                   "<th>ns/op</th><th>sampled ns/op</th><th>Top functions (ns/op)</th>"
                   "<th>Profiler's cost (profiled/unprofiled ops/s)</th>"
                   "<th>Flame graph</th></tr>")
        for p in profiles:
            css = "" if p["status"] == "ok" else ' class="bad"'
            top = _tops(p["top"])
            links = _links((("svg", p["svg"]), ("folded stacks", p["folded"]),
                            ("meta.json", p["meta"])))
            out.append(f"<tr><td>{_e(p['variant'])}</td><td>{_e(p['cell'])}<br><span "
                       f"class=\"muted\">ns per {_e(p['unit'])}</span></td>"
                       f"<td{css}>{_e(p['status'])}</td><td class=\"num\">"
                       f"{_num(p['samples'], 0)}</td><td class=\"num\">{_num(p['ns_per_op'])}"
                       f"</td><td class=\"num\">{_num(p['sampled_ns_per_op'])}</td>"
                       f"<td>{top}</td><td>{_cost(p.get('overhead'))}</td>"
                       f"<td>{links}</td></tr>")
        out.append("</table>")
        for p in profiles:
            if p["svg"]:
                out.append(_figure(p["svg"], f"flame graph of {p['variant']} {p['cell']}",
                                   f"{p['variant']} · {p['cell']}: flame graph "
                                   f"({p['status']})"))
    if comparisons:
        out.append("<h3>Two builds, function by function</h3><table><tr><th>A → B</th>"
                   "<th>Cell</th><th>A ns/op</th><th>B ns/op</th><th>Gap B − A</th>"
                   "<th>Explained</th><th>Rows that explain most (ns/op)</th>"
                   "<th>Differential</th></tr>")
        for c in comparisons:
            share = f"{c['share']:.0%}" if isinstance(c["share"], (int, float)) else "—"
            top = _tops(c["top"])
            links = _links((("svg", c["svg"]), ("table", c["text"])))
            flagged = "" if c["statuses"] == ("ok", "ok") else \
                f'<br><span class="bad">{_e(" / ".join(c["statuses"]))}</span>'
            out.append(f"<tr><td>{_e(c['a'])} → {_e(c['b'])}{flagged}</td>"
                       f"<td>{_e(c['cell'])}</td><td class=\"num\">{_num(c['a_ns'])}</td>"
                       f"<td class=\"num\">{_num(c['b_ns'])}</td><td class=\"num\">"
                       f"{_num(c['gap'])}</td><td class=\"num\">{share}</td><td>{top}</td>"
                       f"<td>{links}</td></tr>")
        out.append("</table>")
        for c in comparisons:
            if c["svg"]:
                out.append(_figure(c["svg"], f"differential flame graph {c['a']} → {c['b']}",
                                   f"{c['b']} at {c['a']}'s work, {c['cell']}: red where "
                                   f"{c['b']} spends more per operation, blue less"))
    return "\n".join(out) + "\n"


def text(profiles: list[dict[str, Any]], comparisons: list[dict[str, Any]]) -> list[str]:
    """The summary's lines: how many profiles and comparisons the page shows."""
    if not profiles and not comparisons:
        return []
    return [f"profiles: {len(profiles)} cell(s), {len(comparisons)} comparison(s) "
            "(section 'Profiles')"]
