"""The report's shared types: what the page, the public-key/handshake sections, the quality
summary and the side-by-side CPU charts all read (observations of a results tree, their
cells and groups), and the copying of a run into the report folder.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import shutil
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from openssl_matrix.core import log
from openssl_matrix.core.names import fold
from openssl_matrix.core.stats import Estimate, below_best, estimate, session_low
from openssl_matrix.core.statuses import USABLE_STATUSES
from openssl_matrix.core.units import MBPS
from openssl_matrix.core.version import series_or_none
from openssl_matrix.core.version import sort_key as version_sort_key
from openssl_matrix.matrix.aead import AEAD_METHOD
from openssl_matrix.matrix.isa import (
    IA32CAP_BITS,
    IA32CAP_LABELS,
    capabilities_of,
    ia32cap_expected_clear,
)
from openssl_matrix.matrix.kinds import kind_of_path
from openssl_matrix.measure.cpumodel import Core, core_of_cpu, model_bytes_per_s
from openssl_matrix.parse.figures import MAX_BLOCK_SIZE, STATUS_IMPOSSIBLE, impossible
from openssl_matrix.report.history import Change, changes
from openssl_matrix.report.sessions import (
    UNKNOWN,
    Provenance,
    Selection,
    SessionFigure,
    Sessions,
    by_session,
    split,
)
from openssl_matrix.results import compact, records
from openssl_matrix.results.tree import ResultsTree


@dataclass(frozen=True)
class Flagged:
    """A cell without one usable figure, as the tables and the charts show it: what its
    flagged figures read (their median; None when none has a value) and how many of each
    status there were. Never a median of the table: the page prints it grey, a chart as
    an unfilled hatched bar (``charts.flagged_bar``)."""

    value: float | None
    statuses: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, values: Iterable[float | None], statuses: Iterable[str]) -> Flagged:
        vals = [v for v in values if v is not None]
        return cls(statistics.median(vals) if vals else None,
                   tuple(sorted(Counter(statuses).items())))

    @property
    def counts(self) -> str:
        """``2 contended`` or ``1 contended, 1 noisy``."""
        return ", ".join(f"{n} {s}" for s, n in self.statuses)

    @property
    def what(self) -> str:
        """``all 2 contended`` (one status) or ``1 contended, 1 noisy``."""
        return f"all {self.counts}" if len(self.statuses) == 1 else self.counts

    def text(self, num: Callable[[float], str]) -> str | None:
        """``≈ 648.3, all 6 contended`` or ``≈ 648.3 (1 contended, 1 noisy)``; None
        when no flagged figure has a value."""
        if self.value is None:
            return None
        return f"≈ {num(self.value)}, {self.what}" if len(self.statuses) == 1 \
            else f"≈ {num(self.value)} ({self.counts})"


class ReleaseColumn:
    """What a figure of a release-by-release table (public-key/TLS ops, the library
    harness) says of itself: whether it is usable and which column it stands in. Mixed
    into those frozen dataclasses, whose fields these are."""

    status: str
    value: float | None
    version: str
    asm: bool

    @property
    def usable(self) -> bool:
        return self.status in USABLE_STATUSES and self.value is not None

    @property
    def column(self) -> str:
        return self.version + ("" if self.asm else " no-asm")
#: OPENSSL_ia32cap bits this report can name: (word, bit) -> feature.
CAP_BITS: dict[tuple[int, int], str] = {pos: IA32CAP_LABELS[name]
                                         for name, pos in IA32CAP_BITS.items()}


@dataclass(frozen=True)
class Observation:
    """One figure of one run, with what the report needs to place it."""

    cpu: str
    variant: str
    version: str
    asm: bool
    arch: str
    march: str | None
    configure: tuple[str, ...]
    suite: str
    run: str
    run_path: Path
    invocation: str
    mask: str
    ia32cap: str | None
    engine: str | None
    evp: bool
    algorithm: str
    block_size: int
    bytes_per_s: float | None
    status: str
    forced: bool
    host_flags: tuple[str, ...]
    raw_file: str = ""  # the raw output this figure was read from, relative to the run
    published: bool = False  # imported from a published report (`invoke matrix import`)
    decrypt: bool = False
    source: str = ""  # an imported report's source file (name) and run in it
    prov: Provenance | None = None  # the run's session and conditions (``sessions``)
    aead: bool = False  # measured with speed -aead (TLS-like records, matrix/aead.py)
    processes: int = 1  # speed -multi N: the figure is the sum over N processes
    pts: bool = False  # pts/openssl's command line (kind: pts, matrix/pts.py)
    core: Core | None = None  # the CPU model's core for the run's host (CPUID, else name)
    clock_hz: float | None = None  # the run's measured clock (the clock probe's)

    @property
    def usable(self) -> bool:
        return self.status in USABLE_STATUSES and self.bytes_per_s is not None


def observations(tree: ResultsTree, sessions: Sessions | None = None,
                 runs: Iterable[records.Run] | None = None) -> list[Observation]:
    """Every symmetric (bytes per second) figure in the tree (or of its finished ``runs``,
    read once by the caller), each with its run's session (``sessions.Sessions``: one per
    tree, shared with the public-key figures)."""
    sessions = sessions or Sessions(tree)
    out: list[Observation] = []
    for ref in tree.finished_runs() if runs is None else runs:
        meta = ref.meta
        prov = sessions.provenance(ref)
        figures = ref.figures
        variant = meta.get("variant") or {}
        host = meta.get("host") or {}
        commands = {str(i.get("name")): [str(c) for c in i["command"]]
                    if isinstance(i.get("command"), list) else []
                    for i in meta.get("invocations") or [] if isinstance(i, dict)}
        suite = meta.get("suite") or {}
        published = meta.get("kind") == "reference"
        source = Path(str(meta.extra.get("source_file") or "a published report")).name \
            if published else ""
        # what every figure of the run shares, found once (a report reads 100,000s)
        version, asm = str(variant.get("version") or "?"), bool(variant.get("asm", True))
        arch, march = str(variant.get("arch") or "?"), variant.get("march")
        march = march if isinstance(march, str) and march else None  # a damaged record
        configure = tuple(str(c) for c in variant.get("configure") or ()) \
            if isinstance(variant.get("configure"), list) else ()
        forced, flags = bool(meta.get("forced")), tuple(host.get("cpu_flags") or ())
        suite_evp = bool(suite.get("evp", True))
        core, clock = _core_and_clock(host, meta.get("clock_hz"))
        for fig in figures:
            block = fig.block_size
            if fig.operation is not None or not isinstance(block, int):
                continue
            if not 0 < block <= MAX_BLOCK_SIZE:  # one impossible row never ends the report
                held = compact.holder(ref.path)  # the run's folder, or an import's file
                log.warn(f"{ref.path}: a figure of {fig.algorithm} has a block size of "
                         f"{str(block)[:40]} bytes, beyond any speed table: left out of the "
                         f"report; move {held} out of the results tree (or fix "
                         f"{records.FIGURES if held == ref.path else 'its line'} there) to "
                         "silence this")
                continue
            invocation = str(fig.invocation or "")
            command = commands.get(invocation, [])
            engine = fig.engine
            if engine is None and "-engine" in command:
                idx = command.index("-engine")
                engine = command[idx + 1] if idx + 1 < len(command) else "?"
            value = fig.bytes_per_s
            status = str(fig.status or "?")
            if value is not None and impossible(value):  # NaN, inf, negative, absurd
                value, status = None, STATUS_IMPOSSIBLE
            evp = fig.evp
            if fig.path in ("evp", "legacy"):
                evp = fig.path == "evp"
            out.append(Observation(
                cpu=ref.cpu, variant=ref.variant, version=version, asm=asm, arch=arch,
                march=march, configure=configure,
                suite=ref.suite, run=ref.run, run_path=ref.path, invocation=invocation,
                mask=str(fig.mask or "default"), ia32cap=fig.ia32cap, engine=engine,
                evp=suite_evp if evp is None else bool(evp),
                algorithm=str(fig.algorithm), block_size=block,
                bytes_per_s=float(value) if isinstance(value, (int, float)) else None,
                status=status, forced=forced, host_flags=flags,
                raw_file=_published_raw(tree.root, ref.path, meta.extra) if published
                else f"raw/{invocation}.stdout",
                published=published, decrypt=fig.direction == "decrypt",
                aead=fig.path == AEAD_METHOD, pts=_pts_path(fig.path),
                processes=int(fig.multi or 1),
                source=source, prov=prov, core=core, clock_hz=clock,
            ))
    return out


def _core_and_clock(host: Mapping[str, Any], clock: object) -> tuple[Core | None, float | None]:
    """The CPU model's core for a run's host (by CPUID family and model, else by the CPU's
    name) and its measured clock, each None where the record has none (or a damaged one)."""
    def num(value: object) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def text(value: object) -> str | None:
        return value if isinstance(value, str) else None

    core = core_of_cpu(text(host.get("cpu_vendor")), num(host.get("cpu_family")),
                       num(host.get("cpu_model_number")), text(host.get("cpu_model")))
    hz = float(clock) if isinstance(clock, (int, float)) and not isinstance(clock, bool) \
        and math.isfinite(clock) and clock > 0 else None
    return core, hz


@dataclass(frozen=True)
class LeftOut:
    """A bulk figure no table can show: its block size is impossible (beyond any speed
    table, so the parser kept none, or a row of an older tree holding one). The quality
    panel counts it, flagged ``impossible`` and kept out of the medians."""

    cpu: str
    variant: str
    suite: str
    run: str
    run_path: Path
    status: str = STATUS_IMPOSSIBLE


def left_out(runs: Iterable[records.Run]) -> list[LeftOut]:
    """The bulk figures of ``runs`` that :func:`observations` leaves out for an
    impossible block size, one each."""
    out: list[LeftOut] = []
    for ref in runs:
        for fig in ref.figures:
            block = fig.block_size
            if fig.operation is not None:
                continue
            if (block is None and fig.status == STATUS_IMPOSSIBLE) or \
                    (isinstance(block, int) and not 0 < block <= MAX_BLOCK_SIZE):
                out.append(LeftOut(ref.cpu, ref.variant, ref.suite, ref.run, ref.path))
    return out


def _published_raw(root: Path, run: Path, extra: Mapping[str, Any]) -> str:
    """Where an imported run's pasted text is, relative to the run: its own
    ``raw/report.txt``, else the one copy its import stored (``raw_report``, in the
    import's first run folder; the report lays runs out as the tree does)."""
    held = str(extra.get("raw_report") or "")
    if (run / "raw" / "report.txt").is_file() or not held:
        return "raw/report.txt"
    return os.path.relpath(root / held, run)


@functools.cache  # one per mask of the tree, asked once per figure
def describe_mask(ia32cap: str) -> str:
    """``~0x200000200000000`` -> ``AES-NI & PCLMULQDQ off``."""
    words = ia32cap.split(":")
    names: list[str] = []
    plain: list[str] = []
    for w, text in enumerate(words[:2]):
        if not text:
            continue
        if not text.startswith("~"):
            plain.append(text)
            continue
        try:
            value = int(text[1:], 16)
        except ValueError:
            return f"OPENSSL_ia32cap={ia32cap}"
        known = [(pos, name) for pos, name in CAP_BITS.items() if pos[0] == w]
        names += [name for (_, bit), name in known if value >> bit & 1]
        names += [f"bit {bit}" + (" (word 2)" if w else "") for bit in range(64)
                  if value >> bit & 1 and (w, bit) not in CAP_BITS]
    if plain:
        return f"OPENSSL_ia32cap={ia32cap}"
    return (" & ".join(names) + " off") if names else f"OPENSSL_ia32cap={ia32cap}"


def extensions_label(flags: Sequence[str]) -> str:
    have = [name for flag, name in (("aes", "AES-NI"), ("sha_ni", "SHA ext.")) if flag in flags]
    return " & ".join(have)


def method_of(obs: Observation) -> tuple[int, str]:
    """(sort order, label) of the method an observation measures."""
    path = ("" if obs.evp else " (no -evp)") + (" -aead" if obs.aead else "") + \
        (" decrypt" if obs.decrypt else "") + \
        (f" · {obs.processes} processes" if obs.processes > 1 else "") + \
        (" (pts/openssl way)" if obs.pts else "")
    if obs.published:
        return 6, f"as published{path}"
    if obs.engine:
        return 5, f"engine {obs.engine}{path}"
    if not obs.asm:
        if obs.ia32cap:
            return 1, f"no-asm, {describe_mask(obs.ia32cap)}{path}"
        return 0, f"no-asm{path}"
    if obs.ia32cap:
        return 2, f"asm, {describe_mask(obs.ia32cap)}{path}"
    if not obs.evp:
        return 3, "asm" + path
    ext = extensions_label(obs.host_flags)
    return 4, (f"asm + {ext}" if ext else "asm") + path


@dataclass(frozen=True)
class GroupKey:
    cpu: str
    version: str
    arch: str
    march: str | None
    configure: tuple[str, ...]
    source: str = ""  # an imported report: where its figures come from

    @property
    def title(self) -> str:
        if self.source:  # a published report: named by its source, never "OpenSSL ? · ?"
            version = "version not stated" if self.version in ("", "?") else \
                f"OpenSSL {self.version}"
            return f"{self.cpu.removeprefix('ref-')} (as published: {self.source}) · {version}"
        extra = "".join([f" · -march={self.march}" if self.march else "",
                         f" · {' '.join(self.configure)}" if self.configure else ""])
        return f"{self.cpu} · OpenSSL {self.version} · {self.arch}{extra}"

    @property
    def slug(self) -> str:
        text = "-".join([self.cpu, self.version, self.arch, self.march or "",
                         *self.configure])
        return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


@dataclass
class Cell:
    """Every observation of one method and algorithm at one block size, over every
    session; its figure is one session's (``selection``: the latest by default), never
    a pool of several (``sessions``)."""

    observations: list[Observation] = field(default_factory=list)
    selection: Selection = field(default_factory=Selection)
    page: str = ""
    """The cell's own page in the report folder (``cellpage``)."""
    title: str = ""

    @cached_property
    def history(self) -> list[SessionFigure]:
        """The cell's sessions, oldest first (``--since`` applied), one entry each."""
        published = any(o.published for o in self.observations)
        return self.selection.keep(split(self.observations, lambda o: o.bytes_per_s,
                                         interval=not published))

    @cached_property
    def shown(self) -> SessionFigure | None:
        """The session the cell's figure comes from (None: not in the chosen one)."""
        return self.selection.choose(self.history)

    @cached_property
    def changes(self) -> list[Change]:
        """The changes of the cell's history by the rule of ``history``."""
        return changes(self.history)

    @cached_property
    def current(self) -> list[Observation]:
        """The figures of the shown session: the only ones its median and interval use."""
        if self.shown is None:
            return []
        sid = self.shown.session
        return [o for o in self.observations if (o.prov or UNKNOWN).session == sid]

    @cached_property
    def usable_values(self) -> list[float]:
        """Values of the shown session whose status may go into the median
        (``USABLE_STATUSES``)."""
        return [o.bytes_per_s for o in self.current
                if o.status in USABLE_STATUSES and o.bytes_per_s is not None]

    @cached_property
    def ok_values(self) -> list[float]:
        """The usable values that go into the median: those within 5 % of the session's
        best sample of the cell (core/stats.py: one further below was slowed by
        something the guest could not see, ``shared-core``). A published report's figures
        are all kept: they are transcriptions, not samples of one measurement."""
        vals = self.usable_values
        if any(o.published for o in self.observations):
            return vals
        return [v for v, low in zip(vals, below_best(vals), strict=True) if not low]

    @cached_property
    def sits_low(self) -> str | None:
        """Whether the shown session as a whole sits low against the cell's earlier
        sessions on this host (stats.session_low), in words; None if not."""
        if self.shown is None or any(o.published for o in self.observations):
            return None
        groups = by_session(self.observations)
        earlier = [[o.bytes_per_s for o in groups.get(f.session, [])
                    if o.status in USABLE_STATUSES and o.bytes_per_s is not None]
                   for f in self.history if f.when < self.shown.when]
        return session_low(self.usable_values, earlier, self.model_figure)

    @cached_property
    def model_figure(self) -> float | None:
        """The CPU model's throughput for this cell on the shown session's core at its
        measured clock (measure/cpumodel.py), None where it has none: the third thing a
        session that sits low is set against (issue 31 item 4)."""
        for o in self.current:
            if o.core is None or o.clock_hz is None:
                continue
            if o.ia32cap:
                words = ia32cap_expected_clear(o.ia32cap)
                if words is None:  # a whole replacement vector: not the model's to size
                    return None
                masked = capabilities_of(words)
            else:
                masked = set()
            found = model_bytes_per_s(
                o.core, o.algorithm, evp=o.evp, decrypt=o.decrypt, masked=masked,
                series=series_or_none(o.version), asm=o.asm, engine=o.engine,
                clock_hz=o.clock_hz) if not (o.aead or o.pts or o.processes > 1) else None
            return found
        return None

    @property
    def below_best_values(self) -> int:
        """How many usable values the 5 % rule left out of the median."""
        return len(self.usable_values) - len(self.ok_values)

    @property
    def median(self) -> float | None:
        vals = self.ok_values
        return statistics.median(vals) if vals else None

    @cached_property
    def estimate(self) -> Estimate | None:
        """Median and 95 % interval of the usable values (``stats``). A published report's
        figures are transcribed, not repetitions of one measurement: no interval."""
        e = estimate(self.ok_values)
        if e is not None and any(o.published for o in self.observations):
            return dataclasses.replace(e, ci_low=None, ci_high=None)
        return e

    def error_bar(self, scale: float) -> tuple[float, float]:
        """(below, above) the median for a chart: the interval's half-width, the lower
        arm stopping at zero (no throughput is negative)."""
        e = self.estimate
        hw = e.half_width if e is not None else None
        if e is None or hw is None:
            return 0.0, 0.0
        return min(hw, e.median) / scale, hw / scale

    def pm(self) -> str:
        """``median ± half-width (n=N)`` in MB/s (``units.MBPS``); one sample says so; a
        cell without one usable figure says why (``no ok: all 6 contended``)."""
        e = self.estimate
        if e is None:
            flagged = self.flagged
            return f"no ok: {flagged.what}" if flagged is not None and flagged.statuses \
                else MBPS.num(None)
        hw = e.half_width
        return (MBPS.num(e.median) + (" (one sample)" if hw is None
                                      else f" ± {MBPS.num(hw, e.median)}") + f" (n={e.n})")

    @property
    def flagged(self) -> Flagged | None:
        """What the cell shows without one usable figure (None: it has one)."""
        if self.ok_values or not self.current:
            return None
        return Flagged.of((o.bytes_per_s for o in self.current),
                          (o.status for o in self.current if o.status != "ok"))

    @property
    def other_statuses(self) -> dict[str, int]:
        """Statuses other than ok in the shown session, used or not (beside the figure)."""
        out: dict[str, int] = {}
        for o in self.current:
            if o.status != "ok":
                out[o.status] = out.get(o.status, 0) + 1
        return out


@dataclass
class Group:
    key: GroupKey
    methods: dict[str, int] = field(default_factory=dict)  # label -> order
    algorithms: list[str] = field(default_factory=list)
    blocks: set[int] = field(default_factory=set)
    cells: dict[tuple[str, str, int], Cell] = field(default_factory=dict)

    def method_rows(self) -> list[str]:
        return sorted(self.methods, key=lambda m: (self.methods[m], m))

    def cell(self, method: str, algorithm: str, block: int) -> Cell | None:
        return self.cells.get((method, algorithm, block))


def group_observations(obs: Iterable[Observation],
                       selection: Selection | None = None) -> list[Group]:
    """The method tables of ``obs``; each cell shows the session ``selection`` picks."""
    selection = selection or Selection()
    groups: dict[GroupKey, Group] = {}
    for o in obs:
        key = GroupKey(o.cpu, o.version, o.arch, o.march, o.configure, o.source)
        g = groups.setdefault(key, Group(key))
        order, label = method_of(o)
        g.methods[label] = order
        if o.algorithm not in g.algorithms:
            g.algorithms.append(o.algorithm)
        g.blocks.add(o.block_size)
        at = (label, o.algorithm, o.block_size)
        cell = g.cells.get(at)
        if cell is None:
            cell = g.cells[at] = Cell(
                selection=selection,
                page=f"cells/{key.slug}--{fold(label)}--{fold(o.algorithm)}--{o.block_size}"
                     ".html",
                title=f"{key.title} · {label} · {o.algorithm} · {o.block_size} bytes")
        cell.observations.append(o)
    return [groups[k] for k in sorted(groups, key=lambda k: (k.cpu, version_sort_key(k.version),
                                                             k.arch, k.march or "",
                                                             k.configure))]


def is_regular(path: Path) -> bool:
    """A regular file, not a symbolic link: the report copies only what the tree holds
    (a link in a results tree could point at any file on the machine)."""
    return path.is_file() and not path.is_symlink()


def copy_run(src: Path, dest: Path) -> list[str]:
    """Copy a run's meta, figures and raw output; return the copied names (relative)."""
    copied: list[str] = []
    dest.mkdir(parents=True, exist_ok=True)
    for name, what in compact.run_files(src).items():  # an import's run, filed compactly
        if isinstance(what, str):
            (dest / name).write_text(what, encoding="utf-8")
        elif not (dest / name).exists():  # its import's paste, copied once beside the runs
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(what, dest / name)
        copied.append(name)
    for name in (records.META, records.FIGURES):
        if is_regular(src / name):
            shutil.copy2(src / name, dest / name)
            copied.append(name)
    raw = src / "raw"
    if raw.is_dir():
        (dest / "raw").mkdir(exist_ok=True)
        for f in sorted(raw.iterdir()):
            if is_regular(f):
                shutil.copy2(f, dest / "raw" / f.name)
                copied.append(f"raw/{f.name}")
    return copied


def _pts_path(path: object) -> bool:
    """Whether figures filed under ``path`` are pts/openssl's results (its kind says)."""
    kind = kind_of_path(path)
    return kind is not None and kind.pts_comparable
