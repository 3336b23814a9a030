"""The PTS-comparable suite for real: every pts/openssl result on 1.1.1w and 3.0.20.

The default matrix's ``1.1.1w-asm-x86_64`` and ``3.0.20-asm-x86_64`` images (built here if
missing, reused by content hash) run pts/openssl-3.6.0's whole menu the PTS way
(``speed -multi <every CPU> -seconds S``), at 1 s instead of PTS's 30 and one round (PTS's
three-runs rule is tests/fake/test_pts.py's): about a minute and a half with the images
present. Each figure PTS reports must be there, labelled with its PTS result and unit.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openssl_matrix.core import statuses
from openssl_matrix.matrix import pts
from openssl_matrix.measure.session import Bencher

from ..conftest import built_matrix

pytestmark = pytest.mark.docker
VARIANTS = "1.1.1w-asm-x86_64,3.0.20-asm-x86_64"


def test_every_pts_result_on_both_versions(tmp_path: Path) -> None:
    suites = {"pts-t": {"kind": "pts", "algorithms": list(pts.OPTIONS), "seconds": 1}}
    _, m, tree, backend = built_matrix(tmp_path, suites, "pts-t", VARIANTS)
    bencher = Bencher(m, backend, tree, engine=backend.engine_info(), git_commit=None,
                      settle=0)
    outs = bencher.bench(m.select(VARIANTS), m.suite("pts-t"), "auto", repeat=1)
    titles = {r.title: r for o in pts.OPTIONS.values() for r in o.results}
    assert len(titles) == 8  # RSA4096 sign/s and verify/s, and one per other entry
    assert sorted(o.variant for o in outs) == sorted(VARIANTS.split(","))
    for o in outs:
        assert o.status == "complete", (o.variant, o.error)
        labelled = {f["pts_result"]: f for f in o.figures if f.get("pts_result")}
        assert set(labelled) == set(titles), (o.variant, sorted(labelled))
        for title, f in labelled.items():
            want = titles[title]
            assert f["pts_unit"] == want.unit and f["block_size"] == want.block_size, f
            assert f["multi"] == len(os.sched_getaffinity(0)) and f["path"] == "pts", f
            value = f["ops_per_s"] if want.block_size is None else f["bytes_per_s"]
            assert value and value > 0, f
            # a busy host (CI's has steal) files a figure contended, a core the probe saw
            # shared shared-core; it is never dropped
            assert f["status"] in ("ok", *statuses.DISTURBED, statuses.NOISY), f
        # the figures PTS reads are a handful of what speed printed, not all of it
        assert len(o.figures) > len(labelled)
