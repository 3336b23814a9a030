"""Per-child accounting of ``openssl speed -multi N`` runs.

``-multi N`` forks N children that each run the whole test in ``-mr`` mode, timed by the
wall clock; the parent echoes every record a child writes (``Got: +F:22:aes-128-gcm:
v1:...:v6 from 1``) and prints the per-size sums as its table (aead.FACTS, "-multi
parent sums"). The sum hides a child that did not get its CPU: two children on a 2-CPU
host beside a busy loop can give one child a whole CPU and the other half of one, and the
sum still looks like 1.5 processes' worth, not like contention.

Two measurements catch it, both per child:

* the host accounting of the run (hostacct): the container's CPU time over elapsed x N —
  each child should have had a CPU all the time (``OWN_SHARE_MIN``) — and what everything
  else on the host used (foreign cores, steal);
* the children's own figures, read from the parent's ``Got:`` lines (:func:`children`):
  identical processes on equal CPUs give equal figures, so a child far below the fastest
  one (``CHILD_BALANCE_MIN``) did not get its CPU, whatever the totals say.

Either marks the run's figures ``contended``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from openssl_matrix.core.statuses import CONTENDED
from openssl_matrix.measure import hostacct
from openssl_matrix.measure.guards import Finding

#: The slowest child's figure over the fastest child's (same record, same size) below
#: which the run is contended. Measured here (1.1.1w, AES-256-GCM, 16384-byte records,
#: 2 children on 2 CPUs): 0.997 (tests/fixtures/speed/real-1.1.1w/aead-multi2-decrypt-gcm)
#: and 0.86 with the host saturated by other builds (tests/fixtures/hostacct/
#: multi2-aead-gcm256-busy-host); 0.62 with a busy loop at the same CPU weight pinned to
#: one of the two CPUs (multi2-aead-gcm256-busy-cpu1).
CHILD_BALANCE_MIN = 0.80
#: Sizes below this are left out of the balance: a 1-s run of 2-byte records is dominated
#: by set-up and timer granularity, and differs between children on a quiet host too.
BALANCE_MIN_BYTES = 1024

_GOT = re.compile(r"^Got: (\+[A-Z]\d*):(.*) from (\d+)\s*$")


@dataclass(frozen=True)
class ChildRecord:
    """One ``+F``-family record of one child, as the parent echoed it."""

    child: int
    kind: str
    """``+F`` (bytes/s per size), ``+F2`` (RSA sign/verify per second) ..."""
    key: str
    """The record's algorithm index and name (``22:aes-128-gcm``; ``4:4096`` for +F2)."""
    values: tuple[float, ...]
    sizes: tuple[int, ...] = ()
    """Block sizes of a ``+F`` record (from the child's ``+H``); empty for others."""


def children(stdout: str) -> list[ChildRecord]:
    """The children's ``+F`` records in a ``-multi`` parent's stdout (empty if none)."""
    out: list[ChildRecord] = []
    sizes: dict[int, tuple[int, ...]] = {}
    for line in stdout.splitlines():
        m = _GOT.match(line.strip())
        if m is None:
            continue
        kind, body, child = m.group(1), m.group(2), int(m.group(3))
        fields = body.split(":")
        if kind == "+H":
            try:
                sizes[child] = tuple(int(f) for f in fields)
            except ValueError:
                continue
            continue
        if not kind.startswith("+F") or len(fields) < 3:
            continue
        try:
            values = tuple(float(f) for f in fields[2:])
        except ValueError:
            continue
        own = sizes.get(child, ()) if kind == "+F" else ()
        out.append(ChildRecord(child, kind, f"{fields[0]}:{fields[1]}", values,
                               own if len(own) == len(values) else ()))
    return out


@dataclass(frozen=True)
class ChildBalance:
    """How evenly the children of one run measured."""

    processes: int
    children_seen: int
    balance: float | None
    """Slowest child over fastest, the worst over records and sizes (None: < 2 children)."""
    worst: str | None
    """Which record and size gave ``balance``."""
    per_child: tuple[tuple[int, float], ...] = ()
    """(child, its share of the sum) at the size of ``worst``."""

    def as_dict(self) -> dict[str, object]:
        return {"processes": self.processes, "children_seen": self.children_seen,
                "balance": None if self.balance is None else round(self.balance, 4),
                "worst": self.worst,
                "per_child_share": [[c, round(s, 4)] for c, s in self.per_child]}


def balance(records: list[ChildRecord], processes: int) -> ChildBalance:
    """The slowest child's figure over the fastest's, over every record and size."""
    seen = sorted({r.child for r in records})
    groups: dict[tuple[str, str, int], dict[int, float]] = {}
    for r in records:
        for i, value in enumerate(r.values):
            size = r.sizes[i] if r.sizes else None
            if size is not None and size < BALANCE_MIN_BYTES:
                continue
            groups.setdefault((r.kind, r.key, i), {})[r.child] = value
    worst: tuple[float, str, dict[int, float]] | None = None
    for (kind, key, i), by_child in groups.items():
        if len(by_child) < 2 or max(by_child.values()) <= 0:
            continue
        ratio = min(by_child.values()) / max(by_child.values())
        if worst is None or ratio < worst[0]:
            sizes = next((r.sizes for r in records if r.kind == kind and r.key == key
                          and r.sizes), ())
            where = f"{key.split(':', 1)[-1]} " + (f"at {sizes[i]} bytes" if sizes
                                                   else f"value {i + 1}")
            worst = (ratio, where, by_child)
    if worst is None:
        return ChildBalance(processes, len(seen), None, None)
    total = sum(worst[2].values()) or 1.0
    return ChildBalance(processes, len(seen), worst[0], worst[1],
                        tuple((c, v / total) for c, v in sorted(worst[2].items())))


def multi_findings(invocation: str, processes: int, stdout: str,
                   acct: hostacct.HostAccounting | None) -> tuple[list[Finding], ChildBalance]:
    """``contended`` when a child of a ``-multi`` run measured far below its siblings or
    a child is missing; the host accounting's own verdict (``hostacct``, with
    ``processes`` = N) is taken by the caller as for any run."""
    recs = children(stdout)
    bal = balance(recs, processes)
    found: list[Finding] = []
    if bal.children_seen and bal.children_seen < processes:
        found.append(Finding(CONTENDED, f"only {bal.children_seen} of {processes} -multi "
                             "children reported figures; kept, out of medians, measured "
                             "again", invocation))
    elif bal.balance is not None and bal.balance < CHILD_BALANCE_MIN:
        shares = ", ".join(f"child {c} {s:.0%}" for c, s in bal.per_child)
        own = "" if acct is None or acct.own_share is None else \
            f"; the container had {acct.own_share:.0%} of {processes} CPU(s)"
        found.append(Finding(CONTENDED, f"a -multi child did not get its CPU: the slowest "
                             f"child measured {bal.balance:.0%} of the fastest ({bal.worst}: "
                             f"{shares}{own}), below {CHILD_BALANCE_MIN:.0%}; kept, out of "
                             "medians, measured again", invocation))
    return found, bal
