"""Loading a matrix file: read ``matrix.yaml``, validate it key by key, expand it into
variants (the types are :mod:`openssl_matrix.matrix.model`).

Validation errors name the file and the key path (``matrix.yaml: versions.1.1.1w.sha256:
...``) and never surface as a traceback. The key-by-key reference of the format is
``docs/matrix.md``.
"""

from __future__ import annotations

import errno
import fnmatch
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.core.files import read_bounded
from openssl_matrix.core.names import clip, name_problem
from openssl_matrix.core.resources import USER_PATCHES, project_patches, user_folder
from openssl_matrix.core.settings import check_matrix_settings
from openssl_matrix.core.yamlload import MAX_BYTES as MAX_YAML_BYTES
from openssl_matrix.core.yamlload import TOO_LARGE
from openssl_matrix.matrix.check import (
    CheckContext,
    choices_hint,
    kind_name,
    load_yaml_file,
)
from openssl_matrix.matrix.eras import (
    ENGINES,
    engine_options,
    era_base_image,
    i386_name,
    march_problem,
)
from openssl_matrix.matrix.kinds import KINDS, check_entry
from openssl_matrix.matrix.model import (
    ARCHES,
    ASM_VALUES,
    MAX_BYTES,
    MAX_REPEAT,
    MAX_SECONDS,
    NAME,
    PATTERN,
    SCHEMA_VERSION,
    VERSION,
    Mask,
    Matrix,
    Profile,
    Suite,
    Variant,
    VersionSpec,
    variant_id,
)
from openssl_matrix.matrix.patches import (
    Patch,
    PatchError,
    cannot_execute_endbr32,
    load_patches,
    select_patches,
)
from openssl_matrix.matrix.releases import Release, load_catalogue
from openssl_matrix.matrix.suitekinds import multi_counts

TOP_KEYS = ("schema", "defaults", "versions", "axes", "include", "exclude", "profiles",
            "suites", "default_suite", "sources_dirs", "default_variants", "patches_dirs",
            "catalogue", "settings")
DEFAULT_KEYS = ("base_image", "configure", "patches", "engines")
VERSION_KEYS = ("sha256", "urls", "configure", "base_image", "patches", "engines", "official")
INCLUDE_KEYS = ("version", "asm", "arch", "march", "configure", "patches", "engines",
                "base_image", "cpu")
AXIS_KEYS = ("asm", "arch", "march")
RULE_KEYS = ("version", "asm", "arch", "march", "configure")
PROFILE_KEYS = ("description", "vendor", "model", "flags", "lacks", "clock_ghz", "march",
                "cpuset", "docker_host")
SUITE_KEYS = ("description", "algorithms", "evp", "decrypt", "engine", "provider", "multi",
              "seconds", "bytes", "masks", "repeat", "noise_threshold", "devices", "kind",
              "protocols", "modes", "pinning", "threads", "interleave")
DEVICE = re.compile(r"^/dev/[A-Za-z0-9_][A-Za-z0-9_./-]*\Z")
MASK_KEYS = ("name", "ia32cap", "disable")
CPUSET = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*\Z")
DOCKER_HOST = re.compile(r"^((unix|tcp|ssh)://\S+|context:[A-Za-z0-9][\w.-]*)\Z")


def load_matrix(path: str | Path, *, default_urls: Callable[[str], list[str]] | None = None,
                ) -> Matrix:
    """Read and validate a matrix file; raise ConfigError naming file and key path."""
    p = Path(path)
    ctx = CheckContext(p)
    try:
        text = read_bounded(p, cap=MAX_YAML_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such matrix file",
                          hint="pass --matrix PATH, or run from the project folder") from None
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            raise ConfigError(f"{p}: {TOO_LARGE}") from None
        raise ConfigError(f"{p}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: is not UTF-8 text") from None
    data = load_yaml_file(ctx, text)
    return build_matrix(data, ctx, default_urls=default_urls)


def matrix_from_document(doc: Mapping[str, Any], *, path: str | Path = "<python>",
                         default_urls: Callable[[str], list[str]] | None = None) -> Matrix:
    """A matrix built in Python from a document of matrix.yaml's shape, checked exactly
    as the file would be (errors name ``path``, which is also what the results record as
    the matrix's path). No YAML is written or read."""
    data = json.loads(json.dumps(doc))  # a private copy in the types YAML gives
    return build_matrix(data, CheckContext(Path(path)), default_urls=default_urls)


class _Defaults(NamedTuple):
    """The ``defaults`` section: what every variant starts from."""
    base_image: tuple[str | None, dict[str, str]]
    configure: tuple[str, ...]
    patches: tuple[str, ...]
    engines: tuple[str, ...]


def build_matrix(data: Any, ctx: CheckContext, *,
                 default_urls: Callable[[str], list[str]] | None = None) -> Matrix:
    top = ctx.document(data, TOP_KEYS, schema=SCHEMA_VERSION, what="matrix",
                       doc="docs/matrix.md")

    check_matrix_settings(top.get("settings"), str(ctx.path))
    defaults = ctx.mapping(top.get("defaults"), "defaults")
    ctx.keys(defaults, DEFAULT_KEYS, "defaults")
    default = _Defaults(
        base_image=_base_images(ctx, defaults.get("base_image"), "defaults.base_image"),
        configure=ctx.tokens(defaults.get("configure"), "defaults.configure"),
        patches=_names(ctx, defaults.get("patches"), "defaults.patches"),
        engines=_build_engines(ctx, defaults.get("engines"), "defaults.engines"))
    patch_index = _patch_index(ctx, top.get("patches_dirs"))
    profiles = _load_profiles(ctx, top.get("profiles"))

    versions = _load_versions(ctx, top.get("versions"), default_urls)
    versions = _merge_catalogue(ctx, versions, top.get("catalogue", False), default_urls)
    by_version = {v.version: v for v in versions}

    cells = _axes_cells(ctx, top.get("axes"), versions)
    cells = _excluded(ctx, top.get("exclude"), cells, by_version)
    cells += _included(ctx, top.get("include"), by_version, profiles)

    variants: list[Variant] = []
    seen: dict[str, str] = {}
    for cell in cells:
        variants.append(_variant(ctx, cell, by_version[cell["version"]], default,
                                 patch_index, profiles, seen))
    if not variants:
        raise ctx.fail("", "the matrix expands to no variants",
                       hint="declare at least one version under 'versions'")
    variants = _apply_default_selection(ctx, top.get("default_variants"), variants)

    suites = _load_suites(ctx, top.get("suites"))
    default_suite = ctx.string(top.get("default_suite", suites[0].name if suites else ""),
                               "default_suite")
    if default_suite not in {s.name for s in suites}:
        raise ctx.fail("default_suite", f"no suite named {default_suite!r}",
                       hint=choices_hint(default_suite, [s.name for s in suites]))
    base = ctx.path.parent
    sources_dirs = tuple(base / s for s in ctx.strings(top.get("sources_dirs"), "sources_dirs"))
    return Matrix(path=ctx.path, versions=versions,
                  variants=tuple(v for v in variants if v.default), suites=suites,
                  profiles=profiles, default_suite=default_suite, sources_dirs=sources_dirs,
                  raw=top, all_variants=tuple(variants))


def _axes_cells(ctx: CheckContext, value: Any,
                versions: Sequence[VersionSpec]) -> list[dict[str, Any]]:
    """Every combination of the versions and the ``axes`` (asm, arch, march)."""
    axes = ctx.mapping(value, "axes")
    ctx.keys(axes, AXIS_KEYS, "axes")
    asm_axis = _axis(ctx, axes.get("asm", ["asm"]), "axes.asm", ASM_VALUES)
    arch_axis = _axis(ctx, axes.get("arch", ["x86_64"]), "axes.arch", ARCHES)
    march_axis = _axis(ctx, axes.get("march", ["default"]), "axes.march", None)
    for i, m in enumerate(march_axis):
        if m != "default":  # it becomes part of the variant id, a folder name
            ctx.path_name(m, f"axes.march[{i}]", what="-march value")

    cells: list[dict[str, Any]] = []
    for v in versions:
        for a in asm_axis:
            for arch in arch_axis:
                for m in march_axis:
                    cells.append({"version": v.version, "asm": a, "arch": arch, "march": m,
                                  "configure": [], "where": "axes"})
    return cells


def _excluded(ctx: CheckContext, value: Any, cells: list[dict[str, Any]],
              by_version: Mapping[str, VersionSpec]) -> list[dict[str, Any]]:
    """The cells no ``exclude`` rule matches (a rule that matches none is an error)."""
    excludes = _rules(ctx, value, "exclude", by_version, is_include=False)
    for i, rule in enumerate(excludes):
        before = len(cells)
        cells = [c for c in cells if not _matches(rule, c)]
        if len(cells) == before:
            raise ctx.fail(f"exclude[{i}]", f"rule {rule} matches no variant",
                           hint="remove it, or fix the values (version patterns are fnmatch)")
    return cells


def _included(ctx: CheckContext, value: Any, by_version: Mapping[str, VersionSpec],
              profiles: Sequence[Profile]) -> list[dict[str, Any]]:
    """The cells the ``include`` rules add (a rule's ``cpu`` lends it that profile's
    -march)."""
    includes = _rules(ctx, value, "include", by_version, is_include=True)
    by_profile = {p.name: p for p in profiles}
    cells: list[dict[str, Any]] = []
    for i, rule in enumerate(includes):
        kp = f"include[{i}]"
        march = rule.get("march", "default")
        cpu = rule.get("cpu")
        if cpu is not None:
            if cpu not in by_profile:
                raise ctx.fail(f"{kp}.cpu", f"no CPU profile named {cpu!r}",
                               hint=choices_hint(cpu, list(by_profile)))
            if march == "default" and by_profile[cpu].march:
                march = str(by_profile[cpu].march)
        cells.append({"version": rule["version"], "asm": rule.get("asm", "asm"),
                      "arch": rule.get("arch", "x86_64"), "march": march,
                      "configure": list(rule.get("configure", [])),
                      "patches": list(rule.get("patches", [])),
                      "engines": list(rule.get("engines", [])),
                      "base_image": rule.get("base_image"), "cpu": cpu, "where": kp})
    return cells


def _variant(ctx: CheckContext, cell: Mapping[str, Any], spec: VersionSpec,
             default: _Defaults, patch_index: Mapping[str, Patch],
             profiles: Sequence[Profile], seen: dict[str, str]) -> Variant:
    """The variant one cell builds, checked (a unique id, its -march, its patches and
    engines); ``seen``: the ids so far, with where each came from (this one is added)."""
    where = cell["where"] if cell["where"] != "axes" else f"versions.{spec.version}"
    cell_patches = tuple(cell.get("patches", ()))
    cell_engines = tuple(cell.get("engines", ()))
    vid = variant_id(cell["version"], cell["asm"], cell["arch"], cell["march"],
                     tuple(cell["configure"]), cell_patches, cell_engines)
    if vid in seen:
        raise ctx.fail(cell["where"] if cell["where"] != "axes" else "axes",
                       f"two cells have the same variant id {vid!r} "
                       f"(also from {seen[vid]})",
                       hint="remove the duplicate include rule")
    seen[vid] = cell["where"]
    ctx.path_name(vid, where, what="variant id")  # every part was checked: a backstop
    march = None if cell["march"] == "default" else cell["march"]
    if march is not None:
        problem = march_problem(march, cell["arch"])
        if problem:
            raise ctx.fail(where if cell["where"] != "axes" else "axes.march",
                           f"{vid}: {problem}")
    requested = _unique(default.patches + spec.patches + cell_patches)
    try:
        applied = select_patches(patch_index, spec.version, cell["arch"], requested)
    except ValueError as exc:
        raise ctx.fail(where, f"{vid}: {exc}",
                       hint="patches and the versions/arches they fit are in patches/*.yaml"
                       ) from None
    engines = _unique(default.engines + spec.engines + cell_engines)
    for engine in engines:
        try:
            engine_options(spec.version, engine)
        except ValueError as exc:
            raise ctx.fail(where, f"{vid}: {exc}") from None
    return Variant(
        id=vid, version=spec, asm=cell["asm"] == "asm", arch=cell["arch"], march=march,
        configure=default.configure + spec.configure + tuple(cell["configure"]),
        base_image=_resolve_base_image(ctx, cell, spec, default.base_image, where),
        patches=applied, engines=engines,
        sigill_cpus=_sigill_cpus(march, cell.get("cpu"), profiles),
        # a release catalogue: true added (the file does not declare it) is an opt-in
        # version, include rules naming it too (docs/matrix.md: nothing of the
        # catalogue is built unless selected); default_variants overrides
        default=not spec.from_catalogue,
    )


def _unique(items: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for item in items:
        if item not in out:
            out.append(item)
    return tuple(out)


def _names(ctx: CheckContext, value: Any, keypath: str) -> tuple[str, ...]:
    names = ctx.tokens(value, keypath)
    for i, n in enumerate(names):
        if not NAME.match(n):
            raise ctx.fail(f"{keypath}[{i}]", f"{n!r} is not a patch name")
    return names


def _build_engines(ctx: CheckContext, value: Any, keypath: str) -> tuple[str, ...]:
    engines = ctx.tokens(value, keypath)
    for i, e in enumerate(engines):
        if e not in ENGINES:
            raise ctx.fail(f"{keypath}[{i}]", f"{e!r} is not an engine this tool builds "
                           f"({', '.join(ENGINES)})", hint=choices_hint(e, list(ENGINES)))
    return engines


def _patch_index(ctx: CheckContext, value: Any) -> dict[str, Patch]:
    # the shipped patches, then patches/ beside the matrix file, then patches_dirs: all
    # added together (one name twice is an error naming both files), each folder once
    beside = user_folder(ctx.path, USER_PATCHES)
    dirs = [project_patches(), *([beside] if beside else []),
            *(ctx.path.parent / d for d in ctx.strings(value, "patches_dirs"))]
    dirs = list({d.resolve(): d for d in dirs}.values())
    try:
        return load_patches(dirs)
    except PatchError as exc:
        raise ctx.fail("patches_dirs", str(exc)) from None


def _base_images(ctx: CheckContext, value: Any, keypath: str) -> tuple[str | None, dict[str, str]]:
    """``base_image`` is one image name (for x86_64; its i386 twin is derived) or a
    mapping ``{x86_64: IMAGE, i386: IMAGE}``."""
    if value is None:
        return None, {}
    if isinstance(value, dict):
        ctx.keys(value, ARCHES, keypath)
        out: dict[str, str] = {}
        for arch, image in value.items():
            text = ctx.string(image, f"{keypath}.{arch}")
            _check_image(ctx, text, f"{keypath}.{arch}")
            out[arch] = text
        return None, out
    text = ctx.string(value, keypath)
    _check_image(ctx, text, keypath)
    return text, {}


def _resolve_base_image(ctx: CheckContext, cell: Mapping[str, Any], spec: VersionSpec,
                        default_base: tuple[str | None, dict[str, str]], where: str) -> str:
    """Include rule's image, else the version's, else the matrix default, else the era's."""
    arch = str(cell["arch"])
    if cell.get("base_image"):
        return str(cell["base_image"])
    layers = [(f"versions.{spec.version}.base_image", spec.base_image, dict(spec.base_images)),
              ("defaults.base_image", default_base[0], default_base[1])]
    for keypath, generic, per_arch in layers:
        if arch in per_arch:
            return per_arch[arch]
        if generic is not None:
            if arch == "x86_64":
                return generic
            twin = i386_name(generic)
            if twin is None:
                raise ctx.fail(keypath, f"{generic!r} is not an official-library image, so "
                               "its i386 twin is unknown",
                               hint=f"give both: base_image: {{x86_64: {generic}, "
                               "i386: IMAGE}")
            return twin
    return era_base_image(arch)


def _sigill_cpus(march: str | None, cpu: str | None, profiles: Sequence[Profile],
                 ) -> tuple[str, ...]:
    out: list[str] = []
    for p in profiles:
        # a profile lacking the long NOPs (nopl), or whose -march is such a CPU
        no_endbr32 = "nopl" in p.lacks or cannot_execute_endbr32(p.march)
        if no_endbr32 and (p.name == cpu or (march is not None and p.march == march)):
            out.append(p.name)
    if not out and cannot_execute_endbr32(march):
        out.append(f"-march={march}")
    return tuple(out)


def _apply_default_selection(ctx: CheckContext, value: Any, variants: list[Variant],
                             ) -> list[Variant]:
    """Mark the variants ``default_variants`` (fnmatch patterns) leaves out as opt-in.
    Without it the variants stay as expanded: those of the file's own versions default,
    those of the releases ``catalogue: true`` added opt-in."""
    if value is None:
        return variants
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise ctx.fail("default_variants", "expected a non-empty list of fnmatch patterns "
                       "over variant ids, e.g. ['1.1.1w-*-x86_64']")
    patterns = [ctx.string(p, f"default_variants[{i}]", pattern=PATTERN,
                           what="fnmatch pattern") for i, p in enumerate(value)]
    out = []
    for i, pat in enumerate(patterns):
        if not any(fnmatch.fnmatchcase(v.id, pat) for v in variants):
            raise ctx.fail(f"default_variants[{i}]", f"{pat!r} matches no variant",
                           hint="`invoke matrix list` shows the variant ids")
    for v in variants:
        default = any(fnmatch.fnmatchcase(v.id, p) for p in patterns)
        out.append(replace(v, default=default))
    if not any(v.default for v in out):
        raise ctx.fail("default_variants", "selects no variant")
    return out


def _check_image(ctx: CheckContext, image: str, keypath: str) -> None:
    if not re.match(r"^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9._-]+)?(@sha256:[0-9a-f]{64})?\Z", image):
        raise ctx.fail(keypath, f"{image!r} is not a Docker image reference")


def _load_versions(ctx: CheckContext, value: Any,
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
        sha, urls = ctx.source_pin(entry, kp)
        if not urls and default_urls is not None:
            urls = tuple(default_urls(name))
        base_image, per_arch = _base_images(ctx, entry.get("base_image"), f"{kp}.base_image")
        official = entry.get("official")
        if official is not None and official is not False:
            raise ctx.fail(f"{kp}.official", "only official: false may be written (a "
                           "third-party tree's own checksum); the catalogue says what is "
                           "official")
        out.append(VersionSpec(version=name, sha256=sha, urls=urls, official=official,
                               configure=ctx.tokens(entry.get("configure"), f"{kp}.configure"),
                               base_image=base_image,
                               base_images=tuple(sorted(per_arch.items())),
                               patches=_names(ctx, entry.get("patches"), f"{kp}.patches"),
                               engines=_build_engines(ctx, entry.get("engines"),
                                                      f"{kp}.engines")))
    return tuple(out)


def _merge_catalogue(ctx: CheckContext, versions: tuple[VersionSpec, ...], flag: Any,
                     default_urls: Callable[[str], list[str]] | None,
                     ) -> tuple[VersionSpec, ...]:
    """Each file version checked against the release catalogue (a checksum that is not
    the official one must say ``official: false``); with ``catalogue: true`` every
    catalogue release the file does not declare is added after them, opt-in."""
    if not isinstance(flag, bool):
        raise ctx.fail("catalogue", "expected true or false",
                       hint="catalogue: true adds every release of "
                            "openssl_matrix/resources/releases.yaml")
    cat = load_catalogue()
    out: list[VersionSpec] = []
    for spec in versions:
        rel = cat.get(spec.version)
        kp = f"versions.{spec.version}"
        if spec.official is False:
            out.append(spec)
            continue
        if rel is None:
            out.append(spec)
            continue
        if spec.sha256 is not None and spec.sha256 != rel.sha256:
            if not flag:  # a matrix without the catalogue keeps its own word
                out.append(spec)
                continue
            raise ctx.fail(f"{kp}.sha256",
                           f"{spec.sha256[:16]}… is not the official tarball's sha256 "
                           f"({rel.sha256[:16]}…, confirmed by {', '.join(rel.projects)} in "
                           "openssl_matrix/resources/releases.yaml)",
                           hint="fix the checksum, or say official: false if this is "
                                "another tree's tarball on purpose")
        out.append(replace(spec, sha256=spec.sha256 or rel.sha256, official=True,
                           sources=_source_lines(rel), single_source=rel.single_source))
    if flag:
        have = {v.version for v in versions}
        for rel in cat.releases:
            if rel.version in have:
                continue
            urls = tuple(default_urls(rel.version)) if default_urls is not None else ()
            out.append(VersionSpec(version=rel.version, sha256=rel.sha256, urls=urls,
                                   official=True, sources=_source_lines(rel),
                                   single_source=rel.single_source, from_catalogue=True))
    return tuple(out)


def _source_lines(rel: Release) -> tuple[str, ...]:
    return tuple(f"{s.project}: {s.where}" for s in rel.sources)


def _axis(ctx: CheckContext, value: Any, keypath: str, allowed: Sequence[str] | None) -> list[str]:
    if not isinstance(value, list) or not value:
        raise ctx.fail(keypath, "expected a non-empty list")
    out: list[str] = []
    for i, item in enumerate(value):
        kp = f"{keypath}[{i}]"
        text = ctx.token(item, kp)
        if allowed is not None and text not in allowed:
            raise ctx.fail(kp, f"{text!r} is not one of {', '.join(allowed)}",
                           hint=choices_hint(text, list(allowed)))
        if text in out:
            raise ctx.fail(kp, f"{text!r} is listed twice")
        out.append(text)
    return out


def _rules(ctx: CheckContext, value: Any, keypath: str, by_version: Mapping[str, VersionSpec], *,
           is_include: bool) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ctx.fail(keypath, f"expected a list of rules, got {kind_name(value)}")
    rules: list[dict[str, Any]] = []
    for i, item in enumerate(value):
        kp = f"{keypath}[{i}]"
        rule = ctx.mapping(item, kp)
        ctx.keys(rule, INCLUDE_KEYS if is_include else RULE_KEYS, kp)
        if not rule:
            raise ctx.fail(kp, "empty rule")
        clean: dict[str, Any] = {}
        for key, val in rule.items():
            if key == "configure":
                clean[key] = list(ctx.tokens(val, f"{kp}.configure"))
            elif key == "patches":
                clean[key] = list(_names(ctx, val, f"{kp}.patches"))
            elif key == "engines":
                clean[key] = list(_build_engines(ctx, val, f"{kp}.engines"))
            elif key == "base_image":
                clean[key] = ctx.string(val, f"{kp}.base_image")
                _check_image(ctx, clean[key], f"{kp}.base_image")
            elif is_include:
                clean[key] = ctx.token(val, f"{kp}.{key}")
                if key == "march" and clean[key] != "default":
                    ctx.path_name(clean[key], f"{kp}.march", what="-march value")
            else:
                clean[key] = ctx.string(val, f"{kp}.{key}", pattern=PATTERN,
                                        what="fnmatch pattern")
        if is_include:
            if "version" not in clean:
                raise ctx.fail(kp, "an include rule needs a 'version'")
            if clean["version"] not in by_version:
                raise ctx.fail(f"{kp}.version", f"{clean['version']!r} is not declared under "
                               "'versions'", hint=choices_hint(clean["version"],
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


def _load_profiles(ctx: CheckContext, value: Any) -> tuple[Profile, ...]:
    profiles = ctx.mapping(value, "profiles")
    out: list[Profile] = []
    for name, body in profiles.items():
        kp = f"profiles.{name}"
        if name == "auto":
            raise ctx.fail(kp, "'auto' is built in (this host) and cannot be redefined")
        if not isinstance(name, str) or not NAME.match(name) or \
                name.startswith(("host-", "ref-")) or name_problem(name):
            raise ctx.fail(kp, f"{clip(name)}: profile names are lower-case letters, digits, "
                           "'-', '.', '_' and may not start with 'host-' or 'ref-'")
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
            march=None if march is None else ctx.path_name(
                ctx.token(march, f"{kp}.march"), f"{kp}.march", what="-march value"),
            lacks=ctx.tokens(entry.get("lacks"), f"{kp}.lacks"),
            cpuset=cpuset,
            docker_host=host,
        ))
    return tuple(out)


def _opt_str(ctx: CheckContext, value: Any, keypath: str) -> str | None:
    return None if value is None else ctx.string(value, keypath)


def _load_suites(ctx: CheckContext, value: Any) -> tuple[Suite, ...]:
    suites = ctx.mapping(value, "suites")
    if not suites:
        raise ctx.fail("suites", "no suites declared",
                       hint="add at least one suite; see docs/matrix.md")
    out: list[Suite] = []
    for name, body in suites.items():
        kp = f"suites.{name}"
        if not NAME.match(name) or name_problem(name):
            raise ctx.fail(kp, f"{clip(name)}: suite names are lower-case letters, digits, "
                           "'-', '.', '_'")
        entry = ctx.mapping(body, kp)
        ctx.keys(entry, SUITE_KEYS, kp)
        algorithms = ctx.tokens(entry.get("algorithms"), f"{kp}.algorithms")
        for i, alg in enumerate(algorithms):  # part of the raw output's file name
            ctx.path_name(alg, f"{kp}.algorithms[{i}]", what="algorithm name")
        if not algorithms:
            raise ctx.fail(f"{kp}.algorithms", "list at least one algorithm")
        masks = _load_masks(ctx, entry.get("masks"), f"{kp}.masks")
        evp, legacy = _paths(ctx, entry.get("evp", True), f"{kp}.evp")
        multi = multi_counts(ctx, entry.get("multi"), f"{kp}.multi")
        repeat = ctx.posint(entry.get("repeat", 1), f"{kp}.repeat", optional=False,
                            maximum=MAX_REPEAT)
        noise = ctx.number(entry.get("noise_threshold", 0.05), f"{kp}.noise_threshold")
        if noise is None or noise >= 1:
            raise ctx.fail(f"{kp}.noise_threshold", f"expected a fraction such as 0.05 (5 %), "
                           f"got {entry.get('noise_threshold')!r}")
        kind = ctx.string(entry.get("kind", "speed"), f"{kp}.kind")
        if kind not in KINDS:
            raise ctx.fail(f"{kp}.kind", f"{kind!r} is not a suite kind "
                           f"({', '.join(KINDS)})")
        facts = KINDS[kind]
        options = check_entry(ctx, facts, entry, algorithms, kp)
        seconds = ctx.posint(entry.get("seconds"), f"{kp}.seconds", maximum=MAX_SECONDS)
        if facts.defaults is not None:  # the kind's own settings unless the suite says
            seconds = seconds or facts.defaults.seconds
            multi = multi or facts.defaults.multi
            repeat = repeat if "repeat" in entry else facts.defaults.repeat
            noise = noise if "noise_threshold" in entry else facts.defaults.noise_threshold
        interleave = ctx.posint(entry.get("interleave"), f"{kp}.interleave", maximum=60)
        if interleave and (not facts.interleavable or not evp):
            raise ctx.fail(f"{kp}.interleave", "interleaved comparisons are for a speed "
                           "suite through EVP (kind: speed, evp: true or both): remove "
                           "'interleave' here")
        out.append(Suite(
            name=name, kind=kind, tls=options.tls, library=options.library,
            interleave=interleave or 0,
            description=ctx.string(entry.get("description", ""), f"{kp}.description"),
            algorithms=algorithms,
            evp=evp,
            seconds=seconds,
            bytes=ctx.posint(entry.get("bytes"), f"{kp}.bytes", maximum=MAX_BYTES),
            masks=masks,
            legacy=legacy,
            directions=_directions(ctx, entry.get("decrypt", False), f"{kp}.decrypt"),
            engines=_engines(ctx, entry.get("engine"), f"{kp}.engine"),
            providers=_providers(ctx, entry.get("provider", "auto"), f"{kp}.provider"),
            multi=multi,
            repeat=repeat or 1,
            noise_threshold=noise,
            devices=_devices(ctx, entry.get("devices"), f"{kp}.devices"),
        ))
    return tuple(out)


def _devices(ctx: CheckContext, value: Any, keypath: str) -> tuple[str, ...]:
    devices = ctx.tokens(value, keypath)
    for i, dev in enumerate(devices):
        if not DEVICE.match(dev) or ".." in dev.split("/"):
            raise ctx.fail(f"{keypath}[{i}]", f"{dev!r} is not a device path under /dev",
                           hint="e.g. devices: [/dev/crypto]; the bench container gets it "
                           "only if this host has it")
    return devices


def _load_masks(ctx: CheckContext, value: Any, keypath: str) -> tuple[Mask, ...]:
    if value is None:
        return (Mask("default", None),)
    if not isinstance(value, list) or not value:
        raise ctx.fail(keypath, "expected a non-empty list of masks")
    masks: list[Mask] = []
    for i, m in enumerate(value):
        mkp = f"{keypath}[{i}]"
        mm = ctx.mapping(m, mkp)
        ctx.keys(mm, MASK_KEYS, mkp)
        mname = ctx.path_name(ctx.string(mm.get("name"), f"{mkp}.name"), f"{mkp}.name",
                              what="mask name", pattern=NAME)
        cap, disable = ctx.mask_spec(mm, mkp)
        if any(x.name == mname for x in masks):
            raise ctx.fail(f"{mkp}.name", f"mask {mname!r} is listed twice")
        masks.append(Mask(mname, cap, disable))
    return tuple(masks)


def _paths(ctx: CheckContext, value: Any, keypath: str) -> tuple[bool, bool]:
    """``evp: true | false | both`` -> (evp, legacy too)."""
    if value == "both":
        return True, True
    if isinstance(value, bool):
        return value, False
    raise ctx.fail(keypath, f"expected true, false or both, got {value!r}",
                   hint="true: the EVP path (-evp); false: the low-level path; both: each")


def _directions(ctx: CheckContext, value: Any, keypath: str) -> tuple[str, ...]:
    if value == "both":
        return ("encrypt", "decrypt")
    if isinstance(value, bool):
        return ("decrypt",) if value else ("encrypt",)
    raise ctx.fail(keypath, f"expected true, false or both, got {value!r}")


def _engines(ctx: CheckContext, value: Any, keypath: str) -> tuple[str | None, ...]:
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


def _providers(ctx: CheckContext, value: Any, keypath: str) -> tuple[str, ...] | None:
    if value == "auto":
        return None
    if isinstance(value, str):
        value = [value]
    names = ctx.tokens(value, keypath)
    if not names:
        raise ctx.fail(keypath, "expected auto or a non-empty list of provider names")
    return names
