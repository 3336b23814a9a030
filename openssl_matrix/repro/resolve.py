"""Reproduce, step 1: resolve the report's versions to sources usable here, and what
the machine (its CPU, kernel and devices, seen through the engine) can do."""

from __future__ import annotations

import re
import socket
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openssl_matrix.core.errors import SourceError
from openssl_matrix.engine.backend import Backend, endpoint_is_local
from openssl_matrix.images.sources import KNOWN_SHA256, default_urls, fetch_source_info, read_pins
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.cell import cpu_via_container
from openssl_matrix.measure.hostinfo import CpuInfo
from openssl_matrix.repro.spec import ReportSpec, VersionRef

# ----------------------------------------------------------------------------------
# where the user's matrix fits in


@dataclass(frozen=True)
class Environment:
    """What the user's own matrix contributes: version entries, defaults, pins, sources."""

    matrix_path: Path | None
    versions: Mapping[str, Any]
    defaults: Mapping[str, Any]
    profiles: Mapping[str, Any]
    sources_dirs: tuple[Path, ...]
    lock_file: Path | None
    mirrors: Callable[[str], list[str]] = default_urls

    @classmethod
    def from_matrix(cls, path: Path | None,
                    mirrors: Callable[[str], list[str]] = default_urls) -> Environment:
        """Read the user's matrix if there is one (it is optional for reproduce);
        ``mirrors``: where a release is downloaded from besides the spec's and the matrix's
        URLs (the official mirrors; a test offline passes none)."""
        if path is None or not path.is_file():
            return cls(None, {}, {}, {}, (), path.with_suffix(".lock") if path else None,
                       mirrors)
        m = load_matrix(path, default_urls=default_urls)
        raw = m.raw
        return cls(path, dict(raw.get("versions") or {}), dict(raw.get("defaults") or {}),
                   dict(raw.get("profiles") or {}), m.sources_dirs, path.with_suffix(".lock"),
                   mirrors)


@dataclass(frozen=True)
class ResolvedVersion:
    """A spec version as it will be built here (``release``), or why it cannot be."""

    name: str
    release: str | None
    stand_in: bool
    sha256: str | None
    urls: tuple[str, ...]
    origin: str | None
    problem: str | None  # why the version itself cannot be used (even if a stand-in can)


def _sha_for(version: str, ref: VersionRef | None, env: Environment) -> str | None:
    if ref is not None and ref.sha256:
        return ref.sha256
    entry = env.versions.get(version)
    if isinstance(entry, dict) and entry.get("sha256"):
        return str(entry["sha256"])
    if env.lock_file is not None:
        pinned = read_pins(env.lock_file).get(version)
        if pinned:
            return pinned
    return KNOWN_SHA256.get(version)


def _urls_for(version: str, ref: VersionRef | None, env: Environment) -> tuple[str, ...]:
    urls: list[str] = list(ref.urls) if ref is not None else []
    entry = env.versions.get(version)
    if isinstance(entry, dict):
        urls += [str(u) for u in entry.get("urls") or []]
    urls += env.mirrors(version)
    return tuple(dict.fromkeys(urls))


def _obtain(version: str, ref: VersionRef | None, env: Environment, offline: bool = False,
            ) -> tuple[str | None, tuple[str, ...], str | None, str | None]:
    """(sha256, urls, origin, problem) for one release; ``offline``: the cache and the
    sources_dirs only (the problem then names the places reproduce would try)."""
    if ref is not None and not ref.release:
        what = ref.as_reported or version
        advice = "" if ref.stand_in else (
            f"; to judge its claims here, name a release that behaves the same for them as "
            f"versions.{version}.stand_in, with stand_in_why")
        return None, (), None, (f"{version} ({what}) was a development snapshot, not a "
                                f"release: no release tarball of it exists{advice}")
    sha = _sha_for(version, ref, env)
    if sha is None and version.endswith("-dev"):
        return None, (), None, (
            f"OpenSSL {version} names a development snapshot, never released, so no tarball "
            f"of it can be pinned: write `release: false` under versions.{version}, and a "
            f"stand_in release (with stand_in_why) to judge its claims here")
    if sha is None:
        return None, (), None, (
            f"no sha256 is known for OpenSSL {version}, and an unverified tarball is never "
            f"built: get openssl-{version}.tar.gz from a source you trust and pin it with "
            f"`invoke matrix pin {version} --file PATH`")
    urls = _urls_for(version, ref, env)
    try:
        found = fetch_source_info(version, sha, () if offline else urls,
                                  local_dirs=env.sources_dirs, lock_file=env.lock_file)
    except SourceError as exc:
        if offline:
            hosts = ", ".join(dict.fromkeys(urllib.parse.urlparse(u).netloc or u
                                            for u in urls)) or "nowhere"
            return sha, urls, None, (f"openssl-{version}.tar.gz is not in the cache or a "
                                     f"sources_dirs folder; reproduce will try {hosts}")
        return sha, urls, None, (
            f"the source of OpenSSL {version} is not obtainable here ({_attempts(exc)}): put "
            f"openssl-{version}.tar.gz (sha256 {sha[:12]}…) into a sources_dirs folder of the "
            f"matrix, or pin it with `invoke matrix pin {version} --file PATH`")
    return sha, urls, str(found.origin), None


def _attempts(exc: SourceError) -> str:
    """The places a failed fetch tried, one short reason each."""
    parts: list[str] = []
    for line in exc.message.splitlines()[1:]:
        line = line.strip()
        if not line.startswith("- "):
            continue
        where, _, why = line[2:].partition(": ")
        host = urllib.parse.urlparse(where).netloc or where
        earlier = re.search(r"already failed in this run \((.*)\)$", why)
        if earlier:
            why = earlier.group(1)
        why = why.split(" (")[0]
        parts.append(f"{host}: {why}" if why else where)
    return "; ".join(parts) or exc.message.splitlines()[0]


def resolve_versions(spec: ReportSpec, env: Environment, *, offline: bool = False,
                     ) -> dict[str, ResolvedVersion]:
    """Each version of the spec, resolved to the release that will be built here
    (``offline``: from the cache and sources_dirs only, as ``reproduce --check`` does)."""
    out: dict[str, ResolvedVersion] = {}
    cache: dict[str, tuple[str | None, tuple[str, ...], str | None, str | None]] = {}

    def obtain(version: str, ref: VersionRef | None) -> tuple[str | None, tuple[str, ...],
                                                              str | None, str | None]:
        if version not in cache:
            cache[version] = _obtain(version, ref, env, offline)
        return cache[version]

    for name, ref in spec.versions.items():
        sha, urls, origin, problem = obtain(name, ref)
        if problem is None:
            out[name] = ResolvedVersion(name, name, False, sha, urls, origin, None)
            continue
        if ref.stand_in is not None:
            s_sha, s_urls, s_origin, s_problem = obtain(ref.stand_in,
                                                       spec.versions.get(ref.stand_in))
            if s_problem is None:
                out[name] = ResolvedVersion(name, ref.stand_in, True, s_sha, s_urls, s_origin,
                                            problem)
                continue
            problem += f"; its stand-in {ref.stand_in} is not usable either: {s_problem}"
        out[name] = ResolvedVersion(name, None, False, None, (), None, problem)
    return out


# ----------------------------------------------------------------------------------
# what the machine can do


@dataclass(frozen=True)
class HostFacts:
    cpu: CpuInfo
    extra: Mapping[str, str]
    af_alg: tuple[bool | None, str]
    dev_crypto: tuple[bool | None, str]


def probe_af_alg(local_engine: bool) -> tuple[bool | None, str]:
    """Whether the kernel offers AF_ALG (containers share the engine host's kernel)."""
    if not local_engine:
        return None, "the Docker engine is remote, so its kernel's AF_ALG cannot be probed here"
    family = getattr(socket, "AF_ALG", None)
    if family is None:
        return False, "this Python has no AF_ALG support, so the kernel cannot be probed"
    try:
        with socket.socket(family, socket.SOCK_SEQPACKET, 0) as sock:
            sock.bind(("skcipher", "cbc(aes)"))
    except OSError as exc:
        return False, f"socket(AF_ALG) / bind skcipher cbc(aes) failed: {exc.strerror or exc}"
    return True, "socket(AF_ALG) bound skcipher cbc(aes)"


def probe_dev_crypto(local_engine: bool) -> tuple[bool | None, str]:
    if not local_engine:
        return None, "the Docker engine is remote, so its /dev/crypto cannot be checked here"
    if Path("/dev/crypto").exists():
        return True, "/dev/crypto exists"
    return False, "this host has no /dev/crypto"

def requirement_problem(need: str, facts: HostFacts) -> str | None:
    """Why this machine cannot meet ``need``, or None when it can."""
    cpu = f"this CPU ({facts.cpu.model}, {facts.cpu.vendor})"
    flags = set(facts.cpu.flags)
    flag_needs = {"aes-ni": ("aes", "AES-NI"), "sha-ext": ("sha_ni", "the SHA extensions"),
                  "pclmulqdq": ("pclmulqdq", "PCLMULQDQ"), "avx": ("avx", "AVX"),
                  "avx2": ("avx2", "AVX2")}
    if need in flag_needs:
        flag, what = flag_needs[need]
        return None if flag in flags else f"needs {what}; {cpu} has no '{flag}' flag"
    if need == "padlock":
        if "ace_en" in flags:
            return None
        return (f"needs VIA PadLock (the ACE unit, CPU flag 'ace_en'); {cpu} has none")
    if need == "af_alg":
        ok, detail = facts.af_alg
        if ok:
            return None
        kernel = facts.extra.get("uname", "this kernel")
        return f"needs the kernel crypto API (AF_ALG); the kernel lacks it ({kernel}: {detail})"
    if need == "dev-crypto":
        ok, detail = facts.dev_crypto
        return None if ok else f"needs /dev/crypto (cryptodev); {detail}"
    return f"unknown requirement {need!r}"


def host_facts(backend: Backend, image: str,
               engine: Mapping[str, Any] | None = None) -> HostFacts:
    """The CPU as a container sees it, and the kernel's crypto offload; the kernel is
    probed only when the engine runs on this machine (asked of the engine, as bench
    does, never guessed from $DOCKER_HOST)."""
    cpu, extra = cpu_via_container(backend, image)
    local = endpoint_is_local(engine if engine is not None else backend.engine_info())
    return HostFacts(cpu, extra, probe_af_alg(local), probe_dev_crypto(local))


