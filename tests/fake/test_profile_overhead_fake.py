"""`invoke matrix profile --overhead`: the profiler's cost on the figure, with the engine
faked at its seam (tests/fakes.py). The container answers as the wrappers print: the
profiled run around the real `perf script` capture of tests/fixtures/perf, the unprofiled
runs (the same wrapper without perf: its own name, no perf script) with speed's -mr
output, the two host samples and `times` (test_profile_fake.py's helpers)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from openssl_matrix.measure import perfrun
from openssl_matrix.measure.profileoverhead import overhead_text
from openssl_matrix.report.page import build_report
from openssl_matrix.results.tree import ResultsTree

from ..fakes import Responder
from .test_profile_fake import SCRIPT, _stat, faked, run

CELL = ("_profiles", "3.0.20-asm-x86_64", "speed-sha256-16", "0001")


def three_runs(counts: list[int], busy: tuple[bool, ...] = (False, False, False),
               seen: list[str] | None = None) -> Responder:
    """The n-th container gets counts[n] operations in 3 s; busy[n]: a neighbour kept half
    a core busy around it. ``seen`` collects each container's wrapper name ($0)."""
    calls: list[int] = []

    def answer(image: str, command: Sequence[str], env: Mapping[str, str]
               ) -> tuple[int, str, str]:
        n = len(calls)
        calls.append(n)
        name = command[3]
        if seen is not None:
            seen.append(name)
        profiled = name == perfrun.WRAPPER_NAME
        assert profiled == ("perf record" in command[2]), command[2]
        other = 150 if busy[n] else 0
        stderr = (_stat(0, 300, other, 3.0) + _stat(1, 300, other, 3.0)
                  + f"+DT:sha256:3:16\n+R:{counts[n]}:sha256:3.000000\n"
                  "+CPUTIMES\n0m0.01s 0m0.00s\n0m2.98s 0m0.02s\n")
        stdout = ("+H:16\n+F:25:sha256:50000000.00\n" + perfrun.SCRIPT_MARKER + "\n"
                  + (SCRIPT if profiled else ""))
        return 0, stdout, stderr

    return answer


def test_overhead_runs_unprofiled_before_and_after_and_files_both_rates(
        tmp_path: Path, fake_matrix: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[str] = []
    backend, root = faked(tmp_path, fake_matrix,
                          three_runs([1_100_000, 1_000_000, 1_200_000], seen=seen))
    assert run(backend, fake_matrix, root, only="3.0.20-asm-x86_64", overhead=True) == 0
    # unprofiled (no perf in its script), profiled, unprofiled: in that order, one image
    assert seen == [perfrun.PLAIN_NAME, perfrun.WRAPPER_NAME, perfrun.PLAIN_NAME]
    assert len({lim.cap_add for lim in backend.limits[-3:]}) == 1  # the same limits
    meta = json.loads(root.joinpath(*CELL, "meta.json").read_text())
    over = meta["overhead"]
    assert [r["role"] for r in over["runs"]] == ["unprofiled, before", "profiled",
                                                 "unprofiled, after"]
    assert [r["ops_per_s"] for r in over["runs"]] == pytest.approx(
        [1_100_000 / 3, 1_000_000 / 3, 1_200_000 / 3])
    assert over["unprofiled_ops_per_s"] == pytest.approx(1_150_000 / 3)
    assert over["ratio"] == pytest.approx(1_000_000 / 1_150_000, abs=1e-5)
    assert over["cost"] == pytest.approx(1 - 1_000_000 / 1_150_000, abs=1e-5)
    assert over["spread"] == pytest.approx(100_000 / 1_150_000, abs=1e-5)
    assert over["told_apart"] is True and over["contended"] is False
    assert all(r["status"] == "ok" and r["host"]["own_source"] == "cgroup"
               for r in over["runs"])
    # the profile itself is the profiled run's (its samples, its count)
    assert meta["operations"] == 1_000_000 and meta["samples"] > 0
    out = capsys.readouterr().out
    assert "profiler's overhead" in out and "profiled/unprofiled 0.870×" in out
    assert "cost +13.0%" in out and "differ by 8.7%: more than the spread" in out
    # the report's profile section shows it
    page = (build_report(ResultsTree(root), tmp_path / "report").out_dir
            / "index.html").read_text(encoding="utf-8")
    assert "Profiler&#x27;s cost" in page or "Profiler's cost" in page
    assert "0.870× (cost +13.0%); unprofiled runs differ by 8.7%" in page


def test_a_cost_inside_the_unprofiled_spread_is_not_told_apart_and_a_busy_run_shows(
        tmp_path: Path, fake_matrix: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend, root = faked(tmp_path, fake_matrix,
                          three_runs([1_000_000, 1_050_000, 1_100_000],
                                     busy=(False, False, True)))
    assert run(backend, fake_matrix, root, only="3.0.20-asm-x86_64", overhead=True) == 0
    meta = json.loads(root.joinpath(*CELL, "meta.json").read_text())
    over = meta["overhead"]
    assert over["told_apart"] is False and over["contended"] is True
    assert [r["status"] for r in over["runs"]] == ["ok", "ok", "contended"]
    assert over["runs"][2]["host"]["foreign_cores"] == pytest.approx(0.5, abs=0.01)
    assert meta["status"] == "ok"  # the profiled run's own status is its own
    out = capsys.readouterr().out
    assert "NOT told apart from the spread (a run was contended)" in out
    assert "unprofiled, after 366,667 ops/s (contended, others 0.50 core(s) busy)" in out


def test_a_profiled_run_faster_than_both_unprofiled_ones_is_called_the_hosts_noise(
        tmp_path: Path, fake_matrix: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend, root = faked(tmp_path, fake_matrix,
                          three_runs([1_000_000, 1_150_000, 1_020_000]))
    assert run(backend, fake_matrix, root, only="3.0.20-asm-x86_64", overhead=True) == 0
    over = json.loads(root.joinpath(*CELL, "meta.json").read_text())["overhead"]
    assert over["told_apart"] is True and over["cost"] < 0
    assert "the profiled run was faster than both: the host's noise outweighed perf's " \
        "cost" in capsys.readouterr().out
    page = (build_report(ResultsTree(root), tmp_path / "report").out_dir
            / "index.html").read_text(encoding="utf-8")
    assert "faster than both" in page


def test_without_overhead_nothing_runs_unprofiled(tmp_path: Path, fake_matrix: Path) -> None:
    seen: list[str] = []
    backend, root = faked(tmp_path, fake_matrix, three_runs([1_000_000] * 3, seen=seen))
    assert run(backend, fake_matrix, root, only="3.0.20-asm-x86_64") == 0
    assert seen == [perfrun.WRAPPER_NAME]
    meta = json.loads(root.joinpath(*CELL, "meta.json").read_text())
    assert meta["overhead"] is None and overhead_text(meta["overhead"]) == []
    page = (build_report(ResultsTree(root), tmp_path / "report").out_dir
            / "index.html").read_text(encoding="utf-8")
    assert "not measured" in page
