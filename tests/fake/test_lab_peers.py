"""Engines of one lab ship to each other (lab.run_peers → commands._peers) and split the
builds between them (claims.py), with the container engine faked at its seam.

`invoke matrix build --cpu=lab-a,lab-b,lab-arm` on three cold fake engines (only the base
image): the two x86_64 engines build the toolchain once and every variant once between
them, and each receives from the other what it did not build; the aarch64 engine cannot
run their images, so it neither waits for them nor receives anything, and builds all of
its own. The local engine is unreachable: a warning, not a failure.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from openssl_matrix.cli.table import dispatch
from openssl_matrix.cli.worker import thread_lab
from openssl_matrix.core.errors import LAB_EXIT, BuildError, DockerUnavailable
from openssl_matrix.engine.buildclaims import BuildClaims
from openssl_matrix.images.sources import default_urls
from openssl_matrix.lab import run as lab
from openssl_matrix.lab.run import EngineJob, plan_jobs
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.results.tree import LAB_ENV, ResultsTree

from ..fakes import FakeBackend, Handlers, engine_of

PROFILES = """  lab-a:
    description: x86_64 engine A
    vendor: AuthenticAMD
    docker_host: ssh://bench@a.lab
  lab-b:
    description: x86_64 engine B
    vendor: AuthenticAMD
    docker_host: tcp://b.lab:2376
  lab-arm:
    description: an aarch64 engine
    vendor: ARM
    docker_host: ssh://bench@arm.lab
"""
ONLY = "*-x86_64"


class SlowFake(FakeBackend):
    """A fake engine whose builds take a moment, so that the engines overlap, and whose
    images are as small as the blobs it ships (the cost model then ships them)."""

    def __init__(self, name: str, arch: str = "x86_64") -> None:
        super().__init__()
        self.info.update(id=f"ID-{name}", name=f"host-{name}", endpoint=f"fake://{name}",
                         arch=arch)
        self.lock = threading.Lock()
        self.failing = False  # every variant's build fails (the toolchain's does not)
        self.tried: list[str] = []

    def build(self, context: Path, tag: str, **kwargs: Any) -> str:
        time.sleep(0.3)
        self.tried.append(tag)
        if self.failing and "toolchain" not in tag:
            raise BuildError(f"fake: the build of {tag} failed")
        with self.lock:
            self.sizes[tag] = 100
            return super().build(context, tag, **kwargs)


@pytest.fixture
def three(fake_matrix: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
          ) -> tuple[Path, Path, dict[str, SlowFake], Handlers]:
    fake_matrix.write_text(fake_matrix.read_text() + PROFILES)  # profiles: comes last
    engines = {"ssh://bench@a.lab": SlowFake("a"), "tcp://b.lab:2376": SlowFake("b"),
               "ssh://bench@arm.lab": SlowFake("arm", arch="aarch64")}

    def backend(base_url: str | None = None, **_: Any) -> SlowFake:
        if base_url is None:
            raise DockerUnavailable("cannot reach the local Docker engine (fake)")
        return engines[base_url]

    table = thread_lab(engine_of(backend), claim_poll=0.05)
    monkeypatch.setenv("OPENSSL_MATRIX_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv(LAB_ENV, "")
    return fake_matrix, tmp_path / "results", engines, table


def test_each_worker_knows_the_other_engines_of_its_run(fake_matrix: Path) -> None:
    fake_matrix.write_text(fake_matrix.read_text() + PROFILES)
    m = load_matrix(fake_matrix, default_urls=default_urls)
    jobs = plan_jobs(m, "build", ["lab-a", "lab-b", "ryzen"], {})
    assert [j.peers for j in jobs] == [
        (("lab-b", "tcp://b.lab:2376"), ("ryzen", "local")),
        (("lab-a", "ssh://bench@a.lab"), ("ryzen", "local")),
        (("lab-a", "ssh://bench@a.lab"), ("lab-b", "tcp://b.lab:2376"))]
    assert EngineJob.from_json(jobs[0].to_json()) == jobs[0]
    assert lab.run_peers() == (), "outside a lab: no peers"


def test_a_cold_lab_builds_each_image_once_per_architecture_and_ships_the_rest(
        three: tuple[Path, Path, dict[str, SlowFake], Handlers],
        capsys: pytest.CaptureFixture[str]) -> None:
    matrix, tree, engines, table = three
    a, b, arm = engines.values()
    flags = {"matrix": str(matrix), "results": str(tree), "cpu": "lab-a,lab-b,lab-arm",
             "only": ONLY, "jobs": 0, "force": False, "images": ""}
    dispatch("build", "", flags, table)
    err = capsys.readouterr().err

    m = load_matrix(matrix, default_urls=default_urls)
    wanted = {v.id for v in m.select(ONLY)}
    assert len(wanted) >= 2

    def variants(tags: list[str]) -> list[str]:
        return sorted(t.split("/")[1].split(":")[0] for t in tags if "toolchain" not in t)

    x86 = variants(a.builds) + variants(b.builds)
    assert sorted(x86) == sorted(wanted), "every variant built once by the x86_64 pair"
    assert a.builds and b.builds and variants(a.builds) and variants(b.builds), \
        "they split the work"
    toolchains = [t for t in a.builds + b.builds if "toolchain" in t]
    assert len(toolchains) == 1, "one toolchain for both: their digests match"
    for e in (a, b):
        assert {v for v in wanted if any(t.startswith(f"openssl-matrix/{v}:")
                                         for t in e.images)} == wanted
    assert sorted(variants(a.loaded)) == variants(b.builds)
    assert sorted(variants(b.loaded)) == variants(a.builds)
    assert variants(arm.builds) == sorted(wanted) and arm.loaded == [], \
        "the aarch64 engine builds its own and never waits for the others"
    logs = "".join(p.read_text() for p in tree.glob("_lab/*-build/lab-[ab].log"))
    assert "is building openssl-matrix/toolchain:" in logs and "waiting to receive it" in logs
    assert "warning: the local engine is not reachable: no images are shipped from it" in err
    # the arrivals name the peer engine they came from
    ships = [json.loads(p.read_text()) for p in tree.glob("_builds/*/*/shipped-*.json")]
    froms = {s["from_engine"]["id"] for s in ships if "toolchain" not in s["tag"]}
    assert froms == {"ID-a", "ID-b"}
    assert not list(tree.glob("_builds/_claims/*.json")), "no claim left behind"


def test_a_claim_whose_process_is_gone_is_taken_over(tmp_path: Path) -> None:
    me = {"id": "ID-b", "arch": "x86_64"}
    folder = ResultsTree(tmp_path).claim_files()
    claims = BuildClaims(folder, me, lambda engine: True, poll=0.01)
    folder.dir.mkdir(parents=True)
    dead = 2 ** 22 + 12345  # above the default pid_max
    assert folder.dir == tmp_path / "_builds" / "_claims"

    def path(tag: str) -> Path:
        return folder.path(claims.key(tag))
    path("t").write_text(json.dumps({"tag": "t", "engine": {"id": "ID-a"},
                                            "pid": dead, "since": "then"}))
    with claims.building("t") as holder:
        assert holder is None, "stale: this engine builds it"
        assert json.loads(path("t").read_text())["pid"] == os.getpid()
        other = BuildClaims(folder, {"id": "ID-a", "arch": "x86_64"}, lambda engine: True)
        with other.building("t") as theirs:
            assert theirs is not None and theirs["engine"]["id"] == "ID-b"
        arm = BuildClaims(folder, {"id": "ID-c", "arch": "aarch64"}, lambda engine: True)
        with arm.building("t") as mine:
            assert mine is None, "another architecture: its own claim"
    assert not path("t").exists()
    # a waiter returns when the claim goes
    with claims.building("u") as holder:
        assert holder is None
        theirs_claim = json.loads(path("u").read_text())
    BuildClaims(folder, {"id": "ID-a", "arch": "x86_64"}, lambda e: True).wait(theirs_claim, "u")


def test_an_engine_waiting_for_a_peer_whose_build_fails_builds_the_image_itself(
        three: tuple[Path, Path, dict[str, SlowFake], Handlers]) -> None:
    from invoke.exceptions import Exit

    matrix, tree, engines, table = three
    a, b, _arm = engines.values()
    a.failing = True
    flags = {"matrix": str(matrix), "results": str(tree), "cpu": "lab-a,lab-b",
             "only": ONLY, "jobs": 0, "force": False, "images": ""}
    with pytest.raises(Exit) as exc:
        dispatch("build", "", flags, table)
    assert exc.value.code == LAB_EXIT + 0b1, "only lab-a failed"
    m = load_matrix(matrix, default_urls=default_urls)
    wanted = {v.id for v in m.select(ONLY)}
    held = {v for v in wanted if any(t.startswith(f"openssl-matrix/{v}:") for t in b.images)}
    assert held == wanted, "b built what a failed to build"
    tried = {t for t in a.tried if "toolchain" not in t}
    assert tried and tried <= set(b.builds), "what a claimed and failed, b built after it"
    assert b.loaded == [] or all("toolchain" in t for t in b.loaded)
    assert not list(tree.glob("_builds/_claims/*.json"))
