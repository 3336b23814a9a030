"""A library-suite bench, fake engine: the harness's sibling image is built once per
variant image, each operation × thread count runs in its own container with the real
outputs of tests/fixtures/libbench (recorded on a busy host), contended figures are
measured again and kept out of the series, and memory figures are filed as bytes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from openssl_matrix.core import statuses
from openssl_matrix.images.harness import BINARY
from openssl_matrix.measure.session import MAX_ATTEMPTS, Bencher
from openssl_matrix.results import records

from ..conftest import local_versions
from ..fakes import FakeBackend, fake_bench

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "libbench"


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Bencher, FakeBackend]:
    versions = local_versions(tmp_path, monkeypatch, "1.1.1w")
    path = tmp_path / "matrix.yaml"
    path.write_text(f"""
defaults:
  base_image: debian:bookworm
versions:
{versions}
axes:
  asm: [asm]
suites:
  lib:
    kind: library
    algorithms: [handshake-tls1.3-rsa2048, memory]
    threads: [2]
    seconds: 1
""")

    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        assert command[0] == BINARY and image.startswith("openssl-matrix/libbench-")
        if command[1].startswith("mem-"):
            return 0, (FIX / "1.1.1w-memory.txt").read_text(), ""
        assert command[1:] == ("--seconds", "1", "--threads", "2", "handshake-tls1.3-rsa2048")
        return 0, (FIX / "1.1.1w-handshake-tls1.3-rsa2048-t2.txt").read_text(), ""

    _, backend, _, bencher = fake_bench(path, tmp_path, responder, max_attempts=MAX_ATTEMPTS)
    return bencher, backend


def test_a_library_bench_builds_the_harness_and_remeasures_contended_runs(
        bench: tuple[Bencher, FakeBackend]) -> None:
    bencher, backend = bench
    m = bencher.matrix
    outs = bencher.bench(list(m.variants), m.suite("lib"), "auto", repeat=1)
    harness_builds = [t for t in backend.builds if t.startswith("openssl-matrix/libbench-")]
    assert len(harness_builds) == 1
    # the planned attempt, then re-measurements of the contended handshake run only
    assert [o.round for o in outs] == [1, 2, 3]
    first = {f["algorithm"]: f for f in outs[0].figures}
    assert first["handshake-tls1.3-rsa2048"]["status"] == statuses.CONTENDED
    assert first["handshake-tls1.3-rsa2048"]["threads"] == 2
    assert first["mem-ssl-ctx"]["status"] == "ok" and first["mem-ssl-ctx"]["unit"] == "bytes"
    for o in outs[1:]:
        assert {f["algorithm"] for f in o.figures} == {"handshake-tls1.3-rsa2048"}
    ran = [c for img, c, _ in backend.runs if c and c[0] == BINARY]
    assert sum("mem-ssl-ctx" in c for c in ran) == 1 and len(ran) == 4  # 2 planned, 2 again
    # the run records say which harness image ran, on which variant image
    meta = records.read_meta(Path(str(outs[0].run_dir)))
    assert meta is not None
    assert meta.to_json()["image_tag"] == harness_builds[0]
    build = meta.to_json()["build"]["harness"]
    assert build["tag"] == harness_builds[0] and build["variant_tag"].startswith(
        "openssl-matrix/1.1.1w-asm-x86_64:")
    inv = next(i for i in meta.to_json()["invocations"]
               if i["name"] == "lib--handshake-tls1.3-rsa2048--t2")
    assert inv["host_accounting"]["handshake-tls1.3-rsa2048"]["processes"] == 2


def test_a_second_bench_reuses_the_harness_image(bench: tuple[Bencher, FakeBackend]) -> None:
    bencher, backend = bench
    m = bencher.matrix
    bencher.bench(list(m.variants), m.suite("lib"), "auto", repeat=1)
    bencher.bench(list(m.variants), m.suite("lib"), "auto", repeat=1, fresh=True)
    assert sum(t.startswith("openssl-matrix/libbench-") for t in backend.builds) == 1


def test_the_report_shows_library_tables_memory_and_the_flagged_figures(
        bench: tuple[Bencher, FakeBackend], tmp_path: Path) -> None:
    from openssl_matrix.report.page import build_report

    bencher, _ = bench
    m = bencher.matrix
    bencher.bench(list(m.variants), m.suite("lib"), "auto", repeat=1)
    summary = build_report(bencher.tree, tmp_path / "report")
    text = summary.text()
    assert "library · 2 thread(s) (operations per second" in text
    assert "library · memory (bytes, exact" in text
    mem = (FIX / "1.1.1w-memory.txt").read_text()
    ctx_bytes = next(p.split("=")[1] for line in mem.splitlines()
                     if "op=mem-ssl-ctx" in line and "result" in line
                     for p in line.split(":") if p.startswith("bytes="))
    assert f"{int(ctx_bytes):,} B" in text
    # every attempt of the handshake was contended: no median, what they read, grey
    row = next(line for line in text.splitlines() if "handshake-tls1.3-rsa2048" in line)
    assert "all 3 contended" in row and "±" not in row
    page = (tmp_path / "report" / "index.html").read_text()
    assert 'id="library"' in page and "no usable figure" in page
    assert "Library</a>" in page
    # --versions keeps only matching releases
    summary = build_report(bencher.tree, tmp_path / "report2", versions=("3.0.*",))
    assert "library ·" not in summary.text()
