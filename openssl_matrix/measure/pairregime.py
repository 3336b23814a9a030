"""Interleaved pairs that ran while a side was slower than itself in the session's others.

Interleaving makes both sides of a pair see the same neighbour, so the ratio holds while
that neighbour stays. It cannot undo a neighbour that stays for the whole run and slows one
code path more than the other (a core's other thread takes the execution ports the
throughput-bound side needs): measured on this project's Intel Xeon VM, 1.1.1w's
asm/no-asm AES ratio came out 6.7 in one bench session and 5.1 in the next, each with an
interval of ±2 % or less. Each side of a session's pairs (a variant with a mask, an
algorithm, a direction) is a side of several pairs (a mask against native, asm against
no-asm, a release against another), so its rate in one pair can be set against its best
rate in the others. A row in which a side ran more than ``LOW`` below its best is *low*:
its pair is measured again at the end of the session, and for each such row the run whose
slower side is nearer its best is kept; the other is kept beside it (``set_aside``). A row
still low after that says so.

Pure functions: pairrun.py runs the pairs and files the records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: A side's rate more than this share below its best in the session's pairs: low.
LOW = 0.10

SideKey = tuple[str, str, str, str]  #: variant id, mask, algorithm, direction


def _sides(rec: Mapping[str, Any], row: Mapping[str, Any]) -> list[tuple[SideKey, float]]:
    """The row's two sides with their rates (those it has)."""
    out: list[tuple[SideKey, float]] = []
    for which, rate in (("bottom", row.get("rate_a")), ("top", row.get("rate_b"))):
        side = rec.get(which)
        if not isinstance(side, Mapping) or not isinstance(rate, (int, float)) or rate <= 0:
            continue
        key = (str(side.get("variant")), str(side.get("mask")), str(row.get("algorithm")),
               str(row.get("direction")))
        out.append((key, float(rate)))
    return out


def best_rates(records: Iterable[Mapping[str, Any]]) -> dict[SideKey, float]:
    """Each side's best rate over the records' rows."""
    best: dict[SideKey, float] = {}
    for rec in records:
        for row in rec.get("algorithms", []):
            for key, rate in _sides(rec, row):
                best[key] = max(best.get(key, 0.0), rate)
    return best


def share(rec: Mapping[str, Any], row: Mapping[str, Any],
          best: Mapping[SideKey, float]) -> float | None:
    """The slower side's rate over its best (1.0: both at their best; None: no rates)."""
    shares = [rate / best[key] for key, rate in _sides(rec, row) if best.get(key)]
    return min(shares) if shares else None


def low_algorithms(rec: Mapping[str, Any], best: Mapping[SideKey, float]) -> list[str]:
    """The algorithms of ``rec`` with a row whose slower side sits low."""
    out: list[str] = []
    for row in rec.get("algorithms", []):
        s = share(rec, row, best)
        if s is not None and s < 1 - LOW and row["algorithm"] not in out:
            out.append(str(row["algorithm"]))
    return out


def _brief(row: Mapping[str, Any], s: float | None) -> dict[str, Any]:
    keep = ("ratio", "ci_low", "ci_high", "blocks", "rate_a", "rate_b", "runs")
    return {**{k: row.get(k) for k in keep}, "rate_share": None if s is None else round(s, 4)}


def merged(old: Mapping[str, Any], new: Mapping[str, Any],
           best: Mapping[SideKey, float]) -> dict[str, Any]:
    """``old`` with each row ``new`` measured again replaced by whichever of the two has
    its slower side nearer its best, the other set aside in the row; ``new``'s errors and
    its time added."""
    again = {(r["algorithm"], r["direction"]): r for r in new.get("algorithms", [])}
    rows: list[dict[str, Any]] = []
    for row in old.get("algorithms", []):
        other = again.get((row["algorithm"], row["direction"]))
        if other is None:
            rows.append(dict(row))
            continue
        s_old, s_new = share(old, row, best), share(new, other, best)
        keep_new = s_new is not None and (s_old is None or s_new > s_old)
        kept, aside = (other, row) if keep_new else (row, other)
        s_aside = s_old if keep_new else s_new
        rows.append({**kept, "set_aside": [*row.get("set_aside", []), _brief(aside, s_aside)]})
    return {**old, "algorithms": rows, "errors": [*old.get("errors", []),
                                                  *new.get("errors", [])],
            "seconds": round(float(old.get("seconds") or 0) + float(new.get("seconds") or 0),
                             3)}


def annotate(records: Sequence[dict[str, Any]]) -> None:
    """Mark every row with its slower side's share of its best (``rate_share``) and
    whether that sits low (``low``), against the best of all ``records``."""
    best = best_rates(records)
    for rec in records:
        for row in rec.get("algorithms", []):
            s = share(rec, row, best)
            row["rate_share"] = None if s is None else round(s, 4)
            row["low"] = row["rate_share"] is not None and row["rate_share"] < 1 - LOW
