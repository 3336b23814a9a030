"""The report's interleaved ratios, read back from pairs filed in a tree (the record is
built from a real pairbench output: tests/fixtures/pairbench/README.md)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.pairrun import command, plan_pairs, record_of
from openssl_matrix.report import interleavedview
from openssl_matrix.results.interleaved import file_pair

ROOT = Path(__file__).resolve().parents[2]
RAW = (ROOT / "tests" / "fixtures" / "pairbench" / "pairbench-111w-vs-3020.txt").read_text()


def _file(root: Path, session: str, started: str, **more: Any) -> None:
    m = load_matrix(ROOT / "matrix.yaml")
    suite = replace(m.suite("blog-8k"), algorithms=("md5", "sha256"))
    variants = m.select("1.1.1w-asm-x86_64") + m.select("3.0.20-asm-x86_64")
    pair = next(p for p in plan_pairs(variants, suite)[0]
                if p.kind == "release" and p.top.mask == "native")
    rec = record_of(pair, command(pair, suite, suite.algorithms), RAW, 0, started, 1.0)
    file_pair(root, "host-x", session, pair.name, replace(rec, **more), RAW)


def test_a_reproductions_runs_do_not_displace_the_bench_session(tmp_path: Path) -> None:
    # a reproduction files its interleaved runs under _interleaved/ too (repro/pairs.py),
    # later than the bench: the page's section stays the bench session's
    _file(tmp_path, "bench-1", "2026-12-03T00:00:00+00:00")
    _file(tmp_path, "repro-x-20261204T000000Z", "2026-12-04T00:00:00+00:00",
          reproduction="x")
    assert {r.session for r in interleavedview.rows(tmp_path)} == {"bench-1"}


def test_the_newest_session_is_shown_with_its_raw_output_copied(tmp_path: Path) -> None:
    root, out = tmp_path / "results", tmp_path / "report"
    _file(root, "bench-old", "2026-12-01T00:00:00+00:00")
    _file(root, "bench-new", "2026-12-03T00:00:00+00:00")
    rows = interleavedview.rows(root, out)
    assert {r.session for r in rows} == {"bench-new"}
    assert [r.algorithm for r in rows] == ["md5", "sha256"]
    for r in rows:
        assert r.kind == "release" and r.block == 8192
        assert r.numerator == "3.0.20-asm-x86_64 native"
        assert r.ratio is not None and r.ci_low is not None and r.ci_high is not None
        assert r.ci_low <= r.ratio <= r.ci_high
        assert (out / r.raw).read_text() == RAW
        assert r.as_dict()["ci_method"] == "t95-batches"
    page = interleavedview.html(rows)
    assert page.startswith('<h2 id="interleaved">')
    assert page.count("<tr><td>host-x</td>") == 2 and f'href="{rows[0].raw}"' in page
    [head, *lines, blank] = interleavedview.text(rows)
    assert head.startswith("Interleaved ratios") and blank == "" and len(lines) == 2
    assert "3.0.20-asm-x86_64 native / 1.1.1w-asm-x86_64 native = ×" in lines[0]


def test_no_pairs_no_section(tmp_path: Path) -> None:
    assert interleavedview.rows(tmp_path) == []
    assert interleavedview.html([]) == "" and interleavedview.text([]) == []


def test_a_disturbed_estimate_is_flagged_on_the_page_and_in_the_text(tmp_path: Path) -> None:
    _file(tmp_path, "bench-1", "2026-12-03T00:00:00+00:00")
    [md5, sha] = interleavedview.rows(tmp_path)
    assert not md5.disturbed and md5.direction == "digest"
    shaken = replace(sha, disturbed=True)
    assert "disturbed" in shaken.line() and "disturbed" not in md5.line()
    page = interleavedview.html([md5, shaken])
    assert page.count('<span class="bad">disturbed</span>') == 1
    assert shaken.as_dict()["disturbed"] is True


def test_the_noise_benchmark_sets_sessions_of_one_pair_side_by_side(tmp_path: Path,
                                                                   capsys: Any) -> None:
    from ..scripts import load_script
    noise = load_script("noise")
    _file(tmp_path, "bench-1", "2026-12-01T00:00:00+00:00")
    _file(tmp_path, "bench-2", "2026-12-03T00:00:00+00:00")
    rows = noise.between_sessions(tmp_path)
    assert [r["algorithm"] for r in rows] == ["md5", "sha256"]
    for r in rows:  # the same raw output filed twice: the sessions agree exactly
        assert len(r["ratios"]) == 2 and r["apart"] == 0.0
    noise.between_table(rows)
    out = capsys.readouterr().out
    assert "several bench sessions" in out and "2 of 2" in out
