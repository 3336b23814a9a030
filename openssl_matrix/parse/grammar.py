"""The shapes of ``openssl speed`` output lines and speed.c's tables the reader needs.

The regular expressions of headers, symmetric and public-key rows, human and ``-mr``
progress lines and ``-mr`` records; speed.c's curve tables per series (an ``-mr`` ecdsa or
ecdh record carries only an index and a bit count); and the small number readers. Used by
the line reader (:mod:`openssl_matrix.parse.lines`) and the report reader
(:mod:`openssl_matrix.parse.paste`); the formats are described in
:mod:`openssl_matrix.parse`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from openssl_matrix.parse.figures import Figure, Progress, canonical_algorithm

#: Names of speed.c's legacy (low-level) table that contain no blank: on 1.x the EVP row
#: of a digest or rc4 prints the same name, so these alone cannot tell the path.
AMBIGUOUS_LEGACY_NAMES = frozenset(
    {
        "md2", "mdc2", "md4", "md5", "hmac(md5)", "sha1", "rmd160", "rc4", "sha256",
        "sha512", "whirlpool", "ghash", "rand",
    }
)  # fmt: skip
#: Index of the EVP row in speed.c's names[] table (``+F:<index>:``), where known from the
#: source: 1.0.0 to 1.1.1 (checked in 1.0.2 and 1.1.1w).
EVP_ROW_INDEX = 22


def canonical_curve(name: str) -> str:
    low = name.lower()
    match = re.fullmatch(r"nist([pkb]\d+)", low)
    return match.group(1) if match else low


#: speed.c's curve table (1.1.1 to 3.6): name and bits by index, used by ``+F4``/``+F5``.
CURVES_111 = (
    ("secp160r1", 160), ("nistp192", 192), ("nistp224", 224), ("nistp256", 256),
    ("nistp384", 384), ("nistp521", 521),
    ("nistk163", 163), ("nistk233", 233), ("nistk283", 283), ("nistk409", 409),
    ("nistk571", 571), ("nistb163", 163), ("nistb233", 233), ("nistb283", 283),
    ("nistb409", 409), ("nistb571", 571),
    ("brainpoolP256r1", 256), ("brainpoolP256t1", 256), ("brainpoolP384r1", 384),
    ("brainpoolP384t1", 384), ("brainpoolP512r1", 512), ("brainpoolP512t1", 512),
    ("X25519", 253), ("X448", 448),
)  # fmt: skip
#: The same table built with ``no-ec2m``: the binary curves are compiled out.
CURVES_111_NO_EC2M = CURVES_111[:6] + CURVES_111[16:]
#: 0.9.8 to 1.0.2: sixteen curves, no brainpool; 1.1.0 appends X25519 for ecdh.
CURVES_102 = CURVES_111[:16]
CURVES_110 = (*CURVES_102, ("X25519", 253))


def curve_tables(version: tuple[int, int, int] | None) -> list[tuple[tuple[str, int], ...]]:
    if version is None:
        return [CURVES_111, CURVES_111_NO_EC2M, CURVES_110]
    if version >= (1, 1, 1):
        return [CURVES_111, CURVES_111_NO_EC2M]
    if version >= (1, 1, 0):
        return [CURVES_110]
    return [CURVES_102]


def curve_by_index(index: int, bits: int, version: tuple[int, int, int] | None) -> str | None:
    names = set()
    for table in curve_tables(version):
        if index < len(table) and table[index][1] == bits:
            names.add(table[index][0])
    return names.pop() if len(names) == 1 else None


SYM_VALUE_RE = re.compile(r"(?:-?\d+\.\d+|inf|-?nan)k?", re.IGNORECASE)
SYM_HEADER_RE = re.compile(r"^\s*type\s+((?:\d+\s+bytes\s*)+)$")
VERSION_LINE_RE = re.compile(
    r"^\s*(OpenSSL\s+(\d+\.\d+\.\d+[a-z]*(?:[-+][\w.+-]*)?)\s+"
    r"(?:\d{1,2}\s+[A-Z][a-z]{2}\s+\d{4}|xx\s+XXX\s+xxxx)\b.*?)\s*$"
)
VERSION3_LINE_RE = re.compile(r"^\s*(version:\s*(\d+\.\d+\.\d+\S*))\s*$")
HEADER_FIELD_RES = (
    ("built_on", re.compile(r"^\s*built on:\s*(.*?)\s*$")),
    ("platform", re.compile(r"^\s*platform:\s*(.*?)\s*$")),
    ("options", re.compile(r"^\s*options:\s*(.*?)\s*$")),
    ("compiler", re.compile(r"^\s*compiler:\s*(.*?)\s*$")),
    ("timing_options", re.compile(r"^\s*available timing options:\s*(.*?)\s*$")),
    ("timing_function", re.compile(r"^\s*timing function used:\s*(.*?)\s*$")),
    ("cpuinfo", re.compile(r"^\s*CPUINFO:\s*(.*?)\s*$")),
)
ELAPSED_RE = re.compile(r"You have chosen to measure elapsed time")
NUMBERS_NOTE_RE = re.compile(r"^\s*The 'numbers' are in 1000s of bytes per second")



def _first_letter(regex: re.Pattern[str]) -> str:
    """The letter a line must start with (once stripped) for ``regex`` to match it."""
    body = regex.pattern.removeprefix(r"^\s*").lstrip("(")
    assert regex.pattern.startswith(r"^\s*") and body[:1].isalpha() and not regex.flags & re.I
    return body[0]


#: First letters of the header lines (version, fields, the 'numbers' note): a stripped
#: line starting with any other is none of them, without trying each pattern.
HEADER_LINE_STARTS = frozenset(
    _first_letter(r)
    for r in (VERSION_LINE_RE, VERSION3_LINE_RE, NUMBERS_NOTE_RE, *(r for _, r in HEADER_FIELD_RES))
)
PK_HEADERS = {
    ("sign", "verify", "sign/s", "verify/s"): "sign-verify",
    ("op", "op/s"): "op",
    (
        "sign", "verify", "encrypt", "decrypt", "sign/s", "verify/s", "encr./s", "decr./s",
    ): "rsa4",
    ("keygen", "encaps", "decaps", "keygens/s", "encaps/s", "decaps/s"): "kem",
    ("keygen", "signs", "verify", "keygens/s", "sign/s", "verify/s"): "sig",
}  # fmt: skip
PK_RSA_DSA_RE = re.compile(r"^\s*(?P<fam>rsa|dsa)\s+(?P<bits>\d+)\s+bits?\s+(?P<vals>.*)$")
PK_CURVE_RE = re.compile(
    r"^\s*(?P<bits>\d+)\s+bits?\s+(?P<fam>ecdsa|ecdh|EdDSA|SM2)\s+\((?P<curve>[^)\s]+)\)"
    r"\s+(?P<vals>.*)$"
)
PK_FFDH_RE = re.compile(r"^\s*(?P<bits>\d+)\s+bits?\s+(?P<fam>ffdh)\s+(?P<vals>.*)$")
PK_GENERIC_RE = re.compile(r"^\s*(?P<name>\S+)\s+(?P<vals>(?:\S+s\s+){3}(?:\S+\s+){2}\S+)\s*$")
FAMILY_OPERATIONS = {
    "rsa": ("sign", "verify"),
    "rsa4": ("sign", "verify", "encrypt", "decrypt"),
    "dsa": ("sign", "verify"),
    "ecdsa": ("sign", "verify"),
    "eddsa": ("sign", "verify"),
    "sm2": ("sign", "verify"),
    "ecdh": ("op",),
    "ffdh": ("op",),
    "kem": ("keygen", "encaps", "decaps"),
    "sig": ("keygen", "sign", "verify"),
}
MR_H_RE = re.compile(r"^\s*\+H((?::\d+)+)\s*$")
MR_F_RE = re.compile(r"^\s*\+F:(?P<idx>\d+):(?P<name>[^:]+)(?P<vals>(?::\S*)*)\s*$")
MR_FN_RE = re.compile(r"^\s*\+F(?P<kind>\d+):(?P<rest>\S*)\s*$")
MR_DT_RE = re.compile(r"^\s*\+D[TN]:(?P<label>[^:]+):(?P<secs>\d+):(?P<size>\d+)\s*$")
MR_DTP_RE = re.compile(r"^\s*\+D[TN]P:(?P<rest>\S.*?)\s*$")
MR_R_RE = re.compile(r"^\s*\+R(?P<kind>\d*):(?P<rest>\S.*?)\s*$")
PROGRESS_SYM_RE = re.compile(
    r"Doing (?P<label>[^\s:][^:]{0,80}?) (?:ops )?for (?P<secs>\d+)s on (?P<size>\d+) size "
    r"blocks: (?P<count>\d+) (?P<label2>[^\s:][^:]{0,80}?)(?:'s| ops) in "
    r"(?P<time>\d+(?:\.\d+)?)s"
)
PROGRESS_SYM_COUNT_RE = re.compile(
    r"Doing (?P<label>[^\s:][^:]{0,80}?) (?P<n>\d+) times on (?P<size>\d+) size blocks: "
    r"(?P<count>\d+) (?P<label2>[^\s:][^:]{0,80}?)'s in (?P<time>\d+(?:\.\d+)?)s"
)
PROGRESS_PK_RE = re.compile(
    r"Doing (?P<bits>\d+) bits? (?P<what>[^:]{0,60}?)(?:'s| ops) for (?P<secs>\d+)s: "
    r"(?P<count>\d+) (?P<result>[^:]{0,80}?) in (?P<time>\d+(?:\.\d+)?)s"
)
PROGRESS_KS_RE = re.compile(
    r"Doing (?P<name>\S+) (?P<op>keygen|encaps|decaps|signs|verify) ops for (?P<secs>\d+)s: "
    r"(?P<count>\d+) (?P=name) (?P<kind>KEM|signature) \S+ ops in (?P<time>\d+(?:\.\d+)?)s"
)


def matching_sym_progress(fig: Figure, suspects: Iterable[Progress]) -> Progress | None:
    for p in suspects:
        if (
            p.block_size == fig.block_size
            and p.family is None
            and (p.label == fig.label or canonical_algorithm(p.label) == fig.algorithm)
        ):
            return p
    return None


def pk_progress_kind(what: str) -> tuple[str | None, str | None]:
    """(family, operation) of a public-key progress description."""
    words = what.lower().split()
    if "rsa" in words:
        for candidate in ("encrypt", "decrypt"):
            if candidate in words:
                return "rsa", candidate
        if "sign" in words or "private" in words:
            return "rsa", "sign"
        return "rsa", "verify"
    for family in ("ecdsa", "dsa", "ecdh", "ffdh"):
        if family in words:
            if family in ("ecdh", "ffdh"):
                return family, "op"
            return family, "verify" if "verify" in words else "sign"
    operation = "verify" if "verify" in words else "sign"
    if any(w.startswith("ed25519") or w.startswith("ed448") for w in words):
        return "eddsa", operation
    if any("sm2" in w for w in words):
        return "sm2", operation
    return None, None


def int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def float_or_none(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def mr_pk_identity(
    kind: int, index: int, parts: list[str], version: tuple[int, int, int] | None
) -> tuple[int, str, int | None, str | None, list[str]] | None:
    """What a ``+F<kind>:<index>:...`` public-key record measured: ``(kind, family, bits,
    algorithm, values)``, the kind corrected for Tongsuo's SM2 under ``+F6``; the
    algorithm is None where the record does not name it (``+F9``/``+F10``: named later
    from the ``+DTP`` progress; ``+F4``/``+F5``: an index no curve table has). None for
    a kind speed never printed."""
    bits: int | None = None
    if kind in (2, 3, 8):
        family = {2: "rsa", 3: "dsa", 8: "ffdh"}[kind]
        bits = int_or_none(parts[1]) if len(parts) > 1 else None
        return kind, family, bits, f"{family}-{bits}" if bits is not None else None, parts[2:]
    if kind in (4, 5):
        family = "ecdsa" if kind == 4 else "ecdh"
        bits = int_or_none(parts[1]) if len(parts) > 1 else None
        curve = curve_by_index(index, bits, version) if bits is not None else None
        algorithm = f"{family}-{canonical_curve(curve)}" if curve else None
        return kind, family, bits, algorithm, parts[2:]
    if kind in (6, 7):
        bits = int_or_none(parts[1]) if len(parts) > 1 else None
        name = parts[2] if len(parts) > 2 else ""
        if name.lower() == "curvesm2":
            kind = 7  # Tongsuo's 1.1.1 printed SM2 under EdDSA's +F6
        family = "eddsa" if kind == 6 else "sm2"
        algorithm = ("sm2" if kind == 7 else name.lower()) if name else None
        return kind, family, bits, algorithm, parts[3:]
    if kind in (9, 10):
        return kind, "kem" if kind == 9 else "sig", None, None, parts[1:]
    return None
