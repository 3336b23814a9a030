"""Export: every figure in the results tree as flat records (CSV or JSON lines)."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from typing import Any

from .parsing import STATUS_IMPOSSIBLE, impossible
from .results import ResultsTree, read_json

FIELDS = ("cpu", "variant", "version", "suite", "run", "mask", "ia32cap", "algorithm", "label",
          "evp", "block_size", "bytes_per_s", "ops_per_s", "operation", "status", "detail",
          "forced", "run_status", "started", "image_id", "tarball_sha256",
          "engine", "path", "direction", "multi", "guards", "clock_hz", "clock_source",
          "cycles_per_byte", "cycles_per_op", "round", "series", "pinning", "loadavg",
          "docker_endpoint")


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
            yield _finite(row)


def _finite(row: dict[str, Any]) -> dict[str, Any]:
    """No ``Infinity``/``NaN`` in an export: an impossible rate (non-finite, negative,
    absurd) empties the figure and marks it ``impossible``; other non-finite numbers
    become empty."""
    for key in ("bytes_per_s", "ops_per_s"):
        value = row.get(key)
        reason = None if value is None else impossible(value)
        if reason is not None:
            row.update(bytes_per_s=None, ops_per_s=None, cycles_per_byte=None,
                       cycles_per_op=None, status=STATUS_IMPOSSIBLE,
                       detail=f"{key} in figures.json: {reason}")
    return {key: _no_nan(value) for key, value in row.items()}


def _no_nan(value: Any) -> Any:
    """A value with every non-finite number (at any depth) replaced by None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_no_nan(v) for v in value]
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    return value


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
