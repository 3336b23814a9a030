"""A real built image shipped to another Docker engine (an extra dockerd on this machine,
standing in for a lab host) and run there: same tag, same image ID, OpenSSL answers.

Needs the main engine with ``debian:bookworm`` (``bash .ci/setup``); the 1.1.1w asm image
is built once if the main engine does not hold it yet (test_integration_docker builds the
same one). The extra engine starts empty: the base image is shipped too, the toolchain
image is not (the variant's image does not need it to run).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from openssl_matrix.engine.backend import DockerBackend
from openssl_matrix.engine.ship import Choice, GaveUp, Peer, Shipper
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.model import Matrix
from openssl_matrix.results import records
from openssl_matrix.results.tree import ResultsTree

from ..engines_fixture import extra_engine, free_port, wait_for

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]
VARIANT = "1.1.1w-asm-x86_64"


def built_here(tmp_path: Path) -> tuple[Matrix, DockerBackend, ResultsTree, str]:
    """The 1.1.1w asm image on the main engine, recorded in a results tree of the test's."""
    m = load_matrix(ROOT / "matrix.yaml", default_urls=default_urls)
    tree = ResultsTree(tmp_path / "results")
    main = DockerBackend()
    [here] = Builder(m, main, tree, workdir=tmp_path / "work").build(m.select(VARIANT))
    assert here.status in ("built", "up-to-date") and here.tag
    return m, main, tree, here.tag


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as res:
            return bool(res.status == 200)
    except OSError:
        return False


@contextlib.contextmanager
def local_registry(folder: Path) -> Iterator[str]:
    """Debian's docker-registry on 127.0.0.1 at a free port, storing under ``folder``
    (an engine treats a registry on 127.0.0.0/8 as insecure, so plain http does)."""
    if shutil.which("docker-registry") is None:
        pytest.skip("docker-registry is not installed (`bash .ci/setup` installs it)")
    port = free_port()
    config = folder / "registry.yml"
    config.write_text(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {folder}/data\n"
                      f"http:\n  addr: 127.0.0.1:{port}\n")
    log = (folder / "registry.log").open("wb")
    proc = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=log,
                            stderr=log)
    try:
        wait_for(lambda: answers(f"http://127.0.0.1:{port}/v2/") or proc.poll() is not None,
                 30, "the registry")
        assert proc.poll() is None, (folder / "registry.log").read_text()[-2000:]
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def test_a_built_image_is_shipped_to_another_engine_and_runs_there(tmp_path: Path) -> None:
    m, main, tree, tag = built_here(tmp_path)
    main_id = main.image_id(tag)
    with extra_engine("ship") as extra:
        lab = DockerBackend(base_url=extra.url)
        engine = lab.engine_info()
        assert engine["id"] != main.engine_info()["id"]
        shipper = Shipper(lab, engine, "auto",
                          lambda: [Peer("the main engine", main, main.engine_info())],
                          tree.ships)
        # a transfer that outlives its budget (the build time on record) is abandoned
        # midway: nothing arrives, and the engine takes the next transfer
        source, _ = shipper.sources(tag)
        assert source is not None
        with pytest.raises(GaveUp, match="outlived the build time on record"):
            shipper.ship(Choice("ship", "test", source, budget=0.0), tag)
        assert lab.image_facts(tag) is None
        [out] = Builder(m, lab, tree, workdir=tmp_path / "work",
                        images=shipper).build(m.select(VARIANT))
        assert out.status == "shipped", out.error
        assert out.tag == tag, "the same content-hash tag on both engines"
        assert lab.image_id(tag) == main_id
        assert lab.image_labels(tag) == main.image_labels(tag)
        run = subprocess.run(["docker", "-H", extra.url, "run", "--rm", "--network", "none",
                              tag, "openssl", "version"],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 and run.stdout.startswith("OpenSSL 1.1.1w "), run.stderr
        # the toolchain stayed where it was; the base image came along
        assert lab.image_facts(str(out.record["toolchain_image_id"])) is None
        assert lab.image_id("debian:bookworm") == main.image_id("debian:bookworm")
        # provenance: the arrival beside the build record
        ship = records.read_ship(records.ship_path(
            tree.build_dir(VARIANT, out.record["digest"]), shipper.key))
        assert ship is not None and ship.method == "save-load" and ship.image_id == main_id
        assert ship.from_engine and ship.from_engine["id"] == main.engine_info()["id"]
        assert ship.bytes and ship.bytes > 50_000_000 and ship.bytes_per_s
        assert ship.checked and main_id in ship.checked


def test_an_image_goes_through_a_registry_the_user_names(tmp_path: Path) -> None:
    m, main, tree, tag = built_here(tmp_path)
    with local_registry(tmp_path) as registry, extra_engine("reg") as extra:
        lab = DockerBackend(base_url=extra.url)
        shipper = Shipper(lab, lab.engine_info(), "ship",
                          lambda: [Peer("the main engine", main, main.engine_info())],
                          tree.ships, registry=registry)
        [out] = Builder(m, lab, tree, workdir=tmp_path / "work",
                        images=shipper).build(m.select(VARIANT))
        assert out.status == "shipped", out.error
        assert out.record["shipped"]["method"] == "registry"
        assert lab.image_id(tag) == main.image_id(tag), "the same image ID after push/pull"
        # the registry's tags are removed again on both engines: only the tool's tag stays
        ref = f"{registry}/{tag}"
        assert main.image_facts(ref) is None and lab.image_facts(ref) is None
        run = subprocess.run(["docker", "-H", extra.url, "run", "--rm", "--network", "none",
                              tag, "openssl", "version"], capture_output=True, text=True,
                             timeout=120)
        assert run.stdout.startswith("OpenSSL 1.1.1w "), run.stderr
