"""Interleaved comparisons on real builds (issue 31): 1.1.1w asm against no-asm and a mask
against native, both sides in one process of the interleaving harness, in 5-ms windows.

What holds whatever the host's noise: every pair is filed with its raw output and both
sides' versions; each algorithm either has a ratio inside its own interval or says how
many of its blocks a preempted window cost; MD5 (the mask turns off AES-NI and the SHA
extensions, which MD5 does not use) comes out within 10 % of 1 against its own native
run; and SHA-256's assembler beats its C build.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from openssl_matrix.engine.backend import DockerBackend
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.session import Bencher
from openssl_matrix.results.interleaved import INTERLEAVED_DIR, all_pairs
from openssl_matrix.results.tree import ResultsTree

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]


def test_interleaved_pairs_of_real_builds(tmp_path: Path) -> None:
    m = load_matrix(ROOT / "matrix.yaml", default_urls=default_urls)
    backend = DockerBackend()
    tree = ResultsTree(tmp_path / "results")
    variants = m.select("1.1.1w-*")
    builder = Builder(m, backend, tree, workdir=tmp_path / "work")
    assert all(o.status in ("built", "up-to-date") for o in builder.build(variants, jobs=1))
    suite = replace(m.suite("blog-8k"), algorithms=("md5", "sha256"), repeat=1,
                    interleave=1)
    bencher = Bencher(m, backend, tree, engine=backend.engine_info(), git_commit=None)
    outcomes = bencher.bench(variants, suite, "auto")
    assert {o.status for o in outcomes} <= {"complete", "partial"}
    filed = all_pairs(tree.root)
    kinds = sorted(f.record.kind for f in filed)
    # native/mask for each build, asm/no-asm natively and masked
    assert kinds == ["asm/no-asm", "asm/no-asm", "mask/native", "mask/native"], kinds
    for f in filed:
        rec = f.record
        assert (f.folder / "raw.txt").read_text().count("+PAIR:w:") > 0
        assert rec.exit_code == 0, rec.errors
        assert (rec.top.version or "").startswith("OpenSSL 1.1.1w")
        assert (rec.bottom.version or "").startswith("OpenSSL 1.1.1w")
        assert [r.algorithm for r in rec.algorithms] == ["md5", "sha256"]
        for row in rec.algorithms:
            assert row.windows > 0
            e = row.estimate
            if e is None:  # every block had a preempted window: said, not guessed
                assert row.windows >= 4
                continue
            assert e.blocks > 0 and e.preempted >= 0
            if e.ci_low is not None and e.ci_high is not None:
                assert e.ci_low <= e.ratio <= e.ci_high
            # set against the session's other pairs: a share of its side's best, and
            # low only below 0.9 (whether a neighbour held it down is the host's to say)
            assert row.rate_share is not None and 0 < row.rate_share <= 1
            assert row.low == (row.rate_share < 0.9)
            for aside in row.set_aside:  # measured again: the other run kept
                assert aside.rate_share is None or aside.rate_share <= 1
        md5, sha = rec.row("md5"), rec.row("sha256")
        assert md5 is not None and sha is not None
        if rec.kind == "mask/native" and md5.ratio is not None:
            assert 0.9 < md5.ratio < 1.1, md5
        if rec.kind == "asm/no-asm" and rec.top.mask == "native" and sha.ratio is not None:
            assert sha.ratio > 1.1, sha
    # the session's pairs are in the tree, as JSON the report reads back
    assert all(json.loads((f.folder / "record.json").read_text()) == f.record.to_json()
               for f in filed)
    assert (tree.root / INTERLEAVED_DIR).is_dir()
    # and the bench hands them to its summary
    assert len(bencher.interleaved[suite.name]) == 4
