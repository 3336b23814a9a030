"""What every suite kind answers: the :class:`SuiteKind` Protocol and its shared parts.

A suite kind (``kind:`` of a suite in matrix.yaml) is one module of this package holding
one object that answers the questions below; :mod:`openssl_matrix.matrix.kinds` is the
registry. The rest of the code asks the kind (``kind_of(suite.kind).figures``) and never
compares its name: where a layer above must act differently per kind, it keys its own
table by one of these answers (the runner, the shape of the figures), so a new kind that
runs and reads like an existing one is one new module and one registry line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from openssl_matrix.matrix.check import CheckContext, choices_hint
from openssl_matrix.matrix.libvocab import LibraryOptions
from openssl_matrix.matrix.tlsvocab import TlsOptions

#: How a kind's invocations run (the measure layer keys its planners and readers by it).
RUNNER_SPEED = "openssl-speed"
"""``openssl speed`` command lines, one per path x algorithm (or all in one)."""
RUNNER_PTS = "pts/openssl"
"""pts/openssl's own ``openssl speed`` command lines (matrix/pts.py)."""
RUNNER_S_TIME = "s_server/s_time"
"""A handshake script: ``s_server`` and ``s_time`` (measure/tls.py)."""
RUNNER_HARNESS = "libbench"
"""Our C harness in the variant's harness image (measure/library.py)."""

#: The shape of a kind's figures (report tables, reproductions, profiles key by it).
FIGURES_BLOCKS = "bytes per second per block size"
FIGURES_OPERATIONS = "operations per second"
FIGURES_HANDSHAKES = "connections per second"
FIGURES_THREADS = "operations per second per thread count"


@dataclass(frozen=True)
class KindOptions:
    """What a kind's check read from a suite entry beyond the common keys."""

    tls: TlsOptions | None = None
    library: LibraryOptions | None = None


@dataclass(frozen=True)
class KindDefaults:
    """Settings a kind brings when the suite does not give them."""

    seconds: int
    multi: tuple[int, ...]
    repeat: int
    noise_threshold: float


@dataclass(frozen=True)
class SpeedPlan:
    """A speed-run kind's algorithms as one version spells them (``algorithms``), the
    speed method when the version decides it (``method``), and what was left out and
    why (``notes``, ``decrypt_note``)."""

    algorithms: tuple[str, ...]
    method: str | None = None
    notes: tuple[str, ...] = ()
    decrypt_note: str | None = None


class SuiteKind(Protocol):
    """The questions every suite kind answers (see the module docstring)."""

    @property
    def name(self) -> str: ...
    @property
    def runner(self) -> str:
        """One of the ``RUNNER_*`` words: how its invocations run."""
    @property
    def figures(self) -> str:
        """One of the ``FIGURES_*`` words: the shape of its figures."""
    @property
    def exclusive_keys(self) -> tuple[str, ...]:
        """Suite keys no other kind takes."""
    @property
    def defaults(self) -> KindDefaults | None: ...
    @property
    def interleavable(self) -> bool:
        """Its comparisons can run in the interleaving harness (through EVP)."""
    @property
    def bisectable(self) -> bool:
        """A release bisection can measure its cells."""
    @property
    def pts_comparable(self) -> bool:
        """Its figures are pts/openssl's results, judged by pts-core's rule."""
    @property
    def one_run_per_algorithm(self) -> bool:
        """Each algorithm is its own speed run, spelled for the version."""
    @property
    def default_seconds_note(self) -> str:
        """What speed does when ``-seconds`` is missing from the version."""
    @property
    def accounting_fields(self) -> tuple[str, ...]:
        """The figure fields naming each host accounting taken inside one invocation
        (empty: one accounting per invocation)."""
    @property
    def warnings_named(self) -> bool:
        """Its reader names the invocation in its warnings already."""
    @property
    def figure_unit(self) -> str: ...
    @property
    def log_scale(self) -> bool:
        """Its chart's figures span decades (a log axis)."""
    @property
    def table_title(self) -> str | None:
        """The report's title of its table of operations (None: no such table)."""
    @property
    def panel_label(self) -> str | None:
        """Its figures in the report's quality panel, with their unit (None: counted
        with the bulk figures)."""
    @property
    def run_noun(self) -> str:
        """One of its invocations in the bench's progress line (``speed run(s)``)."""
    @property
    def figure_noun(self) -> str:
        """One of its figures, in words (``a public-key figure``)."""
    @property
    def profile_cell(self) -> str | None:
        """How ``profile --cell`` names one of its cells (None: not profiled)."""

    def check(self, ctx: CheckContext, entry: Mapping[str, Any],
              algorithms: tuple[str, ...], kp: str) -> KindOptions:
        """Check the kind's part of a suite entry (``kp`` its key path)."""
    def paths(self, evp: bool, legacy: bool) -> tuple[str, ...]:
        """The paths its figures are filed under."""
    def speed_plan(self, version: str, algorithms: tuple[str, ...],
                   configure: tuple[str, ...]) -> SpeedPlan | None:
        """Its algorithms spelled for ``version`` (None: as the suite lists them)."""
    def speed_evp(self, path: str, command: Sequence[str]) -> bool:
        """Whether speed's output of one invocation is read as EVP figures."""
    def row_label(self, fig: Mapping[str, Any]) -> str:
        """A figure's row in the report's table."""
    def short_label(self, fig: Mapping[str, Any]) -> str:
        """A figure's row in charts."""
    def run_line(self, d: Mapping[str, Any]) -> tuple[str, int]:
        """What a planned suite (its definition ``d``) runs, in words, and how many
        timed runs that is."""


def refuse_keys(ctx: CheckContext, entry: Mapping[str, Any], keys: Sequence[str], kp: str,
                why: str) -> None:
    """Fail on the first of ``keys`` the entry gives: ``why`` it is not used."""
    for key in keys:
        if key in entry:
            raise ctx.fail(f"{kp}.{key}", why)


def require_known(ctx: CheckContext, algorithms: Sequence[str], known: Sequence[str],
                  kp: str, what: str) -> None:
    """Fail on the first of ``algorithms`` not in ``known``: ``'x' is not WHAT``, with
    the nearest choices as the hint."""
    for i, a in enumerate(algorithms):
        if a not in known:
            raise ctx.fail(f"{kp}.algorithms[{i}]", f"{a!r} is not {what}",
                           hint=choices_hint(a, list(known)))


def op_label(fig: Mapping[str, Any]) -> str:
    """``ALGORITHM OPERATION``: a row of operations."""
    return f"{fig.get('algorithm')} {fig.get('operation')}"


def speed_line(d: Mapping[str, Any]) -> tuple[str, int]:
    """A speed suite's definition in words: its command, block size and masks."""
    masks = ", ".join(m["name"] for m in d["masks"])
    return (f"speed {'-evp ' if d['evp'] else ''}{' '.join(d['algorithms'])}"
            + (f" -bytes {d['bytes']}" if "bytes" in d else "") + f" (masks: {masks})",
            len(d["algorithms"]) * len(d["masks"]))


@dataclass(frozen=True)
class BaseKind:
    """The answers most kinds share; a kind module makes one (or a subclass of it)."""

    name: str
    runner: str
    figures: str
    figure_noun: str
    exclusive_keys: tuple[str, ...] = ()
    defaults: KindDefaults | None = None
    interleavable: bool = False
    bisectable: bool = False
    pts_comparable: bool = False
    one_run_per_algorithm: bool = False
    default_seconds_note: str = "speed's default 3 s per size was used"
    accounting_fields: tuple[str, ...] = ()
    warnings_named: bool = False
    figure_unit: str = "ops/s"
    log_scale: bool = True
    table_title: str | None = None
    panel_label: str | None = None
    run_noun: str = "speed"
    profile_cell: str | None = None

    def check(self, ctx: CheckContext, entry: Mapping[str, Any],
              algorithms: tuple[str, ...], kp: str) -> KindOptions:
        return KindOptions()

    def paths(self, evp: bool, legacy: bool) -> tuple[str, ...]:
        return (self.name,)

    def speed_plan(self, version: str, algorithms: tuple[str, ...],
                   configure: tuple[str, ...]) -> SpeedPlan | None:
        return None

    def speed_evp(self, path: str, command: Sequence[str]) -> bool:
        return False

    def row_label(self, fig: Mapping[str, Any]) -> str:
        return op_label(fig)

    def short_label(self, fig: Mapping[str, Any]) -> str:
        return op_label(fig)

    def run_line(self, d: Mapping[str, Any]) -> tuple[str, int]:
        return speed_line(d)
