"""Speed containers get Docker's highest CPU weight; other containers keep the default."""

from __future__ import annotations

import json
from pathlib import Path

from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.cell import SPEED_CPU_SHARES
from openssl_matrix.measure.session import Bencher
from openssl_matrix.measure.speedcmd import unwrap_speed
from openssl_matrix.results.tree import ResultsTree

from ..fakes import FakeBackend

# Real -mr output of 1.1.1w (see tests/test_pipeline_fake.py)
MR_STDOUT = "+H:8192\n+F:22:aes-128-cbc:1426407424.00\n"
MR_STDERR = "+DT:aes-128-cbc:1:8192\n+R:174122:aes-128-cbc:1.000000\n"


def test_speed_runs_and_only_they_get_the_speed_weight(fake_matrix: Path,
                                                       tmp_path: Path) -> None:
    m = load_matrix(fake_matrix, default_urls=default_urls)
    backend = FakeBackend(lambda image, command, env: (0, MR_STDOUT, MR_STDERR))
    tree = ResultsTree(tmp_path / "results")
    Builder(m, backend, tree, workdir=tmp_path / "work").build(list(m.variants))
    backend.runs.clear()
    backend.limits.clear()
    out = Bencher(m, backend, tree, engine=backend.engine_info(), git_commit=None).bench(
        m.select("1.1.1w-asm-*"), m.suite("quick"), "auto")
    assert [o.status for o in out] == ["complete"]
    runs = [(unwrap_speed(cmd), lim) for (_, cmd, _), lim in zip(backend.runs, backend.limits,
                                                                  strict=True)]
    speed = [lim for cmd, lim in runs if cmd[:2] == ("openssl", "speed")]
    other = [lim for cmd, lim in runs if cmd[:2] != ("openssl", "speed")]
    assert len(speed) == 2 and other
    assert all(lim.cpu_shares == SPEED_CPU_SHARES for lim in speed)
    assert all(lim.cpu_shares is None for lim in other)
    meta = json.loads((Path(str(out[0].run_dir)) / "meta.json").read_text())
    assert meta["speed_cpu_shares"] == SPEED_CPU_SHARES
