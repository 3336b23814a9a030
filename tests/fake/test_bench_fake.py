"""Bencher with guards, repetitions and profiles, against the fake backend and real outputs."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from openssl_matrix.core import statuses
from openssl_matrix.core.files import write_json
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.benchfigure import FigureFields
from openssl_matrix.measure.runrecord import HostRecord, InvocationEntry, RunRecord
from openssl_matrix.measure.session import Bencher
from openssl_matrix.measure.speedcmd import unwrap_speed
from openssl_matrix.results.export import render as export
from openssl_matrix.results.tree import ResultsTree

from ..conftest import make_tarball
from ..fakes import FakeBackend
from ..values import num

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "guards" / "real-1.1.1w"


def fixture(name: str) -> str:
    return (FIX / name).read_text()


def responder(image: str, command: Sequence[str], env: Mapping[str, str],
              ) -> tuple[int, str, str]:
    """Real 1.1.1w outputs: the afalg engine fails to init, speed runs software anyway."""
    cmd = unwrap_speed(command)
    if cmd[:4] == ("openssl", "engine", "-t", "-c"):
        name = cmd[4]
        code = 1 if name == "afalg" else 0
        return code, fixture(f"engine-check--{name}.stdout"), \
            fixture(f"engine-check--{name}.stderr")
    assert cmd[:2] == ("openssl", "speed")
    if "-engine" in cmd and cmd[cmd.index("-engine") + 1] == "afalg":
        return 0, fixture("speed-afalg.stdout"), fixture("speed-afalg.stderr")
    return 0, fixture("speed-builtin.stdout"), fixture("speed-builtin.stderr")


@pytest.fixture
def matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "src"
    src.mkdir()
    sha = make_tarball(src / "openssl-1.1.1w.tar.gz", "1.1.1w")
    path = tmp_path / "matrix.yaml"
    path.write_text(f"""
versions:
  1.1.1w:
    sha256: {sha}
    urls: [file://{src}/openssl-1.1.1w.tar.gz]
axes:
  march: [default, znver2]
suites:
  engines:
    algorithms: [aes-128-cbc]
    seconds: 1
    bytes: 8192
    engine: [none, afalg, padlock]
  rep:
    algorithms: [aes-128-cbc]
    seconds: 1
    bytes: 8192
    repeat: 3
profiles:
  xeon-e3-1220:
    description: Intel Xeon E3-1220 (Sandy Bridge)
    vendor: GenuineIntel
    model: "*E31220*"
    flags: [aes, avx]
    clock_ghz: 3.1
    march: sandybridge
  epyc:
    description: this kind of machine
    vendor: AuthenticAMD
    model: "*EPYC*"
    clock_ghz: 2.45
    cpuset: "1"
""")
    return path


def setup(matrix: Path, tmp_path: Path) -> tuple[Bencher, FakeBackend, ResultsTree]:
    m = load_matrix(matrix, default_urls=default_urls)
    backend = FakeBackend(responder)
    tree = ResultsTree(tmp_path / "results")
    Builder(m, backend, tree, workdir=tmp_path / "work").build(list(m.variants))
    return Bencher(m, backend, tree, engine=backend.engine_info(), git_commit="abc"), \
        backend, tree


def test_engine_that_failed_to_init_is_labelled(matrix: Path, tmp_path: Path) -> None:
    bencher, _, _ = setup(matrix, tmp_path)
    m = bencher.matrix
    [out] = bencher.bench(m.select("1.1.1w-asm-x86_64"), m.suite("engines"), "epyc")
    assert out.status == "complete"
    by_inv = {f["invocation"]: f for f in out.figures}
    assert by_inv["default--afalg--aes-128-cbc"]["status"] == statuses.ENGINE_NOT_ENGAGED
    assert by_inv["default--padlock--aes-128-cbc"]["status"] == statuses.ENGINE_NOT_ENGAGED
    # the built-in run is not an engine run; its user time (0.22 s of 1 s) is flagged
    assert by_inv["default--aes-128-cbc"]["status"] == statuses.TIME_BASIS
    assert num(by_inv["default--afalg--aes-128-cbc"]["bytes_per_s"]) > 1e8
    assert any("engine-not-engaged: default--afalg" in w for w in out.warnings)
    meta = json.loads((Path(str(out.run_dir)) / "meta.json").read_text())
    assert meta["engine_checks"]["afalg"]["available"] is False
    assert meta["pinning"] == {"cpuset": "1", "source": "profile epyc"}
    assert meta["clock_hz"] == 2.45e9 and "profile epyc" in meta["clock_source"]
    assert meta["host"]["loadavg_before"] == "0.10 0.20 0.30 1/100 123"
    raw = Path(str(out.run_dir)) / "raw"
    assert (raw / "engine-check--afalg.stderr").read_text().count("init failed") == 1
    # cycles per byte from the profile's clock
    fig = by_inv["default--aes-128-cbc"]
    assert fig["cycles_per_byte"] == pytest.approx(2.45e9 / num(fig["bytes_per_s"]))


def _declared(td: type) -> set[str]:
    return set(td.__required_keys__ | td.__optional_keys__)  # type: ignore[attr-defined]


def test_the_run_record_and_figures_name_only_their_types_keys(matrix: Path,
                                                                 tmp_path: Path) -> None:
    """The typed records are not checked at run time: what a bench files names only the
    keys ``RunRecord``, ``HostRecord``, ``InvocationEntry`` and ``FigureFields`` declare."""
    bencher, _, _ = setup(matrix, tmp_path)
    m = bencher.matrix
    [out] = bencher.bench(m.select("1.1.1w-asm-x86_64"), m.suite("engines"), "epyc")
    run_dir = Path(str(out.run_dir))
    meta = json.loads((run_dir / "meta.json").read_text())
    assert set(meta) - {"schema"} <= _declared(RunRecord), set(meta) - _declared(RunRecord)
    assert set(meta["host"]) <= _declared(HostRecord)
    assert meta["invocations"] and all(set(e) <= _declared(InvocationEntry)
                                       for e in meta["invocations"])
    figures = json.loads((run_dir / "figures.json").read_text())
    assert figures and all(set(f) - {"schema"} <= _declared(FigureFields) for f in figures)
    # the image's build record reaches the run record as build.json has it
    build = bencher.tree.build_record("1.1.1w-asm-x86_64", meta["build"]["digest"])
    assert build is not None
    assert meta["build"] == {k: build.get(k) for k in meta["build"]}
    assert meta["image_id"] == build["image_id"] and meta["image_tag"] == build["tag"]


def test_repetitions_are_interleaved_and_summarised(matrix: Path, tmp_path: Path) -> None:
    bencher, _, tree = setup(matrix, tmp_path)
    m = bencher.matrix
    outs = bencher.bench(m.select("1.1.1w-asm-*"), m.suite("rep"), "auto")
    assert [(o.variant, o.round) for o in outs] == [
        ("1.1.1w-asm-x86_64", 1), ("1.1.1w-asm-x86_64-march-znver2", 1),
        ("1.1.1w-asm-x86_64", 2), ("1.1.1w-asm-x86_64-march-znver2", 2),
        ("1.1.1w-asm-x86_64", 3), ("1.1.1w-asm-x86_64-march-znver2", 3)]
    suite_dir = tree.root / "host-amd-epyc-7b13" / "1.1.1w-asm-x86_64" / "rep"
    assert sorted(p.name for p in suite_dir.iterdir() if p.is_dir()) == ["0001", "0002", "0003"]
    [series_file] = suite_dir.glob("series-*.json")
    series = json.loads(series_file.read_text())
    assert series["rounds"] == 3 and len(series["runs"]) == 3
    [row] = series["figures"]
    assert row["n"] == 3 and row["cv"] == 0.0 and row["noisy"] is False
    assert row["median"] == row["min"] == row["max"] == 38422 * 8192
    meta = json.loads((suite_dir / "0002" / "meta.json").read_text())
    assert meta["round"] == 2 and meta["series"]["id"] in series_file.name
    # --repeat overrides the suite
    more = bencher.bench(m.select("1.1.1w-asm-x86_64"), m.suite("rep"), "auto", repeat=2)
    assert [o.round for o in more] == [1, 2]


def test_forced_run_flags_a_binary_the_profile_cpu_cannot_run(matrix: Path,
                                                               tmp_path: Path) -> None:
    bencher, _, _ = setup(matrix, tmp_path)
    m = bencher.matrix
    outs = bencher.bench(m.select("1.1.1w-asm-*"), m.suite("rep"), "xeon-e3-1220",
                         force=True, repeat=1)
    znver2 = next(o for o in outs if o.variant.endswith("znver2"))
    plain = next(o for o in outs if not o.variant.endswith("znver2"))
    assert {f["status"] for f in znver2.figures} == {statuses.CANNOT_RUN}
    assert any("-march=znver2" in w and "avx2" in w for w in znver2.warnings)
    assert statuses.CANNOT_RUN not in {f["status"] for f in plain.figures}
    meta = json.loads((Path(str(znver2.run_dir)) / "meta.json").read_text())
    assert meta["forced"] is True
    # forced onto another CPU: cycles use this host's clock, not the profile's 3.1 GHz
    assert meta["clock_hz"] == 2450.0e6 and "host" in meta["clock_source"]


def test_bench_uses_an_older_build_when_latest_is_not_on_this_engine(
        matrix: Path, tmp_path: Path) -> None:
    bencher, backend, tree = setup(matrix, tmp_path)
    v = bencher.matrix.select("1.1.1w-asm-x86_64")[0]
    tag, record = bencher.image_for(v)
    write_json(tree.root / "_builds" / v.id / "latest.json",
               {"digest": "f" * 64, "tag": "openssl-matrix/elsewhere:ffff"})
    assert bencher.image_for(v) == (tag, record)
    del backend.images[tag]
    with pytest.raises(Exception, match="not built on fake"):
        bencher.image_for(v)


def test_export_has_guard_and_cycle_columns(matrix: Path, tmp_path: Path) -> None:
    bencher, _, tree = setup(matrix, tmp_path)
    m = bencher.matrix
    bencher.bench(m.select("1.1.1w-asm-x86_64"), m.suite("engines"), "epyc")
    rows = list(csv.DictReader(io.StringIO(export(tree, "csv"))))
    afalg = next(r for r in rows if r["engine"] == "afalg")
    assert afalg["status"] == statuses.ENGINE_NOT_ENGAGED
    assert statuses.ENGINE_NOT_ENGAGED in afalg["guards"].split(";")
    assert float(afalg["cycles_per_byte"]) > 0 and afalg["clock_hz"] == "2450000000.0"
    assert afalg["pinning"] == "1" and afalg["docker_endpoint"] == "fake"


def test_nothing_built_fails_at_once_without_waiting_for_a_busy_host(
        matrix: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tree with no build of the variants says so before queueing behind another
    measurement, and its hint builds into the same tree (reusing images)."""
    from openssl_matrix.engine.hostlock import HostLock, engine_key

    monkeypatch.setenv("OPENSSL_MATRIX_LOCK_DIR", str(tmp_path / "locks"))
    m = load_matrix(matrix, default_urls=default_urls)
    backend = FakeBackend(responder)
    backend.info["id"] = "FAKE:ENGINE"
    tree = ResultsTree(tmp_path / "empty")
    # not waiting: taking the held lock would raise EngineBusy (waiting would hang)
    bencher = Bencher(m, backend, tree, engine=backend.engine_info(), git_commit="abc",
                      wait_for_host=False)
    other = HostLock(engine_key(backend.engine_info()))
    with other.measuring("someone else's bench", say=lambda _: None):
        outs = bencher.bench(m.select("1.1.1w-asm-x86_64"), m.suite("rep"), "epyc")
    assert [o.status for o in outs] == ["failed"]
    with pytest.raises(Exception) as exc:
        bencher.image_for(m.select("1.1.1w-asm-x86_64")[0])
    assert f"results tree {tree.root} has no build" in str(exc.value)
    assert f"--only 1.1.1w-asm-x86_64 --results {tree.root}`" in exc.value.hint  # type: ignore[attr-defined]


def test_a_wrong_profile_on_this_machine_is_refused_before_waiting_for_the_engine(
        fake_matrix: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`bench --cpu=via` on a machine that is no VIA C3: refused at once, even while
    another bench holds the engine (it used to wait for the lock, then refuse)."""
    import platform

    from openssl_matrix.core.errors import ProfileMismatch
    from openssl_matrix.engine.hostlock import EngineBusy, HostLock, engine_key

    monkeypatch.setenv("OPENSSL_MATRIX_LOCK_DIR", str(tmp_path / "locks"))
    fake_matrix.write_text(fake_matrix.read_text() + "\n".join([
        "  via-c3:", "    description: a VIA C3 (no machine running these tests is one)",
        "    vendor: CentaurHauls", "    model: \"*Nehemiah*\"", ""]))
    m = load_matrix(fake_matrix, default_urls=default_urls)
    backend = FakeBackend(responder)
    backend.info.update(id="ENGINE-HERE", endpoint="unix:///var/run/docker.sock",
                        kernel=platform.release())  # an engine on this machine
    tree = ResultsTree(tmp_path / "results")
    variants = m.select("1.1.1w-asm-x86_64")
    Builder(m, backend, tree, workdir=tmp_path / "work").build(variants)

    def bencher() -> Bencher:
        return Bencher(m, backend, tree, engine=backend.engine_info(), git_commit=None,
                       wait_for_host=False)

    with HostLock(engine_key(backend.engine_info())).measuring("someone else's bench",
                                                               wait=False):
        with pytest.raises(ProfileMismatch, match=r"--cpu=via-c3 .* does not describe"):
            bencher().bench(variants, m.suite("quick"), "via-c3")
        with pytest.raises(EngineBusy):  # a matching profile waits (here: refused) as before
            bencher().bench(variants, m.suite("quick"), "auto")
    # a remote engine: the check stays after the lock, through the engine
    backend.info.update(endpoint="ssh://bench@via.lab")
    with pytest.raises(ProfileMismatch):
        bencher().bench(variants, m.suite("quick"), "via-c3")
