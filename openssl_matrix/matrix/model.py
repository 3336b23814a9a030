"""The matrix model: the frozen dataclasses a matrix file becomes (versions, variants,
suites, masks, CPU profiles) and the bounds of their numbers.

Everything the rest of the tool knows about the matrix comes from these types; reading
and validating the file is :mod:`openssl_matrix.matrix.load`.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.core.version import DECLARABLE, series
from openssl_matrix.matrix.check import choices_hint
from openssl_matrix.matrix.kinds import kind_of
from openssl_matrix.matrix.kinds.base import SuiteKind
from openssl_matrix.matrix.libvocab import LibraryOptions
from openssl_matrix.matrix.patches import Patch
from openssl_matrix.matrix.tlsvocab import TlsOptions

SCHEMA_VERSION = 1
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*\Z")
VERSION = DECLARABLE  # the release numbers a matrix may declare (see version.py)
PATTERN = re.compile(r"^[A-Za-z0-9_.,:=+/~@%*?!\[\]-]+\Z")

ARCHES = ("x86_64", "i386")
#: Bounds of a suite's numbers (docs/matrix.md): `openssl speed -seconds` per algorithm,
#: `-bytes` (speed allocates buffers of this size), `-multi` processes, runs per variant.
MAX_SECONDS = 3600
MAX_BYTES = 16 * 1024 * 1024
MAX_MULTI = 1024
MAX_REPEAT = 100
ASM_VALUES = ("asm", "no-asm")


# ----------------------------------------------------------------------------------
# dataclasses


@dataclass(frozen=True)
class VersionSpec:
    """One OpenSSL release the matrix may build."""

    version: str
    sha256: str | None
    urls: tuple[str, ...]
    configure: tuple[str, ...] = ()
    base_image: str | None = None
    #: per-arch base images given as a mapping: ((arch, image), ...)
    base_images: tuple[tuple[str, str], ...] = ()
    #: on-request patches every variant of this version gets (names, see patches/)
    patches: tuple[str, ...] = ()
    #: engines built in, spelled per version by eras.engine_options
    engines: tuple[str, ...] = ()
    #: True: ``sha256`` is the official tarball's, confirmed in the release catalogue
    #: (resources/releases.yaml); False: declared ``official: false`` (a third-party
    #: tree's own bytes); None: the matrix gives a checksum the catalogue does not know
    official: bool | None = None
    #: where the catalogue's digest was confirmed ("project: where"), empty otherwise
    sources: tuple[str, ...] = ()
    #: the catalogue's digest comes from one project only
    single_source: bool = False
    #: declared by the catalogue alone (matrix.yaml's ``catalogue: true``), not by the file
    from_catalogue: bool = False

    @property
    def series_name(self) -> str:
        """OpenSSL's name for the series: ``1.0.2``, ``1.1.1``, ``3.0``, ``3.6``."""
        major, minor, patch = self.series
        return f"{major}.{minor}" if major >= 3 else f"{major}.{minor}.{patch}"

    @property
    def series(self) -> tuple[int, int, int]:
        """(major, minor, patch) numbers, e.g. (1, 1, 1) for 1.1.1w."""
        return series(self.version)  # validated on load


@dataclass(frozen=True)
class Mask:
    """A named ``OPENSSL_ia32cap`` setting: ``None`` leaves the CPU's capabilities alone.

    Either ``ia32cap`` (a literal value, passed as is) or ``disable`` (capability names
    from ``hostinfo.IA32CAP_BITS``, written in the syntax of each version at bench time).
    """

    name: str
    ia32cap: str | None
    disable: tuple[str, ...] = ()


@dataclass(frozen=True)
class Suite:
    """What one bench run measures: algorithms, path, timing and capability masks."""

    name: str
    description: str
    algorithms: tuple[str, ...]
    evp: bool
    seconds: int | None
    bytes: int | None
    masks: tuple[Mask, ...]
    legacy: bool = False
    """Also measure the non-EVP (low-level) path; with ``evp`` False, only that path."""
    directions: tuple[str, ...] = ("encrypt",)
    """``encrypt`` and/or ``decrypt`` (``-decrypt``, EVP ciphers only)."""
    engines: tuple[str | None, ...] = (None,)
    """``-engine NAME`` per entry; None is the built-in code (no -engine)."""
    providers: tuple[str, ...] | None = None
    """3.x ``-provider`` list; None: ``legacy`` + ``default`` only for legacy algorithms."""
    multi: tuple[int, ...] = ()
    """``-multi N`` per entry, one figure set each (0: every CPU the bench may use, the
    profile's cpuset or the engine's CPUs); empty: one process without -multi."""
    repeat: int = 1
    noise_threshold: float = 0.05
    """Coefficient of variation above which a repeated figure is marked noisy."""
    devices: tuple[str, ...] = ()
    """Host devices (e.g. /dev/crypto) the bench container gets, when the host has them."""
    kind: str = "speed"
    """``speed`` (symmetric ciphers and digests), ``aead`` (AEAD ciphers, see aead.py),
    ``pkey`` (public-key operations, see pkey.py), ``tls`` (handshakes with
    s_server/s_time, see tls.py) or ``pts`` (pts/openssl's command lines, see pts.py)."""
    tls: TlsOptions | None = None
    """Protocols, modes and pinnings of a ``tls`` suite."""
    library: LibraryOptions | None = None
    """Thread counts of a ``library`` suite (the harness, see measure/library.py)."""
    interleave: int = 0
    """Seconds per algorithm of the interleaved comparisons after the rounds (a speed
    suite through EVP; 0: none; see measure/pairrun.py)."""

    @property
    def suite_kind(self) -> SuiteKind:
        """What the suite's kind answers (matrix/kinds/)."""
        return kind_of(self.kind)

    @property
    def paths(self) -> tuple[str, ...]:
        return self.suite_kind.paths(self.evp, self.legacy)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name, "description": self.description,
            "algorithms": list(self.algorithms), "evp": self.evp, "paths": list(self.paths),
            "directions": list(self.directions), "engines": list(self.engines),
            "providers": None if self.providers is None else list(self.providers),
            "multi": [("all" if n == 0 else n) for n in self.multi],
            "seconds": self.seconds, "bytes": self.bytes,
            "repeat": self.repeat, "noise_threshold": self.noise_threshold,
            "devices": list(self.devices), "kind": self.kind,
            **({"interleave": self.interleave} if self.interleave else {}),
            **({"tls": self.tls.describe()} if self.tls is not None else {}),
            **({"library": self.library.describe()} if self.library is not None else {}),
            "masks": [{"name": m.name, "ia32cap": m.ia32cap, "disable": list(m.disable)}
                      for m in self.masks],
        }


@dataclass(frozen=True)
class Profile:
    """A CPU profile: which CPU results under this name must come from, and where it is."""

    name: str
    description: str
    vendor: str | None
    model: str | None
    flags: tuple[str, ...]
    clock_ghz: float | None
    march: str | None
    lacks: tuple[str, ...] = ()
    """cpuinfo flags this CPU is known not to have (``nopl`` on a VIA C3)."""
    cpuset: str | None = None
    """CPUs to pin bench containers to (Docker's ``--cpuset-cpus`` syntax)."""
    docker_host: str | None = None
    """The Docker engine of the machine with this CPU: ``ssh://``, ``tcp://``, ``unix://``
    or ``context:NAME``; None: the local engine."""

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "vendor": self.vendor,
                "model": self.model, "flags": list(self.flags), "lacks": list(self.lacks),
                "clock_ghz": self.clock_ghz, "march": self.march, "cpuset": self.cpuset,
                "docker_host": self.docker_host}


@dataclass(frozen=True)
class Variant:
    """One cell of the build matrix: a version built one particular way."""

    id: str
    version: VersionSpec
    asm: bool
    arch: str
    march: str | None
    configure: tuple[str, ...]
    base_image: str
    #: every patch applied to the source, auto (compat) ones first
    patches: tuple[Patch, ...] = ()
    engines: tuple[str, ...] = ()
    #: built by a plain `invoke matrix build` (else only when --only names it)
    default: bool = True
    #: CPUs this variant is meant for that cannot execute ENDBR32 (profile names or
    #: -march=...): a libcrypto with ENDBR32 would die with SIGILL there
    sigill_cpus: tuple[str, ...] = ()

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "version": self.version.version,
            "asm": self.asm,
            "arch": self.arch,
            "march": self.march,
            "configure": list(self.configure),
            "base_image": self.base_image,
            "sha256": self.version.sha256,
            "series": self.version.series_name,
            "official": self.version.official,
            "single_source": self.version.single_source,
            "sha256_sources": list(self.version.sources),
            "patches": [p.describe() for p in self.patches],
            "engines": list(self.engines),
            "default": self.default,
            "sigill_cpus": list(self.sigill_cpus),
        }


@dataclass(frozen=True)
class Matrix:
    path: Path
    versions: tuple[VersionSpec, ...]
    #: the default selection (what a plain `build`/`bench` uses); see all_variants
    variants: tuple[Variant, ...]
    suites: tuple[Suite, ...]
    profiles: tuple[Profile, ...]
    default_suite: str
    sources_dirs: tuple[Path, ...]
    raw: Mapping[str, Any] = field(repr=False, compare=False)
    #: every variant the matrix declares, default or opt-in (``default_variants``)
    all_variants: tuple[Variant, ...] = ()

    @property
    def digest(self) -> str:
        """A hash of the matrix as loaded (key order and comments do not matter)."""
        canon = json.dumps(self.raw, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(canon.encode()).hexdigest()

    def suite(self, name: str | None) -> Suite:
        wanted = name or self.default_suite
        for s in self.suites:
            if s.name == wanted:
                return s
        raise ConfigError(
            f"{self.path}: no suite named {wanted!r}",
            hint=choices_hint(wanted, [s.name for s in self.suites]),
        )

    def profile(self, name: str) -> Profile:
        for p in self.profiles:
            if p.name == name:
                return p
        raise ConfigError(
            f"{self.path}: no CPU profile named {name!r}",
            hint=choices_hint(name, ["auto", *(p.name for p in self.profiles)]),
        )

    def select(self, only: str | None, *, every: bool = False) -> list[Variant]:
        """Variants whose id matches the fnmatch pattern(s) ``only`` (comma separated).

        Without ``only``: the default selection (all declared variants with ``every``).
        A pattern picks from the default selection when it matches some of it, else from
        the opt-in variants (those ``default_variants`` leaves out): ``1.1.1w-*`` means the
        default 1.1.1w variants, ``1.0.1e-*`` or ``*-i386*`` opt-in ones. With ``every``
        each pattern matches among all declared variants.
        """
        everything = list(self.all_variants or self.variants)
        if not only:
            return everything if every else list(self.variants)
        patterns = [p.strip() for p in only.split(",") if p.strip()]
        wanted: set[str] = set()
        for pat in patterns:
            hits = [v.id for v in (everything if every else self.variants)
                    if fnmatch.fnmatchcase(v.id, pat)]
            if not hits and not every:
                hits = [v.id for v in everything if fnmatch.fnmatchcase(v.id, pat)]
            wanted.update(hits)
        chosen = [v for v in everything if v.id in wanted]
        if not chosen:
            raise ConfigError(
                f"--only {only!r} matches no variant of {self.path}",
                hint="`invoke matrix list --all` shows every variant id; patterns are fnmatch "
                "style, e.g. --only '1.1.1w-*' or --only '*-no-asm-*'",
            )
        return chosen


def variant_id(version: str, asm: str, arch: str, march: str,
               configure: tuple[str, ...] = (), patches: tuple[str, ...] = (),
               engines: tuple[str, ...] = ()) -> str:
    """Stable, readable id: ``1.1.1w-asm-x86_64``, ``1.1.1w-no-asm-i386-march-c3-2``,
    ``3.0.20-asm-i386-march-c3-2-patch-no-endbr32``, ``1.1.1w-asm-x86_64-engine-afalg``."""
    parts = [version, asm, arch]
    if march != "default":
        parts.append(f"march-{march}")
    if configure:
        # lower case letters, digits and single dashes: the id is part of a Docker image
        # name (``-D__CET__`` becomes ``d-cet``)
        extra = "-".join(re.sub(r"[^a-z0-9]+", "-", o.lower()).strip("-") for o in configure)
        parts.append(extra)
    parts.extend(f"patch-{p}" for p in patches)
    parts.extend(f"engine-{e}" for e in engines)
    return "-".join(parts)


def as_jsonable(obj: Any) -> Any:
    """Dataclass → plain JSON types (paths as strings)."""
    if hasattr(obj, "__dataclass_fields__"):
        return {k: as_jsonable(v) for k, v in asdict(obj).items()}
    if isinstance(obj, dict):
        return {k: as_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [as_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj
