"""Real OpenSSL 1.1.1w, built asm and no-asm in real containers, measured for real.

These need a Docker engine with the ``debian:bookworm`` base image (``bash .ci/setup``
provides both) and Debian's mirror for the source tarball. The first run builds
the images (a few minutes on 2 cores); later runs find them up to date.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from openssl_matrix.engine.backend import DockerBackend
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.hostinfo import parse_cpuinfo
from openssl_matrix.measure.session import Bencher
from openssl_matrix.results.export import records
from openssl_matrix.results.tree import ResultsTree

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]


def cpu_has(flag: str) -> bool:
    return flag in parse_cpuinfo(Path("/proc/cpuinfo").read_text()).flags


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Builder, ResultsTree]:
    results = tmp_path_factory.mktemp("results")
    m = load_matrix(ROOT / "matrix.yaml", default_urls=default_urls)
    backend = DockerBackend()
    tree = ResultsTree(results)
    builder = Builder(m, backend, tree, workdir=tmp_path_factory.mktemp("work"))
    outcomes = builder.build(m.select("1.1.1w-*"), jobs=1)
    assert [o.status for o in outcomes] in (["built", "built"], ["up-to-date", "up-to-date"],
                                            ["built", "up-to-date"], ["up-to-date", "built"])
    return builder, tree


def test_image_runs_the_built_openssl(built: tuple[Builder, ResultsTree]) -> None:
    builder, tree = built
    m = builder.matrix
    for v in m.select("1.1.1w-*"):
        latest = json.loads((tree.root / "_builds" / v.id / "latest.json").read_text())
        out = subprocess.run(["docker", "run", "--rm", "--network", "none", latest["tag"],
                              "openssl", "version"], capture_output=True, text=True, check=True)
        assert out.stdout.startswith("OpenSSL 1.1.1w "), out.stdout
        record = json.loads(next((tree.root / "_builds" / v.id).glob("*/build.json"))
                            .read_text())
        assert record["tarball_sha256"] == v.version.sha256
        assert ("no-asm" in record["configure_line"]) == (not v.asm)
        assert record["openssl_version_a"].startswith("OpenSSL 1.1.1w")
        # x86_64 assembler carries no ENDBR32 (that is a 32-bit instruction)
        assert record["endbr32"] == 0


def test_second_build_is_a_no_op(built: tuple[Builder, ResultsTree]) -> None:
    builder, _ = built
    again = builder.build(builder.matrix.select("1.1.1w-*"))
    assert [o.status for o in again] == ["up-to-date", "up-to-date"]


@pytest.mark.skipif(not cpu_has("aes"), reason="this CPU has no AES-NI (no 'aes' flag)")
def test_aesni_asm_beats_no_asm_and_masking_lowers_it(built: tuple[Builder,
                                                                 ResultsTree]) -> None:
    builder, tree = built
    m = builder.matrix
    backend = DockerBackend()
    bencher = Bencher(m, backend, tree, engine=backend.engine_info(), git_commit=None)
    # One sample a side can be slowed by up to ~40 % on a VM whose core is shared (and a
    # neighbour only ever slows a run): the bench is run again, up to three times, and the
    # best figure of each side compared, until both ratios hold.
    best: dict[tuple[str, str], float] = {}
    for _ in range(3):
        outcomes = bencher.bench(m.select("1.1.1w-*"), m.suite("aes8k"), "auto")
        assert [o.status for o in outcomes] == ["complete", "complete"]
        for r in records(tree):
            if r["algorithm"] == "aes-128-cbc" and r["block_size"] == 8192 and r["evp"]:
                key = (r["variant"], r["mask"])
                best[key] = max(best.get(key, 0.0), r["bytes_per_s"])
        asm = best[("1.1.1w-asm-x86_64", "native")]
        no_asm = best[("1.1.1w-no-asm-x86_64", "native")]
        masked = best[("1.1.1w-asm-x86_64", "no-aesni")]
        if asm > 2 * no_asm and masked < asm / 1.5:
            break
    assert asm > 2 * no_asm, f"asm {asm:.3g} B/s vs no-asm {no_asm:.3g} B/s (best of runs)"
    assert masked < asm / 1.5, f"AES-NI masked {masked:.3g} B/s vs on {asm:.3g} B/s (best)"
    # the raw output and metadata sit beside the figures
    run = Path(str(outcomes[0].run_dir))
    meta = json.loads((run / "meta.json").read_text())
    assert meta["openssl_version_a"].startswith("OpenSSL 1.1.1w")
    assert meta["image_id"].startswith("sha256:")
    assert meta["docker"]["server_version"]
    assert "aes" in meta["host"]["cpu_flags"]
    assert (run / "raw" / "native--aes-128-cbc.stdout").read_text().startswith("+H:8192")


def test_invoke_command_lines_as_typed(built: tuple[Builder, ResultsTree],
                                       tmp_path: Path) -> None:
    """`invoke matrix build` and `invoke matrix bench --cpu=...` exactly as a user types them."""
    _, tree = built
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def invoke(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["invoke", "matrix", *args, f"--results={tree.root}"],
                              cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)

    out = invoke("build", "--only", "1.1.1w-*")
    assert out.returncode == 0, out.stderr
    assert "up to date" in out.stdout

    refused = invoke("bench", "--cpu=ryzen", "--only", "1.1.1w-asm-*", "--suite", "aes8k")
    assert refused.returncode == 7
    assert "--cpu=ryzen" in refused.stderr and "does not describe this host" in refused.stderr
    assert "Traceback" not in refused.stderr

    ok = invoke("bench", "--cpu=auto", "--only", "1.1.1w-asm-*", "--suite", "aes8k")
    assert ok.returncode == 0, ok.stderr
    assert "complete" in ok.stdout
    exported = invoke("export", "--format", "jsonl")
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    assert any(r["variant"] == "1.1.1w-asm-x86_64" and r["bytes_per_s"] for r in rows)
