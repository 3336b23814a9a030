"""The TLS vocabulary a matrix names: protocols (and which releases have them), server
keys, modes and pinnings of a ``kind: tls`` suite, and its options.

Data only; the runner that uses it is :mod:`openssl_matrix.measure.tls`. Kept here, in the
matrix layer, because loading a matrix and a published-report spec checks names against
it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openssl_matrix.matrix.pkey import Series


@dataclass(frozen=True)
class Protocol:
    name: str
    label: str
    since: Series
    until: Series | None
    """First version without it (None: still there)."""
    server_flag: str
    cipher: dict[str, str]
    """Key type -> the one cipher (suite) the run allows."""
    group: str
    """The key-exchange group, as the figure names it."""
    tls13: bool = False


PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (
    Protocol("tls1.3", "TLS 1.3", (1, 1, 1), None, "-tls1_3",
             {"rsa2048": "TLS_AES_128_GCM_SHA256", "ecdsap256": "TLS_AES_128_GCM_SHA256"},
             "X25519", tls13=True),
    Protocol("tls1.2", "TLS 1.2", (1, 0, 1), None, "-tls1_2",
             {"rsa2048": "ECDHE-RSA-AES128-GCM-SHA256",
              "ecdsap256": "ECDHE-ECDSA-AES128-GCM-SHA256"}, "P-256"),
    Protocol("tls1.0", "TLS 1.0 (the newest protocol 0.9.8 has)", (0, 9, 8), None, "-tls1",
             {"rsa2048": "AES128-SHA", "ecdsap256": "ECDHE-ECDSA-AES128-SHA"}, "P-256"),
)}


KEYS = ("rsa2048", "ecdsap256")
MODES = ("new", "reuse")
PINNINGS = ("same-core", "cross-core")
OPERATION = {"new": "handshake", "reuse": "resume"}


@dataclass(frozen=True)
class TlsOptions:
    """The TLS part of a suite (see docs/matrix.md)."""

    protocols: tuple[str, ...] = ("tls1.2", "tls1.3")
    modes: tuple[str, ...] = MODES
    pinning: tuple[str, ...] = ("cross-core",)
    seconds: int = 3

    def describe(self) -> dict[str, Any]:
        return {"protocols": list(self.protocols), "modes": list(self.modes),
                "pinning": list(self.pinning), "seconds": self.seconds}
