"""`reproduce` of a claim with `profile: true`, the engine faked at its seam: after the
bench rounds, both sides' cells are profiled (the profile wrapper answered around the
real perf capture of tests/fixtures/perf) and compared through `profile --compare`'s
code, the profiles and the comparison are filed under `_profiles/`, and the verdict's
text and JSON name the top functions. The speed outputs are test_reproduce_fake's."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from openssl_matrix.measure import perfrun
from openssl_matrix.repro.judge import Reproduction
from openssl_matrix.repro.resolve import Environment
from openssl_matrix.repro.run import reproduce
from openssl_matrix.repro.specload import load_spec
from openssl_matrix.repro.verdicts import as_json, render_text
from openssl_matrix.results.tree import ResultsTree

from ..conftest import make_tarball
from ..fakes import FakeBackend
from .test_profile_fake import SCRIPT, _stat
from .test_reproduce_fake import fake_speed

SPEC = """
schema: 1
title: A made-up report for the tests
source: {{kind: blog, where: nowhere, date: 2020}}
machines:
  m: {{cpu: Made-up CPU, clock_ghz: 2.0, flags: [aes]}}
versions:
  1.1.1w:
    sha256: {sha}
    urls: [file://{src}/openssl-1.1.1w.tar.gz]
  1.1.1v:
    stand_in: 1.1.1w
    stand_in_why: the same SHA-256 code
builds:
  new: {{version: 1.1.1w}}
  old: {{version: 1.1.1v}}
measurements:
  sha-new: {{build: new, algorithm: sha256, reference: {{16: 50000.00k}}}}
  sha-old: {{build: old, algorithm: sha256, reference: {{16: 50000.00k}}}}
claims:
  - {{id: same-sha, says: no difference, compare: [sha-new, sha-old], expect: same,
      block_sizes: [16], profile: {profile}}}
measure: {{seconds: 1, repeat: 2}}
"""


def answer(image: str, command: Sequence[str], env: Mapping[str, str]
           ) -> tuple[int, str, str]:
    """The bench's speed runs as test_reproduce_fake answers them; a profiled run as the
    profile wrapper prints it (1,000,000 digests in 3 s, the host quiet)."""
    if len(command) > 3 and command[3] == perfrun.WRAPPER_NAME:
        stderr = (_stat(0, 300, 0, 3.0) + _stat(1, 300, 0, 3.0)
                  + "+DT:sha256:3:16\n+R:1000000:sha256:3.000000\n"
                  "+CPUTIMES\n0m0.01s 0m0.00s\n0m2.98s 0m0.02s\n")
        return 0, ("+H:16\n+F:25:sha256:5333333.33\n" + perfrun.SCRIPT_MARKER + "\n"
                   + SCRIPT), stderr
    return fake_speed(image, command, env)


def _reproduce(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profile: str
               ) -> tuple[Reproduction, FakeBackend, Path]:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "src"
    src.mkdir()
    sha = make_tarball(src / "openssl-1.1.1w.tar.gz", "1.1.1w")
    path = tmp_path / "made-up.yaml"
    path.write_text(SPEC.format(sha=sha, src=src, profile=profile))
    env = Environment(None, {}, {}, {}, (), None, mirrors=lambda v: [])
    backend = FakeBackend(answer)
    tree = ResultsTree(tmp_path / "results")
    return reproduce(load_spec(path), env, backend, tree), backend, tree.root


def test_a_profiled_claim_names_the_functions_behind_its_ratio(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rep, backend, root = _reproduce(tmp_path, monkeypatch, "true")
    data = as_json(rep)
    [claim] = data["claims"]
    record = claim["profiled"]
    assert claim["profile"] is True and "error" not in record
    # both sides ran under perf in a profile image built FROM the variant's image
    profiled = [c for _, c, _ in backend.runs if len(c) > 3 and c[3] == perfrun.WRAPPER_NAME]
    assert len(profiled) == 2
    assert any("profile-1.1.1w-asm-x86_64" in t for t in backend.builds)
    # A is the claim's second side, B its first; the same variant, so named by measurement
    assert (record["a"]["measurement"], record["b"]["measurement"]) == ("sha-old", "sha-new")
    assert record["a"]["variant"] == record["b"]["variant"] == "1.1.1w-asm-x86_64"
    assert record["cell"] == "sha256:16" and 3 <= len(record["top"]) <= 5
    for side in (record["a"], record["b"]):
        assert Path(side["profile"]).is_relative_to(root / "_profiles" / "1.1.1w-asm-x86_64")
        meta = json.loads((Path(side["profile"]) / "meta.json").read_text())
        assert meta["operations"] == 1_000_000 and meta["status"] == "ok"
        assert meta["cell"]["seconds"] == 3  # at least 3 s, whatever measure.seconds
    diff = json.loads((Path(record["folder"]) / "diff.json").read_text())
    assert Path(record["folder"]).parent.name == "sha-old-vs-sha-new-speed-sha256-16"
    assert [r["name"] for r in diff["functions"][:len(record["top"])]] == [
        r["name"] for r in record["top"]]
    text = render_text(rep)
    assert "      where (profiles of both sides, sha256:16; ns per operation): sha-new " in text
    assert record["top"][0]["name"] in text
    # the reproduction's own folder keeps it too
    filed = json.loads((Path(str(rep.out_dir)) / "verdicts.json").read_text())
    assert filed["claims"][0]["profiled"]["top"] == json.loads(json.dumps(record["top"]))


def test_without_profile_nothing_runs_under_perf(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rep, backend, root = _reproduce(tmp_path, monkeypatch, "false")
    assert not [c for _, c, _ in backend.runs if len(c) > 3 and c[3] == perfrun.WRAPPER_NAME]
    assert as_json(rep)["claims"][0]["profiled"] is None
    assert not (root / "_profiles").exists()
