"""Guards: does a figure measure what its label says?

Every seed report holds a number that was not what its author thought: an engine that
never engaged, a user-CPU-time figure for work done in the kernel, the low-level AES path
that never reaches AES-NI, a capability mask that did more (or less) than asked, a binary
that cannot run on the CPU it is filed under. Each guard here is a pure function from
what a run printed and its context to ``Finding``s. A finding gives the figures it
concerns a status (the value is kept, never replaced) and the run a warning.

Statuses (``Finding.code``), in addition to the parser's (the words are spelled once, in
``core/statuses.py``, where every reader takes them from):

* ``engine-not-engaged`` - ``-engine X`` was asked for, but X failed to load or
  initialise (``openssl speed`` then measures the built-in code and still exits 0), or
  ``openssl engine -t X`` says it is unavailable;
* ``engine-unverified`` - the engine could not be tested (``openssl engine`` is missing)
  or its figures match the built-in code's at every block size;
* ``time-basis`` - the process ran on a CPU in user mode for far less than the elapsed
  time: the work ran in the kernel or elsewhere, or the process waited for a CPU. The
  elapsed figure is kept; speed's default user-time figure would be inflated;
* ``legacy-path`` - the low-level (non-EVP) AES of 1.0.1 to 1.1.1, which never uses
  AES-NI;
* ``mask-not-applied`` - an ``OPENSSL_ia32cap`` mask left on a capability it should have
  turned off (3.x prints the effective vector), or changed nothing where it must;
* ``mask-overreach`` - the mask turned off more than it names (a one-word value clears
  the whole second word from 1.0.2 on: AVX2, SHA, BMI, ADX go with it);
* ``cannot-run-on-cpu`` - the binary uses instructions the profile's CPU does not have
  (ENDBR32 without long NOPs on a VIA C3, a ``-march`` beyond the CPU's flags);
* ``contended`` - the host was not quiet while the figure was measured (the speed
  process waited for a CPU, other work kept cores busy, or the hypervisor stole time:
  ``hostacct.contention_reasons``, thresholds in ``hostacct``). The value is kept and
  the run re-measured; a contended figure never enters a median;
* ``noisy`` - repeated runs spread more than the suite's noise threshold.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from openssl_matrix.core.statuses import (
    CANNOT_RUN,
    CONTENDED,
    ENGINE_NOT_ENGAGED,
    ENGINE_UNVERIFIED,
    LEGACY_PATH,
    MASK_NOT_APPLIED,
    MASK_OVERREACH,
    NOISY,
    SHARED_CORE,
    TIME_BASIS,
)
from openssl_matrix.core.version import series
from openssl_matrix.matrix.isa import (
    IA32CAP_BITS,
    IA32CAP_CPUINFO_FLAG,
    capabilities_of,
    ia32cap_expected_clear,
    known_flags,
    march_flags,
)
from openssl_matrix.measure import hostacct
from openssl_matrix.measure.benchfigure import BenchFigure, FindingRecord
from openssl_matrix.measure.invocation import CpuTimes

#: User CPU time below this share of the elapsed time marks ``time-basis``: the work ran
#: outside the process (AF_ALG work counts as system time, /dev/crypto work as neither).
#: A CPU-bound speed run on a quiet core gets 0.95-1.0. It used to be 0.5, set so that
#: runs on a busy host (0.55 seen) passed as ``ok``; a process that waited for a CPU is
#: now told apart by the host accounting and marked ``contended`` instead (then this
#: guard is not applied), so the ratio can say what a CPU-bound run gets.
USER_TIME_RATIO = hostacct.OWN_SHARE_MIN

#: Two figures closer than this (relative) are "the same" for the engine and mask checks.
SAME_FIGURE = 0.03

#: Parser statuses a guard may replace (the value is good, the label is the question).
_REPLACEABLE = ("ok", "imprecise")

#: When several guards concern one figure, the status shows the gravest.
PRIORITY = (CANNOT_RUN, ENGINE_NOT_ENGAGED, MASK_NOT_APPLIED, MASK_OVERREACH, CONTENDED,
            SHARED_CORE,
            LEGACY_PATH, ENGINE_UNVERIFIED, TIME_BASIS, NOISY)


@dataclass(frozen=True)
class Finding:
    """A guard's verdict on the figures of one invocation (or of the whole run)."""

    code: str
    message: str
    invocation: str | None = None
    """The invocation whose figures it concerns; None: every invocation of the run."""
    algorithms: tuple[str, ...] | None = None
    """Only these algorithm ids; None: every figure of the invocation."""

    def as_dict(self) -> FindingRecord:
        return FindingRecord(code=self.code, message=self.message, invocation=self.invocation,
                             algorithms=None if self.algorithms is None
                             else list(self.algorithms))

    def concerns(self, record: BenchFigure) -> bool:
        if self.invocation is not None and record.invocation != self.invocation:
            return False
        return self.algorithms is None or record.algorithm in self.algorithms


def apply_findings(records: Sequence[BenchFigure], findings: Iterable[Finding],
                   ) -> list[BenchFigure]:
    """The figure records with the statuses of the findings that concern them: new
    records, the given ones left as they are.

    ``guards`` lists every code; ``status`` becomes the gravest guard code (``PRIORITY``)
    unless the parser already refused the value (zero, unparsable ...); ``detail`` gains
    the messages.
    """
    found = list(findings)
    return [marked(rec, [f for f in found if f.concerns(rec)]) for rec in records]


def marked(rec: BenchFigure, findings: Sequence[Finding]) -> BenchFigure:
    """One figure with ``findings`` (each concerning it) applied: a new figure, ``rec``
    itself when none does."""
    if not findings:
        return rec
    codes = list(rec.guards)
    new = rec
    for f in findings:
        if f.code in codes:
            continue
        if not codes:
            new = new.with_(parser_status=rec.status)
        codes.append(f.code)
        if new.parser_status in _REPLACEABLE:
            new = new.with_(status=min(codes, key=lambda c: PRIORITY.index(c)
                                       if c in PRIORITY else len(PRIORITY)))
        detail = new.detail or ""
        new = new.with_(detail=f"{detail}; {f.message}" if detail else f.message)
    return new.with_(guards=codes)


# ----------------------------------------------------------------------------------
# engines


@dataclass(frozen=True)
class EngineCheck:
    """What ``openssl engine -t -c NAME`` said about an engine."""

    engine: str
    available: bool | None
    """True/False as ``openssl engine -t`` reports; None when it could not be asked."""
    detail: str


_ERROR_LINE = re.compile(r"^[0-9A-F]+:error:[0-9A-F]+:(?P<rest>.*)$")


def _error_summary(text: str, limit: int = 3) -> str:
    """OpenSSL's error-queue lines, shortened: ``e_afalg.c:797; dynamic_load:init failed``."""
    out: list[str] = []
    for line in text.splitlines():
        m = _ERROR_LINE.match(line.strip())
        if not m:
            continue
        parts = [p for p in m.group("rest").split(":")
                 if p and not re.fullmatch(r"lib\(\d+\)|func\(\d+\)|reason\(\d+\)|"
                                           r"[\w ]+ routines|", p)]
        # what is left: [function:]reason[:file:line][:extra]
        text_ = ":".join(parts)
        text_ = re.sub(r"(^|:)(crypto|engines)/[\w/]+\.c:\d+", lambda mm: mm.group(1)
                       + mm.group(0).split("/")[-1], text_)
        if text_ and text_ not in out:
            out.append(text_)
        if len(out) >= limit:
            break
    return "; ".join(out)[:240]


def read_engine_check(engine: str, exit_code: int, stdout: str, stderr: str) -> EngineCheck:
    """Interpret ``openssl engine -t -c ENGINE`` (pure)."""
    if re.search(r"Invalid command 'engine'|engine: not found|unknown command", stderr + stdout,
                 re.IGNORECASE):
        return EngineCheck(engine, None, "this build has no `openssl engine` command")
    if "[ available ]" in stdout:
        return EngineCheck(engine, True, "openssl engine -t: available")
    errors = _error_summary(stderr)
    if "[ unavailable ]" in stdout:
        return EngineCheck(engine, False, "openssl engine -t: [ unavailable ]"
                           + (f" ({errors})" if errors else ""))
    if exit_code != 0:
        return EngineCheck(engine, False, f"openssl engine -t exited {exit_code}"
                           + (f": {errors}" if errors else ""))
    return EngineCheck(engine, None, "openssl engine -t printed no verdict")


def engine_findings(invocation: str, engine: str, check: EngineCheck | None,
                    speed_stderr: str, *, path: str = "evp", version: str = "",
                    ) -> list[Finding]:
    """Was ``-engine ENGINE`` in use while ``invocation`` measured?"""
    if path == "legacy" and series(version) < (3, 0, 0):
        return [Finding(ENGINE_NOT_ENGAGED,
                        f"-engine {engine} without -evp: engines replace EVP ciphers and "
                        "digests, the low-level functions speed calls here never reach it",
                        invocation)]
    m = re.search(rf'invalid engine "{re.escape(engine)}"', speed_stderr, re.IGNORECASE)
    if m:
        why = _error_summary(speed_stderr)
        return [Finding(ENGINE_NOT_ENGAGED,
                        f"openssl speed could not set engine {engine} ({m.group(0)}"
                        + (f": {why}" if why else "") + "): the figures are the built-in "
                        "code's, not the engine's", invocation)]
    if check is not None and check.available is False:
        return [Finding(ENGINE_NOT_ENGAGED, f"engine {engine} is not usable here ({check.detail})"
                        ": the figures are the built-in code's", invocation)]
    if check is None or check.available is None:
        why = check.detail if check is not None else "not checked"
        return [Finding(ENGINE_UNVERIFIED, f"engine {engine} could not be verified ({why})",
                        invocation)]
    return []


def _pairs(a: Sequence[BenchFigure], b: Sequence[BenchFigure],
           ) -> list[tuple[float, float]]:
    """Values of figures with the same algorithm and block size in ``a`` and ``b``."""
    index = {(r.algorithm, r.block_size): r.bytes_per_s for r in b}
    out = []
    for r in a:
        x = r.bytes_per_s
        y = index.get((r.algorithm, r.block_size))
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and y > 0:
            out.append((float(x), float(y)))
    return out


def same_figures(a: Sequence[BenchFigure], b: Sequence[BenchFigure],
                 tolerance: float = SAME_FIGURE) -> bool | None:
    """True if every paired figure agrees within ``tolerance``; None if none pair up."""
    pairs = _pairs(a, b)
    if not pairs:
        return None
    return all(abs(x - y) / y <= tolerance for x, y in pairs)


def engine_vs_builtin_findings(invocation: str, engine: str,
                               engine_records: Sequence[BenchFigure],
                               builtin_records: Sequence[BenchFigure]) -> list[Finding]:
    """An engine whose figures equal the built-in code's is not shown to be doing the work."""
    if same_figures(engine_records, builtin_records):
        return [Finding(ENGINE_UNVERIFIED,
                        f"with -engine {engine} every figure is within {SAME_FIGURE:.0%} of "
                        "the built-in code's: the engine may not be doing the work",
                        invocation)]
    return []


# ----------------------------------------------------------------------------------
# time basis

def time_basis_findings(invocation: str, times: CpuTimes | None, elapsed: float | None,
                        *, ratio: float = USER_TIME_RATIO) -> list[Finding]:
    """User CPU far below the elapsed time: the work did not run in this process."""
    if times is None or not elapsed or elapsed <= 0:
        return []
    share = times.user / elapsed
    if share >= ratio:
        return []
    factor = elapsed / times.user if times.user > 0 else math.inf
    where = ("system time: the kernel did the work" if times.system >= 0.5 * elapsed
             else "the work ran outside the process, or it waited for a CPU (busy host, "
             "CPU quota)")
    return [Finding(TIME_BASIS,
                    f"user CPU {times.user:.2f}s, system {times.system:.2f}s for "
                    f"{elapsed:.2f}s elapsed ({share:.0%} user; {where}). The elapsed figure "
                    f"is kept; a user-time figure (speed without -elapsed) would read "
                    f"{factor:.1f}x higher", invocation)]


def contended_findings(invocation: str, acct: hostacct.HostAccounting | None, *,
                       software: bool = True) -> list[Finding]:
    """The host was not quiet while ``invocation`` ran (see ``hostacct``)."""
    reasons = hostacct.contention_reasons(acct, software=software)
    if not reasons or acct is None:
        return []
    return [Finding(CONTENDED, "host not quiet: " + "; ".join(reasons) + f" ({acct.elapsed_s:.2f}"
                    "s run); kept, out of medians, measured again", invocation)]


# ----------------------------------------------------------------------------------
# the code path


def legacy_path_findings(invocation: str, version: str, path: str,
                         algorithms: Iterable[str]) -> tuple[list[Finding], list[str]]:
    """The low-level AES of 1.0.1-1.1.1 never reaches AES-NI; on 3.x there is no such path."""
    if path != "legacy":
        return [], []
    v = series(version)
    if v >= (3, 0, 0):
        return [], [f"OpenSSL {version} runs every algorithm through EVP; without -evp it "
                    "measures the same code"]
    aes = tuple(sorted({a for a in algorithms if a.startswith("aes-")}))
    if not aes or v < (1, 0, 1):
        return [], []
    return [Finding(LEGACY_PATH,
                    f"OpenSSL {version}'s low-level AES (speed without -evp) never uses "
                    "AES-NI: this is not the CPU's AES speed; the EVP path (-evp) is",
                    invocation, aes)], []


# ----------------------------------------------------------------------------------
# capability masks


def mask_syntax_findings(invocation: str, mask_name: str, value: str, version: str,
                         cpu_flags: Collection[str]) -> list[Finding]:
    """What an OPENSSL_ia32cap value does beyond its bits, from cryptlib.c's parser.

    From 1.1.0 a value without ``:`` sets the second capability word to 0: AVX2, SHA,
    BMI1/2, ADX and AVX-512 are turned off too. The 1.0.2 parser read here zeroes the
    second word before it reads a ``:~`` part, so there any value does it.
    """
    v = series(version)
    if v < (1, 0, 2) or (":" in value and (v >= (1, 1, 0) or not value.split(":")[1]
                                           .startswith("~"))):
        return []
    lost = sorted(name for name, (word, _) in IA32CAP_BITS.items()
                  if word == 1 and IA32CAP_CPUINFO_FLAG[name] in cpu_flags)
    if not lost:
        return []
    return [Finding(MASK_OVERREACH,
                    f"mask {mask_name} ({value}): OpenSSL {version} also clears the second "
                    f"capability word, so {', '.join(lost)} are off too"
                    + (" (write it as VALUE:~0x0 to keep them)" if v >= (1, 1, 0) else ""),
                    invocation)]


def mask_vector_findings(invocation: str, mask_name: str, value: str,
                         native: tuple[int, int] | None, masked: tuple[int, int] | None,
                         ) -> list[Finding]:
    """Compare the capability vectors 3.x printed without and with the mask."""
    if native is None or masked is None:
        return []
    clear = ia32cap_expected_clear(value)
    if clear is None:
        return []
    findings: list[Finding] = []
    still = [name for name, (w, bit) in IA32CAP_BITS.items()
             if clear[w] >> bit & 1 and masked[w] >> bit & 1]
    if still:
        findings.append(Finding(MASK_NOT_APPLIED,
                                f"mask {mask_name} ({value}) left {', '.join(sorted(still))} "
                                f"on: OpenSSL reported OPENSSL_ia32cap={masked[0]:#x}:"
                                f"{masked[1]:#x}", invocation))
    asked = {name for name, (w, bit) in IA32CAP_BITS.items() if clear[w] >> bit & 1}
    extra = sorted(capabilities_of(native) - capabilities_of(masked) - asked)
    if extra:
        findings.append(Finding(MASK_OVERREACH,
                                f"mask {mask_name} ({value}) also turned off "
                                f"{', '.join(extra)}: OpenSSL reported OPENSSL_ia32cap="
                                f"{masked[0]:#x}:{masked[1]:#x} (without it {native[0]:#x}:"
                                f"{native[1]:#x})", invocation))
    return findings


def mask_effect_findings(invocation: str, mask_name: str, off: Collection[str],
                         masked_records: Sequence[BenchFigure],
                         native_records: Sequence[BenchFigure],
                         cpu_flags: Collection[str]) -> list[Finding]:
    """An AES-NI mask that leaves EVP AES figures unchanged did not take effect."""
    if "aesni" not in off or "aes" not in cpu_flags:
        return []
    aes_masked = [r for r in masked_records
                  if (r.algorithm or "").startswith("aes-") and r.evp]
    if same_figures(aes_masked, native_records):
        return [Finding(MASK_NOT_APPLIED,
                        f"mask {mask_name} turns AES-NI off, yet the EVP AES figures are "
                        f"within {SAME_FIGURE:.0%} of the unmasked run: it did not take effect",
                        invocation, tuple(sorted({str(r.algorithm) for r in aes_masked})))]
    return []


def mask_names_off(value: str | None, off: Collection[str]) -> set[str]:
    """Capability names a mask turns off (from ``off`` or a literal ``~`` value)."""
    if off:
        return set(off)
    clear = ia32cap_expected_clear(value or "")
    if clear is None:
        return set()
    return {name for name, (w, bit) in IA32CAP_BITS.items() if clear[w] >> bit & 1}


# ----------------------------------------------------------------------------------
# can the binary run on the CPU?


def cpu_compat_problems(*, arch: str, march: str | None, endbr32: int | None,
                        has: Collection[str], lacks: Collection[str]) -> list[str]:
    """Why a binary would not run on a CPU with flags ``has`` and without ``lacks``."""
    problems: list[str] = []
    if arch == "i386" and endbr32 and "nopl" in lacks:
        problems.append(f"libcrypto holds {endbr32} ENDBR32 instructions (0f 1e hint NOPs); "
                        "a CPU without long NOPs (nopl) stops on them with SIGILL")
    need = march_flags(march)
    if need:
        missing = [f for f in need if f in lacks]
        if missing:
            problems.append(f"built with -march={march}, which lets gcc use "
                            f"{', '.join(missing)}; the CPU lacks them")
    return problems


def measured_cpu_sets(flags: Collection[str]) -> tuple[set[str], set[str]]:
    """(has, lacks) of a CPU whose full flag list is known."""
    has = set(flags)
    return has, (known_flags() | {"nopl"}) - has


def profile_cpu_sets(flags: Collection[str], lacks: Collection[str], march: str | None,
                     ) -> tuple[set[str], set[str]]:
    """(has, lacks) of a profile's CPU: its flags, its -march's, its declared lacks.

    A profile's ``march`` names the CPU (c3-2, znver2 ...), so every extension the -march
    table knows that the CPU's march does not imply (and its flags do not add) is absent.
    """
    implied = march_flags(march)
    has = set(flags) | set(implied or ())
    absent = set(lacks)
    if march is not None and implied is not None:
        absent |= known_flags() - has
    return has, absent


# ----------------------------------------------------------------------------------
# repetitions


@dataclass(frozen=True)
class Spread:
    """Median and spread of one figure over repeated runs."""

    n: int
    median: float
    min: float
    max: float
    cv: float | None
    """Sample standard deviation over the mean; None with fewer than two samples."""
    noisy: bool


def spread(values: Sequence[float], threshold: float) -> Spread | None:
    """Median, min, max and coefficient of variation of ``values`` (None if empty)."""
    vals = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    if not vals:
        return None
    cv: float | None = None
    if len(vals) >= 2:
        mean = statistics.fmean(vals)
        cv = statistics.stdev(vals) / mean if mean > 0 else None
    return Spread(n=len(vals), median=statistics.median(vals), min=min(vals), max=max(vals),
                  cv=cv, noisy=cv is not None and cv > threshold)
