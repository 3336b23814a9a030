"""A spec's claim that asks where its ratio comes from (``profile: true``, issue 32 item
5): the field accepted and refused at load, the cells each side is profiled as, what
``--check`` says (no Docker), and the verdict's lines from a profile comparison built
from the real perf capture in tests/fixtures/perf (3.0.20-asm sha256 at 16 bytes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.core.resources import project_reports
from openssl_matrix.engine.backend import RunResult
from openssl_matrix.engine.engineinfo import EngineInfo
from openssl_matrix.measure.perfrun import ProfileRun, SpeedCell
from openssl_matrix.measure.profile import parse_script
from openssl_matrix.measure.profilestore import ProfileMeta, difference, meta_of, table
from openssl_matrix.measure.profiling import Compared, Profiled
from openssl_matrix.repro.check import check
from openssl_matrix.repro.judge import REPRODUCED, ClaimResult, Ours, Reproduction
from openssl_matrix.repro.plan import PlannedMeasurement
from openssl_matrix.repro.profileclaim import cells, check_line, where_lines
from openssl_matrix.repro.profilerun import comparison_record, side
from openssl_matrix.repro.resolve import Environment, ResolvedVersion
from openssl_matrix.repro.spec import ReportSpec
from openssl_matrix.repro.specload import load_spec
from openssl_matrix.repro.verdicts import as_json, render_text

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "perf" / "script-3.0.20-asm-sha256-16.txt"

SPEC = """\
schema: 1
title: A test spec
source:
  kind: other
  where: a unit test
machines:
  m:
    cpu: an x86-64 CPU (model not named)
  other:
    cpu: another x86-64 CPU (model not named)
versions:
  3.0.20: {}
  1.1.1w: {}
builds:
  new:
    version: 3.0.20
  old:
    version: 1.1.1w
measurements:
  new-sha:
    machine: m
    build: new
    algorithm: sha256
    evp: true
    reference: {16: 1000000, 8192: 2000000}
  old-sha:
    machine: m
    build: old
    algorithm: sha256
    evp: true
    reference: {16: 1100000, 8192: 2100000}
  old-sha-there:
    machine: other
    build: old
    algorithm: sha256
    evp: true
    reference: {16: 1100000, 8192: 2100000}
  old-raw:
    machine: m
    build: old
    algorithm: sha256
    evp: false
    reference: {16: 1100000, 8192: 2100000}
  new-masked:
    machine: m
    build: new
    algorithm: sha256
    evp: true
    disable: [sha]
    reference: {16: 900000, 8192: 1900000}
  new-sign:
    machine: m
    build: new
    algorithm: rsa2048
    operation: sign
    reference: 1000
  new-lib:
    machine: m
    build: new
    operation: library
    algorithm: pkey-decode-pem-rsa2048
    threads: 1
    reference: 1000
claims:
  - id: c
    says: a claim
    expect: slower
"""


def _spec(tmp_path: Path, claim: str, profile: str = "true") -> ReportSpec:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC + "".join(f"    {line}\n" for line in
                                   [*claim.splitlines(), f"profile: {profile}"]))
    return load_spec(path)


def test_a_claim_of_two_speed_cells_at_one_size_can_be_profiled(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "compare: [new-sha, old-sha]\nblock_sizes: [16]")
    claim = spec.claims[0]
    assert claim.profile is True
    assert cells(spec, claim) == ("sha256:16", "sha256:16")
    assert _spec(tmp_path, "compare: [new-sha, old-sha]\nblock_sizes: [16]",
                 "false").claims[0].profile is False


@pytest.mark.parametrize(("claim", "why"), [
    ("compare: [new-sha, old-sha-there]\nblock_sizes: [16]", "compares two machines"),
    ("compare: [new-sha, old-sha]\ntrend: [16, 8192]", "a trend claim"),
    ("compare: [new-sha, old-sha]\nblock_sizes: [16, 8192]",
     "profiled at one block size, and the claim is judged at 16, 8192: give block_sizes"),
    ("compare: [new-sha, old-sha]\nblock_sizes: all", "every size both sides have"),
    ("compare: [new-sha, old-raw]\nblock_sizes: [16]",
     "old-raw: a speed cell is profiled through EVP (-evp), and this measurement runs "
     "without it"),
    ("compare: [new-masked, old-sha]\nblock_sizes: [16]",
     "new-masked: it masks capabilities"),
    ("compare: [new-sign, new-lib]", "a pkey and a library measurement"),
])
def test_a_claim_whose_sides_cannot_be_profiled_is_refused_saying_why(
        tmp_path: Path, claim: str, why: str) -> None:
    with pytest.raises(ConfigError) as err:
        _spec(tmp_path, claim)
    text = str(err.value)
    assert "claims[0] (c).profile: this claim's sides cannot be profiled" in text
    assert why in text and "invoke matrix profile --compare" in text


def test_profile_must_be_true_or_false(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\.profile: expected true or false"):
        _spec(tmp_path, "compare: [new-sha, old-sha]\nblock_sizes: [16]", "yes please")


def test_the_shipped_pkcs8_spec_profiles_its_ratio_claim_and_check_says_so(
        tmp_path: Path) -> None:
    spec = load_spec(project_reports() / "openssl-issue-15199-pkcs8-decoding.yaml")
    claims = {c.id: c for c in spec.claims}
    assert claims["pem-decoding-much-slower"].profile is True
    assert not claims["pem-decoding-slower"].profile
    assert cells(spec, claims["pem-decoding-much-slower"]) == (
        "pkey-decode-pem-rsa2048:t1", "pkey-decode-pem-rsa2048:t1")
    line = check_line(spec, claims["pem-decoding-much-slower"])
    assert "library cell pkey-decode-pem-rsa2048:t1, 3 s each under perf" in line
    # --check (no engine reached: it is given none) prints it under the claim
    report = check(spec, Environment(None, {}, {}, {}, (), None), tmp_path / "results")
    text = report.text()
    _, _, rest = text.partition("  pem-decoding-much-slower (")
    assert line in rest.split("\n  pem-decoding-slower (")[0]
    assert text.count("      profile: after measuring") == 1
    assert not (tmp_path / "results").exists()


def _run(operations: int) -> ProfileRun:
    script = "".join(line for line in FIX.read_text().splitlines(keepends=True)
                     if not line.startswith("#"))
    res = RunResult(command=(), env={}, stdout="", stderr="", exit_code=0, started="s",
                    ended="e", seconds=3.0)
    return ProfileRun(command=("openssl", "speed"), samples=parse_script(script),
                      script=script, operations=operations, seconds=3.0, accounting=None,
                      findings=[], result=res)


def test_the_verdict_names_the_top_functions_behind_the_ratio(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "compare: [new-sha, old-sha]\nblock_sizes: [16]")
    claim = spec.claims[0]
    # A is the claim's second side (old-sha), B its first: the same samples over half the
    # operations, so every function costs B twice what it costs A
    a, b = _run(2_000_000), _run(1_000_000)
    diff = difference("1.1.1w-asm-x86_64", a, "3.0.20-asm-x86_64", b)
    cmp = Compared(diff, table(diff, a.ns_per_op, b.ns_per_op), tmp_path / "compare" / "0001")
    cell = SpeedCell("sha256", 16).cell("3.0.20")

    def meta(run: ProfileRun, variant: str) -> ProfileMeta:
        return meta_of(run, variant=variant, version=variant.split("-")[0], image="img",
                       image_id=None, profile_image="prof", profile_image_id="sha256:p",
                       cell=cell, engine=EngineInfo())

    pa = Profiled(a, meta(a, "1.1.1w-asm-x86_64"), tmp_path / "a" / "0001")
    pb = Profiled(b, meta(b, "3.0.20-asm-x86_64"), tmp_path / "b" / "0001")
    record = comparison_record(claim, cell, side("old-sha", "1.1.1w-asm-x86_64", pa),
                               side("new-sha", "3.0.20-asm-x86_64", pb), cmp)
    assert record["gap_ns_per_op"] == pytest.approx(1500.0)  # 3000 − 1500 ns per digest
    top = record["top"]
    assert 3 <= len(top) <= 5 and [r["name"] for r in top] == [
        r.name for r in diff.functions[:len(top)]]
    for r in top:
        assert r["b_ns_per_op"] == pytest.approx(2 * r["a_ns_per_op"])
        assert r["share_of_gap"] == pytest.approx(r["diff_ns_per_op"] / 1500.0)
        assert r["diff_sd_ns_per_op"] > 0
    total = sum(s.period_ns for s in a.samples)
    assert record["explained_share"] == pytest.approx(
        (total / 1e6 - total / 2e6) / 1500.0, rel=1e-3)
    lines = where_lines(record)
    assert lines[0].startswith("      where (profiles of both sides, sha256:16; ns per "
                               "operation): new-sha 3,000.0 (ok) against old-sha 1,500.0 "
                               "(ok): gap +1,500.0")
    first = top[0]
    assert first["name"] in lines[1] and f"{first['a_ns_per_op']:,.1f}" in lines[1]
    assert f"{first['b_ns_per_op']:,.1f}" in lines[1]
    assert f"({first['share_of_gap']:.0%} of the gap)" in lines[1]
    # the whole verdict: text and --json carry it
    planned = {n: PlannedMeasurement(n, variant="v", version="3.0.20", suite="s",
                                     mask="native") for n in spec.measurements}
    resolved = {v: ResolvedVersion(v, v, False, None, (), None, None) for v in spec.versions}
    rep = Reproduction(spec, resolved, planned, {n: Ours() for n in spec.measurements},
                       [ClaimResult(claim, REPRODUCED)], {}, [], "")
    rep.where = {claim.id: record}
    text = render_text(rep)
    assert "\n".join(lines) in text
    data = as_json(rep)["claims"][0]
    assert data["profile"] is True and data["profiled"]["top"][0]["name"] == first["name"]


def test_a_claim_not_profiled_says_why() -> None:
    assert where_lines(None) == []
    assert where_lines({"claim": "c", "error": "new-sha was not measured here"}) == [
        "      where: not profiled: new-sha was not measured here"]
