"""A trend claim judged from real runs: the Ivy Bridge blog's two EVP tables (AES-NI on,
and masked off) with a claim on how their ratio moves from 16 to 8192 bytes.

The spec is the shipped ivy-bridge-aesni-blog with its claims replaced by one trend
claim, written beside a copy of the repository's matrix (reports/ beside the matrix is
where a user's spec goes). Its figures, transcribed in the shipped spec from the post:
AES-NI over masked is 305049.90k / 148711.29k = 2.051 at 16 bytes and 333987.84k /
170519.21k = 1.959 at 8192, a trend of 0.955. On a newer core than the post's the gap
grows with the block size instead; what the verdict is depends on the CPU and the noise,
so the test asserts that the claim was judged as a trend from paired rounds, not which
verdict it got.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from .test_integration_docker import cpu_has

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "openssl_matrix" / "resources" / "reports" / "ivy-bridge-aesni-blog.yaml"


@pytest.mark.skipif(not cpu_has("aes"), reason="this CPU has no AES-NI (no 'aes' flag)")
def test_a_trend_claim_is_judged_from_real_runs(tmp_path: Path) -> None:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text((ROOT / "matrix.yaml").read_text())
    spec = yaml.safe_load(SHIPPED.read_text())
    spec["measurements"] = {k: spec["measurements"][k] for k in ("evp-aesni", "evp-masked")}
    spec["claims"] = [{"id": "gap-narrows", "says": "AES-NI's lead over the masked path is "
                       "a little smaller at 8192 bytes than at 16",
                       "compare": ["evp-aesni", "evp-masked"], "expect": "ratio",
                       "ratio": 0.955, "tolerance": 0.1, "trend": [16, 8192]}]
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "ivy-trend.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(["invoke", "matrix", "reproduce", "ivy-trend", f"--matrix={matrix}",
                          f"--results={tmp_path / 'results'}", "--json"], cwd=ROOT, env=env,
                         text=True, capture_output=True, timeout=2400)
    assert out.returncode == 0, out.stderr[-4000:]
    data = json.loads(out.stdout)
    [claim] = data["claims"]
    assert claim["id"] == "gap-narrows"
    if claim["verdict"] == "not testable here":  # steal made a side's every figure contended
        assert claim["reason"], claim
        return
    assert claim["verdict"] in ("reproduced", "not reproduced", "inconclusive"), claim
    [block] = claim["blocks"]
    assert block["trend"] == [16, 8192]
    assert block["reference_ratio"] == pytest.approx((333987.84 / 170519.21)
                                                     / (305049.90 / 148711.29), abs=1e-3)
    # ours: from the rounds' paired figures at both sizes, a positive, finite quotient
    assert block["pairs"] >= 1 and 0.2 < block["our_ratio"] < 20, block
