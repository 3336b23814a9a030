"""The CPU model: cores found from names and CPUID, AES-CBC cycles/byte per core, and the
verdicts of CPU-dependent and two-machine claims, checked against the seed reports'
figures (reports/*.yaml, transcribed from tests/fixtures/reports/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openssl_matrix.core.resources import project_reports
from openssl_matrix.core.stats import MODEL_TOLERANCE
from openssl_matrix.measure.cpumodel import (
    CORES,
    RatioModel,
    core_of_cpu,
    core_of_march,
    core_of_name,
    path_cost,
)
from openssl_matrix.repro.judge import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    REPRODUCED,
    Ours,
    judge,
    model_on_their_cpu,
)
from openssl_matrix.repro.plan import PlannedMeasurement
from openssl_matrix.repro.resolve import ResolvedVersion
from openssl_matrix.repro.spec import ReportSpec
from openssl_matrix.repro.specload import load_spec

REPORTS = project_reports()
MATRIX = Path(__file__).resolve().parents[2] / "matrix.yaml"

# This host's figures as issue 16 reports them from a reproduction of the Ivy Bridge blog on
# it (AMD EPYC, /proc/cpuinfo 2596.154 MHz): EVP AES-128-CBC at 2.14 cycles/byte, 3.7x the
# figure with AES-NI masked.
HOST_GHZ = 2.596154
HOST_AESNI = HOST_GHZ * 1e9 / 2.14
HOST_MASKED = HOST_AESNI / 3.7


def test_cores_are_found_from_names_cpuid_and_march() -> None:
    assert core_of_name("Intel Core i5-3317U (Ivy Bridge)") is CORES["ivybridge"]
    assert core_of_name("Intel(R) Xeon(R) CPU E31220 @ 3.10GHz") is CORES["sandybridge"]
    assert core_of_name("Intel Xeon E3-1220 (Sandy Bridge)") is CORES["sandybridge"]
    assert core_of_name("Intel Xeon E3-1220 v2") is CORES["ivybridge"]
    assert core_of_name("AMD Ryzen 5 3600 (Zen 2)") is CORES["zen"]
    assert core_of_name("VIA Luke CoreFusion (C3 Nehemiah core)") is None
    # this host: "AMD EPYC" with no number; its CPUID family 25 says Zen
    assert core_of_cpu("AuthenticAMD", 25, 17, "AMD EPYC") is CORES["zen"]
    assert core_of_cpu("GenuineIntel", 6, 0x3A, "unknown") is CORES["ivybridge"]
    assert core_of_march("ivybridge") is CORES["ivybridge"]
    assert core_of_march("znver2") is CORES["zen"]
    assert core_of_march("c3-2") is None


@pytest.mark.parametrize("core", [c for c in CORES.values() if c.openssl_cbc_cpb])
def test_latency_bound_matches_opensslss_own_cbc_measurements(core: object) -> None:
    """rounds x AESENC latency / 16 against aesni-x86_64.pl's measured CBC encrypt."""
    from openssl_matrix.measure.cpumodel import Core

    assert isinstance(core, Core) and core.openssl_cbc_cpb is not None
    bound = core.aesni_cbc_cpb()
    assert bound is not None
    assert bound <= core.openssl_cbc_cpb.value <= bound * 1.10, core.name
    for fact in (core.aesenc_latency, core.aesenc_throughput, core.vpaes_cbc_cpb):
        assert fact is None or fact.source, core.name


def test_paths_outside_the_model_say_why() -> None:
    zen = CORES["zen"]
    cost = path_cost(zen, "aes-128-cbc", evp=True, decrypt=False, masked=(), series=(1, 1, 1))
    assert not isinstance(cost, str) and cost.cpb == pytest.approx(2.5)
    assert "decryption" in str(path_cost(zen, "aes-128-cbc", evp=True, decrypt=True,
                                         masked=(), series=(1, 1, 1)))
    assert "low-level" in str(path_cost(zen, "aes-128-cbc", evp=False, decrypt=False,
                                        masked=(), series=(1, 0, 1)))
    assert "no-asm" in str(path_cost(zen, "aes-128-cbc", evp=True, decrypt=False, masked=(),
                                     series=(3, 0, 0), asm=False))
    assert "afalg" in str(path_cost(zen, "aes-128-cbc", evp=True, decrypt=False, masked=(),
                                    series=(3, 0, 0), engine="afalg"))
    assert "rc4" in str(path_cost(zen, "rc4", evp=True, decrypt=False, masked=(),
                                  series=(1, 1, 1)))
    assert "vpaes" in str(path_cost(CORES["haswell"], "aes-128-cbc", evp=True, decrypt=False,
                                    masked=("aesni",), series=(1, 1, 1)))
    sha = path_cost(zen, "sha256", evp=False, decrypt=False, masked=(), series=(1, 1, 1))
    assert not isinstance(sha, str) and sha.cpb == 2.05 and "SHA ext" in sha.path
    assert "without them" in str(path_cost(zen, "sha256", evp=True, decrypt=False,
                                           masked=("sha",), series=(1, 1, 1)))
    ivy = path_cost(CORES["ivybridge"], "sha256", evp=True, decrypt=False, masked=("sha",),
                    series=(1, 0, 1))
    assert not isinstance(ivy, str) and ivy.cpb == 10.3


def _reference_throughput(spec: ReportSpec, name: str, core_cpb: float) -> tuple[float, float]:
    """(predicted bytes/s at the machine's clock, the report's figure at 8192)."""
    m = spec.measurements[name]
    clock = spec.machines[m.machine].clock_ghz
    assert clock is not None
    return clock * 1e9 / core_cpb, m.reference[8192]


@pytest.mark.parametrize(("spec_id", "claim_id", "first", "second"), [
    ("ivy-bridge-aesni-blog", "evp-aesni-about-twice", "evp-aesni", "evp-masked"),
    ("openssl-dev-2011-asm-vs-c-aesni", "101-evp-aesni-halves-when-masked",
     "101-asm-evp-aes128", "101-asm-evp-aes128-masked"),
])
def test_the_model_predicts_the_reports_own_figures(spec_id: str, claim_id: str, first: str,
                                                    second: str) -> None:
    """From the profile's core and clock alone: the ratio and both figures within 15 %."""
    spec = load_spec(REPORTS / f"{spec_id}.yaml")
    claim = next(c for c in spec.claims if c.id == claim_id)
    assert claim.depends_on == "cpu"
    model = model_on_their_cpu(spec, claim)
    assert isinstance(model, RatioModel)
    reported = spec.reference_ratio(claim, 8192)
    assert reported is not None
    assert abs(reported / model.ratio - 1) <= MODEL_TOLERANCE
    for name, cost in ((first, model.first), (second, model.second)):
        predicted, printed = _reference_throughput(spec, name, cost.cpb)
        assert abs(predicted / printed - 1) <= MODEL_TOLERANCE, (name, predicted, printed)


def _planned(spec: ReportSpec, release: str = "1.1.1w") -> dict[str, PlannedMeasurement]:
    return {n: PlannedMeasurement(n, variant=f"{release}-asm-x86_64", version=release,
                                  stand_in=True, suite="s", blocks=(8192,))
            for n in spec.measurements}


def _resolved(spec: ReportSpec) -> dict[str, ResolvedVersion]:
    return {v: ResolvedVersion(v, "1.1.1w", True, None, (), None, "not here")
            for v in spec.versions}


def _ours(values: dict[str, float], blocks: tuple[int, ...], runs: int = 4,
          ) -> dict[str, Ours]:
    # four runs a side: the two sets' 95 % interval (stats.compare); three give none, nor
    # do three same-round pairs (stats.MIN_PAIRS), and a claim is then not decided
    out: dict[str, Ours] = {}
    for name, value in values.items():
        o = Ours(clock_ghz=HOST_GHZ)
        o.per_run = [(f"run{i}", dict.fromkeys(blocks, value * (1 + 0.004 * i / (runs - 1))))
                     for i in range(runs)]  # 0 to +0.4 %: the median +0.2 % at any count
        o.statuses = {"ok": runs * len(blocks)}
        out[name] = o
    return out


def test_ivy_bridge_about_twice_is_explained_on_this_host() -> None:
    """The 3.7x here is what the model predicts for a Zen; the old verdict (not reproduced,
    3.7 against 2.0 +-25 %) compared CPUs as if they were equal."""
    spec = load_spec(REPORTS / "ivy-bridge-aesni-blog.yaml")
    claim = next(c for c in spec.claims if c.id == "evp-aesni-about-twice")
    blocks = spec.claim_blocks(claim)
    ours = _ours({"evp-aesni": HOST_AESNI, "evp-masked": HOST_MASKED}, blocks)
    result = judge(spec, claim, _planned(spec), ours, _resolved(spec), here=CORES["zen"])
    assert result.verdict == REPRODUCED, result.model or result.reason
    assert result.basis == "cpu model"
    assert result.model is not None
    assert result.model.startswith("holds on Intel Core i5-3317U (Ivy Bridge) by the model "
                                   "(1.96× reported, 2.00× predicted")
    assert "here 3.70× as the model predicts 4.00×" in result.model
    # our Ours has no measured clock here: the nominal one, said as such
    assert "AES-NI CBC encrypt 2.14 c/B at 2.60 GHz (nominal), 2.50 modelled" in result.model
    big = [b for b in result.blocks if b.block >= 1024]
    assert big and all(b.model_here == pytest.approx(4.0) for b in big)
    # the same claim judged directly, as if the CPUs were equal, is what was wrong
    same_core = judge(spec, claim, _planned(spec), ours, _resolved(spec),
                      here=CORES["ivybridge"])
    assert same_core.verdict == NOT_REPRODUCED and same_core.basis == "measured"


def test_sandy_bridge_aesni_claim_on_this_host() -> None:
    spec = load_spec(REPORTS / "openssl-dev-2011-asm-vs-c-aesni.yaml")
    claim = next(c for c in spec.claims if c.id == "101-evp-aesni-halves-when-masked")
    ours = _ours({"101-asm-evp-aes128": HOST_AESNI,
                  "101-asm-evp-aes128-masked": HOST_MASKED}, (8192,))
    result = judge(spec, claim, _planned(spec), ours, _resolved(spec), here=CORES["zen"])
    assert result.verdict == REPRODUCED
    assert result.model is not None and result.model.startswith(
        "holds on Intel Xeon E3-1220 (Sandy Bridge), in an HP ML110 G7 by the model (1.89× "
        "reported, 2.00× predicted")


def test_a_cpu_claim_far_from_the_model_or_outside_it() -> None:
    spec = load_spec(REPORTS / "ivy-bridge-aesni-blog.yaml")
    claim = next(c for c in spec.claims if c.id == "evp-aesni-about-twice")
    blocks = spec.claim_blocks(claim)
    # 2.0x on a Zen is far from the 4.0x the model predicts there: the model is off on our
    # core (its Zen vpaes figure is inferred), not the claim: judged on what the model
    # still supports (the report's 1.96x on Ivy Bridge) and the direction here
    ours = _ours({"evp-aesni": HOST_MASKED * 2, "evp-masked": HOST_MASKED}, blocks)
    result = judge(spec, claim, _planned(spec), ours, _resolved(spec), here=CORES["zen"])
    assert result.verdict == REPRODUCED
    assert "the model is off on our core" in (result.model or "")
    assert "it predicts 4.00× here" in (result.model or "") and "we measure 2.00× (-50%)" \
        in (result.model or "")
    # AES-NI slower than masked: the direction fails
    ours = _ours({"evp-aesni": HOST_MASKED / 2, "evp-masked": HOST_MASKED}, blocks)
    result = judge(spec, claim, _planned(spec), ours, _resolved(spec), here=CORES["zen"])
    assert result.verdict == NOT_REPRODUCED
    assert "direction does not hold" in (result.model or "")
    # a core without a vpaes figure, or one the model does not know: no prediction here,
    # so the claim is judged on the model's word on Ivy Bridge and the direction
    ours = _ours({"evp-aesni": HOST_AESNI, "evp-masked": HOST_MASKED}, blocks)
    result = judge(spec, claim, _planned(spec), ours, _resolved(spec), here=CORES["haswell"])
    assert result.verdict == REPRODUCED
    assert "on our core the model has no prediction" in (result.model or "")
    assert "no figure for vpaes" in (result.model or "")
    result = judge(spec, claim, _planned(spec), ours, _resolved(spec), here=None)
    assert result.verdict == REPRODUCED
    assert "the CPU model does not know this core" in (result.model or "")


TWO_MACHINES = """
schema: 1
title: the same build on two machines
source: {kind: blog, where: nowhere}
machines:
  ryzen: {cpu: AMD Ryzen 5 3600, profile: ryzen}
  e3: {cpu: Intel Xeon E3-1220, profile: xeon-e3-1220}
versions:
  1.1.1w: {}
builds:
  b: {version: 1.1.1w}
measurements:
  on-ryzen: {machine: ryzen, build: b, algorithm: aes-128-cbc, reference: {8192: 1000000k}}
  on-e3: {machine: e3, build: b, algorithm: aes-128-cbc, reference: {8192: 600000k}}
claims:
  - {id: ryzen-faster, says: the Ryzen is faster, compare: [on-ryzen, on-e3], expect: faster}
"""


def test_a_two_machine_claim_never_gets_a_number_from_one_machine(tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    path.write_text(TWO_MACHINES)
    spec = load_spec(path)
    claim = spec.claims[0]
    # measured here as one variant against itself: ratio 1.0 - never used
    ours = _ours({"on-ryzen": 5e8, "on-e3": 5e8}, (8192,))
    resolved = {"1.1.1w": ResolvedVersion("1.1.1w", "1.1.1w", False, None, (), None, None)}
    result = judge(spec, claim, _planned(spec), ours, resolved, here=CORES["zen"])
    assert result.verdict == NOT_TESTABLE and result.blocks == []
    assert "needs ryzen and xeon-e3-1220" in (result.reason or "")
    only_one = {"on-ryzen": _ours({"on-ryzen": 1.1e9}, (8192,))["on-ryzen"]}
    result = judge(spec, claim, _planned(spec), ours, resolved, profiles=only_one)
    assert result.verdict == NOT_TESTABLE and result.blocks == []
    both = _ours({"on-ryzen": 1.1e9, "on-e3": 6.2e8}, (8192,))
    result = judge(spec, claim, _planned(spec), ours, resolved, profiles=both)
    assert result.verdict == REPRODUCED and result.basis == "two machines"
    assert result.blocks[0].ours == pytest.approx(1.1e9 / 6.2e8)


def test_a_spread_that_straddles_the_models_band_is_unsure() -> None:
    """Pairs of runs that scatter (0.9 to 6.8x) give an interval that straddles what can
    be accepted (faster: above 1): inconclusive, never "not reproduced". Six pairs: the
    fewest that give the pairs' distribution-free interval, here their extremes
    (stats.MIN_PAIRS); the scattered side keeps too few samples within 5 % of its best for
    the two sets' one. (Three pairs, until 2026-12-06 a t interval, now give none.)"""
    spec = load_spec(REPORTS / "ivy-bridge-aesni-blog.yaml")
    claim = next(c for c in spec.claims if c.id == "evp-aesni-about-twice")
    ours = _ours({"evp-aesni": HOST_AESNI, "evp-masked": HOST_MASKED}, (8192,), runs=6)
    ours["evp-aesni"].per_run = [(f"run{i}", {8192: HOST_MASKED * x}) for i, x in
                                 enumerate((2.9, 4.7, 6.8, 0.9, 5.5, 1.6))]
    for o in ours.values():
        for _, values in o.per_run:
            for b in spec.claim_blocks(claim):
                values.setdefault(b, values[8192])
    result = judge(spec, claim, _planned(spec), ours, _resolved(spec), here=CORES["zen"])
    assert result.verdict == INCONCLUSIVE
    assert "straddles the band" in (result.reason or "")


def test_profiles_show_the_models_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    from openssl_matrix.cli.commands.profiles import run as cmd_profiles
    from openssl_matrix.measure.cpumodel import summary

    assert summary(CORES["ivybridge"]) == (
        "Intel Ivy Bridge, AESENC latency 8 → AES-128-CBC encrypt 5.00 c/B, masked (vpaes) "
        "10 c/B, SHA-256 10.3 c/B")
    cmd_profiles(target="", matrix=str(MATRIX), results="",
                 json=False)
    out = capsys.readouterr().out
    assert "CPU model: Intel Ivy Bridge, AESENC latency 8" in out
