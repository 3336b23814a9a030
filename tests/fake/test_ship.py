"""ship.py: how an image reaches an engine (build there or ship), its choice and its
provenance, with the container backend faked at its seam (two fake engines)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pytest

from openssl_matrix.cli.worker import thread_lab
from openssl_matrix.core.errors import UsageError
from openssl_matrix.engine.backend import ImageFacts
from openssl_matrix.engine.ship import (
    Choice,
    Costs,
    Peer,
    Shipper,
    Source,
    check_mode,
    check_registry,
    choose,
    rate_on_record,
    runs_on,
)
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.model import Matrix
from openssl_matrix.results import records
from openssl_matrix.results.tree import ResultsTree

from ..fakes import FakeBackend, engine_of

VARIANT = "1.1.1w-asm-x86_64"
MB = 1_000_000
X86 = {"arch": "x86_64", "os_type": "linux"}


def image(arch: str = "amd64", os: str = "linux", size: int = 200 * MB) -> ImageFacts:
    return ImageFacts(id="sha256:abc", size=size, os=os, arch=arch, labels={})


def test_an_engine_runs_its_own_architectures_only() -> None:
    assert runs_on(image("amd64"), X86) is None
    assert runs_on(image("386"), X86) is None, "an i386 image runs on an x86_64 engine"
    assert runs_on(image("arm64"), X86) == "an arm64 image, the engine is x86_64"
    assert runs_on(image("amd64"), {"arch": "aarch64", "os_type": "linux"}) is not None
    assert runs_on(image("amd64", os="windows"), X86) == \
        "a windows image, the engine runs linux"
    assert "not known" in (runs_on(image(), {"arch": "s390x"}) or "")


def test_the_choice_weighs_build_time_on_record_against_the_measured_rate() -> None:
    src = Source(Peer("main", FakeBackend(), {"id": "A"}), image())
    # forced either way
    assert choose("build", src, Costs(1.0, 200 * MB, 1e9)).way == "build"
    assert choose("ship", src, Costs(1.0, 200 * MB, 1.0)).way == "ship"
    # nobody holds it: auto builds, --images ship fails and says why
    assert choose("auto", None, None, ["b: an arm64 image, the engine is x86_64"]) == Choice(
        "build", "no other engine holds it (b: an arm64 image, the engine is x86_64)")
    failed = choose("ship", None, None)
    assert failed.way == "fail" and "--images ship, but no other engine holds it" in failed.why
    # 200 MB at 10 MB/s: 20 s, against 300 s of building → ship; against 15 s → build
    fast = choose("auto", src, Costs(300.0, 200 * MB, 10 * MB))
    assert fast.way == "ship" and fast.budget is None
    assert "takes ~20s, building took 300s on record" in fast.why
    slow = choose("auto", src, Costs(15.0, 200 * MB, 10 * MB))
    assert slow.way == "build" and slow.source is None
    # no rate on record: the shipment measures it, within the build time as a budget
    first = choose("auto", src, Costs(300.0, 200 * MB, None))
    assert first.way == "ship" and first.budget == 300.0 and "measures it" in first.why
    # no build time on record: nothing to weigh against, ship
    assert choose("auto", src, Costs(None, 200 * MB, None)).way == "ship"
    assert check_mode("") == "auto"
    with pytest.raises(UsageError, match="not one of build, ship, auto"):
        check_mode("copy")
    assert check_registry("", "auto") is None
    assert check_registry("registry.lab:5000/openssl-matrix", "ship") == \
        "registry.lab:5000/openssl-matrix"
    for bad in ("http://registry.lab:5000", "registry lab", "host:port"):
        with pytest.raises(UsageError, match="expected HOST"):
            check_registry(bad, "auto")
    with pytest.raises(UsageError, match="does not go with --images build"):
        check_registry("registry.lab:5000", "build")


def ship_rec(rate: float, ended: str, src: str = "A", dst: str = "B",
             method: str = "save-load") -> records.ShipRecord:
    return records.ShipRecord(tag="t", image_id="i", method=method, bytes_per_s=rate,
                              from_engine={"id": src}, to_engine={"id": dst}, ended=ended)


def test_the_rate_on_record_is_the_median_of_the_last_three_between_the_same_engines() -> None:
    ships = [ship_rec(1.0, "2026-01-01"), ship_rec(50.0, "2026-01-02"),
             ship_rec(30.0, "2026-01-03"), ship_rec(40.0, "2026-01-04"),
             ship_rec(999.0, "2026-01-05", src="C"), ship_rec(999.0, "2026-01-05", dst="C"),
             ship_rec(999.0, "2026-01-05", method="registry")]
    assert rate_on_record(ships, {"id": "A"}, {"id": "B"}, "save-load") == 40.0
    assert rate_on_record(ships, {"id": "B"}, {"id": "A"}, "save-load") is None


# -- the build step with two fake engines ------------------------------------------------


@pytest.fixture
def lab(fake_matrix: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        ) -> tuple[Matrix, ResultsTree, FakeBackend, FakeBackend]:
    """Engine A has built 1.1.1w-asm-x86_64 (a 600 s build on record); engine B has only
    the base image."""
    monkeypatch.setenv("OPENSSL_MATRIX_LOCK_DIR", str(tmp_path / "locks"))
    m = load_matrix(fake_matrix, default_urls=default_urls)
    tree = ResultsTree(tmp_path / "results")
    a, b = FakeBackend(), FakeBackend()
    a.info.update(id="ENGINE-A", name="host-a")
    b.info.update(id="ENGINE-B", name="host-b")
    [out] = Builder(m, a, tree, workdir=tmp_path / "work-a").build(m.select(VARIANT))
    assert out.status == "built"
    bdir = tree.build_dir(VARIANT, out.record["digest"])
    record = json.loads((bdir / "build.json").read_text())
    assert record["engine"] == {"id": "ENGINE-A", "name": "host-a", "endpoint": "fake",
                                "arch": "x86_64"}
    records.write_build(bdir, {**record, "seconds": 600.0})
    return m, tree, a, b


def shipper(tree: ResultsTree, target: FakeBackend, mode: str = "auto",
            *peers: FakeBackend, registry: str | None = None) -> Shipper:
    return Shipper(target, target.engine_info(), mode,
                   lambda: [Peer(p.info["name"], p, p.engine_info()) for p in peers],
                   tree.ships, registry=registry)


def test_an_image_is_shipped_when_no_rate_is_on_record_and_keeps_its_identity(
        lab: tuple[Matrix, ResultsTree, FakeBackend, FakeBackend], tmp_path: Path) -> None:
    m, tree, a, b = lab
    tag = next(t for t in a.images if t.startswith(f"openssl-matrix/{VARIANT}:"))
    [out] = Builder(m, b, tree, workdir=tmp_path / "work-b",
                    images=shipper(tree, b, "auto", a)).build(m.select(VARIANT))
    assert out.status == "shipped" and out.tag == tag
    # the same tag, ID and labels on B; nothing built there, not even the toolchain (the
    # digest is planned with A's toolchain ID, and the image needs no toolchain to run)
    assert b.images[tag] == a.images[tag] and b.labels[tag] == a.labels[tag]
    assert b.builds == [] and b.loaded == [tag] and a.saved == [tag]
    # the build record is A's build; the arrival on B is recorded beside it
    bdir = tree.build_dir(VARIANT, out.record["digest"])
    assert json.loads((bdir / "build.json").read_text())["engine"]["id"] == "ENGINE-A"
    ship = records.read_ship(bdir / "shipped-ENGINE-B.json")
    assert ship is not None and ship.method == "save-load" and ship.image_id == a.images[tag]
    assert ship.from_engine == {"id": "ENGINE-A", "name": "host-a", "endpoint": "fake",
                                "arch": "x86_64"}
    assert ship.to_engine is not None and ship.to_engine["id"] == "ENGINE-B"
    assert ship.checked and "equals the source's (host-a)" in ship.checked
    assert ship.build_seconds == 600.0 and "no transfer rate on record" in (ship.why or "")
    assert ship.bytes and ship.bytes > 0 and ship.bytes_per_s and ship.bytes_per_s > 0
    # the image's build info was read on B: it runs there
    assert any(img == tag and "openssl-matrix" in cmd[-1] for img, cmd, _ in b.runs)
    # --force builds again, here: never a shipment
    [forced] = Builder(m, b, tree, workdir=tmp_path / "work-b",
                       images=shipper(tree, b, "auto", a)).build(m.select(VARIANT), force=True)
    assert forced.status == "built" and b.builds == [tag], "the same digest, built on B"
    toolchain = next(t for t in a.images if t.startswith("openssl-matrix/toolchain:"))
    assert a.saved == [tag, toolchain], "the toolchain it was planned with came along"
    # and a second build on B is up to date, without asking A again
    again = Builder(m, b, tree, workdir=tmp_path / "work-b",
                    images=shipper(tree, b, "auto", a)).build(m.select(VARIANT))
    assert [o.status for o in again] == ["up-to-date"] and a.saved == [tag, toolchain]


def test_a_slow_link_on_record_builds_here_with_the_peers_toolchain_shipped(
        lab: tuple[Matrix, ResultsTree, FakeBackend, FakeBackend], tmp_path: Path) -> None:
    m, tree, a, b = lab
    # 1 MB/s measured from A to B: 200 MB take 200 s, more than a 150 s build
    latest = records.read_latest(tree.root, VARIANT)
    assert latest is not None
    bdir = tree.build_dir(VARIANT, latest.digest)
    rec = tree.build_record(VARIANT, latest.digest)
    assert rec is not None
    records.write_build(bdir, {**rec, "seconds": 150.0})
    records.write_ship(records.images_dir(tree.root, "earlier"), "ENGINE-B", records.ShipRecord(
        tag="earlier", image_id="x", method="save-load", bytes_per_s=1e6,
        from_engine={"id": "ENGINE-A"}, to_engine={"id": "ENGINE-B"}, ended="2026-01-01"))
    [out] = Builder(m, b, tree, workdir=tmp_path / "work-b",
                    images=shipper(tree, b, "auto", a)).build(m.select(VARIANT))
    assert out.status == "built" and out.tag == latest.tag, "the same digest, built on B"
    toolchain = next(t for t in a.images if t.startswith("openssl-matrix/toolchain:"))
    assert b.loaded == [toolchain] and b.builds == [latest.tag]
    assert (records.images_dir(tree.root, toolchain) / "shipped-ENGINE-B.json").is_file()


def test_an_image_the_engine_cannot_run_is_built_there(
        lab: tuple[Matrix, ResultsTree, FakeBackend, FakeBackend], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    m, tree, a, b = lab
    for tag in a.images:
        a.image_arch[tag] = "arm64"
    [out] = Builder(m, b, tree, workdir=tmp_path / "work-b",
                    images=shipper(tree, b, "auto", a)).build(m.select(VARIANT))
    assert out.status == "built" and b.loaded == []
    assert "an arm64 image, the engine is x86_64" in capsys.readouterr().err


def test_images_ship_fails_a_variant_no_engine_holds_and_build_never_asks(
        lab: tuple[Matrix, ResultsTree, FakeBackend, FakeBackend], tmp_path: Path) -> None:
    m, tree, _, b = lab
    [out] = Builder(m, b, tree, workdir=tmp_path / "work-b",
                    images=shipper(tree, b, "ship")).build(m.select(VARIANT))
    assert out.status == "failed" and "--images ship, but no other engine holds it" in \
        (out.error or "")

    def no_peers() -> list[Peer]:
        raise AssertionError("--images build must not connect to other engines")

    forced = Shipper(b, b.engine_info(), "build", no_peers, tree.ships)
    [out] = Builder(m, b, tree, workdir=tmp_path / "work-b", images=forced).build(
        m.select(VARIANT))
    assert out.status == "built" and b.loaded == []


class Garbling(FakeBackend):
    """An engine whose first loaded image comes out different from what was sent."""

    def load_image(self, chunks: Iterable[bytes]) -> None:
        super().load_image(chunks)
        if len(self.loaded) == 1:
            self.images[self.loaded[0]] = "sha256:something-else"


def test_an_image_that_arrives_different_is_removed_and_built_instead(
        lab: tuple[Matrix, ResultsTree, FakeBackend, FakeBackend], tmp_path: Path) -> None:
    m, tree, a, _ = lab
    b = Garbling()
    b.info.update(id="ENGINE-B", name="host-b")
    [out] = Builder(m, b, tree, workdir=tmp_path / "work-b",
                    images=shipper(tree, b, "auto", a)).build(m.select(VARIANT))
    assert out.status == "built"
    assert b.removed_images[0] == out.tag
    bdir = tree.build_dir(VARIANT, out.record["digest"])
    assert not (bdir / "shipped-ENGINE-B.json").exists()


def test_a_registry_the_user_names_carries_the_image(
        lab: tuple[Matrix, ResultsTree, FakeBackend, FakeBackend], tmp_path: Path) -> None:
    m, tree, a, b = lab
    a.registry = b.registry = {}
    [out] = Builder(m, b, tree, workdir=tmp_path / "work-b",
                    images=shipper(tree, b, "ship", a, registry="registry.lab:5000/")
                    ).build(m.select(VARIANT))
    assert out.status == "shipped"
    ref = f"registry.lab:5000/{out.tag}"
    assert a.pushed == [(out.tag, ref)] and b.pulled == [(ref, out.tag)]
    assert out.record["shipped"]["method"] == "registry"


def test_a_missing_base_image_is_shipped_and_recorded(
        lab: tuple[Matrix, ResultsTree, FakeBackend, FakeBackend], tmp_path: Path) -> None:
    m, tree, a, b = lab
    del b.images["debian:bookworm"]
    [out] = Builder(m, b, tree, workdir=tmp_path / "work-b",
                    images=shipper(tree, b, "auto", a)).build(m.select(VARIANT))
    assert out.status == "shipped" and b.loaded[0] == "debian:bookworm"
    assert b.images["debian:bookworm"] == a.images["debian:bookworm"]
    assert (records.images_dir(tree.root, "debian:bookworm") / "shipped-ENGINE-B.json"
            ).is_file()


def test_a_run_on_the_engine_an_image_was_shipped_to_says_so(
        lab: tuple[Matrix, ResultsTree, FakeBackend, FakeBackend], tmp_path: Path) -> None:
    from openssl_matrix.measure.session import Bencher

    from .test_pipeline_fake import speed_responder

    m, tree, a, b = lab
    Builder(m, b, tree, workdir=tmp_path / "work-b",
            images=shipper(tree, b, "auto", a)).build(m.select(VARIANT))
    b.responder = speed_responder
    [cell] = Bencher(m, b, tree, engine=b.engine_info(), git_commit=None).bench(
        m.select(VARIANT), m.suite("quick"), "auto")
    assert cell.status == "complete" and cell.run_dir
    meta = json.loads((Path(cell.run_dir) / "meta.json").read_text())
    assert meta["docker"]["id"] == "ENGINE-B"
    assert meta["build"]["engine"]["id"] == "ENGINE-A", "built there"
    assert meta["build"]["shipped"]["from_engine"]["id"] == "ENGINE-A", "shipped here"
    assert meta["build"]["shipped"]["image_id"] == meta["image_id"]


def test_the_build_command_takes_images_and_registry_and_refuses_bad_values(
        capsys: pytest.CaptureFixture[str]) -> None:
    from invoke.exceptions import Exit

    from openssl_matrix.cli.shared import handlers
    from openssl_matrix.cli.table import dispatch, help_text

    text = help_text("build")
    assert "--images=TEXT" in text and "--registry=TEXT" in text
    for flags, said in (({"images": "copy"}, "--images 'copy' is not one of build, ship, auto"),
                        ({"registry": "http://x:5000"}, "expected HOST[:PORT][/PATH]")):
        with pytest.raises(Exit) as exc:
            dispatch("build", "", flags, handlers())
        assert exc.value.code == UsageError.exit_code and said in capsys.readouterr().err
    with pytest.raises(Exit):
        dispatch("bench", "", {"cpu": "auto", "images": "ship"}, handlers())
    assert "does not take --images" in capsys.readouterr().err


def test_a_lab_build_ships_the_local_engines_images_to_each_engine(
        fake_matrix: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`invoke matrix build --cpu=lab-a,lab-b` (lab.py's workers, in threads here): each
    engine receives the image the local engine built instead of building it."""
    from openssl_matrix.cli.table import dispatch
    from openssl_matrix.results.tree import LAB_ENV

    from .test_lab import PROFILES

    monkeypatch.setenv("OPENSSL_MATRIX_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.delenv(LAB_ENV, raising=False)
    fake_matrix.write_text(fake_matrix.read_text() + PROFILES)
    m = load_matrix(fake_matrix, default_urls=default_urls)
    tree = tmp_path / "results"
    local = FakeBackend()
    local.info.update(id="ID-local", name="here")
    Builder(m, local, ResultsTree(tree), workdir=tmp_path / "work").build(m.select(VARIANT))
    engines: dict[str | None, FakeBackend] = {
        None: local, "ssh://bench@a.lab": FakeBackend(), "tcp://b.lab:2376": FakeBackend()}
    for url, e in engines.items():
        if url:
            e.info.update(id=f"ID-{url}", name=url)
    table = thread_lab(engine_of(lambda base_url=None, **_: engines[base_url]))
    dispatch("build", "", {"matrix": str(fake_matrix), "results": str(tree),
                           "cpu": "lab-a,lab-b", "only": VARIANT, "images": "ship"},
             table)
    tag = next(t for t in local.images if t.startswith(f"openssl-matrix/{VARIANT}:"))
    for url in ("ssh://bench@a.lab", "tcp://b.lab:2376"):
        e = engines[url]
        assert e.loaded == [tag] and e.builds == [], url
        ships = {p.name for p in tree.glob(f"_builds/{VARIANT}/*/shipped-*.json")}
    assert ships == {"shipped-ID-ssh_bench_a.lab.json", "shipped-ID-tcp_b.lab_2376.json"}


def test_a_first_shipment_slower_than_the_build_on_record_gives_up_and_builds(
        lab: tuple[Matrix, ResultsTree, FakeBackend, FakeBackend], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    m, tree, a, b = lab
    latest = records.read_latest(tree.root, VARIANT)
    assert latest is not None
    rec = tree.build_record(VARIANT, latest.digest)
    assert rec is not None
    # a build that took no time on record: any transfer outlives it
    records.write_build(tree.build_dir(VARIANT, latest.digest), {**rec, "seconds": 0.0})
    [out] = Builder(m, b, tree, workdir=tmp_path / "work-b",
                    images=shipper(tree, b, "auto", a)).build(m.select(VARIANT))
    assert out.status == "built" and b.builds == [latest.tag]
    toolchain = next(t for t in a.images if t.startswith("openssl-matrix/toolchain:"))
    assert b.loaded == [toolchain], "the variant never arrived; the toolchain for its build did"
    err = capsys.readouterr().err
    assert "the transfer outlived the build time on record (0s)" in err
    assert "building it here instead" in err
