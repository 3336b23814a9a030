"""The files that ship inside the package, found through :mod:`importlib.resources`.

Everything the tool reads from its own installation comes through here, so a wheel
installed anywhere carries it (``openssl_matrix/resources/``):

* ``dockerfiles/``: the Dockerfile templates, ``srcfacts.pl`` (the source-stage probe)
  and ``buildinfo.sh`` (what a build records inside the image);
* ``patches/``: the project's patches (a matrix may add its own: ``patches/`` beside the
  matrix file, and ``patches_dirs``);
* ``reports/``: the published reports transcribed as specs (``reports/`` beside the
  matrix file is searched first);
* ``templates/``: the report page's HTML templates;
* ``sweep-table.json``: the release sweep's table.

The user's own folders are found beside their matrix file by the modules that read them
(:func:`user_folder`); nothing here depends on the current folder.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from openssl_matrix.core.errors import FatalError

#: The folder, beside a matrix file, that holds a user's own patches.
USER_PATCHES = "patches"
#: The folder, beside a matrix file, that holds a user's own published-report specs.
USER_REPORTS = "reports"


def _root() -> Path:
    root = files("openssl_matrix").joinpath("resources")
    if not isinstance(root, Path) or not root.is_dir():
        raise FatalError(f"the package's resources are not a folder on disk ({root}): "
                         "install openssl-matrix as files (pip install, not a zip)")
    return root


def resource(*parts: str) -> Path:
    """The shipped file or folder ``resources/<parts>``."""
    return _root().joinpath(*parts)


def dockerfiles() -> Path:
    """The Dockerfile templates, srcfacts.pl and buildinfo.sh."""
    return resource("dockerfiles")


def project_patches() -> Path:
    """The patches the project ships."""
    return resource("patches")


def project_reports() -> Path:
    """The published reports the project ships, as specs."""
    return resource("reports")


def templates() -> Path:
    """The report page's templates."""
    return resource("templates")


def sweep_table() -> Path:
    """The release sweep's table (written by ``benchmarks/sweep.py``)."""
    return resource("sweep-table.json")


def user_folder(matrix_file: Path, name: str) -> Path | None:
    """The folder ``name`` beside ``matrix_file`` when there is one."""
    d = matrix_file.parent / name
    return d if d.is_dir() else None
