"""Trend claims (issue 36, item 3): "3.x is half as fast at 16 bytes and equal at 16384" is
a claim on the ratio of two measurements at one block size against the same ratio at
another, judged from trends paired round by round, with a 95 % interval."""

from __future__ import annotations

from pathlib import Path

import pytest

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.repro.check import _claim_lines
from openssl_matrix.repro.judge import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    ClaimResult,
    Ours,
    Reproduction,
    judge,
    paired_trends,
)
from openssl_matrix.repro.plan import PlannedMeasurement
from openssl_matrix.repro.resolve import Environment, ResolvedVersion
from openssl_matrix.repro.spec import ReportSpec
from openssl_matrix.repro.specload import load_spec
from openssl_matrix.repro.verdicts import as_json, render_text

#: Two releases' SHA-256 at 16 and 16384 bytes, in the shape issue 36 describes (the
#: figures are this test's own, not a report's): half as fast at 16, equal at 16384.
SPEC = """
schema: 1
title: the gap closes as blocks grow
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
  old: {build: old, algorithm: sha256, reference: {16: 100000.00k, 16384: 2000000.00k}}
  new: {build: new, algorithm: sha256, reference: {16: 50000.00k, 16384: 2000000.00k}}
claims:
  - {id: gap-closes, says: the gap closes as blocks grow, compare: [new, old],
     expect: ratio, ratio: 2.0, trend: [16, 16384]}
"""


def load(tmp_path: Path, text: str = SPEC) -> ReportSpec:
    path = tmp_path / "trend.yaml"
    path.write_text(text, encoding="utf-8")
    return load_spec(path)


def test_a_trend_claim_loads_with_its_two_sizes(tmp_path: Path) -> None:
    spec = load(tmp_path)
    claim = spec.claims[0]
    assert claim.trend == (16, 16384)
    assert spec.claim_blocks(claim) == (16, 16384)  # both sizes are measured
    assert spec.reference_trend(claim) == pytest.approx(2.0)


@pytest.mark.parametrize(("change", "words"), [
    ("trend: [16, 16384]", "trend: [16, 16]"),
    ("trend: [16, 16384]", "trend: [16]"),
    ("trend: [16, 16384]", "trend: [16, 16384], block_sizes: [16]"),
    ("trend: [16, 16384]", "trend: [16, 16384], depends_on: cpu"),
])
def test_a_trend_that_cannot_be_judged_is_refused(tmp_path: Path, change: str,
                                                  words: str) -> None:
    text = SPEC.replace(change, words)
    with pytest.raises(ConfigError) as err:
        load(tmp_path, text)
    message = str(err.value)
    assert "claims[0] (gap-closes)" in message
    assert any(w in message for w in ("with itself", "two block sizes", "drop block_sizes",
                                      "judged as measured on one machine")), message


def _ours(values: dict[int, float], drift: tuple[float, ...]) -> Ours:
    """Rounds whose every figure is scaled by the machine's speed in that round."""
    o = Ours()
    o.per_run = [(f"run{i}", {b: v * d for b, v in values.items()}) for i, d in
                 enumerate(drift)]
    o.statuses = {"ok": len(drift) * len(values)}
    return o


def _judge(spec: ReportSpec, new: dict[int, float], old: dict[int, float],
           drift: tuple[float, ...]) -> Reproduction:
    planned = {n: PlannedMeasurement(n, variant="v", version="3.0.20", suite="s",
                                     blocks=(16, 16384)) for n in spec.measurements}
    resolved = {v: ResolvedVersion(v, v, False, None, (), None, None) for v in spec.versions}
    ours = {"new": _ours(new, drift), "old": _ours(old, drift)}
    result: ClaimResult = judge(spec, spec.claims[0], planned, ours, resolved)
    return Reproduction(spec, resolved, planned, ours, [result], {}, [], "")


#: A machine whose speed drifts by 30 % between rounds (both builds alike within a round);
#: six rounds, the fewest whose paired trends give a 95 % interval (stats.MIN_PAIRS).
DRIFT = (1.0, 0.7, 1.3, 0.85, 1.1, 0.95)


def test_paired_trends_cancel_the_machines_drift() -> None:
    new = _ours({16: 4.5e7, 16384: 1.8e9}, DRIFT)
    old = _ours({16: 1e8, 16384: 2e9}, DRIFT)
    trends = paired_trends(new, old, 16, 16384)
    assert trends == pytest.approx([2.0] * len(DRIFT))


def test_a_trend_is_judged_from_paired_rounds(tmp_path: Path) -> None:
    spec = load(tmp_path)
    rep = _judge(spec, {16: 4.5e7, 16384: 1.8e9}, {16: 1e8, 16384: 2e9}, DRIFT)
    result = rep.results[0]
    assert result.verdict == REPRODUCED
    (b,) = result.blocks
    assert b.trend == (16, 16384) and b.pairs == len(DRIFT)
    assert b.ours == pytest.approx(2.0) and b.reference == pytest.approx(2.0)
    assert b.ci is not None and b.ci[0] == pytest.approx(2.0) and b.ci[1] == pytest.approx(2.0)
    assert b.where == "the trend from 16 to 16384 bytes"
    text = render_text(rep)
    assert "new / old, expected ratio (a trend: the ratio at 16384 bytes over the ratio at " \
        "16; reference and ours are that quotient)" in text
    assert "16→16384      2.00×     2.00×  2.00× ±25 %" in text
    assert as_json(rep)["claims"][0]["blocks"][0]["trend"] == [16, 16384]
    # the gap does not close here: the same ratio at both sizes
    result = _judge(spec, {16: 5e7, 16384: 1e9}, {16: 1e8, 16384: 2e9}, DRIFT).results[0]
    assert result.verdict == NOT_REPRODUCED
    assert result.blocks[0].ours == pytest.approx(1.0)
    # five rounds agree as well, but five pairs give no distribution-free 95 % interval:
    # no verdict is decided from them (reproduce measures further rounds)
    rep = _judge(spec, {16: 4.5e7, 16384: 1.8e9}, {16: 1e8, 16384: 2e9}, DRIFT[:5])
    result = rep.results[0]
    assert result.verdict == INCONCLUSIVE and result.blocks[0].ci is None
    assert "too few pairs: n=5" in (result.reason or "")


ENV = Environment(None, {}, {}, {}, (), None)  # the claim's lines use no matrix


def test_check_shows_the_reports_trend(tmp_path: Path) -> None:
    spec = load(tmp_path)
    problems: list[str] = []
    lines = _claim_lines(spec, spec.claims[0], ENV, problems, None)
    assert "          16 bytes: 0.50×" in lines and "       16384 bytes: 1.00×" in lines
    assert "      trend 16 → 16384 bytes: 2.00× (the ratio at 16384 over the ratio at 16) " \
        "meets the claim" in lines
    assert problems == []
    # a trend its own report does not show is a transcription problem
    spec = load(tmp_path, SPEC.replace("ratio: 2.0, trend", "ratio: 0.5, trend"))
    _claim_lines(spec, spec.claims[0], ENV, problems, None)
    assert problems == ["claim gap-closes: the report's own figures give a trend of 2.00× "
                        "from 16 to 16384 bytes, which does not meet it as transcribed"]
