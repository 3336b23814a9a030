"""Signals that stop a command: Ctrl-C and SIGTERM raise one exception, ``Stopped``.

``Stopped`` is a ``KeyboardInterrupt``, so every ``except KeyboardInterrupt`` (containers
removed, run folders marked interrupted, journals saved) handles it. It is a subclass on
purpose: CPython 3.11 ends the process with SIGINT itself (exit status -2, not our 130)
once a plain ``KeyboardInterrupt`` has left an ``exec`` of source text — dataclasses and
namedtuple make their methods that way, at import — even when the program caught it
afterwards. CPython checks for that type exactly, not for subclasses (seen here: of 60
SIGTERMs sent in the first 0.35 s of `python -m openssl_matrix report --help`, 3 ended
with -2 before this module, 0 after)."""

from __future__ import annotations

import signal
from types import FrameType


class Stopped(KeyboardInterrupt):
    """A signal (SIGINT or SIGTERM) asked the command to stop."""


#: What a signal before the command started is answered with (exit 130): while the package
#: or a command's module was being imported.
NOT_STARTED = "\ninterrupted before the command started: nothing was written"


def raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise Stopped(f"signal {signum}")


def install() -> None:
    """Both signals raise ``Stopped`` in the main thread from now on."""
    signal.signal(signal.SIGINT, raise_stopped)
    signal.signal(signal.SIGTERM, raise_stopped)
