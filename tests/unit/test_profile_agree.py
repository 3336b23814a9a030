"""Two profiles of one cell taken apart: the agreement check (measure/profileagree.py).

The sample counts below are SYNTHETIC: made up to look like a 3-s, 999 Hz profile of a
library cell (perf's cpu-clock period at -F 999 is 1,001,001 ns, as in the captures of
tests/fixtures/perf; about 3,000 samples spread over a dozen functions, a few thousand
operations). They are no measurement; they test the arithmetic and the verdict.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from openssl_matrix.engine.backend import RunResult
from openssl_matrix.matrix.libvocab import LibraryOptions
from openssl_matrix.matrix.model import Suite
from openssl_matrix.measure.perfrun import ProfileRun
from openssl_matrix.measure.profile import Sample
from openssl_matrix.measure.profileagree import (
    AGREE,
    DISAGREE,
    MARGINAL,
    Agreement,
    agreement,
    agreement_of,
    file_agreement,
    table,
)
from openssl_matrix.measure.profilecell import resolve
from openssl_matrix.results.tree import ResultsTree

PERIOD = 1_001_001  # ns: perf's cpu-clock period at -F 999
#: synthetic sample counts per leaf function of a first profile (3,000 operations)
FIRST = {"pthread_rwlock_unlock (libc)": 560, "pthread_rwlock_rdlock (libc)": 470,
         "[libc] (libc)": 230, "OPENSSL_LH_retrieve (libcrypto)": 200,
         "ossl_lh_strcasehash (libcrypto)": 146, "OPENSSL_strcasecmp (libcrypto)": 121,
         "malloc (libc)": 115, "ossl_tolower (libcrypto)": 101, "[kernel] (kernel)": 13,
         "bn_mul_mont (libcrypto)": 60, "ossl_decoder_fetch (libcrypto)": 40,
         "free (libc)": 38}
OPS = 3000


def _per_op(counts: dict[str, int], ops: int) -> tuple[dict[str, float], dict[str, float]]:
    """ns per operation and its Poisson 1σ from sample counts (each sample one period)."""
    return ({k: n * PERIOD / ops for k, n in counts.items()},
            {k: math.sqrt(n) * PERIOD / ops for k, n in counts.items()})


def _check(second: dict[str, int], ops2: int = OPS) -> Agreement:
    a, sa = _per_op(FIRST, OPS)
    b, sb = _per_op(second, ops2)
    return agreement(a, sa, b, sb)


def test_the_same_counts_agree_and_rank_by_the_mean() -> None:
    ag = agreement(*_per_op(FIRST, OPS), *_per_op(FIRST, OPS))
    assert ag.verdict == AGREE and ag.beyond == 0
    assert len(ag.rows) == 10  # the top 10 of 12
    assert [r.name for r in ag.rows][:2] == ["pthread_rwlock_unlock (libc)",
                                             "pthread_rwlock_rdlock (libc)"]
    assert "free (libc)" not in {r.name for r in ag.rows}  # the two smallest are left out
    assert "[kernel] (kernel)" not in {r.name for r in ag.rows}
    assert all(r.diff_ns == 0 and r.sigmas == 0 for r in ag.rows)


def test_the_combined_uncertainty_is_the_root_sum_of_squares() -> None:
    second = dict(FIRST, **{"pthread_rwlock_unlock (libc)": 600})
    ag = agreement(*_per_op(FIRST, OPS), *_per_op(second, OPS))
    row = ag.rows[0]
    assert row.first_ns == pytest.approx(560 * PERIOD / OPS)
    assert row.second_ns == pytest.approx(600 * PERIOD / OPS)
    assert row.diff_ns == pytest.approx(40 * PERIOD / OPS)
    assert row.sd_ns == pytest.approx(math.sqrt(560 + 600) * PERIOD / OPS)
    assert row.sigmas == pytest.approx(40 / math.sqrt(1160))  # 1.17σ
    assert row.within() and ag.verdict == AGREE


def test_per_operation_normalises_away_a_different_run_length() -> None:
    # the second run did 10 % more work and drew 10 % more samples of each function
    second = {k: round(n * 1.1) for k, n in FIRST.items()}
    ag = _check(second, ops2=3300)
    assert ag.verdict == AGREE


def test_beyond_two_sigma_is_marginal_and_beyond_three_disagrees() -> None:
    # rdlock 470 → 540: 70 / sqrt(1010) = 2.20σ
    marginal = _check(dict(FIRST, **{"pthread_rwlock_rdlock (libc)": 540}))
    assert marginal.verdict == MARGINAL and marginal.beyond == 1
    # rdlock 470 → 600: 130 / sqrt(1070) = 3.97σ
    far = _check(dict(FIRST, **{"pthread_rwlock_rdlock (libc)": 600}))
    assert far.verdict == DISAGREE
    (bad,) = [r for r in far.rows if not r.within()]
    assert bad.name == "pthread_rwlock_rdlock (libc)"
    assert bad.sigmas == pytest.approx(130 / math.sqrt(1070))


def test_a_function_only_one_profile_has_takes_that_side_s_uncertainty() -> None:
    second = {k: n for k, n in FIRST.items() if k != "ossl_tolower (libcrypto)"}
    ag = _check(second)
    (row,) = [r for r in ag.rows if r.name == "ossl_tolower (libcrypto)"]
    assert row.second_ns == 0 and row.second_sd == 0
    assert row.sd_ns == pytest.approx(math.sqrt(101) * PERIOD / OPS)
    assert row.sigmas == pytest.approx(math.sqrt(101))  # 101 samples against none: ~10σ
    assert ag.verdict == DISAGREE


def test_nothing_to_compare_is_no_agreement() -> None:
    assert agreement({}, {}, {}, {}).verdict == DISAGREE


def _run(counts: dict[str, int], ops: int) -> ProfileRun:
    samples = [Sample(((name.split(" (")[0], name.split(" (")[1].rstrip(")")),), PERIOD,
                      float(i)) for name, n in counts.items() for i in range(n)]
    res = RunResult(command=(), env={}, stdout="", stderr="", exit_code=0, started="",
                    ended="", seconds=3.0)
    return ProfileRun(command=("x",), samples=samples, script="", operations=ops,
                      seconds=3.0, accounting=None, findings=[], result=res)


def test_profiled_runs_give_the_same_rows_and_are_filed_beside_the_profiles(
        tmp_path: Path) -> None:
    second = dict(FIRST, **{"pthread_rwlock_rdlock (libc)": 540})
    first_run, second_run = _run(FIRST, OPS), _run(second, OPS)
    ag = agreement_of(first_run, second_run)
    expected = _check(second)
    assert [r.name for r in ag.rows] == [r.name for r in expected.rows]
    assert [x for r in ag.rows for x in (r.diff_ns, r.sd_ns)] == pytest.approx(
        [x for r in expected.rows for x in (r.diff_ns, r.sd_ns)])
    assert ag.verdict == MARGINAL
    text = table(ag, "v", "c", first_run, second_run)
    assert "verdict: marginal (9 of 10 within 2σ" in text
    suite = Suite(name="lib", description="", algorithms=("fetch-digest",), evp=True,
                  seconds=1, bytes=None, masks=(), kind="library",
                  library=LibraryOptions(threads=(1,)))
    cell = resolve(suite, "fetch-digest:t1", "3.0.19", (), None)
    folder, _ = file_agreement(ResultsTree(tmp_path), "3.0.20-asm-x86_64", cell, ag,
                               first_run, second_run, (tmp_path / "a", tmp_path / "b"))
    assert folder == tmp_path / "_profiles" / "3.0.20-asm-x86_64" / cell.name / "agree" / "0001"
    data = json.loads((folder / "agree.json").read_text())
    assert data["verdict"] == MARGINAL and data["beyond"] == 1 and len(data["functions"]) == 10
    row = next(r for r in data["functions"] if r["name"] == "pthread_rwlock_rdlock (libc)")
    assert row["within"] is False and row["sigmas"] == pytest.approx(70 / math.sqrt(1010),
                                                                      abs=1e-3)
    assert (folder / "agree.txt").read_text() == table(ag, "3.0.20-asm-x86_64", cell.name,
                                                      first_run, second_run)
