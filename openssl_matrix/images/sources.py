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
import functools
import json
import os
import re
import tarfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import yaml

from openssl_matrix.core import jsonread
from openssl_matrix.core.cachedir import cache_dir as default_cache_dir
from openssl_matrix.core.clock import now
from openssl_matrix.core.errors import SourceError
from openssl_matrix.core.files import (
    atomic_write,
    file_sha256,
    open_regular,
    read_bounded_text,
)
from openssl_matrix.core.log import info, step, warn
from openssl_matrix.core.version import Version, VersionError
from openssl_matrix.core.yamlload import YamlProblem, load_yaml
from openssl_matrix.images.download import (
    NETWORK,
    AttemptFailed,
    Network,
    describe_failure,
    download,
    signature_for_file,
    signature_for_url,
    stream_to_temp,
)
from openssl_matrix.matrix.releases import official_sha256

__all__ = [
    "KNOWN_SHA256",
    "NETWORK",
    "FetchedSource",
    "Network",
    "default_cache_dir",
    "default_urls",
    "fetch_source",
    "fetch_source_info",
    "pin_source",
    "read_pins",
    "sha256_file",
    "sources_dir",
    "tarball_name",
]

#: How the user pins a tarball; ``{version}`` is filled in.
PIN_COMMAND = "invoke matrix pin {version} --file PATH"

#: SHA-256 of official release tarballs: the release catalogue's (resources/releases.yaml,
#: each confirmed in public recipes or Debian's signed source index). Used to refuse
#: pinning other bytes under a release's name (a GitHub tag archive, say) and to tell the
#: sweep's third-party trees from official tarballs.
class _OfficialSha256(Mapping[str, str]):
    """The catalogue's official digests, read on first use: reading the catalogue takes
    ~0.4 s of CPU, which every command paid at start-up (``parse`` and ``import`` of a
    paste among them) whether it needed a digest or not."""

    @functools.cached_property
    def _digests(self) -> dict[str, str]:
        return official_sha256()

    def __getitem__(self, version: str) -> str:
        return self._digests[version]

    def __iter__(self) -> Iterator[str]:
        return iter(self._digests)

    def __len__(self) -> int:
        return len(self._digests)


KNOWN_SHA256: Mapping[str, str] = _OfficialSha256()

#: Leftover partial downloads older than this are removed.
_STALE_PART_SECONDS = 3600.0

_SHA256_RE = re.compile(r"^[0-9a-f]{64}\Z")


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


def sources_dir(cache_dir: Path | None = None) -> Path:
    """The directory holding tarballs: ``<cache_dir or default_cache_dir()>/sources``."""
    return (cache_dir if cache_dir is not None else default_cache_dir()) / "sources"


def tarball_name(version: str) -> str:
    return f"openssl-{version}.tar.gz"


def check_version(version: str) -> Version:
    """The release version ``version`` names; SourceError when it names none."""
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
    v = check_version(version)
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


# --------------------------------------------------------------------------- network

# --------------------------------------------------------------------------- signatures


# --------------------------------------------------------------------------- cache


def _origin_record(path: Path) -> Path:
    return path.with_name(path.name + ".origin.json")


def _read_origin(path: Path, sha256: str) -> tuple[str, str]:
    try:
        record = jsonread.loads(read_bounded_text(_origin_record(path), "config"))
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
    return _pins_of(lock_file, _read_lock_document(lock_file))


def _pins_of(lock_file: Path, document: Mapping[str, Any]) -> dict[str, str]:
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
    return _parse_lock(lock_file, _read_lock_text(lock_file))


def _read_lock_text(lock_file: Path) -> str | None:
    """The lock file's text (None when there is none)."""
    try:
        return read_bounded_text(lock_file, "yaml")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise SourceError(f"the lock file {lock_file} is not UTF-8 text",
                          hint="fix or delete it") from None
    except OSError as exc:
        raise SourceError(f"cannot read the lock file {lock_file}: {exc}") from exc


def _parse_lock(lock_file: Path, text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        document = jsonread.loads(text) if _is_json(lock_file) else load_yaml(text)
    except (ValueError, YamlProblem) as exc:
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
    # the folder itself is the lock: no guard file is left beside the lock file (an
    # older version left ``.<name>.lock``; it is removed here when found)
    fd = os.open(lock_file.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            with contextlib.suppress(OSError):
                stale = lock_file.with_name(f".{lock_file.name}.lock")
                if stale.is_file() and not stale.is_symlink() and stale.stat().st_size == 0:
                    stale.unlink()
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _check_layout(tarball: Path, version: str) -> None:
    """A release tarball is a gzip tar whose top directory is ``openssl-<version>``."""
    expected = f"openssl-{version}"
    try:
        with open_regular(tarball) as fh, tarfile.open(fileobj=fh, mode="r:gz") as archive:
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
    check_version(version)
    tarball = Path(tarball)
    if not tarball.is_file():
        raise SourceError(f"{tarball}: not a regular file (a FIFO, a device or a folder)"
                          if tarball.exists() else f"no such file: {tarball}",
                          hint="give the path of the tarball")
    _check_layout(tarball, version)
    directory = sources_dir(cache_dir)
    _prepare_dir(directory)
    try:
        src = open_regular(tarball)
    except OSError as exc:
        raise SourceError(f"{tarball}: {exc.strerror}", hint="give the path of the tarball "
                          "itself (a regular file)") from None
    with src:
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
            text = _read_lock_text(lock_file)  # read once: parsed, checked, its pins
            document = _parse_lock(lock_file, text)
            _refuse_foreign_lock(lock_file, text, document)
            pins = _pins_of(lock_file, document)
            if pins.get(version, sha256) != sha256 and not force:
                raise SourceError(
                    f"{lock_file} already pins OpenSSL {version} to {pins[version]}; "
                    f"{tarball} has {sha256}",
                    hint="remove the old pin first if you mean to replace it",
                )
            origin = f"pinned:{tarball.resolve()}"
            signature = signature_for_file(tarball, tmp)
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


#: The first line of every YAML lock file ``pin`` writes: its marker.
LOCK_HEADER = "# openssl-matrix source pins: OpenSSL version -> sha256 of a tarball you trust.\n"


def _lock_text(lock_file: Path, document: Mapping[str, Any]) -> str:
    if _is_json(lock_file):
        return json.dumps(document, indent=2) + "\n"
    return (LOCK_HEADER + f"# Written by `{PIN_COMMAND.format(version='VERSION')}`.\n"
            + yaml.safe_dump(dict(document), sort_keys=False, default_flow_style=False))


def _refuse_foreign_lock(lock_file: Path, text: str | None,
                         document: Mapping[str, Any]) -> None:
    """SourceError when ``lock_file`` exists (its ``text``) and ``pin`` did not write it:
    a YAML lock without pin's header line, or a JSON one not in the layout pin writes.
    Rewriting it would drop its comments and layout (a lock written by hand, or another
    tool's file under the name), so it is left alone and the user says what to do."""
    if text is None:
        return
    ours = (text == _lock_text(lock_file, document)) if _is_json(lock_file) \
        else text.startswith(LOCK_HEADER)
    if not ours:
        raise SourceError(
            f"{lock_file} was not written by `invoke matrix pin` (it lacks pin's "
            "header line): it is left alone, since rewriting it would drop its comments "
            "and layout",
            hint="add the pin to its `sources:` by hand (sha256 and pinned_from), or move "
            "the file aside and pin again")


def _write_lock_document(lock_file: Path, document: dict[str, Any]) -> None:
    atomic_write(lock_file, _lock_text(lock_file, document))


def _copy_local(src: IO[bytes], directory: Path, path: Path) -> tuple[Path, str, int]:
    try:
        return stream_to_temp(src, directory, None)
    except AttemptFailed as exc:
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
    network: Network = NETWORK,
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
        network=network,
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
    network: Network = NETWORK,
) -> FetchedSource:
    """Find, verify and cache a release tarball; say where it came from.

    Order: the cache (no network when its hash matches; a corrupted copy is deleted),
    then ``local_dirs`` (``openssl-<v>.tar.gz`` or Debian's ``openssl_<v>.orig.tar.gz``),
    then ``urls`` in order, each with ``timeout`` seconds for connecting and for each
    read. Raises :class:`SourceError` listing every attempt when none gives the bytes
    whose sha256 is expected. ``network``: the name lookup and gpg (the machine's).
    """
    check_version(version)
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
        found = _from_local_dirs(version, expected, local_dirs, directory, failures,
                                 network)
        if found is None:
            raise _all_failed(version, expected, failures, local_dirs, directory)
        tmp, origin, signature = found
        _install(tmp, final, expected, origin, signature)
        return FetchedSource(final, expected, origin, signature, cached=False)
    with step(f"fetch {name}"):
        found = _from_local_dirs(version, expected, local_dirs, directory, failures,
                                 network)
        if found is None:
            found = _from_urls(urls, expected, directory, timeout, failures, network)
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
    network: Network,
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
                with open_regular(candidate) as src:  # a FIFO there would block for ever
                    tmp, got, _size = stream_to_temp(src, directory, None)
            except (OSError, AttemptFailed) as exc:
                failures.append((str(candidate), describe_failure(exc)))
                continue
            if got != expected:
                tmp.unlink(missing_ok=True)
                reason = f"sha256 mismatch: file has {got}, expected {expected}"
                warn(f"{candidate}: {reason}")
                failures.append((str(candidate), reason))
                continue
            signature = signature_for_file(candidate, tmp, network)
            info(f"    sha256 ok (local file); signature {signature}")
            return tmp, f"local:{candidate.resolve()}", signature
    return None


def _from_urls(
    urls: Sequence[str],
    expected: str,
    directory: Path,
    timeout: float,
    failures: list[tuple[str, str]],
    network: Network,
) -> tuple[Path, str, str] | None:
    for url in urls:
        info(f"  trying {url}")
        start = time.monotonic()
        try:
            tmp, got, size = download(url, directory, timeout, network)
        except AttemptFailed as exc:
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
        signature = signature_for_url(url, tmp, timeout, network)
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
