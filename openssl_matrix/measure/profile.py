"""Sampled profiles: `perf script` text to folded stacks, time per operation, two builds."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

_HEAD = re.compile(r"^\S.*?\s(\d+)\s+(\d+\.\d+):\s+(\d+)\s+(\S+):")
_FRAME = re.compile(r"^\s+([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$")
_OFFSET = re.compile(r"\+0x[0-9a-f]+$")
#: x86-64 kernel addresses (the upper half): what perf cannot name without /proc/kallsyms.
_KERNEL_ADDR = re.compile(r"^ffff[89a-f][0-9a-f]{11}$")


@dataclass(frozen=True)
class Sample:
    """One sample: frames leaf first, each (function, library), and its period in ns."""
    frames: tuple[tuple[str, str], ...]
    period_ns: int
    time_s: float = 0.0
    """perf's timestamp (seconds; the epoch when recorded with ``-k CLOCK_REALTIME``)."""


def library_of(dso: str) -> str:
    """The library a frame's DSO belongs to: libcrypto, libssl, libc, kernel, or its base name."""
    if dso.startswith("[kernel") or dso == "[vdso]":
        return "kernel"
    base = dso.rsplit("/", 1)[-1]
    for name in ("libcrypto", "libssl", "libc", "ld-linux"):
        if base.startswith(name + ".") or base.startswith(name + "-"):
            return name
    return base or "unknown"


def parse_script(text: str) -> list[Sample]:
    """The samples of `perf script` output (default fields, with call graphs)."""
    samples: list[Sample] = []
    frames: list[tuple[str, str]] = []
    period, stamp = 0, 0.0
    in_sample = False
    for line in [*text.splitlines(), ""]:
        if line.startswith("#"):
            continue
        if not line.strip():
            if in_sample and frames:
                samples.append(Sample(tuple(frames), period, stamp))
            frames, in_sample = [], False
            continue
        head = _HEAD.match(line)
        if head and not line[0].isspace():
            in_sample, period, stamp = True, int(head.group(3)), float(head.group(2))
            continue
        frame = _FRAME.match(line)
        if frame and in_sample:
            lib = library_of(frame.group(3))
            if lib == "[unknown]":  # kernel text when kallsyms is hidden (a container)
                lib = "kernel" if _KERNEL_ADDR.match(frame.group(1)) else "unknown"
                if lib == "unknown" and frames:
                    # a "caller" in no mapped file: frame-pointer unwinding through code
                    # that keeps no frame pointer read a stray word; not a real frame
                    continue
            sym = _OFFSET.sub("", frame.group(2))
            if sym == "[unknown]":
                sym = f"[{lib}]"
            frames.append((sym, lib))
    return samples


def within(samples: list[Sample], start_s: float, end_s: float) -> list[Sample]:
    """The samples taken in the window [start_s, end_s] (perf's clock)."""
    return [s for s in samples if start_s <= s.time_s <= end_s]


def fold(samples: list[Sample]) -> Counter[str]:
    """Folded stacks (root first, `;`-joined, as flamegraph.pl reads) → sample count."""
    out: Counter[str] = Counter()
    for s in samples:
        out[";".join(f for f, _ in reversed(s.frames))] += 1
    return out


def folded_text(folded: Counter[str]) -> str:
    return "".join(f"{k} {v}\n" for k, v in sorted(folded.items()))


def self_time_ns(samples: list[Sample], *, by_library: bool = False) -> Counter[str]:
    """Sampled time (ns) attributed to each leaf function (or its library)."""
    out: Counter[str] = Counter()
    for s in samples:
        func, lib = s.frames[0]
        out[lib if by_library else func] += s.period_ns
    return out


def per_operation(times_ns: Counter[str], operations: float) -> dict[str, float]:
    """Each entry's sampled time divided by the operations done: ns per operation."""
    if operations <= 0:
        raise ValueError("operations must be positive")
    return {k: v / operations for k, v in times_ns.items()}


@dataclass(frozen=True)
class Row:
    name: str
    a_ns: float
    b_ns: float

    @property
    def diff_ns(self) -> float:
        return self.b_ns - self.a_ns


def compare(a: dict[str, float], b: dict[str, float],
            measured_gap_ns: float) -> tuple[list[Row], float]:
    """Rows per name sorted by contribution to the gap (B − A), and the share of the measured gap
    (ns per operation, B − A) that the sum of the differences explains."""
    rows = [Row(k, a.get(k, 0.0), b.get(k, 0.0)) for k in set(a) | set(b)]
    sign = 1.0 if measured_gap_ns >= 0 else -1.0
    rows.sort(key=lambda r: (-sign * r.diff_ns, r.name))
    total = sum(r.diff_ns for r in rows)
    share = total / measured_gap_ns if measured_gap_ns else float("nan")
    return rows, share
