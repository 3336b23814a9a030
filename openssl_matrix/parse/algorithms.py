"""The symmetric algorithm names ``openssl speed`` knows, in every spelling it has printed.

A report spec names an algorithm as the report printed it: a legacy table label
(``blowfish cbc``, ``aes-128 cbc``, ``rc5-32/12 cbc``), a ``-mr`` name, a command-line
choice (``blowfish``, ``des-ede3``) or an EVP name (``aes-128-gcm``). :func:`resolve`
turns each into the one id the parser gives the figure (``parsing.canonical_algorithm``)
and refuses a name speed never knew, with the closest known names; :func:`speed_argument`
is the word to pass to ``openssl speed`` (which differs between the legacy table and
``-evp`` for a few ciphers).

Sources: the ``names[]`` table and ``doit_choices`` of apps/speed.c from 0.9.8 to 3.x,
and the EVP cipher and digest names of ``openssl list -cipher-algorithms`` /
``-digest-algorithms`` (1.1.1 and 3.0).
"""

from __future__ import annotations

import difflib

from openssl_matrix.parse.figures import canonical_algorithm

#: Labels of speed.c's legacy table, as printed (0.9.8 to 3.x).
LEGACY_LABELS = (
    "md2", "mdc2", "md4", "md5", "hmac(md5)", "sha1", "rmd160", "rc4", "des cbc", "des ede3",
    "idea cbc", "seed cbc", "rc2 cbc", "rc5-32/12 cbc", "blowfish cbc", "cast cbc",
    "aes-128 cbc", "aes-192 cbc", "aes-256 cbc", "camellia-128 cbc", "camellia-192 cbc",
    "camellia-256 cbc", "sha256", "sha512", "whirlpool", "aes-128 ige", "aes-192 ige",
    "aes-256 ige", "ghash", "rand",
)  # fmt: skip

#: Command-line choices of the legacy path that are not spelled like a label.
COMMAND_CHOICES = (
    "hmac", "ripemd160", "ripemd", "des-cbc", "des-ede3", "idea-cbc", "idea", "seed-cbc",
    "seed", "rc2-cbc", "rc2", "rc5-cbc", "rc5", "bf-cbc", "blowfish", "bf", "cast-cbc",
    "cast", "cast5", "aes-128-cbc", "aes-192-cbc", "aes-256-cbc", "aes-128-ige",
    "aes-192-ige", "aes-256-ige", "camellia-128-cbc", "camellia-192-cbc", "camellia-256-cbc",
)  # fmt: skip

_ALIASES = {"hmac": "hmac-md5", "ripemd": "ripemd160", "idea": "idea-cbc",
            "seed": "seed-cbc", "rc2": "rc2-cbc", "rc5": "rc5-cbc", "bf": "bf-cbc",
            "cast": "cast5-cbc", "cast5": "cast5-cbc", "cast-cbc": "cast5-cbc"}


def _evp_names() -> tuple[str, ...]:
    out: list[str] = []
    for bits in ("128", "192", "256"):
        for mode in ("cbc", "ecb", "ctr", "gcm", "ccm", "ofb", "cfb", "cfb1", "cfb8", "ocb",
                     "wrap"):
            out.append(f"aes-{bits}-{mode}")
        for fam in ("aria", "camellia"):
            out += [f"{fam}-{bits}-{m}" for m in ("cbc", "ecb", "ctr", "ofb", "cfb")]
        out.append(f"aria-{bits}-gcm")
    out += ["aes-128-xts", "aes-256-xts", "aes-128-siv", "aes-256-siv",
            "aes-128-cbc-hmac-sha1", "aes-256-cbc-hmac-sha1", "aes-128-cbc-hmac-sha256",
            "aes-256-cbc-hmac-sha256", "chacha20", "chacha20-poly1305", "des-ecb", "des-ede",
            "des-ede-cbc", "des-ede3-cbc", "desx-cbc", "rc4-40", "rc4-hmac-md5",
            "sm4-cbc", "sm4-ecb", "sm4-ctr", "sm4-gcm", "sm4-ccm"]
    for fam in ("idea", "seed", "rc2", "bf", "cast5", "rc5"):
        out += [f"{fam}-{m}" for m in ("cbc", "ecb", "ofb", "cfb")]
    out += ["sha224", "sha384", "sha512-224", "sha512-256", "sha3-224", "sha3-256",
            "sha3-384", "sha3-512", "shake128", "shake256", "blake2b512", "blake2s256",
            "md5-sha1", "sm3", "ripemd160", "whirlpool"]
    return tuple(out)


EVP_NAMES = _evp_names()

#: Every spelling accepted, and the canonical id it stands for.
KNOWN: dict[str, str] = {}
for _name in (*LEGACY_LABELS, *COMMAND_CHOICES, *EVP_NAMES):
    KNOWN[_name] = _ALIASES.get(_name, canonical_algorithm(_name))
CANONICAL = frozenset(KNOWN.values())

#: The legacy-path command-line word for ids whose EVP name speed's table does not take.
_LEGACY_ARGUMENT = {"des-ede3-cbc": "des-ede3", "cast5-cbc": "cast-cbc", "hmac-md5": "hmac"}


def resolve(name: str) -> str | None:
    """The canonical id of an algorithm as speed printed or takes it; None if unknown."""
    text = " ".join(name.strip().lower().split())
    if text in KNOWN:
        return KNOWN[text]
    canon = canonical_algorithm(text)
    if canon in CANONICAL:
        return canon
    return None


def closest(name: str, n: int = 3) -> list[str]:
    """Known spellings closest to ``name`` (for an error's hint)."""
    text = " ".join(name.strip().lower().split())
    pool = sorted(set(KNOWN) | CANONICAL)
    return difflib.get_close_matches(text, pool, n=n, cutoff=0.6)


#: The ids speed's low-level table (``openssl speed ALG`` without ``-evp``) measures.
LEGACY_IDS = frozenset(KNOWN[n] for n in (*LEGACY_LABELS, *COMMAND_CHOICES))


def has_legacy_path(canonical: str) -> bool:
    """Whether speed has a low-level path (without ``-evp``) for a canonical id; without
    one, ``-evp`` is the only way speed measures it."""
    return canonical in LEGACY_IDS


def speed_argument(canonical: str, evp: bool) -> str:
    """The word ``openssl speed [-evp]`` takes for a canonical id."""
    if evp:
        return canonical
    return _LEGACY_ARGUMENT.get(canonical, canonical)
