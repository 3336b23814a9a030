"""The interleaving harness's image: ``pairbench.c`` with every compared variant's library.

One image per set of variants: ``FROM`` the first variant's image (its base system), the
harness compiled in that variant's toolchain image (gcc; it links only libdl: each side's
libcrypto is opened by path at run time), and each variant's ``/opt/openssl/lib`` copied
to ``/opt/pair/<variant>/lib``. The tag carries a hash of the variants' image tags (their
content hashes), the toolchain, this Dockerfile and the source, so a rebuilt variant or a
new harness gives a new image and nothing else is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from openssl_matrix.core import log
from openssl_matrix.core.errors import BuildError
from openssl_matrix.core.files import atomic_write
from openssl_matrix.core.resources import resource
from openssl_matrix.core.version import series
from openssl_matrix.engine.backend import Backend
from openssl_matrix.images.harness import require_toolchain
from openssl_matrix.images.render import toolchain_tag
from openssl_matrix.matrix.model import Variant
from openssl_matrix.results.filing import PAIRBENCH
from openssl_matrix.results.tree import ResultsTree

BINARY = "/usr/local/bin/openssl-matrix-pairbench"
SOURCE_NAME = "pairbench.c"
#: The oldest series the harness loads (EVP_MD_CTX_new and OpenSSL_version are 1.1.0's).
OLDEST = (1, 1, 0)


def source_text() -> str:
    return resource("harness", SOURCE_NAME).read_text(encoding="utf-8")


def library_path(variant: Variant) -> str:
    """Where the variant's libcrypto is in the image (its soname per series)."""
    v = series(variant.version.version)
    soname = "1.1" if v < (3, 0, 0) else str(v[0])
    return f"/opt/pair/{variant.id}/lib/libcrypto.so.{soname}"


def refusal(variant: Variant) -> str | None:
    """Why ``variant`` cannot be a side of an interleaved comparison, or None."""
    if series(variant.version.version) < OLDEST:
        return f"{variant.id}: OpenSSL older than 1.1.0 (the harness needs 1.1.0's EVP calls)"
    if variant.arch != "x86_64":
        return f"{variant.id}: {variant.arch} (the harness is built for x86_64 only)"
    return None


def dockerfile(tags: Sequence[tuple[str, str]], toolchain: str) -> str:
    """``tags``: (variant id, image tag) each; the first gives the runtime image."""
    compile_cmd = ["gcc", "-O2", "-Wall", "-o", "/src/openssl-matrix-pairbench",
                   f"/src/{SOURCE_NAME}", "-ldl"]
    lines = ["# openssl-matrix interleaving harness: pairbench.c and each variant's libcrypto"]
    lines += [f"FROM {tag} AS v{i}" for i, (_, tag) in enumerate(tags)]
    lines += [f"FROM {toolchain} AS compile", f"COPY {SOURCE_NAME} /src/{SOURCE_NAME}",
              f"RUN {json.dumps(compile_cmd)}", f"FROM {tags[0][1]}"]
    lines += [f"COPY --from=v{i} /opt/openssl/lib /opt/pair/{vid}/lib"
              for i, (vid, _) in enumerate(tags)]
    lines += [f"COPY --from=compile /src/openssl-matrix-pairbench {BINARY}", ""]
    return "\n".join(lines)


@dataclass(frozen=True)
class PairImage:
    tag: str
    built: bool


def _design(variants: Sequence[tuple[Variant, str]]) -> tuple[str, str, str, str]:
    """The image's toolchain, Dockerfile, harness source and content digest."""
    toolchain = toolchain_tag(variants[0][0].base_image)
    text = dockerfile([(v.id, tag) for v, tag in variants], toolchain)
    source = source_text()
    h = hashlib.sha256()
    for part in (toolchain, text, source):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return toolchain, text, source, h.hexdigest()[:12]


def pair_tag(variants: Sequence[tuple[Variant, str]]) -> str:
    """The tag of the harness image for ``(variant, image tag)`` each, built or not."""
    return f"openssl-matrix/pairbench:{_design(variants)[3]}"


def ensure_pair_image(backend: Backend, variants: Sequence[tuple[Variant, str]],
                      tree: ResultsTree, workdir: Path) -> PairImage:
    """The harness image holding every ``(variant, image tag)``, built if not on the engine."""
    if not variants:
        raise BuildError("no variant to compare", hint="bench at least one built variant")
    first = variants[0][0]
    tags = [(v.id, tag) for v, tag in variants]
    toolchain, text, source, digest = _design(variants)
    tag = f"openssl-matrix/pairbench:{digest}"
    if backend.image_id(tag):
        return PairImage(tag, built=False)
    require_toolchain(backend, toolchain, first.id, "the interleaving harness")
    context = workdir / "pairbench" / digest
    context.mkdir(parents=True, exist_ok=True)
    atomic_write(context / "Dockerfile", text)
    atomic_write(context / SOURCE_NAME, source)
    with log.step(f"interleaving harness for {len(tags)} variant(s) ({tag})"):
        backend.build(context, tag, log_path=tree.harness_log(PAIRBENCH, digest),
                      network="none", labels={"openssl-matrix.pairbench-of":
                                              ",".join(v for v, _ in tags)})
    return PairImage(tag, built=True)
