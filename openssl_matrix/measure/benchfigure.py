"""The bench's records of figures and findings, typed.

A figure travels through the bench as a JSON record: a reader makes it (``openssl
speed``'s through ``parse.figure_records``, ``s_time``'s in ``tls``, the harness's in
``library``), the guards mark it in place (``guards.apply_findings``), the cell adds the
core clock and cycles, and ``results.records.write_figures`` checks it into
``figures.json``. :class:`BenchFigure` names every key a reader or the bench sets, so a
misspelt key or a wrong kind of value fails ``mypy`` instead of reaching the tree; at run
time it is the very dict that is filed, so ``figures.json`` is unchanged by the typing.

Beside it: a finding as filed (:class:`FindingRecord`), the wait for a quiet host
(:class:`SettleRecord`), a repeated bench's series (:class:`SeriesHead`) and its rows
(:class:`SeriesRow`). The run record itself is ``runrecord``'s.

They are ``TypedDict``s because each describes JSON on disk (``figures.json``, a run
record's ``findings`` and ``settle``, a series file), filed as built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict, cast

from openssl_matrix.measure.hostacct import AccountingRecord

#: The keys of a figure's rate: per second of bytes (a block size) or of operations.
RateKey = Literal["bytes_per_s", "ops_per_s"]


class FindingRecord(TypedDict):
    """A guard's finding as a run's record files it (``guards.Finding.as_dict``)."""

    code: str
    message: str
    invocation: str | None
    algorithms: list[str] | None


class SettleRecord(TypedDict):
    """What the wait for a quiet host saw (a run record's ``settle``)."""

    waited_s: float
    quiet: bool
    last: str
    limit_s: float


class SeriesHead(TypedDict):
    """A repeated bench's series as its journal keeps it (a run record's ``series``)."""

    id: str
    rounds: int
    order: list[str]


class SeriesRow(TypedDict):
    """One figure over a repeated bench's attempts (``session.summarize_series``): a row
    of the series file's ``figures``."""

    invocation: str | None
    algorithm: str | None
    block_size: int | None
    operation: str | None
    unit: str
    samples: list[float]
    n: int
    clean: bool
    attempts: int
    clean_n: int
    contended: int
    median: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    median_all: float | None
    best: float | None
    shared_core: int
    min: float | None
    max: float | None
    cv: float | None
    noisy: bool
    median_cycles: float | None
    statuses: list[str]


class BenchFigure(TypedDict, total=False):
    """One figure as the bench builds it (a record of ``figures.json``)."""

    # parse.figures.Figure's fields (every reader sets these)
    algorithm: str
    label: str
    evp: bool | None
    block_size: int | None
    bytes_per_s: float | None
    ops_per_s: float | None
    operation: str | None
    status: str
    detail: str
    bits: int | None
    seconds_per_op: float | None
    raw: str
    # what ran it (the cell, or the TLS and harness readers)
    mask: str
    ia32cap: str | None
    invocation: str
    engine: str | None
    path: str
    direction: str | None
    multi: int | None
    # the guards (guards.apply_findings)
    guards: list[str]
    parser_status: str | None
    # the host around the run (hostacct) and the core clock (the cell)
    own_share: float | None
    foreign_cores: float | None
    steal_cores: float | None
    host_accounting: AccountingRecord | None
    clock_hz: float | None
    cycles_per_byte: float | None
    cycles_per_op: float | None
    # a PTS-comparable suite's result (pts_comparable kinds)
    pts_result: str
    pts_unit: str
    pts_profile: str
    # a non-speed figure's unit (TLS handshakes, the library harness)
    unit: str
    # the TLS runner's (tls._run_record)
    protocol: str
    protocol_label: str
    key: str
    cipher: str
    group: str | None
    tls_pinning: str
    server_cpu: str | None
    client_cpu: str | None
    connections: int | None
    wall_s: float | None
    server_cpu_s: float | None
    client_cpu_s: float | None
    server_busy: float | None
    client_busy: float | None
    bottleneck: str | None
    stime_real_seconds: int | None
    stime_user_rate: float | None
    resumed: int | None
    full: int | None
    stime_exit: str | None
    bytes_per_connection: float | None
    # the library harness's (library.timed_record, library.memory_record)
    threads: int
    operations: int | None
    elapsed_s: float | None
    thread_cpu_s: list[float] | None
    per_thread_ops: str | None
    us_per_op: float | None
    cpu_us_per_op: float | None
    cpu_share: float | None
    api: str | None
    bytes: int | None
    bytes_min: int | None
    bytes_max: int | None
    allocs: int | None
    client_bytes: int | None
    allocated: int | None
    leaked: int | None
    repeats: int | None
    openssl_runtime: str | None
    openssl_header: str | None


def bench_figures(records: Sequence[Mapping[str, object]]) -> list[BenchFigure]:
    """``parse.figure_records``'s dicts (the fields of ``parse.figures.Figure``, which
    :class:`BenchFigure` names with their types) as the bench's figures: the same dicts."""
    return [cast(BenchFigure, r) for r in records]
