"""Export: every figure in the results tree as flat records (CSV or JSON lines).

Each row names its bench ``session`` (``records.run_session``: the run's own id, or one
derived for a run of an older tree); ``report.sessions.session_medians`` turns the rows
into one per session and figure (``export --per-session``).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from openssl_matrix.parse.figures import MAX_BLOCK_SIZE, STATUS_IMPOSSIBLE, impossible
from openssl_matrix.results import records as rec
from openssl_matrix.results.tree import ResultsTree

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
          # library suites: threads, operations, µs per operation, memory in bytes
          "threads", "operations", "elapsed_s", "us_per_op", "cpu_us_per_op", "api", "bytes",
          "client_bytes",
          # kind: pts suites: the PTS result a figure is, and its unit
          "pts_result", "pts_unit",
          # the bench session the run belongs to (derived: the run recorded none)
          "session", "session_derived")

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
    block = row.get("block_size")
    if isinstance(block, int) and not 0 < block <= MAX_BLOCK_SIZE:
        row.update(block_size=None, bytes_per_s=None, ops_per_s=None, cycles_per_byte=None,
                   cycles_per_op=None, status=STATUS_IMPOSSIBLE,
                   detail=f"block_size in {rec.FIGURES}: {str(block)[:40]} bytes is beyond "
                   f"any speed table (at most {MAX_BLOCK_SIZE})")
    for key in ("bytes_per_s", "ops_per_s"):
        value = row.get(key)
        reason = None if value is None else impossible(value)
        if reason is not None:
            row.update(bytes_per_s=None, ops_per_s=None, cycles_per_byte=None,
                       cycles_per_op=None, status=STATUS_IMPOSSIBLE,
                       detail=f"{key} in {rec.FIGURES}: {reason}")
    return row


def render(tree: ResultsTree, fmt: str) -> str:
    """The export as text: every figure of the tree."""
    return render_rows(list(records(tree)), FIELDS, fmt)


def written_by_export(head: bytes) -> bool:
    """Whether a file that starts with ``head`` is one ``export`` writes, so ``export
    --output`` may replace it: nothing at all, CSV under its header (``cpu,variant,
    version,suite,...``, also ``--per-session``'s) or JSON lines of its records. Anything
    else is someone's file, replaced only with ``--force``."""
    first = head.lstrip(b"\xef\xbb\xbf").split(b"\n", 1)[0].strip()
    return not first or first.startswith((b"cpu,variant,version,suite,", b'{"cpu": '))


def render_rows(rows: Sequence[Mapping[str, Any]], fields: Sequence[str], fmt: str) -> str:
    """Rows as JSON lines or CSV with the columns ``fields``."""
    if fmt == "jsonl":
        return "".join(json.dumps(r, sort_keys=False, allow_nan=False) + "\n" for r in rows)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(fields), lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: _cell(v) for k, v in r.items()})
    return buf.getvalue()


#: A text cell starting with one of these is read as a formula by spreadsheets.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def _cell(value: object) -> object:
    """A CSV cell: empty for None; text a spreadsheet would run as a formula (``=cmd|…``,
    ``+``, ``-``, ``@``, a tab or carriage return first) gets a leading ``'``, as OWASP's
    CSV-injection guidance says. Numbers stay numbers (``-5`` is not text here)."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value
