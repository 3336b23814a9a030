"""Rendering: every version of the project's matrix gets its era's recipe (pure, no Docker)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from openssl_matrix.images.render import recipe, render, toolchain_dockerfile
from openssl_matrix.matrix import eras
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.model import Variant

ROOT = Path(__file__).resolve().parents[2]
MATRIX = load_matrix(ROOT / "matrix.yaml")
SEED_VERSIONS = ("0.9.8n", "0.9.8s", "0.9.8x", "0.9.8y", "1.0.0", "1.0.1", "1.0.1c",
                 "1.0.1e", "1.1.0l", "1.1.1w", "3.0.2")


def run_lines(dockerfile: str) -> list[list[str]]:
    """The exec-form RUN lines of a Dockerfile, as argument lists."""
    return [json.loads(m.group(1)) for m in re.finditer(r"^RUN (\[.*\])$", dockerfile, re.M)]


def configure_args(variant: Variant) -> list[str]:
    """The Configure command line (run through srcfacts.pl, after its ``--``)."""
    runs = run_lines(render(variant).dockerfile)
    found = [r[r.index("--") + 1:] for r in runs
             if "--" in r and r[r.index("--") + 1:][:2] == ["perl", "./Configure"]]
    assert len(found) == 1
    return found[0]


def test_matrix_declares_every_seed_version_and_the_newest_3x() -> None:
    declared = {v.version for v in MATRIX.versions}
    assert set(SEED_VERSIONS) <= declared
    assert {"3.0.20", "3.1.8", "3.2.6", "3.3.7", "3.4.3", "3.5.9", "3.6.5"} <= declared
    # a version with no trustworthy checksum on record carries none (it must be pinned)
    unpinned = {v.version for v in MATRIX.versions if v.sha256 is None}
    # 0.9.8s, 0.9.8y and 1.0.1 take their sha256 from the release catalogue
    assert unpinned == {"0.9.8n", "0.9.8x"}


@pytest.mark.parametrize("variant", MATRIX.all_variants, ids=lambda v: v.id)
def test_every_variant_renders_its_era_recipe(variant: Variant) -> None:
    r = render(variant)
    assert render(variant).dockerfile == r.dockerfile, "rendering must be deterministic"
    text = r.dockerfile
    version = variant.version.version
    args = configure_args(variant)
    # one recipe for every release: the tree's own facts choose the target and whether
    # the unified-build options stay (tests/test_srcfacts.py runs these steps on trees)
    assert args[2] == "@target@"
    assert r.recipe.targets == (("linux-x86_64",) if variant.arch == "x86_64" else
                                ("linux-x86", "linux-elf"))
    assert r.recipe.unified_only == ("--libdir=lib", "no-tests")
    assert r.recipe.optional == ("no-tests",)
    assert "shared" in args and "-Wa,--noexecstack" in args
    assert "no-tests" in args and "--libdir=lib" in args
    assert ("no-asm" in args) is (not variant.asm)
    assert ("-m32" in args) is (variant.arch == "i386")
    if variant.march:
        assert f"-march={variant.march}" in args
    runs = run_lines(text)
    assert ["perl", "/src/srcfacts.pl", "make", "--facts", "/src/facts.txt"] in runs
    assert ["make", "install_sw"] in runs
    assert not any(run[:2] == ["make", "test"] or "make test" in " ".join(run)
                   for run in runs), "a build never runs make test"
    assert f"FROM {variant.base_image}\n" in text
    assert r.toolchain_tag.startswith("openssl-matrix/toolchain:")
    assert f"COPY openssl-{version}.tar.gz " in text
    for patch in variant.patches:
        assert r.context_files[patch.context_name] == patch.path
        assert f"COPY {patch.context_name} /src/patches/{patch.context_name}" in text
    for engine in variant.engines:
        for opt in eras.engine_options(version, engine):
            assert opt in args


def test_era_recipes_spelled_out() -> None:
    by_id = {v.id: v for v in MATRIX.all_variants}
    assert configure_args(by_id["0.9.8y-asm-x86_64"])[2:] == [
        "@target@", "--prefix=/opt/openssl", "--openssldir=/opt/openssl/ssl",
        "--libdir=lib", "no-tests", "shared", "-Wa,--noexecstack"]
    c3 = by_id["1.1.0l-asm-i386-march-c3-2-engine-padlock"]
    assert configure_args(c3)[2:] == [
        "@target@", "--prefix=/opt/openssl", "--openssldir=/opt/openssl/ssl",
        "--libdir=lib", "no-tests", "shared", "enable-hw-padlock", "-Wa,--noexecstack",
        "-m32", "-march=c3-2"]
    assert recipe(c3).configure_line.startswith("perl ./Configure linux-x86|linux-elf ")
    assert c3.base_image == "i386/debian:bookworm"
    via302 = by_id["3.0.2-asm-i386-march-c3-2-patch-no-endbr32-engine-padlock"]
    assert "enable-padlockeng" in configure_args(via302)
    assert [p.name for p in via302.patches] == ["no-endbr32"]
    assert "enable-afalgeng" in configure_args(by_id["1.1.1w-asm-x86_64-engine-afalg"])


def test_devcrypto_spelling_and_header_check(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump({
        "defaults": {"base_image": "debian:bookworm"},
        "versions": {"1.0.1e": {"sha256": "a" * 64}, "1.1.1w": {"sha256": "b" * 64}},
        "include": [{"version": "1.0.1e", "engines": ["devcrypto"]},
                    {"version": "1.1.1w", "engines": ["devcrypto"]}],
        "suites": {"s": {"algorithms": ["md5"]}},
    }))
    m = load_matrix(path)
    by_id = {v.id: v for v in m.all_variants}
    old = by_id["1.0.1e-asm-x86_64-engine-devcrypto"]
    assert configure_args(old)[-3:-1] == ["-DHAVE_CRYPTODEV", "-DUSE_CRYPTODEV_DIGESTS"]
    assert "enable-devcryptoeng" in configure_args(by_id["1.1.1w-asm-x86_64-engine-devcrypto"])
    check = [r for r in run_lines(render(old).dockerfile) if "cryptodev.h" in " ".join(r)]
    assert check and "test -f /usr/include/crypto/cryptodev.h" in check[0][2]
    assert "drop devcrypto from the engines" in check[0][2]


def test_patch_step_is_strict_and_says_what_to_do() -> None:
    v = next(v for v in MATRIX.all_variants if any(not p.is_script for p in v.patches))
    step = next(r for r in run_lines(render(v).dockerfile) if "patch -p1" in " ".join(r))
    script = step[2]
    assert "--fuzz=0" in script and "--forward" in script
    assert f"does not apply to OpenSSL {v.version.version} (variant {v.id})" in script
    assert "drop no-endbr32 from the patches of this variant" in script


def test_eol_toolchain_sets_the_archive_quirk() -> None:
    eol = toolchain_dockerfile("debian/eol:wheezy")
    assert "FROM debian/eol:wheezy" in eol
    assert 'Acquire::Check-Valid-Until "false"' in eol
    assert "Check-Valid-Until" not in toolchain_dockerfile("debian:bookworm")


def test_era_default_base_images(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump({
        "versions": {v: {} for v in ("0.9.8y", "1.0.0", "1.0.1e", "1.0.2u", "1.1.0l",
                                     "1.1.1w", "3.0.20")},
        "suites": {"s": {"algorithms": ["md5"]}},
    }))
    m = load_matrix(path)
    images = {v.version.version: v.base_image for v in m.all_variants}
    # bookworm for every release, unless the matrix names another (the era's own Debian
    # release is opt-in: debian/eol images cannot be had without Docker Hub)
    assert set(images.values()) == {"debian:bookworm"}
    assert {v.base_image for v in m.all_variants if v.arch == "i386"} <= \
        {"i386/debian:bookworm"}
    assert recipe(m.all_variants[0]).targets == ("linux-x86_64",)
