"""The parser's fast paths, and the one switch that turns them off.

The paste lexer reads a row of the symmetric table by one match and replays a line it has
read before from a cache (parse/lexlines.py); the line reader keeps each distinct line's
shape and builds a row of common cells by one match (parse/shapes.py, parse/lines.py).
Each must give exactly what the slow path gives: ``tests/unit/test_parse_shapes.py``
parses every fixture and random pastes both ways and compares. :func:`slow_paths` is that
test's way in — a scoped block, like ``core.files.write_faults``, not an attribute a test
assigns: inside it no fast path is taken and no cache is read or filled (the caches are
emptied on entering and leaving, so nothing kept in one mode is read in the other).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


class _Switch:
    """Whether the fast paths are on (read per line: one attribute look-up)."""

    __slots__ = ("on",)

    def __init__(self) -> None:
        self.on = True


FAST = _Switch()
#: Emptiers of the caches the fast paths keep (each module registers its own).
_CLEARERS: list[Callable[[], None]] = []


def register_cache(clear: Callable[[], None]) -> None:
    _CLEARERS.append(clear)


@contextmanager
def slow_paths() -> Iterator[None]:
    """Parse without the fast paths and their caches for the block's duration."""
    for clear in _CLEARERS:
        clear()
    FAST.on = False
    try:
        yield
    finally:
        FAST.on = True
        for clear in _CLEARERS:
            clear()
