"""A speed container keeps its figure while other containers load the CPUs.

Real 1.1.1w (the default matrix's asm variant, built by the other Docker tests too),
real containers: two busy-looping containers stand in for a `docker build` beside a
bench. With Docker's default CPU weight the speed run gets its equal share of the CPUs
and its figure drops; with the weight the tool gives speed runs it keeps (nearly) a
whole core.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from openssl_matrix.engine.backend import DockerBackend, RunLimits
from openssl_matrix.engine.engineinfo import EngineInfo
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.cell import SPEED_CPU_SHARES
from openssl_matrix.measure.session import Bencher
from openssl_matrix.results.tree import ResultsTree

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]
SPEED = ["openssl", "speed", "-elapsed", "-mr", "-seconds", "1", "-bytes", "8192", "-evp",
         "aes-128-cbc"]


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> str:
    m = load_matrix(ROOT / "matrix.yaml", default_urls=default_urls)
    tree = ResultsTree(tmp_path_factory.mktemp("results"))
    backend = DockerBackend()
    v = m.select("1.1.1w-asm-x86_64")
    outcome = Builder(m, backend, tree, workdir=tmp_path_factory.mktemp("work")).build(v)[0]
    assert outcome.status in ("built", "up-to-date"), outcome.error
    return Bencher(m, backend, tree, engine=EngineInfo(), git_commit=None).image_for(v[0])[0]


def figure(stdout: str) -> float:
    line = next(x for x in stdout.splitlines() if x.startswith("+F:"))
    return float(line.split(":")[3])


def test_the_weight_reaches_the_container(image: str) -> None:
    res = DockerBackend().run(image, ["/bin/sh", "-c", "cat /sys/fs/cgroup/cpu/cpu.shares "
                                      "2>/dev/null || cat /sys/fs/cgroup/cpu.weight"],
                              limits=RunLimits(timeout=60, cpu_shares=SPEED_CPU_SHARES))
    assert res.exit_code == 0, res.stderr
    value = int(res.stdout.split()[0])
    # cgroup v1 shows the shares as given; v2 maps 2..262144 onto weight 1..10000
    assert value in (SPEED_CPU_SHARES, 10000)


@pytest.fixture
def busy_containers(image: str) -> Iterator[None]:
    """Two containers spinning at Docker's default weight, one per core here."""
    ids = []
    try:
        for _ in range(2):
            out = subprocess.run(["docker", "run", "-d", "--rm", "--network", "none", image,
                                  "/bin/sh", "-c", "while :; do :; done"],
                                 capture_output=True, text=True, check=True)
            ids.append(out.stdout.strip())
        yield
    finally:
        for cid in ids:
            subprocess.run(["docker", "rm", "-f", cid], capture_output=True)


def test_speed_runs_keep_their_figure_beside_busy_containers(image: str,
                                                             busy_containers: None) -> None:
    backend = DockerBackend()
    default: list[float] = []
    weighted: list[float] = []
    # three runnable containers on two cores: about 2/3 of a core at equal weight,
    # about a whole core at the speed weight (1.5x). The best of each side, since a
    # neighbour the guest cannot see only ever slows a run; a batch whose every weighted
    # run a shared core slowed (15-40 % on a noisy VM, issue 31) is followed by another,
    # up to three, the best of all batches compared (a weight that does not reach the
    # container leaves the two sides alike however many batches run)
    for _ in range(3):
        for _ in range(3):
            for shares, into in ((None, default), (SPEED_CPU_SHARES, weighted)):
                res = backend.run(image, SPEED,
                                  limits=RunLimits(timeout=120, cpu_shares=shares))
                assert res.exit_code == 0, res.stderr
                into.append(figure(res.stdout))
        if max(weighted) > 1.15 * max(default):
            break
    assert max(weighted) > 1.15 * max(default), (weighted, default)
