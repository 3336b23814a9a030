"""``multi`` process counts of a suite in matrix.yaml, checked with their key paths; what
each suite kind takes is checked by its module in :mod:`openssl_matrix.matrix.kinds`, the
rest of a suite by :mod:`openssl_matrix.matrix.load`."""

from __future__ import annotations

from typing import Any

from openssl_matrix.core.names import clip
from openssl_matrix.matrix.check import CheckContext
from openssl_matrix.matrix.model import MAX_MULTI


def multi_counts(ctx: CheckContext, value: Any, keypath: str) -> tuple[int, ...]:
    """``multi: 2``, ``multi: [1, 2]`` or ``multi: all`` (0 stands for all, resolved per
    engine when the bench plans its commands)."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ctx.fail(keypath, "list at least one process count (or leave the key out)")
    out: list[int] = []
    for i, item in enumerate(items):
        kpi = keypath if not isinstance(value, list) else f"{keypath}[{i}]"
        if item == "all":
            n = 0
        elif isinstance(item, str):
            raise ctx.fail(kpi, f"expected a process count or 'all', got {clip(item, 40)}")
        else:
            n = ctx.posint(item, kpi, maximum=MAX_MULTI) or 0
        if n in out:
            raise ctx.fail(kpi, f"{'all' if n == 0 else n} is listed twice")
        out.append(n)
    return tuple(out)
