"""The matrix model: load ``matrix.yaml``, validate it, expand it into variants.

Everything the rest of the tool knows about the matrix comes from the frozen
dataclasses here. Validation errors name the file and the key path
(``matrix.yaml: versions.1.1.1w.sha256: ...``) and never surface as a traceback.
The key-by-key reference of the format is ``docs/matrix.md``.
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError

SCHEMA_VERSION = 1

# Characters allowed in any value that reaches a Dockerfile RUN line or a container
# command. Everything is passed as exec-form arguments, but a value that needs a shell
# metacharacter is never a legitimate Configure option, -march value or ia32cap mask.
SAFE_TOKEN = re.compile(r"^[A-Za-z0-9_.,:=+/~@%-]+$")
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
VERSION = re.compile(r"^\d+\.\d+\.\d+[a-z]{0,2}(-[a-z0-9]+)?$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
PATTERN = re.compile(r"^[A-Za-z0-9_.,:=+/~@%*?!\[\]-]+$")

ARCHES = ("x86_64", "i386")
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

    @property
    def series(self) -> tuple[int, int, int]:
        """(major, minor, patch) numbers, e.g. (1, 1, 1) for 1.1.1w."""
        m = re.match(r"^(\d+)\.(\d+)\.(\d+)", self.version)
        assert m is not None  # validated on load
        return int(m.group(1)), int(m.group(2)), int(m.group(3))


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
    multi: int | None = None
    repeat: int = 1
    noise_threshold: float = 0.05
    """Coefficient of variation above which a repeated figure is marked noisy."""

    @property
    def paths(self) -> tuple[str, ...]:
        if not self.evp:
            return ("legacy",)
        return ("evp", "legacy") if self.legacy else ("evp",)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name, "description": self.description,
            "algorithms": list(self.algorithms), "evp": self.evp, "paths": list(self.paths),
            "directions": list(self.directions), "engines": list(self.engines),
            "providers": None if self.providers is None else list(self.providers),
            "multi": self.multi, "seconds": self.seconds, "bytes": self.bytes,
            "repeat": self.repeat, "noise_threshold": self.noise_threshold,
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
        }


@dataclass(frozen=True)
class Matrix:
    path: Path
    versions: tuple[VersionSpec, ...]
    variants: tuple[Variant, ...]
    suites: tuple[Suite, ...]
    profiles: tuple[Profile, ...]
    default_suite: str
    sources_dirs: tuple[Path, ...]
    raw: Mapping[str, Any] = field(repr=False, compare=False)

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
            hint=_choices_hint(wanted, [s.name for s in self.suites]),
        )

    def profile(self, name: str) -> Profile:
        for p in self.profiles:
            if p.name == name:
                return p
        raise ConfigError(
            f"{self.path}: no CPU profile named {name!r}",
            hint=_choices_hint(name, ["auto", *(p.name for p in self.profiles)]),
        )

    def select(self, only: str | None) -> list[Variant]:
        """Variants whose id matches the fnmatch pattern(s) ``only`` (comma separated)."""
        if not only:
            return list(self.variants)
        patterns = [p.strip() for p in only.split(",") if p.strip()]
        chosen = [v for v in self.variants if any(fnmatch.fnmatchcase(v.id, p) for p in patterns)]
        if not chosen:
            raise ConfigError(
                f"--only {only!r} matches no variant of {self.path}",
                hint="`invoke matrix list` shows the variant ids; patterns are fnmatch "
                "style, e.g. --only '1.1.1w-*' or --only '*-no-asm-*'",
            )
        return chosen


def _choices_hint(wanted: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(wanted, choices, n=1)
    listing = ", ".join(choices) if choices else "(none defined)"
    if close:
        return f"perhaps you meant {close[0]!r}? Defined: {listing}"
    return f"defined: {listing}"


# ----------------------------------------------------------------------------------
# loading and validation


class _Ctx:
    """Carries the file name for error messages."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, keypath: str, message: str, hint: str | None = None) -> ConfigError:
        where = f"{self.path}: {keypath}" if keypath else str(self.path)
        return ConfigError(f"{where}: {message}", hint=hint)

    def mapping(self, value: Any, keypath: str) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(keypath, f"expected a mapping, got {_kind(value)}")
        for k in value:
            if not isinstance(k, str):
                raise self.fail(keypath, f"key {k!r} must be a string (quote it in YAML)")
        return value

    def keys(self, value: dict[str, Any], allowed: Sequence[str], keypath: str) -> None:
        for key in value:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"perhaps you meant {close[0]!r}?" if close else None
                allowed_list = ", ".join(allowed)
                raise self.fail(
                    _join(keypath, key),
                    f"unknown key (allowed here: {allowed_list})",
                    hint=hint,
                )

    def string(self, value: Any, keypath: str, *, pattern: re.Pattern[str] | None = None,
               what: str = "") -> str:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.fail(keypath, f"expected a string, got {_kind(value)}")
        text = str(value)
        if pattern is not None and not pattern.match(text):
            raise self.fail(keypath, f"{text!r} is not a valid {what or 'value'}")
        return text

    def token(self, value: Any, keypath: str) -> str:
        text = self.string(value, keypath)
        if not SAFE_TOKEN.match(text):
            raise self.fail(
                keypath,
                f"{text!r} contains characters that are not allowed here "
                "(only letters, digits and _.,:=+/~@%- ; no spaces or shell metacharacters)",
                hint="each option is one list item; it is passed to the build as one argument",
            )
        return text

    def tokens(self, value: Any, keypath: str) -> tuple[str, ...]:
        if value is None:
            return ()
        if isinstance(value, str):
            raise self.fail(keypath, "expected a list of strings, got a single string",
                            hint=f"write it as a list: [{value}]")
        if not isinstance(value, list):
            raise self.fail(keypath, f"expected a list, got {_kind(value)}")
        return tuple(self.token(v, f"{keypath}[{i}]") for i, v in enumerate(value))

    def strings(self, value: Any, keypath: str) -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.fail(keypath, f"expected a list, got {_kind(value)}")
        return tuple(self.string(v, f"{keypath}[{i}]") for i, v in enumerate(value))

    def boolean(self, value: Any, keypath: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(keypath, f"expected true or false, got {_kind(value)}")
        return value

    def posint(self, value: Any, keypath: str, *, optional: bool = True) -> int | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self.fail(keypath, f"expected a positive whole number, got {value!r}")
        return value

    def number(self, value: Any, keypath: str) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise self.fail(keypath, f"expected a positive number, got {value!r}")
        return float(value)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _join(keypath: str, key: str | int) -> str:
    return f"{keypath}.{key}" if keypath else str(key)


TOP_KEYS = ("schema", "defaults", "versions", "axes", "include", "exclude", "profiles",
            "suites", "default_suite", "sources_dirs")
DEFAULT_KEYS = ("base_image", "configure")
VERSION_KEYS = ("sha256", "urls", "configure", "base_image")
AXIS_KEYS = ("asm", "arch", "march")
RULE_KEYS = ("version", "asm", "arch", "march", "configure")
PROFILE_KEYS = ("description", "vendor", "model", "flags", "lacks", "clock_ghz", "march",
                "cpuset", "docker_host")
SUITE_KEYS = ("description", "algorithms", "evp", "decrypt", "engine", "provider", "multi",
              "seconds", "bytes", "masks", "repeat", "noise_threshold")
MASK_KEYS = ("name", "ia32cap", "disable")
CPUSET = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
DOCKER_HOST = re.compile(r"^((unix|tcp|ssh|http|https)://\S+|context:[A-Za-z0-9][\w.-]*)$")


def load_matrix(path: str | Path, *, default_urls: Callable[[str], list[str]] | None = None,
                ) -> Matrix:
    """Read and validate a matrix file; raise ConfigError naming file and key path."""
    p = Path(path)
    ctx = _Ctx(p)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such matrix file",
                          hint="pass --matrix PATH, or run from the project folder") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: is not UTF-8 text") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{p}: YAML syntax error{where}: {problem}") from None
    return build_matrix(data, ctx, default_urls=default_urls)


def build_matrix(data: Any, ctx: _Ctx, *,
                 default_urls: Callable[[str], list[str]] | None = None) -> Matrix:
    top = ctx.mapping(data, "")
    if not top:
        raise ctx.fail("", "the matrix is empty", hint="see docs/matrix.md for the format")
    ctx.keys(top, TOP_KEYS, "")
    schema = top.get("schema", SCHEMA_VERSION)
    if schema != SCHEMA_VERSION:
        raise ctx.fail("schema", f"unsupported schema {schema!r}; this tool reads schema 1")

    defaults = ctx.mapping(top.get("defaults"), "defaults")
    ctx.keys(defaults, DEFAULT_KEYS, "defaults")
    default_base = ctx.string(defaults.get("base_image", "debian:bookworm"),
                              "defaults.base_image")
    _check_image(ctx, default_base, "defaults.base_image")
    default_conf = ctx.tokens(defaults.get("configure"), "defaults.configure")

    versions = _load_versions(ctx, top.get("versions"), default_urls)
    by_version = {v.version: v for v in versions}

    axes = ctx.mapping(top.get("axes"), "axes")
    ctx.keys(axes, AXIS_KEYS, "axes")
    asm_axis = _axis(ctx, axes.get("asm", ["asm"]), "axes.asm", ASM_VALUES)
    arch_axis = _axis(ctx, axes.get("arch", ["x86_64"]), "axes.arch", ARCHES)
    march_axis = _axis(ctx, axes.get("march", ["default"]), "axes.march", None)

    cells: list[dict[str, Any]] = []
    for v in versions:
        for a in asm_axis:
            for arch in arch_axis:
                for m in march_axis:
                    cells.append({"version": v.version, "asm": a, "arch": arch, "march": m,
                                  "configure": []})

    excludes = _rules(ctx, top.get("exclude"), "exclude", by_version, is_include=False)
    for i, rule in enumerate(excludes):
        before = len(cells)
        cells = [c for c in cells if not _matches(rule, c)]
        if len(cells) == before:
            raise ctx.fail(f"exclude[{i}]", f"rule {rule} matches no variant",
                           hint="remove it, or fix the values (version patterns are fnmatch)")
    includes = _rules(ctx, top.get("include"), "include", by_version, is_include=True)
    for rule in includes:
        cells.append({"version": rule["version"], "asm": rule.get("asm", "asm"),
                      "arch": rule.get("arch", "x86_64"), "march": rule.get("march", "default"),
                      "configure": list(rule.get("configure", []))})

    variants: list[Variant] = []
    seen: dict[str, int] = {}
    for idx, cell in enumerate(cells):
        spec = by_version[cell["version"]]
        vid = variant_id(cell["version"], cell["asm"], cell["arch"], cell["march"],
                         tuple(cell["configure"]))
        if vid in seen:
            raise ctx.fail("include" if idx >= len(cells) - len(includes) else "axes",
                           f"two cells have the same variant id {vid!r}",
                           hint="remove the duplicate include rule")
        seen[vid] = idx
        march = None if cell["march"] == "default" else cell["march"]
        variants.append(Variant(
            id=vid, version=spec, asm=cell["asm"] == "asm", arch=cell["arch"], march=march,
            configure=default_conf + spec.configure + tuple(cell["configure"]),
            base_image=spec.base_image or default_base,
        ))
    if not variants:
        raise ctx.fail("", "the matrix expands to no variants",
                       hint="declare at least one version under 'versions'")

    profiles = _load_profiles(ctx, top.get("profiles"))
    suites = _load_suites(ctx, top.get("suites"))
    default_suite = ctx.string(top.get("default_suite", suites[0].name if suites else ""),
                               "default_suite")
    if default_suite not in {s.name for s in suites}:
        raise ctx.fail("default_suite", f"no suite named {default_suite!r}",
                       hint=_choices_hint(default_suite, [s.name for s in suites]))
    base = ctx.path.parent
    sources_dirs = tuple(base / s for s in ctx.strings(top.get("sources_dirs"), "sources_dirs"))
    return Matrix(path=ctx.path, versions=versions, variants=tuple(variants), suites=suites,
                  profiles=profiles, default_suite=default_suite, sources_dirs=sources_dirs,
                  raw=top)


def variant_id(version: str, asm: str, arch: str, march: str,
               configure: tuple[str, ...] = ()) -> str:
    """Stable, readable id: ``1.1.1w-asm-x86_64``, ``1.1.1w-no-asm-i386-march-c3-2``."""
    parts = [version, asm, arch]
    if march != "default":
        parts.append(f"march-{march}")
    if configure:
        extra = "-".join(o.lstrip("-").replace("=", "-").replace("/", "-") for o in configure)
        parts.append(extra)
    return "-".join(parts)


def _check_image(ctx: _Ctx, image: str, keypath: str) -> None:
    if not re.match(r"^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9._-]+)?(@sha256:[0-9a-f]{64})?$", image):
        raise ctx.fail(keypath, f"{image!r} is not a Docker image reference")


def _load_versions(ctx: _Ctx, value: Any,
                   default_urls: Callable[[str], list[str]] | None) -> tuple[VersionSpec, ...]:
    versions = ctx.mapping(value, "versions")
    if not versions:
        raise ctx.fail("versions", "no versions declared",
                       hint="add e.g. versions: {1.1.1w: {sha256: ...}}")
    out: list[VersionSpec] = []
    for name, body in versions.items():
        kp = f"versions.{name}"
        if not VERSION.match(name):
            raise ctx.fail(kp, f"{name!r} is not an OpenSSL version such as 1.1.1w or 3.0.20")
        entry = ctx.mapping(body, kp)
        ctx.keys(entry, VERSION_KEYS, kp)
        sha = entry.get("sha256")
        if sha is not None:
            sha = ctx.string(sha, f"{kp}.sha256", pattern=SHA256,
                             what="sha256 (64 lower-case hex digits)")
        urls = ctx.strings(entry.get("urls"), f"{kp}.urls")
        for i, u in enumerate(urls):
            if not re.match(r"^(https?|file)://\S+$", u):
                raise ctx.fail(f"{kp}.urls[{i}]", f"{u!r} is not an http(s):// or file:// URL")
        if not urls and default_urls is not None:
            urls = tuple(default_urls(name))
        base_image = entry.get("base_image")
        if base_image is not None:
            base_image = ctx.string(base_image, f"{kp}.base_image")
            _check_image(ctx, base_image, f"{kp}.base_image")
        out.append(VersionSpec(version=name, sha256=sha, urls=urls,
                               configure=ctx.tokens(entry.get("configure"), f"{kp}.configure"),
                               base_image=base_image))
    return tuple(out)


def _axis(ctx: _Ctx, value: Any, keypath: str, allowed: Sequence[str] | None) -> list[str]:
    if not isinstance(value, list) or not value:
        raise ctx.fail(keypath, "expected a non-empty list")
    out: list[str] = []
    for i, item in enumerate(value):
        kp = f"{keypath}[{i}]"
        text = ctx.token(item, kp)
        if allowed is not None and text not in allowed:
            raise ctx.fail(kp, f"{text!r} is not one of {', '.join(allowed)}",
                           hint=_choices_hint(text, list(allowed)))
        if text in out:
            raise ctx.fail(kp, f"{text!r} is listed twice")
        out.append(text)
    return out


def _rules(ctx: _Ctx, value: Any, keypath: str, by_version: Mapping[str, VersionSpec], *,
           is_include: bool) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ctx.fail(keypath, f"expected a list of rules, got {_kind(value)}")
    rules: list[dict[str, Any]] = []
    for i, item in enumerate(value):
        kp = f"{keypath}[{i}]"
        rule = ctx.mapping(item, kp)
        ctx.keys(rule, RULE_KEYS, kp)
        if not rule:
            raise ctx.fail(kp, "empty rule")
        clean: dict[str, Any] = {}
        for key, val in rule.items():
            if key == "configure":
                clean[key] = list(ctx.tokens(val, f"{kp}.configure"))
            elif is_include:
                clean[key] = ctx.token(val, f"{kp}.{key}")
            else:
                clean[key] = ctx.string(val, f"{kp}.{key}", pattern=PATTERN,
                                        what="fnmatch pattern")
        if is_include:
            if "version" not in clean:
                raise ctx.fail(kp, "an include rule needs a 'version'")
            if clean["version"] not in by_version:
                raise ctx.fail(f"{kp}.version", f"{clean['version']!r} is not declared under "
                               "'versions'", hint=_choices_hint(clean["version"],
                                                                list(by_version)))
            if clean.get("asm", "asm") not in ASM_VALUES:
                raise ctx.fail(f"{kp}.asm", f"must be one of {', '.join(ASM_VALUES)}")
            if clean.get("arch", "x86_64") not in ARCHES:
                raise ctx.fail(f"{kp}.arch", f"must be one of {', '.join(ARCHES)}")
        rules.append(clean)
    return rules


def _matches(rule: Mapping[str, Any], cell: Mapping[str, Any]) -> bool:
    for key, val in rule.items():
        if key == "configure":
            if list(val) != list(cell["configure"]):
                return False
        elif not fnmatch.fnmatchcase(str(cell[key]), str(val)):
            return False
    return True


def _load_profiles(ctx: _Ctx, value: Any) -> tuple[Profile, ...]:
    profiles = ctx.mapping(value, "profiles")
    out: list[Profile] = []
    for name, body in profiles.items():
        kp = f"profiles.{name}"
        if name == "auto":
            raise ctx.fail(kp, "'auto' is built in (this host) and cannot be redefined")
        if not NAME.match(name) or name.startswith(("host-", "ref-")):
            raise ctx.fail(kp, f"{name!r}: profile names are lower-case letters, digits, '-', "
                           "'.', '_' and may not start with 'host-' or 'ref-'")
        entry = ctx.mapping(body, kp)
        ctx.keys(entry, PROFILE_KEYS, kp)
        march = entry.get("march")
        cpuset = entry.get("cpuset")
        if cpuset is not None:
            cpuset = ctx.string(cpuset, f"{kp}.cpuset", pattern=CPUSET,
                                what="cpuset (CPU numbers and ranges, e.g. 0 or 2-3 or 0,2)")
        host = entry.get("docker_host")
        if host is not None:
            host = ctx.string(host, f"{kp}.docker_host")
            if not DOCKER_HOST.match(host):
                raise ctx.fail(f"{kp}.docker_host", f"{host!r} is not a Docker engine address",
                               hint="use ssh://user@host, tcp://host:2376, "
                               "unix:///path/docker.sock or context:NAME (a docker context)")
        out.append(Profile(
            name=name,
            description=ctx.string(entry.get("description", name), f"{kp}.description"),
            vendor=_opt_str(ctx, entry.get("vendor"), f"{kp}.vendor"),
            model=_opt_str(ctx, entry.get("model"), f"{kp}.model"),
            flags=ctx.tokens(entry.get("flags"), f"{kp}.flags"),
            clock_ghz=ctx.number(entry.get("clock_ghz"), f"{kp}.clock_ghz"),
            march=None if march is None else ctx.token(march, f"{kp}.march"),
            lacks=ctx.tokens(entry.get("lacks"), f"{kp}.lacks"),
            cpuset=cpuset,
            docker_host=host,
        ))
    return tuple(out)


def _opt_str(ctx: _Ctx, value: Any, keypath: str) -> str | None:
    return None if value is None else ctx.string(value, keypath)


def _load_suites(ctx: _Ctx, value: Any) -> tuple[Suite, ...]:
    suites = ctx.mapping(value, "suites")
    if not suites:
        raise ctx.fail("suites", "no suites declared",
                       hint="add at least one suite; see docs/matrix.md")
    out: list[Suite] = []
    for name, body in suites.items():
        kp = f"suites.{name}"
        if not NAME.match(name):
            raise ctx.fail(kp, f"{name!r}: suite names are lower-case letters, digits, "
                           "'-', '.', '_'")
        entry = ctx.mapping(body, kp)
        ctx.keys(entry, SUITE_KEYS, kp)
        algorithms = ctx.tokens(entry.get("algorithms"), f"{kp}.algorithms")
        if not algorithms:
            raise ctx.fail(f"{kp}.algorithms", "list at least one algorithm")
        masks = _load_masks(ctx, entry.get("masks"), f"{kp}.masks")
        evp, legacy = _paths(ctx, entry.get("evp", True), f"{kp}.evp")
        multi = ctx.posint(entry.get("multi"), f"{kp}.multi")
        repeat = ctx.posint(entry.get("repeat", 1), f"{kp}.repeat", optional=False)
        noise = ctx.number(entry.get("noise_threshold", 0.05), f"{kp}.noise_threshold")
        if noise is None or noise >= 1:
            raise ctx.fail(f"{kp}.noise_threshold", f"expected a fraction such as 0.05 (5 %), "
                           f"got {entry.get('noise_threshold')!r}")
        out.append(Suite(
            name=name,
            description=ctx.string(entry.get("description", ""), f"{kp}.description"),
            algorithms=algorithms,
            evp=evp,
            seconds=ctx.posint(entry.get("seconds"), f"{kp}.seconds"),
            bytes=ctx.posint(entry.get("bytes"), f"{kp}.bytes"),
            masks=masks,
            legacy=legacy,
            directions=_directions(ctx, entry.get("decrypt", False), f"{kp}.decrypt"),
            engines=_engines(ctx, entry.get("engine"), f"{kp}.engine"),
            providers=_providers(ctx, entry.get("provider", "auto"), f"{kp}.provider"),
            multi=multi,
            repeat=repeat or 1,
            noise_threshold=noise,
        ))
    return tuple(out)


def _load_masks(ctx: _Ctx, value: Any, keypath: str) -> tuple[Mask, ...]:
    from .hostinfo import IA32CAP_BITS

    if value is None:
        return (Mask("default", None),)
    if not isinstance(value, list) or not value:
        raise ctx.fail(keypath, "expected a non-empty list of masks")
    masks: list[Mask] = []
    for i, m in enumerate(value):
        mkp = f"{keypath}[{i}]"
        mm = ctx.mapping(m, mkp)
        ctx.keys(mm, MASK_KEYS, mkp)
        mname = ctx.string(mm.get("name"), f"{mkp}.name", pattern=NAME, what="name")
        cap = mm.get("ia32cap")
        if cap is not None:
            cap = ctx.token(cap, f"{mkp}.ia32cap")
            if not re.match(r"^~?(0x[0-9a-fA-F]+)?(:~?0x[0-9a-fA-F]+)?$", cap) or \
                    cap in ("", "~"):
                raise ctx.fail(f"{mkp}.ia32cap", f"{cap!r} is not an OPENSSL_ia32cap "
                               "value such as ~0x200000000000000 or :~0x20000000")
        disable = ctx.tokens(mm.get("disable"), f"{mkp}.disable")
        for j, name in enumerate(disable):
            if name not in IA32CAP_BITS:
                raise ctx.fail(f"{mkp}.disable[{j}]", f"{name!r} is not a capability this "
                               "tool can mask", hint=_choices_hint(name, list(IA32CAP_BITS)))
        if cap is not None and disable:
            raise ctx.fail(mkp, "give either 'ia32cap' (a literal value) or 'disable' "
                           "(capability names), not both")
        if any(x.name == mname for x in masks):
            raise ctx.fail(f"{mkp}.name", f"mask {mname!r} is listed twice")
        masks.append(Mask(mname, cap, disable))
    return tuple(masks)


def _paths(ctx: _Ctx, value: Any, keypath: str) -> tuple[bool, bool]:
    """``evp: true | false | both`` -> (evp, legacy too)."""
    if value == "both":
        return True, True
    if isinstance(value, bool):
        return value, False
    raise ctx.fail(keypath, f"expected true, false or both, got {value!r}",
                   hint="true: the EVP path (-evp); false: the low-level path; both: each")


def _directions(ctx: _Ctx, value: Any, keypath: str) -> tuple[str, ...]:
    if value == "both":
        return ("encrypt", "decrypt")
    if isinstance(value, bool):
        return ("decrypt",) if value else ("encrypt",)
    raise ctx.fail(keypath, f"expected true, false or both, got {value!r}")


def _engines(ctx: _Ctx, value: Any, keypath: str) -> tuple[str | None, ...]:
    if value is None:
        return (None,)
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ctx.fail(keypath, "expected an engine name or a non-empty list of them")
    out: list[str | None] = []
    for i, item in enumerate(items):
        kp = f"{keypath}[{i}]" if isinstance(value, list) else keypath
        name = ctx.string(item, kp, pattern=NAME, what="engine name (e.g. afalg, padlock, "
                          "or none for the built-in code)")
        engine = None if name == "none" else name
        if engine in out:
            raise ctx.fail(kp, f"{name!r} is listed twice")
        out.append(engine)
    return tuple(out)


def _providers(ctx: _Ctx, value: Any, keypath: str) -> tuple[str, ...] | None:
    if value == "auto":
        return None
    if isinstance(value, str):
        value = [value]
    names = ctx.tokens(value, keypath)
    if not names:
        raise ctx.fail(keypath, "expected auto or a non-empty list of provider names")
    return names


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
