"""``kind: pkey``: public-key operations through ``openssl speed``, each algorithm
spelled for the version (matrix/pkey.py), operations per second."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openssl_matrix.matrix.check import CheckContext
from openssl_matrix.matrix.kinds.base import (
    FIGURES_OPERATIONS,
    RUNNER_SPEED,
    BaseKind,
    KindOptions,
    SpeedPlan,
    refuse_keys,
    require_known,
)
from openssl_matrix.matrix.pkey import ALGORITHMS, plan


@dataclass(frozen=True)
class PkeyKind(BaseKind):
    def check(self, ctx: CheckContext, entry: Mapping[str, Any],
              algorithms: tuple[str, ...], kp: str) -> KindOptions:
        refuse_keys(ctx, entry, ("evp", "decrypt", "engine", "bytes", "multi"), kp,
                    f"not used by a suite with kind: {self.name}")
        require_known(ctx, algorithms, list(ALGORITHMS), kp, "a public-key test")
        return KindOptions()

    def speed_plan(self, version: str, algorithms: tuple[str, ...],
                   configure: tuple[str, ...]) -> SpeedPlan:
        planned = plan(version, algorithms, configure)
        return SpeedPlan(tuple(arg for _, arg, _ in planned.runs),
                         notes=tuple(r.note() for r in planned.refused))

    def run_line(self, d: Mapping[str, Any]) -> tuple[str, int]:
        return f"speed {' '.join(d['algorithms'])}", len(d["algorithms"])


KIND = PkeyKind("pkey", RUNNER_SPEED, FIGURES_OPERATIONS, "a public-key figure",
                one_run_per_algorithm=True,
                default_seconds_note="speed's default 10 s per operation was used",
                table_title="Public-key operations (operations per second, higher is "
                "better)", panel_label="public-key operations (ops/s)",
                profile_cell="ALGORITHM:OPERATION")
