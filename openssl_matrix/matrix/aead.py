"""AEAD suites: which ``openssl speed`` command measures an AEAD cipher on a version.

A ``kind: aead`` suite lists ciphers by their EVP names (``aes-128-gcm``,
``chacha20-poly1305`` ...). :func:`plan` picks the method per version and refuses, up
front and with the reason, what a version or build cannot measure (as pkey.py does for
public-key tests):

* ``aead`` — ``speed -aead -evp CIPHER`` (from 1.1.1): each record is set up and
  finished as TLS does it, with 13 bytes of additional data, at the record-like sizes
  2/31/136/1024/8192/16384 (or the suite's ``bytes``);
* ``evp`` — ``speed -evp CIPHER`` (before 1.1.1): the bare cipher through EVP.

The figures carry the method as their ``path`` (``aead`` or ``evp``), so the report never
puts one beside the other unlabelled. What each method really runs differs per version;
the facts below were read in the release trees (``apps/speed.c``) and say where.
"""

from __future__ import annotations

from dataclasses import dataclass

from openssl_matrix.core.version import series
from openssl_matrix.matrix.pkey import Refusal, Series, dotted


@dataclass(frozen=True)
class SpeedFact:
    """One fact about ``openssl speed``, with the trees it was checked in."""

    what: str
    since: Series | None
    seen: str


#: What ``openssl speed`` does with AEAD ciphers and several processes, per version.
#: "Checked" means read in that release tree's apps/speed.c (tarballs from Debian's
#: mirror: 1.1.1w, 3.0.20, 3.6.3; sha256 as in OPENSSL-FACTS.md) or seen in the output
#: of the 1.1.1w and 3.0.20 images here (tests/fixtures/speed/real-*/aead-*, multi*).
FACTS: dict[str, SpeedFact] = {f.what: f for f in (
    SpeedFact("-multi", (0, 9, 7),
              "1.1.1w CHANGES lists 'Add -multi and -mr options to \"openssl speed\"' "
              "under 0.9.6h -> 0.9.7; do_multi() in 1.1.1w, 3.0.20, 3.6.3 apps/speed.c"),
    SpeedFact("-seconds", (1, 1, 1), "OPT_SECONDS in 1.1.1w apps/speed.c (speedcmd.SPEED_OPTIONS)"),
    SpeedFact("-bytes", (1, 1, 1), "OPT_BYTES in 1.1.1w apps/speed.c (speedcmd.SPEED_OPTIONS)"),
    SpeedFact("-aead", (1, 1, 1),
              "OPT_AEAD and aead_lengths_list {2, 31, 136, 1024, 8192, 16384} in 1.1.1w "
              "apps/speed.c; -aead with -bytes keeps the one size (lengths == lengths_list "
              "test); 3.0.20 and 3.6.3 refuse -aead with a cipher lacking "
              "EVP_CIPH_FLAG_AEAD_CIPHER ('is not an AEAD cipher')"),
    SpeedFact("-decrypt", (0, 9, 8), "OPT_DECRYPT in 1.1.1w, 3.0.20, 3.6.3 apps/speed.c"),
    SpeedFact("-evp aes-128-gcm", (1, 0, 1),
              "AES-GCM through EVP came with 1.0.1 (1.1.1w CHANGES: 'Add GCM support to TLS "
              "library' under 1.0.0h -> 1.0.1; OPENSSL-FACTS.md); no pre-1.1.1 tree can be "
              "fetched here to read its apps/speed.c"),
    SpeedFact("-evp chacha20-poly1305", (1, 1, 0),
              "1.1.1w CHANGES: 'Support for ChaCha20 and Poly1305 added to libcrypto and "
              "libssl' under 1.0.2h -> 1.1.0; no-chacha / no-poly1305 remove it"),
    SpeedFact("aes-ocb", (1, 1, 0),
              "1.1.1w CHANGES: 'Added support for OCB mode' under 1.0.2h -> 1.1.0; no-ocb "
              "removes it"),
    SpeedFact("aes-ccm loop", (1, 1, 1),
              "EVP_Update_loop_ccm (one message per call, as CCM cannot stream) in 1.1.1w "
              "apps/speed.c; not verified for 1.1.0 (no tree here), so CCM is measured from "
              "1.1.1 only"),
    SpeedFact("1.1.1 aead loop", (1, 1, 1),
              "1.1.1w EVP_Update_loop_aead: per record EVP_*Init_ex(iv), 13-byte AAD, "
              "Update, Final; used for ciphers with EVP_CIPH_FLAG_AEAD_CIPHER (GCM, OCB, "
              "ChaCha20-Poly1305); decrypting sets a fake tag, so Final fails but the "
              "record is counted. Without -aead GCM streams through EVP_Update_loop (no "
              "tag, no AAD)"),
    SpeedFact("3.x ae loop", (3, 0, 0),
              "3.0.20 and 3.6.3 EVP_Update_loop_aead_enc/_dec: GCM, CCM, OCB (and SIV) are "
              "always run per record with IV and tag, with or without -aead; -aead adds "
              "the 13-byte AAD and the record sizes; decryption uses a tag made at set-up "
              "and counts only records whose tag verified (the fix OPENSSL-FACTS.md names "
              "as openssl PR #25823; 3.6.3 CHANGES: 'Fixed benchmarking for AEAD ciphers' "
              "under 3.4 -> 3.5.0)"),
    SpeedFact("3.x chacha20-poly1305 streams", (3, 0, 0),
              "3.0.20 and 3.6.3: ChaCha20-Poly1305's mode is 0 (not GCM/CCM/OCB/SIV, "
              "providers/implementations/ciphers/cipher_chacha20_poly1305.c), so speed "
              "runs it through EVP_Update_loop even with -aead: a stream without per-record "
              "tag or AAD; -aead changes only the sizes"),
    SpeedFact("-multi parent sums", (0, 9, 7),
              "do_multi(): each child runs in -mr mode with usertime = 0 (wall clock), its "
              "stdout is a pipe the parent reads child by child, echoing 'Got: ... from N' "
              "and adding each +F value per size (+F2 RSA sign/verify rates likewise); the "
              "parent prints its own table without the 'type' header (pr_header is counted "
              "after do_multi returns), in 1.1.1w with the EVP row named 'evp', in 3.x "
              "with the cipher's name (1.1.1w, 3.0.20 apps/speed.c; real outputs here)"),
    SpeedFact("-multi -aead sizes", (1, 1, 1),
              "-aead switches to the record sizes inside each child, after the fork: the "
              "children's 'Got: +H:2:31:136:...' say the sizes; a -mr parent prints no +H "
              "(real 1.1.1w output here)"),
)}


@dataclass(frozen=True)
class AeadCipher:
    name: str
    """The EVP name (``openssl speed -evp NAME``); also the figures' algorithm id."""
    family: str
    """gcm, ccm, ocb, chacha-poly."""
    since: Series
    seen: str
    removed_by: tuple[str, ...] = ()
    """Configure options that leave it out of the build."""
    aes: bool = True
    """Uses AES (and so AES-NI); ChaCha20-Poly1305 does not."""


ALGORITHMS: dict[str, AeadCipher] = {c.name: c for c in (
    AeadCipher("aes-128-gcm", "gcm", (1, 0, 1), FACTS["-evp aes-128-gcm"].seen),
    AeadCipher("aes-256-gcm", "gcm", (1, 0, 1), FACTS["-evp aes-128-gcm"].seen),
    AeadCipher("chacha20-poly1305", "chacha-poly", (1, 1, 0),
               FACTS["-evp chacha20-poly1305"].seen, ("no-chacha", "no-poly1305"),
               aes=False),
    AeadCipher("aes-128-ccm", "ccm", (1, 1, 1), FACTS["aes-ccm loop"].seen),
    AeadCipher("aes-256-ccm", "ccm", (1, 1, 1), FACTS["aes-ccm loop"].seen),
    AeadCipher("aes-128-ocb", "ocb", (1, 1, 0), FACTS["aes-ocb"].seen, ("no-ocb",)),
    AeadCipher("aes-256-ocb", "ocb", (1, 1, 0), FACTS["aes-ocb"].seen, ("no-ocb",)),
)}

AEAD_SINCE: Series = (1, 1, 1)


@dataclass(frozen=True)
class AeadRun:
    """One cipher as measured on a version."""

    algorithm: str
    method: str
    """``aead`` (speed -aead -evp) or ``evp`` (speed -evp)."""
    args: tuple[str, ...]
    caveat: str | None = None
    """What this method really runs on this version, where it is not what the name says."""


@dataclass(frozen=True)
class AeadPlan:
    version: str
    runs: tuple[AeadRun, ...]
    refused: tuple[Refusal, ...]
    notes: tuple[str, ...] = ()


def unknown(names: tuple[str, ...] | list[str]) -> list[str]:
    """The names no entry of the table knows (for the matrix loader)."""
    return [n for n in names if n not in ALGORITHMS]


#: The method (and figures' path) of ``speed -aead``; plain EVP's is ``evp``. A method,
#: named like the ``aead`` suite kind that uses it where the version has it.
AEAD_METHOD = "aead"


def method_for(version: str) -> str:
    """``aead`` where speed has -aead (1.1.1 on), else ``evp``."""
    return AEAD_METHOD if series(version) >= AEAD_SINCE else "evp"


def plan(version: str, algorithms: tuple[str, ...] | list[str],
         configure: tuple[str, ...] | list[str] = ()) -> AeadPlan:
    """Spell each cipher for ``version`` with its method, or refuse it with the reason."""
    v = series(version)
    method = method_for(version)
    runs: list[AeadRun] = []
    refused: list[Refusal] = []
    notes: list[str] = []
    if method == "evp":
        notes.append(f"-aead is not in {version} (from {dotted(AEAD_SINCE)}; "
                     f"{FACTS['-aead'].seen.split(';')[0]}): the ciphers were measured "
                     "through plain EVP (speed -evp), the bare cipher without per-record "
                     "set-up, tag or additional data; figures are labelled evp")
    for name in algorithms:
        c = ALGORITHMS.get(name)
        if c is None:
            refused.append(Refusal(name, "no AEAD cipher of that name is known (known: "
                                   + ", ".join(ALGORITHMS) + ")"))
            continue
        if v < c.since:
            refused.append(Refusal(name, f"OpenSSL {version} cannot measure it (from "
                                   f"{dotted(c.since)}; source: {c.seen})"))
            continue
        off = [opt for opt in configure if opt in c.removed_by]
        if off:
            refused.append(Refusal(name, f"this build was configured with {', '.join(off)}"))
            continue
        caveat = None
        if method == AEAD_METHOD and c.family == "chacha-poly" and v >= (3, 0, 0):
            caveat = ("3.x speed streams ChaCha20-Poly1305 through its plain EVP loop even "
                      "with -aead (no per-record tag or additional data; "
                      f"{FACTS['3.x chacha20-poly1305 streams'].seen.split(':')[0]})")
        elif method == AEAD_METHOD and c.family == "ccm" and v < (3, 0, 0):
            caveat = ("1.1.1 speed runs CCM through its own loop without the 13-byte "
                      "additional data, -aead or not (EVP_Update_loop_ccm)")
        args = ("-aead", "-evp", name) if method == AEAD_METHOD else ("-evp", name)
        runs.append(AeadRun(name, method, args, caveat))
    return AeadPlan(version, tuple(runs), tuple(refused), tuple(notes))


def decrypt_caveat(version: str, method: str) -> str | None:
    """What decrypting through ``method`` measures on ``version``, where it is not a
    verified decryption."""
    v = series(version)
    if method == AEAD_METHOD and v < (3, 0, 0):
        return ("1.1.1 speed -aead -decrypt sets a made-up tag: every record's tag check "
                "fails and the record is counted anyway (the work is done; 3.x decrypts "
                "with a real tag and counts verified records only)")
    if method == "evp":
        return "plain EVP decryption streams the cipher without checking a tag"
    return None
