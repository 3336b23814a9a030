"""``kind: speed``: ``openssl speed`` on symmetric ciphers and digests, through EVP, the
low-level path or both, bytes per second per block size."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from openssl_matrix.matrix.kinds.base import FIGURES_BLOCKS, RUNNER_SPEED, BaseKind


@dataclass(frozen=True)
class SpeedKind(BaseKind):
    def paths(self, evp: bool, legacy: bool) -> tuple[str, ...]:
        if not evp:
            return ("legacy",)
        return ("evp", "legacy") if legacy else ("evp",)

    def speed_evp(self, path: str, command: Sequence[str]) -> bool:
        return path == "evp"


KIND = SpeedKind("speed", RUNNER_SPEED, FIGURES_BLOCKS, "a speed figure",
                 interleavable=True, bisectable=True, profile_cell="ALGORITHM:BYTES")
