"""``evp: unknown`` (issue 36, item 4): a report that does not say whether speed ran with
-evp is transcribed as such; the plan measures both methods, and the verdict says
whether it holds both ways or which way it assumed."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest
import yaml

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.measure.hostinfo import CpuInfo
from openssl_matrix.repro.check import check
from openssl_matrix.repro.judge import (
    NOT_REPRODUCED,
    NOT_TESTABLE,
    REPRODUCED,
    ClaimResult,
    Ours,
    judge,
)
from openssl_matrix.repro.plan import PlannedMeasurement, plan
from openssl_matrix.repro.resolve import Environment, HostFacts, ResolvedVersion
from openssl_matrix.repro.specload import load_spec
from openssl_matrix.repro.unknowns import NO_EVP, fold, with_twins

ROOT = Path(__file__).resolve().parents[2]

#: A digest comparison of two releases whose report does not say whether it used -evp
#: (the shape issue 36 describes; the figures are this test's own, not a report's).
SPEC = """
schema: 1
title: digests of two releases, method not stated
source: {kind: site, where: a test}
machines:
  box: {cpu: not named in the report}
versions:
  9.9.8: {sha256: SHA_OLD}
  9.9.9: {sha256: SHA_NEW}
builds:
  old: {version: 9.9.8}
  new: {version: 9.9.9}
measurements:
  old-sha256: {build: old, algorithm: sha256, evp: unknown, reference: {16: 100000.00k}}
  new-sha256: {build: new, algorithm: sha256, evp: unknown, reference: {16: 50000.00k}}
  new-gcm: {build: new, algorithm: aes-128-gcm, evp: unknown, elapsed: unknown,
            reference: {16: 50000.00k}}
claims:
  - {id: half-at-16, says: the new release is half as fast at 16 bytes,
     compare: [new-sha256, old-sha256], expect: ratio, block_sizes: [16]}
"""


def fake_tarball(folder: Path, version: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"x\n"
        info = tarfile.TarInfo(f"openssl-{version}/Configure")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    (folder / f"openssl-{version}.tar.gz").write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Environment]:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    text = SPEC
    for version, key in (("9.9.8", "SHA_OLD"), ("9.9.9", "SHA_NEW")):
        text = text.replace(key, fake_tarball(tmp_path / "tarballs", version))
    spec_path = tmp_path / "digests.yaml"
    spec_path.write_text(text, encoding="utf-8")
    matrix = yaml.safe_load((ROOT / "matrix.yaml").read_text(encoding="utf-8"))
    matrix["sources_dirs"] = [str(tmp_path / "tarballs")]
    mpath = tmp_path / "matrix.yaml"
    mpath.write_text(yaml.safe_dump(matrix, sort_keys=False), encoding="utf-8")
    return spec_path, Environment.from_matrix(mpath)


FACTS = HostFacts(CpuInfo("GenuineIntel", "Some Future Processor", ("aes",), 2000.0, 2, 6, 250),
                  {"uname": "Linux test"}, (False, "no AF_ALG in this test"),
                  (False, "no /dev/crypto"))


def test_evp_unknown_is_recorded_and_assumes_evp(setup: tuple[Path, Environment]) -> None:
    spec = load_spec(setup[0])
    m = spec.measurements["new-sha256"]
    assert m.unknown == ("evp",) and m.evp is True
    # speed reaches GCM only through -evp: the method is known after all
    gcm = spec.measurements["new-gcm"]
    assert gcm.unknown == () and gcm.evp is True
    assert gcm.elapsed is None  # elapsed: unknown is the same as leaving it out


def test_a_setting_that_is_neither_known_nor_unknown_is_refused(
        setup: tuple[Path, Environment], tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(setup[0].read_text().replace("evp: unknown, reference: {16: 100000.00k}",
                                 "evp: maybe, reference: {16: 100000.00k}"))
    with pytest.raises(ConfigError) as err:
        load_spec(path)
    assert "measurements.old-sha256.evp: expected true, false or unknown, got 'maybe'" \
        in str(err.value)
    assert "measures both ways" in str(err.value)
    path.write_text(setup[0].read_text().replace("elapsed: unknown", "elapsed: sometimes"))
    with pytest.raises(ConfigError) as err:
        load_spec(path)
    assert "measurements.new-gcm.elapsed: expected true, false or unknown" in str(err.value)
    assert "runs here always use -elapsed" in str(err.value)


def test_the_plan_measures_both_methods(setup: tuple[Path, Environment]) -> None:
    spec, twins = with_twins(load_spec(setup[0]))
    assert twins == {"half-at-16" + NO_EVP: "half-at-16"}
    twin = next(c for c in spec.claims if c.id in twins)
    assert (twin.numerator, twin.denominator) == ("new-sha256" + NO_EVP, "old-sha256" + NO_EVP)
    assert spec.measurements["old-sha256" + NO_EVP].evp is False
    resolved = {v: ResolvedVersion(v, v, False, None, (), None, None) for v in spec.versions}
    planned, groups, _ = plan(spec, resolved, FACTS, "here")
    paths = sorted((g.definition["evp"], tuple(sorted(g.measurements)))
                   for g in groups.values())
    assert paths == [(False, ("new-sha256" + NO_EVP,)), (False, ("old-sha256" + NO_EVP,)),
                     (True, ("new-sha256",)), (True, ("old-sha256",))]
    assert planned["new-gcm"].skipped  # no claim compares it; and it has no twin
    assert "new-gcm" + NO_EVP not in spec.measurements


def test_check_says_the_method_is_assumed_and_plans_both(setup: tuple[Path, Environment],
                                                         tmp_path: Path) -> None:
    spec_path, env = setup
    text = check(load_spec(spec_path), env, tmp_path / "results", FACTS).text()
    assert "method: the report does not say whether new-sha256 and old-sha256 ran speed " \
        "with -evp: both are measured, with and without -evp" in text
    assert "speed -evp sha256 -bytes 16" in text and "speed sha256 -bytes 16" in text
    assert "half-at-16: can be judged (this machine)" in text
    assert "half-at-16@no-evp" not in text.split("Claims that can be judged")[1].split(
        "Plan on")[0]  # the twin is planned, not listed as a claim of its own


def _ours(value: float) -> Ours:
    # four runs a side: the two sets' distribution-free interval (stats.compare); three
    # would give no interval (nor would three same-round pairs), and no verdict
    o = Ours()
    o.per_run = [(f"run{i}", {16: value * (1 + 0.001 * i)}) for i in range(4)]
    o.statuses = {"ok": 4}
    return o


def _verdicts(spec_path: Path, ratios: dict[str, float]) -> list[ClaimResult]:
    spec, twins = with_twins(load_spec(spec_path))
    planned = {n: PlannedMeasurement(n, variant="v", version="9.9.9", suite="s", blocks=(16,))
               for n in spec.measurements}
    resolved = {v: ResolvedVersion(v, v, False, None, (), None, None) for v in spec.versions}
    ours = {n: _ours(1e8) for n in spec.measurements}
    for name, ratio in ratios.items():
        ours[name] = _ours(1e8 * ratio)
    return fold([judge(spec, c, planned, ours, resolved) for c in spec.claims], twins)


def test_the_verdict_says_whether_it_holds_both_ways(setup: tuple[Path, Environment]) -> None:
    # half as fast with -evp, and without
    results = _verdicts(setup[0], {"new-sha256": 0.5, "new-sha256" + NO_EVP: 0.5})
    assert [r.claim.id for r in results] == ["half-at-16"]
    r = results[0]
    assert r.verdict == REPRODUCED
    assert "measured both ways, the claim is reproduced either way" in (r.method or "")


def test_the_verdict_names_the_method_it_assumed(setup: tuple[Path, Environment]) -> None:
    # half as fast with -evp only: without -evp the two releases are equal
    results = _verdicts(setup[0], {"new-sha256": 0.5})
    r = results[0]
    assert r.verdict == REPRODUCED
    assert r.method == (
        "the report does not say whether speed ran with -evp; this verdict assumes it did: "
        "with -evp it is reproduced (ours 0.50× at the last size), without -evp "
        f"{NOT_REPRODUCED} (ours 1.00× at the last size)")


def test_a_claim_testable_neither_way_says_so(setup: tuple[Path, Environment]) -> None:
    spec, twins = with_twins(load_spec(setup[0]))
    results = [ClaimResult(c, NOT_TESTABLE, reason="a test") for c in spec.claims]
    (r,) = fold(results, twins)
    assert r.method == ("the report does not say whether speed ran with -evp; it is not "
                        "testable here either way")
