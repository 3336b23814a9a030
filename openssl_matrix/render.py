"""Rendering: a variant becomes a Dockerfile and a build context, deterministically.

The per-era build recipe (Configure target, ``make depend``, parallel make safety,
install target, ``no-tests``) is decided here in Python, so the templates in
``dockerfiles/`` stay simple and every decision is testable without Docker.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from .model import Variant

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "dockerfiles"
PREFIX = "/opt/openssl"
TOOLCHAIN_PACKAGES = ("build-essential", "perl", "binutils", "patch", "linux-libc-dev")


@dataclass(frozen=True)
class Recipe:
    """How one variant is configured, built and installed."""

    configure: tuple[str, ...]
    pre_make: tuple[tuple[str, ...], ...]
    install: tuple[str, ...]
    parallel_make: bool

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
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def configure_target(variant: Variant) -> str:
    major, minor, _ = variant.version.series
    if variant.arch == "x86_64":
        return "linux-x86_64"
    # 32-bit x86: linux-elf up to 1.0.x, linux-x86 from 1.1.0 (both exist in 1.1.x).
    if (major, minor) < (1, 1):
        return "linux-elf"
    return "linux-x86"


def recipe(variant: Variant) -> Recipe:
    """The build recipe for a variant's OpenSSL era."""
    major, minor, _ = variant.version.series
    era = (major, minor)
    opts: list[str] = [f"--prefix={PREFIX}", f"--openssldir={PREFIX}/ssl"]
    if era >= (1, 1):
        opts.append("--libdir=lib")
        opts.append("no-tests")
    opts.append("shared")
    if not variant.asm:
        opts.append("no-asm")
    cflags = ["-Wa,--noexecstack"]
    if variant.arch == "i386":
        cflags.append("-m32")
    if variant.march:
        cflags.append(f"-march={variant.march}")
    configure = ("perl", "./Configure", configure_target(variant), *opts, *variant.configure,
                 *cflags)
    pre_make: list[tuple[str, ...]] = []
    if era < (1, 1):
        pre_make.append(("make", "depend"))
    install = ("make", "install_sw")
    return Recipe(configure=configure, pre_make=tuple(pre_make), install=install,
                  parallel_make=era >= (1, 1))


def toolchain_dockerfile(base_image: str) -> str:
    return _env().get_template("toolchain.Dockerfile.j2").render(
        base_image=base_image, packages=TOOLCHAIN_PACKAGES)


def toolchain_tag(base_image: str) -> str:
    text = toolchain_dockerfile(base_image)
    slug = base_image.replace("/", "-").replace(":", "-").replace("@", "-")
    return f"openssl-matrix/toolchain:{slug}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def tarball_name(variant: Variant) -> str:
    return f"openssl-{variant.version.version}.tar.gz"


def render(variant: Variant, *, patches: tuple[str, ...] = ()) -> Rendered:
    """Render the variant's Dockerfile. Pure: the same variant gives the same text."""
    r = recipe(variant)
    tc_tag = toolchain_tag(variant.base_image)
    context: dict[str, Any] = {
        "variant": variant,
        "toolchain_tag": tc_tag,
        "tarball": tarball_name(variant),
        "patches": patches,
        "configure": list(r.configure),
        "configure_line": r.configure_line,
        "pre_make": [list(c) for c in r.pre_make],
        "install": list(r.install),
    }
    text = _env().get_template("openssl.Dockerfile.j2").render(**context)
    files = {"buildinfo.sh": TEMPLATES / "buildinfo.sh"}
    return Rendered(variant=variant, dockerfile=text, toolchain_tag=tc_tag,
                    toolchain_dockerfile=toolchain_dockerfile(variant.base_image),
                    recipe=r, context_files=files)
