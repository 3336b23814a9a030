"""The tool's cache folder: one rule for everything it keeps between runs on this host.

Source tarballs (``sources/``), the compiled clock probe (``coreclock/``), crash logs
(``crashes/``) and, when the machine-wide folder cannot be written, the engine locks
(``locks/``) all live under the folder this returns, so that pointing one variable at a
writable place moves all of them together.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The folder's name under ``$XDG_CACHE_HOME`` or ``~/.cache``.
NAME = "openssl-matrix"


def cache_dir() -> Path:
    """``$OPENSSL_MATRIX_CACHE``, else ``$XDG_CACHE_HOME/openssl-matrix``, else
    ``~/.cache/openssl-matrix``. A relative ``XDG_CACHE_HOME`` is ignored, as the XDG
    base-directory spec says. Nothing is created here: each user makes its subfolder."""
    explicit = os.environ.get("OPENSSL_MATRIX_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / NAME
    return Path.home() / ".cache" / NAME
