"""Pure parser for the output of ``openssl s_time`` (0.9.8 to 3.x).

``s_time`` prints, for each phase it runs (``-new``: new sessions; ``-reuse``: one
session resumed again and again; neither: both, the reuse phase announced by ``Now
timing with session id reuse.``), a line ``Collecting connection statistics for N
seconds`` or ``starting``, one character per connection (``r``: the session was
resumed; ``t``: a new TLS 1.0 session, ``3``: SSLv3, ``*``: any other new session), and
two summary lines::

    1234 connections in 2.34s; 527.35 connections/user sec, bytes read 0
    1234 connections in 6 real seconds, 0 bytes read per connection

The first line's time is the client's **user CPU time**, not the elapsed time: its rate
hides every cycle the server spent (the time-basis trap of ``speed`` without
``-elapsed``). The second line's real seconds are whole seconds from ``time(NULL)``.
The format strings are the same in the apps/s_time.c of 1.0.1k, 1.0.2s and 1.1.0g and in
the 1.1.1w, 3.0.20 and 3.5.7 builds whose real output is under tests/fixtures/stime/
(3.x writes ``connections/user sec`` the same way). This module reads those lines; the
TLS suite (``tls.py``) divides the connection count by a wall time it measures itself.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

__all__ = ["STimePhase", "STimeRun", "parse_stime"]

_USER_RE = re.compile(
    r"^\s*(?P<n>\d+) connections in (?P<secs>[\d.]+)s; (?P<rate>[\d.]+|inf|-?nan) "
    r"connections/user sec, bytes read (?P<bytes>\d+)\s*$")
_REAL_RE = re.compile(
    r"^\s*(?P<n>\d+) connections in (?P<secs>-?\d+) real seconds"
    r"(?:, (?P<per>\d+) bytes read per connection)?\s*$")
_COLLECT_RE = re.compile(r"^\s*Collecting connection statistics for (?P<secs>\d+) seconds")
_REUSE_RE = re.compile(r"^\s*Now timing with session id reuse\.")
_TICKS_RE = re.compile(r"^[rt23*]+$")


@dataclass(frozen=True)
class STimePhase:
    """One phase: new sessions (``new``) or one resumed session (``reuse``)."""

    mode: str
    connections: int | None = None
    user_seconds: float | None = None
    user_rate: float | None = None
    real_seconds: int | None = None
    bytes_read: int | None = None
    bytes_per_connection: int | None = None
    resumed: int = 0
    full: int = 0
    requested_seconds: int | None = None


@dataclass(frozen=True)
class STimeRun:
    phases: tuple[STimePhase, ...]
    warnings: tuple[str, ...] = ()

    def _last(self) -> STimePhase | None:
        return self.phases[-1] if self.phases else None

    @property
    def connections(self) -> int | None:
        p = self._last()
        return p.connections if p else None

    @property
    def real_seconds(self) -> int | None:
        p = self._last()
        return p.real_seconds if p else None

    @property
    def user_rate(self) -> float | None:
        p = self._last()
        return p.user_rate if p else None

    @property
    def resumed(self) -> int | None:
        p = self._last()
        return p.resumed if p else None

    @property
    def full(self) -> int | None:
        p = self._last()
        return p.full if p else None

    @property
    def bytes_per_connection(self) -> int | None:
        p = self._last()
        return p.bytes_per_connection if p else None

    def phase(self, mode: str) -> STimePhase | None:
        for p in self.phases:
            if p.mode == mode:
                return p
        return None


@dataclass
class _Open:
    mode: str
    requested: int | None = None
    resumed: int = 0
    full: int = 0
    user: re.Match[str] | None = None
    real: re.Match[str] | None = None
    extra: dict[str, int] = field(default_factory=dict)


def _close(p: _Open, warnings: list[str]) -> STimePhase:
    n = int(p.user.group("n")) if p.user else (int(p.real.group("n")) if p.real else None)
    if p.user and p.real and p.user.group("n") != p.real.group("n"):
        warnings.append(f"{p.mode}: the two summary lines disagree on the connection count "
                        f"({p.user.group('n')} and {p.real.group('n')})")
    if n is None:
        warnings.append(f"{p.mode}: no summary line (s_time stopped before printing one?)")
    rate = None
    if p.user:
        try:
            rate = float(p.user.group("rate"))
        except ValueError:
            rate = None
        if rate is not None and not math.isfinite(rate):
            # "inf" (0.00 s of user time, 1.0.2u) or "nan": no rate; JSON has no such number
            rate = None
    if n is not None and p.resumed + p.full and p.resumed + p.full != n:
        warnings.append(f"{p.mode}: {p.resumed + p.full} progress marks for {n} connections")
    return STimePhase(
        mode=p.mode, connections=n,
        user_seconds=float(p.user.group("secs")) if p.user else None, user_rate=rate,
        real_seconds=int(p.real.group("secs")) if p.real else None,
        bytes_read=int(p.user.group("bytes")) if p.user else None,
        bytes_per_connection=int(p.real.group("per")) if p.real and p.real.group("per")
        else None,
        resumed=p.resumed, full=p.full, requested_seconds=p.requested)


def parse_stime(text: str) -> STimeRun:
    """Read every phase of one ``s_time`` run's stdout."""
    phases: list[STimePhase] = []
    warnings: list[str] = []
    cur: _Open | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        m = _COLLECT_RE.match(line)
        if m:
            if cur is not None:
                phases.append(_close(cur, warnings))
            cur = _Open("new", requested=int(m.group("secs")))
            continue
        if _REUSE_RE.match(line):
            if cur is not None:
                phases.append(_close(cur, warnings))
            cur = _Open("reuse")
            continue
        if line.strip() == "starting":
            if cur is None or cur.mode != "reuse" or cur.resumed or cur.full:
                if cur is not None:
                    phases.append(_close(cur, warnings))
                cur = _Open("reuse")
            continue
        if cur is None:
            continue
        stripped = line.strip()
        um = _USER_RE.match(line)
        if um:
            cur.user = um
            continue
        rm = _REAL_RE.match(line)
        if rm:
            cur.real = rm
            continue
        if stripped and _TICKS_RE.match(stripped):
            cur.resumed += stripped.count("r")
            cur.full += len(stripped) - stripped.count("r")
    if cur is not None:
        phases.append(_close(cur, warnings))
    if not phases:
        warnings.append("no s_time phase found in the output")
    return STimeRun(tuple(phases), tuple(warnings))
