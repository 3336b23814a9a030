"""Build and bench logic against the fake backend: no Docker, real files."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from openssl_matrix.core.errors import ProfileMismatch, ResultsError
from openssl_matrix.engine.engineinfo import EngineInfo
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.session import Bencher
from openssl_matrix.measure.speedcmd import speed_invocations, unwrap_speed
from openssl_matrix.results.export import render as export
from openssl_matrix.results.tree import ResultsTree

from ..fakes import FakeBackend, fake_bench

# Real -mr output of `openssl speed -elapsed -mr -seconds 1 -bytes 8192 -evp aes-128-cbc`
# from this project's 1.1.1w asm build on an AMD EPYC (stdout and stderr).
MR_STDOUT = "+H:8192\n+F:22:aes-128-cbc:1426407424.00\n"
MR_STDERR = "+DT:aes-128-cbc:1:8192\n+R:174122:aes-128-cbc:1.000000\n"


def speed_responder(image: str, command: Sequence[str], env: Mapping[str, str],
                    ) -> tuple[int, str, str]:
    command = unwrap_speed(command)
    assert command[:4] == ("openssl", "speed", "-elapsed", "-mr")
    if "OPENSSL_ia32cap" in env:
        return 0, MR_STDOUT.replace("1426407424.00", "298614784.00"), MR_STDERR
    return 0, MR_STDOUT, MR_STDERR


def test_build_then_up_to_date(fake_matrix: Path, tmp_path: Path) -> None:
    m = load_matrix(fake_matrix, default_urls=default_urls)
    backend = FakeBackend()
    tree = ResultsTree(tmp_path / "results")
    builder = Builder(m, backend, tree, workdir=tmp_path / "work")
    first = builder.build(list(m.variants), jobs=2)
    assert [o.status for o in first] == ["built"] * 4
    # one toolchain image + four variants
    assert len(backend.builds) == 5
    tags = {o.variant: o.tag for o in first}
    assert str(tags["1.1.1w-asm-x86_64"]).startswith("openssl-matrix/1.1.1w-asm-x86_64:")
    record = json.loads(next((tmp_path / "results/_builds/1.1.1w-asm-x86_64").glob(
        "*/build.json")).read_text())
    assert record["endbr32"] == 0
    assert record["configure_line"].startswith("perl ./Configure linux-x86_64")
    assert len(record["tarball_sha256"]) == 64

    second = Builder(m, backend, tree, workdir=tmp_path / "work").build(list(m.variants))
    assert [o.status for o in second] == ["up-to-date"] * 4
    assert len(backend.builds) == 5, "an unchanged variant must not be rebuilt"


def test_changed_matrix_rebuilds_only_the_changed_variant(fake_matrix: Path,
                                                          tmp_path: Path) -> None:
    m = load_matrix(fake_matrix, default_urls=default_urls)
    backend = FakeBackend()
    tree = ResultsTree(tmp_path / "results")
    Builder(m, backend, tree, workdir=tmp_path / "work").build(list(m.variants))
    fake_matrix.write_text(fake_matrix.read_text().replace(
        "    urls: [file://", "    configure: [no-idea]\n    urls: [file://", 1))
    m2 = load_matrix(fake_matrix, default_urls=default_urls)
    out = Builder(m2, backend, tree, workdir=tmp_path / "work").build(list(m2.variants))
    assert [o.status for o in out] == ["built", "built", "up-to-date", "up-to-date"]


def bench_setup(fake_matrix: Path, tmp_path: Path) -> tuple[Bencher, FakeBackend, ResultsTree]:
    _, backend, tree, bencher = fake_bench(fake_matrix, tmp_path, speed_responder)
    return bencher, backend, tree


def test_bench_writes_tree_and_never_overwrites(fake_matrix: Path, tmp_path: Path) -> None:
    bencher, backend, _tree = bench_setup(fake_matrix, tmp_path)
    m = bencher.matrix
    variants = m.select("1.1.1w-asm-*")
    out = bencher.bench(variants, m.suite("quick"), "auto")
    assert [o.status for o in out] == ["complete"]
    run = tmp_path / "results/host-amd-epyc-7b13/1.1.1w-asm-x86_64/quick/0001"
    meta = json.loads((run / "meta.json").read_text())
    assert meta["status"] == "complete"
    assert meta["host"]["cpu_model"] == "AMD EPYC 7B13"
    assert meta["matrix_digest"] == m.digest
    assert meta["tarball_sha256"]
    assert (run / "raw/native--aes-128-cbc.stdout").read_text() == MR_STDOUT
    figures = json.loads((run / "figures.json").read_text())
    by_mask = {f["mask"]: f["bytes_per_s"] for f in figures}
    assert by_mask == {"native": 1426407424.0, "no-aesni": 298614784.0}
    # the container got the mask in its environment, not in a shell string
    envs = [env for _, cmd, env in backend.runs if unwrap_speed(cmd)[:2] == ("openssl", "speed")]
    assert envs == [{}, {"OPENSSL_ia32cap": "~0x200000200000000:~0x0"}]

    bencher.bench(variants, m.suite("quick"), "auto")
    assert (run.parent / "0002/figures.json").exists()
    assert (run / "figures.json").read_text() == json.dumps(figures, indent=2,
                                                             sort_keys=True) + "\n"


def test_profile_mismatch_is_refused_unless_forced(fake_matrix: Path, tmp_path: Path) -> None:
    bencher, _, _ = bench_setup(fake_matrix, tmp_path)
    m = bencher.matrix
    with pytest.raises(ProfileMismatch, match=r"--cpu=ryzen .*AMD EPYC 7B13"):
        bencher.bench(m.select("1.1.1w-asm-*"), m.suite("quick"), "ryzen")
    out = bencher.bench(m.select("1.1.1w-asm-*"), m.suite("quick"), "ryzen", force=True)
    meta = json.loads((Path(str(out[0].run_dir)) / "meta.json").read_text())
    assert meta["forced"] is True
    assert out[0].run_dir and "/ryzen/" in out[0].run_dir


def test_one_failing_invocation_does_not_stop_the_rest(fake_matrix: Path,
                                                       tmp_path: Path) -> None:
    bencher, backend, _ = bench_setup(fake_matrix, tmp_path)

    def flaky(image: str, command: Sequence[str], env: Mapping[str, str],
              ) -> tuple[int, str, str]:
        if "OPENSSL_ia32cap" in env:
            return 132, "", "Illegal instruction\n"
        return speed_responder(image, command, env)

    backend.responder = flaky
    m = bencher.matrix
    out = bencher.bench(m.select("1.1.1w-asm-*,3.0.20-asm-*"), m.suite("quick"), "auto")
    assert [o.status for o in out] == ["partial", "partial"]
    assert "Illegal instruction" in " ".join(out[0].warnings)
    assert [f["mask"] for f in out[0].figures] == ["native"]


def test_export_csv_has_the_documented_columns(fake_matrix: Path, tmp_path: Path) -> None:
    bencher, _, tree = bench_setup(fake_matrix, tmp_path)
    m = bencher.matrix
    bencher.bench(m.select("1.1.1w-asm-*,3.0.20-asm-*"), m.suite("quick"), "auto")
    rows = list(csv.DictReader(io.StringIO(export(tree, "csv"))))
    assert len(rows) == 4
    need = {"cpu", "variant", "version", "suite", "run", "algorithm", "evp", "block_size",
            "bytes_per_s", "ops_per_s", "status"}
    assert need <= set(rows[0])
    row = next(r for r in rows if r["variant"] == "1.1.1w-asm-x86_64" and r["mask"] == "native")
    assert row["bytes_per_s"] == "1426407424.0"
    assert row["block_size"] == "8192"
    assert row["cpu"] == "host-amd-epyc-7b13"
    assert row["source"] == "measured"
    lines = export(tree, "jsonl").splitlines()
    assert json.loads(lines[0])["suite"] == "quick"


def test_results_lock_refuses_a_second_bench(tmp_path: Path) -> None:
    a = ResultsTree(tmp_path / "r")
    b = ResultsTree(tmp_path / "r")
    a.lock()
    try:
        with pytest.raises(ResultsError, match="in use by pid"):
            b.lock()
    finally:
        a.unlock()
    b.lock()
    b.unlock()


def test_speed_invocations_per_version() -> None:
    m = load_matrix(Path(__file__).resolve().parents[2] / "matrix.yaml")
    blog = m.suite("blog")
    inv, notes = speed_invocations("3.0.20", blog)
    idea = next(i for i in inv if i.algorithm == "idea-cbc")
    assert idea.command == ("openssl", "speed", "-elapsed", "-mr", "-seconds", "1",
                            "-provider", "legacy", "-provider", "default", "-evp", "idea-cbc")
    assert len(inv) == 12 and not notes
    inv, _ = speed_invocations("1.1.1w", blog)
    assert "-provider" not in next(i for i in inv if i.algorithm == "idea-cbc").command
    inv, notes = speed_invocations("1.0.1e", m.suite("aes8k"))
    assert "-seconds" not in inv[0].command and "-bytes" not in inv[0].command
    assert any("-bytes is not in 1.0.1e" in n for n in notes)


def test_wrong_profile_is_refused_before_anything_is_built(fake_matrix: Path,
                                                           tmp_path: Path) -> None:
    m = load_matrix(fake_matrix, default_urls=default_urls)
    backend = FakeBackend(speed_responder)
    bencher = Bencher(m, backend, ResultsTree(tmp_path / "r"), engine=EngineInfo(), git_commit=None)
    with pytest.raises(ProfileMismatch, match="model is 'AMD EPYC 7B13'"):
        bencher.bench(list(m.variants), m.suite("quick"), "ryzen")
    out = bencher.bench(list(m.variants), m.suite("quick"), "auto")
    assert {o.status for o in out} == {"failed"}
    assert "invoke matrix build --only" in str(out[0].error)
