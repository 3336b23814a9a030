"""A small, documented model of what a CPU core does to OpenSSL's AES-CBC and SHA-256.

Some claims of a published report travel to any CPU ("without -evp AES-NI is unused": a
property of the code path). Others are a hardware effect whose *size* depends on the CPU
("AES-NI makes EVP AES-128-CBC about 2x faster" on an Ivy Bridge is 3.7x on a Zen). This
module holds, in one place, the facts that size such an effect, each with its source, and
turns them into cycles per byte for a measurement's code path on a core:

* **AES-NI, CBC encryption** is serial: each block's ten (12, 14) AESENC rounds wait for
  the previous block. Its cost is the AES-NI white paper's latency bound,
  ``rounds x AESENC latency / 16 bytes`` (Gueron, "Intel Advanced Encryption Standard (AES)
  New Instructions Set", rev. 3.0, 2010; OpenSSL's aesni-x86_64.pl comments derive the
  same bound and measure within 1-8 % of it on every core listed below).
* **AES-NI masked off** (``OPENSSL_ia32cap``), EVP's CBC encryption runs vpaes, the SSSE3
  code (1.0.1 and later on x86_64). OpenSSL measured it at 10.0 cycles/byte on Nehalem
  (vpaes-x86_64.pl) and explains Core 2's 21.9 by its slow PSHUFB: the code is a chain of
  PSHUFB/PXOR. The model takes 10.0 for cores whose PSHUFB is as fast as Nehalem's
  (latency 1, two per cycle, Agner Fog's instruction tables) and has no figure for others.
  This is the model's weakest number (an inference, not a measurement, outside Nehalem):
  on this project's Zen 4 host the masked path measured 9.4-11.9 cycles/byte depending on
  the clock assumed (turbo is invisible in a VM).
* **SHA-256** through the assembler: OpenSSL's own cycles/byte per core for its best path
  (sha512-x86_64.pl), which is the SHA extensions' on a core that has them (1.0.2 on).
* Everything else (CBC decryption, the low-level ``speed aes-128-cbc`` path, no-asm C,
  engines, other algorithms) is outside the model: a claim about it is judged directly,
  or, when it depends on the CPU, is not testable by the model (the verdict says so).

Cores are found from ``/proc/cpuinfo`` (vendor, family, model), from a CPU profile's
``march`` (gcc's name for the core) or from a CPU name as a report prints it.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass

from openssl_matrix.core.stats import MODEL_TOLERANCE

#: Block sizes from which the model applies: OpenSSL's aesni-x86_64.pl notes that the
#: curves "are practically saturated at 1-KB buffer size".
MODEL_MIN_BLOCK = 1024

AGNER = "Agner Fog, Instruction tables (www.agner.org/optimize), AESENC and PSHUFB rows"
AESNI_PL = ("OpenSSL crypto/aes/asm/aesni-x86_64.pl, header comments (the January 2011 "
            "note and the 'current large-block performance' table, CBC encrypt, 128-bit key)")
SHA512_PL = ("OpenSSL crypto/sha/asm/sha512-x86_64.pl, 'current performance' table (SHA256, "
             "whichever assembler path is best, including SHA extensions)")
VPAES_PL = ("OpenSSL crypto/aes/asm/vpaes-x86_64.pl, 'performance summary' comment "
            "(large-block CBC encrypt, 128-bit key)")
WHITEPAPER = ("S. Gueron, Intel Advanced Encryption Standard (AES) New Instructions Set, "
              "white paper rev. 3.0 (2010): serial CBC encryption is bound by AESENC latency")


@dataclass(frozen=True)
class Fact:
    """A number with where it comes from."""

    value: float
    source: str


@dataclass(frozen=True)
class Core:
    """One CPU core design and the facts the model uses about it."""

    name: str
    label: str
    aesenc_latency: Fact | None  # cycles; None: no AES-NI
    aesenc_throughput: Fact | None  # cycles between two independent AESENC
    vpaes_cbc_cpb: Fact | None  # cycles/byte of vpaes CBC encrypt, 128-bit key
    sha_ext: bool
    openssl_cbc_cpb: Fact | None = None  # OpenSSL's own measurement, a cross-check
    sha256_cpb: Fact | None = None  # SHA-256, OpenSSL's best assembler path (1.0.2+)
    march: tuple[str, ...] = ()  # gcc -march names of this core
    cpuid: tuple[tuple[str, int, tuple[int, ...]], ...] = ()  # (vendor, family, models)
    names: tuple[str, ...] = ()  # CPU names (fnmatch, lower case) as reports print them

    def aesni_cbc_cpb(self, rounds: int = 10) -> float | None:
        if self.aesenc_latency is None:
            return None
        return rounds * self.aesenc_latency.value / 16


_NEHALEM_VPAES = Fact(10.0, VPAES_PL + ": Nehalem 10.0")


def _like_nehalem(core: str) -> Fact:
    return Fact(10.0, f"{VPAES_PL}: Nehalem 10.0; taken for {core}, whose PSHUFB has "
                f"Nehalem's latency (1) and throughput (2 per cycle) per {AGNER}")


CORES: dict[str, Core] = {c.name: c for c in (
    Core("westmere", "Intel Westmere",
         Fact(6, AESNI_PL + ": 'Westmere processor features 6 cycles latency'"),
         Fact(2, AESNI_PL + ": '... which can be scheduled every second cycle'"),
         Fact(10.0, VPAES_PL + ": Nehalem 10.0 (bsaes-x86_64.pl: Westmere 'is considered "
              "to be equivalent to Nehalem for this code')"),
         sha_ext=False, openssl_cbc_cpb=Fact(3.77, AESNI_PL + ": Westmere 3.77"),
         sha256_cpb=Fact(12.3, SHA512_PL + ": Westmere 12.3 (SSSE3)"),
         march=("westmere",), cpuid=(("GenuineIntel", 6, (0x25, 0x2C, 0x2F)),),
         names=("*xeon*56[0-9][0-9]*", "*westmere*")),
    Core("sandybridge", "Intel Sandy Bridge",
         Fact(8, AESNI_PL + ": 'Sandy Bridge spends 8 cycles per instruction'"),
         Fact(1, AESNI_PL + ": '... but it can schedule them every cycle'"),
         _like_nehalem("Sandy Bridge"), sha_ext=False,
         openssl_cbc_cpb=Fact(5.07, AESNI_PL + ": '* Bridge' 5.07"),
         sha256_cpb=Fact(11.6, SHA512_PL + ": Sandy Bridge 11.6 (AVX)"),
         march=("sandybridge",), cpuid=(("GenuineIntel", 6, (0x2A, 0x2D)),),
         names=("*e3-12[0-9][0-9]*", "*e312[0-9][0-9]*",
                "*i[357]-2[0-9][0-9][0-9]*", "*sandy bridge*")),
    Core("ivybridge", "Intel Ivy Bridge",
         Fact(8, f"{AGNER} (the same AES unit as Sandy Bridge; {AESNI_PL} lists both as "
              "'* Bridge')"),
         Fact(1, AGNER), _like_nehalem("Ivy Bridge"), sha_ext=False,
         openssl_cbc_cpb=Fact(5.07, AESNI_PL + ": '* Bridge' 5.07"),
         sha256_cpb=Fact(10.3, SHA512_PL + ": Ivy Bridge 10.3 (AVX)"),
         march=("ivybridge",), cpuid=(("GenuineIntel", 6, (0x3A, 0x3E)),),
         names=("*e3-12[0-9][0-9] v2*", "*i[357]-3[0-9][0-9][0-9]*", "*ivy bridge*")),
    Core("haswell", "Intel Haswell",
         Fact(7, AGNER), Fact(1, AGNER), None, sha_ext=False,
         openssl_cbc_cpb=Fact(4.44, AESNI_PL + ": Haswell 4.44"),
         sha256_cpb=Fact(7.80, SHA512_PL + ": Haswell 7.80 (AVX2)"),
         march=("haswell", "broadwell"),
         cpuid=(("GenuineIntel", 6, (0x3C, 0x3F, 0x45, 0x46, 0x3D, 0x47, 0x4F, 0x56)),),
         names=("*i[3579]-4[0-9][0-9][0-9]*", "*haswell*")),
    Core("skylake", "Intel Skylake",
         Fact(4, AGNER), Fact(1, AGNER), None, sha_ext=False,
         openssl_cbc_cpb=Fact(2.62, AESNI_PL + ": Skylake 2.62"),
         sha256_cpb=Fact(7.70, SHA512_PL + ": Skylake 7.70 (AVX2)"),
         march=("skylake",), cpuid=(("GenuineIntel", 6, (0x4E, 0x5E, 0x8E, 0x9E, 0x55)),),
         names=("*i[3579]-[6789][0-9][0-9][0-9]*", "*skylake*")),
    Core("bulldozer", "AMD Bulldozer / Piledriver",
         Fact(9, AGNER), Fact(1, AGNER), None, sha_ext=False,
         openssl_cbc_cpb=Fact(5.77, AESNI_PL + ": Bulldozer 5.77"),
         sha256_cpb=Fact(13.6, SHA512_PL + ": Bulldozer 13.6 (XOP)"),
         march=("bdver1", "bdver2"), cpuid=(("AuthenticAMD", 0x15, (0x01, 0x02, 0x10, 0x13)),),
         names=("*a10-5[0-9]00*", "*fx-[468][0-9][0-9]0*", "*piledriver*", "*bulldozer*")),
    Core("zen", "AMD Zen (Zen 1 to Zen 4: Ryzen, EPYC)",
         Fact(4, AGNER), Fact(0.5, AGNER), _like_nehalem("Zen"), sha_ext=True,
         openssl_cbc_cpb=Fact(2.71, AESNI_PL + ": Ryzen 2.71"),
         sha256_cpb=Fact(2.05, SHA512_PL + ": Ryzen 2.05 (SHA extensions)"),
         march=("znver1", "znver2", "znver3", "znver4"),
         cpuid=(("AuthenticAMD", 0x17, ()), ("AuthenticAMD", 0x19, ())),
         names=("*ryzen*", "*epyc*", "* zen*")),
)}


def summary(core: Core) -> str:
    """The model's numbers for a core, in one line (``invoke matrix profiles``)."""
    parts = [core.label]
    if core.aesenc_latency is not None:
        parts.append(f"AESENC latency {core.aesenc_latency.value:g} → AES-128-CBC encrypt "
                     f"{core.aesni_cbc_cpb():.2f} c/B")
    else:
        parts.append("no AES-NI")
    if core.vpaes_cbc_cpb is not None:
        parts.append(f"masked (vpaes) {core.vpaes_cbc_cpb.value:g} c/B")
    if core.sha256_cpb is not None:
        parts.append(f"SHA-256 {core.sha256_cpb.value:g} c/B"
                     + (" (SHA ext.)" if core.sha_ext else ""))
    return ", ".join(parts)


def core_named(name: str | None) -> Core | None:
    return CORES.get(name) if name else None


def core_of_march(march: str | None) -> Core | None:
    """The core a CPU profile's ``march`` (gcc's name) describes."""
    if not march:
        return None
    return next((c for c in CORES.values() if march in c.march), None)


def core_of_name(text: str | None) -> Core | None:
    """The core of a CPU as a report or /proc/cpuinfo names it (``Core i5-3317U``)."""
    if not text:
        return None
    low = text.lower()
    # the most specific patterns first: an E3-1220 v2 is an Ivy Bridge
    for core in (CORES["ivybridge"], *CORES.values()):
        for pattern in core.names:
            if fnmatch.fnmatch(low, pattern):
                return core
    return None


def core_of_cpuid(vendor: str | None, family: int | None, model: int | None) -> Core | None:
    if vendor is None or family is None:
        return None
    for core in CORES.values():
        for v, fam, models in core.cpuid:
            if v == vendor and fam == family and (not models or model in models):
                return core
    return None


# ----------------------------------------------------------------------------------
# code paths


@dataclass(frozen=True)
class PathCost:
    """What one measurement's code path costs on one core, by the model."""

    cpb: float
    path: str  # "AES-NI CBC encrypt" / "vpaes CBC encrypt"
    formula: str
    sources: tuple[str, ...]


_AES_CBC = re.compile(r"^aes-(128|192|256)-cbc$")


def _sha256_cost(core: Core, *, masked: set[str], series: tuple[int, int, int] | None,
                 ) -> PathCost | str:
    """SHA-256 through OpenSSL's assembler (its best path on the core, SHA extensions
    included where the core has them, from 1.0.2 on)."""
    if core.sha256_cpb is None:
        return f"the model has no SHA-256 figure for {core.label}"
    if core.sha_ext and ("sha" in masked or (series is not None and series < (1, 0, 2))):
        return (f"the model's SHA-256 figure for {core.label} is the SHA extensions' path; "
                "it has none for the path without them")
    cpb = core.sha256_cpb.value
    path = "SHA-256 with SHA ext." if core.sha_ext else "SHA-256 assembler"
    return PathCost(cpb, path, f"{path} {cpb:g} c/B", (core.sha256_cpb.source,))
_ROUNDS = {"128": 10, "192": 12, "256": 14}


def cbc_floor(algorithm: str, aesenc_latency: float) -> float | None:
    """AES-NI CBC encryption's latency bound in cycles per byte for ``aes-N-cbc`` with
    the given AESENC latency (measured on our core: coreclock.py), None for another
    algorithm: rounds x latency / 16 bytes (the white paper's bound)."""
    m = _AES_CBC.match(algorithm)
    return _ROUNDS[m.group(1)] * aesenc_latency / 16 if m else None


def path_cost(core: Core, algorithm: str, *, evp: bool, decrypt: bool,
              masked: Iterable[str], series: tuple[int, int, int] | None,
              asm: bool = True, engine: str | None = None) -> PathCost | str:
    """Cycles per byte of a measurement's code path on ``core``, or why the model has none.

    ``masked``: the capabilities cleared through OPENSSL_ia32cap; ``series``: the OpenSSL
    release series that runs (``(1, 0, 1)``), which decides which code EVP picks.
    """
    m = _AES_CBC.match(algorithm)
    if algorithm == "sha256" and (asm and not engine):
        return _sha256_cost(core, masked=set(masked), series=series)
    if m is None:
        return f"the model covers AES-CBC encryption and SHA-256 only, not {algorithm}"
    if decrypt:
        return "the model covers CBC encryption only (decryption runs blocks in parallel)"
    if engine:
        return f"the model covers OpenSSL's own code, not the {engine} engine"
    if not asm:
        return "the portable C code of a no-asm build is outside the model"
    if not evp and (series is None or series < (3, 0, 0)):
        return ("the low-level `speed aes-N-cbc` path (the table-driven assembler) is "
                "outside the model")
    rounds = _ROUNDS[m.group(1)]
    off = set(masked)
    if core.aesenc_latency is not None and "aesni" not in off:
        cpb = rounds * core.aesenc_latency.value / 16
        return PathCost(cpb, "AES-NI CBC encrypt",
                        f"{rounds} rounds × {core.aesenc_latency.value:g} cycles AESENC "
                        f"latency / 16 bytes = {cpb:.2f} c/B",
                        (WHITEPAPER, core.aesenc_latency.source))
    if series is not None and series < (1, 0, 1):
        return "before 1.0.1 there is no vpaes code, and the model has no figure for it"
    if core.vpaes_cbc_cpb is None:
        return f"the model has no figure for vpaes (AES-NI masked) on {core.label}"
    cpb = core.vpaes_cbc_cpb.value * rounds / 10
    return PathCost(cpb, "vpaes CBC encrypt",
                    f"vpaes {core.vpaes_cbc_cpb.value:g} c/B × {rounds}/10 rounds"
                    f" = {cpb:.2f} c/B", (core.vpaes_cbc_cpb.source,))


@dataclass(frozen=True)
class RatioModel:
    """The ratio first / second measurement as the model predicts it on one core."""

    core: Core
    ratio: float
    first: PathCost
    second: PathCost

    def text(self) -> str:
        return (f"{self.first.path} {self.first.cpb:.2f} c/B vs {self.second.path} "
                f"{self.second.cpb:.2f} c/B on {self.core.label}")


def predicted_ratio(core: Core, first: PathCost | str, second: PathCost | str,
                    ) -> RatioModel | str:
    """first / second throughput (= second's c/B over first's), or why not."""
    for side in (first, second):
        if isinstance(side, str):
            return side
    assert isinstance(first, PathCost) and isinstance(second, PathCost)
    return RatioModel(core, second.cpb / first.cpb, first, second)


def agrees(value: float, model: float) -> bool:
    return abs(value / model - 1) <= MODEL_TOLERANCE


def core_of_cpu(vendor: str | None, family: int | None, model: int | None,
                name: str | None) -> Core | None:
    """The core of a host as /proc/cpuinfo describes it: by CPUID, else by its name."""
    return core_of_cpuid(vendor, family, model) or core_of_name(name)


def model_bytes_per_s(core: Core | None, algorithm: str, *, evp: bool, decrypt: bool,
                      masked: Iterable[str], series: tuple[int, int, int] | None,
                      asm: bool, engine: str | None, clock_hz: float | None,
                      ) -> float | None:
    """The CPU model's throughput for a cell on ``core`` at the run's clock (bytes per
    second), or None where the model has no figure for the cell's code path (or the core
    or the clock is unknown)."""
    if core is None or clock_hz is None or not clock_hz > 0:
        return None
    cost = path_cost(core, algorithm, evp=evp, decrypt=decrypt, masked=masked,
                     series=series, asm=asm, engine=engine)
    if isinstance(cost, str) or not cost.cpb > 0:
        return None
    return clock_hz / cost.cpb
