"""One container command of a bench run (an ``openssl speed`` command, or the TLS
script of :mod:`openssl_matrix.measure.tlsbench`), and the wrapper a speed command runs in.

Below both planners (:mod:`~openssl_matrix.measure.speedcmd` for speed and pkey suites,
:mod:`~openssl_matrix.measure.tlsbench` for TLS), so neither imports the other's module
for the type.
"""

from __future__ import annotations

from dataclasses import dataclass

from openssl_matrix.matrix.model import Mask
from openssl_matrix.measure.hostacct import SAMPLE_FUNCTION

#: The wrapper every speed invocation runs in: a host sample (``hostacct``) just before
#: and just after speed, then the shell's ``times``: the user and system CPU seconds of
#: speed and its children (the time-basis guard).
SPEED_WRAPPER = (SAMPLE_FUNCTION + '; _hs 0; openssl "$@"; rc=$?; _hs 1; '
                 'echo +CPUTIMES >&2; times >&2; exit $rc')
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
