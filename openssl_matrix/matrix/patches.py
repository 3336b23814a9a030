"""Source patches: each one a unified diff plus a YAML file saying where and why it applies.

A patch is two files side by side in a patches folder (the project's ``patches/`` and
any ``patches_dirs`` a matrix names)::

    patches/no-endbr32-3.0.patch     the diff, applied with ``patch -p1 --fuzz=0``
    patches/no-endbr32-3.0.yaml      its metadata:

or, instead of the diff, ``NAME.pl``: a rewrite script run by ``perl`` in the unpacked
tree. A compat fix is written that way when the construct it repairs sits at different
places in different releases of a series (a diff with context fits one release only): the
script finds the construct itself, rewrites it, prints one line per file it changed, and
changes nothing (exit 0) in a tree without it, so whether it acts is decided by the source.

    provides: no-endbr32          # the name a matrix asks for (default: the file stem)
    description: one line for listings
    why: >-
      what goes wrong without it, and where that was seen
    versions: [">=3.0.4"]         # comparisons (>=, >, <=, <, ==, comma = and) or fnmatch
    arch: [i386]                  # optional: only these arches (default: all)
    apply: on-request             # or "auto": always applied where versions/arch match

``auto`` patches are the compatibility fixes an old release needs to build on a modern
toolchain; they are applied to every variant they match. ``on-request`` patches change
what is built (the ENDBR32 removal) and are applied only to the variants whose matrix
entry lists them under ``patches``. Several patch files may provide one name for
different version ranges; for any one version exactly one of them may match.

This module also knows which CPUs cannot execute ENDBR32, and words the warning for a
variant meant for such a CPU whose libcrypto still contains the instruction.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openssl_matrix.core.files import read_bounded, read_bounded_text
from openssl_matrix.core.names import clip
from openssl_matrix.core.version import Version
from openssl_matrix.core.yamlload import YamlProblem, load_yaml

#: What a patch's change is: a unified diff, or a perl rewrite script (see above).
PATCH_SUFFIXES = (".patch", ".pl")
META_KEYS = ("provides", "description", "why", "versions", "arch", "apply", "strip")
APPLY_MODES = ("auto", "on-request")
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*\Z")
_COMPARISON = re.compile(r"^(>=|<=|==|>|<)\s*(\d+\.\d+\.\d+[a-z]{0,2})\Z")

#: -march values of 32-bit x86 CPUs without the multi-byte NOP space (no NOPL, no
#: 0F 1E hint NOPs): ENDBR32 (F3 0F 1E FB) is an illegal instruction there, so an
#: OpenSSL whose assembler emits it dies with SIGILL at start-up. VIA C3 (Samuel 2,
#: Ezra) and C3-2 (Nehemiah), and the i586-class and older cores.
NO_ENDBR32_MARCH = frozenset({
    "i386", "i486", "i586", "pentium", "pentium-mmx", "lakemont", "k6", "k6-2", "k6-3",
    "winchip-c6", "winchip2", "c3", "c3-2", "geode",
})


class PatchError(Exception):
    """A patch or its metadata is unusable; the message names the file."""


def version_key(version: str) -> tuple[int, int, int, str]:
    """Sort key of an OpenSSL release number: 1.0.1 < 1.0.1c < 1.0.1t < 1.0.2."""
    return Version.parse(version).key


def version_matches(version: str, spec: str) -> bool:
    """Whether ``version`` satisfies one spec: ``>=1.1.1,<3.0.4`` or an fnmatch pattern."""
    spec = spec.strip()
    if any(spec.startswith(op) for op in (">", "<", "=")):
        key = version_key(version)
        for part in spec.split(","):
            m = _COMPARISON.match(part.strip())
            if m is None:
                raise ValueError(f"{part.strip()!r} is not a comparison such as >=1.1.1")
            other = version_key(m.group(2))
            ok = {">=": key >= other, ">": key > other, "<=": key <= other,
                  "<": key < other, "==": key == other}[m.group(1)]
            if not ok:
                return False
        return True
    return fnmatch.fnmatchcase(version, spec)


@dataclass(frozen=True)
class Patch:
    """One patch file and its metadata."""

    name: str  # the file stem, unique across patch folders
    path: Path
    provides: str
    description: str
    why: str
    versions: tuple[str, ...]
    arches: tuple[str, ...]
    apply: str
    strip: int
    sha256: str

    @property
    def context_name(self) -> str:
        """The file's name in a build context (flat, so the context stays one folder)."""
        return f"patch-{self.name}{self.path.suffix}"

    @property
    def is_script(self) -> bool:
        """A rewrite script (``NAME.pl``) rather than a diff."""
        return self.path.suffix == ".pl"

    def applies_to(self, version: str, arch: str) -> bool:
        if self.arches and arch not in self.arches:
            return False
        return any(version_matches(version, spec) for spec in self.versions)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "provides": self.provides, "file": str(self.path),
                "sha256": self.sha256, "apply": self.apply,
                "description": self.description}


def load_patches(dirs: Iterable[Path]) -> dict[str, Patch]:
    """Every patch in ``dirs`` (in order), keyed by file stem. Raises PatchError."""
    out: dict[str, Patch] = {}
    for d in dirs:
        if not d.is_dir():
            raise PatchError(f"{d}: no such patches folder")
        for meta_path in sorted(d.glob("*.yaml")):
            patch = _load_one(meta_path)
            if patch.name in out:
                raise PatchError(f"{meta_path}: a patch named {patch.name!r} is already "
                                 f"defined by {out[patch.name].path}")
            out[patch.name] = patch
        for suffix in PATCH_SUFFIXES:
            for diff in sorted(d.glob(f"*{suffix}")):
                if diff.stem not in out:
                    raise PatchError(f"{diff}: has no metadata file "
                                     f"{diff.with_suffix('.yaml').name}"
                                     " (which versions, which arch, why)")
    return out


def _load_one(meta_path: Path) -> Patch:
    where = str(meta_path)
    try:
        data = load_yaml(read_bounded_text(meta_path, "yaml"))
    except (OSError, UnicodeDecodeError) as exc:
        raise PatchError(f"{where}: cannot read: {str(exc)[:200]}") from None
    except YamlProblem as exc:
        raise PatchError(f"{where}: {exc.keypath + ': ' if exc.keypath else ''}"
                         f"{exc.message}") from None
    if not isinstance(data, dict):
        raise PatchError(f"{where}: expected a mapping of {', '.join(META_KEYS)}")
    unknown = sorted(set(data) - set(META_KEYS))
    if unknown:
        raise PatchError(f"{where}: unknown key(s) {clip(', '.join(map(str, unknown)), 200)} "
                         f"(allowed: {', '.join(META_KEYS)})")
    name = meta_path.stem
    changes = [meta_path.with_suffix(s) for s in PATCH_SUFFIXES
               if meta_path.with_suffix(s).is_file()]
    if not changes:
        raise PatchError(f"{where}: the patch file {name}.patch (a diff) or {name}.pl "
                         "(a rewrite script) is missing")
    if len(changes) > 1:
        raise PatchError(f"{where}: both {name}.patch and {name}.pl exist; keep one")
    diff = changes[0]
    if not _NAME.match(name):
        raise PatchError(f"{where}: patch names are lower-case letters, digits, '.', '_', '-'")
    provides = str(data.get("provides", name))
    if not _NAME.match(provides):
        raise PatchError(f"{where}: provides: {clip(provides)} is not a valid name")
    versions = _str_list(data.get("versions"), where, "versions")
    if not versions:
        raise PatchError(f"{where}: versions: list the OpenSSL versions it applies to, "
                         "e.g. ['>=1.1.1,<3.0.4'] or ['0.9.8*']")
    for spec in versions:
        try:
            version_matches("1.0.0", spec)
        except ValueError as exc:
            raise PatchError(f"{where}: versions: {exc}") from None
    arches = _str_list(data.get("arch"), where, "arch")
    apply = str(data.get("apply", "on-request"))
    if apply not in APPLY_MODES:
        raise PatchError(f"{where}: apply: {clip(apply)} is not one of {', '.join(APPLY_MODES)}")
    why = data.get("why")
    if not isinstance(why, str) or not why.strip():
        raise PatchError(f"{where}: why: say what goes wrong without this patch")
    strip = data.get("strip", 1)
    if not isinstance(strip, int) or isinstance(strip, bool) or strip < 0:
        raise PatchError(f"{where}: strip: expected a whole number (patch -pN)")
    return Patch(
        name=name, path=diff, provides=provides,
        description=str(data.get("description", "")).strip(), why=why.strip(),
        versions=versions, arches=arches, apply=apply, strip=strip,
        sha256=hashlib.sha256(read_bounded(diff, "text")).hexdigest(),
    )


def _str_list(value: Any, where: str, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise PatchError(f"{where}: {key}: expected a list of strings")
    return tuple(str(v) for v in value)


def select_patches(index: Mapping[str, Patch], version: str, arch: str,
                   requested: Sequence[str]) -> tuple[Patch, ...]:
    """The patches a variant gets: every matching ``auto`` patch, then the requested ones.

    Raises ValueError (worded for the matrix author) when a requested name is unknown,
    does not apply to this version/arch, or is ambiguous.
    """
    chosen = [p for p in index.values() if p.apply == "auto" and p.applies_to(version, arch)]
    for name in requested:
        providers = [p for p in index.values() if name in (p.provides, p.name)]
        if not providers:
            known = sorted({p.provides for p in index.values()})
            close = [k for k in known if fnmatch.fnmatchcase(k, f"*{name}*")]
            hint = f" (perhaps {close[0]!r}?)" if close else ""
            raise ValueError(f"no patch named {name!r}{hint}; patches: {', '.join(known)}")
        fitting = [p for p in providers if p.applies_to(version, arch)]
        if not fitting:
            ranges = "; ".join(f"{p.name}: versions {', '.join(p.versions)}"
                               + (f", arch {', '.join(p.arches)}" if p.arches else "")
                               for p in providers)
            raise ValueError(f"patch {name!r} does not apply to OpenSSL {version} on {arch} "
                             f"({ranges})")
        if len(fitting) > 1:
            raise ValueError(f"patch {name!r} is ambiguous for {version} on {arch}: "
                             + ", ".join(p.name for p in fitting)
                             + " all match; narrow their 'versions'")
        if fitting[0] not in chosen:
            chosen.append(fitting[0])
    return tuple(chosen)


def cannot_execute_endbr32(march: str | None) -> bool:
    return march is not None and march in NO_ENDBR32_MARCH


def endbr32_warning(variant_id: str, sigill_cpus: Sequence[str],
                    count: int | None) -> str | None:
    """The flag for a variant meant for a CPU without ENDBR32 whose libcrypto has some."""
    if not sigill_cpus or not count:
        return None
    return (f"{variant_id}: libcrypto has {count} ENDBR32 instruction(s): will die with "
            f"SIGILL on that CPU ({', '.join(sigill_cpus)}); add 'no-endbr32' to the "
            "variant's patches and rebuild")
