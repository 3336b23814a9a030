"""The PTS-comparable suite: pts/openssl's command lines, pts-core's reading of its log
(on real outputs of the 1.1.1w and 3.0.20 images) and its run-count rule."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from openssl_matrix.matrix import pts
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.benchfigure import bench_figures
from openssl_matrix.measure.cell import CellOutcome
from openssl_matrix.measure.session import RULE_PTS_CORE, follow_ups
from openssl_matrix.measure.speedcmd import speed_invocations, unwrap_speed
from openssl_matrix.parse import figure_records, parse_speed
from openssl_matrix.report.page import build_report
from openssl_matrix.results.export import render as export

from ..fakes import one_release_bench
from ..scripts import load_script
from ..unit.test_suites import ROOT, matrix_with
from ..values import num

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "speed"


def test_suite_is_pts_openssl_by_default() -> None:
    s = load_matrix(ROOT / "matrix.yaml").suite("pts-openssl")
    assert (s.kind, s.seconds, s.multi, s.repeat, s.noise_threshold) == \
        ("pts", pts.SECONDS, (0,), pts.TIMES_TO_RUN, pts.RSD_THRESHOLD)
    assert list(s.algorithms) == list(pts.OPTIONS)
    inv, notes = speed_invocations("3.0.20", s, cpus=2)
    assert notes == []
    assert [i.command for i in inv] == [
        ("openssl", "speed", "-multi", "2", "-seconds", "30", *o.args)
        for o in pts.OPTIONS.values()]
    assert {i.path for i in inv} == {"pts"} and inv[0].name == "default--rsa4096"


def test_shorter_seconds_and_old_versions(tmp_path: Path) -> None:
    m = load_matrix(matrix_with(tmp_path, {"kind": "pts", "seconds": 2,
                                           "algorithms": ["sha256", "chacha20"]}))
    s = m.suite("s")
    inv, _ = speed_invocations("1.1.1w", s, cpus=2)
    assert inv[1].command == ("openssl", "speed", "-multi", "2", "-seconds", "2", "-evp",
                              "chacha20")
    inv, notes = speed_invocations("1.0.1e", s, cpus=2)
    assert [i.command for i in inv] == [("openssl", "speed", "-multi", "2", "sha256")]
    assert any(n.startswith("chacha20: not measured") for n in notes)
    assert any("-seconds is not in 1.0.1e" in n for n in notes)


def log(case: str) -> str:
    """What PTS's $LOG_FILE (``> $LOG_FILE 2>&1``) holds, in the order it is written: the
    parent flushes stdout before each fork ("Forked child N"), the children's progress
    goes to stderr as they run, and the parent's buffered stdout (the children's "Got:"
    records, its table) reaches the file when it exits. The captures keep the streams
    apart; this puts them back in that order."""
    out = (FIX / f"{case}.stdout").read_text().splitlines(keepends=True)
    forked = [line for line in out if line.startswith("Forked child")]
    rest = [line for line in out if not line.startswith("Forked child")]
    return "".join(forked) + (FIX / f"{case}.stderr").read_text() + "".join(rest)


@pytest.mark.parametrize(("case", "name", "version"), [
    ("real-1.1.1w/pts-multi2-gcm", "aes-128-gcm", "1.1.1w"),
    ("real-1.1.1w/pts-multi2-sha256", "sha256", "1.1.1w"),
    ("real-3.0.20/pts-multi2-gcm", "aes-128-gcm", "3.0.20"),
    ("real-3.0.20/pts-multi2-sha256", "sha256", "3.0.20"),
])
def test_pts_reading_matches_our_figure(case: str, name: str, version: str) -> None:
    """pts-core's rule on the log gives the very figure our parser files for that PTS
    result (same column, k = x1000)."""
    [result] = pts.OPTIONS[name].results
    value, reader = pts.read_result(log(case), result)
    assert value is not None and reader is not None
    run = parse_speed((FIX / f"{case}.stdout").read_text(),
                      (FIX / f"{case}.stderr").read_text(), version=version,
                      evp=name != "sha256")
    ours = [f for f in figure_records(run) if f["block_size"] == result.block_size]
    assert len(ours) == 1 and ours[0]["bytes_per_s"] == pytest.approx(value)
    # 1.1.1's parent names the EVP row "evp"; 3.x's prints the cipher's name
    if name == "aes-128-gcm":
        assert reader.line_hint == ("evp" if version == "1.1.1w" else "AES-128-GCM")


@pytest.mark.parametrize("case", ["real-1.1.1w/pts-multi2-rsa4096",
                                  "real-3.0.20/pts-multi2-rsa4096"])
def test_pts_rsa_row_of_pre_32_output(case: str) -> None:
    """3.6.0's template wants 3.2+'s 'rsa  4096 bits' row with four times; 1.1.1 and 3.0
    print 'rsa 4096 bits' with two, which pts/openssl-3.1.0's template reads."""
    text = log(case)
    sign, verify = pts.OPTIONS["rsa4096"].results
    assert pts.pts_value(text, sign.readers[0]) is None
    value, reader = pts.read_result(text, sign)
    assert reader is not None and reader.profile == "pts/openssl-3.1.0"
    run = parse_speed((FIX / f"{case}.stdout").read_text(), "", version=case.split("/")[0][5:])
    ours = {f["operation"]: f["ops_per_s"] for f in figure_records(run)}
    assert value == pytest.approx(ours["sign"], rel=2e-3)  # the row prints 94.5
    assert pts.read_result(text, verify)[0] == pytest.approx(ours["verify"], rel=2e-3)


def test_pts_token_rules() -> None:
    r = pts.Reader("sha256", 3)
    assert pts.pts_value("sha256 1.00k 2.00k 3.50k 4.00k\n", r) == 3500.0
    assert pts.pts_value("sha256 1 2 3 4\nsha256 5 6 7 8\n", r) == 7.0  # the last line
    assert pts.pts_value("sha256 1 2\n", r) is None
    assert pts.pts_value("nothing here\n", r) is None
    assert pts.pts_value("sha256 1 2 x 4\n", r) is None


def test_pts_run_count_rule() -> None:
    assert pts.needs_more_runs([100.0, 101.0])  # fewer than TimesToRun
    assert not pts.needs_more_runs([100.0, 101.0, 100.5])
    assert pts.needs_more_runs([100.0, 110.0, 95.0])  # 7.5 % standard deviation
    assert not pts.needs_more_runs([100.0, 110.0, 95.0] * 4)  # 12 runs: 4 x 3, the maximum
    assert pts.max_runs(3, 60) == 12 and pts.max_runs(3, 180) == 9 and pts.max_runs(3, 300) == 6


def outcome(variant: str, values: list[float], inv: str = "default--sha256") -> list[Any]:
    return [CellOutcome(variant, "complete", figures=bench_figures([
        {"invocation": inv, "algorithm": "sha256", "block_size": 256, "bytes_per_s": v,
         "status": "ok"},
        {"invocation": inv, "algorithm": "sha256", "block_size": 16, "bytes_per_s": v * (
            1 + i), "status": "ok"}])) for i, v in enumerate(values)]


def test_follow_ups_use_pts_rule_on_pts_columns_only() -> None:
    # the 16-byte column spreads widely, PTS does not report it: no extra round
    steady = outcome("v", [100.0, 100.5, 101.0])
    assert follow_ups(steady, 3, pts.RSD_THRESHOLD, 12, rule=RULE_PTS_CORE) == {}
    # the 256-byte column (PTS's SHA256 result) spreads 7.5 %: another run
    wide = outcome("v", [100.0, 110.0, 95.0])
    todo = follow_ups(wide, 3, pts.RSD_THRESHOLD, 12, rule=RULE_PTS_CORE)
    assert todo["v"].invocations == ("default--sha256",)
    assert "pts-core's rule" in todo["v"].why


def test_compare_script_rows_from_real_logs() -> None:
    """benchmarks/pts_compare.py's row: the PTS-way mean of real logs beside figures of
    ours (here the same logs read by our parser: the ratio is 1 and the mean inside)."""
    script = load_script("pts_compare")
    [result] = pts.OPTIONS["aes-128-gcm"].results
    cases = ["real-1.1.1w/pts-multi2-gcm", "real-3.0.20/pts-multi2-gcm"]
    values = [v for c in cases if (v := pts.read_result(log(c), result)[0]) is not None]
    assert len(values) == 2
    row = script.Row("x", result.title, result.unit, values, "evp", sorted(values),
                     {"ok": 2})
    text = row.line()
    assert "AES-128-GCM" in text and "ratio 1.000" in text and "(ok 2/2)" in text
    assert "PTS mean in our interval: yes" in text
    outcome = CellOutcome("v", "complete", figures=bench_figures([
        {"pts_result": "AES-128-GCM", "block_size": 8192, "bytes_per_s": 5.0,
         "status": "ok"},
        {"pts_result": "AES-128-GCM", "block_size": 8192, "bytes_per_s": 9.0,
         "status": "contended"}]))
    assert script.ours_by_result([outcome]) == {"AES-128-GCM": ([5.0], {"ok": 1,
                                                                        "contended": 1})}


def test_fake_bench_labels_the_pts_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           ) -> None:
    """A pts suite on the fake engine answering with the real PTS-way outputs of the 1.1.1w
    image: each figure PTS reports carries its result and unit, in the export too."""
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    cases = {"rsa4096": "pts-multi2-rsa4096", "sha256": "pts-multi2-sha256",
             "aes-128-gcm": "pts-multi2-gcm"}

    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        cmd = unwrap_speed(command)
        assert cmd[:6] == ("openssl", "speed", "-multi", "2", "-seconds", "1")
        case = FIX / "real-1.1.1w" / cases[cmd[-1]]
        return 0, Path(f"{case}.stdout").read_text(), Path(f"{case}.stderr").read_text()

    probe = Path(__file__).resolve().parents[1] / "fixtures" / "topology" / "probe-2cpu-vm.txt"
    m, _, tree, bencher = one_release_bench(tmp_path, """\
  p:
    kind: pts
    algorithms: [rsa4096, sha256, aes-128-gcm]
    seconds: 1
    repeat: 1
""", responder, cpuinfo=probe.read_text())
    outs = bencher.bench(m.select("1.1.1w-asm-x86_64"), m.suite("p"), "auto")
    o = outs[0]
    labelled = {f["pts_result"]: f for f in o.figures if f.get("pts_result")}
    assert set(labelled) == {"RSA4096 sign/s", "RSA4096 verify/s", "SHA256", "AES-128-GCM"}
    assert labelled["AES-128-GCM"]["block_size"] == 8192
    assert labelled["AES-128-GCM"]["algorithm"] == "aes-128-gcm"  # the parent's "evp" row
    assert labelled["SHA256"]["block_size"] == 256 and labelled["SHA256"]["pts_unit"] == "byte/s"
    assert labelled["RSA4096 sign/s"]["pts_unit"] == "sign/s"
    assert all(f["multi"] == 2 and f["path"] == "pts" for f in o.figures)
    # the busy-host sha256 capture: child 0 measured 61 % of child 1 at 8192 bytes, so
    # that run is contended and measured again; the others are not (no host samples)
    assert labelled["SHA256"]["status"] == "contended"
    assert labelled["AES-128-GCM"]["status"] == "ok"
    assert len(outs) > 1 and all({f["invocation"] for f in x.figures} == {"default--sha256"}
                                 for x in outs[1:])
    rows = list(csv.DictReader(io.StringIO(export(tree, "csv"))))
    assert {r["pts_result"] for r in rows} >= {"SHA256", "AES-128-GCM", "RSA4096 sign/s"}
    # the report's PTS table names each result and its unit
    text = build_report(tree, tmp_path / "report").text()
    assert "PTS-comparable (pts/openssl-3.6.0)" in text
    gcm = num(labelled["AES-128-GCM"]["bytes_per_s"]) / 1e6
    assert (f"AES-128-GCM (byte/s, 2 processes): ours {gcm:,.1f} (n=1) MB/s, mean "
            f"{gcm:,.1f}") in text
    assert "SHA256 (byte/s, 2 processes): ours no ok figure" in text  # all contended
    page = (tmp_path / "report" / "index.html").read_text()
    assert '<h2 id="pts">' in page and "RSA4096 verify/s" in page
