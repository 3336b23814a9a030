"""Report specs: a published benchmark report transcribed as ``reports/<id>.yaml``.

A spec says where the report came from, the machines it ran on, the OpenSSL versions and
builds it used, the ``openssl speed`` measurements it printed (with its figures), and the
claims it made, as ratios or orderings between two measurements (these types; loading
and validating a spec is :mod:`openssl_matrix.repro.specload`). :mod:`openssl_matrix.repro.run`
turns a spec into builds and bench runs here and gives each claim a verdict. The format
reference for people who transcribe reports is ``docs/reports.md``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openssl_matrix.matrix.kinds import kind_of
from openssl_matrix.matrix.kinds.base import SuiteKind
from openssl_matrix.measure.cpumodel import Core, core_named, core_of_name

SPEC_SCHEMA = 1

#: What a measurement may need from the machine it runs on (checked by
#: ``repro.resolve.requirement_problem``).
REQUIREMENTS = ("aes-ni", "sha-ext", "pclmulqdq", "avx", "avx2", "padlock", "af_alg",
                "dev-crypto")

#: Engines whose use implies a requirement.
ENGINE_NEEDS = {"afalg": "af_alg", "padlock": "padlock", "cryptodev": "dev-crypto",
                "devcrypto": "dev-crypto"}

EXPECTATIONS = ("faster", "slower", "same", "ratio")

#: Default tolerances per expectation (relative). ``faster``: ours >= 1 + t;
#: ``slower``: ours <= 1 / (1 + t); ``same``: |ours - 1| <= t; ``ratio``: |ours/target - 1| <= t.
DEFAULT_TOLERANCE = {"faster": 0.05, "slower": 0.05, "same": 0.10, "ratio": 0.25}

SOURCE_KINDS = ("mailing-list", "blog", "forum", "site", "paper", "other")

#: Operations of speed's public-key tables a measurement may name (``operation:``).
OPERATIONS = ("sign", "verify", "op", "encrypt", "decrypt", "keygen", "encaps", "decaps")
#: Operations of the TLS suite (``tls.py``): full handshakes and resumed sessions, in
#: connections per second; such a measurement also names its ``protocol``.
TLS_OPERATIONS = ("handshake", "resume")
#: A figure of the library harness (``measure/library.py``): ``algorithm`` names the
#: harness's operation (``pkey-decode-pem-rsa2048``), ``threads`` its thread count; one
#: figure in operations per second (all threads together).
LIBRARY_OPERATION = "library"
#: The key under which a public-key measurement keeps its figure (operations per second)
#: where symmetric ones use the block size.
OP_BLOCK = 0
#: What a claim depends on: ``code-path`` (it travels to any CPU: judged as measured) or
#: ``cpu`` (a hardware effect whose size depends on the CPU: on another CPU it is judged
#: on its direction and against ``cpumodel``).
#: ``threads``: its size depends on the thread count and on the CPUs that run the threads
#: (lock contention): judged as measured at the measurements' thread counts, and not
#: testable where they exceed this host's CPUs.
DEPENDS_ON = ("code-path", "cpu", "threads")
#: Written for a measurement's setting the report does not state (``evp: unknown``).
UNKNOWN = "unknown"
#: The settings a measurement may leave unknown. ``evp``: the reproduction measures both
#: methods and the verdict says which it assumed (``repro.unknowns``).
UNKNOWABLE = ("evp",)
#: How transcriptions say the report names no CPU (``Machine.cpu_named``).
_UNNAMED = re.compile(r"\b(not (named|given|stated|said|specified|known|mentioned)|unnamed|"
                      r"unknown|unspecified|no (cpu|model|processor) (named|given))\b", re.I)
# ----------------------------------------------------------------------------------
# dataclasses


@dataclass(frozen=True)
class SourceInfo:
    """Where a report was published."""

    kind: str
    where: str
    url: str | None
    author: str | None
    date: str | None
    seed: str | None
    notes: str


@dataclass(frozen=True)
class Machine:
    """A machine the report ran on, as the report describes it."""

    name: str
    cpu: str
    clock_ghz: float | None
    flags: tuple[str, ...]
    arch: str
    os: str | None
    compiler: str | None
    notes: str
    core: str | None = None  # a core of cpumodel.CORES (else found from ``cpu``)
    profile: str | None = None  # the CPU profile whose results stand for this machine

    @property
    def model_core(self) -> Core | None:
        """The CPU model's core of this machine, or None when the model does not know it."""
        return core_named(self.core) if self.core else core_of_name(self.cpu)

    @property
    def cpu_named(self) -> bool:
        """False when ``cpu`` says the report names no CPU ("not named in the report",
        "a 32-core machine (model not named)", "unknown") rather than naming one."""
        return not (self.core is None and _UNNAMED.search(self.cpu))

    @property
    def label(self) -> str:
        """The machine in a sentence: its CPU as the report names it, or, when the report
        names none, the machine's key and the report's words for it."""
        if self.cpu_named:
            return self.cpu
        return f"machines.{self.name} (“{self.cpu}”)"


@dataclass(frozen=True)
class VersionRef:
    """An OpenSSL version the report used, and what may stand in for it here."""

    name: str
    as_reported: str | None
    sha256: str | None
    urls: tuple[str, ...]
    release: bool
    stand_in: str | None
    stand_in_why: str | None


@dataclass(frozen=True)
class BuildSpec:
    """One way the report built OpenSSL."""

    name: str
    version: str
    asm: bool
    arch: str
    configure: tuple[str, ...]
    as_reported: str | None


@dataclass(frozen=True)
class Measurement:
    """One ``openssl speed`` figure set of the report: what ran, and what it printed.

    ``reference`` maps block size to bytes per second as the report printed it (already
    scaled: a printed ``305049.90k`` is stored as 305049900.0). A table row written with
    ``algorithms:`` becomes one measurement per algorithm, named ``<row>.<algorithm>``.
    """

    name: str
    machine: str
    build: str
    command: str | None
    algorithm: str
    evp: bool
    ia32cap: str | None
    engine: str | None
    decrypt: bool
    elapsed: bool | None
    needs: tuple[str, ...]
    reference: Mapping[int, float]
    notes: str
    table: str | None = None  # the row name when it came from an ``algorithms:`` row
    disable: tuple[str, ...] = ()  # capabilities masked off, in each version's syntax
    #: False: only the version itself measures this (its stand-in's figure is refused,
    #: whatever the claims that compare it accept)
    stand_in: bool = True
    operation: str | None = None
    """A public-key operation (``sign``, ``verify``, ``op`` ...): ``algorithm`` is then a
    pkey suite name (``ecdsap521``) and ``reference`` holds one figure in operations per
    second, under the key ``OP_BLOCK``."""
    protocol: str | None = None
    """A TLS measurement (operation ``handshake`` or ``resume``): the protocol
    (``tls1.2`` ...); ``algorithm`` is then the server's key (``rsa2048``, ``ecdsap256``)
    and ``reference`` one figure in connections per second."""
    pinning: str = "cross-core"
    """A TLS measurement: server and client on one CPU (``same-core``) or two."""
    threads: int = 1
    """A library measurement (operation ``library``): the harness's thread count (with
    several, the largest)."""
    thread_counts: tuple[int, ...] = ()
    """A library measurement with a figure per thread count (``threads: [1, 4]``): its
    counts; ``reference`` and our figures are then keyed by thread count where a speed
    measurement keys them by block size (``repro.threadtrend``)."""
    unknown: tuple[str, ...] = ()
    """Settings the report does not state (of ``UNKNOWABLE``): ``evp`` in it means the
    report does not say whether speed ran with ``-evp``; ``evp`` then holds the method
    assumed (True), and the reproduction measures the other one too."""

    @property
    def masked(self) -> bool:
        return bool(self.ia32cap or self.disable)

    @property
    def kind(self) -> str:
        """``speed`` (bulk, per block size), ``pkey``, ``tls`` or ``library`` (one
        figure)."""
        if self.protocol is not None:
            return "tls"
        if self.operation == LIBRARY_OPERATION:
            return "library"
        return "speed" if self.operation is None else "pkey"

    @property
    def suite_kind(self) -> SuiteKind:
        """What its suite kind answers (matrix/kinds/)."""
        return kind_of(self.kind)

    @property
    def unit(self) -> str:
        """The unit of the one figure of a pkey or tls measurement."""
        return "conn/s" if self.protocol is not None else "op/s"


@dataclass(frozen=True)
class Claim:
    """A statement of the report, as a ratio or ordering of two measurements."""

    id: str
    says: str
    where: str | None
    numerator: str
    denominator: str
    expect: str
    ratio: float | None
    tolerance: float
    block_sizes: tuple[int, ...] | None  # None: every size both sides have
    stand_in: bool
    notes: str
    depends_on: str = "code-path"  # or "cpu", "threads": see DEPENDS_ON
    #: a trend claim: (from, to) block sizes; the claim is then on the ratio at ``to``
    #: divided by the ratio at ``from`` ("the gap closes as blocks grow": above 1)
    trend: tuple[int, int] | None = None
    #: what the trend runs across: ``bytes`` (block sizes) or ``threads`` (thread counts of
    #: library measurements, ``trend: {threads: [1, 4]}``: ``repro.threadtrend``)
    trend_of: str = "bytes"
    #: ``profile: true``: after measuring, both sides' cells are profiled and compared
    #: function by function, and the verdict names the top functions behind the ratio
    #: (``repro.profileclaim``, ``repro.profilerun``)
    profile: bool = False


@dataclass(frozen=True)
class MeasureSettings:
    """How measurements are taken here (not how the report took them).

    Only measurements a claim compares are measured, plus those named in ``rows`` (a
    measurement, or a table row: every measurement of that ``algorithms:`` row).
    """

    seconds: int
    repeat: int
    rows: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReportSpec:
    path: Path
    id: str
    title: str
    source: SourceInfo
    machines: Mapping[str, Machine]
    versions: Mapping[str, VersionRef]
    builds: Mapping[str, BuildSpec]
    measurements: Mapping[str, Measurement]
    claims: tuple[Claim, ...]
    measure: MeasureSettings
    notes: str
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def digest(self) -> str:
        canon = json.dumps(self.raw, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(canon.encode()).hexdigest()

    def measurement_needs(self, m: Measurement) -> tuple[str, ...]:
        """Declared needs plus those implied by the engine and the build's arch."""
        needs = list(m.needs)
        if m.engine and m.engine in ENGINE_NEEDS and ENGINE_NEEDS[m.engine] not in needs:
            needs.append(ENGINE_NEEDS[m.engine])
        return tuple(needs)

    def wanted(self) -> set[str]:
        """Measurements to take here: those claims compare, and ``measure.rows``."""
        out = {n for c in self.claims for n in (c.numerator, c.denominator)}
        for row in self.measure.rows:
            out.update(n for n, m in self.measurements.items() if n == row or m.table == row)
        return out

    def reference_ratio(self, claim: Claim, block: int) -> float | None:
        num = self.measurements[claim.numerator].reference.get(block)
        den = self.measurements[claim.denominator].reference.get(block)
        if num is None or den is None or den <= 0:
            return None
        return num / den

    def reference_trend(self, claim: Claim) -> float | None:
        """A trend claim's ratio at its ``to`` size over its ratio at its ``from`` size, from
        the report's figures (None without figures at both sizes on both sides)."""
        if claim.trend is None:
            return None
        first, last = (self.reference_ratio(claim, b) for b in claim.trend)
        if first is None or last is None or first <= 0:
            return None
        return last / first

    def claim_blocks(self, claim: Claim) -> tuple[int, ...]:
        """Block sizes a claim is judged at: its own list, else those both sides printed
        (a trend's two points: block sizes, or thread counts)."""
        if claim.trend is not None:
            return claim.trend
        if self.measurements[claim.numerator].operation is not None:
            return (OP_BLOCK,)
        if claim.block_sizes is not None:
            return claim.block_sizes
        a = self.measurements[claim.numerator].reference
        b = self.measurements[claim.denominator].reference
        both = sorted(set(a) & set(b))
        return tuple(both) if both else (8192,)


# ----------------------------------------------------------------------------------
# loading


