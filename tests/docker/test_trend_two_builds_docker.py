"""A trend claim judged from real runs of two builds (issue 36): OpenSSL 3.0.20 against
1.1.1w, SHA-256 through EVP, from 16 to 8192 bytes.

3.x pays more per call than 1.1.1 (provider look-ups and a heavier EVP layer), so its
gap to 1.1.1 should be larger at 16 bytes, where a call hashes one block, than at 8192,
where the compression function dominates: the ratio 3.0 / 1.1.1 at 8192 over the same
ratio at 16 is then above 1. The spec is this test's own (no report's figures: it has
no reference figures), written beside a copy of the repository's matrix. Both variants
are the default matrix's images (1.1.1w-asm-x86_64, 3.0.20-asm-x86_64). Which verdict
the claim gets depends on the CPU and on the host's noise, so the test asserts that the
claim was judged as a trend of both builds — from their interleaved ratios at the two
sizes where the pair harness gave both an interval (docs/reports.md, trend claims), else
from paired rounds — not which verdict it got.
(Run here on 2026-12-03, an Intel Xeon VM with other sessions' tests beside it: once
judged from 3 pairs; twice every figure of a side was contended and the test skipped.)
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from openssl_matrix.core.statuses import USABLE_STATUSES

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]

SPEC = {
    "schema": 1,
    "title": "SHA-256 per-call overhead, 3.0 against 1.1.1 (a trend across block sizes)",
    "source": {"kind": "other", "where": "tests/docker/test_trend_two_builds_docker.py",
               "notes": "a claim written for this test, no report's figures"},
    "machines": {"here": {"cpu": "not named (this test's own claim)"}},
    "versions": {"1.1.1w": {}, "3.0.20": {}},
    "builds": {"v111": {"version": "1.1.1w"}, "v30": {"version": "3.0.20"}},
    "measurements": {
        "v111-sha256": {"build": "v111", "algorithm": "sha256", "evp": True},
        "v30-sha256": {"build": "v30", "algorithm": "sha256", "evp": True},
    },
    "claims": [{"id": "gap-closes", "says": "3.0's gap to 1.1.1 in SHA-256 is larger at 16 "
                "bytes than at 8192 (its per-call overhead)",
                "compare": ["v30-sha256", "v111-sha256"], "expect": "faster",
                "trend": [16, 8192]}],
    "measure": {"seconds": 1, "repeat": 3},
}


def test_a_trend_claim_is_judged_from_runs_of_two_builds(tmp_path: Path) -> None:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text((ROOT / "matrix.yaml").read_text())
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "two-build-trend.yaml").write_text(
        yaml.safe_dump(SPEC, sort_keys=False))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(["invoke", "matrix", "reproduce", "two-build-trend",
                          f"--matrix={matrix}", f"--results={tmp_path / 'results'}", "--json"],
                         cwd=ROOT, env=env, text=True, capture_output=True, timeout=2400)
    assert out.returncode == 0, out.stderr[-4000:]
    data = json.loads(out.stdout)
    # both builds were measured here, each its own variant
    built = {n: m["version_built"] for n, m in data["measurements"].items()}
    assert built == {"v111-sha256": "1.1.1w", "v30-sha256": "3.0.20"}, built
    [claim] = data["claims"]
    assert claim["id"] == "gap-closes"
    if claim["verdict"] == "not testable here":
        # a host so busy that the guards left out every figure of a side (seen here while
        # other sessions built and tested, all 18 runs were contended): no pair to judge, and
        # the verdict says so rather than judging from contended figures
        assert claim["reason"].startswith("no usable pair of rounds"), claim
        left_out = set(claim["figure_labels"]) - set(USABLE_STATUSES)
        assert left_out, claim  # the guards' labels (contended ...) that left figures out
        pytest.skip(f"no round with usable figures at 16 and 8192 bytes on a side: "
                    f"figures left out as {', '.join(sorted(left_out))} (a busy host)")
    assert claim["verdict"] in ("reproduced", "not reproduced", "inconclusive"), claim
    [block] = claim["blocks"]
    assert block["trend"] == [16, 8192]
    assert block["reference_ratio"] is None  # the claim carries no report's figures
    # ours: the quotient of the two builds' ratios, a positive and finite figure; a
    # generous range (3.0 neither 20 times faster nor slower per call than 1.1.1)
    assert block["pairs"] >= 1 and 0.05 < block["our_ratio"] < 20, block
    # both builds run SHA-256 through EVP, 1.1.0 or newer: the pair harness times the claim
    # at both sizes, and the trend is the quotient of those two interleaved ratios, unless
    # a size's run kept no block of windows (a host that preempted every window): then the
    # rounds decide and the verdict says why
    if claim["ratio_basis"] == "interleaved":
        assert block["basis"] == "interleaved" and block["ci_95"] is not None, block
        lo, hi = block["ci_95"]
        assert lo <= block["our_ratio"] <= hi, block
        assert "--16/record.json" in block["interleaved_record"], block
        assert "--8192/record.json" in block["interleaved_record"], block
    else:
        assert claim["ratio_basis"] == "rounds" and claim["ratio_note"], claim
