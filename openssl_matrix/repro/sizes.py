"""Whether a claim is judged where both sides have the report's figures (issue 36).

A claim compares two measurements at the block sizes it names (``block_sizes:``, 8192
when left out), and a trend claim at its two ``trend:`` sizes, or thread counts for the
library harness (``trend: {threads: [1, 4]}``). A measurement the report printed figures
for must have one at each of those: two table rows at different block sizes (16 bytes
against 16384), or a trend at sizes one side never printed, would otherwise load and be
judged at sizes the report did not compare. A measurement with no reference figures at
all (the report states the claim without printing figures for that side) is not checked.
"""

from __future__ import annotations

from collections.abc import Sequence

from openssl_matrix.matrix.check import CheckContext
from openssl_matrix.repro.spec import Measurement


def _listed(points: Sequence[int]) -> str:
    """``16``, ``16 and 16384``, ``16, 64 and 256``."""
    text = [str(p) for p in points]
    return text[0] if len(text) == 1 else ", ".join(text[:-1]) + " and " + text[-1]


def _where(m: Measurement) -> str:
    """Where a measurement's figures are written in the spec."""
    if m.table:
        return f"measurements.{m.table}.algorithms.{m.algorithm} (a table row holds the " \
               f"figures of its block_size only)"
    return f"measurements.{m.name}.reference"


def refuse_unshared(ctx: CheckContext, keypath: str, claim: str, names: tuple[str, str],
                    sides: tuple[Measurement, Measurement], points: Sequence[int], *,
                    trend: bool, threads: bool = False) -> None:
    """Raise a ConfigError when a side that has reference figures has none at one of
    ``points`` (the claim's block sizes, or its trend's two sizes or thread counts),
    naming the claim, the missing points, the points each side has and what to write."""
    unit = "thread count" if threads else "block size"
    field = "trend" + (".threads" if threads else "") if trend else "block_sizes"
    lacking = [(n, m, [p for p in points if p not in m.reference])
               for n, m in zip(names, sides, strict=True) if m.reference]
    lacking = [x for x in lacking if x[2]]
    if not lacking:
        return
    has = "; ".join(f"{n!r} at {_listed(sorted(s.reference))}" if s.reference else
                    f"{n!r} none" for n, s in zip(names, sides, strict=True))
    m = lacking[0][1]
    shared = sorted(set(sides[0].reference) & set(sides[1].reference)) \
        if all(s.reference for s in sides) else sorted(m.reference)
    gaps = " or for ".join(f"{n!r} at {unit}{'s' if len(miss) > 1 else ''} {_listed(miss)}"
                           for n, _, miss in lacking)
    at = unit + ("s" if len(points) > 1 else "")
    message = (f"claim {claim!r} is judged at {at} {_listed(points)}, but the report gives no "
               f"figure for {gaps} (figures: {has}), so its two sides would not be "
               f"compared at one {unit}")
    who = "both have" if all(s.reference for s in sides) else f"{lacking[0][0]!r} has"
    if trend and len(shared) >= 2:
        write = (f"trend: {{threads: [{shared[0]}, {shared[-1]}]}}" if threads else
                 f"trend: [{shared[0]}, {shared[-1]}]")
        todo = f"write {write} with {unit}s {who}"
    elif not trend and shared:
        todo = f"write block_sizes: [{shared[-1]}] with a {unit} {who}"
    else:
        todo = f"compare two measurements the report printed at the same {unit}s"
    add = " and ".join(f"at {_listed(miss)} to {_where(x)}" for _, x, miss in lacking)
    hint = f"{todo}, or add the report's figures {add}"
    raise ctx.fail(f"{keypath}.{field}", message, hint=hint)
