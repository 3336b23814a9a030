"""Verdicts from intervals, with three outcomes: a claim is judged on the 95 % interval
of its paired-run ratio; while the interval straddles the claim's band the reproduction
measures more rounds (up to a limit), then says reproduced, not reproduced or
inconclusive with the interval; never "a busy machine?" when the accounting says quiet."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from openssl_matrix.measure.speedcmd import unwrap_speed
from openssl_matrix.repro.judge import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    BlockJudgement,
    band,
    interval_verdict,
    straddle_text,
)
from openssl_matrix.repro.run import MAX_EXTRA_ROUNDS, reproduce
from openssl_matrix.repro.specload import load_spec
from openssl_matrix.repro.verdicts import accounting_text, render_text
from openssl_matrix.results.tree import ResultsTree

from ..fakes import FakeBackend, fake_pairbench
from .test_reproduce_fake import LEGACY_AES, fake_speed
from .test_reproduce_fake import setup as setup


def block(ci: tuple[float, float] | None, expect: str = "same", target: float = 1.0,
          ours: float = 1.05) -> BlockJudgement:
    return BlockJudgement(8192, None, ours, target, None, None, None, 3, expect, 0.10, ci=ci)


def test_the_interval_decides_and_a_straddle_is_inconclusive() -> None:
    assert band("same", 1.0, 0.1) == (0.9, 1.1)
    assert band("faster", 1.0, 0.25) == (1.25, math.inf)
    assert block((0.95, 1.08)).decision is True
    assert block((1.12, 1.30)).decision is False
    straddling = block((1.00, 1.13))
    assert straddling.decision is None
    assert interval_verdict([block((0.95, 1.08))]) == REPRODUCED
    assert interval_verdict([block((0.95, 1.08)), block((1.2, 1.3))]) == NOT_REPRODUCED
    assert interval_verdict([block((0.95, 1.08)), straddling]) == INCONCLUSIVE
    assert straddle_text([straddling]) == ("at 8192 bytes our paired ratio's 95 % interval "
                                           "1.00–1.13× (3 pairs) straddles the band "
                                           "0.90–1.10×")
    # too few pairs for an interval (stats.MIN_PAIRS): nothing is decided from the ratio,
    # however well it meets the claim (until 2026-12-06 one pair decided by itself)
    two = BlockJudgement(8192, None, 1.05, 1.0, True, None, (1.049, 1.051), 2, "same", 0.1,
                         no_interval="too few pairs: n=2")
    assert two.decision is None and interval_verdict([two]) == INCONCLUSIVE
    assert straddle_text([two]) == ("at 8192 bytes our paired ratio 1.05× has no 95 % "
                                    "interval (too few pairs: n=2)")


def test_accounting_text_names_a_busy_host_only_when_figures_were_contended() -> None:
    quiet = accounting_text({})
    assert "quiet" in quiet and "busy" not in quiet
    assert "2 figure(s) contended" in accounting_text({"contended": 2})


def test_a_straddling_claim_gets_more_rounds_then_is_inconclusive(
        setup: tuple[Path, object, FakeBackend, ResultsTree],
        monkeypatch: pytest.MonkeyPatch) -> None:
    spec_path, env, _, tree = setup
    # the masked low-level path alternates around 1/1.10 of the native one, every sample
    # within 5 % of its best (none is left out as a shared core): ratios 0.89-0.93
    # against "same" (0.90-1.10): a straddle
    ratios = [1.08, 1.12, 1.10, 1.09, 1.11, 1.10, 1.12, 1.08]
    calls = {"masked-legacy": 0}

    def noisy(image: str, command: Sequence[str], env_: Mapping[str, str],
              ) -> tuple[int, str, str]:
        code, out, err = fake_speed(image, command, env_)
        args = unwrap_speed(command)
        if "OPENSSL_ia32cap" in env_ and "-evp" not in args:
            r = ratios[calls["masked-legacy"] % len(ratios)]
            calls["masked-legacy"] += 1
            out = out.replace(f"{LEGACY_AES:.2f}", f"{LEGACY_AES / r:.2f}")
        return code, out, err

    spec = load_spec(spec_path)
    rep = reproduce(spec, env, FakeBackend(noisy), tree)  # type: ignore[arg-type]
    r = {x.claim.id: x for x in rep.results}["legacy-same"]
    assert r.verdict == INCONCLUSIVE
    assert calls["masked-legacy"] == spec.measure.repeat + MAX_EXTRA_ROUNDS
    assert r.blocks[0].pairs == spec.measure.repeat + MAX_EXTRA_ROUNDS
    assert "95 % interval" in (r.reason or "") and "straddles the band 0.90–1.10×" in \
        (r.reason or "")
    text = render_text(rep)
    assert "? [inconclusive] legacy-same" in text
    assert "a busy machine" not in text
    assert "the host accounting found the host quiet" in text
    assert any("extra round(s)" in w for w in rep.warnings)
    # the claims that were decided were not measured again
    assert {x.claim.id: x.verdict for x in rep.results}["faster"] == REPRODUCED


def test_the_model_is_checked_on_our_core_first_and_its_miss_is_not_the_claims(
        setup: tuple[Path, object, FakeBackend, ResultsTree]) -> None:
    """The issue's case: the model predicts 2.00× on Ivy Bridge (the report's 1.96×) and
    4.00× on Zen (the fake engine's EPYC), we measure ~4.94×: the model is off on our
    core (its Zen vpaes figure is Nehalem's, inferred), not the claim: reproduced on what
    the model still supports, with the constants calibrated from our runs."""
    from openssl_matrix.images.pairimage import BINARY as PAIR_BINARY

    from .test_reproduce_fake import EVP_AES, EVP_AES_MASKED, on_ivy_bridge

    spec_path, env, _, tree = setup
    on_ivy_bridge(spec_path)
    slow = EVP_AES_MASKED * 4.0 / 4.94   # vpaes slower here than the model's Nehalem figure

    def zen(image: str, command: Sequence[str], env_: Mapping[str, str],
            ) -> tuple[int, str, str]:
        if command[0] == PAIR_BINARY:  # the interleaved run sees the same slow vpaes
            return 0, fake_pairbench(command, lambda v, cap, a, d: slow if cap else EVP_AES), ""
        code, out, err = fake_speed(image, command, env_)
        return code, out.replace(f"{EVP_AES_MASKED:.2f}", f"{slow:.2f}"), err

    backend = FakeBackend(zen)
    # an engine on this machine: the core probe (the fake host's 3 GHz) gives the clock
    # the constants are calibrated in
    backend.info["endpoint"] = "unix:///var/run/docker.sock"
    rep = reproduce(load_spec(spec_path), env, backend, tree)  # type: ignore[arg-type]
    r = {x.claim.id: x for x in rep.results}["twice-on-its-cpu"]
    assert r.verdict == REPRODUCED and r.basis == "cpu model"
    model = r.model or ""
    assert "holds on Made-up CPU by the model (2.00× reported" in model
    assert "the model is off on our core (AMD Zen" in model and "it predicts 4.00× here" \
        in model
    assert "we measure 4.9" in model and "(+2" in model   # about +23 %
    assert "inferred, not measured, for this core: Nehalem 10.0; taken for Zen" in model
    assert "calibrated from our runs: AES-NI CBC encrypt" in model and "vpaes CBC encrypt" \
        in model and "(evp-on, calibrated)" in model
    # the claim is not called false for the model's miss
    assert "not reproduced" not in render_text(rep).split("twice-on-its-cpu", 1)[1][:80]
