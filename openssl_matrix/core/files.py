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
import stat
import tempfile
from pathlib import Path
from typing import Any

from openssl_matrix.core.outputs import refuse_special

_CHUNK = 1 << 20


def current_umask() -> int:
    """The process umask, read without changing it (os.umask would race other threads)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the new one, never half.

    Only a regular file (or a new name) is replaced: a device, a folder, a FIFO or a
    symbolic link at ``path`` is refused (the rename would replace the node itself). The
    file gets the mode of the file it replaces, else 0666 less the umask (mkstemp's 0600
    would make results unreadable to the rest of the team)."""
    refuse_special(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~current_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
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
    # allow_nan=False: NaN/Infinity are not JSON; every reader here would refuse them
    text = json.dumps(obj, indent=2, sort_keys=True, default=str, allow_nan=False)
    atomic_write(path, text + "\n")


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, as 64 lower-case hex digits."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
