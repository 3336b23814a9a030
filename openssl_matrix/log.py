"""The one logger: timed steps, warnings and errors on stderr, colour only on a TTY."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


def _tty() -> bool:
    return sys.stderr.isatty()


def _paint(text: str, code: str) -> str:
    return f"\033[{code}m{text}\033[0m" if _tty() else text


def info(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def warn(message: str) -> None:
    print(_paint(f"warning: {message}", "33"), file=sys.stderr, flush=True)


def error(message: str) -> None:
    print(_paint(f"error: {message}", "31"), file=sys.stderr, flush=True)


@contextmanager
def step(title: str) -> Iterator[None]:
    """Print ``title``, run the body, then ``done ✓ (Ns)`` or ``failed ✕ (Ns)``."""
    start = time.monotonic()
    info(f"▸ {title} …")
    try:
        yield
    except BaseException:
        info(_paint(f"  {title}: failed ✕ ({time.monotonic() - start:.1f}s)", "31"))
        raise
    info(_paint(f"  {title}: done ✓ ({time.monotonic() - start:.1f}s)", "32"))
