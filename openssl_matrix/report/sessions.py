"""Sessions: the unit a report's figure comes from, and the history it keeps.

A **session** is one ``invoke matrix bench`` command's run journal (``results.Journal``):
every run folder it writes carries the journal's id in ``meta.json`` (``session``). The
rounds of one session are repetitions of one measurement under one set of conditions, so
their spread is the spread a 95 % interval describes. Two sessions are two measurements:
minutes apart on a busy host, or a day apart across a kernel, microcode or hypervisor
change, the spread *between* them is not the spread within one, and pooling them would
claim a precision the figures do not have (issue 28: two ``bench --suite aes8k --repeat
3`` sessions minutes apart, 1,425.1 ± 17.2 and 1,428.8 ± 1.5 MB/s, pooled to 1,428.8 ±
5.5 with n=6). This is what asv does with commits: one sample set per commit, never two
pooled into one interval.

So a cell of the report shows **one** session's median and interval: the latest session
that measured it, or the one the user picks (:class:`Selection`: ``--session ID``,
``--since DATE``); every session of the cell is kept in its history (:func:`split`), one
entry each, for ``history`` to chart and to look for a change in.

A run written before sessions were recorded has no ``session`` key; it gets one derived
deterministically (``records.run_session``: from its bench journal, its series, or its
start).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Protocol, TypeVar

from openssl_matrix.core.errors import UsageError
from openssl_matrix.core.stats import Estimate, estimate
from openssl_matrix.results import records
from openssl_matrix.results.tree import ResultsTree


@dataclass(frozen=True)
class Provenance:
    """What one run was measured with, as far as a change between sessions goes: the
    session it belongs to and the conditions a figure can move with."""

    session: str
    derived: bool
    """The run recorded no session id (an older tree): ``session`` was derived."""
    started: str
    engine: str
    """The Docker engine (its name, else its endpoint)."""
    engine_version: str | None
    image_id: str | None
    kernel: str | None
    microcode: str | None
    cpu_flags: str | None
    """A short digest of the CPU flags the run saw (the flags themselves are in meta.json)."""
    cpu_model: str | None = None

    #: The fields a change between two sessions is looked for in, as the page names them.
    CONDITIONS = (("image_id", "image id"), ("kernel", "kernel"), ("microcode", "microcode"),
                  ("cpu_flags", "CPU flags"), ("cpu_model", "CPU model"),
                  ("engine", "Docker engine"), ("engine_version", "Docker engine version"))

    def differences(self, other: Provenance) -> list[tuple[str, str | None, str | None]]:
        """(what, before, after) for every condition that differs from ``other`` (the
        session before) — a value neither recorded is no difference."""
        out = []
        for key, name in self.CONDITIONS:
            before, after = getattr(other, key), getattr(self, key)
            if before != after and (before is not None or after is not None):
                out.append((name, before, after))
        return out


def _text(value: object) -> str | None:
    return None if value is None or value == "" else str(value)


def flags_digest(flags: Iterable[str]) -> str | None:
    """``sha256:1a2b3c4d (97 flags)``: the CPU flags a run saw, short enough for a page."""
    flags = sorted(set(flags))
    if not flags:
        return None
    digest = hashlib.sha256(" ".join(flags).encode()).hexdigest()[:8]
    return f"sha256:{digest} ({len(flags)} flags)"


class Sessions:
    """Derives the session of every run of one tree (reads its journals once, lazily;
    the derivation itself is ``records.run_session``)."""

    def __init__(self, tree: ResultsTree) -> None:
        self.tree = tree
        self._journals: dict[str, str] | None = None

    def session_of(self, run: records.Run) -> tuple[str, bool]:
        """(session id, derived): the run's own, else derived (see the module's text)."""
        if self._journals is None and not run.meta.session:
            self._journals = self.tree.journal_runs()
        return records.run_session(run, self._journals or {})

    def provenance(self, run: records.Run) -> Provenance:
        """The run's :class:`Provenance` (one object per run, shared by its figures)."""
        meta = run.meta
        session, derived = self.session_of(run)
        host = meta.host or {}
        docker = meta.docker or {}
        return Provenance(
            session=session, derived=derived,
            started=meta.started or str(meta.extra.get("imported") or ""),
            engine=str(docker.get("name") or docker.get("endpoint") or "?"),
            engine_version=_text(docker.get("server_version")),
            image_id=_text(meta.image_id),
            kernel=_text(host.get("kernel") or docker.get("kernel")),
            microcode=_text(host.get("microcode")),
            cpu_flags=flags_digest(str(f) for f in host.get("cpu_flags") or ()),
            cpu_model=_text(host.get("cpu_model")))


# -- one cell's sessions ----------------------------------------------------------------


class SessionObservation(Protocol):
    """A figure as far as sessions go (``report.Observation``, ``report_ops.OpsObservation``)."""

    @property
    def prov(self) -> Provenance | None: ...
    @property
    def status(self) -> str: ...
    @property
    def usable(self) -> bool: ...


Obs = TypeVar("Obs", bound=SessionObservation)


@dataclass(frozen=True)
class SessionFigure:
    """One session's figure of one cell: its median and 95 % interval over that session's
    usable figures only, what else its runs read, and the conditions it was measured in."""

    session: str
    when: str
    """When the session's first run of this cell started (ISO 8601, UTC)."""
    prov: Provenance
    estimate: Estimate | None
    figures: int
    """Figures of this cell the session has, usable or not."""
    statuses: tuple[tuple[str, int], ...]
    """Statuses other than ok, with their counts."""

    @property
    def median(self) -> float | None:
        return self.estimate.median if self.estimate is not None else None

    @property
    def n(self) -> int:
        return self.estimate.n if self.estimate is not None else 0


UNKNOWN = Provenance("?", True, "", "?", None, None, None, None, None)


def by_session(observations: Iterable[Obs]) -> dict[str, list[Obs]]:
    """The observations of one cell by session id, in their order."""
    out: dict[str, list[Obs]] = {}
    for o in observations:
        out.setdefault((o.prov or UNKNOWN).session, []).append(o)
    return out


def split(observations: Sequence[Obs], value: Callable[[Obs], float | None], *,
          interval: bool = True) -> list[SessionFigure]:
    """Every session of one cell as a :class:`SessionFigure`, oldest first (by when its
    first run started; ties by id). ``interval`` False keeps the median and drops the
    interval (a published report's figures are transcribed, not repetitions)."""
    out = []
    for session, obs in by_session(observations).items():
        vals = [v for o in obs if o.usable and (v := value(o)) is not None]
        e = estimate(vals)
        if e is not None and not interval:
            e = Estimate(e.n, e.median, e.mean, e.min, e.max, None, None)
        counts: dict[str, int] = {}
        for o in obs:
            if o.status != "ok":
                counts[o.status] = counts.get(o.status, 0) + 1
        provs = [o.prov for o in obs if o.prov is not None]
        first = min(provs, key=lambda p: p.started) if provs else UNKNOWN
        out.append(SessionFigure(session, first.started, first, e, len(obs),
                                 tuple(sorted(counts.items()))))
    out.sort(key=lambda s: (s.when, s.session))
    return out


# -- which session a cell shows ----------------------------------------------------------


def parse_when(text: str, what: str = "--since") -> datetime:
    """An ISO date or time (``2026-12-01``, ``2026-12-01T08:00``); UTC unless it says."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{what} {text!r} is not a date",
                         hint="give an ISO date or time: 2026-12-01 or 2026-12-01T08:00"
                         ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Selection:
    """Which sessions a report shows. By default every session is in the history and a
    cell's figure is its latest session's. ``since``: sessions that started before it are
    left out (of the figure, the history and the change detection). ``session``: the
    figure is that session's (an id or a unique start of one); the history still shows
    the others."""

    session: str | None = None
    since: datetime | None = None

    @classmethod
    def of(cls, session: str = "", since: str = "") -> Selection:
        return cls(session or None, parse_when(since) if since else None)

    def keep(self, figures: Sequence[SessionFigure]) -> list[SessionFigure]:
        """The history the report shows (``since`` applied)."""
        if self.since is None:
            return list(figures)
        return [f for f in figures if f.when and parse_when(f.when, "a run's start") >= self.since]

    def matches(self, session: str) -> bool:
        return self.session is not None and (session == self.session
                                             or session.startswith(self.session))

    def choose(self, history: Sequence[SessionFigure]) -> SessionFigure | None:
        """The session a cell's figure comes from: the chosen one, else the latest."""
        if self.session is not None:
            return next((f for f in reversed(history) if self.matches(f.session)), None)
        return history[-1] if history else None

    def describe(self) -> str:
        """How the page says which session a figure is."""
        parts = [f"session {self.session}" if self.session else "the latest session"]
        if self.since is not None:
            parts.append(f"sessions since {self.since.isoformat(timespec='minutes')}")
        return "; ".join(parts)


def check_selection(selection: Selection, sessions: Iterable[str]) -> None:
    """``--session ID`` that names no session (or more than one) of the tree: UsageError."""
    if selection.session is None:
        return
    found = sorted({s for s in sessions if selection.matches(s)})
    if not found:
        raise UsageError(f"--session {selection.session!r}: no session of this results tree "
                         "has that id", hint="the sessions are listed on the report page and "
                         "in data/report.json (\"sessions\"); give one id or its start")
    if len(found) > 1 and selection.session not in found:
        raise UsageError(f"--session {selection.session!r} names {len(found)} sessions "
                         f"({', '.join(found[:3])}{' …' if len(found) > 3 else ''})",
                         hint="give more of the id")


def session_table(provs: Iterable[Provenance]) -> list[Mapping[str, object]]:
    """One row per session of the tree (its earliest run's conditions; one ``Provenance``
    per run), oldest first. Image ids are per variant: the cells' sessions name them."""
    first: dict[str, Provenance] = {}
    runs: dict[str, int] = {}
    for p in provs:
        runs[p.session] = runs.get(p.session, 0) + 1
        if p.session not in first or p.started < first[p.session].started:
            first[p.session] = p
    return [{"session": s, "when": p.started, "derived": p.derived, "engine": p.engine,
             "engine_version": p.engine_version, "kernel": p.kernel,
             "microcode": p.microcode, "cpu_flags": p.cpu_flags, "runs": runs[s]}
            for s, p in sorted(first.items(), key=lambda kv: (kv[1].started, kv[0]))]
