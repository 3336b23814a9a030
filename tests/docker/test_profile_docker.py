"""`invoke matrix profile` on a real build: sha256 at 16 bytes of 3.0.20-asm-x86_64 under perf.

The variant image is the default matrix's (built here if missing, reused if on the
engine); the profile image FROM it (Debian's linux-perf, with apt) is built on demand.
Only what holds under host noise is asserted: a status a figure could have, samples, a
named libcrypto function among the top entries, a time per operation, the files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest

from openssl_matrix.cli.shared import handlers

from ..conftest import built_matrix

pytestmark = pytest.mark.docker
VARIANT = "3.0.20-asm-x86_64"
SUITES = {"digest": {"algorithms": ["sha256"], "seconds": 1, "bytes": 16},
          "pk": {"kind": "pkey", "algorithms": ["rsa2048"], "seconds": 1}}


def test_profile_sha256_16_bytes_on_a_real_build(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    path, _, tree, _ = built_matrix(tmp_path_factory.mktemp("profile"), SUITES, "digest",
                                    VARIANT)
    capsys.readouterr()
    code = handlers()["profile"](target="", matrix=str(path), results=str(tree.root),
                                 only=VARIANT, algorithm="sha256", bytes=16, suite="", cell="",
                                 seconds=1, compare="", json=True)
    assert code == 0
    (meta,) = json.loads(capsys.readouterr().out)["profiles"]
    folder = Path(meta["folder"])
    assert folder.parent == tree.root / "_profiles" / VARIANT / "speed-sha256-16"
    assert meta["status"] in ("ok", "contended")
    assert meta["samples"] > 0 and meta["operations"] > 0 and meta["ns_per_op"] > 0
    assert meta["profiler"]["event"] == "cpu-clock"
    assert meta["host"] is not None and meta["host"]["elapsed_s"] > 0
    assert meta["profile_image_id"] and meta["image_id"]
    # perf script ran in the container that ran speed: libcrypto's symbols are named
    top = [row["name"] for row in meta["top_functions"][:5]]
    assert any(n.endswith("(libcrypto)") and not n.startswith("[") for n in top), top
    assert meta["libraries"][0]["ns_per_op"] > 0
    on_disk = json.loads((folder / "meta.json").read_text())
    assert on_disk["status"] == meta["status"] and on_disk["samples"] == meta["samples"]
    folded = (folder / "stacks.folded").read_text().splitlines()
    assert folded and all(re.fullmatch(r"\S.* \d+", line) for line in folded)
    assert "cpu-clock" in (folder / "perf-script.txt").read_text()
    root = ElementTree.fromstring((folder / "flame.svg").read_text())
    assert root.tag.endswith("svg") and len(root) > 1


def test_profile_of_a_pkey_cell_counts_its_own_phase(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    """rsa2048 sign through --suite/--cell: speed runs sign then verify; the profile is the
    sign phase alone (its window on perf's realtime clock) over sign's own count."""
    path, _, tree, _ = built_matrix(tmp_path_factory.mktemp("profile-pk"), SUITES, "digest",
                                    VARIANT)
    capsys.readouterr()
    code = handlers()["profile"](target="", matrix=str(path), results=str(tree.root),
                                 only=VARIANT, algorithm="", bytes=0, suite="pk",
                                 cell="rsa2048:sign", seconds=1, compare="", json=True)
    assert code == 0
    (meta,) = json.loads(capsys.readouterr().out)["profiles"]
    assert meta["cell"]["kind"] == "pkey" and meta["cell"]["operation"] == "sign"
    assert meta["operations"] > 0 and meta["ns_per_op"] > 0 and meta["samples"] > 0
    start, end = meta["window"]
    assert 0 < end - start < 10  # one phase of a 1-second run, not the whole process
    assert meta["status"] in ("ok", "contended")
    top = [row["name"] for row in meta["top_functions"][:5]]
    assert any(n.endswith("(libcrypto)") and not n.startswith("[") for n in top), top


def test_profile_overhead_runs_the_cell_unprofiled_around_the_profiled_run(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    """--overhead on sha256 at 16 bytes: three real runs in the profile image (unprofiled,
    under perf, unprofiled), each with its rate and host accounting. Only what holds on a
    busy host is asserted: positive rates, a ratio within a wide interval, statuses."""
    path, _, tree, _ = built_matrix(tmp_path_factory.mktemp("profile-over"), SUITES,
                                    "digest", VARIANT)
    capsys.readouterr()
    code = handlers()["profile"](target="", matrix=str(path), results=str(tree.root),
                                 only=VARIANT, algorithm="sha256", bytes=16, suite="", cell="",
                                 seconds=1, compare="", json=True, overhead=True)
    assert code == 0
    (meta,) = json.loads(capsys.readouterr().out)["profiles"]
    over = meta["overhead"]
    runs = over["runs"]
    assert [r["role"] for r in runs] == ["unprofiled, before", "profiled",
                                         "unprofiled, after"]
    for r in runs:
        assert r["operations"] > 0 and r["ops_per_s"] > 0 and r["seconds"] > 0
        assert r["status"] in ("ok", "contended")
        assert r["host"] is not None and r["host"]["elapsed_s"] > 0
    assert runs[1]["operations"] == meta["operations"]  # the profile is the profiled run
    assert 0.2 < over["ratio"] < 2.0 and 0 <= over["spread"] < 1.0
    assert over["contended"] == any(r["status"] != "ok" for r in runs)
    on_disk = json.loads((Path(meta["folder"]) / "meta.json").read_text())
    assert on_disk["overhead"]["ratio"] == over["ratio"]
