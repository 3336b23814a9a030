"""``kind: aead``: AEAD ciphers through ``speed -aead`` or plain EVP, as the version
has it (matrix/aead.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openssl_matrix.matrix.aead import ALGORITHMS, decrypt_caveat, plan
from openssl_matrix.matrix.check import CheckContext
from openssl_matrix.matrix.kinds.base import (
    FIGURES_BLOCKS,
    RUNNER_SPEED,
    BaseKind,
    KindOptions,
    SpeedPlan,
    refuse_keys,
    require_known,
)


@dataclass(frozen=True)
class AeadKind(BaseKind):
    def check(self, ctx: CheckContext, entry: Mapping[str, Any],
              algorithms: tuple[str, ...], kp: str) -> KindOptions:
        refuse_keys(ctx, entry, ("evp", "engine", "provider", "devices"), kp,
                    "not used by a suite with kind: aead (the method, -aead or plain EVP, "
                    "follows the version)")
        require_known(ctx, algorithms, list(ALGORITHMS), kp, "an AEAD cipher")
        return KindOptions()

    def speed_plan(self, version: str, algorithms: tuple[str, ...],
                   configure: tuple[str, ...]) -> SpeedPlan:
        aplan = plan(version, algorithms, configure)
        notes = list(aplan.notes) + [r.note() for r in aplan.refused]
        notes += [f"{r.algorithm}: {r.caveat}" for r in aplan.runs if r.caveat]
        method = aplan.runs[0].method if aplan.runs else None
        return SpeedPlan(tuple(r.algorithm for r in aplan.runs), method, tuple(notes),
                         decrypt_caveat(version, method) if method else None)

    def speed_evp(self, path: str, command: Sequence[str]) -> bool:
        return True


KIND = AeadKind("aead", RUNNER_SPEED, FIGURES_BLOCKS, "an AEAD figure")
