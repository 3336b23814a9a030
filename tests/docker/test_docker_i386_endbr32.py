"""Real i386 builds of OpenSSL 1.1.1w and 3.0.20 in Docker: the ENDBR32 effect, counted
with objdump.

3.0.4+ emit ENDBR32 from the 32-bit assembler only when the compiler defines __CET__
(as toolchains that default to -fcf-protection do). The variants here are built for
linux-x86 with -D__CET__ and -march=c3-2 (the VIA C3-2 profile, which cannot execute
ENDBR32): 3.0.20 without the no-endbr32 patch has libcrypto full of ENDBR32 and is
flagged "will die with SIGILL"; with the patch applied to the source before the build it
has none, and its openssl runs and measures. 1.1.1w has none either way.

Needs a Docker engine with ``i386/debian:bookworm`` and ``debian:bookworm`` (``bash
.ci/setup`` makes both) and Debian's mirror for the tarballs. About 8 minutes on
2 cores when nothing is cached (three builds).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from openssl_matrix.core.errors import DockerUnavailable
from openssl_matrix.engine.backend import DockerBackend, RunLimits
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import KNOWN_SHA256, default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.results.tree import ResultsTree

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def backend() -> DockerBackend:
    try:
        engine = DockerBackend()
    except DockerUnavailable as exc:
        pytest.fail(f"the docker tests need a Docker engine: {exc}")
    for image in ("debian:bookworm", "i386/debian:bookworm"):
        if engine.image_id(image) is None:
            pytest.fail(f"base image {image} is missing: run `bash .ci/setup`")
    return engine


def test_endbr32_without_and_with_the_patch(backend: DockerBackend, tmp_path: Path) -> None:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(yaml.safe_dump({
        "defaults": {"base_image": "debian:bookworm"},
        "versions": {"3.0.20": {"sha256": KNOWN_SHA256["3.0.20"]},
                     "1.1.1w": {"sha256": KNOWN_SHA256["1.1.1w"]}},
        "include": [
            {"version": "1.1.1w", "arch": "i386", "cpu": "via-luke",
             "configure": ["-D__CET__"]},
            {"version": "3.0.20", "arch": "i386", "cpu": "via-luke",
             "configure": ["-D__CET__"]},
            {"version": "3.0.20", "arch": "i386", "cpu": "via-luke",
             "configure": ["-D__CET__"], "patches": ["no-endbr32"]},
        ],
        "default_variants": ["*-i386-*"],
        "profiles": {"via-luke": {"description": "VIA C3-2 Nehemiah",
                                  "vendor": "CentaurHauls", "march": "c3-2"}},
        "suites": {"s": {"algorithms": ["aes-128-cbc"]}},
    }))
    m = load_matrix(matrix, default_urls=default_urls)
    assert [v.id for v in m.variants] == [
        "1.1.1w-asm-i386-march-c3-2-d-cet",
        "3.0.20-asm-i386-march-c3-2-d-cet",
        "3.0.20-asm-i386-march-c3-2-d-cet-patch-no-endbr32"]
    builder = Builder(m, backend, ResultsTree(tmp_path / "results"), workdir=tmp_path / "work")
    old, plain, patched = builder.build(list(m.variants), jobs=1)
    for outcome in (old, plain, patched):
        assert outcome.status in ("built", "up-to-date"), outcome.error

    for outcome, version in ((old, "1.1.1w"), (plain, "3.0.20"), (patched, "3.0.20")):
        rec = outcome.record
        assert rec["openssl_version"].startswith(f"OpenSSL {version} ")
        assert "platform: linux-x86" in rec["openssl_version_a"]
        assert rec["configure_line_in_image"].startswith("perl ./Configure linux-x86 ")
        assert "-D__CET__" in rec["configure_line_in_image"]
        assert "-march=c3-2" in rec["configure_line_in_image"]

    # objdump's count of endbr32 in libcrypto (dockerfiles/buildinfo.sh). 1.1.1w defines
    # ::endbranch but its 32-bit perlasm never calls it, __CET__ or not.
    assert old.record["endbr32"] == 0
    assert old.record["endbr32_warning"] is None
    assert plain.record["endbr32"] > 100, plain.record["endbr32"]
    assert plain.record["patches_in_image"] == []
    assert "will die with SIGILL on that CPU (via-luke)" in plain.record["endbr32_warning"]
    assert patched.record["endbr32"] == 0
    assert [p.split(":")[0] for p in patched.record["patches_in_image"]] == ["no-endbr32"]
    assert patched.record["endbr32_warning"] is None
    assert [p["name"] for p in patched.record["variant"]["patches"]] == ["no-endbr32"]

    # the patched i386 openssl runs and measures (EVP AES-128-CBC, 8 KiB blocks, 1 s;
    # 3.x names the row in upper case: +F:25:AES-128-CBC:...)
    res = backend.run(str(patched.tag), ["openssl", "speed", "-elapsed", "-mr", "-seconds",
                                         "1", "-bytes", "8192", "-evp", "aes-128-cbc"],
                      limits=RunLimits(timeout=120))
    assert res.exit_code == 0, res.stderr
    found = re.search(r"^\+F:\d+:aes-128-cbc:([0-9.]+)$", res.stdout, re.M | re.I)
    assert found, res.stdout
    assert float(found.group(1)) > 10e6, "an i386 AES-NI build does more than 10 MB/s"
    arch = backend.run(str(patched.tag), ["sh", "-c", "od -An -tx1 -j4 -N1 "
                                          "/opt/openssl/lib/libcrypto.so.3"],
                       limits=RunLimits(timeout=60))
    assert arch.stdout.strip() == "01", "libcrypto is a 32-bit ELF (EI_CLASS 1)"


def test_a_patch_that_does_not_apply_fails_with_a_message(backend: DockerBackend,
                                                           tmp_path: Path) -> None:
    """Real `patch --fuzz=0` on the real 3.0.20 tree, in the source stage (seconds)."""
    mine = tmp_path / "mypatches"
    mine.mkdir()
    (mine / "stale.patch").write_text(
        "--- a/crypto/perlasm/x86asm.pl\n+++ b/crypto/perlasm/x86asm.pl\n"
        "@@ -1,3 +1,3 @@\n-#! /usr/bin/perl -w\n+#! /usr/bin/env perl -w\n"
        " # a context line that is not in the file\n # nor this one\n")
    (mine / "stale.yaml").write_text(yaml.safe_dump({
        "why": "a test: a diff written for another tree", "versions": ["3.0.*"]}))
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(yaml.safe_dump({
        "defaults": {"base_image": "debian:bookworm"},
        "versions": {"3.0.20": {"sha256": KNOWN_SHA256["3.0.20"]}},
        "include": [{"version": "3.0.20", "patches": ["stale"]}],
        "default_variants": ["*-patch-stale"],
        "patches_dirs": ["mypatches"],
        "suites": {"s": {"algorithms": ["aes-128-cbc"]}},
    }))
    m = load_matrix(matrix, default_urls=default_urls)
    builder = Builder(m, backend, ResultsTree(tmp_path / "results"), workdir=tmp_path / "work")
    (outcome,) = builder.build(list(m.variants))
    assert outcome.status == "failed"
    assert outcome.error is not None
    assert ("openssl-matrix: patch stale (" in outcome.error and
            "does not apply to OpenSSL 3.0.20 (variant 3.0.20-asm-x86_64-patch-stale): drop "
            "stale from the patches of this variant in the matrix" in outcome.error), outcome.error
