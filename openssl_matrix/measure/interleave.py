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
took) is left out and counted. So is a block in which either side ran more than
``SLOWED`` below its usual block rate (the upper ``REFERENCE_QUANTILE`` of its blocks):
a neighbour slows two different code paths unequally (measured here: no-asm SHA-1 to
0.4 of its rate, the assembler to 0.67, for most of a second), so the ratio of disturbed
blocks is not the ratio of the code; with fewer than ``MIN_KEPT`` such blocks every
unpreempted block is used and the estimate says so (``disturbed``). A host so busy that
fewer than ``MIN_KEPT`` blocks had no preempted window (two loaded cores shared with other
work: the thread had the CPU a fifth to a half of each window, measured here on
2026-12-06) gets rates by the thread's CPU time instead of wall time, over every block
whose windows had some CPU (``rates_by: cpu``): operations over the time the thread ran,
which preemption does not stretch. So does one where most blocks had a preempted window:
the few that had none are the moments the neighbour paused, and barely hold the MIN_KEPT
a slow operation's interval needs once the slowed ones are left out. Neighbouring blocks
are not independent (a neighbour's load lasts for many of them), so the interval is that
of batch means: the kept blocks in order, in batches of ``BATCH``, each batch's geometric
mean ratio, Student's t over the batches' logs (3 batches at least); the figure is the
batches' geometric mean, the blocks' median ratio kept beside it (``median``).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from openssl_matrix.core.stats import t975
from openssl_matrix.results.pairrecord import PairEstimate

PREFIX = "+PAIR:"
#: A window whose thread CPU time is below this share of its wall time was preempted.
CPU_SHARE_MIN = 0.9
#: A block where a side ran more than this below its usual block rate was slowed.
SLOWED = 0.10
#: The usual block rate of a side: this quantile of its blocks' rates.
REFERENCE_QUANTILE = 0.9
#: Fewer unslowed blocks than this: every unpreempted block is used (``disturbed``).
MIN_KEPT = 12
#: Consecutive kept blocks per batch of the interval (batch means).
BATCH = 10
#: Window length and run time per algorithm when a suite gives none.
WINDOW_MS = 5
SECONDS = 3
METHOD = "interleaved"
#: The library harness's operations (libbench.c) the pair harness runs too, with the same
#: calls (pairbench.c's LIBOPS): one thread, one figure in operations per second. Their
#: runs have block size 0 and the direction ``OPERATION``.
LIBRARY_OPERATIONS = ("pkey-decode-pem-rsa2048", "pkey-decode-der-rsa2048",
                      "pkey-decode-pem-ecp256", "pkey-decode-der-ecp256", "cmac", "hmac")
OPERATION = "operation"

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
    ratio: float  #: geometric mean of the batches of kept blocks
    ci_low: float | None
    ci_high: float | None
    geometric_mean: float  #: the kept blocks' median ratio (named so in records before)
    #: A's and B's bytes per second over their kept windows (for the record, not a figure
    #: to compare with speed's: the harness's loop is speed's, its timing is not); for a
    #: library operation (block 0, direction ``operation``) operations per second
    rate_a: float
    rate_b: float
    slowed: int = 0  #: blocks left out: a side more than SLOWED below its usual rate
    #: too few unslowed blocks: the ratio is of disturbed blocks too
    disturbed: bool = False
    #: too few unpreempted blocks: rates are operations over each window's thread CPU
    #: time, preempted blocks kept (``preempted`` still counts them)
    by_cpu_time: bool = False
    #: the standard error of the log-ratio (batch means; None under 3 batches) and the
    #: batches it comes from: a run as a unit of several (runsmeta.py)
    log_se: float | None = None
    batches: int = 0

    @property
    def relative_half_width(self) -> float | None:
        if self.ci_low is None or self.ci_high is None or self.ratio <= 0:
            return None
        return (self.ci_high - self.ci_low) / 2 / self.ratio

    def record(self) -> PairEstimate:
        """The estimate as a comparison's record files it (results/pairrecord.py)."""
        return PairEstimate(
            blocks=self.blocks, preempted=self.preempted, slowed=self.slowed,
            disturbed=self.disturbed, ratio=self.ratio, ci_low=self.ci_low,
            ci_high=self.ci_high, geometric_mean=self.geometric_mean, rate_a=self.rate_a,
            rate_b=self.rate_b, ci_method="t95-batches", median=self.geometric_mean,
            rates_by="cpu" if self.by_cpu_time else "wall", log_se=self.log_se,
            ci_df=self.batches - 1 if self.log_se is not None else None,
            present=frozenset({"log_se", "ci_df"}))


@dataclass(frozen=True)
class _Block:
    ops: tuple[int, int]
    ns: tuple[int, int]

    def rate(self, side: int) -> float:
        return self.ops[side] / self.ns[side]


def _blocks(windows: Sequence[Window], by_cpu: bool = False) -> tuple[list[_Block], int]:
    """The A B B A blocks with no preempted window, and how many had one; ``by_cpu``:
    every block whose windows had some CPU time, timed by it."""
    out: list[_Block] = []
    preempted = 0
    for i in range(0, len(windows) - 3, 4):
        block = windows[i:i + 4]
        if sorted(w.side for w in block) != [0, 0, 1, 1]:
            continue
        if any(w.cpu_share < CPU_SHARE_MIN or w.ops <= 0 for w in block):
            preempted += 1
            if not by_cpu or any(w.cpu_ns <= 0 or w.ops <= 0 for w in block):
                continue
        ns = [sum(w.cpu_ns if by_cpu else w.elapsed_ns for w in block if w.side == side)
              for side in (0, 1)]
        out.append(_Block(
            (sum(w.ops for w in block if w.side == 0), sum(w.ops for w in block if w.side == 1)),
            (ns[0], ns[1])))
    return out, preempted


def _all_blocks(runs: Sequence[AlgorithmRun], by_cpu: bool) -> tuple[list[_Block], int]:
    blocks: list[_Block] = []
    preempted = 0
    for r in runs:  # each run cut in blocks on its own: no block spans two processes
        mine, lost = _blocks(r.windows, by_cpu)
        blocks += mine
        preempted += lost
    return blocks, preempted


def _usual(rates: Sequence[float]) -> float:
    ordered = sorted(rates)
    return ordered[min(len(ordered) - 1, int(REFERENCE_QUANTILE * len(ordered)))]


def estimate(run: AlgorithmRun, runs: Sequence[AlgorithmRun] = ()) -> Interleaved | None:
    """The kept blocks' ratio and its batch-means interval (None: no block with CPU time).
    ``runs``: more runs of the same pair and algorithm, pooled (each cut in blocks on its
    own, so no block spans two processes). Fewer than ``MIN_KEPT`` unpreempted blocks, or
    fewer than preempted ones: rates by thread CPU time."""
    blocks, preempted = _all_blocks((run, *runs), False)
    by_cpu = len(blocks) < MIN_KEPT or preempted > len(blocks)
    if by_cpu:
        more, _ = _all_blocks((run, *runs), True)
        by_cpu = len(more) > len(blocks)
        blocks = more if by_cpu else blocks
    if not blocks:
        return None
    usual = [_usual([b.rate(side) for b in blocks]) for side in (0, 1)]
    kept = [b for b in blocks
            if all(b.rate(side) >= (1 - SLOWED) * usual[side] for side in (0, 1))]
    disturbed = len(kept) < MIN_KEPT
    if disturbed:
        kept = blocks
    logs = [math.log(b.rate(1) / b.rate(0)) for b in kept]
    batches = [statistics.fmean(logs[i:i + BATCH])
               for i in range(0, len(logs) - BATCH + 1, BATCH)]
    centre = statistics.fmean(batches) if len(batches) >= 3 else statistics.fmean(logs)
    lo = hi = se = None
    if len(batches) >= 3:
        se = statistics.stdev(batches) / math.sqrt(len(batches))
        half = t975(len(batches) - 1) * se
        lo, hi = math.exp(centre - half), math.exp(centre + half)
    ops = [sum(b.ops[side] for b in kept) for side in (0, 1)]
    ns = [sum(b.ns[side] for b in kept) for side in (0, 1)]
    unit = run.block or 1  # a library operation (block 0): operations per second
    return Interleaved(
        blocks=len(kept), preempted=preempted, ratio=math.exp(centre), ci_low=lo, ci_high=hi,
        geometric_mean=math.exp(statistics.median(logs)),
        rate_a=ops[0] * unit / ns[0] * 1e9, rate_b=ops[1] * unit / ns[1] * 1e9,
        slowed=0 if disturbed else len(blocks) - len(kept), disturbed=disturbed,
        by_cpu_time=by_cpu, log_se=se, batches=len(batches))
