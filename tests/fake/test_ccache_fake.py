"""The shared compiler cache through the Builder, on the fake engine: the ccache image is
made once per base image, builds go through BuildKit with the series' cache, the tags
(content hashes) are those of builds without it, and the build record keeps ccache's
counts."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from openssl_matrix.core.errors import BuildError
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.results.tree import ResultsTree

from ..fakes import FakeBackend


def record(tree: Path, variant: str) -> dict[str, object]:
    found = list((tree / "_builds" / variant).glob("*/build.json"))
    assert len(found) == 1
    return dict(json.loads(found[0].read_text()))


def test_a_series_shares_one_cache_and_the_tags_stay_those_of_cold_builds(
        fake_matrix: Path, tmp_path: Path) -> None:
    m = load_matrix(fake_matrix, default_urls=default_urls)
    cold = FakeBackend()
    cold_out = Builder(m, cold, ResultsTree(tmp_path / "cold"), workdir=tmp_path / "w1").build(
        list(m.variants))
    assert cold.buildkit == []  # without the cache: the classic builder, as before

    warm = FakeBackend()
    tree = ResultsTree(tmp_path / "warm")
    out = Builder(m, warm, tree, workdir=tmp_path / "w2", compiler_cache="openssl-matrix",
                  ).build(list(m.variants))
    assert [o.status for o in out] == ["built"] * 4
    assert [o.tag for o in out] == [o.tag for o in cold_out]
    ccache_images = [t for t in warm.builds if t.startswith("openssl-matrix/ccache:")]
    assert len(ccache_images) == 1  # one base image: one ccache image, made once
    assert warm.builds.index(ccache_images[0]) == 1  # after the toolchain, before variants
    assert warm.buildkit == [o.tag for o in out]
    assert warm.labels[ccache_images[0]]["openssl-matrix.toolchain-id"] == \
        warm.images[next(t for t in warm.builds if "/toolchain:" in t)]

    first = record(tmp_path / "warm", m.variants[0].id)
    cache = first["compiler_cache"]
    assert isinstance(cache, dict)
    assert cache["id"] == f"openssl-matrix-ccache-{m.variants[0].version.series_name}"
    assert cache["image"] == ccache_images[0]
    assert cache["hits"] == 0 and cache["misses"] == 40 and cache["cacheable"] == 40
    later = record(tmp_path / "warm", m.variants[-1].id)["compiler_cache"]
    assert isinstance(later, dict) and isinstance(later["hits"], int) and later["hits"] > 0
    # the build folder keeps the recipe (what the hash covers) and what was built
    bdir = next((tmp_path / "warm" / "_builds" / m.variants[0].id).glob("*/"))
    assert "ccache" not in (bdir / "Dockerfile").read_text()
    assert "--mount=type=cache" in (bdir / "Dockerfile.ccache").read_text()
    # built with the cache, up to date without it (and the other way round)
    again = Builder(m, warm, tree, workdir=tmp_path / "w2").build(list(m.variants))
    assert [o.status for o in again] == ["up-to-date"] * 4
    assert record(tmp_path / "cold", m.variants[0].id)["compiler_cache"] is None


class NoApt(FakeBackend):
    """An engine whose builds with network fail (no apt mirror): the ccache image cannot
    be made, the toolchain image is already there."""

    def build(self, context: Path, tag: str, *, log_path: Path, network: str | None,
              labels: Mapping[str, str], buildargs: Mapping[str, str] | None = None,
              buildkit: bool = False) -> str:
        if tag.startswith("openssl-matrix/ccache:"):
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log_path.write_text("E: Unable to locate package ccache\n")
            raise BuildError(f"docker build of {tag} failed: exit code 100")
        return super().build(context, tag, log_path=log_path, network=network, labels=labels,
                             buildargs=buildargs, buildkit=buildkit)


def test_without_a_ccache_image_the_builds_go_on_cold(fake_matrix: Path, tmp_path: Path) -> None:
    m = load_matrix(fake_matrix, default_urls=default_urls)
    backend = NoApt()
    out = Builder(m, backend, ResultsTree(tmp_path / "r"), workdir=tmp_path / "w",
                  compiler_cache="openssl-matrix").build(list(m.variants))
    assert [o.status for o in out] == ["built"] * 4
    assert backend.buildkit == []
    assert all("--mount" not in d for d in backend.dockerfiles)
    assert record(tmp_path / "r", m.variants[0].id)["compiler_cache"] is None


def test_a_tag_prefix_keeps_a_benchmarks_builds_apart(fake_matrix: Path, tmp_path: Path) -> None:
    m = load_matrix(fake_matrix, default_urls=default_urls)
    backend = FakeBackend()
    out = Builder(m, backend, ResultsTree(tmp_path / "r"), workdir=tmp_path / "w",
                  tag_prefix="openssl-matrix-bench", compiler_cache="bench-7").build(
        list(m.variants)[:1])
    assert out[0].tag is not None and out[0].tag.startswith(
        f"openssl-matrix-bench/{m.variants[0].id}:")
    assert "id=bench-7-ccache-" in backend.dockerfiles[-1]


def test_an_engine_without_buildkit_builds_without_the_cache(
        fake_matrix: Path, tmp_path: Path) -> None:
    m = load_matrix(fake_matrix, default_urls=default_urls)
    backend = FakeBackend()
    backend.info["api_version"] = "1.38"  # Docker 18.06
    out = Builder(m, backend, ResultsTree(tmp_path / "r"), workdir=tmp_path / "w",
                  compiler_cache="openssl-matrix").build(list(m.variants)[:1])
    assert out[0].status == "built" and backend.buildkit == []
    assert not any(t.startswith("openssl-matrix/ccache:") for t in backend.builds)
