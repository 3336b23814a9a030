"""Rendering: a variant becomes a Dockerfile and a build context, deterministically.

The build recipe is the same for every release; what differs between releases is
decided by the release's own source tree, probed in the build's first stage by
``dockerfiles/srcfacts.pl`` (tested without Docker on trees the tests write), not by
version cutoffs:

- ``perl ./Configure <target>`` always (``./config`` guesses the target from
  ``uname -m``, which is x86_64 inside an i386 container on an amd64 kernel). The
  target is the first of ``eras.configure_targets(arch)`` the tree's Configure defines:
  ``linux-x86_64``; for i386 ``linux-x86`` (Configurations/, 1.1.0 on), else
  ``linux-elf`` (Configure's own table, 0.9.8-1.0.2);
- the build system the tree has decides the steps: unified (build.info and
  Configurations/, 1.1.0 on): ``--libdir=lib`` (3.x would default to lib64) and
  ``make -jN``; legacy (Makefile.org, 0.9.8-1.0.2): ``make depend``, then ``make -j1``
  (their makefiles are not parallel-safe; distributions force -j1);
- ``no-tests`` (unified trees) only where the release's Configure knows it (early
  1.1.0 releases do not); engine switches and the matrix's own no-/enable- options must
  be known, or the source stage stops naming them;
- ``shared``, ``--prefix``/``--openssldir``;
- always ``make install_sw`` (software only: ``install`` runs pod2man, which fails on
  the 1.0.x pods with perl >= 5.18) and never ``make test`` (old test suites carry
  expired certificates);
- ``-Wa,--noexecstack``, ``-m32`` for i386, ``-march=...``, the engines' switches
  spelled for the version (``eras.engine_options``), then the matrix's options;
- patches (``patches/``) are applied with ``patch --fuzz=0`` while the source is
  prepared (rewrite scripts, ``NAME.pl``, are run there instead); one that does not
  apply fails that variant with a message naming it.

What ran is recorded in the image (``configure.txt``, ``source-facts.txt``) and in the
build record (``configure_line_in_image``, ``source_facts``).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from openssl_matrix.core.resources import dockerfiles
from openssl_matrix.images.sources import tarball_name as sources_tarball_name
from openssl_matrix.matrix import eras
from openssl_matrix.matrix.model import Variant
from openssl_matrix.matrix.patches import Patch

PREFIX = "/opt/openssl"
#: the source-facts probe and Configure wrapper, copied into every build context
SRCFACTS = "srcfacts.pl"
FACTS_FILE = "/src/facts.txt"
TOOLCHAIN_PACKAGES = ("build-essential", "perl", "binutils", "patch", "linux-libc-dev")
#: what the compiler-cache image adds to the toolchain (Debian's package)
CCACHE_PACKAGES = ("ccache",)
#: the line the build log shows before ``ccache --show-log-stats`` (build.py reads it)
CCACHE_MARK = "==> openssl-matrix ccache stats"
#: a series' cache stops growing here (ccache evicts the oldest entries)
CCACHE_MAX_SIZE = "2G"


#: The Configure argument srcfacts.pl replaces with the target the source stage chose.
TARGET_TOKEN = "@target@"


@dataclass(frozen=True)
class Recipe:
    """How one variant is configured, built and installed: one recipe for every release,
    with what the release's tree decides left to the source stage's probe."""

    configure: tuple[str, ...]
    """``perl ./Configure @target@ ...``: the target and the dropped options are filled in
    by srcfacts.pl from the source facts."""
    install: tuple[str, ...]
    #: Configure targets in order of preference: the first the tree defines is used
    targets: tuple[str, ...] = ("linux-x86_64",)
    #: options kept on unified-build trees only (``--libdir=lib``, ``no-tests``)
    unified_only: tuple[str, ...] = ()
    #: options of ``configure`` left out when the release's own Configure does not know
    #: them (probed in the source stage: ``no-tests`` is unknown to 1.1.0g and 1.1.0i)
    optional: tuple[str, ...] = ()
    #: options that must be known to the release's Configure (engine switches, the
    #: matrix's own no-/enable- options): checked in the source stage
    required: tuple[str, ...] = ()

    def check_command(self, facts: str) -> tuple[str, ...]:
        """The source-stage probe (dockerfiles/srcfacts.pl): build system, target, options."""
        out = ["perl", f"/src/{SRCFACTS}", "check", "--facts", facts]
        for target in self.targets:
            out += ["--target", target]
        for option in self.unified_only:
            out += ["--unified-only", option]
        for option in self.optional:
            out += ["--optional", option]
        for option in self.required:
            out += ["--require", option]
        return tuple(out)

    def configure_command(self, facts: str) -> tuple[str, ...]:
        """Configure, run through srcfacts.pl: the chosen target in, dropped options out."""
        return ("perl", f"/src/{SRCFACTS}", "configure", "--facts", facts, "--",
                *self.configure)

    @staticmethod
    def make_command(facts: str) -> tuple[str, ...]:
        """make as the tree's build system wants it (legacy: make depend, -j1)."""
        return ("perl", f"/src/{SRCFACTS}", "make", "--facts", facts)

    @property
    def configure_line(self) -> str:
        """The Configure line as rendered, for people: the target choices joined by |
        (the line that ran is the build record's ``configure_line_in_image``)."""
        return " ".join("|".join(self.targets) if a == TARGET_TOKEN else a
                        for a in self.configure)


@dataclass(frozen=True)
class CompilerCache:
    """A shared compiler cache for a build: ccache in a BuildKit cache mount named
    :attr:`id`, one per release series (``openssl-matrix-ccache-3.0``), so neighbouring
    releases, commits, and asm/no-asm builds of one series recompile only what differs.
    Neither the cache nor the image ccache comes from is part of the content hash."""

    id: str
    image: str
    """the compiler-cache image (:func:`ccache_tag`): the toolchain plus Debian's ccache"""


def cache_id(variant: Variant, namespace: str = "openssl-matrix") -> str:
    """The cache a variant's build shares: one per series (``1.1.1``, ``3.0``)."""
    return f"{namespace}-ccache-{variant.version.series_name}"


@dataclass(frozen=True)
class Rendered:
    """A variant's Dockerfile and the files its build context needs.

    :attr:`dockerfile` is the recipe (what the content hash covers); with a compiler cache,
    :attr:`build_dockerfile` is what is built: the same steps, compiled through ccache."""

    variant: Variant
    dockerfile: str
    toolchain_tag: str
    toolchain_dockerfile: str
    recipe: Recipe
    context_files: dict[str, Path] = field(default_factory=dict)
    build_dockerfile: str = ""
    cache: CompilerCache | None = None

    @property
    def built(self) -> str:
        """The Dockerfile sent to the engine."""
        return self.build_dockerfile or self.dockerfile

    def digest(self, file_hashes: dict[str, str]) -> str:
        """Hash of everything that goes into the image (Dockerfile + context contents)."""
        h = hashlib.sha256()
        h.update(self.dockerfile.encode())
        h.update(self.toolchain_dockerfile.encode())
        h.update(json.dumps(sorted(file_hashes.items())).encode())
        return h.hexdigest()


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(dockerfiles())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    # exec-form RUN lines are JSON arrays; plain json.dumps keeps < > & ' readable
    # (Jinja's tojson escapes them for HTML)
    env.filters["argv"] = lambda value: json.dumps(value, ensure_ascii=False)
    return env


def engine_options(variant: Variant) -> tuple[str, ...]:
    out: list[str] = []
    for engine in variant.engines:
        for opt in eras.engine_options(variant.version.version, engine):
            if opt not in out:
                out.append(opt)
    return tuple(out)


def recipe(variant: Variant) -> Recipe:
    """The build recipe of a variant (see the module docstring): the same for every
    release; the release's tree decides the rest in the source stage."""
    opts: list[str] = [f"--prefix={PREFIX}", f"--openssldir={PREFIX}/ssl"]
    # unified trees: --libdir=lib (3.x would default to lib64); no-tests only shortens
    # the build, and 1.1.0g/1.1.0i do not know it: optional too
    unified_only = ("--libdir=lib", "no-tests")
    opts += unified_only
    opts.append("shared")
    if not variant.asm:
        opts.append("no-asm")
    cflags = ["-Wa,--noexecstack"]
    if variant.arch == "i386":
        cflags.append("-m32")
    if variant.march:
        cflags.append(f"-march={variant.march}")
    configure = ("perl", "./Configure", TARGET_TOKEN, *opts, *engine_options(variant),
                 *variant.configure, *cflags)
    # engine switches and the matrix's own options must exist in this release's Configure
    required = tuple(o for o in (*engine_options(variant), *variant.configure)
                     if o.startswith(("no-", "enable-", "disable-")))
    return Recipe(configure=configure, install=("make", "install_sw"),
                  targets=eras.configure_targets(variant.arch), unified_only=unified_only,
                  optional=("no-tests",), required=required)


def is_eol_image(base_image: str) -> bool:
    """A retired Debian release (``debian/eol:<suite>``): apt reads archive.debian.org,
    whose Release files are past their Valid-Until date."""
    return base_image.startswith("debian/eol:")


def toolchain_dockerfile(base_image: str) -> str:
    return _env().get_template("toolchain.Dockerfile.j2").render(
        base_image=base_image, packages=TOOLCHAIN_PACKAGES, eol=is_eol_image(base_image))


def ccache_dockerfile(base_image: str) -> str:
    return _env().get_template("ccache.Dockerfile.j2").render(
        toolchain_tag=toolchain_tag(base_image), packages=CCACHE_PACKAGES)


def ccache_tag(base_image: str) -> str:
    """The compiler-cache image of a base image's toolchain (its tag names the text that
    builds it, which names the toolchain's tag)."""
    text = ccache_dockerfile(base_image)
    slug = toolchain_tag(base_image).split(":", 1)[1]
    return f"openssl-matrix/ccache:{slug}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


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


def render(variant: Variant, cache: CompilerCache | None = None) -> Rendered:
    """Render the variant's Dockerfile. Pure: the same variant gives the same text, and
    ``cache`` changes only :attr:`Rendered.build_dockerfile`."""
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
        "make": list(r.make_command(FACTS_FILE)),
        "install": list(r.install),
    }
    template = _env().get_template("openssl.Dockerfile.j2")
    text = template.render(**context, ccache=None)
    built = ""
    if cache is not None:
        mount = f"--mount=type=cache,id={cache.id},target=/ccache,sharing=shared"
        make = ["/bin/sh", "-c", f"{shlex.join(context['make'])} && echo {CCACHE_MARK!r} "
                "&& ccache --show-log-stats"]
        built = template.render(**context, ccache={
            "id": cache.id, "image": cache.image, "mount": mount, "make": make,
            "max_size": CCACHE_MAX_SIZE})
    files = {"buildinfo.sh": dockerfiles() / "buildinfo.sh", SRCFACTS: dockerfiles() / SRCFACTS}
    for p in variant.patches:
        files[p.context_name] = p.path
    return Rendered(variant=variant, dockerfile=text, toolchain_tag=tc_tag,
                    toolchain_dockerfile=toolchain_dockerfile(variant.base_image),
                    recipe=r, context_files=files, build_dockerfile=built, cache=cache)
