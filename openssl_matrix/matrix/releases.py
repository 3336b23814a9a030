"""The release catalogue: every public OpenSSL release with its official sha256.

``resources/releases.yaml`` lists, per release, the sha256 of the upstream
tarball ``openssl-<version>.tar.gz`` and the public sources it was confirmed in (package
recipes, Gentoo Manifests, Debian's source index), each as a project and where in it.
A release only one project gave is marked ``single_source``; a release the sources
disagree on is not declared but listed under ``disputed`` with each digest.

:func:`load_catalogue` reads it once (typed); :func:`catalogue_problems` checks the
declarations against each other (the rules the file's header states). A matrix with
``catalogue: true`` adds each release as an opt-in version (openssl_matrix/matrix/load.py).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.core.resources import resource
from openssl_matrix.core.version import Version, VersionError
from openssl_matrix.core.yamlload import YamlProblem, load_yaml

CATALOGUE_FILE = resource("releases.yaml")

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
#: public release numbers from 0.9.8 on (no pre-releases: they are not "releases")
_RELEASE = re.compile(r"^(0\.9\.8[a-z]{0,2}|1\.0\.[012][a-z]{0,2}|1\.1\.[01][a-z]{0,2}|"
                      r"[3-9]\.\d+\.\d+)$")


@dataclass(frozen=True)
class ReleaseSource:
    """One public place a digest was seen: ``project`` (who; the unit of independence)
    and ``where`` (repository, path and commit, or a URL)."""

    project: str
    where: str


@dataclass(frozen=True)
class Release:
    """One declared release: its official tarball's sha256 and where it was confirmed."""

    version: str
    sha256: str
    official: bool
    single_source: bool
    sources: tuple[ReleaseSource, ...]

    @property
    def series(self) -> str:
        return series_name(self.version)

    @property
    def projects(self) -> tuple[str, ...]:
        """The distinct projects that gave this digest, in order."""
        return tuple(dict.fromkeys(s.project for s in self.sources))


@dataclass(frozen=True)
class DisputedDigest:
    """One of the digests sources gave for a release they disagree on."""

    sha256: str
    sources: tuple[ReleaseSource, ...]


@dataclass(frozen=True)
class Catalogue:
    path: Path
    releases: tuple[Release, ...]
    disputed: tuple[tuple[str, tuple[DisputedDigest, ...]], ...] = ()

    def get(self, version: str) -> Release | None:
        return self._index().get(version)

    def sha256(self, version: str) -> str | None:
        r = self.get(version)
        return r.sha256 if r is not None else None

    def disputed_versions(self) -> dict[str, tuple[DisputedDigest, ...]]:
        return dict(self.disputed)

    def by_series(self) -> dict[str, list[Release]]:
        out: dict[str, list[Release]] = {}
        for r in self.releases:
            out.setdefault(r.series, []).append(r)
        return out

    def _index(self) -> dict[str, Release]:
        return _index_of(self)


@functools.lru_cache(maxsize=8)
def _index_of(cat: Catalogue) -> dict[str, Release]:
    return {r.version: r for r in cat.releases}


def series_name(version: str) -> str:
    """``0.9.8``, ``1.0.2``, ``1.1.1`` before 3.0; ``3.0``, ``3.6`` from 3.0 (OpenSSL's
    own series names, as its download folders are named)."""
    v = Version.parse(version)
    return f"{v.major}.{v.minor}" if v.major >= 3 else ".".join(map(str, v.series))


def _fail(path: Path, keypath: str, message: str) -> ConfigError:
    return ConfigError(f"{path}: {keypath}: {message}",
                       hint="the catalogue's rules are in its header; "
                            "tests/unit/test_releases.py checks them")


def _sources(path: Path, value: Any, keypath: str) -> tuple[ReleaseSource, ...]:
    if not isinstance(value, list) or not value:
        raise _fail(path, keypath, "expected a non-empty list of {project, where}")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or set(item) != {"project", "where"} or not all(
                isinstance(item[k], str) and item[k].strip() for k in ("project", "where")):
            raise _fail(path, f"{keypath}[{i}]", "expected {project: NAME, where: TEXT}")
        out.append(ReleaseSource(project=item["project"], where=item["where"]))
    return tuple(out)


def parse_catalogue(text: str, path: Path) -> Catalogue:
    """The catalogue in ``text``; ConfigError (naming ``path`` and the key) if its shape
    is wrong. Whether the declarations agree is :func:`catalogue_problems`'s question."""
    try:
        doc = load_yaml(text)
    except YamlProblem as exc:
        raise ConfigError(f"{path}: {exc.message}") from None
    if not isinstance(doc, dict) or doc.get("schema") != 1 or not isinstance(
            doc.get("releases"), dict):
        raise _fail(path, "", "expected schema: 1 and a releases mapping")
    releases = []
    for version, body in doc["releases"].items():
        kp = f"releases.{version}"
        if not isinstance(body, dict):
            raise _fail(path, kp, "expected a mapping")
        unknown = set(body) - {"sha256", "official", "single_source", "sources"}
        if unknown:
            raise _fail(path, kp, f"unknown key(s) {', '.join(sorted(unknown))}")
        releases.append(Release(
            version=str(version), sha256=str(body.get("sha256", "")),
            official=body.get("official") is True,
            single_source=body.get("single_source") is True,
            sources=_sources(path, body.get("sources"), f"{kp}.sources")))
    disputed = []
    for version, digests in (doc.get("disputed") or {}).items():
        kp = f"disputed.{version}"
        if not isinstance(digests, list):
            raise _fail(path, kp, "expected a list of {sha256, sources}")
        entries = []
        for i, d in enumerate(digests):
            if not isinstance(d, dict) or "sha256" not in d:
                raise _fail(path, f"{kp}[{i}]", "expected {sha256, sources}")
            entries.append(DisputedDigest(sha256=str(d["sha256"]),
                                          sources=_sources(path, d.get("sources"),
                                                           f"{kp}[{i}].sources")))
        disputed.append((str(version), tuple(entries)))
    return Catalogue(path=path, releases=tuple(releases), disputed=tuple(disputed))


@functools.lru_cache(maxsize=4)
def load_catalogue(path: Path = CATALOGUE_FILE) -> Catalogue:
    """The release catalogue (read once per path)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the release catalogue: {exc.strerror}",
                          hint="reinstall the package (the file ships with it)") from None
    return parse_catalogue(text, path)


def official_sha256() -> dict[str, str]:
    """version → official tarball sha256, for every declared release."""
    return {r.version: r.sha256 for r in load_catalogue().releases if r.official}


def catalogue_problems(cat: Catalogue) -> list[str]:
    """Every way the declarations contradict themselves or each other, one line each
    (empty: the catalogue is consistent)."""
    problems: list[str] = []
    by_digest: dict[str, list[str]] = {}
    for r in cat.releases:
        where = f"releases.{r.version}"
        if not _RELEASE.match(r.version):
            problems.append(f"{where}: not a public release number")
        else:
            try:
                Version.parse(r.version)
            except VersionError:
                problems.append(f"{where}: not a version")
        if not _SHA256.match(r.sha256):
            problems.append(f"{where}: sha256 {r.sha256[:70]!r} is not 64 lowercase hex digits")
        by_digest.setdefault(r.sha256, []).append(r.version)
        if not r.official:
            problems.append(f"{where}: only official digests belong here (official: true)")
        n = len(r.projects)
        if n < 2 and not r.single_source:
            problems.append(f"{where}: one source ({r.projects[0] if n else 'none'}) and "
                            "not marked single_source: true")
        if n >= 2 and r.single_source:
            problems.append(f"{where}: marked single_source but {n} projects give it "
                            f"({', '.join(r.projects)})")
        if len({s.where for s in r.sources}) != len(r.sources):
            problems.append(f"{where}: the same source twice")
    for digest, versions in by_digest.items():
        if len(versions) > 1:
            problems.append(f"sha256 {digest[:16]}… is declared for {', '.join(versions)}: "
                            "one tarball cannot be two releases")
    declared = {r.version for r in cat.releases}
    for version, digests in cat.disputed:
        if version in declared:
            problems.append(f"disputed.{version}: also declared under releases (a digest "
                            "the sources disagree on is not declared)")
        if len({d.sha256 for d in digests}) < 2 and not any(
                d.sha256 in by_digest for d in digests):
            problems.append(f"disputed.{version}: one digest only and no clash: declare it")
    return problems
