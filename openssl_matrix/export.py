"""Export: every figure in the results tree as flat records (CSV or JSON lines).

Each row names its bench ``session`` (``sessions``: the run's own id, or one derived for a
run of an older tree). ``per_session`` gives one row per session and figure instead: the
median and 95 % interval of that session's usable figures, never pooled across sessions.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from . import records as rec
from .results import ResultsTree
from .speedtypes import STATUS_IMPOSSIBLE, USABLE_STATUSES, impossible
from .stats import CI_METHOD, estimate

FIELDS = ("cpu", "variant", "version", "suite", "run", "mask", "ia32cap", "algorithm", "label",
          "evp", "block_size", "bytes_per_s", "ops_per_s", "operation", "status", "detail",
          "forced", "run_status", "started", "image_id", "tarball_sha256",
          "engine", "path", "direction", "multi", "guards", "clock_hz", "clock_source",
          "cycles_per_byte", "cycles_per_op", "round", "series", "pinning", "loadavg",
          "docker_endpoint", "own_share", "foreign_cores", "steal_cores", "samples", "ci_low",
          "ci_high", "ci_method", "source",
          # pkey/tls suites: the unit of ops_per_s, and what a handshake figure measured
          "unit", "protocol", "key", "cipher", "group", "tls_pinning", "connections",
          "wall_s", "server_cpu_s", "client_cpu_s", "bottleneck",
          # the bench session the run belongs to (derived: the run recorded none)
          "session", "session_derived")

#: ``per_session`` rows: what identifies a figure, its session, and the session's median.
SESSION_FIELDS = ("cpu", "variant", "version", "suite", "mask", "ia32cap", "algorithm",
                  "label", "evp", "block_size", "operation", "engine", "path", "direction",
                  "multi", "unit", "protocol", "key", "cipher", "group", "tls_pinning",
                  "source", "session", "session_derived", "session_started", "image_id",
                  "docker_endpoint", "runs", "figures", "samples", "bytes_per_s",
                  "ops_per_s", "ci_low", "ci_high", "ci_method", "statuses")

def _series_rows(path: Any, cache: dict[Any, dict[tuple[Any, ...], dict[str, Any]]],
                 ) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The figures of a series file, by (invocation, algorithm, block size, operation)."""
    if path not in cache:
        series = rec.read_series(path)
        rows = series.figures if series is not None else None
        cache[path] = {(r.get("invocation"), r.get("algorithm"), r.get("block_size"),
                        r.get("operation")): r for r in rows or [] if isinstance(r, dict)}
    return cache[path]


def records(tree: ResultsTree) -> Iterator[dict[str, Any]]:
    """One flat row per figure of every finished run (running, interrupted or failed runs
    are never counted); a damaged run file is an error naming it. ``samples``/``ci_low``/
    ``ci_high`` are those of the figure's series (repeated bench): the clean samples behind
    its median and their 95 % interval; a figure measured once has ``samples`` 1 and no
    interval."""
    rec.require_tree(tree.root)
    series_cache: dict[Any, dict[tuple[Any, ...], dict[str, Any]]] = {}
    journals: dict[str, str] | None = None
    for run in rec.finished_runs(tree.root):
        meta = run.meta
        if journals is None and not meta.session:
            journals = rec.journal_runs(tree.root)
        session, derived = rec.run_session(run, journals or {})
        common = {
            "cpu": run.cpu,
            "variant": run.variant,
            "version": meta.version,
            "suite": run.suite,
            "run": run.run,
            "forced": bool(meta.forced),
            "run_status": meta.status,
            "started": meta.started,
            "image_id": meta.image_id,
            "tarball_sha256": meta.tarball_sha256,
            "clock_source": meta.clock_source,
            "round": meta.round,
            "series": meta.series_id,
            "pinning": (meta.pinning or {}).get("cpuset"),
            "loadavg": (meta.host or {}).get("loadavg_before"),
            "docker_endpoint": (meta.docker or {}).get("endpoint"),
            # measured here, or a published report's figures stored by `import --as NAME`
            "source": (f"imported:{run.cpu.removeprefix('ref-')}"
                       if meta.kind == "reference" else "measured"),
            "session": session,
            "session_derived": derived,
        }
        series_id = meta.series_id
        in_series = _series_rows(rec.series_path(run.path.parent, series_id),
                                 series_cache) if series_id else {}
        for fig in run.figures:
            row: dict[str, Any] = dict.fromkeys(FIELDS)
            row.update(common)
            row.update({k: v for k, v in fig.to_json().items() if k in FIELDS})
            srow = in_series.get((fig.invocation, fig.algorithm, fig.block_size,
                                  fig.operation))
            if srow is not None:
                row.update({"samples": srow.get("clean_n", srow.get("n")),
                            "ci_low": srow.get("ci_low"), "ci_high": srow.get("ci_high"),
                            "ci_method": srow.get("ci_method")})
            else:
                row["samples"] = 1
            if isinstance(row.get("guards"), list):
                row["guards"] = ";".join(row["guards"])
            yield _finite(row)


def _finite(row: dict[str, Any]) -> dict[str, Any]:
    """An impossible rate (negative, absurd: the reader already refuses non-finite ones)
    empties the figure and marks it ``impossible``: never a number in an export."""
    for key in ("bytes_per_s", "ops_per_s"):
        value = row.get(key)
        reason = None if value is None else impossible(value)
        if reason is not None:
            row.update(bytes_per_s=None, ops_per_s=None, cycles_per_byte=None,
                       cycles_per_op=None, status=STATUS_IMPOSSIBLE,
                       detail=f"{key} in {rec.FIGURES}: {reason}")
    return row


def per_session(rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """One row per session and figure: the median and 95 % interval (``stats``) of that
    session's usable figures (every round of it), with how many it had; oldest first."""
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


def render(tree: ResultsTree, fmt: str, *, by_session: bool = False) -> str:
    """The export as text: every figure (or, ``by_session``, one row per session's
    median and interval of each figure)."""
    rows = list(per_session(records(tree)) if by_session else records(tree))
    fields = SESSION_FIELDS if by_session else FIELDS
    if fmt == "jsonl":
        return "".join(json.dumps(r, sort_keys=False, allow_nan=False) + "\n" for r in rows)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(fields), lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in r.items()})
    return buf.getvalue()
