"""A session's interleaved pairs set against each other (measure/pairregime.py): a side
that ran slower in one pair than in the others sits low, is measured again, and the run
nearer its best is kept. Records are synthetic (rates in bytes per second)."""

from __future__ import annotations

from typing import Any

import pytest

from openssl_matrix.cli.summary import interleaved_text
from openssl_matrix.measure.pairregime import (
    annotate,
    best_rates,
    low_algorithms,
    merged,
    share,
)


def _rec(bottom: str, top: str, rows: list[tuple[str, float, float]]) -> dict[str, Any]:
    return {"bottom": {"variant": bottom, "mask": "native"},
            "top": {"variant": top, "mask": "native"}, "errors": [], "seconds": 10.0,
            "algorithms": [{"algorithm": alg, "direction": "encrypt", "rate_a": a,
                            "rate_b": b, "ratio": b / a, "ci_low": b / a * 0.99,
                            "ci_high": b / a * 1.01, "blocks": 40}
                           for alg, a, b in rows]}


def _session() -> list[dict[str, Any]]:
    # 1.1.1w asm AES runs at 6e9 in its release pair, 4.5e9 (0.75) in its asm/no-asm pair
    asm_noasm = _rec("111-no-asm", "111-asm", [("aes", 1.0e9, 4.5e9), ("md5", 7e8, 7e8)])
    release = _rec("111-asm", "30-asm", [("aes", 6.0e9, 6.0e9), ("md5", 7e8, 6.9e8)])
    return [asm_noasm, release]


def test_a_side_slower_than_in_the_other_pairs_sits_low() -> None:
    asm_noasm, release = _session()
    best = best_rates([asm_noasm, release])
    assert best[("111-asm", "native", "aes", "encrypt")] == 6.0e9
    assert share(asm_noasm, asm_noasm["algorithms"][0], best) == pytest.approx(0.75)
    assert low_algorithms(asm_noasm, best) == ["aes"]
    assert low_algorithms(release, best) == []


def test_the_run_nearer_its_best_is_kept_and_the_other_set_aside() -> None:
    asm_noasm, release = _session()
    again = _rec("111-no-asm", "111-asm", [("aes", 1.0e9, 5.9e9)])
    best = best_rates([asm_noasm, release, again])
    rec = merged(asm_noasm, again, best)
    aes, md5 = rec["algorithms"]
    assert aes["rate_b"] == 5.9e9 and aes["ratio"] == pytest.approx(5.9)
    [aside] = aes["set_aside"]
    assert aside["rate_b"] == 4.5e9 and aside["rate_share"] == pytest.approx(0.75)
    assert md5 == asm_noasm["algorithms"][1]  # not measured again: as it was
    assert rec["seconds"] == 20.0
    # a run again that is no nearer its best leaves the first in place
    worse = _rec("111-no-asm", "111-asm", [("aes", 1.0e9, 4.0e9)])
    kept = merged(asm_noasm, worse, best_rates([asm_noasm, release, worse]))
    assert kept["algorithms"][0]["rate_b"] == 4.5e9
    assert kept["algorithms"][0]["set_aside"][0]["rate_b"] == 4.0e9


def test_rows_are_annotated_and_the_summary_says_a_row_sits_low() -> None:
    records = _session()
    annotate(records)
    aes = records[0]["algorithms"][0]
    assert aes["low"] is True and aes["rate_share"] == pytest.approx(0.75)
    assert not records[1]["algorithms"][0]["low"]
    assert "sits low: a side at 75 %" in interleaved_text(aes).replace("75%", "75 %")
    assert "sits low" not in interleaved_text(records[1]["algorithms"][0])


def test_rows_without_rates_are_neither_low_nor_an_error() -> None:
    rec: dict[str, Any] = {"bottom": {"variant": "a", "mask": "native"},
                           "top": {"variant": "b", "mask": "x"},
                           "algorithms": [{"algorithm": "md5", "direction": "digest"}]}
    annotate([rec])
    assert rec["algorithms"][0]["low"] is False and rec["algorithms"][0]["rate_share"] is None
