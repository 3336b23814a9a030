"""An interleaved comparison's record (``_interleaved/…/<pair>/record.json``), typed.

A :class:`PairRecord` is one comparison of two sides (:class:`PairSide`: a build, and a
mask where there is one), with a :class:`PairRow` per algorithm and direction: the
harness's settings for it and, when some block of its windows had CPU time, its estimate
(:class:`PairEstimate`, measure/interleave.py's ratio and interval). measure/pairrun.py
makes them, measure/pairregime.py annotates and merges them, results/interleaved.py files
and reads them, the report, a reproduction and a bisection read them.

``to_json()`` is the very JSON the dicts these replaced were, and ``from_json()`` reads
every record written before them, so ``from_json(x).to_json() == x``: the keys a record
was written with (a field that older writers did not set, such as a row's ``rates_by``,
is ``None`` and left out again), and keys this code does not name, kept in ``extra`` and
written back unchanged (a newer writer's fields survive an older reader). A value of the
wrong JSON type raises :class:`~openssl_matrix.results.records.RecordError`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, cast

from openssl_matrix.results.records import (
    _CHECKS,
    BOOL,
    INT,
    LIST,
    NUM,
    OBJ,
    OPT_BOOL,
    OPT_INT,
    OPT_STR,
    STR,
    STR_LIST,
    RecordError,
    _show,
)

#: A record as JSON: what ``json`` reads and writes.
JsonObject = dict[str, object]

_NUMBER = "a number"


def _number(v: object) -> bool:
    return _CHECKS[NUM](v) and v is not None


@dataclass(frozen=True)
class _Json:
    """A JSON object with typed fields: ``_TYPES`` names each field's JSON type,
    ``_OPTIONAL`` the fields a record may not have (older ones do not): written when not
    ``None`` or when the record read had the key (``present``: a null it was written
    with); ``extra`` holds the keys a class does not name. Nested objects are converted
    by the subclass.

    ``record["key"]``, ``"key" in record`` and ``record.get("key")`` read the JSON as
    written, for generic readers and tests; typed code uses the attributes."""

    _TYPES: ClassVar[Mapping[str, str]] = MappingProxyType({})
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset()
    #: the optional keys the record was read (or made) with, null ones included
    present: frozenset[str] = field(default=frozenset(), compare=False, kw_only=True,
                                    repr=False)

    def to_json(self) -> JsonObject:
        return self._json()

    def __getitem__(self, key: str) -> Any:
        return self.to_json()[key]

    def __contains__(self, key: object) -> bool:
        return key in self.to_json()

    def get(self, key: str, default: Any = None) -> Any:
        return self.to_json().get(key, default)

    @classmethod
    def _read(cls, data: object, where: str) -> tuple[dict[str, object], JsonObject]:
        """The known keys' values (checked, every required one present) and the rest."""
        if not isinstance(data, dict):
            raise RecordError(f"{where}: expected a JSON object, found {type(data).__name__}")
        values: dict[str, object] = {}
        extra: JsonObject = {}
        for key, value in data.items():
            kind = cls._TYPES.get(key)
            if kind is None:
                extra[str(key)] = value
                continue
            ok = _number(value) if kind == _NUMBER else _CHECKS[kind](value)
            if not ok:
                raise RecordError(f"{where}: '{key}' is {_show(value)}, expected {kind}")
            values[key] = value
        for key in cls._TYPES:
            if key not in values and key not in cls._OPTIONAL:
                raise RecordError(f"{where}: the key '{key}' is missing")
        return values, extra

    def _json(self) -> JsonObject:
        """The named fields (nested objects as the subclass writes them) and ``extra``."""
        out: JsonObject = {}
        for f in dataclasses.fields(self):
            if f.name in self._TYPES:
                value = getattr(self, f.name)
                if value is None and f.name in self._OPTIONAL and f.name not in self.present:
                    continue
                if isinstance(value, _Json):
                    value = value.to_json()
                elif isinstance(value, tuple):
                    value = [v.to_json() if isinstance(v, _Json) else v for v in value]
                out[f.name] = value
        extra: Mapping[str, object] = getattr(self, "extra", {})
        return {**out, **extra}


@dataclass(frozen=True)
class PairSide:
    """One side of a comparison as filed: its variant and mask (``native`` for none), the
    ``OPENSSL_ia32cap`` value it ran under, and the version the harness loaded."""

    variant: str
    mask: str
    ia32cap: str | None = None
    version: str | None = None

    def to_json(self) -> JsonObject:
        return {"variant": self.variant, "mask": self.mask, "ia32cap": self.ia32cap,
                "version": self.version}

    @classmethod
    def from_json(cls, data: object, where: str) -> PairSide:
        if not isinstance(data, dict):
            raise RecordError(f"{where}: expected a JSON object, found {type(data).__name__}")
        got = [data.get(k) for k in ("variant", "mask", "ia32cap", "version")]
        if not all(isinstance(v, str) for v in got[:2]) \
                or not all(v is None or isinstance(v, str) for v in got[2:]):
            raise RecordError(f"{where}: not a side (variant, mask, ia32cap, version): "
                              f"{_show(data)}")
        return cls(str(got[0]), str(got[1]), _opt_str(got[2]), _opt_str(got[3]))


def _opt_str(v: object) -> str | None:
    return None if v is None else str(v)


@dataclass(frozen=True)
class PairEstimate(_Json):
    """The ratio B/A of a row's kept blocks and its 95 % interval (measure/interleave.py's
    ``Interleaved``, as filed). ``slowed``, ``disturbed``, ``ci_method``, ``median`` and
    ``rates_by`` are ``None`` in records written before they were; ``log_se`` (the
    log-ratio's standard error) and ``ci_df`` (its degrees of freedom), null without an
    interval, in records written before 2026-12-06. A row of several runs (runsmeta.py)
    keeps each run's own (``runs_detail``) and the pooled blocks' estimate (``pooled``),
    and where two or more had an interval their random-effects mean is the ratio:
    ``runs_units``, Cochran's ``runs_q``, the between-run ``runs_tau`` and whether the
    runs disagree beyond their intervals (``runs_disagree``)."""

    blocks: int
    preempted: int
    ratio: float
    ci_low: float | None
    ci_high: float | None
    geometric_mean: float
    rate_a: float
    rate_b: float
    slowed: int | None = None
    disturbed: bool | None = None
    ci_method: str | None = None
    median: float | None = None
    rates_by: str | None = None  #: "wall" or "cpu" (rates by thread CPU time)
    log_se: float | None = None
    ci_df: float | None = None
    runs_detail: tuple[RunDetail, ...] | None = None
    pooled: PooledRatio | None = None
    runs_units: int | None = None
    runs_q: float | None = None
    runs_tau: float | None = None
    runs_disagree: bool | None = None

    _TYPES = MappingProxyType({
        "blocks": INT, "preempted": INT, "slowed": INT, "disturbed": BOOL, "ratio": _NUMBER,
        "ci_low": NUM, "ci_high": NUM, "geometric_mean": _NUMBER, "rate_a": _NUMBER,
        "rate_b": _NUMBER, "ci_method": STR, "median": _NUMBER, "rates_by": STR,
        "log_se": NUM, "ci_df": NUM, "runs_detail": LIST, "pooled": OBJ, "runs_units": INT,
        "runs_q": NUM, "runs_tau": NUM, "runs_disagree": BOOL})
    _OPTIONAL = frozenset({"slowed", "disturbed", "ci_method", "median", "rates_by",
                           "log_se", "ci_df", "runs_detail", "pooled", "runs_units",
                           "runs_q", "runs_tau", "runs_disagree"})

    @classmethod
    def from_json(cls, data: Mapping[str, object], where: str) -> PairEstimate:
        known = {k: v for k, v in data.items() if k in cls._TYPES}
        values, _ = cls._read(known, where)
        if values.get("runs_detail") is not None:
            values["runs_detail"] = tuple(
                RunDetail.from_json(d, f"{where}: runs_detail")
                for d in cast(list[object], values["runs_detail"]))
        if values.get("pooled") is not None:
            values["pooled"] = PooledRatio.from_json(values["pooled"], f"{where}: pooled")
        return cls(**values, present=frozenset(values))  # type: ignore[arg-type]

    @property
    def run_ratios(self) -> tuple[float, ...]:
        """Each run's own ratio, of the runs that had one (none for a single run)."""
        return tuple(d.ratio for d in self.runs_detail or () if d.ratio is not None)


@dataclass(frozen=True)
class RunDetail(_Json):
    """One run of a row of several: its own ratio and interval (null: no block had CPU
    time, or too few for an interval) and blocks kept (runsmeta.py)."""

    run: int
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    blocks: int
    rates_by: str | None = None
    disturbed: bool | None = None
    extra: Mapping[str, object] = field(default_factory=dict, compare=False)

    _TYPES = MappingProxyType({"run": INT, "ratio": NUM, "ci_low": NUM, "ci_high": NUM,
                               "blocks": INT, "rates_by": STR, "disturbed": BOOL})
    _OPTIONAL = frozenset({"rates_by", "disturbed"})

    @classmethod
    def from_json(cls, data: object, where: str) -> RunDetail:
        values, extra = cls._read(data, where)
        return cls(**values, extra=extra, present=frozenset(values))  # type: ignore[arg-type]


@dataclass(frozen=True)
class PooledRatio(_Json):
    """A row of several runs: the estimate of their blocks pooled (kept beside the
    runs' combination)."""

    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    extra: Mapping[str, object] = field(default_factory=dict, compare=False)

    _TYPES = MappingProxyType({"ratio": NUM, "ci_low": NUM, "ci_high": NUM})

    @classmethod
    def from_json(cls, data: object, where: str) -> PooledRatio:
        values, extra = cls._read(data, where)
        return cls(**values, extra=extra)  # type: ignore[arg-type]


@dataclass(frozen=True)
class SetAside(_Json):
    """A row's other run when its pair was measured again (measure/pairregime.py): the
    one whose slower side sat further below its best. Every key may be null."""

    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    blocks: int | None = None
    rate_a: float | None = None
    rate_b: float | None = None
    runs: int | None = None
    rate_share: float | None = None
    extra: Mapping[str, object] = field(default_factory=dict, compare=False)

    _TYPES = MappingProxyType({"ratio": NUM, "ci_low": NUM, "ci_high": NUM, "blocks": OPT_INT,
                               "rate_a": NUM, "rate_b": NUM, "runs": OPT_INT,
                               "rate_share": NUM})
    _OPTIONAL = frozenset(_TYPES)

    @classmethod
    def from_json(cls, data: object, where: str) -> SetAside:
        values, extra = cls._read(data, where)
        return cls(**values, extra=extra, present=frozenset(values))  # type: ignore[arg-type]

    def to_json(self) -> JsonObject:
        out = self._json()
        return {**{k: getattr(self, k) for k in self._TYPES}, **out}


#: A row's own keys (the estimate's are PairEstimate's).
_ROW_TYPES = MappingProxyType({
    "algorithm": STR, "block_size": INT, "direction": STR, "window_ms": _NUMBER,
    "seconds": _NUMBER, "runs": INT, "windows": INT, "rate_share": NUM, "low": BOOL,
    "set_aside": LIST})


@dataclass(frozen=True)
class PairRow(_Json):
    """One algorithm and direction of a comparison: the harness's settings, the runs and
    windows pooled, the estimate (``None``: no block of its windows had CPU time), and
    once the session's pairs are set against each other (``low`` not ``None``): the slower
    side's rate over its best (``rate_share``), whether that sits low, and the runs set
    aside for a run again nearer its best."""

    algorithm: str
    block_size: int
    direction: str
    window_ms: float
    seconds: float
    runs: int
    windows: int
    estimate: PairEstimate | None = None
    rate_share: float | None = None
    low: bool | None = None
    set_aside: tuple[SetAside, ...] = ()
    extra: Mapping[str, object] = field(default_factory=dict, compare=False)

    _TYPES = _ROW_TYPES
    _OPTIONAL = frozenset({"rate_share", "low", "set_aside"})

    @property
    def ratio(self) -> float | None:
        return None if self.estimate is None else self.estimate.ratio

    @property
    def ci_low(self) -> float | None:
        return None if self.estimate is None else self.estimate.ci_low

    @property
    def ci_high(self) -> float | None:
        return None if self.estimate is None else self.estimate.ci_high

    @property
    def rates(self) -> tuple[float | None, float | None]:
        """Side A's (bottom's) and side B's (top's) rate, where there is an estimate."""
        e = self.estimate
        return (None, None) if e is None else (e.rate_a, e.rate_b)

    @classmethod
    def from_json(cls, data: object, where: str) -> PairRow:
        if not isinstance(data, dict):
            raise RecordError(f"{where}: expected a JSON object, found {type(data).__name__}")
        estimated = "ratio" in data  # else an estimate's keys are the row's extra ones
        mine = {k: v for k, v in data.items()
                if not estimated or k not in PairEstimate._TYPES}
        values, extra = cls._read(mine, where)
        estimate = PairEstimate.from_json(data, where) if estimated else None
        aside = tuple(SetAside.from_json(a, f"{where}: set_aside")
                      for a in cast(list[object], values.pop("set_aside", None) or ()))
        return cls(**values, estimate=estimate, set_aside=aside,  # type: ignore[arg-type]
                   extra=extra, present=frozenset(values) - {"set_aside"})

    def to_json(self) -> JsonObject:
        out = {k: v for k, v in self._json().items() if k != "set_aside"}
        if self.low is not None:
            out["rate_share"], out["low"] = self.rate_share, self.low
        if self.estimate is not None:
            out.update(self.estimate.to_json())
        if self.set_aside:
            out["set_aside"] = [a.to_json() for a in self.set_aside]
        return out


_RECORD_TYPES = MappingProxyType({
    "kind": STR, "numerator": STR, "denominator": STR, "top": OBJ, "bottom": OBJ,
    "command": STR_LIST, "exit_code": INT, "started": STR, "seconds": _NUMBER,
    "errors": STR_LIST, "algorithms": LIST, "method": STR, "regime_checked": OPT_BOOL,
    "pair_image": OPT_STR, "bisection_run": OPT_INT, "pooled_runs": OPT_INT,
    "reproduction": OPT_STR, "claims": STR_LIST, "block_size": OPT_INT})


@dataclass(frozen=True)
class PairRecord(_Json):
    """One interleaved comparison: ``top`` over ``bottom`` (the harness's side B over its
    side A), the command that ran, how it ended, and a row per algorithm and direction.
    Who ran it adds: a bench session its ``regime_checked`` (measured again for a side
    that sat low), a reproduction its ``reproduction``, ``claims``, ``block_size`` and
    ``pair_image``, a bisection its ``pair_image``, ``bisection_run`` and
    ``pooled_runs``; each ``None`` (not written) otherwise."""

    kind: str  #: "mask/native", "asm/no-asm", "release", "bisect" or a reproduction's
    numerator: str
    denominator: str
    top: PairSide
    bottom: PairSide
    command: tuple[str, ...]
    exit_code: int
    started: str
    seconds: float
    errors: tuple[str, ...]
    algorithms: tuple[PairRow, ...]
    method: str
    regime_checked: bool | None = None
    pair_image: str | None = None
    bisection_run: int | None = None
    pooled_runs: int | None = None
    reproduction: str | None = None
    claims: tuple[str, ...] | None = None
    block_size: int | None = None
    extra: Mapping[str, object] = field(default_factory=dict, compare=False)

    _TYPES = _RECORD_TYPES
    _OPTIONAL = frozenset({"regime_checked", "pair_image", "bisection_run", "pooled_runs",
                           "reproduction", "claims", "block_size"})

    @classmethod
    def from_json(cls, data: object, where: str = "record") -> PairRecord:
        """The record in ``data`` (a parsed JSON object); RecordError if it is not one."""
        values, extra = cls._read(data, where)
        sides = {k: PairSide.from_json(values.pop(k), f"{where}: {k}")
                 for k in ("top", "bottom")}
        listed: list[object] = cast(list[object], values.pop("algorithms"))
        rows = tuple(PairRow.from_json(r, f"{where}: algorithms[{i}]")
                     for i, r in enumerate(listed))
        for k in ("command", "errors", "claims"):
            if values.get(k) is not None:
                values[k] = tuple(cast(list[str], values[k]))
        return cls(**values, **sides, algorithms=rows, extra=extra,  # type: ignore[arg-type]
                   present=frozenset(values))

    def to_json(self) -> JsonObject:
        out = self._json()
        out["top"], out["bottom"] = self.top.to_json(), self.bottom.to_json()
        out["algorithms"] = [r.to_json() for r in self.algorithms]
        return out

    def row(self, algorithm: str, directions: tuple[str, ...] = ()) -> PairRow | None:
        """The first row of ``algorithm`` (in one of ``directions``, when given)."""
        return next((r for r in self.algorithms if r.algorithm == algorithm
                     and (not directions or r.direction in directions)), None)


__all__ = ["JsonObject", "PairEstimate", "PairRecord", "PairRow", "PairSide",
           "PooledRatio", "RunDetail", "SetAside"]
