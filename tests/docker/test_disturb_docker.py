"""Disturbances, for real: busy sibling containers and a second bench on the same engine.

The image is the default matrix's ``1.1.1w-asm-x86_64`` (built here if missing); each
bench is one speed run of EVP aes-128-cbc at 8192 bytes per round. About a minute with
the image present. The full table is ``python benchmarks/disturb.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from openssl_matrix.core import statuses
from openssl_matrix.engine.backend import DockerBackend
from openssl_matrix.engine.hostlock import HostLock, engine_key
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.session import Bencher
from openssl_matrix.results.tree import ResultsTree

from ..scripts import load_script
from ..values import num

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]
VARIANT = "1.1.1w-asm-x86_64"


disturb = load_script("disturb")


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    tmp = tmp_path_factory.mktemp("disturb")
    data: dict[str, Any] = yaml.safe_load((ROOT / "matrix.yaml").read_text())
    data["suites"] = {"one": {"algorithms": ["aes-128-cbc"], "seconds": 1, "bytes": 8192}}
    data["default_suite"] = "one"
    path = tmp / "matrix.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    m = load_matrix(path, default_urls=default_urls)
    tree = ResultsTree(tmp / "build")
    [out] = Builder(m, DockerBackend(), tree, workdir=tmp / "work").build(m.select(VARIANT))
    assert out.status != "failed", out.error
    yield path, tmp


def trees_with_build(path: Path, tmp: Path, *names: str) -> list[ResultsTree]:
    m = load_matrix(path, default_urls=default_urls)
    trees = [ResultsTree(tmp / n) for n in names]
    for t in trees:
        Builder(m, DockerBackend(), t, workdir=tmp / "work").build(m.select(VARIANT))
    return trees


def test_figures_beside_busy_sibling_containers_are_flagged(
        setup: tuple[Path, Path]) -> None:
    path, tmp = setup
    [tree] = trees_with_build(path, tmp, "siblings")
    m = load_matrix(path, default_urls=default_urls)
    backend = DockerBackend()
    engine = backend.engine_info()
    # the loops start once this test holds the engine (never while it waits for it)
    with HostLock(engine_key(engine)).measuring("test siblings"), \
            disturb.sibling_loops(os.cpu_count() or 2, f"test{os.getpid()}"):
        bencher = Bencher(m, backend, tree, engine=engine, git_commit=None, settle=0,
                          max_attempts=2, take_host_lock=False)
        outs = bencher.bench(m.select(VARIANT), m.suite("one"), "auto", repeat=2)
    figures = [f for o in outs for f in o.figures]
    assert len(figures) == 2
    for f in figures:
        assert f["status"] == statuses.CONTENDED, f
        assert num(f["foreign_cores"]) > 0.5 and "other work kept" in f["detail"]


def test_two_benches_started_together_never_measure_at_the_same_time(
        setup: tuple[Path, Path]) -> None:
    path, tmp = setup
    a, b = trees_with_build(path, tmp, "bench-a", "bench-b")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-m", "invoke", "matrix", "bench", "--cpu=auto",
                               f"--only={VARIANT}", "--repeat=2", "--settle=0",
                               f"--matrix={path}", f"--results={t.root}"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for t in (a, b)]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    runs_a, runs_b = disturb.speed_intervals(a), disturb.speed_intervals(b)
    assert len(runs_a) >= 2 and len(runs_b) >= 2
    assert disturb.overlaps(runs_a, runs_b) == 0.0
    waited = [o for o in outputs if "waiting for the host's measurement lock" in o]
    assert len(waited) == 1 and "held by bench one" in waited[0]
    # --no-wait refuses while another bench holds the engine
    holder = subprocess.Popen([sys.executable, "-m", "invoke", "matrix", "bench",
                               "--cpu=auto", f"--only={VARIANT}", "--repeat=6", "--settle=0",
                               f"--matrix={path}", f"--results={a.root}"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    gate = HostLock(engine_key(DockerBackend().engine_info())).gate
    try:
        t0 = time.monotonic()
        while f"pid {holder.pid} " not in gate.read_text() and time.monotonic() - t0 < 120:
            time.sleep(0.2)
        refused = subprocess.run([sys.executable, "-m", "invoke", "matrix", "bench",
                                  "--cpu=auto", f"--only={VARIANT}", "--no-wait",
                                  f"--matrix={path}", f"--results={b.root}"], cwd=ROOT,
                                 env=env, capture_output=True, text=True, timeout=300)
    finally:
        holder.communicate(timeout=600)
    assert refused.returncode == 9, refused.stdout + refused.stderr
    assert "another measurement holds this Docker engine" in refused.stderr
