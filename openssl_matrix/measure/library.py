"""The library suite inside a bench run: the harness's invocations and its output read back.

A ``kind: library`` suite runs ``openssl-matrix-libbench`` (``images/harness.py`` builds it into a
sibling image of the variant's) once per operation and thread count, so a figure the
host disturbed is measured again alone, as a speed figure is. The harness prints (see
the opening comment of ``resources/harness/libbench.c``)::

    +LIB:begin:op=NAME:threads=T
    +HOSTSTAT 0            <- /proc/stat and the cgroup's CPU usage, just before …
    …
    +HOSTSTAT 1            <- … and just after the timed window
    +LIB:result:op=NAME:threads=T:status=ok:ops=N:elapsed_s=E:cpu_s=C1,C2:…
    +LIB:end:op=NAME

:func:`parse_library` turns that into figure records: operations per second over the
wall time of the window (all threads), µs per operation (one thread's wall time per
operation: threads × elapsed / operations) and CPU µs per operation, each thread's CPU
time, and the host accounting (``hostacct``) with ``processes`` = the thread count, so
a 2-thread run beside a busy loop has its own share below ``OWN_SHARE_MIN`` or foreign
work above ``FOREIGN_CORES_MAX``: ``contended``, kept out of medians and measured again.
Memory figures (``memory``) are exact byte counts, not timed: no host accounting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from openssl_matrix.images.harness import BINARY
from openssl_matrix.matrix.libvocab import MEMORY_OPS, OPERATIONS, LibraryOptions, expand, lacks
from openssl_matrix.matrix.model import Mask, Suite
from openssl_matrix.measure import hostacct
from openssl_matrix.measure.benchfigure import BenchFigure, host_fields
from openssl_matrix.measure.guards import Finding, contended_findings
from openssl_matrix.measure.invocation import Invocation

PREFIX = "+LIB:"
UNIT = "ops/s"
MEMORY_UNIT = "bytes"
#: Seconds per run when the suite gives none.
DEFAULT_SECONDS = 1


@dataclass(frozen=True)
class LibraryInvocation(Invocation):
    """One harness container: one operation at one thread count (or the memory set)."""

    operation: str = ""
    threads: int = 1

    @property
    def exec_command(self) -> list[str]:
        return list(self.command)


def invocation_name(op: str, threads: int) -> str:
    return f"lib--{op}" if op == "memory" else f"lib--{op}--t{threads}"


def library_invocations(version: str, suite: Suite, cpus: int,
                        ) -> tuple[list[Invocation], list[str]]:
    """The containers a library suite needs on ``version`` with ``cpus`` CPUs, and the
    notes of what was refused (said before anything runs)."""
    options = suite.library or LibraryOptions()
    seconds = suite.seconds or DEFAULT_SECONDS
    counts = options.counts(cpus)
    notes: list[str] = []
    too_many = [t for t in counts if t > cpus]
    if too_many:
        notes.append(f"{', '.join(map(str, too_many))} thread(s) on {cpus} CPU(s): the "
                     "threads share CPUs, so those figures measure time-slicing too")
    mask = suite.masks[0] if suite.masks else Mask("default", None)
    out: list[Invocation] = []
    for op in expand(suite.algorithms):
        why = lacks(version, op)
        if why is not None:
            notes.append(why)
            continue
        if op == "memory":
            command: tuple[str, ...] = (BINARY, *MEMORY_OPS)
            out.append(LibraryInvocation(name=invocation_name(op, 1), mask=mask,
                                         algorithm=op, command=command, env={},
                                         path="library", algorithms=(op,), operation=op,
                                         threads=1))
            continue
        for t in counts:
            command = (BINARY, "--seconds", str(seconds), "--threads", str(t), op)
            out.append(LibraryInvocation(name=invocation_name(op, t), mask=mask,
                                         algorithm=op, command=command, env={},
                                         path="library", algorithms=(op,), operation=op,
                                         threads=t))
    if len(suite.masks) > 1:
        notes.append("a library suite runs with the CPU as it is: its masks were not used")
    return out, notes


# ----------------------------------------------------------------------------------
# reading the output


@dataclass
class LibResult:
    """One ``+LIB:result`` (or ``refused``) line with the host samples before it."""

    op: str
    threads: int
    fields: dict[str, str]
    host: list[str] = field(default_factory=list)
    refused: bool = False


@dataclass
class LibOutput:
    header: dict[str, str] = field(default_factory=dict)
    results: list[LibResult] = field(default_factory=list)
    unended: list[str] = field(default_factory=list)
    """Operations that began and never printed their end (the process died)."""


def _fields(text: str) -> dict[str, str]:
    """``k=v:k=v`` where the last field (``what``/``reason``) may hold ':'."""
    out: dict[str, str] = {}
    parts = text.split(":")
    i = 0
    while i < len(parts):
        key, eq, value = parts[i].partition("=")
        if not eq:
            i += 1
            continue
        if key in ("what", "reason", "runtime"):
            # free text: up to the next k= field of the known ones
            rest = [value]
            while i + 1 < len(parts) and not re.match(r"^[a-z_]+=", parts[i + 1]):
                i += 1
                rest.append(parts[i])
            value = ":".join(rest)
        out[key] = value
        i += 1
    return out


def read_output(stdout: str) -> LibOutput:
    out = LibOutput()
    host: list[str] = []
    begun: list[str] = []
    for line in stdout.splitlines():
        if not line.startswith(PREFIX):
            host.append(line)
            continue
        tag, _, rest = line[len(PREFIX):].partition(":")
        f = _fields(rest)
        if tag == "openssl":
            out.header = f
        elif tag == "begin":
            host = []
            begun.append(f.get("op", "?"))
        elif tag in ("result", "refused"):
            try:
                threads = int(f.get("threads", "1"))
            except ValueError:
                threads = 0
            out.results.append(LibResult(f.get("op", "?"), threads, f, host,
                                         refused=tag == "refused"))
            host = []
        elif tag == "end":
            op = f.get("op", "?")
            if op in begun:
                begun.remove(op)
    out.unended = begun
    return out


def _num(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text not in (None, "") else None
    except ValueError:
        return None


def _cpu_list(text: str | None) -> list[float] | None:
    if not text:
        return None
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        return None


def host_of(result: LibResult) -> hostacct.HostAccounting | None:
    """The host around the timed window, judged as ``threads`` processes."""
    _, acct = hostacct.from_stderr("\n".join(result.host) + "\n",
                                   processes=max(1, result.threads))
    return acct


def _family(op: str) -> str:
    if op.startswith("mem-"):
        return "memory"
    o = OPERATIONS.get(op)
    return o.family if o else op


def timed_record(r: LibResult, inv_name: str) -> tuple[BenchFigure, list[Finding]]:
    f = r.fields
    ops, elapsed = _int(f.get("ops")), _num(f.get("elapsed_s"))
    cpu = _cpu_list(f.get("cpu_s"))
    status, detail, rate = "ok", "", None
    if f.get("status") != "ok":
        status, detail = "failed", f.get("reason") or f"harness status {f.get('status')}"
    elif ops is None or elapsed is None:
        status, detail = "unparsable", "no operation count or elapsed time"
    elif ops == 0:
        status, detail = "zero", "no operation finished in the budget"
    elif elapsed <= 0:
        status, detail = "unparsable", "elapsed time not positive"
    else:
        rate = ops / elapsed
    acct = host_of(r) if status == "ok" else None
    threads = max(1, r.threads)
    cpu_total = sum(cpu) if cpu else None
    rec = BenchFigure.of(
        algorithm=r.op, label=f.get("what") or r.op, operation=_family(r.op),
        evp=None, block_size=None, bytes_per_s=None, ops_per_s=rate,
        status=status, detail=detail, unit=UNIT, threads=threads,
        operations=ops, elapsed_s=elapsed, thread_cpu_s=cpu,
        per_thread_ops=f.get("per_thread_ops"),
        us_per_op=None if not ops or elapsed is None else 1e6 * threads * elapsed / ops,
        cpu_us_per_op=None if not ops or cpu_total is None else 1e6 * cpu_total / ops,
        cpu_share=None if not cpu or not elapsed else
        round(sum(cpu) / (elapsed * threads), 4),
        api=None if f.get("api") in (None, "-") else f.get("api"),
        bytes=None, invocation=inv_name,
        raw="",
    ).with_(**host_fields(acct))
    return rec, contended_findings(inv_name, acct)


def memory_record(r: LibResult, inv_name: str) -> BenchFigure:
    f = r.fields
    value = _int(f.get("bytes"))
    ok = f.get("status") == "ok" and value is not None
    return BenchFigure.of(
        algorithm=r.op, label=f.get("what") or r.op, operation="memory",
        evp=None, block_size=None, bytes_per_s=None, ops_per_s=None,
        status="ok" if ok else "failed",
        detail="" if ok else (f.get("reason") or "no byte count"), unit=MEMORY_UNIT,
        threads=1, bytes=value, bytes_min=_int(f.get("bytes_min")),
        bytes_max=_int(f.get("bytes_max")), allocs=_int(f.get("allocs")),
        client_bytes=_int(f.get("client_bytes")), allocated=_int(f.get("allocated")),
        leaked=_int(f.get("leaked")), repeats=_int(f.get("repeats")),
        invocation=inv_name, own_share=None, foreign_cores=None,
        steal_cores=None, host_accounting=None, raw="",
    )


def parse_library(inv: Invocation, stdout: str,
                  ) -> tuple[list[BenchFigure], float | None, list[Finding], list[str]]:
    """Figure records, elapsed seconds, guard findings and warnings of one harness run."""
    out = read_output(stdout)
    records: list[BenchFigure] = []
    findings: list[Finding] = []
    warnings: list[str] = []
    if not out.header:
        warnings.append("the harness printed no +LIB:openssl line")
    for r in out.results:
        if r.refused:
            warnings.append(f"{r.op}: refused by the harness: {r.fields.get('reason')}")
            continue
        if r.op.startswith("mem-"):
            records.append(memory_record(r, inv.name))
        else:
            rec, found = timed_record(r, inv.name)
            records.append(rec)
            findings.extend(found)
        if records[-1].status != "ok":
            warnings.append(f"{r.op}: {records[-1].detail}")
    for op in out.unended:
        warnings.append(f"{op}: the harness began it and never ended it")
    records = [rec.with_(mask=inv.mask.name, ia32cap=None, engine=None, path="library",
                         direction=None, multi=None, openssl_runtime=out.header.get("runtime"),
                         openssl_header=out.header.get("header")) for rec in records]
    elapsed = sum(t for r in records if isinstance(t := r.get("elapsed_s"), float)) or None
    return records, elapsed, findings, warnings
