"""A bench run's record (``meta.json``) and its invocations' entries, typed.

The cell builds the record as the run goes (``cell.BenchCell``: ``status: running``
first, each invocation's entry as it ends, the findings and the clock at the end);
``results.records.write_meta`` checks and files it. At run time it is the very dict that
is filed: the typing changes no byte of ``meta.json``.

Every class here is a ``TypedDict`` on purpose: each describes JSON on disk (a part of
``meta.json``), written as the run goes and read back by ``results.records.RunMeta``; the
bench's own state (the cell, its outcome, its figures) is in frozen dataclasses
(``cell.BenchCell``, ``cell.CellOutcome``, ``benchfigure``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from openssl_matrix.measure.benchfigure import FindingRecord, SeriesHead, SettleRecord
from openssl_matrix.measure.hostacct import AccountingRecord
from openssl_matrix.measure.portshare import PortReadings
from openssl_matrix.measure.topology import TopologyRecord


class _InvocationStart(TypedDict):
    """The keys every entry of ``meta.json``'s ``invocations`` has (JSON on disk)."""

    name: str
    command: list[str]
    exec: list[str]
    env: dict[str, str]
    engine: str | None
    path: str
    direction: str | None
    multi: int | None
    exit_code: int
    started: str
    ended: str
    seconds: float
    cpu_times: dict[str, float] | None
    host_accounting: AccountingRecord | dict[str, AccountingRecord | None] | None
    """The invocation's reading; a kind with ``accounting_fields``: one per figure."""
    port_share: PortReadings


class InvocationEntry(_InvocationStart, total=False):
    """One invocation in a run record's ``invocations``: what ran and what it gave."""

    status: str
    elapsed_measured: float | None
    children: dict[str, object]
    placement: str
    figures: int


class HostStart(TypedDict):
    """The keys ``meta.json``'s ``host`` always has (JSON on disk)."""

    cpu_model: str
    cpu_vendor: str
    cpu_family: int | None
    cpu_model_number: int | None
    cpu_flags: list[str]
    cpu_mhz: float | None
    logical_cpus: int
    kernel: str | None
    microcode: str | None
    loadavg_before: str | None
    governor: str | None
    boost: str | None
    client_machine: str


class HostRecord(HostStart, total=False):
    """A run record's ``host``: the CPU and the host's state, and the cores' clock."""

    core_clock: dict[str, object]


class PinningRecord(TypedDict):
    """``meta.json``'s ``pinning``: the cpuset the containers ran on, and whose it was."""

    cpuset: str | None
    source: str | None


class SubsetRecord(TypedDict):
    """``meta.json``'s ``subset``: the invocations a re-measurement ran, and why."""

    invocations: list[str]
    why: str | None


class ClockRecord(TypedDict):
    """``meta.json``'s ``nominal_clock``: a clock in Hz and where it was read."""

    hz: float | None
    source: str | None


class _RunStart(TypedDict):
    """The keys ``meta.json`` has from the run's first write (JSON on disk)."""

    status: str
    cpu_profile: str
    cpu_dir: str
    forced: bool
    profile_mismatch: list[str]
    profile: Mapping[str, object] | None
    variant: Mapping[str, object]
    suite: Mapping[str, object]
    image_tag: str
    image_id: object
    build: dict[str, object]
    tarball_sha256: object
    openssl_version_a: str
    host: HostRecord
    pinning: PinningRecord
    topology: TopologyRecord | None
    speed_cpu_shares: int
    clock_hz: float | None
    clock_source: str | None
    round: int
    series: SeriesHead | None
    subset: SubsetRecord | None
    docker: Mapping[str, object]
    matrix_path: str
    matrix_digest: str
    git_commit: str | None
    started: str
    session: str | None
    settle: SettleRecord | None
    notes: list[str]
    invocations: list[InvocationEntry]


class RunRecord(_RunStart, total=False):
    """A bench run's ``meta.json`` as the cell builds it (``status: running`` first,
    the rest as the run goes); ``results.records.write_meta`` checks and files it."""

    engine_checks: dict[str, dict[str, object]]
    capability_vectors: dict[str, list[str] | None]
    nominal_clock: ClockRecord
    ended: str
    warnings: list[str]
    findings: list[FindingRecord]
