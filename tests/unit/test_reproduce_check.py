"""``invoke matrix reproduce REPORT --check``: every spec in reports/ is checked without
Docker in well under 5 s; a claim its own report contradicts is reported."""

from __future__ import annotations

import time
from pathlib import Path
from typing import NoReturn

import pytest

from openssl_matrix.cli.commands.reproduce import run as cmd_reproduce
from openssl_matrix.cli.shared import EngineFactory
from openssl_matrix.cli.table import flags_of
from openssl_matrix.core.resources import project_reports

from ..fakes import engine_of

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted(p.stem for p in (project_reports()).glob("*.yaml"))


@pytest.fixture
def no_docker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> EngineFactory:
    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError("--check must not reach Docker")

    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(ROOT)
    return engine_of(refuse)


def test_check_is_a_declared_flag_of_reproduce() -> None:
    assert "check" in {f.name for f in flags_of("reproduce")}
    assert "check" not in {f.name for f in flags_of("bench")}


@pytest.mark.parametrize("spec_id", SPECS)
def test_check_each_spec_without_docker(spec_id: str, no_docker: EngineFactory, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    code = cmd_reproduce(target=spec_id, matrix="matrix.yaml",
                                  results=str(tmp_path / "results"), cpu="", force=False,
                                  wait=False, json=False, check=True, engine=no_docker)
    elapsed = time.monotonic() - started
    out = capsys.readouterr().out
    assert code == 0
    assert elapsed < 5, f"--check took {elapsed:.1f} s"
    assert out.startswith(f"Check of {spec_id}:")
    for section in ("The report's own figures against its claims", "Versions (",
                    "Claims that can be judged here", "Plan on this machine",
                    "claims can be judged here; the report's figures meet every claim"):
        assert section in out
    assert not (tmp_path / "results").exists()  # nothing written
    # every version and build of a shipped spec is used (a version entry that only gives
    # a stand-in's checksum, 1.0.0 in openssl-dev-2011-asm-vs-c-aesni, counts as used)
    assert "unused entr" not in out
    # and no build's as_reported names another release than its version entry
    assert "naming another release" not in out


def test_check_reports_a_claim_its_report_contradicts(no_docker: EngineFactory, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      ) -> None:
    text = (project_reports() / "ivy-bridge-aesni-blog.yaml").read_text()
    text = text.replace("    ratio: 2.0\n", "    ratio: 3.0\n", 1)
    spec = tmp_path / "ivy-wrong.yaml"
    spec.write_text(text)
    cmd_reproduce(target=str(spec), matrix="matrix.yaml",
                           results=str(tmp_path / "results"), cpu="", force=False,
                           wait=False, json=False, check=True, engine=no_docker)
    out = capsys.readouterr().out
    assert "8192 bytes: 1.96× does NOT meet the claim" in out
    assert "problem(s) in the spec: check it" in out
    assert "warning: claim evp-aesni-about-twice" in out
    # the CPU model explains the report's 1.96× and says what it predicts here
    assert "2.00× predicted (AES-NI CBC encrypt 5.00 c/B vs vpaes CBC encrypt 10.00 c/B on " \
        "Intel Ivy Bridge); the report has 1.96×: explained" in out


def test_check_as_json(no_docker: EngineFactory, tmp_path: Path,
                       capsys: pytest.CaptureFixture[str]) -> None:
    import json

    cmd_reproduce(target="ivy-bridge-aesni-blog", matrix="matrix.yaml",
                           results=str(tmp_path / "results"), cpu="", force=False,
                           wait=False, json=True, check=True, engine=no_docker)
    data = json.loads(capsys.readouterr().out)
    assert data["spec"] == "ivy-bridge-aesni-blog" and data["problems"] == []
    assert "Plan on this machine" in data["text"]


def test_check_warns_of_a_version_and_a_build_nothing_uses(
        no_docker: EngineFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 36: a version entry no build uses (the 1.1.1t a report's text names beside
    the 1.1.1p its build printed) was accepted silently."""
    text = (project_reports() / "ivy-bridge-aesni-blog.yaml").read_text()
    text = text.replace("versions:\n", "versions:\n  1.1.1t: {}\n", 1)
    text = text.replace("builds:\n", "builds:\n  spare: {version: 1.0.1e}\n", 1)
    spec = tmp_path / "ivy-unused.yaml"
    spec.write_text(text)
    cmd_reproduce(target=str(spec), matrix="matrix.yaml",
                           results=str(tmp_path / "results"), cpu="", force=False,
                           wait=False, json=False, check=True, engine=no_docker)
    out = capsys.readouterr().out
    assert "the report's figures meet every claim as transcribed; 2 unused entries" in out
    assert "  warning: versions.1.1.1t: no build uses it (the builds use 1.0.1e): delete " \
        "it, or name it in a build's version. Where the report's text says 1.1.1t but its " \
        "output printed another version, the output is what ran" in out
    assert "  warning: builds.spare: no measurement uses it" in out
