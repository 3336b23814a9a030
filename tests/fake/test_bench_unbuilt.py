"""`invoke matrix bench` over several suites with variants that are not built (the
container engine faked at its seam, tests/fakes.py): each unbuilt variant is named once,
with the suites that could not run on it and the command that builds it; the exit code,
the cell count and the results tree are those of any failed cell."""

from __future__ import annotations

from pathlib import Path

import pytest
from invoke.exceptions import Exit

from openssl_matrix.cli.shared import handlers
from openssl_matrix.cli.table import dispatch
from openssl_matrix.core.errors import BenchError
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.speedcmd import unwrap_speed
from openssl_matrix.results.tree import ResultsTree

from ..fakes import FakeBackend, engine_of
from .test_resume import PersistentFake, bench_flags, setup_tree

UNBUILT = ("1.1.1w-no-asm-x86_64", "3.0.20-no-asm-x86_64")  # setup_tree builds the asm ones


def with_suites(fake_matrix: Path) -> None:
    fake_matrix.write_text(fake_matrix.read_text().replace("profiles:", """  second:
    algorithms: [aes-128-cbc]
    seconds: 1
    bytes: 8192
  third:
    algorithms: [aes-256-cbc]
    seconds: 1
    bytes: 8192
profiles:"""))


def test_an_unbuilt_variant_is_named_once_with_its_suites_and_the_fix(
        fake_matrix: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    with_suites(fake_matrix)
    m, state, tree = setup_tree(fake_matrix, tmp_path)
    backends: list[FakeBackend] = []

    def engine() -> FakeBackend:
        backends.append(PersistentFake(state))
        return backends[-1]

    table = handlers(engine_of(engine))
    flags = bench_flags(fake_matrix, tree, only="1.1.1w-*,3.0.20-*",
                        suite="quick,second,third")
    with pytest.raises(Exit) as exc:
        dispatch("bench", "", flags, table)
    assert exc.value.code == BenchError.exit_code
    out = capsys.readouterr()
    for vid in UNBUILT:
        build = f"invoke matrix build --only {vid} --results {tree}"
        errors = [line for line in out.err.splitlines() if f"{vid} is not built" in line]
        assert errors == [f"error: {vid} is not built on fake: the results tree {tree} has "
                          "no build of it whose image is there; suites quick, second, third "
                          "cannot run on it"], out.err
        assert out.err.count(f"run `{build}` first") == 1
        failures = [line for line in out.out.splitlines()
                    if line.startswith("  ✕") and vid in line]
        assert failures == [f"  ✕ {vid}: not built on this engine — suites quick, second, "
                            f"third could not run on it; run `{build}` first"], out.out
        # each suite's summary still accounts for the variant, in one short line
        assert out.out.count(f"  {vid}: not built — not measured") == 3
    assert "did not finish (" not in out.err, "no per-suite warning repeats the variants"
    # unchanged: one cell per variant and suite did not complete, the built ones are kept
    assert "error: 6 cell(s) or suite(s) did not complete" in out.err
    assert "the others finished and are kept; build what is missing (`invoke matrix build " \
        f"--only {','.join(UNBUILT)} --results {tree}`)" in out.err
    runs = {(r.variant, r.suite): r.meta["status"] for r in ResultsTree(tree).runs()}
    assert runs == {(v, s): "complete" for v in ("1.1.1w-asm-x86_64", "3.0.20-asm-x86_64")
                    for s in ("quick", "second", "third")}
    assert len(list((tree / "_journal").glob("bench-*.json"))) == 3, \
        "the sessions stay open: a rerun measures only what did not finish"

    # built, the same command measures only the variants that were missing
    Builder(m, PersistentFake(state), ResultsTree(tree), workdir=tmp_path / "work").build(
        [v for v in m.select("*") if v.id in UNBUILT])
    dispatch("bench", "", flags, table)
    measured = {img.split("/")[1].split(":")[0] for img, cmd, _ in backends[-1].runs
                if unwrap_speed(cmd)[:2] == ("openssl", "speed")}
    assert measured == set(UNBUILT)
    assert "is not built" not in capsys.readouterr().err


def test_one_suite_names_its_suite(fake_matrix: Path, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    _m, state, tree = setup_tree(fake_matrix, tmp_path)
    table = handlers(engine_of(lambda: PersistentFake(state)))
    with pytest.raises(Exit) as exc:
        dispatch("bench", "", bench_flags(fake_matrix, tree, only="1.1.1w-no-asm-*",
                                          suite="quick"), table)
    assert exc.value.code == BenchError.exit_code
    out = capsys.readouterr()
    assert out.err.count("1.1.1w-no-asm-x86_64 is not built on fake") == 1
    assert "; suite quick cannot run on it" in out.err
    assert "nothing was measured; fix the cause and rerun the same command" in out.err
    assert "  ✕ 1.1.1w-no-asm-x86_64: not built on this engine — suite quick could not run " \
        f"on it; run `invoke matrix build --only 1.1.1w-no-asm-x86_64 --results {tree}` " \
        "first" in out.out
    assert not list(tree.glob("host-*")), "nothing measured, no run folder"


def test_a_bencher_without_the_commands_suites_reports_each_bench_call(
        fake_matrix: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The Python API (reproduce, benchmarks) calls bench() per suite and hears of an
    unbuilt variant at each call, as before."""
    from openssl_matrix.measure.session import Bencher

    m = load_matrix(fake_matrix, default_urls=default_urls)
    backend = FakeBackend()
    bencher = Bencher(m, backend, ResultsTree(tmp_path / "r"), engine=backend.engine_info(),
                      git_commit=None)
    for _ in range(2):
        [outcome] = bencher.bench(m.select("1.1.1w-asm-*"), m.suite("quick"), "auto")
        assert outcome.status == "failed" and outcome.unbuilt
    assert capsys.readouterr().err.count("1.1.1w-asm-x86_64 is not built on fake") == 2
