"""The one wall clock of the package: every timestamp the tool files comes from here.

The wall clock can jump (NTP stepping it, a VM restored from a snapshot, a user setting
the date): :func:`wall` is the one place it is read, so that what depends on it can be
tried with a clock that jumps (tests/fake/test_hostile_clock.py, through
:func:`read_from`: a jump is the whole machine's, so is the switch). Durations and waits
use ``time.monotonic``, which never jumps; what must stay in order across a jump (a
tree's session ids) is kept in order by the tree (``results.tree``), not by this clock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import datetime, timezone

#: The wall clocks :func:`read_from` put in place, the innermost last (none: the real one).
_sources: list[Callable[[], datetime]] = []


def wall() -> datetime:
    """The current UTC time (aware)."""
    return _sources[-1]() if _sources else datetime.now(timezone.utc)


@contextlib.contextmanager
def read_from(source: Callable[[], datetime]) -> Iterator[None]:
    """Within this block the wall clock is ``source`` (aware UTC times) for every reader
    in the process, as a clock stepped by NTP or a user would be: the hostile-clock tests'
    one way in, instead of a module attribute patched. Blocks nest."""
    _sources.append(source)
    try:
        yield
    finally:
        _sources.remove(source)


def now(timespec: str = "milliseconds") -> str:
    """The current UTC time as ISO 8601 (``2026-11-30T19:29:15.123+00:00``)."""
    return wall().isoformat(timespec=timespec)


def epoch_ms() -> int:
    """Milliseconds since the Unix epoch, by the wall clock."""
    return int(wall().timestamp() * 1000)
