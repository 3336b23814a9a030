"""Export: every figure in the results tree as flat records (CSV or JSON lines)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from . import records as rec
from .results import ResultsTree
from .speedtypes import STATUS_IMPOSSIBLE, impossible

FIELDS = ("cpu", "variant", "version", "suite", "run", "mask", "ia32cap", "algorithm", "label",
          "evp", "block_size", "bytes_per_s", "ops_per_s", "operation", "status", "detail",
          "forced", "run_status", "started", "image_id", "tarball_sha256",
          "engine", "path", "direction", "multi", "guards", "clock_hz", "clock_source",
          "cycles_per_byte", "cycles_per_op", "round", "series", "pinning", "loadavg",
          "docker_endpoint", "source",
          # pkey/tls suites: the unit of ops_per_s, and what a handshake figure measured
          "unit", "protocol", "key", "cipher", "group", "tls_pinning", "connections",
          "wall_s", "server_cpu_s", "client_cpu_s", "bottleneck")


def records(tree: ResultsTree) -> Iterator[dict[str, Any]]:
    """One flat row per figure of every finished run (running, interrupted or failed runs
    are never counted); a damaged run file is an error naming it."""
    rec.require_tree(tree.root)
    for run in rec.finished_runs(tree.root):
        meta = run.meta
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
        }
        for fig in run.figures:
            row: dict[str, Any] = dict.fromkeys(FIELDS)
            row.update(common)
            row.update({k: v for k, v in fig.to_json().items() if k in FIELDS})
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
                       detail=f"{key} in figures.json: {reason}")
    return row


def render(tree: ResultsTree, fmt: str) -> str:
    rows = list(records(tree))
    if fmt == "jsonl":
        return "".join(json.dumps(r, sort_keys=False, allow_nan=False) + "\n" for r in rows)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(FIELDS), lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in r.items()})
    return buf.getvalue()
