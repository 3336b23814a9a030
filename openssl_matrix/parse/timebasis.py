"""The time-basis check of one run: a measurement whose reported seconds fall short of
the requested ones (user CPU time while the work ran elsewhere: /dev/crypto, AF_ALG) marks
its figures ``suspect-time-basis``. Called by the line reader when a run is finished.
"""

from __future__ import annotations

from dataclasses import replace

from openssl_matrix.parse.figures import (
    STATUS_IMPRECISE,
    STATUS_OK,
    STATUS_SUSPECT_TIME_BASIS,
    SUSPECT_TIME_RATIO,
    Figure,
    Progress,
)
from openssl_matrix.parse.grammar import matching_sym_progress


def check_time_basis(figures: list[Figure], progress: list[Progress],
                     pk_keys: list[tuple[str, int | None, str] | None]) -> str | None:
    """Mark, in ``figures``, those measured by a suspect progress line; the warning that
    says so (None: every measurement took the time it was asked for)."""
    suspects = [
        p
        for p in progress
        if p.time_ratio is not None and p.time_ratio < SUSPECT_TIME_RATIO
    ]
    if not suspects:
        return None
    pk_queues: dict[tuple[str, int | None, str], list[Progress]] = {}
    for p in progress:
        if p.family is not None and p.operation is not None:
            pk_queues.setdefault((p.family, p.bits, p.operation), []).append(p)
    pk_seen: dict[tuple[str, int | None, str], int] = {}
    marked = 0
    for i, fig in enumerate(figures):
        culprit: Progress | None = None
        if fig.block_size is not None:
            culprit = matching_sym_progress(fig, suspects)
        else:
            key = pk_keys[i]
            if key is not None:
                family, bits, operation = key
                lookup = (family, None if family in ("kem", "sig") else bits, operation)
                position = pk_seen.get(lookup, 0)
                pk_seen[lookup] = position + 1
                queue = pk_queues.get(lookup, [])
                if position < len(queue) and queue[position] in suspects:
                    culprit = queue[position]
        if culprit is None or fig.status not in (STATUS_OK, STATUS_IMPRECISE):
            continue
        marked += 1
        figures[i] = replace(
            fig,
            status=STATUS_SUSPECT_TIME_BASIS,
            detail=(
                f"measured {culprit.seconds_reported:g}s for a {culprit.seconds_requested:g}s "
                "run: user CPU time while the work ran outside the process?"
            ),
        )
    labels = sorted({p.label for p in suspects})
    worst = min(p.time_ratio or 0.0 for p in suspects)
    return (
        f"time basis: {len(suspects)} measurement(s) of {', '.join(labels)} report as "
        f"little as {worst:.0%} of the requested time (user CPU time while the work ran "
        f"elsewhere, e.g. /dev/crypto or AF_ALG); {marked} figure(s) marked "
        f"{STATUS_SUSPECT_TIME_BASIS}. Re-run with -elapsed."
    )
