"""Public-key suites: which ``openssl speed`` argument measures an algorithm on a version.

A ``kind: pkey`` suite lists algorithms by a version-independent name (``rsa2048``,
``ecdsap256``, ``ecdhx25519``, ``ed25519``, ``ml-kem-768`` ...). :func:`plan` spells each
one as the version's ``openssl speed`` takes it, or refuses it up front with the reason
(the version's speed has no such test, or the build left the algorithm out), so a
missing algorithm is a note in the run, never a failed run.

The table is data: each entry names the first release whose ``apps/speed.c`` has the
test and where that was seen. Figures come back from the speed parser as operations per
second (``rsa-2048`` sign/verify, ``ecdh-x25519`` op, ``kem-ml-kem-768``
keygen/encaps/decaps ...).
"""

from __future__ import annotations

from dataclasses import dataclass

from openssl_matrix.core.version import series

Series = tuple[int, int, int]


def dotted(v: Series) -> str:
    """``(1, 1, 0)`` -> ``1.1.0``."""
    return ".".join(map(str, v))


@dataclass(frozen=True)
class PkAlgorithm:
    """One public-key test of ``openssl speed``."""

    name: str
    """The suite's name for it (version independent)."""
    figure: str
    """The algorithm id the speed parser gives its figures."""
    family: str
    """rsa, ecdsa, ecdh, eddsa, kem, sig."""
    since: Series
    """First release whose speed has it."""
    spellings: tuple[tuple[Series, str], ...]
    """(from version, speed argument), newest last."""
    operations: tuple[str, ...]
    seen: str
    """Where the spelling and first version were read."""
    needs: tuple[str, ...] = ()
    """Configure options that remove it (``no-ec`` ...)."""

    def spelling(self, version: Series) -> str:
        chosen = self.spellings[0][1]
        for first, arg in self.spellings:
            if version >= first:
                chosen = arg
        return chosen


_RSA_OPS = ("sign", "verify")
_SEEN_102 = ("apps/speed.c of 1.0.1k and 1.0.2s (its ECDSA/ECDH tests came with Sun's "
             "2002 contribution, in 0.9.8)")

ALGORITHMS: dict[str, PkAlgorithm] = {a.name: a for a in (
    PkAlgorithm("rsa2048", "rsa-2048", "rsa", (0, 9, 8), (((0, 9, 8), "rsa2048"),), _RSA_OPS,
                "apps/speed.c of 1.0.1k, 1.0.2s, 1.1.0g; 1.1.1w and 3.x images here",
                ("no-rsa",)),
    PkAlgorithm("rsa3072", "rsa-3072", "rsa", (1, 1, 0), (((1, 1, 0), "rsa3072"),), _RSA_OPS,
                "apps/speed.c: absent from 1.0.2s, present in 1.1.0g", ("no-rsa",)),
    PkAlgorithm("rsa4096", "rsa-4096", "rsa", (0, 9, 8), (((0, 9, 8), "rsa4096"),), _RSA_OPS,
                "apps/speed.c of 1.0.1k, 1.0.2s, 1.1.0g", ("no-rsa",)),
    PkAlgorithm("ecdsap256", "ecdsa-p256", "ecdsa", (0, 9, 8), (((0, 9, 8), "ecdsap256"),),
                ("sign", "verify"), _SEEN_102, ("no-ec", "no-ecdsa")),
    PkAlgorithm("ecdsap384", "ecdsa-p384", "ecdsa", (0, 9, 8), (((0, 9, 8), "ecdsap384"),),
                ("sign", "verify"), _SEEN_102, ("no-ec", "no-ecdsa")),
    PkAlgorithm("ecdsap521", "ecdsa-p521", "ecdsa", (0, 9, 8), (((0, 9, 8), "ecdsap521"),),
                ("sign", "verify"), _SEEN_102, ("no-ec", "no-ecdsa")),
    PkAlgorithm("ecdhp256", "ecdh-p256", "ecdh", (0, 9, 8), (((0, 9, 8), "ecdhp256"),),
                ("op",), _SEEN_102, ("no-ec", "no-ecdh")),
    PkAlgorithm("ecdhp521", "ecdh-p521", "ecdh", (0, 9, 8), (((0, 9, 8), "ecdhp521"),),
                ("op",), _SEEN_102, ("no-ec", "no-ecdh")),
    PkAlgorithm("ecdhx25519", "ecdh-x25519", "ecdh", (1, 1, 0), (((1, 1, 0), "ecdhx25519"),),
                ("op",), "apps/speed.c: absent from 1.0.2s, present in 1.1.0g",
                ("no-ec", "no-ecdh")),
    PkAlgorithm("ed25519", "ed25519", "eddsa", (1, 1, 1), (((1, 1, 1), "ed25519"),),
                ("sign", "verify"), "absent from 1.1.0g's apps/speed.c; `openssl speed "
                "ed25519` on the 1.1.1w image here", ("no-ec",)),
    PkAlgorithm("ml-kem-768", "kem-ml-kem-768", "kem", (3, 5, 0), (((3, 5, 0), "ML-KEM-768"),),
                ("keygen", "encaps", "decaps"), "ML-KEM arrived in the default provider "
                "in 3.5.0; `openssl speed ML-KEM-768` on the 3.5.7 image here",
                ("no-ml-kem",)),
    PkAlgorithm("ml-dsa-65", "sig-ml-dsa-65", "sig", (3, 5, 0), (((3, 5, 0), "ML-DSA-65"),),
                ("keygen", "sign", "verify"), "ML-DSA arrived in the default provider in "
                "3.5.0; `openssl speed ML-DSA-65` on the 3.5.7 image here", ("no-ml-dsa",)),
)}


@dataclass(frozen=True)
class Refusal:
    algorithm: str
    reason: str

    def note(self) -> str:
        return f"{self.algorithm}: not measured: {self.reason}"


@dataclass(frozen=True)
class PkPlan:
    """The speed arguments of a public-key suite on one version, and what was refused."""

    version: str
    runs: tuple[tuple[str, str, str], ...]
    """(suite name, speed argument, parser figure id) per algorithm measured."""
    refused: tuple[Refusal, ...]


def unknown(names: tuple[str, ...] | list[str]) -> list[str]:
    """The names no entry of the table knows (for the matrix loader)."""
    return [n for n in names if n not in ALGORITHMS]


def plan(version: str, algorithms: tuple[str, ...] | list[str],
         configure: tuple[str, ...] | list[str] = ()) -> PkPlan:
    """Spell each algorithm for ``version`` or refuse it with the reason."""
    v = series(version)
    runs: list[tuple[str, str, str]] = []
    refused: list[Refusal] = []
    for name in algorithms:
        alg = ALGORITHMS.get(name)
        if alg is None:
            refused.append(Refusal(name, "no public-key test of that name is known "
                                   f"(known: {', '.join(ALGORITHMS)})"))
            continue
        if v < alg.since:
            refused.append(Refusal(name, f"OpenSSL {version}'s speed has no such test (it "
                                   f"exists from {dotted(alg.since)}; source: {alg.seen})"))
            continue
        off = [opt for opt in configure if opt in alg.needs]
        if off:
            refused.append(Refusal(name, f"this build was configured with {', '.join(off)}"))
            continue
        runs.append((name, alg.spelling(v), alg.figure))
    return PkPlan(version, tuple(runs), tuple(refused))
