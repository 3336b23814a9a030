"""Without a Docker engine the docker-marked tests skip, all for one reason; under CI=1
they fail instead (tests/conftest.py). Shown on a real docker test, with DOCKER_HOST
pointing at a socket that does not exist."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ["tests/docker/test_bench_unbuilt_docker.py", "tests/docker/test_tls_docker.py"]
REASON = "no Docker engine answers, so the docker-marked tests cannot run"


def run_without_engine(ci: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/openssl-matrix.sock", "CI": ci,
           "PYTHONPATH": str(ROOT)}
    env.pop("DOCKER_CONTEXT", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *TESTS], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def test_without_an_engine_docker_tests_skip_for_one_reason() -> None:
    out = run_without_engine("")
    assert out.returncode == 0, out.stdout[-3000:]
    skipped = [line for line in out.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 1 and REASON in skipped[0], out.stdout[-3000:]
    assert "2 skipped" in out.stdout


def test_under_ci_they_fail_instead_and_say_why() -> None:
    out = run_without_engine("1")
    assert out.returncode != 0
    assert "2 errors" in out.stdout and "skipped" not in out.stdout, out.stdout[-3000:]
    assert f"{REASON} (`bash .ci/setup` starts one); under CI=1 that is a failure" \
        in out.stdout
    assert "unix:///nonexistent/openssl-matrix.sock" in out.stdout
