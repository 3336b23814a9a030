"""One container command of a bench run (an ``openssl speed`` command, or the TLS
script of :mod:`openssl_matrix.measure.tlsbench`), the wrapper a speed command runs in, and
the reading of the CPU times that wrapper prints (``split_times``: the time-basis guard's
input, which the release sweep reads too).

Below both planners (:mod:`~openssl_matrix.measure.speedcmd` for speed and pkey suites,
:mod:`~openssl_matrix.measure.tlsbench` for TLS), so neither imports the other's module
for the type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from openssl_matrix.matrix.model import Mask
from openssl_matrix.measure.hostacct import SAMPLE_FUNCTION

#: Marker line the bench wrapper prints to stderr before the shell's ``times`` output.
TIMES_MARKER = "+CPUTIMES"
_TIMES_RE = re.compile(r"(\d+)m(\d+(?:\.\d+)?)s\s+(\d+)m(\d+(?:\.\d+)?)s")


@dataclass(frozen=True)
class CpuTimes:
    """User and system CPU seconds of ``openssl speed`` (and any children it forked)."""

    user: float
    system: float


_ONE_TIME_RE = re.compile(r"(\d+)m(\d+(?:\.\d+)?)s")


def times_line(text: str | None) -> CpuTimes | None:
    """One line of the shell's ``times`` (``0m1.230s 0m0.120s``: user, system), else None."""
    found = _ONE_TIME_RE.findall(text or "")
    if len(found) != 2:
        return None
    (mu, su), (ms, ss) = found
    return CpuTimes(int(mu) * 60 + float(su), int(ms) * 60 + float(ss))


def split_times(stderr: str) -> tuple[str, CpuTimes | None]:
    """Separate the wrapper's ``times`` report from speed's own stderr."""
    head, sep, tail = stderr.partition(TIMES_MARKER)
    if not sep:
        return stderr, None
    found = _TIMES_RE.findall(tail)
    if len(found) < 2:
        return head, None
    mu, su, ms, ss = found[1]  # line 1: the shell itself; line 2: its children
    return head, CpuTimes(int(mu) * 60 + float(su), int(ms) * 60 + float(ss))


#: The wrapper every speed invocation runs in: a host sample (``hostacct``) just before
#: and just after speed, then the shell's ``times``: the user and system CPU seconds of
#: speed and its children (the time-basis guard).
SPEED_WRAPPER = (SAMPLE_FUNCTION + '; _hs 0; openssl "$@"; rc=$?; _hs 1; '
                 f'echo {TIMES_MARKER} >&2; times >&2; exit $rc')
WRAPPER_NAME = "openssl-speed"


@dataclass(frozen=True)
class Invocation:
    """One ``openssl speed`` command of a run."""

    name: str
    mask: Mask
    algorithm: str
    command: tuple[str, ...]
    env: dict[str, str]
    engine: str | None = None
    path: str = "evp"
    direction: str = "encrypt"
    ia32cap: str | None = None
    """OPENSSL_ia32cap as given to this version (None: unmasked)."""
    multi: int | None = None
    algorithms: tuple[str, ...] = ()

    @property
    def exec_command(self) -> list[str]:
        """What the container runs: ``command`` inside the CPU-times wrapper."""
        return ["/bin/sh", "-c", SPEED_WRAPPER, WRAPPER_NAME, *self.command[1:]]
