"""Several runs of one interleaved pair as units (measure/runsmeta.py, issue 31): their
random-effects mean, an interval that widens when the runs disagree, the bench's
``again`` projecting it, a reproduction's verdict reading it, and a trend claim judged
from two sizes' interleaved ratios.

Every window below is synthetic (made up here, in the harness's output format). The
runs' centres 1.195, 1.078 and 1.035 are the figures a bisection step gave on this
project's EPYC host (docs/bisect.md, step 2: its first run, then pooled with a second and
a third), taken here as three runs' own ratios, each with an interval of about ±0.5 %."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.model import Suite
from openssl_matrix.measure.interleave import estimate, parse_output
from openssl_matrix.measure.pairrun import (
    MAX_RUNS,
    PairPlan,
    again,
    command,
    plan_pairs,
    record_of,
)
from openssl_matrix.measure.runsmeta import CI_METHOD, Unit, chi2_95, combine
from openssl_matrix.measure.runsmeta import row_of as _row_of
from openssl_matrix.results.pairrecord import PairEstimate, PairRow
from openssl_matrix.results.tree import ResultsTree

ROOT = Path(__file__).resolve().parents[2]
MS = 5_000_000


def _text(centre: float, *, blocks: int = 60, sd: float = 0.015, seed: int = 0,
          alg: str = "sha256", size: int = 8192) -> str:
    """One synthetic harness run: ``blocks`` A B B A blocks, A 100,000 operations a
    window, B ``centre`` times that with a log-normal spread ``sd`` per block."""
    rng = random.Random(seed)
    lines = ["+PAIR:side:0:version=OpenSSL 1.1.1w  11 Sep 2023:ia32cap=",
             "+PAIR:side:1:version=OpenSSL 3.0.20 7 Apr 2026:ia32cap=",
             f"+PAIR:begin:alg={alg}:bytes={size}:window_ms=5:seconds=2:direction=digest"]
    w = 0
    for _ in range(blocks):
        b = round(100_000 * centre * math.exp(rng.gauss(0, sd)))
        for side in (0, 1, 1, 0):
            lines.append(f"+PAIR:w:{w}:{side}:{100_000 if side == 0 else b}:{MS}:{MS}")
            w += 1
    return "\n".join([*lines, f"+PAIR:end:alg={alg}:windows={w}"]) + "\n"


def _runs(*centres: float, seed: int = 1) -> list:  # type: ignore[type-arg]
    return [parse_output(_text(c, seed=seed + i)).runs[0] for i, c in enumerate(centres)]


def row_of(runs: list) -> PairEstimate:  # type: ignore[type-arg]
    """The runs' estimate (every run here has blocks with CPU time)."""
    got = _row_of(runs)
    assert got is not None
    return got


def _as_row(est: PairEstimate, runs: int = 3) -> PairRow:
    """``est`` as a record's row of ``runs`` runs of sha256."""
    return PairRow(algorithm="sha256", block_size=8192, direction="digest", window_ms=5.0,
                   seconds=2.0, runs=runs, windows=240 * runs, estimate=est)


def _half(lo: float, hi: float, ratio: float) -> float:
    return (hi - lo) / 2 / ratio


def test_disagreeing_runs_widen_the_interval_over_all_of_them_and_say_so() -> None:
    runs = _runs(1.195, 1.078, 1.035)
    # each run alone: about ±0.5 %, narrow
    for r, c in zip(runs, (1.195, 1.078, 1.035), strict=True):
        own = estimate(r)
        assert own is not None and own.relative_half_width is not None
        assert own.relative_half_width < 0.008 and own.ratio == pytest.approx(c, rel=0.01)
    row = row_of(runs)
    assert row["runs_disagree"] is True and row["ci_method"] == CI_METHOD
    assert row["runs_q"] > chi2_95(2) and row["runs_tau"] > 0.03
    # the interval holds every run's centre and its own interval, and is wide
    assert row["ci_low"] < 1.035 * 0.995 and row["ci_high"] > 1.195 * 1.005
    assert 1.035 < row["ratio"] < 1.195
    assert _half(row["ci_low"], row["ci_high"], row["ratio"]) > 0.05
    # each run's own ratio and interval stay in the row
    detail = row["runs_detail"]
    assert [d["run"] for d in detail] == [1, 2, 3]
    assert [d["ratio"] for d in detail] == pytest.approx([1.195, 1.078, 1.035], rel=0.01)
    assert all(d["ci_low"] < d["ratio"] < d["ci_high"] for d in detail)
    # the pooled blocks' interval (the rule until now), kept beside it, missed two runs
    pooled = row["pooled"]
    assert _half(pooled["ci_low"], pooled["ci_high"], pooled["ratio"]) < 0.05
    assert sum(not pooled["ci_low"] <= d["ratio"] <= pooled["ci_high"] for d in detail) >= 2


def test_agreeing_runs_give_about_the_pooled_interval() -> None:
    runs = _runs(1.5, 1.5, 1.5, seed=11)
    row = row_of(runs)
    pooled = estimate(runs[0], runs[1:])
    assert pooled is not None and pooled.ci_low is not None and pooled.ci_high is not None
    assert row["runs_q"] <= 2 and row["runs_tau"] == 0.0 and row["runs_disagree"] is False
    assert row["ratio"] == pytest.approx(pooled.ratio, rel=1e-3)
    ours = _half(row["ci_low"], row["ci_high"], row["ratio"])
    theirs = _half(pooled.ci_low, pooled.ci_high, pooled.ratio)
    assert ours == pytest.approx(theirs, rel=0.15)
    assert row["pooled"] == {"ratio": pooled.ratio, "ci_low": pooled.ci_low,
                             "ci_high": pooled.ci_high}


def test_one_run_is_its_batch_means_estimate_as_before() -> None:
    [run] = _runs(1.2)
    est = estimate(run)
    assert est is not None
    row = row_of([run])
    assert row == est.record() and row["ci_method"] == "t95-batches"
    assert "runs_detail" not in row and "runs_disagree" not in row


def test_runs_without_an_interval_are_listed_and_the_pooled_estimate_stands() -> None:
    # 20 blocks a run: 2 batches, no interval of its own; pooled, 60 blocks give one
    runs = [parse_output(_text(1.3, blocks=20, seed=s)).runs[0] for s in (1, 2, 3)]
    row = row_of(runs)
    pooled = estimate(runs[0], runs[1:])
    assert pooled is not None
    assert row["ci_method"] == "t95-batches" and row["ratio"] == pooled.ratio
    assert [d["ci_low"] for d in row["runs_detail"]] == [None, None, None]
    assert "runs_disagree" not in row


def test_dersimonian_laird_by_hand() -> None:
    # two runs 10 % apart in logs, each ±1 % standard error: Q = 50, tau² = 0.0049
    got = combine([Unit(0.0, 0.01, 9), Unit(0.1, 0.01, 9)])
    assert got is not None and got.k == 2
    assert got.q == pytest.approx(50.0) and got.tau2 == pytest.approx(0.0049)
    assert got.log_ratio == pytest.approx(0.05) and got.se == pytest.approx(0.05)
    assert got.disagree and 1 <= got.df < 1.1  # between-run variance: k - 1 = 1
    # agreeing: tau² 0, the inverse-variance mean, the within-run degrees of freedom
    same = combine([Unit(0.1, 0.01, 9), Unit(0.1, 0.02, 9)])
    assert same is not None and same.tau2 == 0 and not same.disagree
    assert same.se == pytest.approx(1 / math.sqrt(1 / 0.01 ** 2 + 1 / 0.02 ** 2))
    assert 9 < same.df <= 18
    assert chi2_95(2) == pytest.approx(5.991) and chi2_95(11) == pytest.approx(19.675, rel=0.01)


def _pair() -> tuple[PairPlan, Suite]:
    m = load_matrix(ROOT / "matrix.yaml")
    suite = replace(m.suite("blog-8k"), algorithms=("sha256",))
    variants = m.select("1.1.1w-asm-x86_64") + m.select("3.0.20-asm-x86_64")
    pair = next(p for p in plan_pairs(variants, suite)[0] if p.kind == "release")
    return pair, suite


def test_the_filed_record_carries_the_runs_and_the_flag() -> None:
    pair, suite = _pair()
    text = "".join(_text(c, seed=i) for i, c in enumerate((1.195, 1.078, 1.035)))
    rec = record_of(pair, command(pair, suite, suite.algorithms), text, 0, "now", 6.0)
    [row] = rec["algorithms"]
    assert row["runs"] == 3 and row["runs_disagree"] is True and len(row["runs_detail"]) == 3
    assert "random-effects" in rec["method"]


def test_again_follows_the_widened_interval() -> None:
    # three runs 1-2.5 % apart, each ±0.5 %: the pooled interval is within ±2 % and
    # would stop; as units the interval is wider, and more runs should bring it in
    runs = _runs(1.00, 1.025, 1.012, seed=21)
    pooled = estimate(runs[0], runs[1:])
    assert pooled is not None and pooled.relative_half_width is not None
    assert pooled.relative_half_width < 0.02
    row = row_of(runs)
    assert _half(row["ci_low"], row["ci_high"], row["ratio"]) > 0.02
    assert again(_as_row(row), 3) and not again(_as_row(row), MAX_RUNS)
    # runs far apart (the EPYC host's three): even eight runs would not reach ±2 %
    far = row_of(_runs(1.195, 1.078, 1.035))
    assert not again(_as_row(far), 3)


# ---------------------------------------------------------------------------------
# a reproduction: the verdict reads the widened interval; a trend from two sizes' runs

TREND_SPEC = """
schema: 1
title: the gap closes as blocks grow (this test's own claim, no report's figures)
source: {kind: site, where: a test}
machines:
  box: {cpu: not named in the report}
versions:
  1.1.1w: {}
  3.0.20: {}
builds:
  old: {version: 1.1.1w}
  new: {version: 3.0.20}
measurements:
  old: {build: old, algorithm: sha256, evp: true}
  new: {build: new, algorithm: sha256, evp: true}
claims:
  - {id: gap-closes, says: the gap closes as blocks grow, compare: [new, old],
     expect: ratio, ratio: 2.0, trend: [16, 16384]}
  - {id: same-big, says: as fast at 16384, compare: [new, old], expect: same,
     tolerance: 0.05, block_sizes: [16384]}
"""
OLD, NEW = "1.1.1w-asm-x86_64", "3.0.20-asm-x86_64"


def _trend_setup(tmp_path: Path):  # type: ignore[no-untyped-def]
    from openssl_matrix.repro.plan import PlannedMeasurement
    from openssl_matrix.repro.resolve import ResolvedVersion
    from openssl_matrix.repro.specload import load_spec
    path = tmp_path / "trend.yaml"
    path.write_text(TREND_SPEC, encoding="utf-8")
    spec = load_spec(path)
    planned = {n: PlannedMeasurement(n, variant=NEW if n == "new" else OLD,
                                     version="3.0.20" if n == "new" else "1.1.1w", suite="s",
                                     blocks=(16, 16384)) for n in spec.measurements}
    resolved = {v: ResolvedVersion(v, v, False, None, (), None, None) for v in spec.versions}
    return spec, planned, resolved


def test_a_trend_is_judged_from_its_two_sizes_interleaved_ratios(tmp_path: Path) -> None:
    from collections.abc import Mapping, Sequence

    from openssl_matrix.images.pairimage import pair_tag
    from openssl_matrix.repro.judge import REPRODUCED, Ours, judge
    from openssl_matrix.repro.pairs import claim_pairs, measure_claim_pairs

    from ..fakes import FakeBackend, fake_pairbench
    spec, planned, resolved = _trend_setup(tmp_path)
    versions = {OLD: ("1.1.1w", "x86_64"), NEW: ("3.0.20", "x86_64")}
    pairs, why = claim_pairs(spec, planned, versions)
    assert why == {} and pairs["gap-closes"].blocks == (16, 16384)
    m = load_matrix(ROOT / "matrix.yaml")
    variants = {v: (m.select(v)[0], f"img-{v}") for v in (OLD, NEW)}

    def harness(image: str, command: Sequence[str], env: Mapping[str, str],
                ) -> tuple[int, str, str]:
        size = int(command[command.index("--bytes") + 1])
        new_share = 0.5 if size == 16 else 1.0  # synthetic: half as fast at 16 bytes
        return 0, fake_pairbench(command, lambda v, cap, alg, dec: 1e9 * (
            new_share if v == NEW else 1.0)), ""

    backend = FakeBackend(harness)
    backend.images[pair_tag(sorted(variants.values(), key=lambda x: x[0].id))] = "sha256:p"
    got = measure_claim_pairs(spec, pairs, planned, variants, backend, ResultsTree(tmp_path),
                              "cpu-x",
                              session="repro-t-1", workdir=tmp_path / "work",
                              limits=lambda seconds: None)
    assert sorted(got["gap-closes"].ratios) == [16, 16384]
    # no usable round at all: the rounds could not judge it, the interleaved runs do
    ours = {n: Ours() for n in spec.measurements}
    r = judge(spec, spec.claims[0], planned, ours, resolved, interleaved=got)
    [b] = r.blocks
    assert r.verdict == REPRODUCED and r.ratio_basis == "interleaved"
    assert b.basis == "interleaved" and b.trend == (16, 16384)
    assert b.ours is not None and b.ci is not None
    assert b.ours == pytest.approx(2.0, rel=0.01) and b.ci[0] < b.ours < b.ci[1]
    assert (b.ci[1] - b.ci[0]) / 2 / b.ours < 0.02
    assert b.record is not None and "--16/record.json" in b.record \
        and "--16384/record.json" in b.record
    # without the interleaved runs: judged from rounds, as before (here none: missing)
    assert judge(spec, spec.claims[0], planned, ours, resolved).ratio_basis == "rounds"


def test_a_verdict_reads_the_widened_interval_and_shows_the_runs(tmp_path: Path) -> None:
    from openssl_matrix.repro.judge import INCONCLUSIVE, REPRODUCED, Ours, Reproduction, judge
    from openssl_matrix.repro.pairs import Interleaving, PairRatio
    from openssl_matrix.repro.verdicts import as_json, render_text
    spec, planned, resolved = _trend_setup(tmp_path)
    claim = spec.claims[1]  # "same" at 16384: 0.95-1.05 (tolerance 5 %)
    ours = {n: Ours() for n in spec.measurements}

    def verdict(runs: list[float], seeds: tuple[int, ...] = (0, 1, 2),
                ) -> tuple[object, Reproduction]:
        text = "".join(_text(c, seed=i, size=16384) for i, c in zip(seeds, runs, strict=True))
        row = row_of(parse_output(text).runs)
        from openssl_matrix.measure.runsmeta import unit_of_row
        unit = unit_of_row(_as_row(row, len(runs)))
        assert unit is not None
        pr = PairRatio(row["ratio"], row["ci_low"], row["ci_high"], row["blocks"], False,
                       "_interleaved/cpu-x/repro-t-1/p--16384/record.json", len(runs),
                       tuple(d["ratio"] for d in row["runs_detail"]),
                       bool(row.get("runs_disagree")), unit.se, unit.df)
        r = judge(spec, claim, planned, ours, resolved,
                  interleaved={claim.id: Interleaving({16384: pr})})
        return r, Reproduction(spec, resolved, planned, ours, [r], {}, [], "")

    # three runs at 1.00-1.04, each ±0.5 %: pooled, every block inside the band; as
    # units they disagree, and the interval over them reaches past 1.05: neither
    # reproduced nor refuted
    r, rep = verdict([1.00, 1.04, 1.02])
    assert r.verdict == INCONCLUSIVE  # type: ignore[attr-defined]
    [b] = r.blocks  # type: ignore[attr-defined]
    assert b.runs_disagree and b.ci[1] > 1.05 and len(b.run_ratios) == 3
    text = render_text(rep)
    assert "interleaved 0.97–1.07 runs disagree: 1.00, 1.04, 1.0" in text
    assert "its runs disagree" in text
    block = as_json(rep)["claims"][0]["blocks"][0]
    assert block["runs_disagree"] is True
    assert block["run_ratios"] == pytest.approx([1.00, 1.04, 1.02], rel=0.01)
    # runs that agree: a narrow interval inside the band, reproduced, no flag
    r, rep = verdict([1.01, 1.01, 1.01], (4, 5, 0))
    assert r.verdict == REPRODUCED and not r.blocks[0].runs_disagree  # type: ignore[attr-defined]
    assert "runs disagree" not in render_text(rep)


# ---------------------------------------------------------------------------------
# what a reader sees: the bench summary, the report's section, the noise benchmark


def test_the_summary_the_page_and_the_noise_benchmark_show_the_runs(tmp_path: Path,
                                                                    capsys: Any) -> None:
    from openssl_matrix.cli.summary import interleaved_text
    from openssl_matrix.report import interleavedview
    from openssl_matrix.results.interleaved import file_pair

    from ..scripts import load_script
    pair, suite = _pair()
    text = "".join(_text(c, seed=i) for i, c in enumerate((1.195, 1.078, 1.035)))
    rec = record_of(pair, command(pair, suite, suite.algorithms), text, 0,
                    "2026-12-01T00:00:00+00:00", 6.0)
    assert "3 runs that disagree: 1.19" in interleaved_text(rec.algorithms[0])
    file_pair(tmp_path, "host-x", "bench-1", pair.name, rec, text)
    [row] = interleavedview.rows(tmp_path)
    assert row.runs == 3 and row.runs_disagree and row.ci_method == CI_METHOD
    assert row.run_ratios == pytest.approx([1.195, 1.078, 1.035], rel=0.01)
    assert "3 runs disagree beyond their intervals: ×1.19" in row.line()
    page = interleavedview.html([row])
    assert '<span class="bad">runs disagree</span>' in page and "×1.195" in page
    assert row.as_dict()["runs_disagree"] is True
    # one run: no runs shown, no flag
    one = record_of(pair, command(pair, suite, suite.algorithms), _text(1.1), 0,
                    "2026-12-02T00:00:00+00:00", 2.0)
    file_pair(tmp_path, "host-x", "bench-2", pair.name, one, "")
    [single] = interleavedview.rows(tmp_path)
    assert single.runs == 1 and "runs" not in single.line()
    assert '<span class="bad">runs disagree</span>' not in interleavedview.html([single])
    noise = load_script("noise")
    [woven] = noise.woven(tmp_path, "host-x", "bench-1", {})
    assert woven["runs_disagree"] and len(woven["run_ratios"]) == 3
    noise.woven_table([woven])
    out = capsys.readouterr().out
    assert "runs disagree: 1.19" in out and "beyond their intervals (measure/runsmeta.py): 1" in out


def test_a_reproductions_page_shows_the_runs_of_a_block_that_disagree() -> None:
    from openssl_matrix.report.view import repro_view
    block = {"block_size": 8192, "our_ratio": 1.1, "our_ratio_range": None,
             "runs_disagree": True, "run_ratios": [1.195, 1.078, 1.035]}
    data = {"claims": [{"id": "c", "verdict": "inconclusive", "blocks": [block]}]}
    view = repro_view({"data": data, "text": "v.txt", "json": "v.json"})
    assert view["claims"][0]["blocks"][0]["range"] == "runs disagree: 1.20×, 1.08×, 1.03×"


def test_the_combined_row_counts_each_runs_own_blocks() -> None:
    # the pooled rule judges slowed blocks against the usual rate of every run together,
    # and leaves out most blocks of the slower runs; each run judged on its own keeps them
    runs = _runs(1.195, 1.078, 1.035)
    row = row_of(runs)
    own = [estimate(r) for r in runs]
    assert row["blocks"] == sum(e.blocks for e in own if e is not None) == 180
    assert row["slowed"] == 0 and row["pooled"]["ratio"] > 1.15
