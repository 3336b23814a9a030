"""Tests for openssl_matrix.images.sources: fetch, verify, cache and pin source tarballs.

Every server here listens on 127.0.0.1; no test reaches another host.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import re
import shutil
import socket
import subprocess
import tarfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from openssl_matrix.core.errors import SourceError
from openssl_matrix.images import download, sources
from openssl_matrix.images.sources import (
    Network,
    default_cache_dir,
    default_urls,
    fetch_source,
    fetch_source_info,
    pin_source,
    read_pins,
    sha256_file,
)

VERSION = "1.2.3"
BODY = b"pretend this is openssl-1.2.3.tar.gz\n" * 1000
SHA = hashlib.sha256(BODY).hexdigest()
OTHER = b"something else entirely\n"
OTHER_SHA = hashlib.sha256(OTHER).hexdigest()


# --------------------------------------------------------------------------- fixtures


@dataclass
class Server:
    """A loopback HTTP server: ``routes`` maps a path to (status, body) or "hang"."""

    base: str
    routes: dict[str, tuple[int, bytes] | str] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str) -> str:
        return self.base + path


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server(base="")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append(self.path)
            route = state.routes.get(self.path, (404, b"not found"))
            if route == "hang":
                state.release.wait(10)  # never answer while the client waits
                return
            assert not isinstance(route, str)
            status, body = route
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fresh failed-host memory, a private gpg home, no proxies, no user cache."""
    download.forget_failed_hosts()
    gnupg = tmp_path / "gnupg"
    gnupg.mkdir(mode=0o700)
    monkeypatch.setenv("GNUPGHOME", str(gnupg))
    monkeypatch.delenv(download.KEYRING_ENV, raising=False)
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "user-cache"))
    yield
    download.forget_failed_hosts()


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def leftovers(cache: Path) -> list[Path]:
    return sorted((cache / "sources").glob(".download-*"))


def refused_port() -> int:
    """A loopback port with nothing listening on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_tarball(path: Path, top: str, payload: bytes = b"int main(void){}\n") -> Path:
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo(f"{top}/README")
        info.size = len(payload)
        archive.addfile(info, io.BytesIO(payload))
    return path


# --------------------------------------------------------------------------- urls, paths


def test_default_urls_follow_each_series_layout() -> None:
    assert default_urls("0.9.8x") == [
        "https://www.openssl.org/source/old/0.9.x/openssl-0.9.8x.tar.gz",
        "https://github.com/openssl/openssl/releases/download/OpenSSL_0_9_8x/openssl-0.9.8x.tar.gz",
        "http://deb.debian.org/debian/pool/main/o/openssl/openssl_0.9.8x.orig.tar.gz",
    ]
    one = default_urls("1.1.1w")
    assert one[0] == "https://www.openssl.org/source/old/1.1.1/openssl-1.1.1w.tar.gz"
    assert "/download/OpenSSL_1_1_1w/openssl-1.1.1w.tar.gz" in one[1]
    assert default_urls("1.0.2u")[0].endswith("/old/1.0.2/openssl-1.0.2u.tar.gz")
    three = default_urls("3.0.20")
    assert three[0] == "https://www.openssl.org/source/old/3.0/openssl-3.0.20.tar.gz"
    assert three[1].endswith("/download/openssl-3.0.20/openssl-3.0.20.tar.gz")
    assert three[2].endswith("/openssl_3.0.20.orig.tar.gz")
    assert three[3] == ("http://deb.debian.org/debian-security/pool/updates/main/o/openssl/"
                        "openssl_3.0.20.orig.tar.gz")


@pytest.mark.parametrize("bad", ["", "latest", "1.1", "../1.1.1w", "1.1.1w/../x"])
def test_bad_versions_are_refused(bad: str, cache: Path) -> None:
    with pytest.raises(SourceError, match="not an OpenSSL release version"):
        fetch_source(bad, SHA, [], cache_dir=cache)


def test_default_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("OPENSSL_MATRIX_CACHE")
    assert default_cache_dir() == tmp_path / "xdg" / "openssl-matrix"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "openssl-matrix"
    assert sources.sources_dir() == tmp_path / "home" / ".cache" / "openssl-matrix" / "sources"


def test_sha256_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(BODY)
    assert sha256_file(path) == SHA


# --------------------------------------------------------------------------- fetching


def test_mirror_fallback_after_404(
    server: Server, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.routes["/b/openssl-1.2.3.tar.gz"] = (200, BODY)
    urls = [server.url("/a/openssl-1.2.3.tar.gz"), server.url("/b/openssl-1.2.3.tar.gz")]

    got = fetch_source_info(VERSION, SHA, urls, cache_dir=cache, timeout=5)

    assert got.path == cache / "sources" / "openssl-1.2.3.tar.gz"
    assert got.path.read_bytes() == BODY
    assert (got.sha256, got.origin, got.cached) == (SHA, urls[1], False)
    assert got.signature.startswith("not checked")
    err = capsys.readouterr().err
    assert urls[0] in err and "HTTP 404" in err and urls[1] in err
    assert "MiB/s" in err
    assert leftovers(cache) == []


def test_checksum_mismatch_tries_next_and_names_url_and_hashes(
    server: Server, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.routes["/evil.tar.gz"] = (200, OTHER)
    server.routes["/good.tar.gz"] = (200, BODY)
    urls = [server.url("/evil.tar.gz"), server.url("/good.tar.gz")]

    got = fetch_source_info(VERSION, SHA, urls, cache_dir=cache, timeout=5)

    assert got.origin == urls[1]
    err = capsys.readouterr().err
    assert urls[0] in err and OTHER_SHA in err and SHA in err
    assert leftovers(cache) == []


def test_only_mismatching_mirrors_fail_with_both_hashes(server: Server, cache: Path) -> None:
    server.routes["/evil.tar.gz"] = (200, OTHER)
    url = server.url("/evil.tar.gz")

    with pytest.raises(SourceError) as caught:
        fetch_source(VERSION, SHA, [url], cache_dir=cache, timeout=5)

    message = str(caught.value)
    assert url in message and OTHER_SHA in message and SHA in message
    assert "mismatch" in message
    assert caught.value.exit_code == 3
    assert leftovers(cache) == []
    assert not (cache / "sources" / "openssl-1.2.3.tar.gz").exists()


def test_hanging_server_times_out_quickly(server: Server, cache: Path) -> None:
    server.routes["/hang.tar.gz"] = "hang"
    server.routes["/good.tar.gz"] = (200, BODY)
    urls = [server.url("/hang.tar.gz"), server.url("/good.tar.gz")]

    start = time.monotonic()
    with pytest.raises(SourceError) as caught:
        fetch_source(VERSION, SHA, urls[:1], cache_dir=cache, timeout=0.3)
    assert time.monotonic() - start < 3
    assert "timeout after 0.3s" in str(caught.value)

    # A stalled response does not mark the host dead: the next URL on it still works.
    got = fetch_source_info(VERSION, SHA, urls, cache_dir=cache, timeout=0.3)
    assert got.origin == urls[1]
    assert leftovers(cache) == []


def test_every_failure_is_listed_with_a_hint(server: Server, cache: Path) -> None:
    server.routes["/evil.tar.gz"] = (200, OTHER)
    server.routes["/hang.tar.gz"] = "hang"
    port = refused_port()
    urls = [
        f"http://127.0.0.1:{port}/openssl-1.2.3.tar.gz",
        server.url("/missing.tar.gz"),
        server.url("/hang.tar.gz"),
        server.url("/evil.tar.gz"),
        f"file://{cache}/nowhere/openssl-1.2.3.tar.gz",
        "ftp://example.invalid/openssl-1.2.3.tar.gz",
    ]

    with pytest.raises(SourceError) as caught:
        fetch_source(VERSION, SHA, urls, cache_dir=cache, timeout=0.3)

    message = str(caught.value)
    for url in urls:
        assert url in message
    assert "connection refused" in message
    assert "HTTP 404" in message
    assert "timeout" in message
    assert "mismatch" in message
    assert "file not found" in message
    assert "unsupported URL scheme" in message
    assert "sources_dirs" in message and "file://" in message


def test_host_that_refused_is_skipped_for_the_rest_of_the_run(cache: Path) -> None:
    port = refused_port()
    urls = [f"http://127.0.0.1:{port}/a.tar.gz", f"http://127.0.0.1:{port}/b.tar.gz"]

    with pytest.raises(SourceError) as caught:
        fetch_source(VERSION, SHA, urls, cache_dir=cache, timeout=1)

    assert "skipped" in str(caught.value).splitlines()[2]


@pytest.fixture
def blackhole() -> Iterator[int]:
    """A loopback port that never completes a connection (its backlog is full).

    It stands in for a mirror behind a firewall that drops packets.
    """
    with socket.socket() as listener, socket.socket() as filler:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = int(listener.getsockname()[1])
        filler.connect(("127.0.0.1", port))  # takes the one slot; later SYNs are dropped
        yield port


def test_unreachable_host_costs_one_timeout_however_many_addresses(
    blackhole: int, cache: Path
) -> None:
    real = socket.getaddrinfo

    def three_addresses(host: str, port: int, *args: object, **kwargs: object) -> list[Any]:
        return list(real("127.0.0.1", port, type=socket.SOCK_STREAM)) * 3

    urls = [
        f"http://127.0.0.1:{blackhole}/old/openssl-1.2.3.tar.gz",
        f"http://127.0.0.1:{blackhole}/other/openssl-1.2.3.tar.gz",
    ]

    start = time.monotonic()
    with pytest.raises(SourceError) as caught:
        fetch_source(VERSION, SHA, urls, cache_dir=cache, timeout=0.5,
                     network=Network(lookup=three_addresses))
    elapsed = time.monotonic() - start

    assert elapsed < 1.2  # one shared timeout, not one per address or per URL
    lines = str(caught.value).splitlines()
    assert "timeout after 0.5s" in lines[1]
    assert "skipped" in lines[2] and "already failed in this run" in lines[2]


def test_dns_lookup_is_bounded_by_the_timeout(cache: Path) -> None:
    never = threading.Event()

    def slow_lookup(*args: object, **kwargs: object) -> list[object]:
        never.wait(5)
        raise socket.gaierror(-2, "Name or service not known")

    start = time.monotonic()
    try:
        with pytest.raises(SourceError, match="timeout"):
            fetch_source(
                VERSION,
                SHA,
                ["http://mirror.test/openssl-1.2.3.tar.gz"],
                cache_dir=cache,
                timeout=0.3,
                network=Network(lookup=slow_lookup),
            )
    finally:
        never.set()
    assert time.monotonic() - start < 3


def test_file_url(tmp_path: Path, cache: Path) -> None:
    local = tmp_path / "elsewhere" / "openssl-1.2.3.tar.gz"
    local.parent.mkdir()
    local.write_bytes(BODY)

    got = fetch_source_info(VERSION, SHA, [local.as_uri()], cache_dir=cache)

    assert got.origin == local.as_uri()
    assert got.path.read_bytes() == BODY
    assert local.exists()  # copied, not moved


def test_cache_hit_needs_no_network_and_keeps_provenance(server: Server, cache: Path) -> None:
    server.routes["/good.tar.gz"] = (200, BODY)
    url = server.url("/good.tar.gz")
    first = fetch_source_info(VERSION, SHA, [url], cache_dir=cache, timeout=5)
    server.requests.clear()

    again = fetch_source_info(VERSION, SHA.upper(), [url], cache_dir=cache, timeout=5)

    assert server.requests == []
    assert again.path == first.path
    assert (again.origin, again.cached) == (url, True)
    assert again.signature == first.signature


def test_file_put_in_the_cache_by_hand_is_used(cache: Path) -> None:
    (cache / "sources").mkdir(parents=True)
    (cache / "sources" / "openssl-1.2.3.tar.gz").write_bytes(BODY)

    got = fetch_source_info(VERSION, SHA, [], cache_dir=cache)

    assert (got.origin, got.cached) == ("cache", True)
    assert got.signature.startswith("not checked")


def test_corrupted_cache_is_deleted_and_fetched_again(
    server: Server, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.routes["/good.tar.gz"] = (200, BODY)
    url = server.url("/good.tar.gz")
    path = fetch_source(VERSION, SHA, [url], cache_dir=cache, timeout=5)
    path.write_bytes(BODY[:100])  # truncated, say by a full disk
    capsys.readouterr()
    server.requests.clear()

    got = fetch_source_info(VERSION, SHA, [url], cache_dir=cache, timeout=5)

    assert got.path.read_bytes() == BODY
    assert got.cached is False
    assert [r for r in server.requests if not r.endswith(".asc")] == ["/good.tar.gz"]
    err = capsys.readouterr().err
    assert "corrupted" in err and str(path) in err


def test_corrupted_cache_without_any_source_fails(cache: Path) -> None:
    (cache / "sources").mkdir(parents=True)
    cached = cache / "sources" / "openssl-1.2.3.tar.gz"
    cached.write_bytes(OTHER)

    with pytest.raises(SourceError, match="could not obtain"):
        fetch_source(VERSION, SHA, [], cache_dir=cache)
    assert not cached.exists()


def test_local_dirs_are_searched_first(server: Server, tmp_path: Path, cache: Path) -> None:
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "openssl-1.2.3.tar.gz").write_bytes(OTHER)
    empty = tmp_path / "empty"
    right = tmp_path / "right"
    right.mkdir()
    (right / "openssl_1.2.3.orig.tar.gz").write_bytes(BODY)  # Debian's name for it
    server.routes["/good.tar.gz"] = (200, BODY)

    got = fetch_source_info(
        VERSION,
        SHA,
        [server.url("/good.tar.gz")],
        cache_dir=cache,
        local_dirs=[empty, wrong, right],
    )

    assert got.origin == f"local:{right / 'openssl_1.2.3.orig.tar.gz'}"
    assert got.path.read_bytes() == BODY
    assert server.requests == []


def test_local_dir_mismatch_is_reported(tmp_path: Path, cache: Path) -> None:
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "openssl-1.2.3.tar.gz").write_bytes(OTHER)

    with pytest.raises(SourceError) as caught:
        fetch_source(VERSION, SHA, [], cache_dir=cache, local_dirs=[wrong])

    message = str(caught.value)
    assert str(wrong / "openssl-1.2.3.tar.gz") in message and OTHER_SHA in message
    assert f"into {wrong} (the matrix's sources_dirs)" in message


# --------------------------------------------------------------------------- pins


def test_unknown_sha256_is_refused_with_the_pin_command(server: Server, cache: Path) -> None:
    server.routes["/good.tar.gz"] = (200, BODY)

    with pytest.raises(SourceError) as caught:
        fetch_source(VERSION, None, [server.url("/good.tar.gz")], cache_dir=cache)

    assert "invoke matrix pin 1.2.3 --file PATH" in str(caught.value)
    assert "unverified" in str(caught.value)
    assert server.requests == []


def test_unknown_sha256_with_a_lock_file_lacking_the_version(tmp_path: Path, cache: Path) -> None:
    lock = tmp_path / "sources.lock.yaml"
    lock.write_text("sources:\n  '1.0.0': {sha256: " + "a" * 64 + "}\n")

    with pytest.raises(SourceError, match=re.escape(f"invoke matrix pin {VERSION} --file PATH")):
        fetch_source(VERSION, None, [], cache_dir=cache, lock_file=lock)


def test_matrix_sha256_wins_over_a_different_pin(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = tmp_path / "matrix.lock"
    lock.write_text(f"sources:\n  '{VERSION}': {{sha256: {OTHER_SHA}}}\n")
    (cache / "sources").mkdir(parents=True)
    (cache / "sources" / "openssl-1.2.3.tar.gz").write_bytes(BODY)

    got = fetch_source_info(VERSION, SHA, [], cache_dir=cache, lock_file=lock)

    assert got.sha256 == SHA
    err = capsys.readouterr().err
    assert OTHER_SHA in err and str(lock) in err


def test_malformed_sha256_is_refused(cache: Path) -> None:
    with pytest.raises(SourceError, match="not a SHA-256"):
        fetch_source(VERSION, "md5:abc", [], cache_dir=cache)


@pytest.mark.parametrize("lock_name", ["sources.lock.yaml", "sources.lock.json"])
def test_pin_then_fetch(tmp_path: Path, cache: Path, lock_name: str) -> None:
    tarball = make_tarball(tmp_path / "openssl-1.2.3.tar.gz", "openssl-1.2.3")
    lock = tmp_path / "lock" / lock_name

    sha = pin_source(VERSION, tarball, lock, cache_dir=cache)

    assert sha == sha256_file(tarball)
    assert read_pins(lock) == {VERSION: sha}
    text = lock.read_text()
    document = json.loads(text) if lock_name.endswith(".json") else yaml.safe_load(text)
    assert document["sources"][VERSION]["sha256"] == sha
    got = fetch_source_info(VERSION, None, [], cache_dir=cache, lock_file=lock)
    assert got.path.read_bytes() == tarball.read_bytes()
    assert (got.cached, got.origin) == (True, f"pinned:{tarball}")

    # Without the cached copy the pin still verifies a fresh download.
    got.path.unlink()
    fetched = fetch_source_info(VERSION, None, [tarball.as_uri()], cache_dir=cache, lock_file=lock)
    assert fetched.sha256 == sha


def test_pins_accumulate_and_keep_other_entries(tmp_path: Path, cache: Path) -> None:
    lock = tmp_path / "sources.lock.yaml"
    first = pin_source(
        "1.2.3", make_tarball(tmp_path / "a.tar.gz", "openssl-1.2.3"), lock, cache_dir=cache
    )
    second = pin_source(
        "1.2.4", make_tarball(tmp_path / "b.tar.gz", "openssl-1.2.4"), lock, cache_dir=cache
    )
    assert read_pins(lock) == {"1.2.3": first, "1.2.4": second}
    # Pinning the same bytes again is harmless.
    assert pin_source("1.2.3", tmp_path / "a.tar.gz", lock, cache_dir=cache) == first


def test_pin_refuses_to_replace_a_different_pin(tmp_path: Path, cache: Path) -> None:
    lock = tmp_path / "sources.lock.yaml"
    pin_source("1.2.3", make_tarball(tmp_path / "a.tar.gz", "openssl-1.2.3"), lock, cache_dir=cache)
    other = make_tarball(tmp_path / "b.tar.gz", "openssl-1.2.3", payload=b"changed\n")

    with pytest.raises(SourceError, match="already pins"):
        pin_source("1.2.3", other, lock, cache_dir=cache)
    assert pin_source("1.2.3", other, lock, cache_dir=cache, force=True) == sha256_file(other)


def test_pin_refuses_a_github_tag_archive(tmp_path: Path, cache: Path) -> None:
    tag_archive = make_tarball(tmp_path / "OpenSSL_1_1_1w.tar.gz", "openssl-OpenSSL_1_1_1w")

    with pytest.raises(SourceError, match=re.escape("not the OpenSSL 1.1.1w release tarball")):
        pin_source("1.1.1w", tag_archive, tmp_path / "lock.yaml", cache_dir=cache)
    assert not (tmp_path / "lock.yaml").exists()


def test_pin_refuses_bytes_that_differ_from_the_official_release(
    tmp_path: Path, cache: Path
) -> None:
    fake = make_tarball(tmp_path / "openssl-1.1.1w.tar.gz", "openssl-1.1.1w")

    with pytest.raises(SourceError, match=sources.KNOWN_SHA256["1.1.1w"]):
        pin_source("1.1.1w", fake, tmp_path / "lock.yaml", cache_dir=cache)
    assert not (tmp_path / "lock.yaml").exists()
    assert not (cache / "sources" / "openssl-1.1.1w.tar.gz").exists()
    assert list((cache / "sources").iterdir()) == []


def test_pin_refuses_something_that_is_not_a_tarball(tmp_path: Path, cache: Path) -> None:
    junk = tmp_path / "openssl-1.2.3.tar.gz"
    junk.write_bytes(OTHER)
    with pytest.raises(SourceError, match="not a gzip-compressed tar"):
        pin_source(VERSION, junk, tmp_path / "lock.yaml", cache_dir=cache)


def test_broken_lock_file_is_reported(tmp_path: Path, cache: Path) -> None:
    lock = tmp_path / "lock.yaml"
    lock.write_text("sources: [unclosed\n")
    with pytest.raises(SourceError, match="not valid YAML"):
        fetch_source(VERSION, None, [], cache_dir=cache, lock_file=lock)


# --------------------------------------------------------------------------- signatures

# A throwaway ed25519 key made for these tests, and its signature over SIGNED.
TEST_KEY = """\
-----BEGIN PGP PUBLIC KEY BLOCK-----

mDMEawzvyhYJKwYBBAHaRw8BAQdAU6GzL+oyxLGzTTLC06+UFDqvWQpBs0jIUZe3
aO7cLA20Lm9wZW5zc2wtbWF0cml4IHRlc3Qga2V5IDx0ZXN0QGV4YW1wbGUuaW52
YWxpZD6IkAQTFggAOBYhBGZFpiNRuyR9T88T3cOldxBbj3xUBQJrDO/KAhsDBQsJ
CAcCBhUKCQgLAgQWAgMBAh4BAheAAAoJEMOldxBbj3xULsAA/AvmWm+s+z515QX0
17Yvodyil58RJKDvMYdvGCDMTk16AQCBzdCeDiu7lKfwcMYVClp3GkDjaIwstQni
fTHV33dwDQ==
=53rn
-----END PGP PUBLIC KEY BLOCK-----
"""
TEST_SIGNATURE = b"""\
-----BEGIN PGP SIGNATURE-----

iHUEABYIAB0WIQRmRaYjUbskfU/PE93DpXcQW498VAUCawzvygAKCRDDpXcQW498
VIPjAP91uYWxqSjUlxrvTXo44YwMK+CTE/XW+pfdCvlEiTqLOAEA7MpNp0DCGuu9
xsWDAdKCO+IqRSnnCp1Bx9qWQfFD9AU=
=Au5A
-----END PGP SIGNATURE-----
"""
TEST_FINGERPRINT = "6645A62351BB247D4FCF13DDC3A577105B8F7C54"
SIGNED = b"not really a tarball\n"

needs_gpg = pytest.mark.skipif(shutil.which("gpg") is None, reason="gpg not installed")


@pytest.fixture
def keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test key as a keyring file named by OPENSSL_MATRIX_GPG_KEYRING."""
    path = tmp_path / "openssl-keys.gpg"
    subprocess.run(
        ["gpg", "--batch", "--dearmor", "--output", str(path)],
        input=TEST_KEY.encode(),
        check=True,
        capture_output=True,
    )
    monkeypatch.setenv(download.KEYRING_ENV, str(path))
    return path


@needs_gpg
def test_good_signature_is_verified_and_remembered(
    server: Server, cache: Path, keyring: Path
) -> None:
    sha = hashlib.sha256(SIGNED).hexdigest()
    server.routes["/openssl-1.2.3.tar.gz"] = (200, SIGNED)
    server.routes["/openssl-1.2.3.tar.gz.asc"] = (200, TEST_SIGNATURE)
    url = server.url("/openssl-1.2.3.tar.gz")

    got = fetch_source_info(VERSION, sha, [url], cache_dir=cache, timeout=5)

    assert got.signature.startswith("verified: good signature by openssl-matrix test key")
    assert TEST_FINGERPRINT in got.signature
    assert fetch_source_info(VERSION, sha, [], cache_dir=cache).signature == got.signature


@needs_gpg
def test_bad_signature_is_recorded_not_fatal(server: Server, cache: Path, keyring: Path) -> None:
    server.routes["/openssl-1.2.3.tar.gz"] = (200, BODY)
    server.routes["/openssl-1.2.3.tar.gz.asc"] = (200, TEST_SIGNATURE)

    got = fetch_source_info(
        VERSION, SHA, [server.url("/openssl-1.2.3.tar.gz")], cache_dir=cache, timeout=5
    )

    assert got.signature.startswith("BAD")


@needs_gpg
def test_signature_with_unknown_key_is_not_checked(server: Server, cache: Path) -> None:
    sha = hashlib.sha256(SIGNED).hexdigest()
    server.routes["/openssl-1.2.3.tar.gz"] = (200, SIGNED)
    server.routes["/openssl-1.2.3.tar.gz.asc"] = (200, TEST_SIGNATURE)

    got = fetch_source_info(
        VERSION, sha, [server.url("/openssl-1.2.3.tar.gz")], cache_dir=cache, timeout=5
    )

    assert got.signature.startswith("not checked: signing key")
    assert "C3A577105B8F7C54" in got.signature


def test_without_gpg_the_signature_is_not_checked(
    server: Server, cache: Path
) -> None:
    server.routes["/openssl-1.2.3.tar.gz"] = (200, BODY)

    got = fetch_source_info(
        VERSION, SHA, [server.url("/openssl-1.2.3.tar.gz")], cache_dir=cache, timeout=5,
        network=Network(gpg=lambda: None),
    )

    assert got.signature == "not checked: gpg not installed"
    assert server.requests == ["/openssl-1.2.3.tar.gz"]


@pytest.mark.hostile
@pytest.mark.parametrize("lock_name,text", [
    ("m.lock", "# my notes: which tarballs we trust and why\nsources: {}\n"),
    ("m.lock", "name: my-notes\n"),
    ("m.lock.json", '{"sources": {}, "note": "kept by hand"}'),
])
def test_pin_leaves_a_lock_file_it_did_not_write_alone(
        tmp_path: Path, cache: Path, lock_name: str, text: str) -> None:
    # issue 35 (outputs): pin rewrote a hand-written lock, its comment lost
    lock = tmp_path / lock_name
    lock.write_text(text)
    tarball = make_tarball(tmp_path / "a.tar.gz", "openssl-1.2.3")
    with pytest.raises(SourceError, match="not written by `invoke matrix pin`") as err:
        pin_source("1.2.3", tarball, lock, cache_dir=cache, force=True)
    assert err.value.hint is not None and "by hand" in err.value.hint
    assert lock.read_text() == text


@pytest.mark.hostile
@pytest.mark.parametrize("lock_name", ["m.lock", "m.lock.json"])
def test_pin_adds_to_a_lock_file_it_wrote(tmp_path: Path, cache: Path, lock_name: str) -> None:
    lock = tmp_path / lock_name
    first = pin_source("1.2.3", make_tarball(tmp_path / "a.tar.gz", "openssl-1.2.3"), lock,
                       cache_dir=cache)
    second = pin_source("1.2.4", make_tarball(tmp_path / "b.tar.gz", "openssl-1.2.4"), lock,
                        cache_dir=cache)
    assert read_pins(lock) == {"1.2.3": first, "1.2.4": second}
