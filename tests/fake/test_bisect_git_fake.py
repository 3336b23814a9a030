"""``invoke matrix bisect --git`` and ``bisect --run`` against the fake engine: commits of
a git repository the test makes are built from their ``git archive``, the commit where the
figure moved is named with its subject, and ``--run`` answers ``git bisect run`` with 0, 1,
125 or 128.

The speed output is the fake reproduce test's (the real ``-mr`` format of 1.1.1w), scaled
here per commit: 1.00 before the commit "aes: a slower loop", 0.70 from it on, made up for
the logic under test, with a ±1 % wobble by call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from openssl_matrix.cli.shared import handlers
from openssl_matrix.core.errors import BuildError

from ..conftest import make_tarball
from ..fakes import FakeBackend, Responder, engine_of
from ..unit.test_gitsource import commit, git
from .test_bisect_fake import scaled_speed

_TAG = re.compile(r"openssl-matrix/3\.0\.20-g(?P<c>[0-9a-f]{12})-")
FIGURE = "fast:aes-128-cbc:8192"


def commit_speed_base(slow: set[str]) -> Callable[[str], float]:
    """An image's figure scale: 0.70 for the commits in ``slow``, else 1.00."""

    def base(image: str) -> float:
        m = _TAG.search(image)
        assert m is not None, image
        return 0.70 if m["c"] in slow else 1.0

    return base


def commit_speed(slow: set[str]) -> Responder:
    """fake_speed's output (and the pair harness's), every figure at 0.70 for the
    commits in ``slow``."""
    return scaled_speed(commit_speed_base(slow))


class BrokenCommit(FakeBackend):
    def __init__(self, broken: str, responder: Responder) -> None:
        super().__init__(responder)
        self.broken = broken

    def build(self, context: Path, tag: str, **kwargs: object) -> str:
        if f"-g{self.broken}-" in tag:
            raise BuildError("make failed: crypto/aes/aes_core.c:1: error: fake")
        return super().build(context, tag, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, list[str]]:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "src"
    src.mkdir()
    sha = make_tarball(src / "openssl-3.0.20.tar.gz", "3.0.20")
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(f"""versions:
  3.0.20: {{sha256: {sha}, official: false, urls: [file://{src}/openssl-3.0.20.tar.gz]}}
suites:
  fast:
    algorithms: [aes-128-cbc]
    evp: true
    seconds: 1
    bytes: 8192
    masks:
      - {{name: native}}
""")
    tree = tmp_path / "openssl"
    tree.mkdir()
    git(tree, "init", "-q", "-b", "master")
    shas = [commit(tree, {"VERSION.dat": "MAJOR=3\nMINOR=0\nPATCH=20\n",
                          "Configure": "fake Configure\n"}, "the release")]
    for i, subject in enumerate(("aes: tidy", "aes: a slower loop", "doc: typo", "ssl: x")):
        shas.append(commit(tree, {"crypto/aes/aes_core.c": f"int a; /* {i} */\n"}, subject))
    return matrix, tree, [s[:12] for s in shas]


def run(backend: FakeBackend, matrix: Path, tree: Path, results: Path, **flags: Any) -> int:
    handler = handlers(engine_of(lambda: backend))["bisect"]
    args: dict[str, Any] = {"target": "", "matrix": str(matrix), "results": str(results),
                            "figure": FIGURE, "good": "", "bad": "", "build": "", "cpu": "",
                            "wait": False, "json": False, "allow_plain_tcp": False,
                            "git": str(tree)}
    return int(handler(**{**args, **flags}))


def test_a_commit_bisection_names_the_commit_and_its_subject(
        setup: tuple[Path, Path, list[str]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    matrix, tree, shas = setup
    backend = FakeBackend(commit_speed(set(shas[2:])))
    assert run(backend, matrix, tree, tmp_path / "r", good=shas[0], bad=shas[-1],
               json=True) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "moved"
    (move,) = doc["moves"]
    assert (move["before"], move["after"]) == (shas[1], shas[2])
    assert doc["commits"][shas[2]]["subject"] == "aes: a slower loop"
    # each commit built once from its archive, as a variant of its own
    built = [t for t in backend.builds if "-g" in t]
    assert len(built) == len(set(built)) and all(_TAG.search(t) for t in built)
    assert backend.buildkit == built  # a bisection shares a compiler cache by default


def test_git_bisect_run_exit_codes(setup: tuple[Path, Path, list[str]], tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    matrix, tree, shas = setup
    backend = FakeBackend(commit_speed(set(shas[2:])))
    results = tmp_path / "r"
    flags = {"good": shas[0], "bad": shas[-1], "run": True}
    git(tree, "checkout", "-q", shas[1])
    assert run(backend, matrix, tree, results, **flags) == 0
    assert "like-good (basis interleaved: 1 interleaved run(s)" in capsys.readouterr().out
    git(tree, "checkout", "-q", shas[3])
    assert run(backend, matrix, tree, results, **flags) == 1
    assert "like-bad (basis interleaved" in capsys.readouterr().out
    # where the harness gives no ratio, the call decides from rounds and says why
    rounds = FakeBackend(scaled_speed(commit_speed_base(set(shas[2:])), pairs=False))
    assert run(rounds, matrix, tree, results, **flags) == 1
    out = capsys.readouterr().out
    assert "like-bad (basis rounds" in out and "decided from rounds: the pair harness" in out
    broken = BrokenCommit(shas[2], commit_speed(set(shas[2:])))
    git(tree, "checkout", "-q", shas[2])
    assert run(broken, matrix, tree, results, **flags) == 125  # git bisect skip
    assert "fake" in capsys.readouterr().out
    # a reference that is not there: git's run must stop, the commit is not judged
    assert run(backend, matrix, tree, results, good="no-such-tag", bad=shas[-1],
               run=True) == 128
