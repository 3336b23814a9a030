"""Fetching one URL for the source cache: bounded connects and reads (a mirror that stalls
or sends more than a tarball is given up on and remembered for the run), the failure
described in words, and the OpenSSL signature beside a download or a local file checked
with gpg. :mod:`openssl_matrix.images.sources` decides what to fetch and what to trust.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any

from openssl_matrix.core.files import open_regular
from openssl_matrix.core.settings import ENVIRONMENT, environment_settings


class AttemptFailed(Exception):
    """One source (URL or local file) did not give the tarball; the message says why."""


def _which_gpg() -> str | None:
    return shutil.which("gpg")


@dataclass(frozen=True)
class Network:
    """What a fetch asks of the machine around it: the name lookup (``getaddrinfo``'s
    signature) and where gpg is (None: not installed). A fetch takes it as a parameter
    (:data:`NETWORK` by default), so a test of a slow resolver or of a host without gpg
    passes its own instead of patching ``socket`` or ``shutil``."""

    lookup: Callable[..., list[Any]] = socket.getaddrinfo
    gpg: Callable[[], str | None] = _which_gpg


NETWORK = Network()


def stream_to_temp(
    src: IO[bytes], directory: Path, expected_length: int | None, timeout: float | None = None
) -> tuple[Path, str, int]:
    """Copy ``src`` into a temporary file in ``directory``, hashing as it goes.

    Returns (temporary path, sha256, size). On any failure the temporary file is removed
    and :class:`AttemptFailed` raised.
    """
    fd, name = tempfile.mkstemp(dir=directory, prefix=".download-", suffix=".part")
    tmp = Path(name)
    digest = hashlib.sha256()
    size = 0
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := src.read(CHUNK):
                size += len(chunk)
                if size > MAX_TARBALL_BYTES:
                    raise AttemptFailed(
                        f"more than {MAX_TARBALL_BYTES >> 20} MiB: not a release tarball"
                    )
                digest.update(chunk)
                out.write(chunk)
        if expected_length is not None and size != expected_length:
            raise AttemptFailed(f"truncated: got {size} of {expected_length} bytes")
    except AttemptFailed:
        tmp.unlink(missing_ok=True)
        raise
    except (OSError, http.client.HTTPException) as exc:
        tmp.unlink(missing_ok=True)
        raise AttemptFailed(f"{describe_failure(exc, timeout)} after {size} bytes") from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp, digest.hexdigest(), size


# Hosts (scheme://host:port) whose connection failed during this run: later URLs on the
# same host are skipped instead of waiting for the same timeout again.
_failed_hosts: dict[str, str] = {}
_failed_hosts_lock = threading.Lock()


def forget_failed_hosts() -> None:
    """Let URLs on hosts that failed earlier in this process be tried again."""
    with _failed_hosts_lock:
        _failed_hosts.clear()


def _host_key(url: str) -> str | None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    return f"{parts.scheme}://{parts.hostname}:{port}"


def _resolve(host: str, port: int, deadline: float,
             lookup: Callable[..., list[Any]] = socket.getaddrinfo) -> list[Any]:
    """getaddrinfo (``lookup``) with a deadline (the C call itself has none)."""
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            result["addrs"] = lookup(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            result["error"] = exc

    worker = threading.Thread(target=work, name=f"resolve {host}", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    if worker.is_alive():
        raise TimeoutError(f"DNS lookup of {host} timed out")
    if "error" in result:
        raise result["error"]
    addrs: list[Any] = result["addrs"]
    return addrs


def _bounded_connect(
    address: tuple[str, int],
    timeout: Any = None,
    source_address: tuple[str, int] | None = None,
    *,
    lookup: Callable[..., list[Any]] = socket.getaddrinfo,
    **_: Any,
) -> socket.socket:
    """Like socket.create_connection, but ``timeout`` bounds the whole connect phase.

    create_connection gives each resolved address the full timeout, so a host with four
    unreachable addresses would cost four timeouts; here DNS plus all attempts share one.
    """
    seconds = float(timeout) if isinstance(timeout, (int, float)) else 15.0
    deadline = time.monotonic() + seconds
    host, port = address
    last: OSError | None = None
    for family, kind, proto, _name, sockaddr in _resolve(host, port, deadline, lookup):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(remaining)
            if source_address:
                sock.bind(source_address)
            sock.connect(sockaddr)
        except OSError as exc:
            sock.close()
            last = exc
            continue
        sock.settimeout(seconds)
        return sock
    raise last if last is not None else TimeoutError(f"connecting to {host} timed out")


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args: Any, lookup: Callable[..., list[Any]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = partial(_bounded_connect, lookup=lookup)


class _HTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args: Any, lookup: Callable[..., list[Any]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = partial(_bounded_connect, lookup=lookup)


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, network: Network) -> None:
        super().__init__()
        self.network = network

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(partial(_HTTPConnection, lookup=self.network.lookup), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, network: Network) -> None:
        super().__init__()
        self.network = network

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        context = ssl.create_default_context()
        return self.do_open(partial(_HTTPSConnection, lookup=self.network.lookup), req,
                            context=context)


def _opener(network: Network) -> urllib.request.OpenerDirector:
    opener = urllib.request.build_opener(_HTTPHandler(network), _HTTPSHandler(network))
    opener.addheaders = [("User-Agent", "openssl-matrix (source fetch)")]
    return opener


def describe_failure(exc: BaseException | str, timeout: float | None = None) -> str:
    """A short, plain reason for a failed attempt."""
    if isinstance(exc, str):
        return exc
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return describe_failure(exc.reason, timeout)
    if isinstance(exc, TimeoutError):  # socket.timeout is TimeoutError since 3.10
        return f"timeout after {timeout:g}s" if timeout is not None else "timeout"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError):
        return "connection reset"
    if isinstance(exc, socket.gaierror):
        return f"DNS lookup failed ({exc.strerror})"
    if isinstance(exc, FileNotFoundError):
        return "file not found"
    if isinstance(exc, ssl.SSLError):
        return f"TLS error ({exc.reason or exc})"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "server closed the connection without answering"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _open_url(url: str, timeout: float,
              network: Network = NETWORK) -> tuple[IO[bytes], int | None]:
    """Open a URL for reading; return the stream and its announced length."""
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("http", "https", "file"):
        raise AttemptFailed(f"unsupported URL scheme {scheme!r} (use http, https or file)")
    host = _host_key(url)
    if host is not None:
        with _failed_hosts_lock:
            earlier = _failed_hosts.get(host)
        if earlier is not None:
            raise AttemptFailed(f"skipped: {host} already failed in this run ({earlier})")
    try:
        response = _opener(network).open(url, timeout=timeout)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise AttemptFailed(describe_failure(exc)) from exc
    except urllib.error.URLError as exc:
        # Raised while connecting or sending: the host itself is unreachable.
        reason = describe_failure(exc, timeout)
        if host is not None:
            with _failed_hosts_lock:
                _failed_hosts[host] = reason
        raise AttemptFailed(reason) from exc
    except (OSError, http.client.HTTPException) as exc:
        raise AttemptFailed(describe_failure(exc, timeout)) from exc
    length_header = response.headers.get("Content-Length")
    length = int(length_header) if length_header and length_header.isdigit() else None
    return response, length


def download(url: str, directory: Path, timeout: float,
             network: Network = NETWORK) -> tuple[Path, str, int]:
    response, length = _open_url(url, timeout, network)
    with response:
        return stream_to_temp(response, directory, length, timeout)


def _gpg_verify(data: Path, signature: bytes, network: Network = NETWORK) -> str:
    gpg = network.gpg()
    if gpg is None:
        return "not checked: gpg not installed"
    command = [gpg, "--batch", "--no-tty", "--status-fd", "1"]
    keyring = environment_settings().gpg_keyring
    if keyring is not None:
        command += ["--no-default-keyring", "--keyring", str(keyring)]
    with tempfile.NamedTemporaryFile(suffix=".asc", dir=data.parent) as sig:
        sig.write(signature)
        sig.flush()
        try:
            done = subprocess.run(
                [*command, "--verify", sig.name, str(data)],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"not checked: gpg failed ({describe_failure(exc)})"
    status: dict[str, str] = {}
    for line in done.stdout.splitlines():
        if line.startswith("[GNUPG:] "):
            key, _, rest = line[9:].partition(" ")
            status.setdefault(key, rest)
    if "VALIDSIG" in status and done.returncode == 0:
        fingerprint = status["VALIDSIG"].split()[0]
        signer = status.get("GOODSIG", "").partition(" ")[2]
        return f"verified: good signature by {signer or 'key'} ({fingerprint})"
    if "BADSIG" in status:
        return f"BAD: gpg reports a bad signature ({status['BADSIG']})"
    if "NO_PUBKEY" in status:
        return f"not checked: signing key {status['NO_PUBKEY']} is not in the gpg keyring"
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return f"not checked: gpg could not verify ({last})"


def signature_for_url(url: str, data: Path, timeout: float,
                      network: Network = NETWORK) -> str:
    if network.gpg() is None:
        return "not checked: gpg not installed"
    sig_url = url + ".asc"
    try:
        response, _ = _open_url(sig_url, timeout, network)
        with response:
            signature = response.read(_MAX_SIGNATURE_BYTES + 1)
    except AttemptFailed as exc:
        return f"not checked: no signature at {sig_url} ({exc})"
    except (OSError, http.client.HTTPException) as exc:
        return f"not checked: no signature at {sig_url} ({describe_failure(exc, timeout)})"
    if len(signature) > _MAX_SIGNATURE_BYTES:
        return f"not checked: {sig_url} is too large to be a signature"
    return _gpg_verify(data, signature, network)


def signature_for_file(local: Path, data: Path, network: Network = NETWORK) -> str:
    if network.gpg() is None:
        return "not checked: gpg not installed"
    sig_path = local.with_name(local.name + ".asc")
    try:
        with open_regular(sig_path) as fh:  # never a FIFO or a device
            signature = fh.read(_MAX_SIGNATURE_BYTES + 1)
    except OSError:
        return f"not checked: no {sig_path.name} beside {local}"
    return _gpg_verify(data, signature, network)


#: Environment variable naming a gpg keyring (OpenSSL's release keys) for signature checks.
KEYRING_ENV = ENVIRONMENT["gpg_keyring"]
CHUNK = 1 << 16
#: Release tarballs are 3-20 MB; a mirror that sends more is not serving one.
MAX_TARBALL_BYTES = 256 << 20
_MAX_SIGNATURE_BYTES = 64 << 10
