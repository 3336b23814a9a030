"""Sources on a bad day: a mirror dropping the connection mid-file, a download killed
with SIGKILL, a corrupted cached tarball met by `invoke matrix build`.

(tests/test_sources.py covers mismatches, mirror order, timeouts and signatures.)
Every server listens on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from invoke.exceptions import Exit

from openssl_matrix.cli.shared import handlers
from openssl_matrix.cli.table import dispatch
from openssl_matrix.core.errors import BuildError
from openssl_matrix.images import download
from openssl_matrix.images.sources import fetch_source_info

from ..fakes import FakeBackend, engine_of

VERSION = "1.2.3"
BODY = os.urandom(1 << 20)
SHA = hashlib.sha256(BODY).hexdigest()


class RawServer:
    """A loopback server that misbehaves on purpose, per path:
    ``good`` sends the file; ``drop`` announces the full length, sends half, closes;
    ``drip`` sends the file slowly (for killing a client mid-download)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.sent = threading.Event()  # set once ``drip`` has sent 256 KiB
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.port}/{mode}/openssl-{VERSION}.tar.gz"

    def serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn: socket.socket) -> None:
        with conn:
            request = conn.recv(4096).decode("latin-1")
            path = request.split(" ")[1] if " " in request else "/"
            mode = path.split("/")[1]
            if path.endswith(".asc"):
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                return
            head = (f"HTTP/1.1 200 OK\r\nContent-Length: {len(BODY)}\r\n"
                    "Connection: close\r\n\r\n").encode()
            try:
                conn.sendall(head)
                if mode == "good":
                    conn.sendall(BODY)
                elif mode == "drop":
                    conn.sendall(BODY[: len(BODY) // 2])
                elif mode == "drip":
                    for i in range(0, len(BODY), 4096):
                        conn.sendall(BODY[i:i + 4096])
                        if i >= 256 << 10:
                            self.sent.set()
                        if self.stop.wait(0.01):
                            return
            except OSError:
                return

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def raw_server() -> Iterator[RawServer]:
    server = RawServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    download.forget_failed_hosts()
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GNUPGHOME", str(tmp_path / "gnupg"))
    (tmp_path / "gnupg").mkdir(mode=0o700)
    yield
    download.forget_failed_hosts()


def test_mirror_dropping_the_connection_mid_file_is_reported_and_the_next_used(
        raw_server: RawServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    got = fetch_source_info(VERSION, SHA, [raw_server.url("drop"), raw_server.url("good")],
                            cache_dir=cache, timeout=5)
    assert got.origin == raw_server.url("good")
    assert got.path.read_bytes() == BODY
    err = capsys.readouterr().err
    assert f"trying {raw_server.url('drop')}" in err
    assert "failed:" in err and str(len(BODY) // 2) in err  # how far it got
    assert not list((cache / "sources").glob(".download-*")), "the partial file is deleted"


def test_a_download_killed_with_sigkill_never_becomes_the_tarball(
        raw_server: RawServer, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    pid = os.fork()
    if pid == 0:  # the child downloads until it is killed
        try:
            fetch_source_info(VERSION, SHA, [raw_server.url("drip")], cache_dir=cache,
                              timeout=30)
        finally:
            os._exit(0)
    assert raw_server.sent.wait(20), "the download should have started"
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    folder = cache / "sources"
    assert not (folder / f"openssl-{VERSION}.tar.gz").exists()
    parts = list(folder.glob(".download-*.part"))
    assert len(parts) == 1 and parts[0].stat().st_size < len(BODY)

    # the next fetch verifies a fresh download; the young part file (it could belong to
    # a fetch still running) is left alone, an old one is removed
    got = fetch_source_info(VERSION, SHA, [raw_server.url("good")], cache_dir=cache, timeout=5)
    assert got.path.read_bytes() == BODY and parts[0].exists()
    old = time.time() - 2 * 3600
    os.utime(parts[0], (old, old))
    fetch_source_info(VERSION, SHA, [raw_server.url("good")], cache_dir=cache, timeout=5)
    assert not parts[0].exists()


def test_a_corrupted_cached_tarball_fails_only_its_variants_at_build(
        fake_matrix: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    backend = FakeBackend()
    table = handlers(engine_of(lambda: backend))
    flags = {"matrix": str(fake_matrix), "results": str(tmp_path / "results"), "only": "",
             "jobs": 0, "force": False, "cpu": ""}
    dispatch("build", "", flags, table)
    cached = tmp_path / "cache" / "sources" / "openssl-3.0.20.tar.gz"
    good = cached.read_bytes()
    cached.write_bytes(good[: len(good) // 2])  # a half-written or damaged cache entry
    (tmp_path / "src" / "openssl-3.0.20.tar.gz").unlink()  # and its source is gone
    capsys.readouterr()

    with pytest.raises(Exit) as exc:
        dispatch("build", "", {**flags, "force": True}, table)
    assert exc.value.code == BuildError.exit_code
    out, err = capsys.readouterr()
    bad_sha = hashlib.sha256(good[: len(good) // 2]).hexdigest()
    assert f"cached {cached} has sha256 {bad_sha}" in err and "deleting it" in err
    assert not cached.exists()
    summary = out[out.index("build summary"):]
    for line in ("1.1.1w-asm-x86_64     ✓ built", "1.1.1w-no-asm-x86_64  ✓ built",
                 "3.0.20-asm-x86_64     ✕ FAILED", "3.0.20-no-asm-x86_64  ✕ FAILED"):
        assert line in summary
    want = hashlib.sha256(good).hexdigest()
    assert f"could not obtain openssl-3.0.20.tar.gz with sha256 {want}" in summary
