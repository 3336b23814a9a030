"""The bench's records of figures and findings, typed.

A figure travels through the bench as a frozen :class:`BenchFigure`: a reader makes it
(``openssl speed``'s through ``parse.figure_records``, ``s_time``'s in ``tls``, the
harness's in ``library``), the guards return it marked (``guards.apply_findings``), the
cell adds the core clock and cycles (each a new figure, never one changed in place), and
``results.records.write_figures`` checks its :meth:`BenchFigure.to_json` into
``figures.json``. :class:`FigureFields` names every key a reader or the bench sets, so a
misspelt key or a wrong kind of value fails ``mypy`` instead of reaching the tree; the
record filed is the one the dicts this type replaced gave, key for key.

Beside it: a finding as filed (:class:`FindingRecord`), the wait for a quiet host
(:class:`SettleRecord`), a repeated bench's series (:class:`SeriesHead`) and its rows
(:class:`SeriesRow`). The run record itself is ``runrecord``'s. Those are ``TypedDict``s:
each describes JSON on disk (a run record's ``findings`` and ``settle``, a series file),
filed as built.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from openssl_matrix.measure.hostacct import AccountingRecord, HostAccounting

if TYPE_CHECKING:
    from typing import Unpack  # 3.11: the package runs on 3.10, mypy checks as 3.11

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


class FigureFields(TypedDict, total=False):
    """A figure's keys as ``figures.json`` holds them, with their types: what
    :meth:`BenchFigure.of` and :meth:`BenchFigure.with_` take (so ``mypy`` checks every
    key a reader sets) and the fields :class:`BenchFigure` has, one for one."""

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


@dataclass(frozen=True, slots=True)
class BenchFigure:
    """One figure as the bench builds it (a record of ``figures.json``), frozen: a reader
    makes it (:meth:`of`, :meth:`from_json`), the guards and the cell make new ones from
    it (:meth:`with_`, :meth:`without`), and :meth:`to_json` gives the very record filed.

    ``given`` holds the keys the figure has: a key set to None is filed as ``null``, one
    never set is not filed at all, exactly as the dicts this type replaced. A field not
    given reads None (``guards``: empty).
    """

    # parse.figures.Figure's fields (every reader sets these)
    algorithm: str | None = None
    label: str | None = None
    evp: bool | None = None
    block_size: int | None = None
    bytes_per_s: float | None = None
    ops_per_s: float | None = None
    operation: str | None = None
    status: str | None = None
    detail: str | None = None
    bits: int | None = None
    seconds_per_op: float | None = None
    raw: str | None = None
    # what ran it (the cell, or the TLS and harness readers)
    mask: str | None = None
    ia32cap: str | None = None
    invocation: str | None = None
    engine: str | None = None
    path: str | None = None
    direction: str | None = None
    multi: int | None = None
    # the guards (guards.apply_findings)
    guards: tuple[str, ...] = ()
    parser_status: str | None = None
    # the host around the run (hostacct) and the core clock (the cell)
    own_share: float | None = None
    foreign_cores: float | None = None
    steal_cores: float | None = None
    host_accounting: AccountingRecord | None = None
    clock_hz: float | None = None
    cycles_per_byte: float | None = None
    cycles_per_op: float | None = None
    # a PTS-comparable suite's result (pts_comparable kinds)
    pts_result: str | None = None
    pts_unit: str | None = None
    pts_profile: str | None = None
    # a non-speed figure's unit (TLS handshakes, the library harness)
    unit: str | None = None
    # the TLS runner's (tls._run_record)
    protocol: str | None = None
    protocol_label: str | None = None
    key: str | None = None
    cipher: str | None = None
    group: str | None = None
    tls_pinning: str | None = None
    server_cpu: str | None = None
    client_cpu: str | None = None
    connections: int | None = None
    wall_s: float | None = None
    server_cpu_s: float | None = None
    client_cpu_s: float | None = None
    server_busy: float | None = None
    client_busy: float | None = None
    bottleneck: str | None = None
    stime_real_seconds: int | None = None
    stime_user_rate: float | None = None
    resumed: int | None = None
    full: int | None = None
    stime_exit: str | None = None
    bytes_per_connection: float | None = None
    # the library harness's (library.timed_record, library.memory_record)
    threads: int | None = None
    operations: int | None = None
    elapsed_s: float | None = None
    thread_cpu_s: tuple[float, ...] | None = None
    per_thread_ops: str | None = None
    us_per_op: float | None = None
    cpu_us_per_op: float | None = None
    cpu_share: float | None = None
    api: str | None = None
    bytes: int | None = None
    bytes_min: int | None = None
    bytes_max: int | None = None
    allocs: int | None = None
    client_bytes: int | None = None
    allocated: int | None = None
    leaked: int | None = None
    repeats: int | None = None
    openssl_runtime: str | None = None
    openssl_header: str | None = None
    # the keys this figure has (set by a reader, the guards or the cell)
    given: frozenset[str] = frozenset()
    # keys of a figure read back (an earlier run's figures.json) that this type does not
    # name: kept, and filed again unchanged
    extra: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def of(cls, **fields: Unpack[FigureFields]) -> BenchFigure:
        """A figure with exactly these keys."""
        return cls.from_json(fields)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> BenchFigure:
        """A figure from its record (``parse.figure_records``' dicts, a ``figures.json``
        record read back: its ``schema`` is the file's, not the figure's)."""
        values = {k: v for k, v in data.items() if k in _FIELDS}
        extra = {k: v for k, v in data.items() if k not in _FIELDS and k != "schema"}
        return cls(**_frozen(values), given=frozenset(values),  # type: ignore[arg-type]
                   extra=MappingProxyType(extra))

    def with_(self, **changes: Unpack[FigureFields]) -> BenchFigure:
        """A new figure: this one with these keys set."""
        return replace(self, **_frozen(changes),  # type: ignore[arg-type]
                       given=self.given | frozenset(changes))

    def without(self, key: str) -> BenchFigure:
        """A new figure: this one without ``key`` (its field back to None)."""
        if key not in self.given:
            return self
        return replace(self, **{key: _DEFAULTS[key]},  # type: ignore[arg-type]
                       given=self.given - {key})

    def to_json(self) -> dict[str, object]:
        """The record filed in ``figures.json`` (before its ``schema``): the keys given,
        lists as lists, and any kept ``extra`` keys."""
        out: dict[str, object] = dict(self.extra)
        for name in _FIELDS:
            if name in self.given:
                value = getattr(self, name)
                out[name] = list(value) if isinstance(value, tuple) else value
        return out

    def get(self, key: str, default: object = None) -> object:
        """The value of a key named at run time (a rate key, a cycles key), or
        ``default`` where the figure has no such key; typed code reads the fields."""
        if key in _FIELDS:
            return self[key] if key in self.given else default
        return self.extra.get(key, default)

    def __getitem__(self, key: str) -> Any:
        """A key as filed (KeyError where the figure has none), for a test or a generic
        reader that names keys as the file does; there is no way to set one."""
        if key in self.given:
            value = getattr(self, key)
            return list(value) if isinstance(value, tuple) else value
        return self.extra[key]

    def __contains__(self, key: str) -> bool:
        return key in self.given or key in self.extra


#: the fields a figure's record may have, in the order they are filed (sorted on disk)
_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(BenchFigure)
                                 if f.name not in ("given", "extra"))
_DEFAULTS: dict[str, object] = {f.name: f.default for f in fields(BenchFigure)
                                if f.name in _FIELDS}


def _frozen(values: Mapping[str, object]) -> dict[str, object]:
    """Lists (``guards``, ``thread_cpu_s``) as tuples: a frozen figure holds no list."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}


def bench_figures(records: Iterable[Mapping[str, object]]) -> list[BenchFigure]:
    """Records as the bench's figures: ``parse.figure_records``' dicts (the fields of
    ``parse.figures.Figure``, which :class:`FigureFields` names with their types), or a
    ``figures.json`` read back."""
    return [BenchFigure.from_json(r) for r in records]


def host_fields(acct: HostAccounting | None) -> FigureFields:
    """A timed figure's host columns around its window (as a speed figure's) and the whole
    accounting; all None without one (the TLS and library readers')."""
    if acct is None:
        return FigureFields(own_share=None, foreign_cores=None, steal_cores=None,
                            host_accounting=None)
    return FigureFields(own_share=None if acct.own_share is None else round(acct.own_share, 4),
                        foreign_cores=round(acct.foreign_cores, 4),
                        steal_cores=round(acct.steal_cores, 4), host_accounting=acct.as_dict())
