"""The one logger: timed steps, warnings and errors on stderr, colour only on a TTY."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

_sink = threading.local()


@contextmanager
def to(write: Callable[[str], None]) -> Iterator[None]:
    """Send this thread's log lines to ``write`` (one line each, no colour) instead of
    stderr: the lab runs an engine's work in a thread when testing with fakes."""
    old = getattr(_sink, "write", None)
    _sink.write = write
    try:
        yield
    finally:
        _sink.write = old


def _stream() -> TextIO:
    return sys.stderr


def _tty() -> bool:
    return getattr(_sink, "write", None) is None and _stream().isatty()


def _emit(text: str) -> None:
    write = getattr(_sink, "write", None)
    if write is not None:
        for line in text.splitlines() or [""]:
            write(line)
        return
    print(text, file=_stream(), flush=True)


def _paint(text: str, code: str) -> str:
    return f"\033[{code}m{text}\033[0m" if _tty() else text


def info(message: str) -> None:
    _emit(message)


def warn(message: str) -> None:
    _emit(_paint(f"warning: {message}", "33"))


def error(message: str) -> None:
    _emit(_paint(f"error: {message}", "31"))


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


class ProgressLine:
    """A progress line for long work: ``drawing charts: 37/154 (12.3s)``.

    On a terminal the line is redrawn in place; elsewhere (a log file, CI) a line is
    printed at most every ``every`` seconds, and always the last one.
    """

    def __init__(self, title: str, total: int, every: float = 5.0) -> None:
        self.title = title
        self.total = total
        self.every = every
        self.done = 0
        self.start = time.monotonic()
        self._last = self.start

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def line(self) -> str:
        return f"  {self.title}: {self.done}/{self.total} ({self.elapsed:.1f}s)"

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if _tty():
            end = "\n" if self.done >= self.total else ""
            print(f"\r{self.line()}\033[K", end=end, file=sys.stderr, flush=True)
        elif self.done >= self.total or now - self._last >= self.every:
            info(self.line())
            self._last = now
