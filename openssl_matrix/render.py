"""Rendering: a variant becomes a Dockerfile and a build context, deterministically.

The per-era build recipe is decided here in Python, so the templates in ``dockerfiles/``
stay simple and every decision is testable without Docker:

- ``perl ./Configure <target>`` always (``./config`` guesses the target from
  ``uname -m``, which is x86_64 inside an i386 container on an amd64 kernel), run
  through ``dockerfiles/srcfacts.pl``: the source stage checks the unpacked tree (the
  target exists, the build system is the one the steps drive) and notes which optional
  options its Configure does not know, which are then left out (``no-tests`` in early
  1.1.0 releases);
  ``linux-x86_64``, or ``linux-elf`` (0.9.8-1.0.x) / ``linux-x86`` (1.1.0+) for i386;
- ``shared``, ``--prefix``/``--openssldir``, plus ``--libdir=lib`` and ``no-tests``
  from 1.1.0 (both are unknown before; ``no-tests`` only where Configure knows it);
- 0.9.8-1.0.x: ``make depend`` first and ``make`` with -j1 (their makefiles are not
  parallel-safe; distros force -j1); 1.1.0+: ``make -jN``;
- always ``make install_sw`` (software only: ``install`` runs pod2man, which fails on
  the 1.0.x pods with perl >= 5.18) and never ``make test`` (old test suites carry
  expired certificates);
- ``-Wa,--noexecstack``, ``-m32`` for i386, ``-march=...``, the engines' switches
  spelled for the version (``eras.engine_options``), then the matrix's options;
- patches (``patches/``) are applied with ``patch --fuzz=0`` while the source is
  prepared (rewrite scripts, ``NAME.pl``, are run there instead); one that does not
  apply fails that variant with a message naming it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from . import eras
from .model import Variant
from .patches import Patch
from .sources import tarball_name as sources_tarball_name

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "dockerfiles"
PREFIX = "/opt/openssl"
#: the source-facts probe and Configure wrapper, copied into every build context
SRCFACTS = "srcfacts.pl"
FACTS_FILE = "/src/facts.txt"
TOOLCHAIN_PACKAGES = ("build-essential", "perl", "binutils", "patch", "linux-libc-dev")


@dataclass(frozen=True)
class Recipe:
    """How one variant is configured, built and installed."""

    configure: tuple[str, ...]
    pre_make: tuple[tuple[str, ...], ...]
    install: tuple[str, ...]
    parallel_make: bool
    #: options of ``configure`` left out when the release's own Configure does not know
    #: them (probed in the source stage: ``no-tests`` is unknown to 1.1.0g and 1.1.0i)
    optional: tuple[str, ...] = ()
    #: the build system the steps drive, checked against the tree in the source stage:
    #: ``legacy`` (Makefile.org: make depend, -j1) or ``unified`` (build.info)
    build_system: str = "unified"
    #: options that must be known to the release's Configure (engine switches, the
    #: matrix's own no-/enable- options): checked in the source stage
    required: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        return self.configure[2]

    def check_command(self, facts: str) -> tuple[str, ...]:
        """The source-stage check (dockerfiles/srcfacts.pl): target, build system, options."""
        out = ["perl", f"/src/{SRCFACTS}", "check", "--facts", facts, "--target", self.target,
               "--build-system", self.build_system]
        for option in self.optional:
            out += ["--optional", option]
        for option in self.required:
            out += ["--require", option]
        return tuple(out)

    def configure_command(self, facts: str) -> tuple[str, ...]:
        """Configure, run through srcfacts.pl so the options the check found unknown drop."""
        return ("perl", f"/src/{SRCFACTS}", "configure", "--facts", facts, "--",
                *self.configure)

    @property
    def configure_line(self) -> str:
        return " ".join(self.configure)


@dataclass(frozen=True)
class Rendered:
    """A variant's Dockerfile and the files its build context needs."""

    variant: Variant
    dockerfile: str
    toolchain_tag: str
    toolchain_dockerfile: str
    recipe: Recipe
    context_files: dict[str, Path] = field(default_factory=dict)

    def digest(self, file_hashes: dict[str, str]) -> str:
        """Hash of everything that goes into the image (Dockerfile + context contents)."""
        h = hashlib.sha256()
        h.update(self.dockerfile.encode())
        h.update(self.toolchain_dockerfile.encode())
        h.update(json.dumps(sorted(file_hashes.items())).encode())
        return h.hexdigest()


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    # exec-form RUN lines are JSON arrays; plain json.dumps keeps < > & ' readable
    # (Jinja's tojson escapes them for HTML)
    env.filters["argv"] = lambda value: json.dumps(value, ensure_ascii=False)
    return env


def configure_target(variant: Variant) -> str:
    return eras.configure_target(variant.version.version, variant.arch)


def engine_options(variant: Variant) -> tuple[str, ...]:
    out: list[str] = []
    for engine in variant.engines:
        for opt in eras.engine_options(variant.version.version, engine):
            if opt not in out:
                out.append(opt)
    return tuple(out)


def recipe(variant: Variant) -> Recipe:
    """The build recipe for a variant's OpenSSL era (see the module docstring)."""
    major, minor, _ = variant.version.series
    era = (major, minor)
    opts: list[str] = [f"--prefix={PREFIX}", f"--openssldir={PREFIX}/ssl"]
    optional: list[str] = []
    if era >= (1, 1):
        # --libdir: every unified-build release has it (3.x would default to lib64);
        # no-tests only shortens the build, and 1.1.0g/1.1.0i do not know it: optional
        opts.append("--libdir=lib")
        opts.append("no-tests")
        optional.append("no-tests")
    opts.append("shared")
    if not variant.asm:
        opts.append("no-asm")
    cflags = ["-Wa,--noexecstack"]
    if variant.arch == "i386":
        cflags.append("-m32")
    if variant.march:
        cflags.append(f"-march={variant.march}")
    configure = ("perl", "./Configure", configure_target(variant), *opts,
                 *engine_options(variant), *variant.configure, *cflags)
    pre_make: list[tuple[str, ...]] = []
    if era < (1, 1):
        pre_make.append(("make", "depend"))
    install = ("make", "install_sw")
    # The build system follows the series (Makefile.org in every 0.9.8-1.0.2 tree
    # examined: 0.9.8y, 1.0.1k/s/t, 1.0.2, 1.0.2k/n/s/u/zl; build.info in every 1.1.0-3.6
    # one: 1.1.0g/i, 1.1.1, 1.1.1b/w/zb, 3.0.0-3.0.22, 3.1.0-3.1.7, 3.2.0, 3.3.0, 3.5.7, 3.6.3);
    # the source stage checks it per release and stops with a message if it differs.
    # engine switches and the matrix's own options must exist in this release's Configure
    required = tuple(o for o in (*engine_options(variant), *variant.configure)
                     if o.startswith(("no-", "enable-", "disable-")))
    return Recipe(configure=configure, pre_make=tuple(pre_make), install=install,
                  parallel_make=era >= (1, 1), optional=tuple(optional), required=required,
                  build_system="unified" if era >= (1, 1) else "legacy")


def is_eol_image(base_image: str) -> bool:
    """A retired Debian release (``debian/eol:<suite>``): apt reads archive.debian.org,
    whose Release files are past their Valid-Until date."""
    return base_image.startswith("debian/eol:")


def toolchain_dockerfile(base_image: str) -> str:
    return _env().get_template("toolchain.Dockerfile.j2").render(
        base_image=base_image, packages=TOOLCHAIN_PACKAGES, eol=is_eol_image(base_image))


def toolchain_tag(base_image: str) -> str:
    text = toolchain_dockerfile(base_image)
    slug = base_image.replace("/", "-").replace(":", "-").replace("@", "-")
    return f"openssl-matrix/toolchain:{slug}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def tarball_name(variant: Variant) -> str:
    """The source tarball's file name in the build context (see sources.tarball_name)."""
    return sources_tarball_name(variant.version.version)


def _patch_step(variant: Variant, patch: Patch) -> dict[str, Any]:
    """The RUN line that applies one patch, failing with a message that says what to do."""
    where = "patches/" + patch.path.name if patch.path.parent.name == "patches" else \
        str(patch.path)
    meta = patch.path.with_suffix(".yaml").name
    if patch.apply == "auto":
        todo = (f"it is a compat patch applied to every version it matches: fix the "
                f"{'script' if patch.is_script else 'diff'} or narrow the versions in {meta}")
    else:
        todo = (f"drop {patch.provides} from the patches of this variant in the matrix, "
                f"or fix the {'script' if patch.is_script else 'diff'} or narrow the "
                f"versions in {meta}")
    message = (f"openssl-matrix: patch {patch.name} ({where}) does not apply to OpenSSL "
               f"{variant.version.version} (variant {variant.id}): {todo}")
    if patch.is_script:
        # a rewrite script: it finds the construct itself and lists what it changed
        # (nothing, in a release without the construct); the list goes to the build record
        script = (f"perl /src/patches/{patch.context_name} > /src/compat-{patch.name}.txt "
                  f"|| {{ cat /src/compat-{patch.name}.txt; echo {_sh_quote(message)} >&2; "
                  f"exit 1; }}; cat /src/compat-{patch.name}.txt")
    else:
        script = (f"patch -p{patch.strip} --forward --batch --fuzz=0 "
                  f"< /src/patches/{patch.context_name} || {{ echo {_sh_quote(message)} "
                  ">&2; exit 1; }")
    return {"name": patch.name, "context_name": patch.context_name,
            "command": ["/bin/sh", "-c", script]}


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _devcrypto_check(variant: Variant) -> list[str] | None:
    if "devcrypto" not in variant.engines:
        return None
    message = ("openssl-matrix: the devcrypto engine needs <crypto/cryptodev.h> "
               "(cryptodev-linux), which the base image " + variant.base_image + " lacks: use "
               "a base image that has it, or drop devcrypto from the engines of "
               + variant.id)
    return ["/bin/sh", "-c", "test -f /usr/include/crypto/cryptodev.h || "
            f"{{ echo {_sh_quote(message)} >&2; exit 1; }}"]


def render(variant: Variant) -> Rendered:
    """Render the variant's Dockerfile. Pure: the same variant gives the same text."""
    r = recipe(variant)
    tc_tag = toolchain_tag(variant.base_image)
    context: dict[str, Any] = {
        "variant": variant,
        "toolchain_tag": tc_tag,
        "tarball": tarball_name(variant),
        "patches": [_patch_step(variant, p) for p in variant.patches],
        "patch_list": " ".join(f"{p.name}:{p.sha256[:16]}" for p in variant.patches),
        "engines": " ".join(variant.engines),
        "checks": [c for c in (_devcrypto_check(variant),) if c],
        "configure": list(r.configure_command(FACTS_FILE)),
        "source_check": list(r.check_command(FACTS_FILE)),
        "srcfacts": SRCFACTS,
        "configure_line": r.configure_line,
        "pre_make": [list(c) for c in r.pre_make],
        "install": list(r.install),
    }
    text = _env().get_template("openssl.Dockerfile.j2").render(**context)
    files = {"buildinfo.sh": TEMPLATES / "buildinfo.sh", SRCFACTS: TEMPLATES / SRCFACTS}
    for p in variant.patches:
        files[p.context_name] = p.path
    return Rendered(variant=variant, dockerfile=text, toolchain_tag=tc_tag,
                    toolchain_dockerfile=toolchain_dockerfile(variant.base_image),
                    recipe=r, context_files=files)
