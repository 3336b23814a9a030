"""`invoke matrix ...` command lines as a user types them (no Docker needed)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
    assert len(files) == 4
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
