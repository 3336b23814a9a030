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

Pure functions over typed records (results/pairrecord.py): pairrun.py runs the pairs and
files the records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from openssl_matrix.results.pairrecord import PairRecord, PairRow, SetAside

#: A side's rate more than this share below its best in the session's pairs: low.
LOW = 0.10

SideKey = tuple[str, str, str, str]  #: variant id, mask, algorithm, direction


def _sides(rec: PairRecord, row: PairRow) -> list[tuple[SideKey, float]]:
    """The row's two sides with their rates (those it has)."""
    out: list[tuple[SideKey, float]] = []
    for side, rate in zip((rec.bottom, rec.top), row.rates, strict=True):
        if rate is None or rate <= 0:
            continue
        out.append(((side.variant, side.mask, row.algorithm, row.direction), float(rate)))
    return out


def best_rates(records: Iterable[PairRecord]) -> dict[SideKey, float]:
    """Each side's best rate over the records' rows."""
    best: dict[SideKey, float] = {}
    for rec in records:
        for row in rec.algorithms:
            for key, rate in _sides(rec, row):
                best[key] = max(best.get(key, 0.0), rate)
    return best


def share(rec: PairRecord, row: PairRow, best: Mapping[SideKey, float]) -> float | None:
    """The slower side's rate over its best (1.0: both at their best; None: no rates)."""
    shares = [rate / best[key] for key, rate in _sides(rec, row) if best.get(key)]
    return min(shares) if shares else None


def low_algorithms(rec: PairRecord, best: Mapping[SideKey, float]) -> list[str]:
    """The algorithms of ``rec`` with a row whose slower side sits low."""
    out: list[str] = []
    for row in rec.algorithms:
        s = share(rec, row, best)
        if s is not None and s < 1 - LOW and row.algorithm not in out:
            out.append(row.algorithm)
    return out


def _brief(row: PairRow, s: float | None) -> SetAside:
    e = row.estimate
    return SetAside(ratio=row.ratio, ci_low=row.ci_low, ci_high=row.ci_high,
                    blocks=None if e is None else e.blocks, rate_a=row.rates[0],
                    rate_b=row.rates[1], runs=row.runs,
                    rate_share=None if s is None else round(s, 4))


def merged(old: PairRecord, new: PairRecord, best: Mapping[SideKey, float]) -> PairRecord:
    """``old`` with each row ``new`` measured again replaced by whichever of the two has
    its slower side nearer its best, the other set aside in the row; ``new``'s errors and
    its time added."""
    again = {(r.algorithm, r.direction): r for r in new.algorithms}
    rows: list[PairRow] = []
    for row in old.algorithms:
        other = again.get((row.algorithm, row.direction))
        if other is None:
            rows.append(row)
            continue
        s_old, s_new = share(old, row, best), share(new, other, best)
        keep_new = s_new is not None and (s_old is None or s_new > s_old)
        kept, aside = (other, row) if keep_new else (row, other)
        s_aside = s_old if keep_new else s_new
        rows.append(replace(kept, set_aside=(*row.set_aside, _brief(aside, s_aside))))
    return replace(old, algorithms=tuple(rows), errors=(*old.errors, *new.errors),
                   seconds=round(float(old.seconds or 0) + float(new.seconds or 0), 3))


def annotate(records: Sequence[PairRecord]) -> list[PairRecord]:
    """Every record with every row marked with its slower side's share of its best
    (``rate_share``) and whether that sits low (``low``), against the best of all
    ``records``."""
    best = best_rates(records)
    out: list[PairRecord] = []
    for rec in records:
        rows = []
        for row in rec.algorithms:
            s = share(rec, row, best)
            rs = None if s is None else round(s, 4)
            rows.append(replace(row, rate_share=rs, low=rs is not None and rs < 1 - LOW))
        out.append(replace(rec, algorithms=tuple(rows)))
    return out
