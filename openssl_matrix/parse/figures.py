"""What a parse of ``openssl speed`` yields, and how one printed token becomes a value.

The frozen dataclasses (:class:`Figure`, :class:`SpeedHeader`, :class:`Progress`,
:class:`SpeedRun`), the status codes and limits a figure is judged by, the algorithm ids
(:func:`canonical_algorithm`), and the number rules (``k`` suffix, rounding, impossible
values). The formats and the meaning of each status are described in
:mod:`openssl_matrix.parse`, the public entry points (import these names from here).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from operator import attrgetter
from typing import Any, overload

from openssl_matrix.core.version import Version

STATUS_OK = "ok"
STATUS_ZERO = "zero"
STATUS_INFINITE = "infinite"
STATUS_UNPARSABLE = "unparsable"
STATUS_UNKNOWN_UNIT = "unknown-unit"
STATUS_UNIDENTIFIED = "unidentified"
STATUS_SUSPECT_TIME_BASIS = "suspect-time-basis"
STATUS_IMPRECISE = "imprecise"
STATUS_IMPOSSIBLE = "impossible"

#: Above these a printed figure is no measurement (``1e400``, ``1e30``): 100 TB/s is far
#: beyond any CPU's memory bandwidth, even summed over ``-multi`` children.
MAX_BYTES_PER_S = 1e14
MAX_OPS_PER_S = 1e12

#: A progress line whose reported seconds are below this share of the requested seconds
#: marks its figures ``suspect-time-basis``. On a busy 2-core host a CPU-bound run still
#: gets 40-80 % of the wall time as user time; work done by the kernel or a device gives
#: 2-15 % (the FreeBSD /dev/crypto report: 0.05 s of 3 s; AF_ALG: 0.11-0.46 s of 3 s).
SUSPECT_TIME_RATIO = 0.25

#: Largest relative rounding error of a printed figure that is still ``ok``.
IMPRECISE_RATIO = 0.01


@dataclass(frozen=True, slots=True)  # no __dict__: 20,000 runs hold ~400,000
class Figure:
    """One number from a speed table: one algorithm, one block size or one operation."""

    algorithm: str
    label: str
    evp: bool | None
    block_size: int | None
    bytes_per_s: float | None
    ops_per_s: float | None
    operation: str | None
    status: str
    detail: str = ""
    bits: int | None = None
    """Key size in bits for public-key rows, as printed."""
    seconds_per_op: float | None = None
    """Seconds per operation as printed (public key), when it was printed."""
    raw: str = ""
    """The printed token(s) the value was read from, for re-parsing and audit."""


@dataclass(frozen=True)
class SpeedHeader:
    """The build description speed prints before its tables (not with ``-mr``)."""

    version_line: str | None = None
    version: str | None = None
    built_on: str | None = None
    platform: str | None = None
    options: str | None = None
    compiler: str | None = None
    timing_options: str | None = None
    timing_function: str | None = None
    cpuinfo: str | None = None
    elapsed: bool | None = None


@dataclass(frozen=True, slots=True)
class Progress:
    """One measurement announced on stderr: what ran, for how long, how many times."""

    label: str
    seconds_requested: float | None
    block_size: int | None
    count: int
    seconds_reported: float
    operation: str | None = None
    """For public-key runs: sign, verify, encrypt, decrypt, op, keygen, encaps, decaps."""
    bits: int | None = None
    family: str | None = None
    """For public-key runs: rsa, dsa, ecdsa, ecdh, eddsa, sm2, ffdh, kem, sig."""

    @property
    def time_ratio(self) -> float | None:
        """Reported over requested seconds (None when speed ran a fixed count)."""
        if not self.seconds_requested:
            return None
        return self.seconds_reported / self.seconds_requested


@dataclass(frozen=True)
class SpeedRun:
    """Everything one ``openssl speed`` invocation printed, parsed."""

    header: SpeedHeader
    figures: Sequence[Figure]
    """A tuple of figures, or a :class:`FigureTable` (equal to that tuple) where the
    parser kept rows of common cells compactly."""
    progress: tuple[Progress, ...]
    warnings: tuple[str, ...]
    machine_readable: bool
    commands: tuple[str, ...] = ()
    """The ``openssl speed`` command lines a paste printed above this run's output, as
    written (``./openssl speed -evp aes-128-gcm``); empty outside pastes."""

    def figure(
        self, algorithm: str, block_size: int | None = None, operation: str | None = None
    ) -> Figure | None:
        """The first figure with this algorithm id and block size or operation."""
        for fig in self.figures:
            if (
                fig.algorithm == algorithm
                and (block_size is None or fig.block_size == block_size)
                and (operation is None or fig.operation == operation)
            ):
                return fig
        return None


# --------------------------------------------------------------------------------------
# Names

_SYMMETRIC_ALIASES = {
    "des-ede3": "des-ede3-cbc",
    "blowfish-cbc": "bf-cbc",
    "blowfish": "bf-cbc",
    "cast-cbc": "cast5-cbc",
    "rc5-32/12-cbc": "rc5-cbc",
    "rmd160": "ripemd160",
}


@functools.lru_cache(maxsize=4096)  # pure; a paste of 20,000 runs asks the same few
def canonical_algorithm(label: str) -> str:
    """The algorithm id of a symmetric row name (see :mod:`openssl_matrix.parse`)."""
    name = label.strip().lower()
    name = re.sub(r"^([\w.-]+)\((.+)\)$", r"\1-\2", name)
    name = re.sub(r"\s+", "-", name)
    return _SYMMETRIC_ALIASES.get(name, name)



@functools.lru_cache(maxsize=4096)  # pure; asked for every row of every run
def version_tuple(version: str | None) -> tuple[int, int, int] | None:
    """``"1.1.1w"`` -> ``(1, 1, 1)``; ``"3.0.2"`` -> ``(3, 0, 2)``; None if not a version."""
    found = Version.find(version)
    return None if found is None else found.series



# --------------------------------------------------------------------------------------
# Numbers


def _decimals(token: str) -> int:
    return len(token.split(".", 1)[1]) if "." in token else 0


def _number(token: str) -> float | None:
    """A printed number (``inf``/``nan`` included) or None when the token is not one."""
    try:
        return float(token)
    except ValueError:
        return None


_OK: tuple[str, str] = (STATUS_OK, "")
#: Up to this many digits ``Decimal(text) * 1000`` is exact in Decimal's 28-digit context.
_EXACT_DIGITS = 25


def sym_value(token: str, *, thousands_suffix: bool) -> tuple[float | None, str, str]:
    """Bytes per second of one symmetric cell, with its status and detail.

    The common cell (``208570.35k``, ``9876.54``: ASCII digits around one point, not zero)
    is read without ``Decimal``: ``k`` moves the point three places in the text, and
    ``float`` of the result is the correctly rounded value, as ``float(Decimal(text) *
    1000)`` is (tests/unit/test_parsing_fast.py compares the two). Every other token takes
    :func:`sym_value_reference`.
    """
    text = token
    scale = False
    if thousands_suffix and text[-1:] in ("k", "K"):
        text = text[:-1]
        scale = True
    whole, dot, fraction = text.partition(".")
    if (
        dot and whole.isascii() and fraction.isascii() and whole.isdigit()
        and fraction.isdigit() and len(whole) + len(fraction) <= _EXACT_DIGITS
        and (whole.strip("0") or fraction.strip("0"))
    ):
        if scale:
            fraction += "000"
            text = f"{whole}{fraction[:3]}.{fraction[3:]}"
        return (float(text), *_OK)
    return sym_value_reference(token, thousands_suffix=thousands_suffix)


def sym_value_reference(token: str, *, thousands_suffix: bool) -> tuple[float | None, str, str]:
    """:func:`sym_value` through ``Decimal``, for every token."""
    text = token.strip()
    scale = Decimal(1)
    if thousands_suffix and text.lower().endswith("k"):
        text = text[:-1]
        scale = Decimal(1000)
    if text.lower() in ("inf", "nan", "-nan"):
        return None, STATUS_INFINITE, f"printed {token!r}: speed measured a time of 0"
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None, STATUS_UNPARSABLE, f"not a number: {token!r}"
    if not value.is_finite():
        return None, STATUS_UNPARSABLE, f"not a number: {token!r}"
    if value < 0:
        return None, STATUS_UNPARSABLE, f"printed {token!r}: a negative rate is no measurement"
    if value == 0:
        return (
            None,
            STATUS_ZERO,
            (
                f"printed {token!r}: nothing was measured (algorithm not in this build, "
                "or it failed)"
            ),
        )
    return float(value * scale), STATUS_OK, ""


def impossible(value: object, limit: float = MAX_BYTES_PER_S) -> str | None:
    """Why a rate cannot be a measurement (not a number, not finite, not positive, above
    ``limit``), or None when it can."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{str(value)[:40]!r} is not a number"
    if not math.isfinite(value):
        return f"{value} is not a finite number"
    if value <= 0:
        return f"{value} is not a positive rate"
    if value > limit:
        return f"{value:.3g} per second is beyond any machine (limit {limit:.0e})"
    return None


#: The largest block size a speed table can print: speed's lengths are C ints (checked in
#: apps/speed.c of 1.1.1w and 3.0.20: ``static const int *lengths``, ``-bytes`` read with
#: atoi into ``int lengths_single``).
MAX_BLOCK_SIZE = 2**31 - 1


def sane(fig: Figure) -> Figure:
    """The figure, or an ``impossible`` one without values when a value is impossible (a
    block size no speed can print, too: ``99999999999999999999999999 bytes``)."""
    if fig.block_size is not None and not 0 < fig.block_size <= MAX_BLOCK_SIZE:
        shown = str(fig.block_size)
        shown = shown if len(shown) <= 40 else f"{shown[:40]}…"
        return replace(fig, block_size=None, bytes_per_s=None, ops_per_s=None,
                       seconds_per_op=None, status=STATUS_IMPOSSIBLE,
                       detail=f"a block size of {shown} bytes is beyond any speed table "
                       f"(at most {MAX_BLOCK_SIZE})")
    rate, ops = fig.bytes_per_s, fig.ops_per_s
    if (rate is None or (type(rate) is float and 0 < rate <= MAX_BYTES_PER_S)) and (
        ops is None or (type(ops) is float and 0 < ops <= MAX_OPS_PER_S)
    ):
        return fig  # the common case, decided as impossible() would (nan and inf fail here)
    for value, limit in ((fig.bytes_per_s, MAX_BYTES_PER_S), (fig.ops_per_s, MAX_OPS_PER_S)):
        reason = None if value is None else impossible(value, limit)
        if reason is not None:
            return replace(fig, bytes_per_s=None, ops_per_s=None, seconds_per_op=None,
                           status=STATUS_IMPOSSIBLE, detail=f"printed {fig.raw[:40]!r}: "
                           f"{reason}")
    return fig


def common_cell(
    algorithm: str, label: str, evp: bool | None, size: int, token: str | None
) -> Figure | None:
    """The figure of the common ``-elapsed`` cell (``208570.35k``: ASCII digits around one
    point, then ``k``) at a possible block size and rate, or None for every other cell.

    The same tests, in the same order, as :func:`sym_value`'s fast path and :func:`sane`'s
    common case, without their tuples and calls: a paste of 20,000 runs has 360,000.
    """
    if token is None or token[-1:] not in ("k", "K") or not 0 < size <= MAX_BLOCK_SIZE:
        return None
    whole, dot, fraction = token[:-1].partition(".")
    if not (
        dot and whole.isascii() and fraction.isascii() and whole.isdigit()
        and fraction.isdigit() and len(whole) + len(fraction) <= _EXACT_DIGITS
        and (whole.strip("0") or fraction.strip("0"))
    ):
        return None
    fraction += "000"
    value = float(f"{whole}{fraction[:3]}.{fraction[3:]}")
    if value > MAX_BYTES_PER_S:
        return None
    return Figure(algorithm, label, evp, size, value, value / size, None, STATUS_OK, "",
                  None, None, token)


def rate_from_tokens(
    rate_token: str | None, seconds_token: str | None
) -> tuple[float | None, float | None, str, str]:
    """Ops per second from a printed rate and/or a printed seconds-per-op.

    Returns (ops_per_s, seconds_per_op, status, detail); picks the printed form with the
    smaller relative rounding error.
    """
    rate = _number(rate_token) if rate_token is not None else None
    sec_text = (
        seconds_token[:-1] if seconds_token and seconds_token.endswith("s") else seconds_token
    )
    seconds = _number(sec_text) if sec_text is not None else None
    if (rate_token is not None and rate is None) or (sec_text is not None and seconds is None):
        return (
            None,
            None,
            STATUS_UNPARSABLE,
            (f"not a number: {rate_token if rate is None else seconds_token!r}"),
        )
    candidates: list[tuple[float, float, str]] = []
    if rate is not None and math.isfinite(rate) and rate > 0 and rate_token is not None:
        candidates.append((0.5 * 10 ** -_decimals(rate_token) / rate, rate, "rate"))
    if seconds is not None and math.isfinite(seconds) and seconds > 0 and sec_text is not None:
        candidates.append((0.5 * 10 ** -_decimals(sec_text) / seconds, 1.0 / seconds, "seconds"))
    seconds_out = seconds if seconds is not None and math.isfinite(seconds) else None
    printed = " / ".join(t for t in (seconds_token, rate_token) if t is not None)
    if not candidates:
        if (rate is not None and rate == 0) or (seconds is not None and math.isinf(seconds)):
            return None, seconds_out, STATUS_ZERO, (f"printed {printed}: no operation completed")
        return (
            None,
            seconds_out,
            STATUS_INFINITE,
            (f"printed {printed}: speed measured a time of 0"),
        )
    error, value, _source = min(candidates)
    if error > IMPRECISE_RATIO:
        return (
            value,
            seconds_out,
            STATUS_IMPRECISE,
            f"printed {printed}: rounded by up to {error:.0%}",
        )
    return value, seconds_out, STATUS_OK, ""


#: Figures settled by :func:`with_evp`, by the figure's id and EVP-ness, with the figure
#: (kept alive: its id is not reused): a figure shared by many runs (parse/shapes.py)
#: is settled into one shared figure.
_SETTLED: dict[tuple[int, bool], tuple[Figure, Figure]] = {}


def with_evp(fig: Figure | FigureRow, evp: bool) -> Figure | FigureRow:
    """``replace(fig, evp=evp)`` without its per-call field walk (a paste of 1.1.1 runs
    settles a row of six figures per run); Figure's positional order. A row's figures
    are settled as a row (:func:`row_with_evp`)."""
    if type(fig) is FigureRow:
        return row_with_evp(fig, evp)
    assert isinstance(fig, Figure)
    key = (id(fig), evp)
    kept = _SETTLED.get(key)
    if kept is not None and kept[0] is fig:
        return kept[1]
    settled = new_figure(fig.algorithm, fig.label, evp, fig.block_size, fig.bytes_per_s,
                         fig.ops_per_s, fig.operation, fig.status, fig.detail, fig.bits,
                         fig.seconds_per_op, fig.raw)
    if len(_SETTLED) >= 1024:
        _SETTLED.clear()
    _SETTLED[key] = (fig, settled)
    return settled


_NEW = object.__new__
(_S_ALG, _S_LABEL, _S_EVP, _S_SIZE, _S_RATE, _S_OPS, _S_OP, _S_STATUS, _S_DETAIL, _S_BITS,
 _S_SECONDS, _S_RAW) = (getattr(Figure, name).__set__ for name in Figure.__dataclass_fields__)


def new_figure(algorithm: str, label: str, evp: bool | None, block_size: int | None,
               bytes_per_s: float | None, ops_per_s: float | None, operation: str | None,
               status: str, detail: str, bits: int | None, seconds_per_op: float | None,
               raw: str) -> Figure:
    """``Figure(...)`` (every field, in order) set through its slots, without the frozen
    dataclass's ``object.__setattr__`` per field: half the time (a paste of 20,000 runs
    builds ~400,000). The same figure: equal, with the same hash and repr
    (tests/unit/test_parse_shapes.py)."""
    fig = _NEW(Figure)
    _S_ALG(fig, algorithm)
    _S_LABEL(fig, label)
    _S_EVP(fig, evp)
    _S_SIZE(fig, block_size)
    _S_RATE(fig, bytes_per_s)
    _S_OPS(fig, ops_per_s)
    _S_OP(fig, operation)
    _S_STATUS(fig, status)
    _S_DETAIL(fig, detail)
    _S_BITS(fig, bits)
    _S_SECONDS(fig, seconds_per_op)
    _S_RAW(fig, raw)
    return fig


#: A row of cells as ``-elapsed`` prints them above 10,000 bytes/s (``%.2fk``), each at
#: most 11 digits before the point: below ``MAX_BYTES_PER_S`` once scaled.
_COMMON_ROW = re.compile(r"(?:[0-9]{1,11}\.[0-9]{2}k )*[0-9]{1,11}\.[0-9]{2}k")


def common_row(algorithm: str, label: str, evp: bool | None, sizes: Sequence[int],
               tokens: Sequence[str], *, checked: bool = False) -> list[Figure] | None:
    """The figures of a row whose every cell is a common cell with two decimals
    (``208570.35k``), as :func:`common_cell` gives each (the same tests; a cell of two
    decimals and ``k`` is an exact integer of bytes/s, read as one), or None when any is
    not (then each cell is read by itself). ``checked``: the tokens are known to be of
    that form (parse/shapes.py matched them). The figures of :func:`compact_row`'s row:
    the line reader keeps the row, the values are read in one place
    (:meth:`FigureRow.values`)."""
    row = compact_row(algorithm, label, evp, sizes, tokens, checked=checked)
    return None if row is None else row.figures()


# --------------------------------------------------------------------------------------
# Compact storage: a run's common rows as their shape and printed tokens

#: Row shapes, ``(algorithm, label, evp, sizes)``, shared by every row of that shape (a
#: paste of 20,000 runs has a few dozen): interned here, bounded.
_ROW_SHAPES: dict[tuple[str, str, bool | None, tuple[int, ...]],
                  tuple[str, str, bool | None, tuple[int, ...]]] = {}


#: The values of the rows read last, by the row's id, with the row (kept alive: its id is
#: not reused); bounded.
_ROW_VALUES: dict[int, tuple[FigureRow, list[tuple[Any, ...]]]] = {}


class FigureRow:
    """A symmetric row whose every cell is a common cell (``208570.35k``): the figures
    :func:`common_row` gives, kept as the row's shared shape and its printed tokens (one
    string, blank separated), each figure built when asked for. Two slots where six
    figures held 72 slots, 12 floats and 6 tokens (a paste of 20,000 runs whose figures
    are all different: issue 35)."""

    __slots__ = ("shape", "tokens")

    def __init__(self, shape: tuple[str, str, bool | None, tuple[int, ...]],
                 tokens: str) -> None:
        self.shape = shape
        self.tokens = tokens

    @property
    def algorithm(self) -> str:
        return self.shape[0]

    @property
    def label(self) -> str:
        return self.shape[1]

    @property
    def evp(self) -> bool | None:
        return self.shape[2]

    def __len__(self) -> int:
        return len(self.shape[3])

    def values(self) -> list[tuple[Any, ...]]:
        """Each figure's values in :class:`Figure`'s field order, without the figure (the
        last rows' kept: a row shared by many runs is read once, and a run's rows are read
        by the duplicate check, then by ``parse``)."""
        kept = _ROW_VALUES.get(id(self))
        if kept is not None and kept[0] is self:
            return kept[1]
        algorithm, label, evp, sizes = self.shape
        rows = []
        for size, token in zip(sizes, self.tokens.split(" "), strict=True):
            value = float(int(token[:-4] + token[-3:-1]) * 10)
            rows.append((algorithm, label, evp, size, value, value / size, None, STATUS_OK,
                         "", None, None, token))
        if len(_ROW_VALUES) >= 256:
            _ROW_VALUES.clear()
        _ROW_VALUES[id(self)] = (self, rows)
        return rows

    def figures(self) -> list[Figure]:
        """The row's figures, as :func:`common_row` gives them."""
        return [new_figure(*values) for values in self.values()]


def compact_row(algorithm: str, label: str, evp: bool | None, sizes: Sequence[int],
                tokens: Sequence[str], *, checked: bool = False) -> FigureRow | None:
    """:func:`common_row`'s row kept as a :class:`FigureRow` (None where it gives None)."""
    text = " ".join(tokens)
    if (not checked and not _COMMON_ROW.fullmatch(text)) or "-#" in algorithm:
        return None  # (an id with -# is -mr's, settled figure by figure: never a row)
    if not all(0 < size <= MAX_BLOCK_SIZE for size in sizes) or len(sizes) != len(tokens):
        return None
    if any(not token.strip("0.k") for token in tokens):
        return None  # printed 0.00k: a figure of its own status
    return FigureRow(_shape((algorithm, label, evp, tuple(sizes))), text)


def _shape(key: tuple[str, str, bool | None, tuple[int, ...]],
           ) -> tuple[str, str, bool | None, tuple[int, ...]]:
    """The one shared copy of a row shape (:data:`_ROW_SHAPES`)."""
    shape = _ROW_SHAPES.get(key)
    if shape is None:
        if len(_ROW_SHAPES) >= 4096:
            _ROW_SHAPES.clear()
        shape = _ROW_SHAPES[key] = key
    return shape


#: Rows settled by :func:`row_with_evp`, as :data:`_SETTLED` keeps figures: a row shared
#: by many runs is settled into one shared row (and the texts made of it are shared).
_SETTLED_ROWS: dict[tuple[int, bool], tuple[FigureRow, FigureRow]] = {}


def row_with_evp(row: FigureRow, evp: bool) -> FigureRow:
    """The row with its figures' EVP-ness settled (:func:`with_evp`)."""
    kept = _SETTLED_ROWS.get((id(row), evp))
    if kept is not None and kept[0] is row:
        return kept[1]
    settled = FigureRow(_shape((*row.shape[:2], evp, row.shape[3])), row.tokens)
    if len(_SETTLED_ROWS) >= 1024:
        _SETTLED_ROWS.clear()
    _SETTLED_ROWS[(id(row), evp)] = (row, settled)
    return settled


#: Figure's fields in order, as a function of a figure: the values :func:`figure_values`
#: gives for a figure kept as one.
_VALUES = attrgetter(*Figure.__dataclass_fields__)


class FigureTable(Sequence[Figure]):
    """A run's figures (``SpeedRun.figures``) with its common rows kept as
    :class:`FigureRow`: a sequence of :class:`Figure` built on access (not kept), equal to,
    hashed and printed as the tuple of those figures. :func:`figure_values` and
    :func:`figure_parts` read it without building a figure."""

    __slots__ = ("_size", "parts")

    def __init__(self, parts: tuple[Figure | FigureRow, ...]) -> None:
        self.parts = parts
        size = len(parts)
        for part in parts:
            if type(part) is FigureRow:
                size += len(part.shape[3]) - 1
        self._size = size

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Figure]:
        for part in self.parts:
            if type(part) is FigureRow:
                yield from part.figures()
            else:
                yield part  # type: ignore[misc]

    @overload
    def __getitem__(self, index: int) -> Figure: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Figure, ...]: ...

    def __getitem__(self, index: int | slice) -> Figure | tuple[Figure, ...]:
        return tuple(self)[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (tuple, FigureTable)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __add__(self, other: object) -> tuple[Figure, ...]:
        if isinstance(other, (tuple, FigureTable)):
            return (*self, *other)
        return NotImplemented

    def __radd__(self, other: object) -> tuple[Figure, ...]:
        if isinstance(other, tuple):
            return (*other, *self)
        return NotImplemented

    def __reduce__(self) -> tuple[Any, ...]:
        return (FigureTable, (self.parts,))


def figure_parts(figures: Sequence[Figure]) -> tuple[Figure | FigureRow, ...]:
    """What a run's figures are kept as: figures and rows (shared between runs where
    their lines repeat), for keys of what is computed from them."""
    if type(figures) is FigureTable:
        return figures.parts
    return tuple(figures)


def figure_values(figures: Sequence[Figure]) -> Iterator[tuple[Any, ...]]:
    """Each figure's values in :class:`Figure`'s field order (``parse.FIGURE_FIELDS``),
    without building the figures a :class:`FigureTable` keeps as rows."""
    if type(figures) is not FigureTable:
        return map(_VALUES, figures)
    values: list[tuple[Any, ...]] = []
    for part in figures.parts:
        if type(part) is FigureRow:
            values += part.values()
        else:
            values.append(_VALUES(part))
    return iter(values)


def expand_rows(figures: list[Figure | FigureRow], *aligned: list[Any]) -> tuple[list[Any], ...]:
    """``figures`` with each row as its figures, and each list ``aligned`` with them (an
    entry per item) repeated as many times."""
    out: list[Any] = []
    lists: list[list[Any]] = [[] for _ in aligned]
    for i, part in enumerate(figures):
        items = part.figures() if type(part) is FigureRow else [part]
        out += items
        for into, source in zip(lists, aligned, strict=True):
            into += [source[i]] * len(items)
    return (out, *lists)
