"""The units a page shows figures in: one unit per kind of figure.

Throughput is shown in MB/s (10^6 bytes per second: openssl speed's "1000s of bytes" are
10^3 bytes), operations in ops/s; the raw figure (bytes/s as measured, and speed's own
``k`` unit) goes into a tooltip and the data files, never into the table itself.

``cycles`` turns a rate into one core's cycles per byte (or per operation): the bench
files it, a reproduction's verdict words it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Unit:
    name: str  # as written after a figure: "MB/s"
    scale: float  # raw units per shown unit
    meaning: str  # one line for the page's legend

    def value(self, raw: float | None) -> float | None:
        return None if raw is None else raw / self.scale

    def num(self, raw: float | None, like: float | None = None) -> str:
        """The figure in this unit, without the unit: ``1,400.0``; ``—`` for none.
        Decimals follow the figure's size, or that of ``like`` (a half-width is printed
        with the decimals of its median)."""
        if raw is None or not math.isfinite(raw):
            return "—"
        v = raw / self.scale
        size = abs(v if like is None or not math.isfinite(like) else like / self.scale)
        digits = 1 if size >= 100 else 2 if size >= 1 else 3
        return f"{v:,.{digits}f}"

    def text(self, raw: float | None) -> str:
        """The figure with its unit: ``1,400.0 MB/s``."""
        shown = self.num(raw)
        return shown if shown == "—" else f"{shown} {self.name}"


MBPS = Unit("MB/s", 1e6, "MB/s = 10^6 bytes per second (openssl speed prints 1000s of "
            "bytes per second: 1,400,000.00k is 1,400.0 MB/s)")
OPS = Unit("ops/s", 1.0, "operations per second")


def speed_k(bytes_per_s: float | None) -> str:
    """Bytes/s in openssl speed's own unit (1000s of bytes per second): ``1,086,559.57k``."""
    return "—" if bytes_per_s is None else f"{bytes_per_s / 1000:,.2f}k"


def raw_bytes(bytes_per_s: float | None) -> str:
    """The measured figure as bytes per second, for a tooltip."""
    return "—" if bytes_per_s is None else f"{bytes_per_s:,.0f} bytes/s ({speed_k(bytes_per_s)})"


def cycles(value_per_s: float | None, clock_hz: float | None, processes: int = 1,
           ) -> float | None:
    """Cycles per byte (or per operation) of one core: clock x processes / rate."""
    if not value_per_s or not clock_hz or value_per_s <= 0:
        return None
    return clock_hz * max(1, processes) / value_per_s
