"""The one wall clock of the package: every timestamp the tool files comes from here."""

from __future__ import annotations

from datetime import datetime, timezone


def now(timespec: str = "milliseconds") -> str:
    """The current UTC time as ISO 8601 (``2026-11-30T19:29:15.123+00:00``)."""
    return datetime.now(timezone.utc).isoformat(timespec=timespec)
