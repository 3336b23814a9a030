"""Handshake claims in report specs: the spec format, the plan (a ``kind: tls`` suite),
the judging of ``handshake``/``resume`` figures, and the issue-22560 spec in reports/.

The reproduction runs against the fake backend, which answers the TLS suite's script with
real outputs of it from this machine (tests/fixtures/stime/README.md): 1.1.1w with
RSA-2048, server and client on one CPU, and 3.0.20 with RSA-2048 on two CPUs; the made-up
spec pins its measurements the same way, so every figure is what that run printed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.core.resources import project_reports
from openssl_matrix.repro.judge import NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED
from openssl_matrix.repro.resolve import Environment
from openssl_matrix.repro.run import reproduce
from openssl_matrix.repro.spec import OP_BLOCK
from openssl_matrix.repro.specload import load_spec
from openssl_matrix.repro.verdicts import render_text
from openssl_matrix.results.tree import ResultsTree

from ..conftest import local_versions
from ..fakes import FakeBackend

ROOT = Path(__file__).resolve().parents[2]
STIME = Path(__file__).resolve().parents[1] / "fixtures" / "stime"
REPLIES = {"1.1.1w": "1.1.1w--tls--rsa2048--same-core.stdout",
           "3.0.20": "3.0.20--tls--rsa2048--cross-core.stdout"}

SPEC = """
schema: 1
title: A made-up handshake report for the tests
source: {{kind: site, where: nowhere, date: 2023}}
machines:
  m: {{cpu: Made-up CPU}}
versions:
{versions}
builds:
  old: {{version: 1.1.1w}}
  new: {{version: 3.0.20}}
measurements:
  old-full: {{build: old, algorithm: rsa2048, protocol: tls1.2, operation: handshake,
             pinning: same-core, reference: 22600}}
  new-full: {{build: new, algorithm: rsa2048, protocol: tls1.2, operation: handshake,
             reference: 10900}}
  old-resume: {{build: old, algorithm: rsa2048, protocol: tls1.3, operation: resume,
               pinning: same-core}}
  new-resume: {{build: new, algorithm: rsa2048, protocol: tls1.3, operation: resume}}
claims:
  - {{id: half, says: about half, compare: [new-full, old-full], expect: ratio}}
  - {{id: slower, says: slower, compare: [new-full, old-full], expect: slower}}
  - {{id: resume-slower, says: slower, compare: [new-resume, old-resume], expect: slower}}
measure: {{seconds: 1, repeat: 1}}
"""


def tls_reply(image: str, command: Sequence[str], env: Mapping[str, str],
              ) -> tuple[int, str, str]:
    assert command[-1] == "openssl-matrix-tls", command
    version = next(v for v in REPLIES if f"/{v}-" in image)
    return 0, (STIME / REPLIES[version]).read_text(), ""


@pytest.fixture
def spec_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "hs.yaml"
    path.write_text(SPEC.format(versions=local_versions(tmp_path, monkeypatch, "1.1.1w",
                                                        "3.0.20")))
    return path


def test_a_handshake_measurement_is_one_figure_in_connections_per_second(
        spec_path: Path) -> None:
    spec = load_spec(spec_path)
    m = spec.measurements["new-full"]
    assert (m.kind, m.protocol, m.operation, m.pinning, m.unit) == (
        "tls", "tls1.2", "handshake", "cross-core", "conn/s")
    assert m.reference == {OP_BLOCK: 10900.0}
    assert spec.claim_blocks(spec.claims[0]) == (OP_BLOCK,)
    assert spec.reference_ratio(spec.claims[0], OP_BLOCK) == pytest.approx(10900 / 22600)


@pytest.mark.parametrize(("change", "message"), [
    ("protocol: tls1.2, operation: handshake,\n             pinning: same-core",
     "'tls1.4' is not one of tls1.3, tls1.2, tls1.0"),
    ("algorithm: rsa2048, protocol: tls1.2", "'rsa4096' is not a server key"),
    ("reference: 10900", "a TLS figure is one number"),
])
def test_bad_handshake_measurements_say_what_to_write(spec_path: Path, change: str,
                                                      message: str) -> None:
    text = spec_path.read_text()
    bad = {"protocol: tls1.2, operation: handshake,\n             pinning: same-core":
           "protocol: tls1.4, operation: handshake,\n             pinning: same-core",
           "algorithm: rsa2048, protocol: tls1.2": "algorithm: rsa4096, protocol: tls1.2",
           "reference: 10900": "reference: fast"}[change]
    assert change in text
    spec_path.write_text(text.replace(change, bad, 1))
    with pytest.raises(ConfigError, match=message):
        load_spec(spec_path)


def test_protocol_is_refused_on_a_speed_measurement(spec_path: Path) -> None:
    text = spec_path.read_text().replace(
        "  old-full:", "  bulk: {build: old, algorithm: aes-128-cbc, protocol: tls1.2}\n"
        "  old-full:", 1)
    spec_path.write_text(text)
    with pytest.raises(ConfigError, match=r"measurements.bulk.protocol: only used with"):
        load_spec(spec_path)


def test_a_handshake_reproduction_plans_a_tls_suite_and_judges_its_figures(
        spec_path: Path, tmp_path: Path) -> None:
    spec = load_spec(spec_path)
    backend = FakeBackend(tls_reply)
    env = Environment(None, {}, {}, {}, (), None, mirrors=lambda v: [])
    rep = reproduce(spec, env, backend, ResultsTree(tmp_path / "results"))
    tls_runs = [c for _, c, _ in backend.runs if c[-1] == "openssl-matrix-tls"]
    # one container per variant and round (one key, one pinning each). One round is one
    # pair: no 95 % interval (stats.MIN_PAIRS), no verdict, so reproduce measures extra
    # rounds until both sides' 4+4 samples give the interval (stats.compare): 3 more
    assert len(tls_runs) == 2 * 4
    assert "s_time" in tls_runs[0][2] and "-tls1_2" in tls_runs[0][2]
    verdicts = {r.claim.id: r for r in rep.results}
    # the stored runs: 1.1.1w 2272 connections, 3.0.20 1564, over their measured walls
    full = verdicts["half"].blocks[0]
    assert full.reference == pytest.approx(10900 / 22600)
    assert full.ours == pytest.approx(505.1 / 751.9, rel=0.01)
    assert verdicts["half"].verdict == NOT_REPRODUCED
    assert verdicts["slower"].verdict == REPRODUCED
    assert verdicts["resume-slower"].verdict == REPRODUCED  # 1046 against 1904 conn/s
    text = render_text(rep)
    assert "tls1.2 rsa2048 handshake (cross-core)" in text
    assert "conn/s: reference" in text


def test_handshake_figures_the_host_disturbed_are_not_judged(spec_path: Path,
                                                             tmp_path: Path) -> None:
    """The same reproduction on outputs whose own host accounting says contended (0.9.8y's
    busy run, standing in for both versions here): no verdict, and the reason says so."""
    busy = (STIME / "0.9.8y--tls--rsa2048--cross-core--busy.stdout").read_text()
    text = spec_path.read_text()
    text = text.replace("protocol: tls1.2", "protocol: tls1.0").replace(
        "protocol: tls1.3", "protocol: tls1.0").replace("pinning: same-core", "")
    spec_path.write_text(text.replace(",\n             ,", ",").replace(
        ",\n               }", "}").replace(", ,", ","))
    spec = load_spec(spec_path)
    backend = FakeBackend(lambda image, command, env: (0, busy, ""))
    env = Environment(None, {}, {}, {}, (), None, mirrors=lambda v: [])
    rep = reproduce(spec, env, backend, ResultsTree(tmp_path / "results"))
    verdict = next(r for r in rep.results if r.claim.id == "slower")
    assert verdict.verdict == NOT_TESTABLE and verdict.labels.get("contended")
    assert "contended" in (verdict.reason or "")
    assert (verdict.reason or "").startswith("no usable figure for the operation (")
    assert "      conn/s " in render_text(rep)  # the claim's row, in the figure's unit


def test_the_issue_22560_spec_transcribes_its_two_figures() -> None:
    spec = load_spec(project_reports() / "openssl-issue-22560-openresty-cps.yaml")
    assert spec.source.url == "https://github.com/openssl/openssl/issues/22560"
    old, new = spec.measurements["v111-tls12"], spec.measurements["v3-tls12"]
    assert (old.reference, new.reference) == ({OP_BLOCK: 22600.0}, {OP_BLOCK: 10900.0})
    assert {m.kind for m in spec.measurements.values()} == {"tls"}
    assert spec.versions["3.0.11"].stand_in == "3.0.20"


def test_check_describes_tls_and_pkey_runs() -> None:
    """--check's plan line per suite kind (a pkey or tls suite has no masks: it crashed
    with KeyError 'masks' once the versions resolved from the cache)."""
    from openssl_matrix.repro.check import _run_line

    line, runs = _run_line({"kind": "tls", "algorithms": ["rsa2048"], "protocols": ["tls1.2",
                            "tls1.3"], "modes": ["new"], "pinning": ["cross-core"],
                            "seconds": 3})
    assert (line, runs) == ("s_server/s_time tls1.2 tls1.3 -new with rsa2048 keys "
                            "(cross-core)", 2)
    assert _run_line({"kind": "pkey", "algorithms": ["ecdsap521", "ecdhp521"],
                      "seconds": 2}) == ("speed ecdsap521 ecdhp521", 2)


def test_the_command_lines_reproduction_measures_contended_figures_again(
        spec_path: Path, tmp_path: Path) -> None:
    """With the command line's attempts (bench.MAX_ATTEMPTS) a run the host disturbed is
    measured again, as ``bench`` does, and the clean attempt is judged; with the Python
    API's default (no re-measurement) the same host leaves the claim not testable."""
    from openssl_matrix.measure.session import MAX_ATTEMPTS

    busy = (STIME / "0.9.8y--tls--rsa2048--cross-core--busy.stdout").read_text()
    calls: list[str] = []

    def busy_first(image: str, command: Sequence[str], env: Mapping[str, str],
                   ) -> tuple[int, str, str]:
        if command[-1] == "openssl-matrix-tls":
            calls.append(image)
            if calls.count(image) == 1:
                return 0, busy, ""
        return tls_reply(image, command, env)

    spec = load_spec(spec_path)
    env = Environment(None, {}, {}, {}, (), None, mirrors=lambda v: [])
    once = reproduce(spec, env, FakeBackend(busy_first), ResultsTree(tmp_path / "once"))
    assert next(r for r in once.results if r.claim.id == "slower").verdict == NOT_TESTABLE
    calls.clear()
    again = reproduce(spec, env, FakeBackend(busy_first), ResultsTree(tmp_path / "again"),
                      max_attempts=MAX_ATTEMPTS)
    assert len(calls) > len(set(calls))  # each variant's TLS container ran more than once
    assert next(r for r in again.results if r.claim.id == "slower").verdict == REPRODUCED
