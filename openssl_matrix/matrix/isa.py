"""The x86 instruction-set tables, each with where it comes from.

* ``IA32CAP_BITS``: which bit of ``OPENSSL_ia32cap`` turns off which capability, and the
  syntax each OpenSSL series accepts for it (``render_ia32cap``);
* ``MARCH_FLAGS``: the instruction-set extensions a ``-march`` value lets gcc use, as
  ``/proc/cpuinfo`` names them (``march_flags``).

Data and pure functions only. In the matrix layer because checking a matrix file (mask
names, ``-march`` values) needs them; host probing (:mod:`openssl_matrix.measure.hostinfo`)
and the guards read them too.
"""

from __future__ import annotations

import re

from openssl_matrix.core.version import series

#: Capability name -> (word, bit) of OPENSSL_ia32cap: the one table of the package (the
#: report names masks with it too). Word 0 is CPUID.1 EDX:ECX (bit 25 SSE, 26 SSE2, 33
#: PCLMULQDQ, 41 SSSE3, 54 MOVBE, 57 AES-NI, 60 AVX, 62 RDRAND: OpenSSL's
#: doc/man3/OPENSSL_ia32cap.pod, checked against the 1.1.1 and 3.0 trees); word 1 (after
#: ``:``, read from 1.0.2 on) is CPUID.7 EBX (bit 3 BMI1, 5 AVX2, 8 BMI2, 16 AVX512F,
#: 19 ADX, 29 SHA extensions). Bit 51 (CPUID.1 ECX bit 19, SSE4.1) is not one OpenSSL
#: reads, so it has no name here.
IA32CAP_BITS: dict[str, tuple[int, int]] = {
    "sse": (0, 25),
    "sse2": (0, 26),
    "aesni": (0, 57),
    "pclmulqdq": (0, 33),
    "ssse3": (0, 41),
    "avx": (0, 60),
    "rdrand": (0, 62),
    "movbe": (0, 54),
    "bmi1": (1, 3),
    "avx2": (1, 5),
    "bmi2": (1, 8),
    "avx512f": (1, 16),
    "adx": (1, 19),
    "sha": (1, 29),
}


#: How reports name each capability of IA32CAP_BITS.
IA32CAP_LABELS: dict[str, str] = {
    "sse": "SSE", "sse2": "SSE2", "aesni": "AES-NI", "pclmulqdq": "PCLMULQDQ",
    "ssse3": "SSSE3", "avx": "AVX", "rdrand": "RDRAND", "movbe": "MOVBE", "bmi1": "BMI1",
    "avx2": "AVX2", "bmi2": "BMI2", "avx512f": "AVX512F", "adx": "ADX", "sha": "SHA ext.",
}


#: The /proc/cpuinfo flag of each maskable capability.
IA32CAP_CPUINFO_FLAG = {
    "sse": "sse", "sse2": "sse2", "aesni": "aes", "pclmulqdq": "pclmulqdq", "ssse3": "ssse3",
    "avx": "avx",
    "rdrand": "rdrand", "movbe": "movbe", "bmi1": "bmi1", "avx2": "avx2", "bmi2": "bmi2",
    "avx512f": "avx512f", "adx": "adx", "sha": "sha_ni",
}


def ia32cap_words(off: tuple[str, ...] | list[str]) -> tuple[int, int]:
    """The two mask words that clear the named capabilities."""
    words = [0, 0]
    for name in off:
        word, bit = IA32CAP_BITS[name]
        words[word] |= 1 << bit
    return words[0], words[1]


def render_ia32cap(off: tuple[str, ...] | list[str], version: str,
                   ) -> tuple[str | None, list[str]]:
    """``OPENSSL_ia32cap`` that turns ``off`` capabilities off, in ``version``'s syntax.

    Returns (value or None when the version cannot express the mask, notes). From
    crypto/cryptlib.c (cpuid.c from 1.1.0) of each series: 0.9.8 reads one plain value
    (no ``~``: the detected vector would have to be known); 1.0.0/1.0.1 read one word and
    ``~`` clears bits of the detected vector; from 1.0.2 a second word follows ``:``, and
    a value *without* it sets the second word to 0 (AVX2, SHA ... off): so the second word
    is always written, ``:~0x0`` when nothing in it is to be cleared (seen working in
    3.0.20, whose ``openssl version -c`` prints the result).
    """
    v = series(version)
    w0, w1 = ia32cap_words(off)
    notes: list[str] = []
    if v < (1, 0, 0):
        return None, [f"OpenSSL {version} reads OPENSSL_ia32cap as a plain vector (no '~'): "
                      f"the mask {'+'.join(off)} cannot be expressed; it was left out"]
    if v < (1, 0, 2) and w1:
        dropped = [n for n in off if IA32CAP_BITS[n][0] == 1]
        notes.append(f"OpenSSL {version} reads only the first OPENSSL_ia32cap word: "
                     f"{', '.join(dropped)} cannot be masked (nor does {version} have "
                     "code that uses them)")
        w1 = 0
    if not w0 and not w1:
        return None, [*notes, f"the mask {'+'.join(off)} changes nothing on {version}; "
                      "it was left out"]
    if v < (1, 0, 2):
        return f"~{w0:#x}", notes
    first = f"~{w0:#x}" if w0 else ""
    return f"{first}:~{w1:#x}", notes


def ia32cap_expected_clear(value: str) -> tuple[int, int] | None:
    """For a ``~`` mask (``~0x..[:~0x..]``, ``:~0x..``), the bits it must clear per word."""
    m = re.fullmatch(r"(~(0x[0-9a-fA-F]+))?(:~(0x[0-9a-fA-F]+))?", value.strip())
    if not m or (m.group(2) is None and m.group(4) is None):
        return None
    return (int(m.group(2), 16) if m.group(2) else 0, int(m.group(4), 16) if m.group(4) else 0)


def parse_cpuinfo_line(text: str) -> tuple[int, int] | None:
    """The capability words from 3.x's ``CPUINFO: OPENSSL_ia32cap=0x..:0x..`` line."""
    m = re.search(r"OPENSSL_ia32cap=(0x[0-9a-fA-F]+):(0x[0-9a-fA-F]+)", text)
    if not m:
        return None
    return int(m.group(1), 16), int(m.group(2), 16)


def capabilities_of(words: tuple[int, int]) -> set[str]:
    """Names of the maskable capabilities set in a capability vector."""
    return {name for name, (w, bit) in IA32CAP_BITS.items() if words[w] >> bit & 1}


# ----------------------------------------------------------------------------------
# -march

#: cpuinfo flags implied by gcc's -march (gcc 12.2, Debian bookworm: the predefined
#: macros of ``echo | gcc -m32 -march=X -dM -E -``, __SSE3__ -> pni, __LZCNT__ -> abm,
#: __PCLMUL__ -> pclmulqdq, __SHA__ -> sha_ni, __RDRND__ -> rdrand, __BMI__ -> bmi1;
#: ``cmov`` where gcc defines __i686__). Note gcc's westmere/sandybridge/ivybridge/
#: haswell/broadwell do not enable AES (some of those parts lack it).
_BASE64 = ("cmov", "mmx", "sse", "sse2")
_V2 = (*_BASE64, "pni", "ssse3", "sse4_1", "sse4_2", "popcnt")
_NEHALEM = _V2
_WESTMERE = (*_NEHALEM, "pclmulqdq")
_SANDY = (*_WESTMERE, "avx")
_IVY = (*_SANDY, "f16c", "rdrand")
_HASWELL = (*_IVY, "avx2", "bmi1", "bmi2", "fma", "abm", "movbe")
_BROADWELL = (*_HASWELL, "adx", "rdseed")
_BDVER1 = (*_V2, "aes", "pclmulqdq", "avx", "fma4", "xop", "abm")
_BDVER2 = (*_BDVER1, "bmi1", "f16c", "fma")
_ZNVER1 = (*_HASWELL, "aes", "adx", "rdseed", "sha_ni")
MARCH_FLAGS: dict[str, tuple[str, ...]] = {
    "i386": (), "i486": (), "i586": (), "pentium": (), "c3": ("mmx", "3dnow"),
    "i686": ("cmov",), "pentiumpro": ("cmov",), "c3-2": ("cmov", "mmx", "sse"),
    "pentium3": ("cmov", "mmx", "sse"), "pentium-m": ("cmov", "mmx", "sse", "sse2"),
    "pentium4": ("cmov", "mmx", "sse", "sse2"),
    "x86-64": _BASE64, "x86-64-v2": _V2,
    "x86-64-v3": (*_V2, "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe"),
    "x86-64-v4": (*_V2, "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe",
                  "avx512f"),
    "core2": (*_BASE64, "pni", "ssse3"), "nehalem": _NEHALEM, "westmere": _WESTMERE,
    "sandybridge": _SANDY, "ivybridge": _IVY, "haswell": _HASWELL, "broadwell": _BROADWELL,
    "skylake": (*_BROADWELL, "aes"),
    "icelake-client": (*_BROADWELL, "aes", "avx512f", "sha_ni", "vaes", "vpclmulqdq",
                       "gfni"),
    "alderlake": (*_BROADWELL, "aes", "sha_ni", "vaes", "vpclmulqdq", "gfni"),
    "bdver1": _BDVER1, "bdver2": _BDVER2, "bdver3": _BDVER2,
    "bdver4": (*_BDVER2, "avx2", "bmi2", "movbe", "rdrand"),
    "btver2": (*_V2, "aes", "pclmulqdq", "avx", "bmi1", "f16c", "abm", "movbe"),
    "znver1": _ZNVER1, "znver2": _ZNVER1,
    "znver3": (*_ZNVER1, "vaes", "vpclmulqdq"),
}


def march_flags(march: str | None) -> tuple[str, ...] | None:
    """cpuinfo flags a binary built with ``-march=march`` may use (None: not known)."""
    if march is None:
        return ()
    return MARCH_FLAGS.get(march)


def known_flags() -> set[str]:
    """Every flag the -march table speaks of (the universe ``march_flags`` can judge)."""
    return {f for flags in MARCH_FLAGS.values() for f in flags}
