"""``invoke matrix export --per-session``: one row per bench session and figure (that
session's median and 95 % interval), from the export's rows; see ``sessions``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from openssl_matrix.core.stats import CI_METHOD, estimate
from openssl_matrix.core.statuses import USABLE_STATUSES
from openssl_matrix.results.export import FIELDS

#: ``session_medians`` rows: what identifies a figure, its session, and the session's median.
SESSION_FIELDS = ("cpu", "variant", "version", "suite", "mask", "ia32cap", "algorithm",
                  "label", "evp", "block_size", "operation", "engine", "path", "direction",
                  "multi", "unit", "protocol", "key", "cipher", "group", "tls_pinning",
                  "source", "session", "session_derived", "session_started", "image_id",
                  "docker_endpoint", "runs", "figures", "samples", "bytes_per_s",
                  "ops_per_s", "ci_low", "ci_high", "ci_method", "statuses")



def session_medians(rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """One row per session and figure of the export's ``rows`` (``export.records``): the
    median and 95 % interval (``stats``) of that session's usable figures (every round of
    it), with how many it had, never pooled across sessions; oldest first."""
    ident = [f for f in SESSION_FIELDS if f in FIELDS and f not in (
        "session_derived", "image_id", "docker_endpoint", "bytes_per_s", "ops_per_s",
        "samples", "ci_low", "ci_high", "ci_method")]
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r.get(f) for f in ident), []).append(r)
    out = []
    for key, members in groups.items():
        first = min(members, key=lambda r: str(r.get("started") or ""))
        row: dict[str, Any] = dict.fromkeys(SESSION_FIELDS)
        row.update(zip(ident, key, strict=True))
        row.update({"session_derived": first["session_derived"],
                    "session_started": first.get("started"), "image_id": first["image_id"],
                    "docker_endpoint": first["docker_endpoint"],
                    "runs": len({r["run"] for r in members}), "figures": len(members)})
        counts: dict[str, int] = {}
        for r in members:
            counts[str(r.get("status"))] = counts.get(str(r.get("status")), 0) + 1
        row["statuses"] = ";".join(f"{s}={n}" for s, n in sorted(counts.items()))
        for value_key in ("bytes_per_s", "ops_per_s"):
            vals = [r[value_key] for r in members
                    if r.get(value_key) is not None and r.get("status") in USABLE_STATUSES]
            e = estimate(vals)
            if e is None:
                continue
            row[value_key] = e.median
            if row["samples"] is None:  # the interval is the figure's rate's (bytes first)
                row.update({"samples": e.n, "ci_low": e.ci_low, "ci_high": e.ci_high,
                            "ci_method": CI_METHOD if e.ci_low is not None else None})
        row["samples"] = row["samples"] or 0
        out.append(row)
    out.sort(key=lambda r: (str(r["session_started"] or ""), str(r["session"])))
    return iter(out)
