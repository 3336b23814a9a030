"""Reproductions judged from interleaved runs (repro/pairs.py, issue 31): which claims
the pair harness can time, and the judge preferring that ratio and its interval to the
rounds', saying which basis it used; rounds where there is none, or where the figures'
labels put what they mean in doubt."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from openssl_matrix.core.resources import project_reports
from openssl_matrix.images.pairimage import pair_tag
from openssl_matrix.matrix.load import load_matrix
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
from openssl_matrix.repro.pairs import (
    ClaimPair,
    Interleaving,
    PairRatio,
    claim_pairs,
    measure_claim_pairs,
)
from openssl_matrix.repro.plan import PlannedMeasurement
from openssl_matrix.repro.resolve import Environment, ResolvedVersion
from openssl_matrix.repro.spec import OP_BLOCK, ReportSpec
from openssl_matrix.repro.specload import load_spec
from openssl_matrix.results.tree import ResultsTree

from ..fakes import FakeBackend, fake_pairbench
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


# -- claims on the library harness's figures (issue 31: #15199's and #14787's) ------------

NEW3, OLD1 = "3.0.20-asm-x86_64", "1.1.1w-asm-x86_64"
LIB_VERSIONS = {NEW3: ("3.0.20", "x86_64"), OLD1: ("1.1.1w", "x86_64")}


def _shipped(name: str) -> ReportSpec:
    return load_spec(project_reports() / f"{name}.yaml")


def _lib_planned(spec: ReportSpec) -> dict[str, PlannedMeasurement]:
    return {n: PlannedMeasurement(n, variant=NEW3 if m.build == "v30" else OLD1,
                                  version="3.0.20" if m.build == "v30" else "1.1.1w",
                                  stand_in=True, suite="lib", blocks=(OP_BLOCK,))
            for n, m in spec.measurements.items()}


def test_library_claims_on_one_thread_are_interleaved_per_operation() -> None:
    cmac = _shipped("openssl-issue-14787-cmac")
    pairs, why = claim_pairs(cmac, _lib_planned(cmac), LIB_VERSIONS)
    assert why == {}
    assert pairs["cmac-three-times-slower"] == ClaimPair(
        "cmac-three-times-slower", "v30-cmac", "v111-cmac", "cmac", False, (OP_BLOCK,))
    pem = _shipped("openssl-issue-15199-pkcs8-decoding")
    pairs, why = claim_pairs(pem, _lib_planned(pem), LIB_VERSIONS)
    assert why == {}
    assert {c: p.algorithm for c, p in pairs.items()} == {
        "pem-decoding-much-slower": "pkey-decode-pem-rsa2048",
        "pem-decoding-slower": "pkey-decode-pem-rsa2048",
        "der-decoding-slower": "pkey-decode-der-rsa2048"}
    # the pair harness runs one thread, and only the operations it has the calls of
    two = replace(cmac, measurements={**cmac.measurements, "v30-cmac": replace(
        cmac.measurements["v30-cmac"], threads=2)})
    assert "on 2 threads: the pair harness runs one thread" in \
        claim_pairs(two, _lib_planned(two), LIB_VERSIONS)[1]["cmac-slower"]
    other = replace(cmac, measurements={n: replace(m, algorithm="ssl-new")
                                        for n, m in cmac.measurements.items()})
    assert "is the library harness's ssl-new: the pair harness times EVP" in \
        claim_pairs(other, _lib_planned(other), LIB_VERSIONS)[1]["cmac-slower"]


def test_a_library_claim_is_measured_in_one_run_per_operation_and_filed(
        tmp_path: Path) -> None:
    spec = _shipped("openssl-issue-14787-cmac")
    planned = _lib_planned(spec)
    pairs, _ = claim_pairs(spec, planned, LIB_VERSIONS)
    m = load_matrix(ROOT / "matrix.yaml")
    variants = {v: (m.select(v)[0], f"img-{v}") for v in (NEW3, OLD1)}
    per_s = {NEW3: 1.1e6, OLD1: 3.0e6}  # synthetic CMACs a second

    def harness(image: str, command: Sequence[str], env: Mapping[str, str],
                ) -> tuple[int, str, str]:
        return 0, fake_pairbench(command, lambda v, cap, alg, dec: per_s[v]), ""

    backend = FakeBackend(harness)
    sides = sorted(variants.values(), key=lambda x: x[0].id)
    backend.images[pair_tag(sides)] = "sha256:pair"  # the harness image is there
    got = measure_claim_pairs(spec, pairs, planned, variants, backend, ResultsTree(tmp_path),
                              "cpu-x",
                              session="repro-x-1", workdir=tmp_path / "work",
                              limits=lambda seconds: None)
    # both claims compare the same sides on the same operation: one run of the harness
    [(_, command, _)] = backend.runs
    assert command[-1] == "cmac" and "--decrypt" not in command
    for claim in ("cmac-three-times-slower", "cmac-slower"):
        [(block, r)] = got[claim].ratios.items()
        assert block == OP_BLOCK and r.ratio == pytest.approx(1.1 / 3.0)
        assert r.record.endswith("--vs--3.0.20-asm-x86_64--native--operation/record.json")
        rec = json.loads((tmp_path / r.record).read_text())
        [row] = rec["algorithms"]
        assert row["direction"] == "operation" and row["block_size"] == 0
        assert row["rate_a"] == pytest.approx(3.0e6, rel=0.01)  # operations a second


def _lib_ours(values: list[float]) -> Ours:
    o = Ours()
    o.per_run = [(f"run{i}", {OP_BLOCK: v}) for i, v in enumerate(values)]
    o.statuses = {"ok": len(values)}
    return o


def test_a_library_claim_is_decided_from_the_interleaved_ratio() -> None:
    spec = _shipped("openssl-issue-14787-cmac")
    resolved = {v: ResolvedVersion(v, r, True, None, (), None, None)
                for v, r in (("1.1.1", "1.1.1w"), ("3.0.0", "3.0.20"))}
    # a noisy host's rounds: 3.0 at 0.9-1.3 M/s, 1.1.1 at 2.0-3.1 M/s
    ours = {"v30-cmac": _lib_ours([0.9e6, 1.3e6, 1.1e6]),
            "v111-cmac": _lib_ours([3.1e6, 2.0e6, 2.6e6])}
    claim = next(c for c in spec.claims if c.id == "cmac-three-times-slower")

    def verdict(ratio: float) -> ClaimResult:
        il = Interleaving({OP_BLOCK: PairRatio(
            ratio, ratio * 0.99, ratio * 1.01, 120, False,
            "_interleaved/cpu/repro-x-1/pair--operation/record.json")})
        return judge(spec, claim, _lib_planned(spec), ours, resolved,
                     interleaved={claim.id: il})

    rounds = judge(spec, claim, _lib_planned(spec), ours, resolved)
    assert rounds.ratio_basis == "rounds"
    inside, outside = verdict(0.37), verdict(0.6)  # the band is 0.333 ±35 %: 0.216-0.450
    assert inside.verdict == REPRODUCED and inside.ratio_basis == "interleaved"
    assert outside.verdict == NOT_REPRODUCED and outside.ratio_basis == "interleaved"
    [b] = inside.blocks
    assert b.where == "the operation" and b.basis == "interleaved" and b.pairs == 120


def test_check_lists_the_library_claims_it_interleaves(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    text = LIB_SPEC
    for version, key in (("1.1.1w", "SHA_OLD"), ("3.0.20", "SHA_NEW")):
        text = text.replace(key, fake_tarball(tmp_path / "tarballs", version))
    path = tmp_path / "made-up-library.yaml"
    path.write_text(text)
    matrix = yaml.safe_load((ROOT / "matrix.yaml").read_text(encoding="utf-8"))
    matrix["sources_dirs"] = [str(tmp_path / "tarballs")]
    mpath = tmp_path / "matrix.yaml"
    mpath.write_text(yaml.safe_dump(matrix, sort_keys=False), encoding="utf-8")
    plan = check(load_spec(path), Environment.from_matrix(mpath), tmp_path / "results",
                 FACTS).text().split("Plan on this machine")[1]
    assert ("interleave for cmac-slower: new-cmac / old-cmac, cmac per operation (both "
            "sides in one process") in plan
    assert "judged from rounds: ssl-slower: new-ssl is the library harness's ssl-new" in plan


#: This test's own made-up report on library-harness figures.
LIB_SPEC = """
schema: 1
title: Library figures, made up for the tests
source: {kind: site, where: a test}
machines:
  box: {cpu: Made-up CPU}
versions:
  1.1.1w: {sha256: SHA_OLD}
  3.0.20: {sha256: SHA_NEW}
builds:
  old: {version: 1.1.1w}
  new: {version: 3.0.20}
measurements:
  old-cmac: {build: old, operation: library, algorithm: cmac, threads: 1}
  new-cmac: {build: new, operation: library, algorithm: cmac, threads: 1}
  old-ssl: {build: old, operation: library, algorithm: ssl-new, threads: 1}
  new-ssl: {build: new, operation: library, algorithm: ssl-new, threads: 1}
claims:
  - {id: cmac-slower, says: slower, compare: [new-cmac, old-cmac], expect: slower}
  - {id: ssl-slower, says: slower, compare: [new-ssl, old-ssl], expect: slower}
"""


def test_pem_decoding_tens_of_times_slower_is_decided_and_printed_to_three_digits() -> None:
    spec = _shipped("openssl-issue-15199-pkcs8-decoding")
    resolved = {v: ResolvedVersion(v, r, True, None, (), None, None)
                for v, r in (("1.1.1", "1.1.1w"), ("3.0.0", "3.0.20"))}
    ours = {n: _lib_ours([]) for n in spec.measurements}  # every round contended
    claim = next(c for c in spec.claims if c.id == "pem-decoding-much-slower")

    def verdict(ratio: float, half: float) -> ClaimResult:
        il = Interleaving({OP_BLOCK: PairRatio(
            ratio, ratio * (1 - half), ratio * (1 + half), 92, False,
            "_interleaved/cpu/repro-x-1/pair--operation/record.json")})
        return judge(spec, claim, _lib_planned(spec), ours, resolved,
                     interleaved={claim.id: il})

    # the band: 2,500 / 142,857 = 0.0175 ±50 %, i.e. 0.00875-0.0263 (38-114 times slower)
    assert verdict(0.0276, 0.01).verdict == NOT_REPRODUCED  # 36 times slower, ±1 %
    assert verdict(0.02, 0.01).verdict == REPRODUCED
    edge = verdict(0.0262, 0.02)
    assert edge.verdict == INCONCLUSIVE and edge.ratio_basis == "interleaved"
    assert "interval 0.0257–0.0267× (interleaved, 92 blocks) straddles the band 0.00875–" \
        in (edge.reason or "")
