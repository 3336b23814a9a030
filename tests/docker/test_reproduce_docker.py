"""`invoke matrix reproduce` and `invoke matrix report` as a user types them, for real.

Reproduces the Ivy Bridge AES-NI blog: OpenSSL 1.0.1e cannot be downloaded on a machine
that reaches only Debian's mirror, so its declared stand-in 1.1.1w is built (the default
matrix's 1.1.1w-asm-x86_64 image: shared with the other Docker tests) and
`openssl speed -elapsed -evp aes-128-cbc` runs with AES-NI on and masked, three times.
Then the report of that results tree is opened in headless Chromium.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ..browser import chromium, open_page
from ..unit.test_report_browser import PAGE_FACTS
from .test_integration_docker import cpu_has

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]


def invoke(*args: str, timeout: float = 2400) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(["invoke", "matrix", *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=timeout)


def assert_verdict_follows_intervals(claim: dict[str, Any]) -> None:
    """A "faster" claim's verdict is its blocks' intervals' (judge.interval_verdict), not
    a word the test expects: reproduced when every interval lies at or above the band,
    not reproduced when one lies wholly below it, else inconclusive. The host's noise can
    widen an interval across the band (issue 31: a noisy VM); it cannot move the verdict
    off the intervals shown. A block without an interval (too few pairs of rounds)
    decides nothing: the claim is then inconclusive at best, and says why."""
    assert claim["basis"] == "measured" and claim["expect"] == "faster", claim
    low = 1 + claim["tolerance"]
    decisions: list[bool | None] = []
    for b in claim["blocks"]:
        if b["ci_95"] is None:
            assert b["basis"] == "rounds" and b["no_interval"], b
            decisions.append(None)
            continue
        lo, hi = b["ci_95"]
        assert lo <= b["our_ratio"] <= hi, b
        decisions.append(True if lo >= low else False if hi < low else None)
    want = "reproduced" if all(d is True for d in decisions) else \
        "not reproduced" if any(d is False for d in decisions) else "inconclusive"
    assert claim["verdict"] == want, (want, claim)
    if want == "inconclusive":
        assert "straddles" in claim["reason"] or "no 95 % interval" in claim["reason"], claim


@pytest.mark.skipif(not cpu_has("aes"), reason="this CPU has no AES-NI (no 'aes' flag)")
def test_reproduce_ivy_bridge_blog_then_report(tmp_path: Path) -> None:
    results = tmp_path / "results"
    out = invoke("reproduce", "ivy-bridge-aesni-blog", "--results", str(results), "--json")
    assert out.returncode == 0, out.stderr[-4000:]
    data = json.loads(out.stdout)
    version = data["versions"]["1.0.1e"]
    if version["stand_in"]:
        assert version["release_built"] == "1.1.1w"
        assert "not obtainable here" in version["problem"]
    else:  # a machine that could download 1.0.1e built it
        assert version["release_built"] == "1.0.1e"
    claims = {c["id"]: c for c in data["claims"]}
    runs = {k: len(m["runs"]) for k, m in data["measurements"].items()}

    # AES-NI through EVP is clearly faster than masked off, at every block size
    faster = claims["evp-aesni-faster"]
    # steal made a side's every figure contended, and no interleaved block had the CPU
    if faster["verdict"] == "not testable here":
        assert "no usable figure" in faster["reason"], faster
        return
    assert [b["block_size"] for b in faster["blocks"]] == [16, 64, 256, 1024, 8192]
    big = faster["blocks"][-1]
    assert big["reference_ratio"] == pytest.approx(1.9587, abs=1e-3)
    # both sides are EVP AES-128-CBC on one build, a mask against native: measured again
    # interleaved (issue 31), both in one process in alternating 5-ms windows, so a
    # neighbour slows both alike and the interval stays narrow where the rounds' did not
    # (they once gave "inconclusive" at 2.06x-3.32x against the band >= 1.5x)
    inter = [b for b in faster["blocks"] if b["basis"] == "interleaved"]
    for b in inter:  # each with its interval and its record in the tree
        assert b["ci_95"] is not None and (results / b["interleaved_record"]).is_file(), b
    if len(inter) == len(faster["blocks"]):
        assert faster["ratio_basis"] == "interleaved", faster
    else:
        # a size without an interleaved interval (too few blocks kept, even by thread CPU
        # time, or a failed run): the rounds decide there, and say why
        assert faster["ratio_note"], faster
    assert_verdict_follows_intervals(faster)
    # AES-NI faster than the masked path at every size (2-4x: a side slowed 40 % by a
    # neighbour still leaves it faster), and well above the band at 8192 bytes (3.3x)
    assert all(b["our_ratio"] > 1 for b in faster["blocks"]), faster
    assert big["our_ratio"] > 1.5, big
    if big["basis"] == "rounds":
        # pairs: runs where both sides have a usable figure, at most the fewer side's runs
        # (rounds, follow-ups and extra rounds for an inconclusive claim: the host's noise)
        assert 1 <= big["pairs"] <= min(runs["evp-aesni"], runs["evp-masked"]), (big, runs)
    # the low-level path is not the harness's: judged from rounds, saying so
    assert claims["no-evp-no-difference"]["ratio_basis"] == "rounds"
    assert "low-level (non-EVP) path" in claims["no-evp-no-difference"]["ratio_note"]
    # "about twice": a verdict with our numbers, whichever it is on this CPU. Its size is
    # the CPU's (issue 16): on another core it is judged against the CPU model, and the
    # verdict explains our ratio from it (here, a Zen: about 4x predicted)
    twice = claims["evp-aesni-about-twice"]
    assert twice["depends_on"] == "cpu"
    assert all(b["our_ratio"] is not None for b in twice["blocks"])
    if twice["basis"] == "cpu model" and twice["model"]:
        # three outcomes from the ratio's interval (issue 27): a straddle is inconclusive,
        # where it used to be called "not reproduced"
        assert twice["verdict"] in ("reproduced", "not reproduced", "inconclusive")
        assert twice["model"].startswith("holds on Intel Core i5-3317U (Ivy Bridge) by the "
                                         "model (1.96× reported, 2.00× predicted")
        # the model is checked on our own core first (issue 27): where our ratio is off
        # the model's, the per-core constants it explains our ratio with are calibrated
        # from our runs, and said so; where it fits, it says so. Calibrating needs a
        # round with a usable figure: on a host busy enough every round is contended
        # (2026-12-06 here: 54 of 54 EVP figures a side), and then the verdict can only
        # say by how much the model is off
        rounds = any(data["measurements"][n]["runs"] for n in ("evp-aesni", "evp-masked"))
        assert "calibrated" in twice["model"] or "as the model predicts" in twice["model"] \
            or (not rounds and "the model is off on our core" in twice["model"]), twice
    elif twice["basis"] == "cpu model":  # a core the model does not cover: it says so
        assert twice["verdict"] == "not testable here" and twice["reason"]
    else:  # an Ivy Bridge: judged as measured
        assert twice["verdict"] in ("reproduced", "not reproduced", "inconclusive")
    # without -evp the mask changes nothing: the low-level AES never uses AES-NI
    legacy = claims["no-evp-no-difference"]
    if legacy["verdict"] == "not testable here":  # steal flagged every legacy figure
        assert "no usable figure" in legacy["reason"], legacy
    else:
        assert legacy["verdict"] in ("reproduced", "not reproduced", "inconclusive")
        # (one pair slowed 40 % by a neighbour still falls inside; the EVP gap is 3-4x)
        assert 0.5 < legacy["blocks"][0]["our_ratio"] < 2, legacy

    m = data["measurements"]["evp-aesni"]
    # three planned rounds, and extra ones where an interval straddled its threshold; a
    # round whose attempts were all contended leaves fewer runs with a usable figure -
    # none at all on a host busy enough (2026-12-06, this project's host with other
    # worktrees building: 108 of 108 EVP figures contended; the claims above were then
    # judged from their interleaved runs alone)
    assert m["variant"].endswith("-asm-x86_64")
    assert len(m["runs"]) >= 3 or any(m["statuses"].get(s) for s in ("contended", "shared-core")), m
    assert len(m["runs"]) >= 1 or faster["ratio_basis"] == "interleaved", m
    fig = next(f for f in m["figures"] if f["block_size"] == 8192)
    if m["runs"]:
        assert fig["ours_median_bytes_per_s"] > 200e6  # AES-NI: ~1.2 GB/s on a quiet EPYC
    assert fig["reference_bytes_per_s"] == pytest.approx(333_987_840.0)
    for run in m["runs"]:
        raw = (Path(run) / "raw" / "native--aes-128-cbc.stdout").read_text()
        assert raw.startswith("+H:16:64:256:1024:8192:16384")
        assert json.loads((Path(run) / "meta.json").read_text())["status"] == "complete"
    folder = results / "_reproduce" / "ivy-bridge-aesni-blog" / "0001"
    assert "evp-aesni-faster" in (folder / "side-by-side.txt").read_text()

    # a second reproduction reuses the finished runs: nothing is measured again
    # (no timeout of its own: a size whose interleaved run had no ratio is measured again,
    # and waits for the engine's measurement lock like any measurement)
    again = invoke("reproduce", "ivy-bridge-aesni-blog", "--results", str(results))
    assert again.returncode == 0, again.stderr[-4000:]
    assert "reusing them" in again.stderr
    if faster["ratio_basis"] == "interleaved":  # its interleaved runs reused too: same verdict
        assert "reusing the run filed by an earlier reproduction" in again.stderr
        assert f"[{faster['verdict']}] evp-aesni-faster" in again.stdout
    else:  # a size without an interleaved ratio is measured again: its verdict may move
        assert "evp-aesni-faster" in again.stdout

    # the report of this tree, opened from disk in a real browser
    rep = invoke("report", "--results", str(results), timeout=300)
    assert rep.returncode == 0, rep.stderr[-4000:]
    index = results / "_report" / "index.html"
    html = index.read_text()
    assert "ivy-bridge-aesni-blog" in html and "evp-aesni-faster" in html
    if chromium() is None and not os.environ.get("CI"):
        pytest.skip("chromium is not installed: the real report was not opened in a browser")
    page = open_page(index.as_uri(), PAGE_FACTS)
    assert page.errors == [], page.errors
    assert page.result["tables"] >= 4
    # a chart is drawn from figures the report accepts; on a host busy enough there may be
    # none (2026-12-06: 72 of 84 EVP figures contended, the report drew no chart) - then
    # the claims above were judged from interleaved runs; every chart drawn must load
    charts = list((results / "_report" / "charts").glob("*.png"))
    assert page.result["images"] or not charts, (page.result, charts)
    assert all(i["complete"] and i["width"] > 0 for i in page.result["images"])
    if faster["ratio_basis"] == "interleaved":  # the page says where the ratios come from
        assert "from interleaved runs" in html


def test_cmac_claims_are_judged_from_the_interleaved_library_operation(tmp_path: Path) -> None:
    """#14787's CMAC claims (issue 31): both sides are the library harness's `cmac` on one
    thread, so the pair harness runs it between 1.1.1w and 3.0.20 in one process and the
    verdicts come from that ratio. The shipped spec with one round (its claims are judged
    from the interleaved run; the round is what the plan measures anyway), beside a copy of
    the matrix. Holds under contention: the basis, the record, and intervals on one side of
    each band (3.0.20's CMAC ran at 0.38-0.39 of 1.1.1w's here, 2026-12-06, busy host:
    the bands are 0.216-0.450 and <= 0.95)."""
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text((ROOT / "matrix.yaml").read_text())
    shipped = ROOT / "openssl_matrix" / "resources" / "reports" / "openssl-issue-14787-cmac.yaml"
    spec = yaml.safe_load(shipped.read_text())
    spec["measure"] = {"seconds": 1, "repeat": 1}
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "cmac-interleaved.yaml").write_text(
        yaml.safe_dump(spec, sort_keys=False))
    results = tmp_path / "results"
    out = invoke("reproduce", "cmac-interleaved", f"--matrix={matrix}", "--results",
                 str(results), "--json")
    assert out.returncode == 0, out.stderr[-4000:]
    claims = {c["id"]: c for c in json.loads(out.stdout)["claims"]}
    for cid, band in (("cmac-three-times-slower", (0.333 * 0.65, 0.333 * 1.35)),
                      ("cmac-slower", (0.0, 1 / 1.05))):
        claim = claims[cid]
        if claim["ratio_basis"] != "interleaved":  # the harness timed nothing: said why
            assert claim["ratio_note"], claim
            continue
        [block] = claim["blocks"]
        assert block["basis"] == "interleaved" and block["ci_95"] is not None, block
        rec = json.loads((results / block["interleaved_record"]).read_text())
        [row] = rec["algorithms"]
        assert (row["algorithm"], row["direction"], row["block_size"]) == ("cmac", "operation", 0)
        assert rec["top"]["version"].startswith("OpenSSL 3.0.20"), rec["top"]
        assert rec["bottom"]["version"].startswith("OpenSSL 1.1.1w"), rec["bottom"]
        lo, hi = block["ci_95"]
        assert lo <= block["our_ratio"] <= hi, block
        # 3.0 fetches the cipher for every CMAC_Init: slower, whatever the host's noise
        assert hi < 1 / 1.25, block
        inside = band[0] <= lo and hi <= band[1]
        outside = hi < band[0] or lo > band[1]
        if inside or outside:  # an interval on one side of the band decides
            assert claim["verdict"] == ("reproduced" if inside else "not reproduced"), claim
        else:  # a noisy session's interval can straddle a band's edge: then it says so
            assert claim["verdict"] == "inconclusive" and "straddles" in claim["reason"]
