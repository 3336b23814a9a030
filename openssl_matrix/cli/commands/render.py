"""``invoke matrix render``: one Dockerfile per variant, deterministically."""

from __future__ import annotations

from pathlib import Path

from openssl_matrix.cli.shared import matrix_of
from openssl_matrix.cli.table import EVERY, ONLY, Command, Flag
from openssl_matrix.core.names import inside, safe_name
from openssl_matrix.core.outputs import RenderedFolder
from openssl_matrix.images.render import render as render_variant

COMMAND = Command("render", "write one Dockerfile per variant, deterministically", flags=(
    ONLY, EVERY,
    Flag("output", "", "write the Dockerfiles to this folder (default dockerfiles/rendered/)"),
))


def run(*, target: str, matrix: str, results: str, only: str, output: str,
        all: bool = False) -> int:
    m = matrix_of(matrix)
    out = Path(output or "dockerfiles/rendered")
    rendered = [(inside(out, out / f"{safe_name(v.id, 'variant id')}.Dockerfile"),
                 render_variant(v).dockerfile) for v in m.select(only or None, every=all)]
    folder = RenderedFolder(out)
    for path, text in rendered:  # every refusal before the first write
        folder.check(path, text)
    for path, text in rendered:
        folder.write(path, text)
        print(path)
    return 0
