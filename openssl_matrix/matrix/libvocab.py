"""The library suite's vocabulary: the harness's operations and the suite's options.

Kept apart from ``measure/library.py`` (which runs and reads the harness) so the matrix model can
check a ``kind: library`` suite without importing the measuring code. The names are the
harness's own (``resources/harness/libbench.c``, table ``OPS``/``MEM_OPS``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openssl_matrix.core.version import series


@dataclass(frozen=True)
class Operation:
    name: str
    family: str
    """handshake, resume, ssl-new, pkey-decode, fetch, cipher-setup, mac, rsa-sign,
    x509-verify, memory"""
    what: str
    tls13: bool = False


def _hs(proto: str, key: str, resume: bool) -> Operation:
    label = {"tls1.2": "TLS 1.2", "tls1.3": "TLS 1.3"}[proto]
    kind = "resumed (session ticket)" if resume else "full"
    return Operation(f"{'resume' if resume else 'handshake'}-{proto}-{key}",
                     "resume" if resume else "handshake",
                     f"one {kind} {label} handshake, {key} server key, client and server in "
                     "one thread over an in-memory transport (SSL_new to SSL_free)",
                     tls13=proto == "tls1.3")


OPERATIONS: dict[str, Operation] = {o.name: o for o in (
    *(_hs(p, k, r) for p in ("tls1.2", "tls1.3") for k in ("rsa2048", "ecdsap256")
      for r in (False, True)),
    Operation("ssl-new", "ssl-new", "SSL_new + SSL_free on a server SSL_CTX shared by the "
              "threads"),
    Operation("pkey-decode-pem-rsa2048", "pkey-decode",
              "PEM_read_bio_PrivateKey of an unencrypted PKCS#8 RSA-2048 key"),
    Operation("pkey-decode-der-rsa2048", "pkey-decode",
              "d2i_AutoPrivateKey of a PKCS#8 RSA-2048 key (DER)"),
    Operation("pkey-decode-pem-ecp256", "pkey-decode",
              "PEM_read_bio_PrivateKey of an unencrypted PKCS#8 EC P-256 key"),
    Operation("pkey-decode-der-ecp256", "pkey-decode",
              "d2i_AutoPrivateKey of a PKCS#8 EC P-256 key (DER)"),
    Operation("fetch-digest", "fetch", "a digest by name: EVP_MD_fetch(SHA2-256) + "
              "EVP_MD_free on 3.x, EVP_get_digestbyname(SHA256) before (the figure's api)"),
    Operation("fetch-cipher", "fetch", "a cipher by name: EVP_CIPHER_fetch(AES-128-GCM) + "
              "EVP_CIPHER_free on 3.x, EVP_get_cipherbyname before (the figure's api)"),
    Operation("cipher-setup", "cipher-setup", "EVP_EncryptInit_ex(AES-128-GCM) with key and "
              "IV, one 64-byte message and its tag, per message (context reused)"),
    Operation("hmac", "mac", "HMAC() one-shot, SHA-256, 32-byte key, 64-byte message"),
    Operation("cmac", "mac", "CMAC_CTX_new, CMAC_Init (AES-128-CBC), a 64-byte message, "
              "CMAC_Final, CMAC_CTX_free, per message"),
    Operation("rsa-sign", "rsa-sign", "EVP_PKEY_sign with a new EVP_PKEY_CTX: RSA-2048, "
              "PKCS#1 v1.5, SHA-256 digest"),
    Operation("x509-verify", "x509-verify", "X509_verify_cert of an RSA-2048 leaf against a "
              "store of its CA and 50 other CAs (new X509_STORE_CTX each)"),
    Operation("memory", "memory", "exact bytes through CRYPTO_set_mem_functions: allocated "
              "per full handshake, held per idle connection (server; client beside it), "
              "held per SSL_CTX"),
)}

#: What the ``memory`` operation runs (one process, the allocator hooks installed first).
MEMORY_OPS = (*(f"mem-handshake-{p}-{k}" for p in ("tls1.2", "tls1.3")
                for k in ("rsa2048", "ecdsap256")),
              *(f"mem-idle-{p}-{k}" for p in ("tls1.2", "tls1.3")
                for k in ("rsa2048", "ecdsap256")),
              "mem-ssl-ctx")

#: The harness exists from 1.1.0 (see harness.refusal); TLS 1.3 from 1.1.1.
TLS13_SINCE = (1, 1, 1)


@dataclass(frozen=True)
class LibraryOptions:
    """The library part of a suite (see docs/library.md)."""

    threads: tuple[int, ...] | None = (1, 2)
    """Thread counts; None: 1, 2, … up to the engine's CPUs (``threads: all``)."""

    def counts(self, cpus: int) -> tuple[int, ...]:
        return self.threads if self.threads is not None else tuple(range(1, max(1, cpus) + 1))

    def describe(self) -> dict[str, Any]:
        return {"threads": "all" if self.threads is None else list(self.threads)}


def expand(names: tuple[str, ...]) -> tuple[str, ...]:
    """A suite's ``algorithms`` as operations: ``all`` is every operation."""
    out: list[str] = []
    for n in names:
        out.extend(OPERATIONS if n == "all" else (n,))
    return tuple(dict.fromkeys(out))


def lacks(version: str, op: str) -> str | None:
    """Why ``version`` cannot run ``op`` (before anything runs), or None."""
    if OPERATIONS[op].tls13 and series(version) < TLS13_SINCE:
        return f"{op}: not measured: OpenSSL {version} has no TLS 1.3 (from 1.1.1)"
    return None
