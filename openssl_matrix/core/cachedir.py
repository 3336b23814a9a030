"""The tool's cache folder: one rule for everything it keeps between runs on this host.

Source tarballs (``sources/``), the compiled clock probe (``coreclock/``), crash logs
(``crashes/``) and, when the machine-wide folder cannot be written, the engine locks
(``locks/``) all live under the folder this returns, so that pointing one variable at a
writable place moves all of them together. The rule itself (``$OPENSSL_MATRIX_CACHE``,
else ``$XDG_CACHE_HOME/openssl-matrix``, else ``~/.cache/openssl-matrix``) is part of the
settings' resolution, :mod:`openssl_matrix.core.settings`.
"""

from __future__ import annotations

from pathlib import Path

from openssl_matrix.core.settings import CACHE_NAME as NAME
from openssl_matrix.core.settings import environment_settings

__all__ = ["NAME", "cache_dir"]


def cache_dir() -> Path:
    """The cache folder the settings resolve to. Nothing is created here: each user makes
    its subfolder."""
    return environment_settings().cache
