"""A session's interleaved pairs set against each other (measure/pairregime.py): a side
that ran slower in one pair than in the others sits low, is measured again, and the run
nearer its best is kept. Records are synthetic (rates in bytes per second)."""

from __future__ import annotations

import pytest

from openssl_matrix.cli.summary import interleaved_text
from openssl_matrix.measure.pairregime import (
    annotate,
    best_rates,
    low_algorithms,
    merged,
    share,
)
from openssl_matrix.results.pairrecord import PairEstimate, PairRecord, PairRow, PairSide


def _row(alg: str, a: float | None, b: float | None, direction: str = "encrypt") -> PairRow:
    est = None if a is None or b is None else PairEstimate(
        blocks=40, preempted=0, ratio=b / a, ci_low=b / a * 0.99, ci_high=b / a * 1.01,
        geometric_mean=b / a, rate_a=a, rate_b=b)
    return PairRow(algorithm=alg, block_size=8192, direction=direction, window_ms=5.0,
                   seconds=3.0, runs=1, windows=160, estimate=est)


def _rec(bottom: str, top: str, rows: list[tuple[str, float, float]]) -> PairRecord:
    return PairRecord(kind="release", numerator=top, denominator=bottom,
                      top=PairSide(top, "native"), bottom=PairSide(bottom, "native"),
                      command=(), exit_code=0, started="now", seconds=10.0, errors=(),
                      algorithms=tuple(_row(alg, a, b) for alg, a, b in rows), method="")


def _session() -> list[PairRecord]:
    # 1.1.1w asm AES runs at 6e9 in its release pair, 4.5e9 (0.75) in its asm/no-asm pair
    asm_noasm = _rec("111-no-asm", "111-asm", [("aes", 1.0e9, 4.5e9), ("md5", 7e8, 7e8)])
    release = _rec("111-asm", "30-asm", [("aes", 6.0e9, 6.0e9), ("md5", 7e8, 6.9e8)])
    return [asm_noasm, release]


def test_a_side_slower_than_in_the_other_pairs_sits_low() -> None:
    asm_noasm, release = _session()
    best = best_rates([asm_noasm, release])
    assert best[("111-asm", "native", "aes", "encrypt")] == 6.0e9
    assert share(asm_noasm, asm_noasm.algorithms[0], best) == pytest.approx(0.75)
    assert low_algorithms(asm_noasm, best) == ["aes"]
    assert low_algorithms(release, best) == []


def test_the_run_nearer_its_best_is_kept_and_the_other_set_aside() -> None:
    asm_noasm, release = _session()
    again = _rec("111-no-asm", "111-asm", [("aes", 1.0e9, 5.9e9)])
    best = best_rates([asm_noasm, release, again])
    rec = merged(asm_noasm, again, best)
    aes, md5 = rec.algorithms
    assert aes.rates[1] == 5.9e9 and aes.ratio == pytest.approx(5.9)
    [aside] = aes.set_aside
    assert aside.rate_b == 4.5e9 and aside.rate_share == pytest.approx(0.75)
    assert aside.to_json()["blocks"] == 40 and "set_aside" in aes.to_json()
    assert md5 == asm_noasm.algorithms[1]  # not measured again: as it was
    assert rec.seconds == 20.0
    # a run again that is no nearer its best leaves the first in place
    worse = _rec("111-no-asm", "111-asm", [("aes", 1.0e9, 4.0e9)])
    kept = merged(asm_noasm, worse, best_rates([asm_noasm, release, worse]))
    assert kept.algorithms[0].rates[1] == 4.5e9
    assert kept.algorithms[0].set_aside[0].rate_b == 4.0e9


def test_rows_are_annotated_and_the_summary_says_a_row_sits_low() -> None:
    records = annotate(_session())
    aes = records[0].algorithms[0]
    assert aes.low is True and aes.rate_share == pytest.approx(0.75)
    assert records[1].algorithms[0].low is False
    assert "sits low: a side at 75 %" in interleaved_text(aes).replace("75%", "75 %")
    assert "sits low" not in interleaved_text(records[1].algorithms[0])
    # before annotation a row has no such keys; after it both, the share possibly null
    assert "low" not in _session()[0].algorithms[0].to_json()
    assert {"low", "rate_share"} <= set(aes.to_json())


def test_rows_without_rates_are_neither_low_nor_an_error() -> None:
    rec = _rec("a", "b", [])
    rec = PairRecord.from_json({**rec.to_json(), "algorithms": [_row("md5", None, None,
                                                                     "digest").to_json()]})
    [annotated] = annotate([rec])
    row = annotated.algorithms[0]
    assert row.low is False and row.rate_share is None
    assert row.to_json()["rate_share"] is None
