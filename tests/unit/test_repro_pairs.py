"""Reproductions judged from interleaved runs (repro/pairs.py, issue 31): which claims
the pair harness can time, and the judge preferring that ratio and its interval to the
rounds', saying which basis it used; rounds where there is none, or where the figures'
labels put what they mean in doubt."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from openssl_matrix.report.view import repro_view
from openssl_matrix.repro.check import check
from openssl_matrix.repro.judge import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    REPRODUCED,
    ClaimResult,
    Ours,
    judge,
)
from openssl_matrix.repro.pairs import ClaimPair, Interleaving, PairRatio, claim_pairs
from openssl_matrix.repro.plan import PlannedMeasurement
from openssl_matrix.repro.resolve import Environment, ResolvedVersion
from openssl_matrix.repro.spec import ReportSpec
from openssl_matrix.repro.specload import load_spec

from .test_spec_unknowns import FACTS, ROOT, fake_tarball

NEW, OLD = "1.1.1w-asm-x86_64", "1.0.2u-asm-x86_64"
VERSIONS = {NEW: ("1.1.1w", "x86_64"), OLD: ("1.0.2u", "x86_64")}

#: This test's own made-up report (figures in 1000s of bytes/s at 8192 bytes).
SPEC = """
schema: 1
title: AES-NI on and off, made up for the tests
source: {kind: site, where: a test}
machines:
  box: {cpu: Made-up CPU}
versions:
  1.1.1w: {sha256: SHA_NEW}
  1.0.2u: {sha256: SHA_OLD}
builds:
  new: {version: 1.1.1w}
  old: {version: 1.0.2u}
measurements:
  aes-on: {build: new, algorithm: aes-128-cbc, reference: {8192: 200000.00k}}
  aes-off: {build: new, algorithm: aes-128-cbc, disable: [aesni],
             reference: {8192: 100000.00k}}
  legacy-on: {build: new, algorithm: aes-128-cbc, evp: false}
  legacy-off: {build: new, algorithm: aes-128-cbc, evp: false, disable: [aesni]}
  old-aes: {build: old, algorithm: aes-128-cbc}
  sha-new: {build: new, algorithm: sha256}
  rsa-new: {build: new, algorithm: rsa2048, operation: sign}
  rsa-old: {build: old, algorithm: rsa2048, operation: sign}
claims:
  - {id: twice, says: about twice, compare: [aes-on, aes-off], expect: ratio, ratio: 2.0,
     tolerance: 0.1}
  - {id: legacy-same, says: no difference, compare: [legacy-on, legacy-off], expect: same}
  - {id: old-same, says: as fast as 1.0.2, compare: [aes-on, old-aes], expect: same}
  - {id: two-algorithms, says: aes beats sha, compare: [aes-on, sha-new], expect: faster}
  - {id: rsa, says: rsa as fast, compare: [rsa-new, rsa-old], expect: same}
"""


@pytest.fixture
def spec_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    text = SPEC
    for version, key in (("1.1.1w", "SHA_NEW"), ("1.0.2u", "SHA_OLD")):
        text = text.replace(key, fake_tarball(tmp_path / "tarballs", version))
    path = tmp_path / "made-up-pairs.yaml"
    path.write_text(text)
    return path


@pytest.fixture
def spec(spec_path: Path) -> ReportSpec:
    return load_spec(spec_path)


def test_check_plans_which_claims_are_interleaved(spec_path: Path, tmp_path: Path) -> None:
    matrix = yaml.safe_load((ROOT / "matrix.yaml").read_text(encoding="utf-8"))
    matrix["sources_dirs"] = [str(tmp_path / "tarballs")]
    mpath = tmp_path / "matrix.yaml"
    mpath.write_text(yaml.safe_dump(matrix, sort_keys=False), encoding="utf-8")
    text = check(load_spec(spec_path), Environment.from_matrix(mpath), tmp_path / "results",
                 FACTS).text()
    plan = text.split("Plan on this machine")[1]
    assert "interleave for twice: aes-on / aes-off, aes-128-cbc at 8192 bytes" in plan
    assert "judged from rounds: legacy-same: legacy-on runs the low-level (non-EVP)" in plan
    assert "judged from rounds: old-same: old-aes is OpenSSL 1.0.2u, older than 1.1.0" in plan
    assert "interleaved runs 2 s an algorithm and block size" in plan
    assert not (tmp_path / "results").exists()


def _planned(spec: ReportSpec) -> dict[str, PlannedMeasurement]:
    return {n: PlannedMeasurement(n, variant=OLD if m.build == "old" else NEW,
                                  version=spec.builds[m.build].version, suite="s",
                                  blocks=(8192,))
            for n, m in spec.measurements.items()}


def test_the_claims_the_pair_harness_can_time(spec: ReportSpec) -> None:
    pairs, why = claim_pairs(spec, _planned(spec), VERSIONS)
    assert pairs == {"twice": ClaimPair("twice", "aes-on", "aes-off", "aes-128-cbc", False,
                                        (8192,))}
    assert "low-level (non-EVP) path" in why["legacy-same"]
    assert "1.0.2u, older than 1.1.0" in why["old-same"]
    assert "different algorithms (aes-128-cbc, sha256)" in why["two-algorithms"]
    assert "public-key figure" in why["rsa"]
    # a side that is not measured here (a failed build, say) is not interleaved either
    planned = _planned(spec)
    planned["aes-off"].problem = "the build failed"
    assert "aes-off is not measured here" in claim_pairs(spec, planned, VERSIONS)[1]["twice"]


def _ours(values: list[float], statuses: dict[str, int] | None = None) -> Ours:
    o = Ours()
    o.per_run = [(f"run{i}", {8192: v}) for i, v in enumerate(values)]
    o.statuses = statuses or {"ok": len(values)}
    return o


def _judge(spec: ReportSpec, claim: str, interleaved: dict[str, Interleaving] | None,
           off_statuses: dict[str, int] | None = None) -> ClaimResult:
    # the rounds of a noisy host: same-round ratios 1.7, 2.3 and 2.0, whose t-interval
    # (about 1.3-2.7) straddles the band 1.8-2.2
    ours = {n: _ours([1e8]) for n in spec.measurements}
    ours["aes-on"] = _ours([2.0e8, 2.0e8, 2.0e8])
    ours["aes-off"] = _ours([2.0e8 / 1.7, 2.0e8 / 2.3, 1.0e8], off_statuses)
    resolved = {v: ResolvedVersion(v, v, False, None, (), None, None) for v in spec.versions}
    c = next(x for x in spec.claims if x.id == claim)
    return judge(spec, c, _planned(spec), ours, resolved, interleaved=interleaved)


def _ratio(ratio: float, half: float | None) -> Interleaving:
    lo, hi = (None, None) if half is None else (ratio * (1 - half), ratio * (1 + half))
    return Interleaving({8192: PairRatio(ratio, lo, hi, 96, False,
                                         "_interleaved/cpu/repro-x-1/pair--8192/record.json")})


def test_a_narrow_interleaved_interval_decides_where_the_rounds_straddle(
        spec: ReportSpec) -> None:
    rounds = _judge(spec, "twice", None)
    assert rounds.verdict == INCONCLUSIVE and rounds.ratio_basis == "rounds"
    inside = _judge(spec, "twice", {"twice": _ratio(2.06, 0.01)})
    assert inside.verdict == REPRODUCED and inside.ratio_basis == "interleaved"
    [b] = inside.blocks
    assert b.basis == "interleaved" and b.ours == pytest.approx(2.06)
    assert b.ci == pytest.approx((2.06 * 0.99, 2.06 * 1.01))
    assert b.record == "_interleaved/cpu/repro-x-1/pair--8192/record.json"
    assert b.pairs == 96 and b.stable is None  # blocks of windows, not rounds
    outside = _judge(spec, "twice", {"twice": _ratio(1.5, 0.01)})
    assert outside.verdict == NOT_REPRODUCED and outside.ratio_basis == "interleaved"
    # an interleaved interval that itself straddles: inconclusive, said of blocks
    edge = _judge(spec, "twice", {"twice": _ratio(2.2, 0.02)})
    assert edge.verdict == INCONCLUSIVE
    assert "(interleaved, 96 blocks) straddles the band 1.80–2.20×" in (edge.reason or "")


def test_without_an_interleaved_interval_the_rounds_decide_and_say_why(
        spec: ReportSpec) -> None:
    # a ratio without an interval (too few blocks of windows): the rounds'
    r = _judge(spec, "twice", {"twice": _ratio(2.0, None)})
    assert r.ratio_basis == "rounds" and r.verdict == INCONCLUSIVE
    assert "too few blocks of windows" in (r.ratio_note or "")
    # a claim the harness cannot time carries the reason it is judged from rounds
    why = Interleaving(why_rounds="legacy-on runs the low-level (non-EVP) path: ...")
    legacy = _judge(spec, "legacy-same", {"legacy-same": why})
    assert legacy.ratio_basis == "rounds"
    assert legacy.ratio_note == "legacy-on runs the low-level (non-EVP) path: ..."


def test_labels_on_what_the_figures_mean_keep_the_interleaved_ratio_out(
        spec: ReportSpec) -> None:
    # the interleaved run sets the same mask: a mask that overreaches there overreaches
    # in the harness too, so its ratio is not used and the rounds decide
    r = _judge(spec, "twice", {"twice": _ratio(2.0, 0.01)},
               off_statuses={"ok": 3, "mask-overreach": 2})
    assert r.ratio_basis == "rounds"
    assert "labelled mask-overreach" in (r.ratio_note or "")
    # a host's noise is no such label: contended or shared-core figures keep it
    noisy = _judge(spec, "twice", {"twice": _ratio(2.0, 0.01)},
                   off_statuses={"ok": 3, "shared-core": 4, "contended": 1})
    assert noisy.verdict == REPRODUCED and noisy.ratio_basis == "interleaved"


def test_a_claim_without_figures_stays_not_testable(spec: ReportSpec) -> None:
    resolved = {v: ResolvedVersion(v, v, False, None, (), None, None) for v in spec.versions}
    planned = _planned(spec)
    planned["aes-off"].problem = "the build of 1.1.1w-asm-x86_64 failed"
    c = next(x for x in spec.claims if x.id == "twice")
    r = judge(spec, c, planned, {n: Ours() for n in spec.measurements}, resolved,
              interleaved={"twice": _ratio(2.0, 0.01)})
    assert r.verdict == NOT_TESTABLE and "failed" in (r.reason or "")


def test_the_report_page_says_where_a_verdicts_ratios_come_from() -> None:
    claims = [{"id": "a", "verdict": "reproduced", "basis": "measured",
               "ratio_basis": "interleaved", "blocks": []},
              {"id": "b", "verdict": "reproduced", "basis": "measured",
               "ratio_basis": "rounds", "blocks": []}]
    view = repro_view({"data": {"claims": claims}, "text": "t.txt", "json": "v.json"})
    assert [c["basis"] for c in view["claims"]] == [
        "by our ratio, from interleaved runs", "by our ratio"]
