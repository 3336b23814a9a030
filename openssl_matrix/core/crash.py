"""The last resort: an exception the tool did not expect becomes one line and a log.

``cli.dispatch`` turns every ``FatalError`` into its message and exit code. Anything
else is a bug: the user gets one line naming the command and the exception, the full
traceback goes to a crash log (``<cache>/crashes/``, the cache being
``core.cachedir.cache_dir()``; the system's temporary folder
when that cannot be written), and the exit code is ``INTERNAL_ERROR`` (70, EX_SOFTWARE).
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from datetime import datetime, timezone
from pathlib import Path

from openssl_matrix.core.cachedir import cache_dir
from openssl_matrix.core.errors import INTERNAL_ERROR
from openssl_matrix.core.names import clip


def _folders() -> list[Path]:
    return [cache_dir() / "crashes", Path(tempfile.gettempdir())]


def write_crash_log(command: str, exc: BaseException) -> Path | None:
    """The traceback of ``exc`` in a new file; its path (None if nothing could be written)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    text = (f"openssl-matrix crash: invoke matrix {command}\n"
            f"at {stamp}, pid {os.getpid()}, python {sys.version.split()[0]}\n"
            f"argv: {sys.argv!r}\n\n"
            + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    for folder in _folders():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=f"openssl-matrix-crash-{stamp}-",
                                        suffix=".log", dir=folder)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            return Path(name)
        except OSError:
            continue
    return None


def crash_line(command: str, exc: BaseException, log: Path | None) -> str:
    where = f"traceback in {log}" if log else "no crash log could be written"
    return (f"internal error in `invoke matrix {command}`: {type(exc).__name__}: "
            f"{clip(str(exc), 160)[1:-1]} ({where}; exit {INTERNAL_ERROR}; this is a bug "
            "in openssl-matrix: please report it with that file)")
