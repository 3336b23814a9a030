"""Interleaved comparisons: two builds (or a mask and native) in one process, in windows
of a few milliseconds that alternate A B B A (``resources/harness/pairbench.c``).

Why: on a VM whose core is shared with another guest, one-second samples of the same code
spread by 20 % and more, and samples seconds apart barely correlate (docs/noise.md), so a
ratio of runs taken one after the other carries the noise of both sides. Two windows of
5 ms side by side see the same neighbour, so the ratio of each A B B A block is steady
where single figures are not.

The estimate: each block's ratio is B's rate over A's in that block (operations over
wall time of its two windows a side). A block with a window in which the thread had the
CPU less than ``CPU_SHARE_MIN`` of its wall time (preempted, or time the hypervisor
took) is left out and counted. The figure is the median of the kept blocks' ratios with
its distribution-free 95 % interval (order statistics, ``robust.median_interval``); the
geometric mean with a t-interval on the logs is kept beside it.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field
from typing import Any

from openssl_matrix.measure.robust import RatioEstimate, median_interval

PREFIX = "+PAIR:"
#: A window whose thread CPU time is below this share of its wall time was preempted.
CPU_SHARE_MIN = 0.9
#: Window length and run time per algorithm when a suite gives none.
WINDOW_MS = 5
SECONDS = 3
METHOD = "interleaved"

_SIDE = re.compile(r"^\+PAIR:side:(?P<side>[01]):version=(?P<version>.*?):ia32cap=(?P<cap>.*)$")
_BEGIN = re.compile(r"^\+PAIR:begin:alg=(?P<alg>[^:]+):bytes=(?P<bytes>\d+):"
                    r"window_ms=(?P<window>[0-9.e+-]+):seconds=(?P<seconds>[0-9.e+-]+):"
                    r"direction=(?P<direction>\w+)$")
_WINDOW = re.compile(r"^\+PAIR:w:(?P<index>\d+):(?P<side>[01]):(?P<ops>\d+):"
                     r"(?P<elapsed>\d+):(?P<cpu>\d+)$")
_ERROR = re.compile(r"^\+PAIR:error:alg=(?P<alg>[^:]+):side=(?P<side>[01]):(?P<text>.*)$")


@dataclass(frozen=True)
class Window:
    side: int
    ops: int
    elapsed_ns: int
    cpu_ns: int

    @property
    def cpu_share(self) -> float:
        return self.cpu_ns / self.elapsed_ns if self.elapsed_ns > 0 else 0.0


@dataclass
class AlgorithmRun:
    """One algorithm's windows from one harness run."""

    algorithm: str
    block: int
    direction: str
    window_ms: float
    seconds: float
    windows: list[Window] = field(default_factory=list)


@dataclass
class PairOutput:
    """What one harness run printed."""

    versions: dict[int, str] = field(default_factory=dict)
    masks: dict[int, str] = field(default_factory=dict)
    runs: list[AlgorithmRun] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def parse_output(text: str) -> PairOutput:
    """The harness's lines (others, such as a shell's, are ignored)."""
    out = PairOutput()
    current: AlgorithmRun | None = None
    for line in text.splitlines():
        if not line.startswith(PREFIX):
            continue
        if (m := _WINDOW.match(line)) is not None:
            if current is not None:
                current.windows.append(Window(int(m["side"]), int(m["ops"]),
                                              int(m["elapsed"]), int(m["cpu"])))
        elif (m := _BEGIN.match(line)) is not None:
            current = AlgorithmRun(m["alg"], int(m["bytes"]), m["direction"],
                                   float(m["window"]), float(m["seconds"]))
            out.runs.append(current)
        elif (m := _SIDE.match(line)) is not None:
            out.versions[int(m["side"])] = m["version"]
            out.masks[int(m["side"])] = m["cap"]
        elif (m := _ERROR.match(line)) is not None:
            side = "A" if m["side"] == "0" else "B"
            out.errors.append(f"{m['alg']} (side {side}): {m['text']}")
        elif line.startswith(PREFIX + "end:"):
            current = None
    return out


@dataclass(frozen=True)
class Interleaved:
    """The ratio B/A of one algorithm from its A B B A blocks."""

    blocks: int  #: blocks kept
    preempted: int  #: blocks left out: a window had the CPU less than CPU_SHARE_MIN
    ratio: float  #: median of the kept blocks' ratios
    ci_low: float | None
    ci_high: float | None
    geometric_mean: float
    #: A's and B's bytes per second over their kept windows (for the record, not a figure
    #: to compare with speed's: the harness's loop is speed's, its timing is not)
    rate_a: float
    rate_b: float

    @property
    def relative_half_width(self) -> float | None:
        if self.ci_low is None or self.ci_high is None or self.ratio <= 0:
            return None
        return (self.ci_high - self.ci_low) / 2 / self.ratio

    def as_estimate(self) -> RatioEstimate:
        return RatioEstimate(self.blocks, self.ratio, self.ci_low, self.ci_high,
                             method=METHOD, sizes=(self.blocks, self.blocks))

    def as_dict(self) -> dict[str, Any]:
        return {"blocks": self.blocks, "preempted": self.preempted, "ratio": self.ratio,
                "ci_low": self.ci_low, "ci_high": self.ci_high,
                "geometric_mean": self.geometric_mean, "rate_a": self.rate_a,
                "rate_b": self.rate_b, "ci_method": "order"}


def estimate(run: AlgorithmRun) -> Interleaved | None:
    """The block ratios' median and interval (None: no block kept)."""
    ratios: list[float] = []
    preempted = 0
    totals = {0: [0, 0], 1: [0, 0]}  # side → [ops, ns]
    wins = run.windows
    for i in range(0, len(wins) - 3, 4):
        block = wins[i:i + 4]
        if sorted(w.side for w in block) != [0, 0, 1, 1]:
            continue
        if any(w.cpu_share < CPU_SHARE_MIN or w.ops <= 0 for w in block):
            preempted += 1
            continue
        rate = {}
        for side in (0, 1):
            ops = sum(w.ops for w in block if w.side == side)
            ns = sum(w.elapsed_ns for w in block if w.side == side)
            rate[side] = ops / ns
            totals[side][0] += ops
            totals[side][1] += ns
        ratios.append(rate[1] / rate[0])
    if not ratios:
        return None
    interval = median_interval(ratios)
    logs = [math.log(r) for r in ratios]
    return Interleaved(
        blocks=len(ratios), preempted=preempted, ratio=float(statistics.median(ratios)),
        ci_low=None if interval is None else interval[0],
        ci_high=None if interval is None else interval[1],
        geometric_mean=math.exp(statistics.fmean(logs)),
        rate_a=totals[0][0] * run.block / totals[0][1] * 1e9,
        rate_b=totals[1][0] * run.block / totals[1][1] * 1e9)
