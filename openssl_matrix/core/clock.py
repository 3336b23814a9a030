"""The one wall clock of the package: every timestamp the tool files comes from here.

The wall clock can jump (NTP stepping it, a VM restored from a snapshot, a user setting
the date): :func:`wall` is the one place it is read, so that what depends on it can be
tried with a clock that jumps (tests/unit/test_hostile_clock.py). Durations and waits
use ``time.monotonic``, which never jumps; what must stay in order across a jump (a
tree's session ids) is kept in order by the tree (``results.tree``), not by this clock.
"""

from __future__ import annotations

from datetime import datetime, timezone


def wall() -> datetime:
    """The current UTC time (aware)."""
    return datetime.now(timezone.utc)


def now(timespec: str = "milliseconds") -> str:
    """The current UTC time as ISO 8601 (``2026-11-30T19:29:15.123+00:00``)."""
    return wall().isoformat(timespec=timespec)


def epoch_ms() -> int:
    """Milliseconds since the Unix epoch, by the wall clock."""
    return int(wall().timestamp() * 1000)
