"""The library harness image of a variant: ``libbench.c`` compiled against its /opt/openssl.

A variant's runtime image has no compiler (its last stage starts from the bare base
image), so the harness is compiled in the variant's toolchain image (gcc, the base's
libc) with the variant's /opt/openssl copied in, and the binary is copied into a
*sibling* image ``FROM`` the variant image. The sibling's tag carries a hash of the
variant image's tag (itself the variant's content hash), the toolchain tag, this
Dockerfile and the harness source: a new harness or a rebuilt variant gives a new
sibling, and the variant images' own content hash is untouched (nothing here enters
``render``'s digest, so no variant image is rebuilt because the harness changed).

The harness needs OpenSSL 1.1.0 or newer (see the source's opening comment); for an
older variant :func:`refusal` says why before anything is built.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from openssl_matrix.core import log
from openssl_matrix.core.errors import BuildError
from openssl_matrix.core.files import atomic_write
from openssl_matrix.core.resources import resource
from openssl_matrix.core.version import series
from openssl_matrix.engine.backend import Backend
from openssl_matrix.images.render import toolchain_tag
from openssl_matrix.matrix.model import Variant
from openssl_matrix.results.filing import HARNESS
from openssl_matrix.results.tree import ResultsTree

#: Where the binary is installed in the sibling image (on PATH there).
BINARY = "/usr/local/bin/openssl-matrix-libbench"
SOURCE_NAME = "libbench.c"
#: The oldest series the harness compiles against (checked: 1.1.1w, 3.0.20, 3.6.3 built
#: here; 1.1.0's API is what the harness's #if branches are written for).
OLDEST = (1, 1, 0)


def source_text() -> str:
    """The harness source shipped with the package."""
    return resource("harness", SOURCE_NAME).read_text(encoding="utf-8")


def refusal(version: str) -> str | None:
    """Why the harness cannot be built for ``version``, or None."""
    if series(version) < OLDEST:
        return (f"OpenSSL {version} is older than 1.1.0: the library harness needs 1.1.0's "
                "threading (no locking callbacks) and its CRYPTO_set_mem_functions "
                "signature (with file and line)")
    return None


def dockerfile(variant_tag: str, toolchain: str) -> str:
    """The sibling image's Dockerfile (exec-form RUN: no value meets a shell)."""
    compile_cmd = ["gcc", "-O2", "-g", "-Wall", "-pthread", "-I/opt/openssl/include",
                   "-o", "/src/openssl-matrix-libbench", f"/src/{SOURCE_NAME}",
                   "-L/opt/openssl/lib", "-L/opt/openssl/lib64",
                   "-Wl,-rpath,/opt/openssl/lib:/opt/openssl/lib64", "-lssl", "-lcrypto"]
    return "\n".join([
        "# openssl-matrix library harness: libbench.c against the variant's /opt/openssl",
        f"FROM {variant_tag} AS variant",
        f"FROM {toolchain} AS compile",
        "COPY --from=variant /opt/openssl /opt/openssl",
        f"COPY {SOURCE_NAME} /src/{SOURCE_NAME}",
        f"RUN {json.dumps(compile_cmd)}",
        'RUN ["/bin/sh", "-c", "LD_LIBRARY_PATH=/opt/openssl/lib:/opt/openssl/lib64 '
        '/src/openssl-matrix-libbench --list > /src/libbench-list.txt"]',
        f"FROM {variant_tag}",
        f"COPY --from=compile /src/openssl-matrix-libbench {BINARY}",
        "COPY --from=compile /src/libbench-list.txt /usr/local/share/openssl-matrix-libbench.txt",
        "",
    ])


@dataclass(frozen=True)
class HarnessImage:
    tag: str
    digest: str
    variant_tag: str
    built: bool
    """True: built by this call; False: already on the engine."""


def harness_digest(variant_tag: str, toolchain: str, source: str) -> str:
    h = hashlib.sha256()
    for part in (variant_tag, toolchain, dockerfile(variant_tag, toolchain), source):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:12]


def harness_tag(variant: Variant, digest: str) -> str:
    return f"openssl-matrix/libbench-{variant.id}:{digest}"


def ensure_harness(backend: Backend, variant: Variant, variant_tag: str, tree: ResultsTree,
                   workdir: Path) -> HarnessImage:
    """The harness image for the variant image ``variant_tag``, built if not on the engine.

    ``tree`` keeps the build log (``_builds/<variant>/harness-<digest>.log``); ``workdir``
    the context.
    """
    why = refusal(variant.version.version)
    if why is not None:
        raise BuildError(f"{variant.id}: no library harness: {why}",
                         hint="choose a variant of 1.1.0 or newer for a library suite")
    toolchain = toolchain_tag(variant.base_image)
    source = source_text()
    digest = harness_digest(variant_tag, toolchain, source)
    tag = harness_tag(variant, digest)
    if backend.image_id(tag):
        return HarnessImage(tag, digest, variant_tag, built=False)
    require_toolchain(backend, toolchain, variant.id, "the harness")
    context = workdir / "libbench" / digest
    context.mkdir(parents=True, exist_ok=True)
    atomic_write(context / "Dockerfile", dockerfile(variant_tag, toolchain))
    atomic_write(context / SOURCE_NAME, source)
    log_path = tree.harness_log(HARNESS, digest, variant.id)
    with log.step(f"library harness for {variant.id} ({tag})"):
        backend.build(context, tag, log_path=log_path, network="none",
                      labels={"openssl-matrix.harness-of": variant_tag,
                              "openssl-matrix.harness-source-sha256":
                              hashlib.sha256(source.encode()).hexdigest()})
    return HarnessImage(tag, digest, variant_tag, built=True)


def require_toolchain(backend: Backend, toolchain: str, variant_id: str, what: str) -> None:
    """Stop with what to do when the toolchain image ``what`` is compiled in is missing
    (``invoke matrix build`` of ``variant_id`` makes it)."""
    if not backend.image_id(toolchain):
        raise BuildError(f"{variant_id}: the toolchain image {toolchain} {what} is "
                         "compiled in is not on this engine",
                         hint=f"run `invoke matrix build --only '{variant_id}'` on this "
                         "engine (it makes the toolchain image), then bench again")
