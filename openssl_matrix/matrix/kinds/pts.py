"""``kind: pts``: pts/openssl's own command lines and settings (matrix/pts.py), its
results judged by pts-core's rule."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openssl_matrix.matrix.check import CheckContext
from openssl_matrix.matrix.kinds.base import (
    FIGURES_BLOCKS,
    RUNNER_PTS,
    BaseKind,
    KindDefaults,
    KindOptions,
    refuse_keys,
    require_known,
)
from openssl_matrix.matrix.pts import OPTIONS, RSD_THRESHOLD, SECONDS, TIMES_TO_RUN


@dataclass(frozen=True)
class PtsKind(BaseKind):
    def check(self, ctx: CheckContext, entry: Mapping[str, Any],
              algorithms: tuple[str, ...], kp: str) -> KindOptions:
        refuse_keys(ctx, entry, ("evp", "engine", "provider", "devices", "bytes", "decrypt"),
                    kp, "not used by a suite with kind: pts (it runs pts/openssl's command "
                    "lines)")
        require_known(ctx, algorithms, list(OPTIONS), kp,
                      "an entry of pts/openssl's algorithm menu")
        return KindOptions()

    def speed_evp(self, path: str, command: Sequence[str]) -> bool:
        return "-evp" in command


KIND = PtsKind("pts", RUNNER_PTS, FIGURES_BLOCKS, "a pts/openssl figure",
               defaults=KindDefaults(SECONDS, (0,), TIMES_TO_RUN, RSD_THRESHOLD),
               pts_comparable=True)
