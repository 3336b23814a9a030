"""`invoke matrix profile` with the engine faked at its seam (tests/fakes.py).

The container's answer is what the profile wrapper prints, around the real `perf script`
capture of tests/fixtures/perf (3.0.20-asm sha256 16 bytes, taken on this project's host):
speed's -mr output, the two host samples and the shell's `times`. Two host pictures: a quiet
one (the run had its core, nothing else busy) and a busy one (a neighbour kept half a core
busy), which must give the `contended` status a figure would get.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from xml.etree import ElementTree

import pytest

from openssl_matrix.cli.shared import handlers
from openssl_matrix.core.errors import BenchError, BuildError, UsageError
from openssl_matrix.engine.backend import RunResult
from openssl_matrix.measure import perfrun
from openssl_matrix.measure.profile import parse_script

from ..fakes import FakeBackend, Responder, engine_of, fake_bench

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "perf" / "script-3.0.20-asm-sha256-16.txt"
SCRIPT = "".join(line for line in FIX.read_text().splitlines(keepends=True)
                 if not line.startswith("#"))


def _stat(tag: int, own: int, other: int, cgroup_s: float, base: int = 1000) -> str:
    """One host sample: cpu0 ran the profiled run (``own`` ticks), cpu1 ``other`` ticks of
    someone else's work, the rest idle; 3 s at USER_HZ 100 on 2 CPUs."""
    b0, b1 = base + own * tag, base + other * tag
    i0, i1 = base + (300 - own) * tag, base + (300 - other) * tag
    return (f"+HOSTSTAT {tag}\ncpu  {b0 + b1} 0 0 {i0 + i1} 0 0 0 0 0 0\n"
            f"cpu0 {b0} 0 0 {i0} 0 0 0 0 0 0\ncpu1 {b1} 0 0 {i1} 0 0 0 0 0 0\n"
            f"procs_running 1\ncgroup_ns {int(cgroup_s * 1e9 * tag) + 5}\n")


def responder(ops: dict[str, int], busy: bool = False) -> Responder:
    other = 150 if busy else 0

    def answer(image: str, command: Sequence[str], env: Mapping[str, str]
               ) -> tuple[int, str, str]:
        assert command[3] == perfrun.WRAPPER_NAME, command
        count = next(n for tag, n in ops.items() if tag in image)
        stderr = (_stat(0, 300, other, 3.0) + _stat(1, 300, other, 3.0)
                  + f"+DT:sha256:3:16\n+R:{count}:sha256:3.000000\n"
                  "+CPUTIMES\n0m0.01s 0m0.00s\n0m2.98s 0m0.02s\n")
        stdout = "+H:16\n+F:25:sha256:50000000.00\n" + perfrun.SCRIPT_MARKER + "\n" + SCRIPT
        return 0, stdout, stderr

    return answer


def faked(tmp_path: Path, fake_matrix: Path, answer: Responder) -> tuple[FakeBackend, Path]:
    _, backend, tree, _ = fake_bench(fake_matrix, tmp_path, answer)
    return backend, tree.root


def run(backend: FakeBackend, fake_matrix: Path, root: Path, **flags: object) -> int:
    profile = handlers(engine_of(lambda: backend))["profile"]
    args: dict[str, object] = {"target": "", "matrix": str(fake_matrix), "results": str(root),
                               "only": "", "algorithm": "sha256", "bytes": 16, "suite": "",
                               "cell": "", "seconds": 0, "compare": "", "json": False}
    args.update(flags)
    return int(profile(**args))


def test_profile_files_script_folded_svg_and_meta(
        tmp_path: Path, fake_matrix: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    backend, root = faked(tmp_path, fake_matrix,
                          responder({"3.0.20": 1_000_000}))
    assert run(backend, fake_matrix, root, only="3.0.20-asm-x86_64") == 0
    folder = root / "_profiles" / "3.0.20-asm-x86_64" / "speed-sha256-16" / "0001"
    assert sorted(p.name for p in folder.iterdir()) == [
        "flame.svg", "meta.json", "perf-script.txt", "stacks.folded"]
    meta = json.loads((folder / "meta.json").read_text())
    samples = parse_script(SCRIPT)
    assert meta["status"] == "ok" and meta["findings"] == []
    assert meta["variant"] == "3.0.20-asm-x86_64" and meta["version"] == "3.0.20"
    assert meta["samples"] == len(samples) and meta["operations"] == 1_000_000
    assert meta["ns_per_op"] == pytest.approx(3000.0)  # 3 s over a million operations
    assert meta["sampled_ns_per_op"] == pytest.approx(
        sum(s.period_ns for s in samples) / 1e6)
    assert meta["profiler"]["event"] == "cpu-clock" and meta["profiler"]["frequency_hz"] == 999
    assert meta["command"][:2] == ["openssl", "speed"] and "-bytes" in meta["command"]
    assert meta["image"].startswith("openssl-matrix/3.0.20-asm-x86_64:")
    assert meta["profile_image"].startswith("openssl-matrix/profile-3.0.20-asm-x86_64:")
    assert meta["host"]["own_source"] == "cgroup" and meta["host"]["foreign_cores"] < 0.2
    assert meta["libraries"][0]["name"] == "libcrypto"
    folded = (folder / "stacks.folded").read_text().splitlines()
    assert sum(int(line.rsplit(" ", 1)[1]) for line in folded) == len(samples)
    ElementTree.fromstring((folder / "flame.svg").read_text())
    assert (folder / "perf-script.txt").read_text() == SCRIPT
    # the profile image was built FROM the variant's image with linux-perf, and the run
    # had root and SYS_ADMIN but kept the bench's other limits
    assert any(t.startswith("openssl-matrix/profile-3.0.20-asm-x86_64:")
               for t in backend.builds)
    lim = backend.limits[-1]
    assert lim.cap_add == ("SYS_ADMIN",) and lim.user is None and lim.network == "none"
    assert lim.read_only
    out = capsys.readouterr().out
    assert "3.0.20-asm-x86_64 speed-sha256-16: ok" in out and "ns/op" in out


def test_a_busy_host_makes_the_profile_contended(
        tmp_path: Path, fake_matrix: Path) -> None:
    backend, root = faked(tmp_path, fake_matrix,
                          responder({"3.0.20": 1_000_000}, busy=True))
    assert run(backend, fake_matrix, root, only="3.0.20-asm-x86_64") == 0
    assert run(backend, fake_matrix, root, only="3.0.20-asm-x86_64") == 0  # a second: 0002
    base = root / "_profiles" / "3.0.20-asm-x86_64" / "speed-sha256-16"
    assert sorted(p.name for p in base.iterdir()) == ["0001", "0002"]
    meta = json.loads((base / "0002" / "meta.json").read_text())
    assert meta["status"] == "contended"
    assert [f["code"] for f in meta["findings"]] == ["contended"]
    assert "other work kept 0.50 core(s) busy" in meta["findings"][0]["message"]
    assert meta["host"]["foreign_cores"] == pytest.approx(0.5, abs=0.01)
    # the profile image is built once and reused
    assert len([t for t in backend.builds if "profile-" in t]) == 1


def test_compare_writes_the_difference(
        tmp_path: Path, fake_matrix: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # the same samples over half the operations: every function costs twice as much in B
    backend, root = faked(tmp_path, fake_matrix,
                          responder({"1.1.1w": 2_000_000, "3.0.20": 1_000_000}))
    assert run(backend, fake_matrix, root, compare="1.1.1w-asm-x86_64,3.0.20-asm-x86_64",
               json=True) == 0
    out = json.loads(capsys.readouterr().out)
    assert [p["variant"] for p in out["profiles"]] == ["1.1.1w-asm-x86_64", "3.0.20-asm-x86_64"]
    folder = Path(out["compare"]["folder"])
    assert folder == root / "_profiles" / "compare" / \
        "1.1.1w-asm-x86_64-vs-3.0.20-asm-x86_64-speed-sha256-16" / "0001"
    diff = json.loads((folder / "diff.json").read_text())
    assert diff["gap_ns_per_op"] == pytest.approx(1500.0)  # 3000 − 1500 ns/op
    libs = {r["name"]: r for r in diff["libraries"]}
    assert libs["libcrypto"]["b_ns_per_op"] == pytest.approx(2 * libs["libcrypto"]["a_ns_per_op"])
    assert diff["libraries"][0]["name"] == "libcrypto"  # the biggest part of the gap
    squares = sum(s.period_ns ** 2 for s in parse_script(SCRIPT)
                  if s.frames[0][1] == "libcrypto")
    assert libs["libcrypto"]["diff_sd_ns_per_op"] == pytest.approx(
        math.hypot(math.sqrt(squares) / 2e6, math.sqrt(squares) / 1e6), rel=1e-3)
    gaps = [r["diff_ns_per_op"] for r in diff["functions"]]
    assert gaps == sorted(gaps, reverse=True)
    total = sum(s.period_ns for s in parse_script(SCRIPT))
    assert diff["explained_share"] == pytest.approx((total / 1e6 - total / 2e6) / 1500.0,
                                                    rel=1e-3)
    assert "of the gap explained" in (folder / "diff.txt").read_text()
    ElementTree.fromstring((folder / "diff.svg").read_text())


def test_refusals(tmp_path: Path, fake_matrix: Path) -> None:
    backend, root = faked(tmp_path, fake_matrix, responder({"3.0.20": 1}))
    with pytest.raises(UsageError, match="two variants"):
        run(backend, fake_matrix, root, compare="3.0.20-asm-x86_64")
    with pytest.raises(UsageError, match="--algorithm"):
        run(backend, fake_matrix, root, only="3.0.20-asm-x86_64", algorithm="")
    with pytest.raises(UsageError, match=r"--only '9\.9\.9-asm-x86_64': .* declares no such"):
        run(backend, fake_matrix, root, only="9.9.9-asm-x86_64")
    backend.images = {k: v for k, v in backend.images.items() if "3.0.20" not in k}
    with pytest.raises(BuildError, match="not built"):
        run(backend, fake_matrix, root, only="3.0.20-asm-x86_64")
    assert not (root / "_profiles" / "3.0.20-asm-x86_64").exists()


def test_a_failed_perf_run_says_why() -> None:
    res = RunResult(command=(), env={}, stdout="", stderr="perf_event_open failed",
                            exit_code=255, started="", ended="", seconds=0.1)
    with pytest.raises(BenchError, match="perf_event_open"):
        perfrun.read_profile(res, ("openssl", "speed"), "3.0.20")
