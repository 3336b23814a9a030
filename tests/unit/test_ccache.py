"""The shared compiler cache, without Docker: the recipe and content hash it leaves alone,
the Dockerfile it builds, the BuildKit progress it reads back, ccache's counts."""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path

import pytest

from openssl_matrix.engine.backend import _context_tar
from openssl_matrix.engine.buildkitlog import TRACE_ID, Progress, ProtobufError, fields
from openssl_matrix.images.build import ccache_stats
from openssl_matrix.images.render import (
    CCACHE_MARK,
    CompilerCache,
    cache_id,
    ccache_dockerfile,
    ccache_tag,
    render,
    toolchain_tag,
)
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.model import Variant

ROOT = Path(__file__).resolve().parents[2]
MATRIX = load_matrix(ROOT / "matrix.yaml")
FIXTURES = ROOT / "tests" / "fixtures"


def variant(vid: str) -> Variant:
    [v] = [v for v in MATRIX.select(vid, every=True) if v.id == vid]
    return v


def cached(v: Variant, namespace: str = "openssl-matrix") -> CompilerCache:
    return CompilerCache(cache_id(v, namespace), ccache_tag(v.base_image))


@pytest.mark.parametrize("vid", ["1.1.1w-asm-x86_64", "3.0.20-no-asm-x86_64",
                                 "1.0.1e-asm-x86_64", "1.1.1w-asm-i386"])
def test_the_cache_changes_neither_the_recipe_nor_the_content_hash(vid: str) -> None:
    v = variant(vid)
    plain, with_cache = render(v), render(v, cached(v))
    assert with_cache.dockerfile == plain.dockerfile
    hashes = {"openssl.tar.gz": "0" * 64, "<base>": "sha256:b", "<toolchain>": "sha256:t"}
    assert with_cache.digest(hashes) == plain.digest(hashes)
    assert plain.built == plain.dockerfile and "ccache" not in plain.dockerfile
    assert with_cache.built != plain.dockerfile


def test_the_built_dockerfile_compiles_the_same_steps_through_ccache() -> None:
    v = variant("3.0.20-asm-x86_64")
    plain, built = render(v).dockerfile, render(v, cached(v)).built
    mount = "--mount=type=cache,id=openssl-matrix-ccache-3.0,target=/ccache,sharing=shared"
    assert built.count(f"RUN {mount} ") == 2  # make and make install_sw
    assert f"FROM {ccache_tag(v.base_image)} AS source" in built
    assert "ENV PATH=/usr/lib/ccache:" in built and "CCACHE_DIR=/ccache" in built
    # every other line is the recipe's, in its order; the final stage starts from the base
    kept = [line for line in plain.splitlines() if line not in built.splitlines()]
    assert [line.split()[0] for line in kept] == ["FROM", "RUN", "RUN"]
    make = json.loads(re.search(rf"^RUN {re.escape(mount)} (\[.*make --facts.*\])$", built,
                                re.M).group(1))  # type: ignore[union-attr]
    assert make[:2] == ["/bin/sh", "-c"]
    assert make[2].startswith("perl /src/srcfacts.pl make --facts /src/facts.txt && ")
    assert CCACHE_MARK in make[2] and make[2].endswith("ccache --show-log-stats")
    assert built.rstrip().endswith('CMD ["openssl", "version", "-a"]')
    assert "\nFROM debian:bookworm\nCOPY --from=build /opt/openssl /opt/openssl\n" in built


def test_one_cache_per_series() -> None:
    assert cache_id(variant("1.1.1w-asm-x86_64")) == "openssl-matrix-ccache-1.1.1"
    assert cache_id(variant("1.1.1w-no-asm-x86_64")) == "openssl-matrix-ccache-1.1.1"
    assert cache_id(variant("3.0.20-asm-x86_64"), "bench-1") == "bench-1-ccache-3.0"
    assert cache_id(variant("3.0.2-asm-x86_64")) == cache_id(variant("3.0.20-asm-x86_64"))


def test_the_ccache_image_is_the_toolchain_plus_debians_ccache() -> None:
    text = ccache_dockerfile("debian:bookworm")
    assert text.splitlines()[4] == f"FROM {toolchain_tag('debian:bookworm')}"
    assert "apt-get install -y --no-install-recommends ccache" in text
    assert ccache_tag("debian:bookworm").startswith(
        "openssl-matrix/ccache:" + toolchain_tag("debian:bookworm").split(":", 1)[1] + "-")
    assert ccache_tag("debian:bookworm") != ccache_tag("i386/debian:bookworm")


# What ccache 4.7.5 (bookworm's) printed for `ccache --show-log-stats` after a miss and a
# hit of one file, in the toolchain image with ccache added.
REAL_STATS = """Cacheable calls:  2 / 2 (100.0%)
  Hits:           1 / 2 (50.00%)
    Direct:       1 / 1 (100.0%)
    Preprocessed: 0 / 1 ( 0.00%)
  Misses:         1 / 2 (50.00%)
Local storage:
"""


def test_ccache_counts_are_read_after_the_mark(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    log.write_text(f"#9 RUN make\nHits: 99 / 99\n{CCACHE_MARK}\n{REAL_STATS}#10 RUN install\n")
    assert ccache_stats(log) == {"cacheable": 2, "calls": 2, "hits": 1, "direct": 1,
                                 "preprocessed": 0, "misses": 1}
    log.write_text("#9 [build 5/8] RUN make CACHED\n")  # the engine's layer cache: no make
    assert ccache_stats(log) == {"stats": None}
    assert ccache_stats(tmp_path / "missing.log") == {"stats": None}


def test_a_real_buildkit_trace_reads_as_plain_log_text() -> None:
    chunks = json.loads((FIXTURES / "buildkit" / "trace-false.json").read_text())
    progress = Progress()
    text = "".join(progress.read(c["aux"]) for c in chunks if c.get("id") == TRACE_ID)
    lines = text.splitlines()
    assert "#4 [a 1/3] FROM docker.io/library/debian:bookworm CACHED" in lines
    assert lines[lines.index("first-line") - 1].startswith("#5 [a 2/3] RUN --mount=type=cache")
    assert "second-line" in lines
    assert lines[-1] == "#6 ERROR: executor failed running [/bin/false]: exit code: 1"
    assert progress.current == '[a 3/3] RUN ["/bin/false"]'
    assert chunks[-1]["error"].startswith("executor failed running [/bin/false]")


def _varint(n: int) -> bytes:
    out = b""
    while True:
        out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return out


def _field(number: int, value: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def test_the_wire_format_is_decoded_and_damage_is_said() -> None:
    import base64
    vertex = _field(1, b"sha256:x") + _field(3, b"[build 7/9] RUN make") + \
        _varint(5 << 3 | 2) + _varint(2) + b"\x08\x01"
    log = _field(1, b"sha256:x") + _varint(3 << 3) + _varint(1) + _field(4, b"cc -c x.c\n")
    message = _field(1, vertex) + _field(3, log) + _field(3, log)
    assert [n for n, _ in fields(message)] == [1, 3, 3]
    text = Progress().read(base64.b64encode(message).decode())
    assert text == "#1 [build 7/9] RUN make\ncc -c x.c\ncc -c x.c\n"
    with pytest.raises(ProtobufError):
        list(fields(_field(3, log)[:-3]))
    assert "unreadable" in Progress().read(base64.b64encode(message[:-3]).decode())
    assert Progress().read("not base64!") == ""


def test_the_context_goes_as_a_ustar_archive_buildkit_recognises(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "openssl-3.0.20.tar.gz").write_bytes(b"x" * 3000)
    (tmp_path / "patches").mkdir()
    (tmp_path / "patches" / "a.patch").write_text("--- a\n")
    data = _context_tar(tmp_path)
    # dockerd's BuildKit reads the first kilobyte to decide it is an archive: the first
    # member's header must be there whole (no pax or GNU long-name records before it)
    with tarfile.open(fileobj=io.BytesIO(data[:1024] + b"\0" * 1024), mode="r:") as head:
        first = head.next()
        assert first is not None and first.name == "Dockerfile"
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        assert tar.getnames() == ["Dockerfile", "openssl-3.0.20.tar.gz", "patches",
                                  "patches/a.patch"]
        assert all(m.uid == 0 and m.uname == "" for m in tar.getmembers())


def test_the_asm_builds_second_noexecstack_is_kept_out_of_ccaches_hash() -> None:
    """1.1.1w-asm-x86_64 into a shared cache, then its no-asm twin: 0 hits of 739 on
    2026-12-06, because Configure adds -Wa,--noexecstack a second time to asm builds."""
    built = render(variant("1.1.1w-no-asm-x86_64"), cached(variant("1.1.1w-no-asm-x86_64"))).built
    assert "CCACHE_IGNOREOPTIONS=-Wa,--noexecstack" in built
    assert "-Wa,--noexecstack" in render(variant("1.1.1w-no-asm-x86_64")).dockerfile
