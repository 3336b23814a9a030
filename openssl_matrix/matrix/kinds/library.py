"""``kind: library``: our C harness (measure/library.py) timing libcrypto operations at
several thread counts, operations per second per thread count."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openssl_matrix.core.names import clip
from openssl_matrix.matrix.check import CheckContext
from openssl_matrix.matrix.kinds.base import (
    FIGURES_THREADS,
    RUNNER_HARNESS,
    BaseKind,
    KindOptions,
    refuse_keys,
    require_known,
)
from openssl_matrix.matrix.libvocab import OPERATIONS, LibraryOptions

#: Most threads a library suite may ask for.
MAX_THREADS = 256


@dataclass(frozen=True)
class LibraryKind(BaseKind):
    def check(self, ctx: CheckContext, entry: Mapping[str, Any],
              algorithms: tuple[str, ...], kp: str) -> KindOptions:
        refuse_keys(ctx, entry, ("evp", "decrypt", "engine", "bytes", "multi", "protocols",
                                 "modes", "pinning"), kp,
                    "not used by a suite with kind: library")
        require_known(ctx, algorithms, [*OPERATIONS, "all"], kp,
                      "an operation of the library harness")
        value = entry.get("threads", [1, 2])
        if value == "all":
            return KindOptions(library=LibraryOptions(threads=None))
        if not isinstance(value, list) or not value:
            raise ctx.fail(f"{kp}.threads", f"expected a list of thread counts such as "
                           f"[1, 2] or 'all', got {clip(repr(value))}")
        counts = tuple(ctx.posint(t, f"{kp}.threads[{i}]", optional=False,
                                  maximum=MAX_THREADS) or 1 for i, t in enumerate(value))
        return KindOptions(library=LibraryOptions(threads=tuple(dict.fromkeys(counts))))

    def run_line(self, d: Mapping[str, Any]) -> tuple[str, int]:
        return (f"libbench {' '.join(d['algorithms'])} at "
                f"{', '.join(map(str, d['threads']))} thread(s)",
                len(d["algorithms"]) * len(d["threads"]))


KIND = LibraryKind("library", RUNNER_HARNESS, FIGURES_THREADS, "a library-harness figure",
                   exclusive_keys=("threads",), accounting_fields=("algorithm",),
                   run_noun="harness", profile_cell="OPERATION[:tTHREADS]")
