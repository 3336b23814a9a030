"""Export: every figure in the results tree as flat records (CSV or JSON lines)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from .results import ResultsTree, read_json

FIELDS = ("cpu", "variant", "version", "suite", "run", "mask", "ia32cap", "algorithm", "label",
          "evp", "block_size", "bytes_per_s", "ops_per_s", "operation", "status", "detail",
          "forced", "run_status", "started", "image_id", "tarball_sha256",
          "engine", "path", "direction", "multi", "guards", "clock_hz", "clock_source",
          "cycles_per_byte", "cycles_per_op", "round", "series", "pinning", "loadavg",
          "docker_endpoint",
          # pkey/tls suites: the unit of ops_per_s, and what a handshake figure measured
          "unit", "protocol", "key", "cipher", "group", "tls_pinning", "connections",
          "wall_s", "server_cpu_s", "client_cpu_s", "bottleneck")


def records(tree: ResultsTree) -> Iterator[dict[str, Any]]:
    for ref in tree.runs():
        if not ref.complete:  # running, interrupted or failed runs are never counted
            continue
        meta = ref.meta
        figures = read_json(ref.path / "figures.json")
        if not isinstance(figures, list):
            continue
        variant = meta.get("variant") or {}
        common = {
            "cpu": ref.cpu,
            "variant": ref.variant,
            "version": variant.get("version"),
            "suite": ref.suite,
            "run": ref.run,
            "forced": bool(meta.get("forced")),
            "run_status": meta.get("status"),
            "started": meta.get("started"),
            "image_id": meta.get("image_id"),
            "tarball_sha256": meta.get("tarball_sha256"),
            "clock_source": meta.get("clock_source"),
            "round": meta.get("round"),
            "series": (meta.get("series") or {}).get("id"),
            "pinning": (meta.get("pinning") or {}).get("cpuset"),
            "loadavg": (meta.get("host") or {}).get("loadavg_before"),
            "docker_endpoint": (meta.get("docker") or {}).get("endpoint"),
        }
        for fig in figures:
            row: dict[str, Any] = dict.fromkeys(FIELDS)
            row.update(common)
            row.update({k: v for k, v in fig.items() if k in FIELDS})
            if isinstance(row.get("guards"), list):
                row["guards"] = ";".join(row["guards"])
            yield row


def render(tree: ResultsTree, fmt: str) -> str:
    rows = list(records(tree))
    if fmt == "jsonl":
        return "".join(json.dumps(r, sort_keys=False) + "\n" for r in rows)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(FIELDS), lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in r.items()})
    return buf.getvalue()
