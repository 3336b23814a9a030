"""The sweep's table: one row per release x arch x asm (built / fails / not tried), kept
in the shipped ``resources/sweep-table.json``, formatted for docs/building.md and
docs/releases.md, and read by ``invoke matrix list`` to say whether a release is known to
build here.

The sweep itself (planning, building, the smoke speed run) is ``sweep.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from openssl_matrix.core import jsonread
from openssl_matrix.core.files import atomic_write, read_bounded_text
from openssl_matrix.core.resources import sweep_table
from openssl_matrix.core.stats import estimate
from openssl_matrix.core.version import Version
from openssl_matrix.images.sources import KNOWN_SHA256, PIN_COMMAND

#: The recorded table of the last sweep here (written by ``sweep.py --record``).
TABLE_FILE = sweep_table()

ARCHES = ("x86_64", "i386")
ASMS = ("asm", "no-asm")


@dataclass
class Row:
    """One cell of the sweep: a release built one way, and what came of it."""

    version: str
    arch: str
    asm: str
    status: str  # built | fails | not tried
    seconds: float | None = None
    reason: str = ""
    source: str = ""
    openssl_version: str = ""
    speed_bytes_per_s: float | None = None
    speed_note: str = ""
    load_before: float | None = None
    load_after: float | None = None
    compat: list[str] = field(default_factory=list)
    host_own_share: float | None = None
    """The speed run's own CPU share (hostacct): 1.0 = always on a CPU."""
    host_foreign_cores: float | None = None
    """Cores everything else kept busy while it ran (hostacct)."""
    host_contended: list[str] = field(default_factory=list)
    """Why hostacct calls the speed run contended; empty and ``host_own_share`` set: clean."""
    endbr32: int | None = None
    """ENDBR32 instructions in the built libcrypto (SIGILL on CPUs without CET NOPs)."""
    speed_samples: list[float] = field(default_factory=list)
    """Every smoke run's bytes/s (``speed_bytes_per_s`` is their median); empty for rows
    swept when the smoke was one run."""

    @property
    def variant(self) -> str:
        return f"{self.version}-{self.asm}-{self.arch}"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Row:
        """A recorded row; keys this version of the tool does not know are left out (a
        table written by a newer sweep stays readable)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


# --------------------------------------------------------------------------- the table


def read_table(path: Path = TABLE_FILE) -> dict[str, Any]:
    """The recorded sweep (an absent or unreadable file is an empty table)."""
    try:
        data = jsonread.loads(read_bounded_text(path, "results"))
    except (OSError, ValueError):
        return {"rows": []}
    return data if isinstance(data, dict) and isinstance(data.get("rows"), list) \
        else {"rows": []}


def rows_for(version: str, table: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    data = read_table() if table is None else table
    return [r for r in data["rows"] if isinstance(r, dict) and r.get("version") == version]


def build_status(version: str, arch: str, asm: bool,
                 table: dict[str, Any] | None = None, *,
                 declared_sha256: str | None = None) -> str:
    """What the recorded sweep says about one variant's release on this kind of machine.

    ``declared_sha256`` is the matrix's checksum for the release: when it is the official
    tarball's and the sweep built a third-party tree, the status says the declared tarball
    itself was not what was swept."""
    data = read_table() if table is None else table
    rows = rows_for(version, data)
    if not rows:
        return "not swept"
    want = "asm" if asm else "no-asm"
    for r in rows:
        if r.get("arch") in (arch, "any") and r.get("asm") in (want, "any"):
            status = str(r.get("status"))
            third = "third-party" in str(r.get("source"))
            if status == "not tried":
                return not_tried_text(str(r.get("reason") or ""))
            text = (f"{status}: {r.get('reason')}" if status != "built"
                    else "built" if r.get("seconds") is None
                    else f"built {secs(r.get('seconds'))}")
            if third and declared_sha256 and _official(version) == declared_sha256:
                return text + (" (from a third-party tree, not the official tarball the "
                               "matrix declares)")
            return text + (" (third-party tree)" if third and status == "built" else "")
    built = [r for r in rows if r.get("status") == "built"]
    if built:
        return "not swept this way; built " + ", ".join(
            f"{r.get('arch')} {r.get('asm')}" for r in built)
    return "not swept this way"


def _official(version: str) -> str | None:
    return KNOWN_SHA256.get(version)


#: How the reason of a cell a sweep cut short starts (``--not-tried "not reached: ..."``);
#: such a reason is the sweeper's note, and the docs and ``list`` word it for users.
NOT_REACHED = "not reached"
RESUME_HINT = "`benchmarks/sweep.py --tarballs DIR --resume` builds"


def not_reached(reason: str) -> bool:
    return reason.startswith(NOT_REACHED)


def not_tried_text(reason: str) -> str:
    """A "not tried" cell as users read it: a cell the sweep did not reach yet says how to
    build it, any other says why it was not tried."""
    if not_reached(reason):
        return f"not yet built by the recorded sweep ({RESUME_HINT} it)"
    return f"not tried: {reason}"


def secs(value: Any) -> str:
    return f"{float(value):.0f} s" if isinstance(value, (int, float)) else "?"


def _order(r: Row) -> tuple[Any, ...]:
    return (Version.parse(r.version).key, ARCHES.index(r.arch) if r.arch in ARCHES else 9,
            r.asm)


#: What buildinfo.sh records for a compat script that found nothing to change.
NOTHING_CHANGED = "construct not found, nothing changed"


def result_text(r: Row) -> str:
    if r.status == "built":
        # an image already there (built by another results tree, e.g. the test suite's)
        # is not timed again
        result = (f"built ({secs(r.seconds)})" if r.seconds is not None
                  else "built (image already present: not timed)")
        acted = sorted({c.split(":")[0] for c in r.compat if not c.endswith(NOTHING_CHANGED)})
        if acted:
            result += "; compat: " + ", ".join(acted)
        if r.endbr32:
            result += f"; {r.endbr32} ENDBR32"
        return result
    if r.status == "fails":
        return f"fails: {r.reason}"
    return not_tried_text(r.reason)


def cell(text: str) -> str:
    """Text fit for one Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def format_table(rows: Sequence[Row], *, when: str | None = None) -> str:
    """The sweep as a Markdown table, then where each release's tree came from (what
    docs/building.md carries)."""
    lines = [
        "| release | arch | asm | result | aes-128-cbc 8192 B (EVP), host during the run |",
        "|---|---|---|---|---|",
    ]
    sources: dict[str, str] = {}
    for r in sorted(rows, key=_order):
        speed = speed_text(r)
        lines.append(f"| {r.version} | {r.arch} | {r.asm} | {cell(result_text(r))} | "
                     f"{cell(speed)} |")
        if r.source:
            sources.setdefault(r.version, r.source)
    c = counts(rows)
    lines += ["", f"Cells: {c['built']} built ({c['build_seconds']:.0f} s of building in "
              f"all), {c['fails']} fail, {c['not tried']} not tried; releases: "
              f"{c['releases']}.", ""]
    lines += [f"- {v}: {src}" for v, src in sources.items()]
    if when:
        lines += ["", f"Swept {when}."]
    return "\n".join(lines) + "\n"


def speed_text(r: Row) -> str:
    """A row's smoke figure as the table prints it: median ± 95 % half-width in MB/s with
    the run count (one run says so), then what the host accounting found; or why there is
    no figure."""
    if not r.speed_bytes_per_s:
        return r.speed_note or "—"
    est = estimate(r.speed_samples) if r.speed_samples else None
    if est is None:
        figure = f"{r.speed_bytes_per_s / 1e6:,.0f} MB/s (one run)"
    else:
        figure = est.text(1e6, "{:,.0f}").replace(" (n=", " MB/s (n=")
        if est.n == 1:
            figure = figure.replace(" (one sample) MB/s (n=1)", " MB/s (one run)")
    return f"{figure}, {host_verdict(r)}"


def counts(rows: Sequence[Row]) -> dict[str, Any]:
    """Cells per status (an "any" row counts once), the seconds spent building what
    built, and the number of releases."""
    out: dict[str, Any] = {"built": 0, "fails": 0, "not tried": 0}
    for r in rows:
        out[r.status] = out.get(r.status, 0) + 1
    out["build_seconds"] = sum(r.seconds or 0.0 for r in rows if r.status == "built")
    out["releases"] = len({r.version for r in rows})
    return out


def release_summary(rows: Sequence[Row]) -> str:
    """Per release, one Markdown list item: how it was built here, a built cell whose
    speed check failed, and every failure with its reason (docs/releases.md's version list)."""
    by: dict[str, list[Row]] = {}
    for r in sorted(rows, key=_order):
        by.setdefault(r.version, []).append(r)
    lines = []
    for version, rs in by.items():
        parts = []
        built = [f"{r.arch} {r.asm}" for r in rs if r.status == "built"]
        if built:
            parts.append("builds (" + ", ".join(built) + ")")
        parts += [f"speed check fails ({r.arch} {r.asm}): {short_note(r.speed_note)}"
                  for r in rs if r.status == "built" and r.speed_note
                  and not r.speed_bytes_per_s]
        parts += [f"**fails** {r.arch} {r.asm}: {r.reason}" for r in rs if r.status == "fails"]
        left = [r for r in rs if r.status == "not tried"]
        if left and not built and all(r.arch == "any" for r in left):
            parts.append(not_tried_text(left[0].reason))
        else:
            reasons: dict[str, list[str]] = {}
            for r in left:
                reasons.setdefault(r.reason, []).append(f"{r.arch} {r.asm}")
            parts += [f"not yet built by the recorded sweep: {', '.join(cells)} "
                      f"({RESUME_HINT} {'it' if len(cells) == 1 else 'them'})"
                      if not_reached(why) else f"not tried: {', '.join(cells)} ({why})"
                      for why, cells in reasons.items()]
        lines.append(f"- {version}: " + "; ".join(parts))
    return "\n".join(lines) + "\n"


def short_note(note: str, limit: int = 160) -> str:
    """A speed note on one line, cut to ``limit`` characters."""
    text = " ".join(note.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def replace_block(text: str, name: str, body: str) -> str:
    """``text`` with what lies between ``<!-- name: ... -->`` and ``<!-- /name -->``
    replaced by ``body`` (an absent block is an error: the docs say where it goes)."""
    m = re.search(rf"(<!-- {re.escape(name)}:[^\n]*-->\n)(.*?)(<!-- /{re.escape(name)} -->)",
                  text, re.S)
    if m is None:
        raise ValueError(f"no <!-- {name}: ... --> ... <!-- /{name} --> block")
    return text[:m.start(2)] + body + text[m.end(2):]


def host_verdict(r: Row) -> str:
    """What the tool's host accounting said about a row's speed run (or the load average
    around it, for rows swept before the sweep carried the accounting)."""
    if r.host_own_share is not None and r.host_foreign_cores is not None:
        word = "contended" if r.host_contended else "clean"
        return (f"{word}: own {r.host_own_share:.0%}, others "
                f"{r.host_foreign_cores:.2f} cores")
    if r.load_before is not None and r.load_after is not None:
        return f"no host accounting; load {r.load_before:.1f}→{r.load_after:.1f}"
    return "no host accounting"


def write_table(rows: Sequence[Row], path: Path = TABLE_FILE, *, host: str = "") -> None:
    document = {
        "about": "openssl-matrix release sweep (benchmarks/sweep.py); speed figures are "
                 "smoke checks (median of speed_samples, with each run's host accounting), "
                 "not measurements",
        "swept_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": host,
        "rows": [asdict(r) for r in sorted(rows, key=lambda r: (Version.parse(r.version).key,
                                                                  r.arch, r.asm))],
    }
    atomic_write(path, json.dumps(document, indent=1) + "\n")


def merge_rows(previous: Sequence[Row], new: Sequence[Row], *,
               keep_tried: bool = False) -> list[Row]:
    """The recorded table updated with ``new`` rows (one row per release × arch × asm).

    With ``keep_tried``, a new "not tried" row never replaces a built or failed one."""
    def cell(r: Row) -> tuple[str, str, str]:
        return r.version, r.arch, r.asm

    out = {cell(r): r for r in previous}
    for r in new:
        old = out.get(cell(r))
        if keep_tried and old is not None and old.status != "not tried":
            continue
        out[cell(r)] = r
    swept = {r.version for r in out.values() if r.arch != "any"}
    # a release the folder now has a tarball for loses its "no tarball" row
    return [r for r in out.values() if r.arch != "any" or r.version not in swept]


def tried_cells(rows: Iterable[Row], *, failed: bool = True) -> set[str]:
    """Variant ids of the cells a table already has an outcome for (built or, with
    ``failed``, fails)."""
    done = ("built", "fails") if failed else ("built",)
    return {r.variant for r in rows if r.status in done}


# --------------------------------------------------------------------------- listing


def sha256_status(version: str, sha256: str | None, pins: dict[str, str],
                  spec: Any = None) -> str:
    """Whether a version's tarball can be verified: the matrix's sha256 (the official one,
    confirmed by the release catalogue's sources, when ``spec`` says so), a pin, or none."""
    if sha256:
        official = getattr(spec, "official", None)
        if official is False:
            return "sha256 in the matrix (official: false: another tree's own bytes)"
        if official and getattr(spec, "sources", ()):
            projects = list(dict.fromkeys(s.split(":", 1)[0] for s in spec.sources))
            how = "single source" if spec.single_source else f"{len(projects)} sources"
            where = "catalogue" if spec.from_catalogue else "matrix, confirmed by the catalogue"
            return f"official sha256 ({where}; {how}: {', '.join(projects)})"
        return "sha256 in the matrix"
    if version in pins:
        return "sha256 pinned in the lock file"
    return f"no sha256: pin a tarball you trust with `{PIN_COMMAND.format(version=version)}`"


def describe_versions(variants: Sequence[Any], pins: dict[str, str],
                      table: dict[str, Any] | None = None) -> list[str]:
    """Per version of the listed variants: its checksum status and what the recorded
    sweep says about building each listed variant on this kind of machine (variants of
    a version with the same status share one line)."""
    data = read_table() if table is None else table
    by_version: dict[str, list[Any]] = {}
    for v in variants:
        by_version.setdefault(v.version.version, []).append(v)
    lines = []
    series = None
    ordered = sorted(by_version, key=lambda v: Version.parse(v).key)
    for version in ordered:
        vs = by_version[version]
        name = getattr(vs[0].version, "series_name", None)
        if name is not None and name != series:
            series = name
            n = sum(1 for v in ordered
                    if getattr(by_version[v][0].version, "series_name", None) == name)
            lines.append(f" series {name} ({n} release{'s' if n != 1 else ''})")
        declared = vs[0].version.sha256
        lines.append(f"  {version:<8} {sha256_status(version, declared, pins, vs[0].version)}")
        same: dict[str, list[str]] = {}
        for v in vs:
            status = build_status(version, v.arch, v.asm, data, declared_sha256=declared)
            extras = variant_extras(v)
            if extras and status.startswith(("built", "fails")):
                status += (f" (the sweep's plain {'asm' if v.asm else 'no-asm'} {v.arch} "
                           f"build; not with this variant's {', '.join(extras)})")
            same.setdefault(status, []).append(v.id)
        lines += [f"    {', '.join(ids)}: "
                  + (status.replace(f"{RESUME_HINT} it)", f"{RESUME_HINT} them)")
                     if len(ids) > 1 else status)
                  for status, ids in same.items()]
    return lines


def variant_extras(variant: Any) -> list[str]:
    """What a variant adds to the plain build the sweep makes: -march, on-request
    patches, engines, Configure options (compat patches the sweep applies too)."""
    extras = [f"-march={variant.march}"] if getattr(variant, "march", None) else []
    extras += [f"patch {p.name}" for p in getattr(variant, "patches", ())
               if getattr(p, "apply", "auto") != "auto"]
    extras += [f"engine {e}" for e in getattr(variant, "engines", ())]
    extras += list(getattr(variant, "configure", ()))
    return extras
