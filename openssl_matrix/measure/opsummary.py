"""The bench summary's lines for operations-per-second figures (public key, handshakes).

Bulk figures are MB/s at one block size; these are operations per second (``ops/s``) or,
for the TLS suite, connections per second (``conn/s``). Each line carries what the bulk
lines carry: the value with its unit and sample count (one attempt: ``n=1``, no interval;
a series: median ± half-width of its 95 % interval over the clean samples), the figure's
status when it is not ok, and for a series how many attempts were contended and left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from openssl_matrix.measure.benchfigure import BenchFigure

#: Units as the summary writes them, from the figure's ``unit`` field.
SHORT_UNITS = {"connections/s": "conn/s", "ops/s": "ops/s"}


def is_ops(fig: Mapping[str, Any] | BenchFigure) -> bool:
    """An operations figure (pkey, tls): no block size, an operation."""
    return fig.get("block_size") is None and bool(fig.get("operation"))


def unit_of(fig: Mapping[str, Any] | BenchFigure) -> str:
    unit = str(fig.get("unit") or "ops/s")
    return SHORT_UNITS.get(unit, unit)


def _name(algorithm: Any, operation: Any, invocation: Any) -> str:
    name = f"{algorithm} {operation}"
    inv = str(invocation or "")
    if inv.startswith("tls--"):  # the same protocol and key run under each pinning
        name += f" {inv.rsplit('--', 1)[-1]}"
    tail = inv.rsplit("--", 1)[-1]
    if inv.startswith("lib--") and tail[:1] == "t" and tail[1:].isdigit():
        # the same operation at each thread count (harness invocations end --tN)
        name += f" ×{tail[1:]} thread" + ("s" if tail[1:] != "1" else "")
    return name


def _num(value: Any) -> str:
    return f"{value:,.1f}" if isinstance(value, (int, float)) else "—"


def figure_line(fig: Mapping[str, Any] | BenchFigure) -> str:
    """One attempt's figure: value, unit, n=1, cycles, bottleneck, status."""
    value = fig.get("bytes") if fig.get("unit") == "bytes" else fig.get("ops_per_s")
    text = f"{_num(value)} {unit_of(fig)} (n=1)" if isinstance(value, (int, float)) else "—"
    cpo = fig.get("cycles_per_op")
    extra = f" ({cpo:,.0f} c/op)" if isinstance(cpo, (int, float)) else ""
    if fig.get("bottleneck"):
        extra += f", bottleneck {fig.get('bottleneck')}"
    status = fig.get("status")
    name = _name(fig.get("algorithm"), fig.get("operation"), fig.get("invocation"))
    return (f"      {name:<40} {text:>28}{extra}"
            + ("" if status == "ok" else f"  [{status}]"))


def series_line(row: Mapping[str, Any], unit: str) -> str:
    """One figure over attempts (a ``bench.summarize_series`` row)."""
    lo, hi = row.get("ci_low"), row.get("ci_high")
    value = _num(row.get("median"))
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
        value += f" ± {_num((hi - lo) / 2)}"
    n = f"n={row['n']}" if row.get("clean", True) else f"n=0 clean of {row['attempts']}"
    cv = f" cv {row['cv']:.1%}" if isinstance(row.get("cv"), float) else ""
    flags = [s for s in row.get("statuses") or () if s != "ok"]
    name = _name(row.get("algorithm"), row.get("operation"), row.get("invocation"))
    return (f"      {name:<40} {value:>20} {unit} ({n}) "
            f"[{_num(row.get('min'))}–{_num(row.get('max'))}]{cv}"
            + ("  NOISY" if row.get("noisy") else "")
            + (f"  [{', '.join(flags)}]" if flags else "")
            + (f"  ({row['contended']} contended attempt(s) left out)"
               if row.get("contended") and row.get("clean") else ""))


def units_by_figure(figures: Iterable[BenchFigure]) -> dict[tuple[Any, ...], str]:
    """(invocation, algorithm, operation) -> unit, for the series lines."""
    return {(f.get("invocation"), f.get("algorithm"), f.get("operation")): unit_of(f)
            for f in figures if is_ops(f)}
