"""``invoke matrix pin VERSION --file PATH``: record the sha256 of a tarball you trust,
in the lock file beside the matrix."""

from __future__ import annotations

from pathlib import Path

from openssl_matrix.cli.paths import matrix_path
from openssl_matrix.cli.table import Command, Flag
from openssl_matrix.core.errors import ConfigError, UsageError
from openssl_matrix.images.sources import check_version, pin_source

COMMAND = Command("pin", "record the sha256 of a tarball you trust", "VERSION", "--file PATH",
                  flags=(
    Flag("force", False, "accept a tarball whose hash differs from the official release's"),
    Flag("file", "", "path of a tarball you trust"),
))


def run(*, target: str, matrix: str, results: str, file: str, force: bool) -> int:
    if not file:
        raise UsageError("`invoke matrix pin VERSION` needs --file PATH (a tarball you trust)")
    check_version(target)  # before the matrix: the version named is the first thing said
    lock = _pins_beside(matrix_path(matrix))
    digest = pin_source(target, Path(file), lock, force=force)
    print(f"pinned openssl {target}: sha256 {digest} (recorded in {lock})")
    return 0


def _pins_beside(matrix: Path) -> Path:
    """The lock (pins) file of an existing matrix file: ``m.yaml`` -> ``m.lock`` beside it.
    A mistyped --matrix is refused (a pin there would have no effect), as is a matrix whose
    lock file would be the matrix itself (``--matrix m.lock``)."""
    shown = str(matrix)[:200]
    if not matrix.is_file():
        raise ConfigError(f"{shown}: no such matrix file" if not matrix.exists() else
                          f"{shown}: not a regular file", hint="pin records the tarball's "
                          "sha256 in the lock file beside the matrix: give --matrix the "
                          "matrix.yaml you build with")
    lock = matrix.with_suffix(".lock")
    if lock.resolve() == matrix.resolve():
        raise ConfigError(f"{shown} is a lock file name, not a matrix (the pin would "
                          "overwrite it)", hint="give --matrix the matrix's .yaml file")
    return lock
