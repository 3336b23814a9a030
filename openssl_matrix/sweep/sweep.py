"""The release sweep: build every release found in a folder of tarballs, as the tool would,
and table what built, what failed and why, with a smoke-check speed figure.

``python3 benchmarks/sweep.py --tarballs DIR`` runs it (see that script); the table of
the last sweep on the project's kind of machine is kept in ``sweep-table.json`` beside
this module, and ``invoke matrix list`` reads it to say whether a release is known to
build here before anyone waits for a build.

A tarball whose version has an official checksum on record (``sources.KNOWN_SHA256``)
is used only when its bytes match it; any other is pinned in the sweep's own lock file
(``<results>/_sweep/sweep.lock``, never the project's) and its rows say it was not an
official tarball. The speed figure is ``openssl speed -elapsed -evp aes-128-cbc`` at
8192-byte blocks, ``SMOKE_RUNS`` (3) runs: a smoke check that the build works, not a
measurement. The row keeps every run's figure and their median; each run goes through
the bench's own wrapper, so the tool's host accounting brackets it (``hostacct``: the
speed process's own CPU share and the cores everything else kept busy, sampled inside
the container just before and after it), and the row carries the worst run's
accounting and whether that says the runs were clean.
"""

from __future__ import annotations

import fnmatch
import re
import statistics
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from openssl_matrix.core import log
from openssl_matrix.core.errors import ConfigError, ParseError
from openssl_matrix.core.files import read_bounded_text
from openssl_matrix.core.version import Version
from openssl_matrix.core.yamlload import YamlProblem, load_yaml
from openssl_matrix.engine.backend import DockerBackend, RunLimits
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import (
    KNOWN_SHA256,
    default_urls,
    pin_source,
    read_pins,
    sha256_file,
)
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure import hostacct
from openssl_matrix.measure.invocation import SPEED_WRAPPER, WRAPPER_NAME, split_times
from openssl_matrix.parse import parse_speed
from openssl_matrix.results.records import read_latest
from openssl_matrix.results.tree import ResultsTree
from openssl_matrix.sweep.table import ASMS, Row, host_verdict, secs

_TARBALL = re.compile(r"^openssl[-_](\d+\.\d+\.\d+[a-z]{0,2})(?:\.orig)?\.tar\.gz$")


# --------------------------------------------------------------------------- the sweep


def find_tarballs(folder: Path) -> dict[str, Path]:
    """version -> tarball, for ``openssl-<v>.tar.gz`` / ``openssl_<v>.orig.tar.gz``."""
    found: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        m = _TARBALL.match(path.name)
        if m and path.is_file():
            found.setdefault(m.group(1), path)
    return dict(sorted(found.items(), key=lambda kv: Version.parse(kv[0]).key))


def read_notes(folder: Path) -> dict[str, str]:
    """Optional ``notes.yaml`` in the tarball folder: version -> where the tree came from."""
    path = folder / "notes.yaml"
    if not path.is_file():
        return {}
    try:
        data = load_yaml(read_bounded_text(path, "yaml")) or {}
    except (OSError, UnicodeDecodeError, YamlProblem) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"{path}: {why}", hint="notes.yaml maps a version to where its "
                          "tree came from (a small YAML mapping); fix it or remove it") from None
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


@dataclass
class Plan:
    """What the sweep will build: its generated matrix, and the cells it will not try."""

    matrix_path: Path
    variants: list[str]
    skipped: list[Row]
    sources: dict[str, str]


def plan_sweep(folder: Path, workdir: Path, *, arches: Iterable[str] = ("x86_64",),
               asms: Iterable[str] = ASMS, only: Iterable[str] = (),
               cache_dir: Path | None = None, declared: Iterable[str] = (),
               third_party: bool = False) -> Plan:
    """Write the sweep's matrix (and lock file) for the tarballs in ``folder``.

    ``declared`` versions (a matrix's) without a tarball in the folder get one "not
    tried" row each, so the table names every release the matrix offers. A tarball whose
    bytes differ from its version's official one is left out unless ``third_party``
    (then it is pinned in the sweep's own lock, and its rows say so)."""
    arches, asms, only = list(arches), list(asms), list(only)
    workdir.mkdir(parents=True, exist_ok=True)
    matrix_path = workdir / "sweep.yaml"
    lock = matrix_path.with_suffix(".lock")
    notes = read_notes(folder)
    versions: dict[str, dict[str, Any]] = {}
    skipped: list[Row] = []
    sources: dict[str, str] = {}
    pins = read_pins(lock)
    for version, tarball in find_tarballs(folder).items():
        if only and not any(fnmatch.fnmatchcase(version, p) for p in only):
            continue
        digest = sha256_file(tarball)
        official = KNOWN_SHA256.get(version)
        note = notes.get(version, "")
        if official is not None and official != digest and not third_party:
            skipped += [Row(version, a, s, "not tried", reason=(
                f"{tarball.name} is not the official tarball (sha256 {digest[:12]}…, "
                f"official {official[:12]}…); --third-party builds it"),
                source=note or "unknown")
                for a in arches for s in asms]
            continue
        if official is not None and official == digest:
            versions[version] = {"sha256": official}
            sources[version] = "official tarball (sha256 checked)" + \
                (f"; {note}" if note else "")
        else:
            if pins.get(version) != digest:
                pin_source(version, tarball, lock, cache_dir=cache_dir, force=True)
            # its own bytes, pinned: never mistaken for the release's official tarball
            versions[version] = {"official": False}
            differs = " (not the official tarball's bytes)" if official else ""
            sources[version] = f"third-party tree{differs}, pinned locally" + \
                (f": {note}" if note else "")
    present = set(find_tarballs(folder))
    for version in sorted(set(declared) - present, key=lambda v: Version.parse(v).key):
        if not only or any(fnmatch.fnmatchcase(version, p) for p in only):
            why = notes.get(version)
            skipped.append(Row(version, "any", "any", "not tried",
                               reason=f"no openssl-{version}.tar.gz in the tarball folder"
                               + (f" ({why})" if why else "")))
    data = {
        "defaults": {"base_image": "debian:bookworm"},
        "versions": versions,
        "axes": {"asm": asms, "arch": arches},
        "sources_dirs": [str(folder.resolve())],
        "suites": {"smoke": {"algorithms": ["aes-128-cbc"]}},
    }
    matrix_path.write_text(
        "# generated by openssl_matrix.sweep for the tarballs in "
        f"{folder.resolve()}\n" + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    ids = [f"{v}-{s}-{a}" for v in versions for a in arches for s in asms]
    return Plan(matrix_path=matrix_path, variants=ids, skipped=skipped, sources=sources)


def not_tried(plan: Plan, reason: str) -> list[Row]:
    """The planned cells as "not tried" rows (a sweep cut short says what it left)."""
    rows = []
    for variant in plan.variants:
        version, rest = variant.split("-", 1)
        asm = "no-asm" if rest.startswith("no-asm-") else "asm"
        arch = rest.removeprefix("no-asm-").removeprefix("asm-")
        rows.append(Row(version, arch, asm, "not tried", reason=reason,
                        source=plan.sources.get(version, "")))
    return rows


def failure_reason(log_text: str, error: str | None) -> str:
    """One line saying why a build failed, from its log (the first telling line, the
    most specific kind first)."""
    patterns = (
        r".*: Permission denied",  # a tree that lost its executable bits (util/domd)
        r".*: not found",
        r"openssl-matrix: .*",
        r".*Unsupported options: .*",
        r".* is not exported by .*",
        r"Can't locate .* in @INC.*",
        r"Can't use 'defined\(@array\)'.*",
        r".*multiple definition of .*",
        r".*: Error: .*",
        r".*error: .*",
        r"make(\[\d+\])?: \*\*\* .*",
    )
    plain = re.sub(r"\x1b\[[0-9;]*m", "", log_text)  # the engine's colours around stderr
    lines = [re.sub(r"^#\d+ (?:[\d.]+ )?", "", line).strip() for line in plain.splitlines()]
    for pattern in patterns:
        for line in lines:
            if re.fullmatch(pattern, line):
                return line[:240]
    return (error or "build failed").splitlines()[0][:240]


def loadavg() -> float | None:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


#: Smoke runs per built cell: a figure carries its spread, never one bare run.
SMOKE_RUNS = 3


@dataclass
class Smoke:
    """The smoke check's speed runs: their figures (or why none) and the host around them."""

    bytes_per_s: float | None
    note: str = ""
    acct: Any = None  # hostacct.HostAccounting | None: the worst run's
    contended: list[str] = field(default_factory=list)
    samples: list[float] = field(default_factory=list)
    """Every run's bytes/s; ``bytes_per_s`` is their median."""


def smoke_speed(backend: Any, tag: str, version: str, *, runs: int = SMOKE_RUNS) -> Smoke:
    """``openssl speed -elapsed -evp aes-128-cbc`` ``runs`` times: the median bytes/s at
    8192-byte blocks and every run's figure. Each run goes through the bench's own
    wrapper, so the tool's host accounting brackets it; the smoke is contended if any run
    was (the worst run's accounting is kept), and the first failing run ends it."""
    figures: list[float] = []
    worst: Smoke | None = None
    for _ in range(max(1, runs)):
        one = smoke_once(backend, tag, version)
        if worst is None or _worse(one, worst):
            worst = one
        if one.bytes_per_s is None:
            return Smoke(None, note=one.note, acct=worst.acct, contended=worst.contended,
                         samples=figures)
        figures.append(one.bytes_per_s)
    assert worst is not None
    return Smoke(statistics.median(figures), acct=worst.acct, contended=worst.contended,
                 samples=figures)


def _worse(a: Smoke, b: Smoke) -> bool:
    """Whether run ``a``'s host accounting is worse than ``b``'s (contended, then the
    lower own share)."""
    if bool(a.contended) != bool(b.contended):
        return bool(a.contended)
    own_a = getattr(a.acct, "own_share", None)
    own_b = getattr(b.acct, "own_share", None)
    if own_a is None or own_b is None:
        return own_b is not None and own_a is None
    return bool(own_a < own_b)


def smoke_once(backend: Any, tag: str, version: str) -> Smoke:
    """One smoke speed run: bytes/s at 8192-byte blocks, with its host accounting."""
    args = ["speed", "-elapsed", "-evp", "aes-128-cbc"]
    if Version.parse(version) >= Version.parse("1.1.1"):
        args += ["-seconds", "1", "-bytes", "8192"]
    res = backend.run(tag, ["/bin/sh", "-c", SPEED_WRAPPER, WRAPPER_NAME, *args],
                      limits=RunLimits(timeout=300))
    with_samples, times = split_times(res.stderr or "")
    stderr, acct = hostacct.from_stderr(
        with_samples, cpu_seconds=None if times is None else times.user + times.system)
    smoke = Smoke(None, acct=acct, contended=hostacct.contention_reasons(acct))
    if res.exit_code != 0:
        said = " ".join((stderr or res.stdout).split())  # one line: it goes into a table
        smoke.note = f"speed exit {res.exit_code}: {said[:240]}"
        return smoke
    try:
        run = parse_speed(res.stdout, stderr, version=version, evp=True)
    except ParseError as exc:
        smoke.note = f"unparsed: {exc}"
        return smoke
    fig = run.figure("aes-128-cbc", 8192)
    if fig is None or fig.bytes_per_s is None:
        smoke.note = "no 8192-byte figure in the output"
        return smoke
    smoke.bytes_per_s = fig.bytes_per_s
    return smoke


def run_sweep(plan: Plan, results: Path, *, jobs: int = 1, speed: bool = True,
              runs: int = SMOKE_RUNS, backend: Any = None, skip: Collection[str] = (),
              on_row: Callable[[Row], None] | None = None) -> list[Row]:
    """Build every planned variant with the tool's own builder; one row per cell.

    Variants named in ``skip`` (a resumed sweep's cells already tried) are left out;
    ``on_row`` sees each row as soon as its cell is done (the script records it then, so
    a sweep cut short keeps what it did)."""
    if backend is None:
        backend = DockerBackend()
    rows = list(plan.skipped)
    if not plan.variants:
        return rows
    m = load_matrix(plan.matrix_path, default_urls=default_urls)
    tree = ResultsTree(results)
    wanted = set(plan.variants)
    variants = [v for v in m.all_variants if v.id in wanted and v.id not in skip]
    builder = Builder(m, backend, tree, workdir=plan.matrix_path.parent / "work")
    for variant in variants:  # one at a time: a row's seconds are that build's alone
        (outcome,) = builder.build([variant], jobs=jobs)
        version = variant.version.version
        row = Row(version, variant.arch, "asm" if variant.asm else "no-asm", "fails",
                  source=plan.sources.get(version, ""))
        if outcome.status in ("built", "up-to-date"):
            record = outcome.record
            row.status = "built"
            row.seconds = record.get("seconds") or outcome.seconds or None
            row.openssl_version = str(record.get("openssl_version", ""))
            row.compat = compat_applied(record)
            endbr32 = record.get("endbr32")
            row.endbr32 = endbr32 if isinstance(endbr32, int) else None
            if speed and outcome.tag:
                smoke_row(row, backend, outcome.tag, runs)
        else:
            text = ""
            if outcome.log_path and Path(outcome.log_path).is_file():
                text = Path(outcome.log_path).read_text(encoding="utf-8", errors="replace")
            row.reason = failure_reason(text, outcome.error)
            row.seconds = outcome.seconds or None
        log.info(f"sweep: {row.variant}: {row.status} "
                 f"{row.reason or secs(row.seconds)}")
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows


def compat_applied(record: dict[str, Any]) -> list[str]:
    """What a build record says the compat fixes did: each rewrite script's changes (its
    ``compat_changes`` lines), then each ``auto`` diff applied (``NAME: diff applied``),
    from the patches the record's variant lists."""
    out = [str(c) for c in record.get("compat_changes", [])]
    variant = record.get("variant")
    patches = variant.get("patches", []) if isinstance(variant, dict) else []
    for p in patches:
        if isinstance(p, dict) and p.get("apply") == "auto" and \
                str(p.get("file", "")).endswith(".patch"):
            out.append(f"{p.get('name')}: diff applied")
    return out


def smoke_row(row: Row, backend: Any, tag: str, runs: int) -> None:
    """Run a built row's smoke check on ``tag`` and fill its speed columns, with the
    load average just before and after."""
    row.load_before = loadavg()
    smoke = smoke_speed(backend, tag, row.version, runs=runs)
    row.load_after = loadavg()
    fill_smoke(row, smoke)


def fill_smoke(row: Row, smoke: Smoke) -> None:
    """A row's speed columns from one smoke run (figure, note, host accounting)."""
    row.speed_bytes_per_s, row.speed_note = smoke.bytes_per_s, smoke.note
    row.speed_samples = [round(v, 1) for v in smoke.samples]
    if smoke.acct is not None:
        row.host_own_share = (None if smoke.acct.own_share is None
                              else round(smoke.acct.own_share, 3))
        row.host_foreign_cores = round(smoke.acct.foreign_cores, 3)
        row.host_contended = smoke.contended


def needs_resmoke(row: Row, runs: int = SMOKE_RUNS) -> bool:
    """Whether a built row's smoke figure falls short: no host accounting, contended, or
    fewer runs than ``runs``."""
    if row.status != "built":
        return False
    done = len(row.speed_samples) or (1 if row.speed_bytes_per_s else 0)
    return row.host_own_share is None or bool(row.host_contended) or done < runs


def resmoke(rows: Sequence[Row], results: Path, *, backend: Any = None, runs: int = SMOKE_RUNS,
            on_row: Callable[[Row], None] | None = None) -> list[Row]:
    """The smoke check again, ``runs`` runs with host accounting, for built rows whose
    figure falls short (``needs_resmoke``: swept before the sweep carried accounting or
    repeated runs, or contended), on the image their newest build record names under
    ``results``; builds nothing. A row whose image is gone is left as it is; a row whose
    new figure is contended again keeps it (the table says so)."""
    if backend is None:
        backend = DockerBackend()
    todo = [row for row in rows if needs_resmoke(row, runs)]
    done = []
    for i, row in enumerate(todo, 1):
        latest = read_latest(results, row.variant)
        if latest is None or backend.image_id(latest.tag) is None:
            log.info(f"sweep: [{i}/{len(todo)}] {row.variant}: no image of its build under "
                     f"{results}; left as it is")
            continue
        smoke_row(row, backend, latest.tag, runs)
        log.info(f"sweep: [{i}/{len(todo)}] {row.variant}: smoke run again "
                 f"({host_verdict(row)})")
        done.append(row)
        if on_row is not None:
            on_row(row)
    return done
