"""`invoke matrix ...` command lines as a user types them (no Docker needed)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def invoke(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(["invoke", *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=120)


def test_list_is_two_words() -> None:
    out = invoke("matrix", "list")
    assert out.returncode == 0, out.stderr
    assert "1.1.1w-asm-x86_64" in out.stdout and "3.0.20-no-asm-x86_64" in out.stdout


def test_list_json() -> None:
    out = invoke("matrix", "list", "--json")
    rows = json.loads(out.stdout)
    assert {r["id"] for r in rows} == {"1.1.1w-asm-x86_64", "1.1.1w-no-asm-x86_64",
                                       "3.0.20-asm-x86_64", "3.0.20-no-asm-x86_64"}
    assert {"id", "version", "asm", "arch", "march", "configure", "image"} <= set(rows[0])


def test_render_is_deterministic(tmp_path: Path) -> None:
    a = invoke("matrix", "render", "--output", str(tmp_path / "a"))
    b = invoke("matrix", "render", "--output", str(tmp_path / "b"))
    assert a.returncode == 0 and b.returncode == 0
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert len(files) == 5  # four Dockerfiles and render's marker (the files it wrote)
    assert files[0] == ".openssl-matrix-rendered.json"
    for name in files:
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()
    text = (tmp_path / "a" / "1.1.1w-no-asm-x86_64.Dockerfile").read_text()
    assert '"no-asm"' in text and "openssl-1.1.1w.tar.gz" in text


def test_unknown_command_suggests() -> None:
    out = invoke("matrix", "buidl")
    assert out.returncode == 10
    assert "perhaps you meant `invoke matrix build`" in out.stderr


def test_flag_that_does_not_apply_is_refused() -> None:
    out = invoke("matrix", "list", "--cpu=ryzen")
    assert out.returncode == 10
    assert "does not take --cpu" in out.stderr


def test_bench_without_cpu_says_what_to_do() -> None:
    out = invoke("matrix", "bench")
    assert out.returncode == 10
    assert "--cpu=auto" in out.stderr
    commas = invoke("matrix", "bench", "--cpu=,")
    assert commas.returncode == 10 and "needs --cpu=PROFILE" in commas.stderr


def test_bad_matrix_is_a_config_error_not_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "m.yaml"
    bad.write_text("versions:\n  1.1.1w:\n    sha265: abc\nsuites: {}\n")
    out = invoke("matrix", "list", f"--matrix={bad}")
    assert out.returncode == 2
    assert "versions.1.1.1w.sha265: unknown key" in out.stderr
    assert "perhaps you meant 'sha256'?" in out.stderr
    assert "Traceback" not in out.stderr


def test_unknown_profile_is_named(tmp_path: Path) -> None:
    out = invoke("matrix", "bench", "--cpu=ryzn")
    assert out.returncode == 2
    assert "no CPU profile named 'ryzn'" in out.stderr and "'ryzen'" in out.stderr


SEED_001 = ROOT.parent / "shared" / "seeds" / "001_cc1246047009c34e.txt"


def test_parse_a_published_report_as_json(tmp_path: Path) -> None:
    # Data from seed 001 (Ivy Bridge AES-NI blog, 1.0.1e): the two result tables.
    report = tmp_path / "report.txt"
    report.write_text(
        "OpenSSL 1.0.1e 11 Feb 2013\n"
        "type 16 bytes 64 bytes 256 bytes 1024 bytes 8192 bytes\n"
        "aes-128-cbc 305049.90k 327331.20k 332573.95k 334071.81k 333987.84k\n")
    out = invoke("matrix", "parse", str(report), "--json")
    assert out.returncode == 0, out.stderr
    runs = json.loads(out.stdout)
    assert runs[0]["header"]["version"] == "1.0.1e"
    by_size = {r["block_size"]: r["bytes_per_s"] for r in runs[0]["records"]}
    assert by_size == {16: 305049900.0, 64: 327331200.0, 256: 332573950.0,
                       1024: 334071810.0, 8192: 333987840.0}


def test_import_stores_reference_results(tmp_path: Path) -> None:
    if not SEED_001.exists():
        import pytest

        pytest.skip("../shared/seeds is not beside this clone")
    results = tmp_path / "results"
    out = invoke("matrix", "import", str(SEED_001), "--as", "ivy-bridge-blog",
                 f"--results={results}")
    assert out.returncode == 0, out.stderr
    from openssl_matrix.results.records import read_figures, read_meta, run_dirs

    runs = [path for *_, path in run_dirs(results)]  # run folders or a compact file's runs
    assert [r.relative_to(results).parts for r in runs] == [
        ("ref-ivy-bridge-blog", "1.0.1e", "import", n) for n in ("0001", "0002")]
    meta = read_meta(runs[0])
    assert meta is not None and meta.kind == "reference"
    assert len(meta.extra["source_sha256"]) == 64
    figures = read_figures(runs[1])
    assert {f.block_size: f.bytes_per_s for f in figures}[8192] == 170519210.0
    exported = invoke("matrix", "export", f"--results={results}")
    assert "ref-ivy-bridge-blog,1.0.1e,1.0.1e,import,0002" in exported.stdout


def test_import_needs_a_name(tmp_path: Path) -> None:
    out = invoke("matrix", "import", "x.txt")
    assert out.returncode == 10 and "--as NAME" in out.stderr
    out = invoke("matrix", "list", "--as", "x")
    assert out.returncode == 10 and "does not take --as" in out.stderr
