"""The Phoronix Test Suite's ``pts/openssl`` test profile, as data: a PTS-comparable suite.

A ``kind: pts`` suite runs what pts/openssl runs and reads the column it reads, with this
tool's host accounting, intervals and statuses on top. Everything here was read in the
public test profile and in pts-core (read, never copied; none of their files is in this
repository):

* ``PROFILE_SOURCE``: install.sh builds OpenSSL (``./config no-zlib``) and runs
  ``openssl speed -multi $NUM_CPU_CORES -seconds 30 ARGS > $LOG_FILE 2>&1`` with ARGS one
  of the ``algo`` menu (test-definition.xml); ``TimesToRun`` 3; results-definition.xml
  gives each result an ``OutputTemplate`` (the result's column), a ``LineHint`` and a
  ``ResultScale`` (its unit);
* ``PTS_CORE_SOURCE``: how pts-core reads a result (the *last* line of the log holding the
  hint, split at blanks, the token at the template's position, a trailing ``k`` taken as
  x1000) and when it adds runs (the runs' percent standard deviation >= 3.0, up to 4x
  TimesToRun for runs under two minutes, 3x under four, else 2x).

:func:`pts_value` is that reading rule, written here for the comparison script
(benchmarks/pts_compare.py), which runs the same binary the PTS way.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from openssl_matrix.core.version import series

PROFILE = "pts/openssl-3.6.0"
PROFILE_SOURCE = ("github.com/phoronix-test-suite/phoronix-test-suite, "
                  "ob-cache/test-profiles/pts/openssl-3.6.0/{install.sh,test-definition.xml,"
                  "results-definition.xml} at commit a53645288edeb22aa7864eeef57a3bb681fbc6ce "
                  "(2026-01-01); pts/openssl-3.1.0 in the same folder for the RSA row of "
                  "pre-3.2 output")
PTS_CORE_SOURCE = ("pts-core/objects/pts_test_result_parser.php (parse_result_process_entry, "
                   "strip_result_cleaner) and pts-core/objects/client/pts_test_run_manager.php "
                   "(increase_run_count_check), phoronix-test-suite commit 84227e6aac22 "
                   "(2026-06-13)")

#: install.sh: ``-seconds 30``; test-definition.xml: ``<TimesToRun>3</TimesToRun>``.
SECONDS = 30
TIMES_TO_RUN = 3
#: pts_test_run_manager: StandardDeviationThreshold default 3.0 (per cent).
RSD_THRESHOLD = 0.03


@dataclass(frozen=True)
class Reader:
    """One ResultsParser of a profile: the hint it searches and the token it takes."""

    line_hint: str
    column: int
    """0-based position in the hint line split at blanks (the template's #_RESULT_#)."""
    profile: str = PROFILE


@dataclass(frozen=True)
class PtsResult:
    """One result pts/openssl reports."""

    title: str
    """The result as PTS names it: the ``algo`` menu entry (+ the unit for RSA)."""
    unit: str
    """PTS's ResultScale."""
    figure: str
    """Our parser's algorithm id of the row."""
    operation: str | None
    block_size: int | None
    """The column PTS reads, as a block size (None: an operations row)."""
    readers: tuple[Reader, ...]
    """PTS's parsers that can find it, in the order tried."""


@dataclass(frozen=True)
class PtsOption:
    """One entry of pts/openssl's ``algo`` menu."""

    name: str
    """Our suite's name for it."""
    menu: str
    """The menu entry's Name."""
    args: tuple[str, ...]
    """The menu entry's Value: what PTS appends to ``openssl speed``."""
    since: tuple[int, int, int]
    seen: str
    results: tuple[PtsResult, ...]


# The hint line templates of results-definition.xml, as token positions: for the symmetric
# rows "NAME v16 v64 #_RESULT_# ..." (256 bytes) for sha256/sha512 and "NAME v16 v64 v256
# v1024 #_RESULT_# v16384" (8192 bytes) for the ciphers; the RSA row of 3.6.0's template
# is 3.2+'s four-time form "rsa  4096 bits t t t t #_RESULT_# ...".
_CIPHER_COL = 5
_DIGEST_COL = 3


def _cipher(name: str, menu: str, hint: str, since: tuple[int, int, int],
            seen: str) -> PtsOption:
    readers = (Reader("evp", _CIPHER_COL),) + ((Reader(hint, _CIPHER_COL),) if hint else ())
    return PtsOption(name, menu, ("-evp", name), since, seen,
                     (PtsResult(menu, "byte/s", name, None, 8192, readers),))


OPTIONS: dict[str, PtsOption] = {o.name: o for o in (
    PtsOption("rsa4096", "RSA4096", ("rsa4096",), (0, 9, 8), "pkey.py's rsa4096", (
        PtsResult("RSA4096 sign/s", "sign/s", "rsa-4096", "sign", None,
                  (Reader("rsa  4096 bits", 7), Reader("rsa 4096 bits", 5,
                                                        "pts/openssl-3.1.0"))),
        PtsResult("RSA4096 verify/s", "verify/s", "rsa-4096", "verify", None,
                  (Reader("rsa  4096 bits", 8), Reader("rsa 4096 bits", 6,
                                                        "pts/openssl-3.1.0"))))),
    PtsOption("sha256", "SHA256", ("sha256",), (0, 9, 8), "speed's sha256 test", (
        PtsResult("SHA256", "byte/s", "sha256", None, 256, (Reader("sha256", _DIGEST_COL),)),)),
    PtsOption("sha512", "SHA512", ("sha512",), (0, 9, 8), "speed's sha512 test", (
        PtsResult("SHA512", "byte/s", "sha512", None, 256, (Reader("sha512", _DIGEST_COL),)),)),
    _cipher("aes-128-gcm", "AES-128-GCM", "AES-128-GCM", (1, 0, 1), "aead.ALGORITHMS"),
    _cipher("aes-256-gcm", "AES-256-GCM", "AES-256-GCM", (1, 0, 1), "aead.ALGORITHMS"),
    _cipher("chacha20", "ChaCha20", "ChaCha20", (1, 1, 0),
            "1.1.1w CHANGES: ChaCha20 added under 1.0.2h -> 1.1.0"),
    # PTS has no hint of its own for it: its "ChaCha20" hint also matches 3.x's
    # "ChaCha20-Poly1305" row, and 1.1.1's parent names the row "evp"
    _cipher("chacha20-poly1305", "ChaCha20-Poly1305", "ChaCha20", (1, 1, 0),
            "aead.ALGORITHMS"),
)}


def unknown(names: Sequence[str]) -> list[str]:
    return [n for n in names if n not in OPTIONS]


@dataclass(frozen=True)
class PtsPlan:
    version: str
    options: tuple[PtsOption, ...]
    refused: tuple[str, ...]


def plan(version: str, names: Sequence[str], configure: Sequence[str] = ()) -> PtsPlan:
    """The menu entries ``version`` can run, and notes for those it cannot."""
    v = series(version)
    runs: list[PtsOption] = []
    refused: list[str] = []
    for name in names:
        o = OPTIONS.get(name)
        if o is None:
            refused.append(f"{name}: not measured: not an entry of {PROFILE}'s algo menu")
            continue
        if v < o.since:
            refused.append(f"{name}: not measured: OpenSSL {version} has no such test (from "
                           f"{'.'.join(map(str, o.since))}; {o.seen})")
            continue
        gone = [c for c in configure if (name.startswith("chacha") and c == "no-chacha")
                or (name == "rsa4096" and c == "no-rsa")]
        if gone:
            refused.append(f"{name}: not measured: this build was configured with "
                           f"{', '.join(gone)}")
            continue
        runs.append(o)
    return PtsPlan(version, tuple(runs), tuple(refused))


def result_for(figure: str, operation: str | None, block_size: int | None
               ) -> PtsResult | None:
    """The PTS result a figure of ours corresponds to (None: PTS does not report it)."""
    for o in OPTIONS.values():
        for r in o.results:
            if (r.figure, r.operation, r.block_size) == (figure, operation, block_size):
                return r
    return None


# ----------------------------------------------------------------------------------
# pts-core's reading of a log


def _token_value(token: str) -> float | None:
    """pts-core's strip_result_cleaner + is_numeric: a number, or one with a trailing
    k/m (x1000, x1000000)."""
    try:
        return float(token)
    except ValueError:
        pass
    scale = {"k": 1e3, "m": 1e6}.get(token[-1:].lower()) if len(token) > 1 else None
    if scale is None:
        return None
    try:
        value = float(token[:-1]) * scale
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def pts_value(log: str, reader: Reader) -> float | None:
    """What pts-core reads from ``log`` with one ResultsParser: the last line holding the
    hint, blanks (and tabs, parentheses) collapsed, the token at the template's position;
    if that line is too short, once more with a blank after every ``:``."""
    pos = log.rfind(reader.line_hint.strip())
    if pos < 0:
        return None
    end = log.find("\n", pos)
    line = log[log.rfind("\n", 0, pos) + 1: end if end >= 0 else len(log)]
    for attempt in (line, line.replace(":", ": ")):
        tokens = attempt.replace("(", " ").replace(")", " ").replace("\t", " ").split()
        if len(tokens) > reader.column:
            return _token_value(tokens[reader.column])
        if ":" not in line:
            break
    return None


def read_result(log: str, result: PtsResult) -> tuple[float | None, Reader | None]:
    """The first of ``result``'s readers that finds a number in ``log``, and which."""
    for reader in result.readers:
        value = pts_value(log, reader)
        if value is not None:
            return value, reader
    return None, None


# ----------------------------------------------------------------------------------
# pts-core's run count


def percent_std_dev(values: Sequence[float]) -> float:
    """pts_math::percent_standard_deviation: sample standard deviation over the mean."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else 0.0


def max_runs(scheduled: int, run_seconds: float) -> int:
    """The most runs pts-core's dynamic run count goes to (increase_run_count_check)."""
    if run_seconds < 120:
        return scheduled * 4
    if run_seconds < 240:
        return scheduled * 3
    return scheduled * 2


def needs_more_runs(values: Sequence[float], scheduled: int = TIMES_TO_RUN,
                    run_seconds: float = 0.0) -> bool:
    """pts-core's main test: another run while the percent standard deviation is at or
    above the threshold, below ``max_runs``. (Its later 'is it helping' extension past
    that maximum is not followed.)"""
    return (len(values) < scheduled or (
        percent_std_dev(values) >= RSD_THRESHOLD and len(values) < max_runs(scheduled,
                                                                             run_seconds)))
