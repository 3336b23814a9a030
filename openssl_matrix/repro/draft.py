"""``invoke matrix reproduce --draft PASTE --as ID``: a report spec drafted from a paste.

The paste (a whole issue or post, several tables, with or without speed's ``type 16
bytes ...`` header, human or ``-mr`` output) is read by the parser
(:func:`openssl_matrix.parse.read_paste`) and turned into a spec the loader
(:mod:`openssl_matrix.repro.specload`) accepts:

* **versions and builds** from each run's version line (``OpenSSL 1.1.1p  21 Jun 2022``,
  ``version: 3.0.2``); a run printed without one takes the release the text names last
  before its table. A release the text names beside the one the version line printed
  (the text says 1.1.1t, the build printed 1.1.1p) is kept in ``as_reported``;
* **one measurement per run and row**, its ``reference`` the printed tokens the parse
  read (``88472.39k``; ``'628.65 B/s'`` for speed's plain bytes and ``-mr`` figures), so
  no figure is ever typed; the method (``evp``) as the parse tells it from the rows'
  names, ``unknown`` where it cannot be told;
* **claim stubs**: for an algorithm two runs measured, the ratio of the later run to the
  earlier (of the same method, where one has it) at every block size the paste has, and
  its trend from the smallest size to the largest when the ratio changes, for the user
  to keep, edit or delete. Their ids start with ``stub-`` and their ``says`` with
  ``STUB``.

The draft is loaded by the spec loader before it is written, and every reference figure
is compared with the parse's: a draft that would not load, or whose figures differ from
the paste's, is never written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from openssl_matrix.core.errors import FatalError, UsageError
from openssl_matrix.core.files import atomic_write
from openssl_matrix.core.names import clip
from openssl_matrix.core.version import Version
from openssl_matrix.matrix.check import CheckContext, load_yaml_file
from openssl_matrix.matrix.model import VERSION
from openssl_matrix.matrix.pkey import ALGORITHMS as PK_ALGORITHMS
from openssl_matrix.parse import read_paste
from openssl_matrix.parse.algorithms import resolve
from openssl_matrix.parse.figures import Figure, SpeedRun
from openssl_matrix.repro.spec import OP_BLOCK, ReportSpec
from openssl_matrix.repro.specload import build_spec

#: At most this many claim stubs are drafted (a paste of twenty runs of six algorithms
#: would give a hundred); the comment above them says how many more pairs there are.
MAX_STUBS = 24
#: What to do about a run left out because its release cannot be told.
VERSION_ADVICE = ("a run without its release: add the version line speed printed (`OpenSSL "
                  "1.1.1w  11 Sep 2023` or `version: 3.0.2`) above its table in the paste "
                  "and draft again (--force replaces the draft); where the report printed "
                  "none and names a branch or a commit (`master`), write the development "
                  "version it was then (`version: 3.6.0-dev`: drafted as `release: false`) "
                  "and say in that version's as_reported that it is your reading")
#: A ratio that changes by more than this share between the smallest and the largest
#: block size gets a trend stub besides the per-size one.
TREND_CHANGE = 0.10

#: A release named in prose: ``1.1.1t``, ``OpenSSL 3.1.0``, ``openssl-3.0.2``; and
#: ``OpenSSL 3.0`` (a series, not a release: it stops a table from taking an earlier one).
_MENTION = re.compile(r"(?<![\w.])(?:(?P<word>openssl)[ _-]?v?)?"
                      r"(?P<v>\d+\.\d+(?:\.\d+[a-z]{0,2}(?:-[a-z0-9]+)?)?)(?!\w|\.\d)", re.I)
#: A release number named without the word OpenSSL counts when it looks like one (0.9.x,
#: 1.x, 3.x): not a distribution's 20.04.3 or a compiler's 12.2.0.
_BARE = re.compile(r"^(0\.9|1\.[01]|3\.\d)\.")
#: A CPU named in the prose: a vendor's family and the model words after it ("Intel Xeon
#: Platinum 8380", "AMD EPYC 9655", "Intel(R) Core(TM) i7-2760QM", "Apple M2 Max").
_CPU = re.compile(r"\b(?:Intel(?:\(R\))?\s+(?:Xeon|Core|Atom|Pentium|Celeron)(?:\((?:TM|R)\))?"
                  r"|AMD\s+(?:EPYC|Ryzen|Opteron|Athlon|Phenom)|Apple\s+M\d)"
                  r"(?:\s+(?:Platinum|Gold|Silver|Bronze|Max|Pro|PRO|Ultra|Threadripper"
                  r"|[A-Za-z-]*\d[\w.-]*))*")
_I386 = re.compile(r"linux-elf|linux-x86(?!_64)|i[3-6]86|-m32\b|BSD-x86(?!_64)|mingw(?!64)")


@dataclass
class Draft:
    """A drafted spec's YAML and what went into it."""

    text: str
    runs: int
    measurements: int
    stubs: int
    left_out: list[str] = field(default_factory=list)


@dataclass
class _Row:
    """One row of one run: a measurement to write."""

    name: str
    run: int
    algorithm: str  # the spec's name: the parse's id, or a pkey suite name
    operation: str | None
    figures: list[Figure]
    evp: bool | None
    notes: list[str] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str | None]:
        return self.algorithm, self.operation

    def values(self) -> dict[int, float]:
        """The parse's values, keyed as the loader keys them (block size, or OP_BLOCK)."""
        out: dict[int, float] = {}
        for f in self.figures:
            if self.operation is None and f.block_size is not None and f.bytes_per_s:
                out[f.block_size] = f.bytes_per_s
            elif self.operation is not None and f.ops_per_s:
                out[OP_BLOCK] = f.ops_per_s
        return out


def _q(text: str) -> str:
    """A YAML double-quoted scalar of free text (a character YAML refuses becomes a blank)."""
    clean = "".join(c if c.isprintable() else " " for c in text)
    return json.dumps(clean, ensure_ascii=False)


def _mentions(text: str) -> list[tuple[int, str, bool]]:
    """(offset, version, is a release) for every OpenSSL version the text names."""
    out = []
    for m in _MENTION.finditer(text):
        v = m.group("v").lower()
        if v.count(".") == 2 and (m.group("word") or _BARE.match(v)):
            out.append((m.start(), v, True))
        elif m.group("word"):
            out.append((m.start(), v, False))
    return out


def _run_offsets(text: str, runs: Sequence[SpeedRun]) -> list[int | None]:
    """Where each run's first figure is printed in the text, in order (None: not found)."""
    out: list[int | None] = []
    start = 0
    for run in runs:
        raw = next((f.raw for f in run.figures if f.raw), "")
        at = text.find(raw, start) if raw else -1
        out.append(None if at < 0 else at)
        if at >= 0:
            start = at + len(raw)
    return out


def _figure_text(f: Figure) -> str:
    """The printed token as the loader reads it: ``305049.90k`` as is, a plain number
    (speed's bytes below 10000, every ``-mr`` figure) with its unit."""
    raw = f.raw.strip()
    return raw if raw.endswith("k") else f"'{raw} B/s'"


def _pk_name(f: Figure) -> str | None:
    return next((a.name for a in PK_ALGORITHMS.values()
                 if a.figure == f.algorithm and f.operation in a.operations), None)


def _safe(name: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._") or "row"


def _rows(number: int, run: SpeedRun, left_out: list[str]) -> list[_Row]:
    """The measurements of one run: its symmetric rows, then its public-key figures."""
    groups: dict[tuple[str, str | None, int | None], list[Figure]] = {}
    for f in run.figures:
        groups.setdefault((f.label, f.operation, f.bits), []).append(f)
    rows: list[_Row] = []
    names: set[str] = set()
    for (label, operation, _bits), figs in groups.items():
        first = figs[0]
        if operation is None:
            algorithm = resolve(first.algorithm)
            if algorithm is None:
                left_out.append(f"run {number}: {label!r}: not an algorithm a spec can name")
                continue
        else:
            pk = _pk_name(first)
            if pk is None:
                left_out.append(f"run {number}: {label} {operation}: the reproduction has no "
                                "public-key test of it")
                continue
            algorithm = pk
        usable = [f for f in figs if (f.ops_per_s if operation else f.bytes_per_s)]
        notes = [f"{f.block_size or f.operation}: not drafted ({f.status}: speed printed "
                 f"{f.raw or 'nothing'})" for f in figs if f not in usable]
        notes += [f"{f.block_size or f.operation}: {f.status}" + (f" ({f.detail})"
                                                                     if f.detail else "")
                  for f in usable if f.status != "ok"]
        if not usable:
            left_out.append(f"run {number}: {label}: no usable figure ({first.status})")
            continue
        base = _safe(f"r{number}-{algorithm}" + (f"-{operation}" if operation else ""))
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}-{n}"
        names.add(name)
        methods = {f.evp for f in usable}
        rows.append(_Row(name, number, algorithm, operation, usable,
                         methods.pop() if len(methods) == 1 else None, notes))
    return rows


@dataclass
class _Build:
    name: str
    version: str
    as_reported: str
    version_line: str
    asm: bool
    arch: str
    runs: list[int] = field(default_factory=list)


def _version_of(run: SpeedRun, offset: int | None, mentions: list[tuple[int, str, bool]],
                ) -> tuple[str | None, str]:
    """The run's release and how it is known (its version line, or the text above it)."""
    found = Version.find(run.header.version or run.header.version_line)
    if found is not None:
        return found.text, run.header.version_line or f"version: {found.text}"
    if offset is None:
        return None, "its table could not be found again in the text"
    before = [m for m in mentions if m[0] < offset]
    if not before:
        return None, "no version line, and the text names no release above it"
    _, named, release = before[-1]
    if not release:
        return None, (f"no version line, and the text above it names OpenSSL {named}, a "
                      "series, not a release")
    return named, f"no version line; the text above its table names {named}"


def _builds(runs: Sequence[SpeedRun], text: str, left_out: list[str],
            ) -> tuple[dict[str, _Build], dict[int, _Build]]:
    mentions = _mentions(text)
    by_key: dict[tuple[str, str, str, str], _Build] = {}
    of_run: dict[int, _Build] = {}
    for number, (run, offset) in enumerate(zip(runs, _run_offsets(text, runs),
                                               strict=True), 1):
        version, how = _version_of(run, offset, mentions)
        if version is None or not VERSION.match(version):
            why = how if version is None else f"{version} is not a release number a spec " \
                "can declare"
            left_out.append(f"run {number}: {why}")
            continue
        h = run.header
        said = "; ".join(f"{k} {v}" for k, v in (("platform:", h.platform),
                                                 ("options:", h.options),
                                                 ("compiler:", h.compiler)) if v)
        key = (version, h.platform or "", h.options or "", h.compiler or "")
        build = by_key.get(key)
        if build is None:
            same = sum(1 for b in by_key.values() if b.version == version)
            build = _Build(name=f"v{version}" + (f"-{same + 1}" if same else ""),
                           version=version, as_reported=said or "not given in the paste",
                           version_line=how, asm="OPENSSL_NO_ASM" not in said
                           and "no-asm" not in said,
                           arch="i386" if _I386.search(h.platform or "") else "x86_64")
            by_key[key] = build
        build.runs.append(number)
        of_run[number] = build
    named = {b.version for b in by_key.values()}
    for b in by_key.values():  # a release the text names beside the one the build printed
        series = ".".join(map(str, Version.parse(b.version).series))
        other = sorted({v for _, v, rel in mentions if rel and v not in named
                        and v.startswith(series) and not b.version.startswith(v)})
        if other:
            b.version_line += f" (the text names {', '.join(other)})"
    return {b.name: b for b in by_key.values()}, of_run


def _ratio_text(r: float) -> str:
    return f"{r:#.3g}×"


def _stubs(rows: Sequence[_Row], builds: dict[int, _Build]) -> tuple[list[str], int]:
    """Claim stubs, as YAML lines, and how many pairs were left out for MAX_STUBS."""
    by_key: dict[tuple[str, str | None], list[_Row]] = {}
    for r in rows:
        by_key.setdefault(r.key, []).append(r)
    lines: list[str] = []
    count = more = 0
    for group in by_key.values():
        for i, num in enumerate(group[1:], 1):
            # against the first earlier row of the same method (EVP with EVP), else the first
            den = next((d for d in group[:i] if d.evp == num.evp), group[0])
            a, b = num.values(), den.values()
            sizes = sorted(set(a) & set(b))
            if not sizes:
                continue
            if count >= MAX_STUBS:
                more += 1
                continue
            count += 1
            ratios = {s: a[s] / b[s] for s in sizes}
            vn, vd = builds[num.run].version, builds[den.run].version
            what = f"{num.algorithm}" + (f" {num.operation}" if num.operation else "")
            if num.operation is None:
                shown = ", ".join(f"{s}: {_ratio_text(r)}" for s, r in ratios.items())
                span = (f"{_ratio_text(ratios[sizes[0]])} at {sizes[0]} bytes to "
                        f"{_ratio_text(ratios[sizes[-1]])} at {sizes[-1]} bytes"
                        if len(sizes) > 1 else f"{_ratio_text(ratios[sizes[0]])} at "
                        f"{sizes[0]} bytes")
            else:
                shown = span = _ratio_text(ratios[OP_BLOCK])
            ident = _safe(f"stub-{num.name}-vs-{den.name}")
            sides = f"{num.name} ({vn}, run {num.run}) against {den.name} ({vd}, run {den.run})"
            where = f"run {num.run} of the paste" if num.run == den.run else \
                f"runs {den.run} and {num.run} of the paste"
            if builds[num.run] is builds[den.run] and num.evp == den.evp:
                lines.append(f"  # runs {den.run} and {num.run} printed the same build: if "
                             f"they were two builds (a patch, another commit), give run "
                             f"{num.run}'s measurements a build of their own")
            lines += [f"  # the paste's ratio {num.name} / {den.name}: {shown}",
                      f"  - id: {ident}",
                      "    says: " + _q(f"STUB, from the paste's figures: {what}, {sides}: "
                                        f"{span}. Say what the report claims, or delete "
                                        "this."),
                      f"    where: {where}",
                      f"    compare: [{num.name}, {den.name}]",
                      "    expect: ratio   # the paste's own ratio at each size is the target"]
            if num.operation is None:
                lines.append("    block_sizes: all")
                trend = ratios[sizes[-1]] / ratios[sizes[0]]
                if len(sizes) > 1 and abs(trend - 1) > TREND_CHANGE:
                    lines += [f"  # the ratio changes from {sizes[0]} to {sizes[-1]} bytes: "
                              f"{_ratio_text(trend)} (docs/reports.md#trend-claims)",
                              f"  - id: {ident}-trend",
                              "    says: " + _q(f"STUB, from the paste's figures: {what}, "
                                                f"{sides}: the ratio changes "
                                                f"{_ratio_text(trend)} from {sizes[0]} to "
                                                f"{sizes[-1]} bytes. Say what the report "
                                                "claims, or delete this."),
                              f"    where: {where}",
                              f"    compare: [{num.name}, {den.name}]",
                              "    expect: ratio",
                              f"    ratio: {trend:.3g}",
                              f"    trend: [{sizes[0]}, {sizes[-1]}]"]
    return lines, more


def _fallback_stub(rows: Sequence[_Row]) -> list[str]:
    """When no two runs measured the same algorithm: a stub comparing two rows of the
    paste that share block sizes (a spec needs a claim), or UsageError when none do."""
    for i, num in enumerate(rows):
        for den in rows[i + 1:]:
            if (num.operation is None) == (den.operation is None) and \
                    set(num.values()) & set(den.values()):
                return ["  # no two runs measured the same algorithm: this stub compares "
                        "two rows; write the report's claim instead",
                        f"  - id: stub-{num.name}-vs-{den.name}",
                        "    says: \"STUB: say what the report claims, or delete this.\"",
                        f"    compare: [{num.name}, {den.name}]",
                        "    expect: ratio   # the paste's own ratio at each size is the "
                        "target"] + (["    block_sizes: all"] if num.operation is None
                                     else [])
    raise UsageError("the paste has no two rows a claim could compare (a spec needs at "
                     "least one claim, and a claim compares two measurements)",
                     hint="paste the report's other table too, or write the spec by hand "
                     "(docs/reports.md)")


def _evp_line(row: _Row, commands: Sequence[str]) -> str:
    if row.operation is not None:
        return ""
    if row.evp is None:
        return ("    evp: unknown   # the paste does not show whether speed ran with -evp: "
                "both are measured")
    how = "the command line above it shows" if commands else "the rows' names in the " \
        "paste show"
    return f"    evp: {'true' if row.evp else 'false'}   # as {how}"


def _measurement_lines(row: _Row, build: _Build, run: SpeedRun) -> list[str]:
    lines = [f"  {row.name}:", f"    build: {build.name}", f"    algorithm: {row.algorithm}"]
    if row.operation is not None:
        lines.append(f"    operation: {row.operation}")
    if run.commands:  # documentary: the report's command line(s), verbatim
        lines.append("    command: " + _q("; ".join(dict.fromkeys(run.commands))[:300]))
    if evp := _evp_line(row, run.commands):
        lines.append(evp)
    elapsed = run.header.elapsed
    if elapsed is not None:
        lines.append(f"    elapsed: {'true' if elapsed else 'false'}")
    if row.operation is None:
        lines.append("    reference:")
        lines += [f"      {f.block_size}: {_figure_text(f)}" for f in row.figures]
    else:
        lines.append(f"    reference: {row.figures[0].ops_per_s!r}")
    if row.notes:
        lines.append("    notes: " + _q("; ".join(row.notes)))
    return lines


def _is_snapshot(version: str) -> bool:
    """A development snapshot (``3.0.0-dev``): never released, so no tarball exists."""
    return version.endswith("-dev")


def _version_lines(version: str, builds: Sequence[_Build], here: Sequence[str]) -> list[str]:
    """A version entry: its version line(s); ``release: false`` for a snapshot; and, when
    the matrix builds another release of its series (``here``), that release as a stand-in
    to uncomment (the reason is the user's to give, so it is never written for them)."""
    lines = [f"  {version}:", "    as_reported: " + _q("; ".join(
        dict.fromkeys(b.version_line for b in builds)))]
    if _is_snapshot(version):
        lines.append("    release: false   # a development snapshot: no release tarball of "
                     "it exists")
    major_minor = version.split(".")[:2]
    near = [v for v in here if v != version and v.split(".")[:2] == major_minor]
    if near:
        lines += [f"    # stand_in: {near[-1]}   # this matrix builds {near[-1]}: uncomment "
                  f"to judge {version}'s claims with it,",
                  "    # stand_in_why: say why it behaves the same for them   "
                  "(docs/reports.md#versions)"]
    return lines


def _cpu_line(text: str) -> str:
    """The machine's ``cpu``: the CPU the prose names when it names one (to check), else
    "not named"; several named ones are listed in a comment for the user to choose."""
    found = (" ".join(m.group(0).split()).rstrip(".-") for m in _CPU.finditer(text))
    named = list(dict.fromkeys(n for n in found if any(c.isdigit() for c in n)))  # a model
    if len(named) == 1:
        return (f"    cpu: {_q(named[0])}   # as the text names it: check that the runs "
                "ran on it")
    hint = f" (the text names {'; '.join(named[:4])})" if named else ""
    return f"    cpu: not named in the paste   # the CPU as the report names it{hint}"


def _cpuinfo_lines(runs: Sequence[SpeedRun]) -> list[str]:
    """The CPUINFO lines speed printed (3.0+: the OPENSSL_ia32cap the CPU gave), as the
    machine's notes: a report that names no CPU still shows its capabilities there."""
    seen = dict.fromkeys(r.header.cpuinfo for r in runs if r.header.cpuinfo)
    if not seen:
        return []
    return ["    notes: " + _q("speed's CPUINFO line in the paste: " + "; ".join(seen))]


def draft_spec(paste: str, spec_id: str, *, source: str,
               block_sizes: Sequence[int] | None = None, here: Sequence[str] = ()) -> Draft:
    """The spec ``reports/<spec_id>.yaml`` drafted from ``paste`` (read from ``source``,
    named in the draft); ``here``: the releases the user's matrix builds by default (a
    version of the same series gets one of them as a stand-in to uncomment). ParseError
    when the paste holds no speed output, UsageError when no run of it can be drafted."""
    source = "".join(c if c.isprintable() else "?" for c in source[:200])
    reading = read_paste(paste, block_sizes=block_sizes)
    runs = reading.runs
    left_out: list[str] = []
    builds, of_run = _builds(runs, paste, left_out)
    rows: list[_Row] = []
    for number, run in enumerate(runs, 1):
        if number in of_run:
            rows += _rows(number, run, left_out)
    if not rows:
        raise UsageError(f"{clip(source, 200)}: no run of the paste can be drafted: "
                         + "; ".join(left_out[:5]),
                         hint=(VERSION_ADVICE + "; " if _without_release(left_out) else "")
                         + f"`invoke matrix parse {clip(source, 200)}` shows what the "
                         "parser reads")
    versions: dict[str, list[_Build]] = {}
    for b in builds.values():
        versions.setdefault(b.version, []).append(b)
    names = " and ".join(versions)
    out = [f"# Drafted by `invoke matrix reproduce --draft {source} --as {spec_id}`",
           f"# from {len(runs)} run(s) of `openssl speed` in the paste. Every figure is the "
           "parser's",
           "# reading of the paste (`invoke matrix parse` shows the same): none was typed.",
           "# To do: fill in source and machines, turn the STUB claims at the end into the",
           "# claims the report makes (or delete them), then run",
           f"# `invoke matrix reproduce {spec_id} --check`. Format: docs/reports.md",
           "schema: 1",
           "title: " + _q(f"OpenSSL {names}: `openssl speed` as pasted (drafted)"),
           "source:",
           "  kind: other   # mailing-list, blog, forum, site, paper or other",
           "  where: " + _q(f"pasted from {source}") + "   # where the report was published",
           "machines:",
           "  reporter:",
           _cpu_line(paste),
           *_cpuinfo_lines(runs),
           "versions:"]
    for version, bs in versions.items():
        out += _version_lines(version, bs, here)
    out.append("builds:")
    for b in builds.values():
        out += [f"  {b.name}:", f"    version: {b.version}"]
        if not b.asm:
            out.append("    asm: false")
        if b.arch != "x86_64":
            out.append(f"    arch: {b.arch}")
        out.append("    as_reported: " + _q(b.as_reported))
    out.append("measurements:")
    for number, run in enumerate(runs, 1):
        mine = [r for r in rows if r.run == number]
        if not mine:
            continue
        out.append(f"  # run {number}: {of_run[number].version_line}"
                   + (" (-mr output)" if run.machine_readable else ""))
        out += [f"  # {w}" for w in run.warnings]
        for row in mine:
            out += _measurement_lines(row, of_run[number], run)
    stubs, more = _stubs(rows, of_run)
    out += ["claims:",
            "  # STUBS drafted from the paste's own ratios, not from its words: keep, edit "
            "or delete each",
            "  # (a spec needs at least one claim; docs/reports.md#claims)."]
    if more:
        out.append(f"  # {more} more pair(s) of runs measured the same algorithm; no stub "
                   "was written for them.")
    out += stubs or _fallback_stub(rows)
    if left_out:
        out.append("notes: " + _q("Left out of the draft: " + "; ".join(
            dict.fromkeys(left_out)) + "."))
    text = "\n".join(out) + "\n"
    return Draft(text=text, runs=len(runs), measurements=len(rows),
                 stubs=sum(1 for line in stubs if line.startswith("  - id:")),
                 left_out=list(dict.fromkeys(left_out)))


def check_draft(draft: Draft, path: Path, paste: str,
                block_sizes: Sequence[int] | None = None) -> ReportSpec:
    """The draft as the spec loader reads it at ``path``, its figures compared with the
    parse's; FatalError (a bug here, not the user's) when they differ."""
    spec = build_spec(load_yaml_file(CheckContext(path), draft.text), path)
    parsed = read_paste(paste, block_sizes=block_sizes).runs
    for name, m in spec.measurements.items():
        number = int(name.split("-", 1)[0][1:])
        rows = _rows(number, parsed[number - 1], [])
        row = next(r for r in rows if r.name == name)
        if dict(m.reference) != row.values():
            raise FatalError(f"the draft's figures of {name} differ from the parse's: "
                             f"{dict(m.reference)} against {row.values()}",
                             hint="this is a bug of --draft: please report it with the paste")
    return spec


def refuse_existing(path: Path, *, force: bool) -> None:
    """UsageError when ``path`` exists and ``force`` is not given: a spec someone edited
    is never replaced by a draft unasked."""
    if (path.exists() or path.is_symlink()) and not force:
        raise UsageError(f"{path} exists: the draft is not written over it",
                         hint="give another --as ID, move the file away, or add --force to "
                         "replace it")


def write_draft(draft: Draft, path: Path, *, force: bool) -> None:
    """Write the draft to ``path``; an existing file is refused unless ``force``."""
    refuse_existing(path, force=force)
    try:
        atomic_write(path, draft.text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


def _without_release(left_out: Iterable[str]) -> bool:
    return any("version line" in x for x in left_out)


def summary(draft: Draft, path: Path, spec_id: str, shipped: Iterable[str] = ()) -> str:
    """What the command prints once the draft is written."""
    lines = [f"wrote {path}: {draft.measurements} measurement(s) from {draft.runs} run(s), "
             f"{draft.stubs} claim stub(s) to keep, edit or delete"]
    lines += [f"  left out: {x}" for x in draft.left_out]
    if _without_release(draft.left_out):
        lines.append(f"  to draft them: {VERSION_ADVICE}")
    if spec_id in set(shipped):
        lines.append(f"  note: it takes the place of the shipped spec {spec_id} for "
                     "`reproduce` (reports/ beside the matrix is searched first)")
    lines.append(f"next: fill in source and machines, edit the claims, then `invoke matrix "
                 f"reproduce {spec_id} --check`")
    return "\n".join(lines) + "\n"


