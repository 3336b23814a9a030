"""Trend claims across thread counts (issue 36, item 3): "3.0's gap widens from 1 to 2
threads" is a claim on the ratio of two library-harness measurements at one thread count
against the same ratio at another. A measurement with ``threads: [1, 2]`` has a figure per
count, keyed like a speed row's block sizes, and the claim (``trend: {threads: [1, 2]}``)
is judged by the block-size trend's code: paired rounds, a 95 % interval.

The run folders are built the way ``test_pkey`` builds them (meta.json and figures.json).
Each figure record is the harness's own: the one ``parse_library`` reads from a real
output of the 1.1.1w harness (``tests/fixtures/libbench/1.1.1w-fetch-digest-t1.txt``).
Its rate is then scaled per build, thread count and round: those rates are this test's
synthetic inputs, not measurements, and so are the spec's reference figures.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.measure.benchfigure import BenchFigure
from openssl_matrix.measure.hostinfo import CpuInfo
from openssl_matrix.measure.library import parse_library
from openssl_matrix.repro.check import _claim_lines
from openssl_matrix.repro.judge import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Ours,
    Reproduction,
    collect,
    judge,
)
from openssl_matrix.repro.plan import PlannedMeasurement, plan
from openssl_matrix.repro.resolve import Environment, HostFacts, ResolvedVersion
from openssl_matrix.repro.spec import ReportSpec
from openssl_matrix.repro.specload import load_spec
from openssl_matrix.repro.verdicts import as_json, render_text

from .test_library import FIX, _inv

#: Two releases' fetch-digest at 1 and 2 threads (the figures are this test's own, not a
#: report's): 3.0 at half of 1.1.1's rate with one thread, a quarter with two.
SPEC = """
schema: 1
title: the gap widens with threads
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
  old: {build: old, operation: library, algorithm: fetch-digest, threads: [1, 2],
        reference: {1: 4000000, 2: 8000000}}
  new: {build: new, operation: library, algorithm: fetch-digest, threads: [2, 1],
        reference: {1: 2000000, 2: 2000000}}
claims:
  - {id: gap-widens, says: 3.0's gap widens from 1 to 2 threads, compare: [new, old],
     expect: ratio, ratio: 0.5, trend: {threads: [1, 2]}, depends_on: threads}
"""


def load(tmp_path: Path, text: str = SPEC) -> ReportSpec:
    path = tmp_path / "thread-trend.yaml"
    path.write_text(text, encoding="utf-8")
    return load_spec(path)


def test_a_thread_trend_loads_with_its_two_counts(tmp_path: Path) -> None:
    spec = load(tmp_path)
    new = spec.measurements["new"]
    assert new.thread_counts == (1, 2) and new.threads == 2  # sorted; the largest
    assert new.reference == {1: 2e6, 2: 2e6}  # keyed by thread count
    claim = spec.claims[0]
    assert claim.trend == (1, 2) and claim.trend_of == "threads"
    assert spec.claim_blocks(claim) == (1, 2)
    assert spec.reference_trend(claim) == pytest.approx(0.5)  # (2/8) / (2/4)
    # a block-size trend says what it runs across too
    speed = load(tmp_path, SPEC.replace("operation: library, algorithm: fetch-digest, "
                                        "threads: [1, 2],\n        reference: {1: 4000000, "
                                        "2: 8000000}", "algorithm: sha256")
                 .replace("operation: library, algorithm: fetch-digest, threads: [2, 1],\n"
                          "        reference: {1: 2000000, 2: 2000000}", "algorithm: sha256")
                 .replace("trend: {threads: [1, 2]}, depends_on: threads", "trend: [16, 8192]"))
    assert speed.claims[0].trend_of == "bytes"


@pytest.mark.parametrize(("before", "after", "field", "words"), [
    # a count one side has no figure at: the field, and what to write
    ("threads: [2, 1],\n        reference: {1: 2000000, 2: 2000000}", "threads: 1",
     "claims[0] (gap-widens).trend.threads", "new has no figure at 2 thread(s): its threads "
     "are 1"),
    ("threads: [2, 1]", "threads: 1", "measurements.new.reference",
     "a figure per thread count needs several counts in threads (it names 1)"),
    ("trend: {threads: [1, 2]}", "trend: {threads: [1, 4]}",
     "claims[0] (gap-widens).trend.threads", "new has no figure at 4 thread(s)"),
    ("trend: {threads: [1, 2]}", "trend: {threads: [2, 2]}",
     "claims[0] (gap-widens).trend.threads", "with itself"),
    ("trend: {threads: [1, 2]}", "trend: {threads: [1]}",
     "claims[0] (gap-widens).trend.threads", "two thread counts"),
    ("trend: {threads: [1, 2]}", "trend: {thread: [1, 2]}",
     "claims[0] (gap-widens).trend", "expected {threads: [from, to]}"),
    # a library figure has no block sizes
    ("trend: {threads: [1, 2]}", "trend: [1, 2]", "claims[0] (gap-widens).trend",
     "written trend: {threads: [FROM, TO]}"),
    ("trend: {threads: [1, 2]}", "trend: {threads: [1, 2]}, block_sizes: [16]",
     "claims[0] (gap-widens).block_sizes", "drop block_sizes"),
    ("depends_on: threads", "depends_on: cpu", "claims[0] (gap-widens).trend",
     "judged as measured on one machine"),
    # several counts are compared by a trend, one figure a side otherwise
    ("trend: {threads: [1, 2]}, depends_on: threads", "depends_on: threads",
     "claims[0] (gap-widens).compare", "new has figures at 1, 2 threads"),
    # a reference per thread count, each a count of threads
    ("reference: {1: 2000000, 2: 2000000}", "reference: {1: 2000000, 4: 2000000}",
     "measurements.new.reference.4", "not one of this measurement's thread counts (1, 2)"),
    ("reference: {1: 2000000, 2: 2000000}", "reference: 2000000",
     "measurements.new.reference", "a figure per thread count"),
    ("threads: [2, 1]", "threads: [2, 2]", "measurements.new.threads", "twice"),
    ("reference: {1: 2000000, 2: 2000000}", "reference: {1: 2000000, 2: -1}",
     "measurements.new.reference.2", "a library figure is one number, operations per "
     "second, got -1"),
])
def test_a_thread_trend_that_cannot_be_judged_is_refused(
        tmp_path: Path, before: str, after: str, field: str, words: str) -> None:
    assert SPEC.count(before) == 1
    text = SPEC.replace(before, after)
    with pytest.raises(ConfigError) as err:
        load(tmp_path, text)
    message = str(err.value)  # with its hint
    assert f"{field}: " in message and words in message, message


def test_the_error_for_a_missing_count_says_what_to_write(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load(tmp_path, SPEC.replace("threads: [2, 1],\n        reference: {1: 2000000, "
                                    "2: 2000000}", "threads: 1"))
    assert err.value.hint is not None
    assert "write threads: [1, 2] in measurements.new" in err.value.hint


def test_a_trend_across_threads_of_speed_figures_is_refused(tmp_path: Path) -> None:
    text = SPEC.replace("operation: library, algorithm: fetch-digest, threads: [1, 2],\n"
                        "        reference: {1: 4000000, 2: 8000000}", "algorithm: sha256")
    with pytest.raises(ConfigError) as err:
        load(tmp_path, text)
    assert "old is not a library figure" in str(err.value)


def test_the_plan_runs_the_harness_at_every_count_named(tmp_path: Path) -> None:
    facts = HostFacts(CpuInfo("GenuineIntel", "a 2-core test CPU", ("aes",), None, 2), {},
                      (False, "test"), (False, "test"))
    spec = load(tmp_path)
    resolved = {v: ResolvedVersion(v, v, False, "0" * 64, (), None, None)
                for v in spec.versions}
    planned, groups, _ = plan(spec, resolved, facts)
    assert all(p.problem is None for p in planned.values())
    for g in groups.values():
        assert g.definition["kind"] == "library" and g.definition["threads"] == [1, 2]
    # a count above the host's CPUs is not measured, and says why
    spec = load(tmp_path, SPEC.replace("[1, 2]", "[1, 4]").replace("2: 8000000", "4: 8000000")
                          .replace("threads: [2, 1]", "threads: [4, 1]")
                          .replace("2: 2000000", "4: 2000000"))
    planned, _, _ = plan(spec, resolved, facts)
    problem = planned["new"].problem
    assert problem is not None and problem.startswith("needs 4 threads each on its own CPU")


def _harness_record() -> BenchFigure:
    """A figure record as the library suite writes it: parse_library's reading of a real
    1.1.1w harness output (fetch-digest, one thread)."""
    recs, _, _, _ = parse_library(_inv("fetch-digest", 1),
                                  (FIX / "1.1.1w-fetch-digest-t1.txt").read_text())
    [rec] = recs
    return rec


def _runs(tmp_path: Path, build: str, rates: dict[int, float],
          drift: tuple[float, ...]) -> list[Path]:
    """One run folder per round, a figure per thread count: the harness's record with its
    rate replaced by ``rates[threads] * drift[round]`` (synthetic), and the record at a
    count the measurement does not name (8 threads), which must be left out."""
    base = _harness_record()
    runs = []
    for i, d in enumerate(drift):
        run = tmp_path / build / f"{i + 1:04d}"
        run.mkdir(parents=True)
        (run / "meta.json").write_text(json.dumps({"status": "complete", "host": {}}))
        figures = [{**base.to_json(), "threads": t, "invocation": f"lib--fetch-digest--t{t}",
                    "ops_per_s": rate * d} for t, rate in {**rates, 8: 1.0}.items()]
        (run / "figures.json").write_text(json.dumps(figures))
        runs.append(run)
    return runs


#: A machine whose speed drifts by 30 % between rounds (both builds alike within a round);
#: six rounds, the fewest whose paired trends give a 95 % interval (stats.MIN_PAIRS).
DRIFT = (1.0, 0.7, 1.3, 0.85, 1.1, 0.95)


def _judge(tmp_path: Path, spec: ReportSpec, new: dict[int, float], old: dict[int, float],
           drift: tuple[float, ...] = DRIFT) -> Reproduction:
    planned = {n: PlannedMeasurement(n, variant="v", version="3.0.20", suite="s",
                                     mask="default") for n in spec.measurements}
    resolved = {v: ResolvedVersion(v, v, False, None, (), None, None) for v in spec.versions}
    ours: dict[str, Ours] = {
        name: collect(spec.measurements[name], planned[name],
                      _runs(tmp_path / name, name, rates, drift))
        for name, rates in (("new", new), ("old", old))}
    result = judge(spec, spec.claims[0], planned, ours, resolved)
    return Reproduction(spec, resolved, planned, ours, [result], {}, [], "")


def test_our_figures_are_keyed_by_thread_count(tmp_path: Path) -> None:
    spec = load(tmp_path)
    rep = _judge(tmp_path, spec, {1: 1.6e6, 2: 1.6e6}, {1: 3.4e6, 2: 6.8e6})
    new = rep.ours["new"]
    assert new.blocks == [1, 2]  # the 8-thread figure is not this measurement's
    assert new.values(1) == pytest.approx([1.6e6 * d for d in DRIFT])


def test_a_thread_trend_is_judged_from_paired_rounds(tmp_path: Path) -> None:
    spec = load(tmp_path)
    # 3.0 does not scale from 1 to 2 threads, 1.1.1 does: the gap widens to half of what
    # it was (synthetic rates, scaled round by round by the machine's drift)
    rep = _judge(tmp_path, spec, {1: 1.6e6, 2: 1.6e6}, {1: 3.4e6, 2: 6.8e6})
    result = rep.results[0]
    assert result.verdict == REPRODUCED, result.reason
    (b,) = result.blocks
    assert b.trend == (1, 2) and b.trend_of == "threads" and b.pairs == len(DRIFT)
    assert b.ours == pytest.approx(0.5) and b.reference == pytest.approx(0.5)
    assert b.ci is not None and b.ci == pytest.approx((0.5, 0.5))
    assert b.where == "the trend from 1 to 2 threads"
    text = render_text(rep)
    assert "new / old, expected ratio (a trend: the ratio at 2 threads over the ratio at 1; " \
        "reference and ours are that quotient)" in text
    assert "library fetch-digest at 1, 2 thread(s)" in text
    assert "2 thr, op/s: reference" in text
    data = as_json(rep)
    assert [f["threads"] for f in data["measurements"]["new"]["figures"]] == [1, 2]
    block = data["claims"][0]["blocks"][0]
    assert block["trend"] == [1, 2] and block["trend_of"] == "threads"
    # both scale alike: the gap does not widen, the trend is 1
    result = _judge(tmp_path / "same", spec, {1: 1.6e6, 2: 3.2e6},
                    {1: 3.4e6, 2: 6.8e6}).results[0]
    assert result.verdict == NOT_REPRODUCED
    assert result.blocks[0].ours == pytest.approx(1.0)


def test_a_thread_trend_with_noisy_pairs_gets_an_interval(tmp_path: Path) -> None:
    spec = load(tmp_path)
    # the rounds disagree (synthetic): 3.0's two-thread rate moves on its own by ±40 %
    planned = {n: PlannedMeasurement(n, variant="v", version="3.0.20", suite="s",
                                     mask="default") for n in spec.measurements}
    resolved = {v: ResolvedVersion(v, v, False, None, (), None, None) for v in spec.versions}
    ours = {"old": collect(spec.measurements["old"], planned["old"],
                           _runs(tmp_path / "old", "old", {1: 3.4e6, 2: 6.8e6}, (1.0,) * 6))}
    new = Ours()
    new.per_run = [(f"r{i}", {1: 1.6e6, 2: 1.6e6 * f}) for i, f in
                   enumerate((0.6, 1.4, 0.7, 1.3, 0.8, 1.2))]
    new.statuses = {"ok": 12}
    ours["new"] = new
    result = judge(spec, spec.claims[0], planned, ours, resolved)
    (b,) = result.blocks
    assert b.pairs == 6 and b.ci is not None and b.ci[0] < 0.5 < b.ci[1]
    assert result.verdict == INCONCLUSIVE
    assert result.reason is not None and "at the trend from 1 to 2 threads" in result.reason


ENV = Environment(None, {}, {}, {}, (), None)  # the claim's lines use no matrix


def test_check_shows_the_reports_thread_trend(tmp_path: Path) -> None:
    spec = load(tmp_path)
    problems: list[str] = []
    lines = _claim_lines(spec, spec.claims[0], ENV, problems, None)
    assert "           1 threads: 0.50×" in lines and "           2 threads: 0.25×" in lines
    assert "      trend 1 → 2 threads: 0.50× (the ratio at 2 over the ratio at 1) meets the " \
        "claim" in lines
    assert problems == []
    spec = load(tmp_path, SPEC.replace("ratio: 0.5, trend", "ratio: 2.0, trend"))
    _claim_lines(spec, spec.claims[0], ENV, problems, None)
    assert problems == ["claim gap-widens: the report's own figures give a trend of 0.50× "
                        "from 1 to 2 threads, which does not meet it as transcribed"]
