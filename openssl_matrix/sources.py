"""Download, verify and cache OpenSSL release tarballs.

A tarball is only ever used when its SHA-256 matches a checksum the user trusts: one
given by the caller (from matrix.yaml) or one recorded by :func:`pin_source` in a lock
file. Sources are looked for in this order: the cache, local directories (a machine
without internet), then each URL in turn (``http(s)://`` and ``file://``). A download
goes to a temporary file in the cache directory, is hashed while it streams, and is
renamed into place only when the hash matches; a URL that fails or serves other bytes is
reported and the next one is tried.

Where each file came from is recorded beside it (``openssl-<v>.tar.gz.origin.json``),
so a cache hit still tells the caller which URL, local file or pin it was first
obtained from, and whether its OpenSSL signature was checked.

Signatures: when ``gpg`` is installed, ``<url>.asc`` (or ``<file>.asc`` beside a local
file) is verified against the user's gpg keyring, or the keyring file named by
``$OPENSSL_MATRIX_GPG_KEYRING``. A missing signature or key is recorded as "not checked"
and is not an error: the sha256 is what decides.

The lock file written by :func:`pin_source` (YAML, or JSON if its name ends in .json)::

    sources:
      1.0.1e:
        sha256: f74f15e8...
        pinned_from: /home/me/Downloads/openssl-1.0.1e.tar.gz
        pinned_at: '2026-11-30T03:40:00+00:00'
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import yaml

from .clock import now
from .errors import SourceError
from .files import atomic_write, file_sha256
from .log import info, step, warn
from .releases import official_sha256
from .version import Version, VersionError

__all__ = [
    "KNOWN_SHA256",
    "FetchedSource",
    "default_cache_dir",
    "default_urls",
    "fetch_source",
    "fetch_source_info",
    "forget_failed_hosts",
    "pin_source",
    "read_pins",
    "sha256_file",
    "sources_dir",
    "tarball_name",
]

#: How the user pins a tarball; ``{version}`` is filled in.
PIN_COMMAND = "invoke matrix pin {version} --file PATH"

#: Environment variable naming a gpg keyring (OpenSSL's release keys) for signature checks.
KEYRING_ENV = "OPENSSL_MATRIX_GPG_KEYRING"

#: SHA-256 of official release tarballs: the release catalogue's (releases.yaml, each
#: confirmed in public recipes or Debian's signed source index). Used to refuse pinning
#: other bytes under a release's name (a GitHub tag archive, say) and to tell the
#: sweep's third-party trees from official tarballs.
KNOWN_SHA256: dict[str, str] = official_sha256()

_CHUNK = 1 << 16
#: Release tarballs are 3-20 MB; a mirror that sends more is not serving one.
_MAX_TARBALL_BYTES = 256 << 20
_MAX_SIGNATURE_BYTES = 64 << 10
#: Leftover partial downloads older than this are removed.
_STALE_PART_SECONDS = 3600.0

_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class FetchedSource:
    """A verified tarball in the cache and where it came from.

    ``origin`` is where the bytes were first obtained: a URL, ``local:<path>`` or
    ``pinned:<path>`` (or ``cache`` if the cache holds no record of it). ``cached`` tells
    whether this call found it already in the cache. ``signature`` says whether an
    OpenSSL PGP signature was verified (``verified: ...``), ``not checked: <why>`` or
    ``BAD: ...`` (the checksum still matched, so the file was used).
    """

    path: Path
    sha256: str
    origin: str
    signature: str
    cached: bool = False


# --------------------------------------------------------------------------- paths


def default_cache_dir() -> Path:
    """$OPENSSL_MATRIX_CACHE, else $XDG_CACHE_HOME/openssl-matrix, else ~/.cache/openssl-matrix.

    Sources go in ``<that>/sources`` (see :func:`sources_dir`).
    """
    explicit = os.environ.get("OPENSSL_MATRIX_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and Path(xdg).is_absolute():  # the XDG spec says to ignore relative paths
        return Path(xdg) / "openssl-matrix"
    return Path.home() / ".cache" / "openssl-matrix"


def sources_dir(cache_dir: Path | None = None) -> Path:
    """The directory holding tarballs: ``<cache_dir or default_cache_dir()>/sources``."""
    return (cache_dir if cache_dir is not None else default_cache_dir()) / "sources"


def tarball_name(version: str) -> str:
    return f"openssl-{version}.tar.gz"


def _check_version(version: str) -> Version:
    try:
        return Version.parse(version)
    except VersionError:
        raise SourceError(
            f"{version!r} is not an OpenSSL release version",
            hint="use a release number such as 1.1.1w or 3.0.20",
        ) from None


def _normalise_sha256(sha256: str, what: str) -> str:
    value = sha256.strip().lower()
    if not _SHA256_RE.match(value):
        raise SourceError(
            f"{what}: {sha256!r} is not a SHA-256 (64 hex digits)",
            hint="copy the release's sha256 again, or pin a tarball you trust with "
            + PIN_COMMAND.format(version="VERSION"),
        )
    return value


def default_urls(version: str) -> list[str]:
    """Mirror URLs for a release, in order of preference.

    openssl.org's ``old/<series>/`` folder, the GitHub release asset (tag ``OpenSSL_1_1_1w``
    before 3.0, ``openssl-3.0.20`` from 3.0), then Debian's pool (and, for 3.x, its
    security archive's pool), which carry byte-identical upstream tarballs for the
    versions its suites still use.
    """
    v = _check_version(version)
    major, minor, patch = str(v.major), str(v.minor), str(v.patch)
    if major == "0":
        series = f"{major}.{minor}.x"
    elif major == "1":
        series = f"{major}.{minor}.{patch}"
    else:
        series = f"{major}.{minor}"
    tag = f"OpenSSL_{version.replace('.', '_')}" if int(major) < 3 else f"openssl-{version}"
    name = tarball_name(version)
    urls = [
        f"https://www.openssl.org/source/old/{series}/{name}",
        f"https://github.com/openssl/openssl/releases/download/{tag}/{name}",
        f"http://deb.debian.org/debian/pool/main/o/openssl/openssl_{version}.orig.tar.gz",
    ]
    if int(major) >= 3:
        # Debian's security archive keeps the 3.x releases of its stable suites' updates
        # (3.0.18, 3.0.19, 3.0.22, 3.5.7 answered there on 2026-11-30)
        urls.append("http://deb.debian.org/debian-security/pool/updates/main/o/openssl/"
                    f"openssl_{version}.orig.tar.gz")
    return urls


# --------------------------------------------------------------------------- hashing


sha256_file = file_sha256  # the one file hash (files.file_sha256), under its old name


class _AttemptFailed(Exception):
    """One source (URL or local file) did not give the tarball; the message says why."""


def _stream_to_temp(
    src: IO[bytes], directory: Path, expected_length: int | None, timeout: float | None = None
) -> tuple[Path, str, int]:
    """Copy ``src`` into a temporary file in ``directory``, hashing as it goes.

    Returns (temporary path, sha256, size). On any failure the temporary file is removed
    and :class:`_AttemptFailed` raised.
    """
    fd, name = tempfile.mkstemp(dir=directory, prefix=".download-", suffix=".part")
    tmp = Path(name)
    digest = hashlib.sha256()
    size = 0
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := src.read(_CHUNK):
                size += len(chunk)
                if size > _MAX_TARBALL_BYTES:
                    raise _AttemptFailed(
                        f"more than {_MAX_TARBALL_BYTES >> 20} MiB: not a release tarball"
                    )
                digest.update(chunk)
                out.write(chunk)
        if expected_length is not None and size != expected_length:
            raise _AttemptFailed(f"truncated: got {size} of {expected_length} bytes")
    except _AttemptFailed:
        tmp.unlink(missing_ok=True)
        raise
    except (OSError, http.client.HTTPException) as exc:
        tmp.unlink(missing_ok=True)
        raise _AttemptFailed(f"{_describe(exc, timeout)} after {size} bytes") from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp, digest.hexdigest(), size


# --------------------------------------------------------------------------- network

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


def _resolve(host: str, port: int, deadline: float) -> list[Any]:
    """getaddrinfo with a deadline (the C call itself has none)."""
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            result["addrs"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
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
    for family, kind, proto, _name, sockaddr in _resolve(host, port, deadline):
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
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _bounded_connect


class _HTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _bounded_connect


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        context = ssl.create_default_context()
        return self.do_open(_HTTPSConnection, req, context=context)


def _opener() -> urllib.request.OpenerDirector:
    opener = urllib.request.build_opener(_HTTPHandler, _HTTPSHandler)
    opener.addheaders = [("User-Agent", "openssl-matrix (source fetch)")]
    return opener


def _describe(exc: BaseException | str, timeout: float | None = None) -> str:
    """A short, plain reason for a failed attempt."""
    if isinstance(exc, str):
        return exc
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return _describe(exc.reason, timeout)
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


def _open_url(url: str, timeout: float) -> tuple[IO[bytes], int | None]:
    """Open a URL for reading; return the stream and its announced length."""
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("http", "https", "file"):
        raise _AttemptFailed(f"unsupported URL scheme {scheme!r} (use http, https or file)")
    host = _host_key(url)
    if host is not None:
        with _failed_hosts_lock:
            earlier = _failed_hosts.get(host)
        if earlier is not None:
            raise _AttemptFailed(f"skipped: {host} already failed in this run ({earlier})")
    try:
        response = _opener().open(url, timeout=timeout)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise _AttemptFailed(_describe(exc)) from exc
    except urllib.error.URLError as exc:
        # Raised while connecting or sending: the host itself is unreachable.
        reason = _describe(exc, timeout)
        if host is not None:
            with _failed_hosts_lock:
                _failed_hosts[host] = reason
        raise _AttemptFailed(reason) from exc
    except (OSError, http.client.HTTPException) as exc:
        raise _AttemptFailed(_describe(exc, timeout)) from exc
    length_header = response.headers.get("Content-Length")
    length = int(length_header) if length_header and length_header.isdigit() else None
    return response, length


def _download(url: str, directory: Path, timeout: float) -> tuple[Path, str, int]:
    response, length = _open_url(url, timeout)
    with response:
        return _stream_to_temp(response, directory, length, timeout)


# --------------------------------------------------------------------------- signatures


def _gpg_verify(data: Path, signature: bytes) -> str:
    gpg = shutil.which("gpg")
    if gpg is None:
        return "not checked: gpg not installed"
    command = [gpg, "--batch", "--no-tty", "--status-fd", "1"]
    keyring = os.environ.get(KEYRING_ENV)
    if keyring:
        command += ["--no-default-keyring", "--keyring", str(Path(keyring).resolve())]
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
            return f"not checked: gpg failed ({_describe(exc)})"
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


def _signature_for_url(url: str, data: Path, timeout: float) -> str:
    if shutil.which("gpg") is None:
        return "not checked: gpg not installed"
    sig_url = url + ".asc"
    try:
        response, _ = _open_url(sig_url, timeout)
        with response:
            signature = response.read(_MAX_SIGNATURE_BYTES + 1)
    except _AttemptFailed as exc:
        return f"not checked: no signature at {sig_url} ({exc})"
    except (OSError, http.client.HTTPException) as exc:
        return f"not checked: no signature at {sig_url} ({_describe(exc, timeout)})"
    if len(signature) > _MAX_SIGNATURE_BYTES:
        return f"not checked: {sig_url} is too large to be a signature"
    return _gpg_verify(data, signature)


def _signature_for_file(local: Path, data: Path) -> str:
    if shutil.which("gpg") is None:
        return "not checked: gpg not installed"
    sig_path = local.with_name(local.name + ".asc")
    try:
        signature = sig_path.read_bytes()[: _MAX_SIGNATURE_BYTES + 1]
    except OSError:
        return f"not checked: no {sig_path.name} beside {local}"
    return _gpg_verify(data, signature)


# --------------------------------------------------------------------------- cache


def _origin_record(path: Path) -> Path:
    return path.with_name(path.name + ".origin.json")


def _read_origin(path: Path, sha256: str) -> tuple[str, str]:
    try:
        record = json.loads(_origin_record(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "cache", "not checked: no record of where the cached file came from"
    if not isinstance(record, dict) or record.get("sha256") != sha256:
        return "cache", "not checked: no record of where the cached file came from"
    return str(record.get("origin", "cache")), str(record.get("signature", "not checked"))


def _install(tmp: Path, final: Path, sha256: str, origin: str, signature: str) -> None:
    """Move a verified temporary file into place and record where it came from."""
    tmp.chmod(0o644)  # mkstemp makes it 0600; builds may read it as another user
    os.replace(tmp, final)
    record = {
        "sha256": sha256,
        "origin": origin,
        "signature": signature,
        "fetched_at": now("seconds"),
    }
    atomic_write(_origin_record(final), json.dumps(record, indent=2) + "\n")


def _prepare_dir(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SourceError(
            f"cannot create the source cache {directory}: {exc.strerror or exc}",
            hint="set OPENSSL_MATRIX_CACHE to a writable directory",
        ) from exc
    now = time.time()
    for part in directory.glob(".download-*.part"):
        with contextlib.suppress(OSError):
            if now - part.stat().st_mtime > _STALE_PART_SECONDS:
                part.unlink()


def _size_speed(size: int, seconds: float) -> str:
    mib = size / (1 << 20)
    return f"{mib:.1f} MiB in {seconds:.2f}s ({mib / max(seconds, 1e-3):.1f} MiB/s)"


# --------------------------------------------------------------------------- pins


def read_pins(lock_file: Path) -> dict[str, str]:
    """version -> sha256 recorded in a lock file (an absent file holds no pins)."""
    document = _read_lock_document(lock_file)
    pins: dict[str, str] = {}
    for version, entry in (document.get("sources") or {}).items():
        value = entry.get("sha256") if isinstance(entry, dict) else entry
        if not isinstance(value, str):
            raise SourceError(f"{lock_file}: sources.{version} has no sha256")
        pins[str(version)] = _normalise_sha256(value, f"{lock_file}: sources.{version}")
    return pins


def _is_json(lock_file: Path) -> bool:
    return lock_file.suffix.lower() == ".json"


def _read_lock_document(lock_file: Path) -> dict[str, Any]:
    try:
        text = lock_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SourceError(f"cannot read the lock file {lock_file}: {exc}") from exc
    try:
        document = json.loads(text) if _is_json(lock_file) else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise SourceError(
            f"the lock file {lock_file} is not valid {'JSON' if _is_json(lock_file) else 'YAML'}"
            f": {exc}",
            hint="fix or delete it, then pin again with " + PIN_COMMAND.format(version="VERSION"),
        ) from exc
    if document is None:
        return {}
    if not isinstance(document, dict) or not isinstance(document.get("sources", {}), dict):
        raise SourceError(
            f"the lock file {lock_file} should be a mapping with a 'sources' mapping "
            "of version -> {sha256: ...}"
        )
    return document


@contextlib.contextmanager
def _locked(lock_file: Path) -> Iterator[None]:
    """Serialise read-modify-write of a lock file between processes."""
    guard = lock_file.with_name(f".{lock_file.name}.lock")
    with open(guard, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _check_layout(tarball: Path, version: str) -> None:
    """A release tarball is a gzip tar whose top directory is ``openssl-<version>``."""
    expected = f"openssl-{version}"
    try:
        with tarfile.open(tarball, mode="r:gz") as archive:
            first = archive.next()
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise SourceError(
            f"{tarball} is not a gzip-compressed tar archive ({exc})",
            hint=f"pin the release tarball {tarball_name(version)}",
        ) from exc
    top = first.name.lstrip("./").split("/")[0] if first is not None else ""
    if top != expected:
        raise SourceError(
            f"{tarball} unpacks into {top or 'nothing'!r}, not {expected!r}: it is not the "
            f"OpenSSL {version} release tarball",
            hint="GitHub tag archives (archive/refs/tags/...) differ from release tarballs; "
            f"use {tarball_name(version)} from openssl.org, a GitHub release or Debian's pool",
        )


def pin_source(
    version: str,
    tarball: Path,
    lock_file: Path,
    *,
    cache_dir: Path | None = None,
    force: bool = False,
) -> str:
    """Trust a tarball: hash it, copy it into the cache, record version -> sha256.

    The lock file is YAML, or JSON when its name ends in ``.json``, written atomically.
    Refuses (unless ``force``) a file whose hash differs from a known official checksum
    or from an existing pin for the version. Returns the sha256.
    """
    _check_version(version)
    tarball = Path(tarball)
    if not tarball.is_file():
        raise SourceError(f"no such file: {tarball}", hint="give the path of the tarball")
    _check_layout(tarball, version)
    directory = sources_dir(cache_dir)
    _prepare_dir(directory)
    with open(tarball, "rb") as src:
        tmp, sha256, _size = _copy_local(src, directory, tarball)
    try:
        known = KNOWN_SHA256.get(version)
        if known is not None and known != sha256 and not force:
            raise SourceError(
                f"{tarball} has sha256 {sha256}, but the official OpenSSL {version} release "
                f"tarball has {known}",
                hint="get the release tarball from a trusted mirror (GitHub tag archives "
                "differ), or add --force to `invoke matrix pin` if you really mean to build "
                "these bytes",
            )
        lock_file = Path(lock_file)
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        with _locked(lock_file):
            document = _read_lock_document(lock_file)
            pins = read_pins(lock_file)
            if pins.get(version, sha256) != sha256 and not force:
                raise SourceError(
                    f"{lock_file} already pins OpenSSL {version} to {pins[version]}; "
                    f"{tarball} has {sha256}",
                    hint="remove the old pin first if you mean to replace it",
                )
            origin = f"pinned:{tarball.resolve()}"
            signature = _signature_for_file(tarball, tmp)
            _install(tmp, directory / tarball_name(version), sha256, origin, signature)
            sources = dict(document.get("sources") or {})
            sources[version] = {
                "sha256": sha256,
                "pinned_from": str(tarball.resolve()),
                "pinned_at": now("seconds"),
            }
            document["sources"] = dict(sorted(sources.items()))
            _write_lock_document(lock_file, document)
    finally:
        tmp.unlink(missing_ok=True)
    info(f"pinned OpenSSL {version}: sha256 {sha256} in {lock_file}")
    return sha256


def _write_lock_document(lock_file: Path, document: dict[str, Any]) -> None:
    if _is_json(lock_file):
        text = json.dumps(document, indent=2) + "\n"
    else:
        text = (
            "# openssl-matrix source pins: OpenSSL version -> sha256 of a tarball you trust.\n"
            f"# Written by `{PIN_COMMAND.format(version='VERSION')}`.\n"
            + yaml.safe_dump(document, sort_keys=False, default_flow_style=False)
        )
    atomic_write(lock_file, text)


def _copy_local(src: IO[bytes], directory: Path, path: Path) -> tuple[Path, str, int]:
    try:
        return _stream_to_temp(src, directory, None)
    except _AttemptFailed as exc:
        raise SourceError(f"cannot copy {path} into the cache: {exc}") from exc


# --------------------------------------------------------------------------- fetch


def fetch_source(
    version: str,
    sha256: str | None,
    urls: Sequence[str],
    *,
    cache_dir: Path | None = None,
    local_dirs: Sequence[Path] = (),
    timeout: float = 15.0,
    lock_file: Path | None = None,
) -> Path:
    """Return the path of a verified ``openssl-<version>.tar.gz`` in the cache.

    See :func:`fetch_source_info`, which also says where the file came from.
    """
    return fetch_source_info(
        version,
        sha256,
        urls,
        cache_dir=cache_dir,
        local_dirs=local_dirs,
        timeout=timeout,
        lock_file=lock_file,
    ).path


def _expected_sha256(version: str, sha256: str | None, lock_file: Path | None) -> str:
    pinned = read_pins(Path(lock_file)).get(version) if lock_file is not None else None
    if sha256 is not None:
        given = _normalise_sha256(sha256, f"sha256 for OpenSSL {version}")
        if pinned is not None and pinned != given:
            warn(
                f"OpenSSL {version}: the matrix gives sha256 {given} but {lock_file} pins "
                f"{pinned}; using the matrix's"
            )
        return given
    if pinned is not None:
        return pinned
    where = f"in {lock_file}" if lock_file is not None else "(no lock file given)"
    raise SourceError(
        f"no sha256 is known for OpenSSL {version}: neither the matrix nor a pin {where} "
        "gives one, and an unverified tarball is never built",
        hint=f"get {tarball_name(version)} from a source you trust, then pin it with "
        f"`{PIN_COMMAND.format(version=version)}`, or add its sha256 to matrix.yaml",
    )


def fetch_source_info(
    version: str,
    sha256: str | None,
    urls: Sequence[str],
    *,
    cache_dir: Path | None = None,
    local_dirs: Sequence[Path] = (),
    timeout: float = 15.0,
    lock_file: Path | None = None,
) -> FetchedSource:
    """Find, verify and cache a release tarball; say where it came from.

    Order: the cache (no network when its hash matches; a corrupted copy is deleted),
    then ``local_dirs`` (``openssl-<v>.tar.gz`` or Debian's ``openssl_<v>.orig.tar.gz``),
    then ``urls`` in order, each with ``timeout`` seconds for connecting and for each
    read. Raises :class:`SourceError` listing every attempt when none gives the bytes
    whose sha256 is expected.
    """
    _check_version(version)
    expected = _expected_sha256(version, sha256, lock_file)
    directory = sources_dir(cache_dir)
    _prepare_dir(directory)
    name = tarball_name(version)
    final = directory / name

    if final.is_file():
        got = sha256_file(final)
        if got == expected:
            origin, signature = _read_origin(final, expected)
            info(f"{name}: in the cache, sha256 ok")
            return FetchedSource(final, expected, origin, signature, cached=True)
        warn(
            f"cached {final} has sha256 {got}, expected {expected}: corrupted or replaced; "
            "deleting it and fetching again"
        )
        final.unlink(missing_ok=True)
        _origin_record(final).unlink(missing_ok=True)

    failures: list[tuple[str, str]] = []
    if not urls:  # nothing is downloaded: a look into local folders, not a "fetch"
        found = _from_local_dirs(version, expected, local_dirs, directory, failures)
        if found is None:
            raise _all_failed(version, expected, failures, local_dirs, directory)
        tmp, origin, signature = found
        _install(tmp, final, expected, origin, signature)
        return FetchedSource(final, expected, origin, signature, cached=False)
    with step(f"fetch {name}"):
        found = _from_local_dirs(version, expected, local_dirs, directory, failures)
        if found is None:
            found = _from_urls(urls, expected, directory, timeout, failures)
        if found is None:
            raise _all_failed(version, expected, failures, local_dirs, directory)
    tmp, origin, signature = found
    _install(tmp, final, expected, origin, signature)
    return FetchedSource(final, expected, origin, signature, cached=False)


def _from_local_dirs(
    version: str,
    expected: str,
    local_dirs: Sequence[Path],
    directory: Path,
    failures: list[tuple[str, str]],
) -> tuple[Path, str, str] | None:
    names = (tarball_name(version), f"openssl_{version}.orig.tar.gz")
    for local_dir in local_dirs:
        candidates = [Path(local_dir) / n for n in names if (Path(local_dir) / n).is_file()]
        if not candidates:
            failures.append((f"{local_dir}/", f"no {names[0]} or {names[1]} there"))
            continue
        for candidate in candidates:
            info(f"  trying {candidate}")
            try:
                with open(candidate, "rb") as src:
                    tmp, got, _size = _stream_to_temp(src, directory, None)
            except (OSError, _AttemptFailed) as exc:
                failures.append((str(candidate), _describe(exc)))
                continue
            if got != expected:
                tmp.unlink(missing_ok=True)
                reason = f"sha256 mismatch: file has {got}, expected {expected}"
                warn(f"{candidate}: {reason}")
                failures.append((str(candidate), reason))
                continue
            signature = _signature_for_file(candidate, tmp)
            info(f"    sha256 ok (local file); signature {signature}")
            return tmp, f"local:{candidate.resolve()}", signature
    return None


def _from_urls(
    urls: Sequence[str],
    expected: str,
    directory: Path,
    timeout: float,
    failures: list[tuple[str, str]],
) -> tuple[Path, str, str] | None:
    for url in urls:
        info(f"  trying {url}")
        start = time.monotonic()
        try:
            tmp, got, size = _download(url, directory, timeout)
        except _AttemptFailed as exc:
            info(f"    failed: {exc} ({time.monotonic() - start:.1f}s)")
            failures.append((url, str(exc)))
            continue
        elapsed = time.monotonic() - start
        if got != expected:
            tmp.unlink(missing_ok=True)
            reason = f"sha256 mismatch: served {got} ({size} bytes), expected {expected}"
            warn(f"{url}: {reason}")
            failures.append((url, reason))
            continue
        info(f"    got {_size_speed(size, elapsed)}, sha256 ok")
        signature = _signature_for_url(url, tmp, timeout)
        info(f"    signature {signature}")
        return tmp, url, signature
    return None


def _all_failed(
    version: str,
    expected: str,
    failures: list[tuple[str, str]],
    local_dirs: Sequence[Path],
    directory: Path,
) -> SourceError:
    name = tarball_name(version)
    lines = [f"could not obtain {name} with sha256 {expected}:"]
    lines += [f"  - {where}: {why}" for where, why in failures] or ["  - no URLs to try"]
    where = (
        "into " + " or ".join(str(d) for d in local_dirs) + " (the matrix's sources_dirs)"
        if local_dirs
        else f"into {directory} (the source cache), or into a folder you name in the "
        "matrix's sources_dirs (e.g. sources_dirs: [tarballs], beside matrix.yaml)"
    )
    urls = [u for u in default_urls(version) if "openssl.org" in u or "github.com" in u] \
        if _SHA256_RE.match(expected) else []
    origin = f" (from {' or '.join(urls)})" if urls else ""
    return SourceError(
        "\n".join(lines),
        hint=f"bring {name}{origin} from a machine with internet access and put it {where}, "
        f"or pass a file:// URL to it; its sha256 must be {expected}",
    )
