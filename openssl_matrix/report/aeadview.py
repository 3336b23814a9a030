"""The report's check that a capability mask moved only what it should among AEAD ciphers.

ChaCha20-Poly1305 uses neither AES-NI nor PCLMULQDQ, so a mask that turns those off must
leave it where it was: a masked median outside the unmasked figure's 95 % interval (and
the unmasked one outside the masked interval) means the mask reached something else
(AVX2, SSSE3: a value written without ``:``, a version that reads the mask differently).
GCM is expected to drop under the same mask; that is what the method tables show.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from openssl_matrix.core.units import MBPS
from openssl_matrix.matrix.aead import ALGORITHMS
from openssl_matrix.report.types import Group, describe_mask, method_of


@dataclass(frozen=True)
class MaskCheck:
    table: str
    algorithm: str
    block: int
    method: str
    native: str
    masked: str
    moved: bool | None
    """None: not decidable (an interval is missing)."""

    def line(self) -> str:
        verdict = ("moved beyond its interval: the mask reaches more than it names "
                   "(flagged)" if self.moved else
                   "within its interval, as expected (it uses neither AES-NI nor "
                   "PCLMULQDQ)" if self.moved is False else
                   "not decidable (no 95 % interval on one side)")
        return (f"{self.table}: {self.algorithm} at {self.block} bytes, {self.method}: "
                f"{self.native} unmasked → {self.masked} masked: {verdict}")


def checks(groups: Sequence[Group]) -> list[MaskCheck]:
    out: list[MaskCheck] = []
    for g in groups:
        for (label, alg, block), cell in sorted(g.cells.items()):
            info = ALGORITHMS.get(alg)
            first = cell.observations[0]
            if info is None or info.aes or not first.ia32cap:
                continue
            _, native_label = method_of(dataclasses.replace(first, ia32cap=None))
            ref = g.cell(native_label, alg, block)
            e, r = cell.estimate, ref.estimate if ref is not None else None
            if ref is None:
                continue
            moved: bool | None = None
            if e is not None and r is not None and None not in (e.ci_low, e.ci_high,
                                                                 r.ci_low, r.ci_high):
                moved = not (r.ci_low <= e.median <= r.ci_high  # type: ignore[operator]
                             or e.ci_low <= r.median <= e.ci_high)  # type: ignore[operator]
            out.append(MaskCheck(g.key.title, alg, block,
                                 label.replace(describe_mask(first.ia32cap), "masked"),
                                 ref.pm(), cell.pm(), moved))
    return out


def text(found: Sequence[MaskCheck]) -> list[str]:
    if not found:
        return []
    return ["Masks and ChaCha20-Poly1305 (it must not move):",
            *[f"  {c.line()}" for c in found], ""]


def html(found: Sequence[MaskCheck]) -> str:
    if not found:
        return ""
    items = "".join(f'<li class="{"bad" if c.moved else ""}">{escape(c.line())}</li>'
                    for c in found)
    return (f'<h3 id="aead-masks">Masks and ChaCha20-Poly1305 ({MBPS.name})</h3>'
            "<p class=\"muted\">ChaCha20-Poly1305 uses neither AES-NI nor PCLMULQDQ: a mask "
            "that turns them off must leave it within its interval (GCM drops; see the "
            f"method tables).</p><ul>{items}</ul>\n")
