"""benchmarks/run.py --quick for real, on the 1.1.1w images (split from test_benchmarks.py,
whose other tests need no engine)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.docker
def test_quick_benchmark_runs_for_real(tmp_path: Path) -> None:
    """`python benchmarks/run.py --quick` on the 1.1.1w images: a real table comes out."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick",
         "--sections", "fidelity,noop,overhead", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=1800,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    # exit 2 means a goal was missed (a busy CI machine can do that); 1 means it broke
    assert out.returncode in (0, 2), out.stderr[-3000:]
    # the first column is as wide as its widest number ("2a" appears when the no-op
    # matrix had to be built first, as on a fresh machine)
    assert re.search(r"^\| 1 +\| fidelity aes-128-cbc", out.stdout, re.M), out.stdout
    assert "load at start:" in out.stdout
    data = json.loads((tmp_path / "benchmark.json").read_text())
    fid = data["fidelity"][0]
    assert len(fid["tool_bytes_per_s"]) == len(fid["host_bytes_per_s"]) == 3
    # the same binary, inside and outside the container: the same order of magnitude
    # even on a busy machine, and AES-NI-fast (> 300 MB/s) where the CPU has it
    assert 0.25 < fid["ratio_of_medians"] < 4
    if "aes" in data["machine"]["cpu_flags_of_interest"]:
        assert max(fid["host_bytes_per_s"]) > 3e8, fid  # the best of 3: noise only slows
    noop = data["noop"]
    assert noop["api_build_calls"] == 0 and noop["api_container_runs"] == 0
    assert noop["image_ids_unchanged"] is True
    assert len(noop["cli_seconds"]) == 3 and all(s > 0 for s in noop["cli_seconds"])
    over = data["overhead"]
    assert over["container_s"] > 0, "a container cannot start in no time"
    assert len(over["host_speed_s"]) == 2 and all(s >= 1.0 for s in over["host_speed_s"])

