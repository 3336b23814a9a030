"""Which cell of a matrix suite is profiled, and how its run under perf is read back.

``invoke matrix profile --suite NAME --cell TEXT`` names a cell the way the bench names a
figure of that suite's kind:

* a speed suite (``kind: speed``, the default): ``ALGORITHM:BYTES`` (``sha256:16``);
* ``kind: pkey``: ``ALGORITHM:OPERATION`` (``rsa2048:sign``; the figure id ``rsa-2048``
  is taken too);
* ``kind: tls``: ``PROTOCOL-KEY:OPERATION[:PINNING]`` (``tls1.3-rsa2048:handshake``;
  ``resume`` for resumed sessions; pinning: the suite's first unless given);
* ``kind: library``: ``OPERATION[:tTHREADS]`` (``pkey-decode-pem-rsa2048:t1``; the
  suite's first thread count unless given).

The invocation is the bench's own (``speed_invocations``, ``tls_invocations``,
``library_invocations`` on the suite narrowed to that cell), run under ``perf record``
as it is; the operations come from the kind's own parser of its output (speed's ``+R``
count of that phase, s_time's connection count, the harness's ``ops``), so a function's
ns per operation is per real operation, handshake or decoded key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import replace

from openssl_matrix.core.errors import BenchError, UsageError
from openssl_matrix.core.names import clip
from openssl_matrix.engine.backend import Backend, RunResult
from openssl_matrix.matrix.kinds import KINDS, kind_of
from openssl_matrix.matrix.kinds.base import RUNNER_S_TIME, RUNNER_SPEED
from openssl_matrix.matrix.kinds.library import MAX_THREADS
from openssl_matrix.matrix.libvocab import OPERATIONS, LibraryOptions, expand
from openssl_matrix.matrix.model import MAX_BYTES, Suite
from openssl_matrix.matrix.pkey import ALGORITHMS
from openssl_matrix.matrix.tlsvocab import OPERATION, PROTOCOLS, TlsOptions
from openssl_matrix.measure import hostacct, library, tls
from openssl_matrix.measure.invocation import Invocation
from openssl_matrix.measure.perfrun import (
    PLAIN_NAME,
    SCRIPT_MARKER,
    Cell,
    ProfileRun,
    SpeedCell,
    contended,
    failed,
    generic_script,
    limits,
    run_speed,
    samples_of,
)
from openssl_matrix.measure.speedcmd import speed_invocations
from openssl_matrix.measure.tlsbench import parse_tls, tls_invocations

_MODE_OF = {op: mode for mode, op in OPERATION.items()}


def _refuse(suite: Suite, text: str, why: str) -> UsageError:
    shown = cells_of(suite)
    return UsageError(f"--cell {clip(text)}: suite {suite.name} ({suite.kind or 'speed'}) "
                      f"has no such cell: {why}", hint="give one of its cells: "
                      + ", ".join(shown[:40]) + (" …" if len(shown) > 40 else ""))


def _count(text: str, low: int, high: int) -> int | None:
    """``text`` as a whole number of ASCII digits within [low, high]; else None."""
    if not re.fullmatch(r"[0-9]{1,9}", text):
        return None
    value = int(text)
    return value if low <= value <= high else None


def cells_of(suite: Suite) -> list[str]:
    """The cells of ``suite`` as ``--cell`` takes them (for a refusal's hint)."""
    grammar = suite.suite_kind.profile_cell
    return [] if grammar is None else _CELLS[grammar][0](suite)


def _speed_cells(suite: Suite) -> list[str]:
    return [f"{a}:{b}" for a in suite.algorithms for b in (suite.bytes,) if b] or \
        [f"{a}:BYTES" for a in suite.algorithms]


def _pkey_cells(suite: Suite) -> list[str]:
    return [f"{a}:{op}" for a in suite.algorithms if a in ALGORITHMS
            for op in ALGORITHMS[a].operations]


def _tls_cells(suite: Suite) -> list[str]:
    opts = suite.tls or TlsOptions()
    return [f"{p}-{k}:{OPERATION[m]}:{pin}" for p in opts.protocols for k in suite.algorithms
            for m in opts.modes for pin in opts.pinning]


def _library_cells(suite: Suite) -> list[str]:
    threads = (suite.library or LibraryOptions()).threads or (1,)
    return [f"{op}:t{t}" for op in expand(suite.algorithms) if op != "memory"
            for t in threads]


def _one(found: list[Invocation], notes: list[str], what: str, version: str,
         suite: Suite, text: str) -> Invocation:
    if len(found) > 1:  # the text names several runs of the suite (one per mask)
        raise UsageError(f"--cell {clip(text)}: matches {len(found)} runs of suite "
                         f"{suite.name} on {version} ("
                         + ", ".join(clip(i.name, 60) for i in found[:6])
                         + "): a profile is one run",
                         hint="profile a suite that runs the cell once (one mask): add "
                         "such a suite to the matrix, or use --algorithm/--bytes for a "
                         "speed cell")
    if len(found) != 1:
        raise BenchError(f"{what} is not one run on {version}: "
                         + ("; ".join(notes) or f"{len(found)} invocations"))
    return found[0]


def resolve(suite: Suite, text: str, version: str, configure: tuple[str, ...],
            seconds: int | None) -> Cell:
    """The cell ``text`` of ``suite`` on ``version``, as the bench would run it."""
    grammar = suite.suite_kind.profile_cell
    parts = [p.strip() for p in text.split(":")]
    if grammar is None:
        profiled = [k.name for k in KINDS.values() if k.profile_cell is not None]
        raise UsageError(f"suite {suite.name} is a {suite.kind} suite: profile takes "
                         + ", ".join(profiled) + " suites")
    return _CELLS[grammar][1](suite, parts, text, version, configure, seconds)


def _speed(suite: Suite, parts: list[str], text: str, version: str,
           configure: tuple[str, ...], seconds: int | None) -> Cell:
    size = _count(parts[1], 1, MAX_BYTES) if len(parts) == 2 else None
    if len(parts) != 2 or size is None or parts[0] not in suite.algorithms:
        raise _refuse(suite, text, "a speed cell is ALGORITHM:BYTES of its algorithms, "
                      f"BYTES a whole number from 1 to {MAX_BYTES}")
    speed = SpeedCell(parts[0], size, seconds or suite.seconds or 3)
    return replace(speed.cell(version), suite=suite.name)


def _pkey(suite: Suite, parts: list[str], text: str, version: str,
          configure: tuple[str, ...], seconds: int | None) -> Cell:
    by_figure = {a.figure: a.name for a in ALGORITHMS.values()}
    name = by_figure.get(parts[0], parts[0])
    alg = ALGORITHMS.get(name)
    if len(parts) != 2 or alg is None or name not in suite.algorithms \
            or parts[1] not in alg.operations:
        raise _refuse(suite, text, "a pkey cell is ALGORITHM:OPERATION")
    secs = seconds or suite.seconds or 3
    found, notes = speed_invocations(version, replace(suite, algorithms=(name,),
                                                      seconds=secs, multi=()), configure)
    inv = _one(found, notes, f"{name} {parts[1]}", version, suite, text)
    return Cell(suite.kind, suite.name, f"{name}:{parts[1]}", f"{suite.name}-{name}-{parts[1]}",
                inv, secs, operation=parts[1], algorithm=name)


def _tls(suite: Suite, parts: list[str], text: str, version: str,
         configure: tuple[str, ...], seconds: int | None) -> Cell:
    opts = suite.tls or TlsOptions()
    proto, _, key = parts[0].partition("-")
    pin = parts[2] if len(parts) > 2 else (opts.pinning[0] if opts.pinning else "same-core")
    if len(parts) not in (2, 3) or proto not in PROTOCOLS or key not in suite.algorithms \
            or parts[1] not in _MODE_OF or pin not in ("same-core", "cross-core"):
        raise _refuse(suite, text, "a tls cell is PROTOCOL-KEY:OPERATION[:PINNING]")
    secs = seconds or suite.seconds or opts.seconds
    narrowed = replace(suite, algorithms=(key,), seconds=secs,
                       tls=TlsOptions((proto,), (_MODE_OF[parts[1]],), (pin,), secs))
    found, notes = tls_invocations(version, narrowed, configure)
    inv = _one(found, notes, f"{parts[0]} {parts[1]}", version, suite, text)
    return Cell(suite.kind, suite.name, f"{parts[0]}:{parts[1]}:{pin}",
                f"{suite.name}-{parts[0]}-{parts[1]}-{pin}", inv, secs,
                operation=parts[1], algorithm=parts[0],
                unit="handshake" if parts[1] == "handshake" else "resumed connection")


def _library(suite: Suite, parts: list[str], text: str, version: str,
             configure: tuple[str, ...], seconds: int | None) -> Cell:
    threads = (suite.library or LibraryOptions()).threads or (1,)
    op = parts[0]
    t = parts[1].removeprefix("t") if len(parts) > 1 else str(threads[0])
    count = _count(t, 1, MAX_THREADS)
    if len(parts) > 2 or op not in expand(suite.algorithms) or op not in OPERATIONS \
            or OPERATIONS[op].family == "memory" or count is None:
        raise _refuse(suite, text, "a library cell is OPERATION[:tTHREADS], a timed "
                      "operation of the suite (memory is counted, not timed), THREADS "
                      f"from 1 to {MAX_THREADS}")
    t = str(count)
    secs = seconds or suite.seconds or library.DEFAULT_SECONDS
    narrowed = replace(suite, algorithms=(op,), seconds=secs,
                       library=LibraryOptions(threads=(int(t),)))
    found, notes = library.library_invocations(version, narrowed, int(t))
    inv = _one(found, notes, f"{op} at {t} thread(s)", version, suite, text)
    return Cell(suite.kind, suite.name, f"{op}:t{t}", f"{suite.name}-{op}-t{t}", inv, secs,
                operation=op, algorithm=op, threads=int(t))


#: Each cell grammar (a kind's ``profile_cell``): its cells, and one cell resolved.
_CELLS: dict[str, tuple[Callable[[Suite], list[str]], Callable[
    [Suite, list[str], str, str, tuple[str, ...], int | None], Cell]]] = {
    "ALGORITHM:BYTES": (_speed_cells, _speed),
    "ALGORITHM:OPERATION": (_pkey_cells, _pkey),
    "PROTOCOL-KEY:OPERATION[:PINNING]": (_tls_cells, _tls),
    "OPERATION[:tTHREADS]": (_library_cells, _library),
}


# -- running and reading --------------------------------------------------------------


def run_cell(backend: Backend, image: str, version: str, cell: Cell, *,
             profiled: bool = True) -> ProfileRun:
    """Run ``cell`` under perf in ``image`` (a profile image) and read what came back;
    ``profiled=False``: the same run without perf (the profiler's overhead)."""
    if kind_of(cell.kind).runner == RUNNER_SPEED:
        return run_speed(backend, image, version, cell, profiled=profiled)
    res = backend.run(image, ["/bin/sh", "-c", generic_script(profiled),
                              "openssl-profile-run" if profiled else PLAIN_NAME,
                              *cell.invocation.exec_command],
                      env={"HOME": "/tmp"}, limits=limits(cell))
    return read_cell(res, cell, profiled=profiled)


def read_cell(res: RunResult, cell: Cell, *, profiled: bool = True) -> ProfileRun:
    """A TLS or library cell's container output as a :class:`ProfileRun` (``profiled``
    False: a run without perf, no samples)."""
    out, marker, script = res.stdout.partition(SCRIPT_MARKER + "\n")
    if res.exit_code != 0 or not marker:
        raise failed(res, cell.command, script, res.stderr)
    if kind_of(cell.kind).runner == RUNNER_S_TIME:
        ops, secs, acct, window = _tls_work(out, cell)
    else:
        ops, secs, acct, window = _library_work(out, cell)
    return ProfileRun(command=cell.command,
                      samples=samples_of(script, window) if profiled else [], script=script,
                      operations=ops, seconds=secs, accounting=acct,
                      findings=contended(acct, cell.invocation.name), result=res,
                      extra={"window": window})


Work = tuple[int, float, hostacct.HostAccounting | None, tuple[float, float] | None]


def _tls_work(out: str, cell: Cell) -> Work:
    """s_time's connections and the script's wall time of the one measured section; its
    window (the script's ``date`` before and after s_time) selects the samples: key
    generation, the certificate, the server's start and the check are outside it."""
    records, _, _, warnings = parse_tls(cell.invocation, out)
    mine = [r for r in records if r.algorithm == cell.algorithm
            and r.operation == cell.operation]
    # a measured rate is a figure, flagged or not (``contended`` is the profile's own
    # status below); no rate: the run failed, or gave nothing to count
    if not mine or mine[0].ops_per_s is None:
        why = mine[0].detail if mine else "; ".join(warnings) or "no such section"
        raise BenchError(f"{cell.label}: the profiled handshake run gave no figure: {why}")
    rec = mine[0]
    section = next(s for s in tls.read_output(out).sections
                   if f"{s.protocol}-{cell.invocation.algorithm}" == cell.algorithm
                   and OPERATION.get(s.mode) == cell.operation)
    try:
        window = (float(section.end["wall0"]), float(section.end["wall1"]))
    except (KeyError, ValueError) as exc:
        raise BenchError(f"{cell.label}: the handshake run printed no wall times") from exc
    conns, wall = rec.connections, rec.wall_s
    if conns is None or wall is None:  # a rate has both: not reached
        raise BenchError(f"{cell.label}: the handshake run has no count or wall time")
    return int(conns), float(wall), tls.host_accounting(section), window


def _library_work(out: str, cell: Cell) -> Work:
    """The harness's operations and its window's thread-seconds (threads × elapsed: one
    thread's time per operation, the bench's µs/op). The harness's result line gives its
    timed window on the realtime clock (``wall_start``/``wall_end``, the clock perf's
    ``-k CLOCK_REALTIME`` stamps samples with): only the samples in it are kept, so key
    and certificate loading and thread start are left out. A harness image built before
    it printed them gives no window: the samples are then the whole process's."""
    found = [r for r in library.read_output(out).results
             if r.op == cell.operation and not r.refused]
    if not found:
        raise BenchError(f"{cell.label}: the harness printed no result for {cell.operation}")
    rec, _ = library.timed_record(found[0], cell.invocation.name)
    if rec.status != "ok":
        raise BenchError(f"{cell.label}: the harness's run was {rec.status}: "
                         f"{rec.detail}")
    threads = max(1, found[0].threads)
    ops, elapsed = rec.operations, rec.elapsed_s
    if ops is None or elapsed is None:  # an ``ok`` record has both: not reached
        raise BenchError(f"{cell.label}: the harness's run has no count or elapsed time")
    return (int(ops), threads * float(elapsed),
            library.host_of(found[0]), timed_window(found[0].fields, cell.label))


def timed_window(fields: dict[str, str], label: str) -> tuple[float, float] | None:
    """The harness's timed window (``wall_start``, ``wall_end``: realtime seconds), or None
    when its result line has neither (an older harness); one without the other, or an
    end before the start, is a damaged line."""
    given = [fields.get("wall_start"), fields.get("wall_end")]
    if given == [None, None]:
        return None
    try:
        start, end = float(given[0] or "nan"), float(given[1] or "nan")
    except ValueError:  # text that is no number
        start = end = math.nan
    if not (math.isfinite(start) and math.isfinite(end) and start <= end):
        raise BenchError(f"{label}: the harness's timed window is damaged: wall_start="
                         f"{given[0]} wall_end={given[1]}")
    return start, end
