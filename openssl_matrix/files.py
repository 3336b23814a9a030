"""Writing and hashing files: the one atomic write and the one file hash of the package.

Every file the tool writes that another process (or the next run) reads is written with
:func:`atomic_write`: a temp file beside the target, flushed, fsynced and renamed over it,
so a reader sees the old file or the new one, never half. A kill leaves at most a
``.<name>.*.tmp`` file, which :meth:`ResultsTree.recover` removes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

_CHUNK = 1 << 20


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: Path, obj: Any) -> None:
    """``obj`` as indented, key-sorted JSON, written atomically."""
    atomic_write(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, as 64 lower-case hex digits."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
