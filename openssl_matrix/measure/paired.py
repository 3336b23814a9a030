"""Comparisons measured as comparisons: paired ratios of a repeated bench (core/stats.py).

A bench of several rounds runs every variant once per round, interleaved, and inside a
cell runs each mask right after the native run of the same algorithm, so the two sides of
every comparison alternate closely. Three comparisons are read from it:

* ``asm/no-asm``: a version's assembler build against its ``no-asm`` build;
* ``release``: a newer release against an older one, same build options;
* ``mask/native``: an ``OPENSSL_ia32cap`` mask against the native run of one variant.

A sample the host disturbed (``contended``, ``shared-core``) or that lies more than 5 %
below its cell's best is left out; the rest of both sides give the Hodges–Lehmann ratio
with its distribution-free 95 % interval (``stats.compare_rounds``: with fewer than four
kept samples a side there is none, and the comparison says "too few pairs: n=2"; it
counts as wider than any target in :func:`wide`, so the bench measures another round).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from openssl_matrix.core.stats import RatioEstimate, below_best, compare_rounds
from openssl_matrix.core.statuses import DISTURBED
from openssl_matrix.core.version import Version

_VARIANT = re.compile(r"^(?P<version>[0-9][^-]*)-(?P<build>asm|no-asm)(?P<rest>-.+)?$")

#: (variant, invocation, algorithm, block size) → round → sample (bytes/s)
Samples = dict[tuple[str, str, str, int], dict[int, float]]


class ComparisonRecord(TypedDict):
    """:meth:`Comparison.as_dict`: one paired comparison as the report files it."""

    kind: str
    numerator: str
    denominator: str
    algorithm: str
    block_size: int
    pairs: int
    samples: list[int]
    ratio: float
    ci_low: float | None
    ci_high: float | None
    ci_method: str


@dataclass(frozen=True)
class Comparison:
    """One paired comparison of one algorithm at one block size."""

    kind: str  #: "asm/no-asm", "release" or "mask/native"
    numerator: str  #: variant (and mask) on top
    denominator: str
    algorithm: str
    block: int
    estimate: RatioEstimate
    #: the two cells compared: (variant, invocation, algorithm, block size) each
    cells: tuple[tuple[str, str, str, int], ...] = ()

    def as_dict(self) -> ComparisonRecord:
        e = self.estimate
        return ComparisonRecord(kind=self.kind, numerator=self.numerator,
                                denominator=self.denominator, algorithm=self.algorithm,
                                block_size=self.block, pairs=e.pairs, samples=list(e.sizes),
                                ratio=e.ratio, ci_low=e.ci_low, ci_high=e.ci_high,
                                ci_method=e.method)


def usable_samples(outcomes: Iterable[Any]) -> Samples:
    """Every clean throughput sample by cell and round, the ones more than 5 % below their
    cell's best left out (``CellOutcome``-like objects: variant, round, figures)."""
    raw: dict[tuple[str, str, str, int], dict[int, float]] = {}
    for o in outcomes:
        for f in o.figures:
            value, block = f.get("bytes_per_s"), f.get("block_size")
            if f.get("status") in DISTURBED or not isinstance(value, (int, float)) \
                    or not isinstance(block, int):
                continue
            key = (str(o.variant), str(f.get("invocation")), str(f.get("algorithm")), block)
            raw.setdefault(key, {})[int(o.round)] = float(value)
    out: Samples = {}
    for key, by_round in raw.items():
        rounds = sorted(by_round)
        flags = below_best([by_round[r] for r in rounds])
        out[key] = {r: by_round[r] for r, low in zip(rounds, flags, strict=True) if not low}
    return out


def _mask_of(invocation: str) -> tuple[str, str]:
    """``no-aesni--aes-128-cbc`` → ("no-aesni", "aes-128-cbc"); no mask → ("", name)."""
    mask, sep, rest = invocation.partition("--")
    return (mask, rest) if sep else ("", invocation)


def variant_parts(variant: str) -> tuple[str, str, str] | None:
    m = _VARIANT.match(variant)
    return None if m is None else (m["version"], m["build"], m["rest"] or "")


def comparisons(samples: Mapping[tuple[str, str, str, int], Mapping[int, float]],
                blocks: Sequence[int] | None = None) -> list[Comparison]:
    """Every paired comparison the samples allow (at ``blocks`` only, if given)."""
    by_cell: dict[tuple[str, str, str, int], Mapping[int, float]] = dict(samples)
    out: list[Comparison] = []

    def add(kind: str, a: tuple[str, str, str, int], b: tuple[str, str, str, int],
            top: str, bottom: str) -> None:
        est = compare_rounds(by_cell[a], by_cell[b])
        if est is not None:
            out.append(Comparison(kind, top, bottom, a[2], a[3], est, (a, b)))

    for key in sorted(by_cell):
        variant, invocation, algorithm, block = key
        if blocks is not None and block not in blocks:
            continue
        mask, _ = _mask_of(invocation)
        if mask and mask != "native":
            native = (variant, f"native--{algorithm}", algorithm, block)
            if native in by_cell:
                add("mask/native", key, native, f"{variant} {mask}", f"{variant} native")
        parts = variant_parts(variant)
        if parts is None or (mask and mask != "native"):
            continue
        version, build, rest = parts
        if build == "asm":
            other = (f"{version}-no-asm{rest}", invocation, algorithm, block)
            if other in by_cell:
                add("asm/no-asm", key, other, variant, other[0])
        for okey in sorted(by_cell):
            oparts = variant_parts(okey[0])
            if okey[1:] != key[1:] or oparts is None or oparts[1:] != (build, rest):
                continue
            if newer(version, oparts[0]):
                add("release", key, okey, variant, okey[0])
    return out


def newer(a: str, b: str) -> bool:
    va, vb = Version.find(a), Version.find(b)
    if va is None or vb is None:
        return False
    return vb < va


def wide(outcomes: Iterable[Any], target: float) -> list[Comparison]:
    """The comparisons of ``outcomes`` whose 95 % interval is wider than ``target`` of
    the ratio (too few samples and pairs for an interval: wider than any), the ones a
    further round narrows."""
    return [c for c in comparisons(usable_samples(outcomes))
            if (w := c.estimate.relative_half_width) is None or w > target]
