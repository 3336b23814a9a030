#!/usr/bin/env python3
"""openssl-matrix performance benchmark: is the tool fast, and are its figures faithful?

Run from anywhere (it uses the checkout it lives in, not an installed copy)::

    python benchmarks/run.py            # everything (about 25 minutes on a quiet 2-core host,
                                        # plus one-time builds of the 20-variant matrix)
    python benchmarks/run.py --quick    # about a minute with 1.1.1w's images present

It drives the real tool (its Python API and ``invoke matrix ...`` command lines exactly
as a user types them) against the real Docker engine and real OpenSSL builds, and
prints one table:

1. fidelity      the figure the tool records vs ``openssl speed`` run directly on the
                 host with the very same binary (copied out of the variant image),
                 alternated A/B, medians;
2. no-op rebuild ``invoke matrix build`` on an already built matrix of >= 20 variants;
3. cold build    the tool's build of one variant vs a plain ``docker build`` of an
                 equivalent hand-written Dockerfile, and what the shared stages save;
4. overhead      bench time per cell beyond what ``openssl speed`` itself takes;
5. repeatability coefficient of variation over 5 repetitions at 8192 bytes;
6. time to the seed blog's method table with the ``blog-fast`` suite;
7. disturb       the same cells quiet and under busy sibling containers, busy host
                 processes, a second bench and a build: flagged, or within 5 % of the
                 quiet median (benchmarks/disturb.py; also runs on its own);
8. mainjob       the README's ``invoke matrix bench --cpu=auto`` as typed, timed;
9. lab           an extra Docker engine on this host standing in for a lab machine:
                 shipping the 1.1.1w asm image to it (bytes, seconds, MB/s) against
                 building the same image there (a cold build), and auto's choice; and
                 when ``--cpu=a,b`` is available, the wall time of two engines benched at
                 once against the same work one after another.

Every sample, the load average and the machine description go to a JSON file beside
the printed table (``--json``). See docs/performance.md for a run of it and how to
read it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import platform
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from openssl_matrix.core.errors import FatalError
from openssl_matrix.engine.backend import DockerBackend, RunLimits, RunResult
from openssl_matrix.engine.hostlock import engine_key
from openssl_matrix.images.build import Builder
from openssl_matrix.images.render import render, tarball_name, toolchain_dockerfile
from openssl_matrix.images.render import toolchain_tag as render_toolchain_tag
from openssl_matrix.images.sources import default_urls, fetch_source_info
from openssl_matrix.matrix.load import load_matrix, matrix_from_document
from openssl_matrix.matrix.model import Mask, Matrix, Suite, Variant
from openssl_matrix.measure.session import Bencher
from openssl_matrix.measure.speedcmd import speed_invocations, unwrap_speed
from openssl_matrix.results import records
from openssl_matrix.results.export import records as export_records
from openssl_matrix.results.records import build_dir, read_latest
from openssl_matrix.results.tree import ResultsTree

#: The checkout: its matrix.yaml, tasks.py and docs (the package is imported as installed).
ROOT = Path(__file__).resolve().parent.parent

BLOCK = 8192
QUIET_BUSY = 0.10
"""Other processes may use at most this share of all cores for the machine to be quiet."""

SECTIONS = ("fidelity", "noop", "cold", "overhead", "repeat", "disturb", "mainjob", "lab")

# -march values for the no-op matrix: each must compile with Debian bookworm's gcc 12 and
# run on the benchmark host (the build runs `openssl version` in the image). These are
# all older than the AMD EPYC (Zen 4) this was written on; `check_marches` drops the
# ones whose instruction sets the host lacks.
NOOP_MARCHES = ("x86-64-v2", "x86-64-v3", "x86-64-v4", "haswell", "skylake", "znver1",
                "znver2", "znver3")
MARCH_NEEDS: dict[str, tuple[str, ...]] = {
    "x86-64-v2": ("sse4_2", "popcnt", "ssse3"),
    "x86-64-v3": ("avx2", "bmi2", "fma", "movbe"),
    "x86-64-v4": ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"),
    "haswell": ("avx2", "bmi2", "fma", "movbe"),
    "skylake": ("avx2", "adx", "rdseed", "clflushopt", "xsavec"),
    "znver1": ("avx2", "adx", "sha_ni", "sse4a", "clzero"),
    "znver2": ("avx2", "adx", "sha_ni", "clwb", "clzero"),
    "znver3": ("avx2", "sha_ni", "vaes", "vpclmulqdq", "clzero"),
}

# The seed blog's method table (VIA Luke / Ryzen post): its six algorithms and, on
# this host, its methods as (row label, variant asm?, mask name in the blog-fast suite).
BLOG_ALGORITHMS = ("aes-256-cbc", "idea-cbc", "md5", "sha1", "sha256", "sha512")
BLOG_METHODS = (("no-asm", False, "native", None),
                ("asm", True, "no-aesni-sha", None),
                ("AES-NI & SHA Ext.", True, "native", None),
                ("Kernel (afalg)", True, "native", "afalg"))


# ----------------------------------------------------------------------------------
# pure helpers (tested in tests/test_benchmarks.py)


def median(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("median of no values")
    return float(statistics.median(values))


def cv_percent(values: Sequence[float]) -> float:
    """Coefficient of variation in percent (sample standard deviation / mean)."""
    if len(values) < 2:
        raise ValueError("a coefficient of variation needs at least two values")
    mean = statistics.fmean(values)
    if mean == 0:
        raise ValueError("a coefficient of variation of values whose mean is 0")
    return 100.0 * statistics.stdev(values) / mean


def cpu_times(proc_stat: str) -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs from the text of /proc/stat."""
    for line in proc_stat.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            values = [int(x) for x in parts[1:]]
            # user nice system idle iowait irq softirq steal [guest guest_nice]
            idle = values[3] + (values[4] if len(values) > 4 else 0)
            total = sum(values[:8])
            return total - idle, total
    raise ValueError("no aggregate 'cpu' line in /proc/stat text")


def busy_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """Share (0..1) of all cores that was busy between two /proc/stat readings."""
    busy = after[0] - before[0]
    total = after[1] - before[1]
    return busy / total if total > 0 else 0.0


def host_figure(stdout: str, algorithm: str, block: int = BLOCK) -> float:
    """Bytes per second of ``algorithm`` at ``block`` bytes from ``openssl speed -mr`` stdout.

    Deliberately independent of the tool's parser (openssl_matrix.parse): the
    fidelity comparison must not trust the code it checks. Reads the ``+H`` line for
    the block sizes and the ``+F`` line whose name is ``algorithm``.
    """
    sizes: list[int] | None = None
    for line in stdout.splitlines():
        if line.startswith("+H:"):
            sizes = [int(x) for x in line[3:].split(":") if x.strip()]
        elif line.startswith("+F:") and sizes is not None:
            fields = line.split(":")
            # 3.x prints EVP cipher names in upper case (+F:25:AES-128-CBC:...)
            if len(fields) >= 3 + len(sizes) and fields[2].lower() == algorithm.lower():
                return float(fields[3 + sizes.index(block)])
    raise ValueError(f"no +F line for {algorithm} at {block} bytes in the output")


def noop_matrix_doc(versions: Mapping[str, str], marches: Sequence[str],
                    march_version: str) -> dict[str, Any]:
    """A matrix: every version asm/no-asm at the default -march, plus ``march_version``
    asm/no-asm at each of ``marches``. The default cells are the default matrix's
    variants (same ids, same Dockerfiles, so the same images)."""
    doc: dict[str, Any] = {
        "schema": 1, "defaults": {"base_image": "debian:bookworm"},
        "versions": {version: {"sha256": sha} for version, sha in versions.items()},
        "axes": {"asm": ["asm", "no-asm"], "arch": ["x86_64"], "march": ["default"]},
    }
    if marches:
        doc["include"] = [{"version": march_version, "asm": asm, "march": march}
                          for march in marches for asm in ("asm", "no-asm")]
    doc["suites"] = {"quick": {"algorithms": ["aes-128-cbc"], "seconds": 1, "bytes": BLOCK}}
    return doc


def noop_matrix_yaml(versions: Mapping[str, str], marches: Sequence[str],
                     march_version: str) -> str:
    """:func:`noop_matrix_doc` as a matrix file (the CLI under measurement reads one)."""
    return ("# generated by benchmarks/run.py for the no-op rebuild measurement\n"
            + yaml.safe_dump(noop_matrix_doc(versions, marches, march_version),
                             sort_keys=False))


def cold_matrix_doc(version: str, sha256: str, nonce: str) -> dict[str, Any]:
    """A matrix with one extra variant of ``version`` that no cache has seen: its
    Configure line carries ``-frandom-seed=<nonce>`` (a gcc option that changes nothing
    in the generated code but the seed of names gcc invents), so its build stage is
    cold while the toolchain and unpacked-source layers are shared as for any new
    variant."""
    return {"schema": 1, "versions": {version: {"sha256": sha256}},
            "axes": {"asm": ["asm"]},
            "include": [{"version": version, "asm": "asm",
                         "configure": [f"-frandom-seed={nonce}"]}],
            "suites": {"quick": {"algorithms": ["aes-128-cbc"]}}}


def cold_matrix_yaml(version: str, sha256: str, nonce: str) -> str:
    """:func:`cold_matrix_doc` as a matrix file (the CLI under measurement reads one)."""
    return yaml.safe_dump(cold_matrix_doc(version, sha256, nonce), sort_keys=False)


def plain_dockerfile(toolchain: str, tarball: str, configure: Sequence[str],
                     make_jobs: int, install: Sequence[str]) -> str:
    """The Dockerfile a person would write by hand for the same build: one stage, the
    same toolchain image and the same unpack step (so the same layers are cached as for
    the tool's build), then Configure, make and install."""
    return "\n".join([
        f"FROM {toolchain}",
        f"COPY {tarball} /src/{tarball}",
        "RUN mkdir -p /src/tree \\",
        f" && tar -xzf /src/{tarball} -C /src/tree --strip-components=1 \\",
        f" && rm /src/{tarball}",
        "WORKDIR /src/tree",
        f"RUN {json.dumps(list(configure))}",
        f"RUN make -j{make_jobs}",
        f"RUN {json.dumps(list(install))}",
        "",
    ])


@dataclass(frozen=True)
class LogStep:
    number: int
    total: int
    instruction: str
    cached: bool


_STEP = re.compile(r"^Step (\d+)/(\d+) : (.*)$")


def build_log_steps(text: str) -> list[LogStep]:
    """The steps of a classic ``docker build`` log and whether each came from the cache."""
    steps: list[LogStep] = []
    current: tuple[int, int, str] | None = None
    cached = False

    def close() -> None:
        if current is not None:
            steps.append(LogStep(current[0], current[1], current[2], cached))

    for line in text.splitlines():
        m = _STEP.match(line.strip())
        if m:
            close()
            current = (int(m.group(1)), int(m.group(2)), m.group(3))
            cached = False
        elif current is not None and line.strip() == "---> Using cache":
            cached = True
    close()
    return steps


def stage_steps(steps: Sequence[LogStep], stage: str) -> list[LogStep]:
    """The steps of the build stage named ``stage`` (``FROM ... AS <stage>``), without
    its FROM line (a FROM never reports the cache)."""
    out: list[LogStep] = []
    inside = False
    for s in steps:
        if s.instruction.upper().startswith("FROM "):
            inside = s.instruction.split()[-1] == stage and " AS " in s.instruction.upper()
            continue
        if inside:
            out.append(s)
    return out


def is_mark(line: str) -> bool:
    """A build log line that starts a step or says the build is over."""
    text = line.strip()
    return bool(_STEP.match(text)) or text.startswith("Successfully tagged")


def step_durations(marks: Sequence[tuple[float, str]], end: float) -> list[dict[str, Any]]:
    """Seconds per build step from timestamped log lines ('Step n/N : ...', and any
    other mark such as the start of the command or 'Successfully tagged'): each lasts
    until the next one; the last one until ``end``."""
    out: list[dict[str, Any]] = []
    for i, (t, line) in enumerate(marks):
        nxt = marks[i + 1][0] if i + 1 < len(marks) else end
        m = _STEP.match(line.strip())
        out.append({"step": int(m.group(1)) if m else None,
                    "instruction": (m.group(3) if m else line)[:120],
                    "seconds": round(nxt - t, 3)})
    return out


STEP_GROUPS = (("before the build", "(command started)"), ("after the build",
                "Successfully tagged"), ("buildinfo", "buildinfo"), ("Configure", "Configure"),
               ("make", "make -j"), ("make install_sw", "install_sw"), ("labels", "LABEL "))
"""(group, text in the step) in matching order: the buildinfo step also names Configure."""


def group_steps(durations: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Step durations summed into the groups of STEP_GROUPS (first match wins), the rest
    under 'other steps'."""
    out: dict[str, float] = {}
    for d in durations:
        name = next((g for g, needle in STEP_GROUPS if needle in str(d["instruction"])),
                    "other steps")
        out[name] = out.get(name, 0.0) + float(d["seconds"])
    return out


def shared_stage_savings(variants: Sequence[Variant], toolchain_s: float,
                         source_s: Mapping[str, float]) -> dict[str, float]:
    """Seconds the shared toolchain and unpacked-source layers save over building them
    once per variant: (variants per base image - 1) toolchain builds and (variants per
    version - 1) unpack steps."""
    per_base: dict[str, int] = {}
    per_version: dict[str, int] = {}
    for v in variants:
        per_base[v.base_image] = per_base.get(v.base_image, 0) + 1
        per_version[v.version.version] = per_version.get(v.version.version, 0) + 1
    toolchain = sum(n - 1 for n in per_base.values()) * toolchain_s
    source = sum((n - 1) * source_s.get(ver, 0.0) for ver, n in per_version.items())
    return {"toolchain_s": toolchain, "source_s": source, "total_s": toolchain + source}


Cell = dict[str, list[Any]]
"""One cell of the method table: its samples (bytes/s) and the statuses they carried."""


def method_table(rows: Iterable[Mapping[str, Any]], version: str,
                 ) -> dict[str, dict[str, Cell]]:
    """The seed blog's method table for one version: method -> algorithm -> cell, from
    exported figure records of the blog-fast suite at 8192 bytes. A figure the tool
    flagged (engine not engaged, mask without effect ...) is kept with its status."""
    table: dict[str, dict[str, Cell]] = {label: {} for label, *_ in BLOG_METHODS}
    for r in rows:
        if r.get("version") != version or r.get("block_size") != BLOCK:
            continue
        if not isinstance(r.get("bytes_per_s"), (int, float)):
            continue
        asm = not str(r.get("variant", "")).startswith(f"{version}-no-asm")
        for label, want_asm, mask, engine in BLOG_METHODS:
            if asm == want_asm and r.get("mask") == mask and r.get("engine") == engine:
                cell = table[label].setdefault(str(r["algorithm"]),
                                               {"values": [], "statuses": []})
                cell["values"].append(float(r["bytes_per_s"]))
                if r.get("status") not in cell["statuses"]:
                    cell["statuses"].append(r.get("status"))
    return table


def table_cvs(table: Mapping[str, Mapping[str, Cell]]) -> list[float]:
    """The coefficient of variation of every cell with at least two samples."""
    return [cv_percent(c["values"]) for algs in table.values() for c in algs.values()
            if len(c["values"]) >= 2]


def overhead_split(total_s: float, fixed_s: float, container_s: Sequence[float],
                   speed_s: Sequence[float]) -> dict[str, float]:
    """Per-cell overhead of a bench call of ``len(speed_s)`` cells.

    ``total_s``: wall time of the whole call; ``fixed_s``: its per-call and per-variant
    containers (CPU description, ``openssl version -a``); ``container_s``: wall time of
    each cell's container as the backend saw it; ``speed_s``: how long the same
    ``openssl speed`` command takes run directly on the host.
    """
    n = len(speed_s)
    if n == 0 or len(container_s) != n:
        raise ValueError("one container time and one host time per cell are needed")
    per_cell = (total_s - fixed_s - sum(speed_s)) / n
    container = (sum(container_s) - sum(speed_s)) / n
    return {"per_cell_s": per_cell, "container_s": container,
            "parse_write_s": per_cell - container, "fixed_s": fixed_s}


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths,
                                                                  strict=False)) + " |"

    out = [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in rows]
    return "\n".join(out)


def mbps(value: float) -> str:
    return f"{value / 1e6:,.1f} MB/s"


# ----------------------------------------------------------------------------------
# the machine


@dataclass
class Load:
    """How busy the machine was when a section started (and ended)."""

    loadavg: tuple[float, float, float]
    others_busy: float
    """Share of all cores busy during a 2-s sample while this benchmark was idle."""

    @property
    def quiet(self) -> bool:
        return self.others_busy <= QUIET_BUSY

    def text(self) -> str:
        la = " ".join(f"{x:.2f}" for x in self.loadavg)
        note = "" if self.quiet else " NOT QUIET"
        return f"load {la}, others {100 * self.others_busy:.0f}% CPU{note}"


def sample_load(seconds: float = 2.0) -> Load:
    stat = Path("/proc/stat")
    before = cpu_times(stat.read_text())
    time.sleep(seconds)
    after = cpu_times(stat.read_text())
    return Load(os.getloadavg(), busy_share(before, after))


def machine_description(engine: Mapping[str, Any]) -> dict[str, Any]:
    cpu_model, flags, mhz = "unknown", "", ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and cpu_model == "unknown":
            cpu_model = value.strip()
        elif key == "flags" and not flags:
            flags = value.strip()
        elif key == "cpu MHz" and not mhz:
            mhz = value.strip()
    mem = ""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"

    def read(path: str) -> str:
        try:
            return Path(path).read_text().strip()
        except OSError:
            return "unreadable"

    interesting = ("aes", "pclmulqdq", "sha_ni", "avx2", "avx512f", "vaes")
    return {
        "cpu_model": cpu_model,
        "cpu_mhz": mhz,
        "logical_cpus": os.cpu_count(),
        "memory": mem,
        "cpu_flags_of_interest": [f for f in interesting if f in flags.split()],
        "kernel": platform.release(),
        "python": platform.python_version(),
        "governor": read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "boost": read("/sys/devices/system/cpu/cpufreq/boost"),
        "docker_server": engine.get("server_version"),
        "docker_storage": engine.get("storage_driver"),
        "virtualised": "hypervisor" in flags.split(),
    }


# ----------------------------------------------------------------------------------
# the real tool, with a stopwatch


class TimedBackend(DockerBackend):
    """The real Docker backend, counting builds and timing every container run."""

    def __init__(self) -> None:
        super().__init__()
        self.builds: list[str] = []
        self.run_log: list[tuple[tuple[str, ...], float]] = []

    def build(self, context: Path, tag: str, **kwargs: Any) -> str:
        self.builds.append(tag)
        return super().build(context, tag, **kwargs)

    def run(self, image: str, command: Sequence[str], *, env: Mapping[str, str] | None = None,
            limits: RunLimits | None = None) -> RunResult:
        t0 = time.monotonic()
        try:
            return super().run(image, command, env=env, limits=limits)
        finally:
            self.run_log.append((tuple(command), time.monotonic() - t0))

    def reset(self) -> None:
        self.builds.clear()
        self.run_log.clear()


Completed = subprocess.CompletedProcess[str]


class StepTail:
    """Timestamps the ``Step n/N`` lines of build logs appearing under a folder (the
    tool writes its log while it builds), in a thread."""

    def __init__(self, folder: Path, pattern: str) -> None:
        self.folder, self.pattern = folder, pattern
        self.marks: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> StepTail:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        fh = None
        buf = ""
        while not self._stop.is_set() or fh is not None:
            if fh is None:
                found = sorted(self.folder.glob(self.pattern))
                if found:
                    fh = found[0].open(encoding="utf-8", errors="replace")
                elif self._stop.is_set():
                    return
                else:
                    time.sleep(0.05)
                    continue
            chunk = fh.read()
            if chunk:
                now = time.monotonic()
                buf += chunk
                *lines, buf = buf.split("\n")
                self.marks += [(now, ln.strip()) for ln in lines if is_mark(ln)]
            elif self._stop.is_set():
                fh.close()
                return
            else:
                time.sleep(0.05)


def timed_build(args: Sequence[str], timeout: float = 3600) -> tuple[float, str,
                                                                    list[tuple[float, str]]]:
    """Run a ``docker build`` command line: (seconds, output, timestamped Step lines)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, cwd=ROOT)
    marks: list[tuple[float, str]] = []
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if is_mark(line):
            marks.append((time.monotonic(), line.strip()))
    code = proc.wait(timeout=timeout)
    secs = time.monotonic() - t0
    if code != 0:
        raise BenchmarkError(f"`{' '.join(args)}` exited {code}:\n{''.join(lines)[-2000:]}")
    return secs, "".join(lines), marks


def run_cmd(args: Sequence[str], *, env: Mapping[str, str] | None = None,
            timeout: float = 3600, check: bool = True) -> tuple[float, Completed]:
    t0 = time.monotonic()
    out = subprocess.run(list(args), capture_output=True, text=True, env=dict(env or os.environ),
                         timeout=timeout, cwd=ROOT)
    secs = time.monotonic() - t0
    if check and out.returncode != 0:
        raise BenchmarkError(f"`{' '.join(args)}` exited {out.returncode}:\n"
                             f"{(out.stderr or out.stdout)[-2000:]}")
    return secs, out


def invoke(*args: str, check: bool = True) -> tuple[float, Completed]:
    """``invoke matrix ARGS`` exactly as a user types it (the installed package)."""
    return run_cmd([sys.executable, "-m", "invoke", "matrix", *args], check=check)


class BenchmarkError(Exception):
    pass


# ----------------------------------------------------------------------------------
# the benchmark


@dataclass
class Row:
    number: str
    measure: str
    result: str
    goal: str
    verdict: str
    conditions: str


@dataclass
class Context:
    args: argparse.Namespace
    out: Path
    backend: TimedBackend
    matrix: Matrix
    rows: list[Row] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    images_made: list[str] = field(default_factory=list)
    nonce: str = field(default_factory=lambda: secrets.token_hex(4))

    @property
    def quick(self) -> bool:
        return bool(self.args.quick)

    def say(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def tree(self, name: str) -> ResultsTree:
        return ResultsTree(self.out / name)

    def ensure_built(self, tree: ResultsTree, variants: list[Variant], *,
                     matrix: Matrix | None = None) -> list[Any]:
        """Build what is missing (a one-time cost, reported) and record every variant."""
        builder = Builder(matrix or self.matrix, self.backend, tree,
                          workdir=self.out / "work")
        outcomes = builder.build(variants, jobs=1)
        failed = [o for o in outcomes if o.status == "failed"]
        if failed:
            raise BenchmarkError("could not build " + ", ".join(o.variant for o in failed)
                                 + ": " + str(failed[0].error))
        return outcomes


def variant(m: Matrix, vid: str) -> Variant:
    for v in m.variants:
        if v.id == vid:
            return v
    raise BenchmarkError(f"{m.path} has no variant {vid}")


def one_suite(name: str, algorithms: Sequence[str], masks: Sequence[Mask] = (),
              seconds: int = 1) -> Suite:
    return Suite(name=name, description=f"benchmarks/run.py: {name}",
                 algorithms=tuple(algorithms), evp=True, seconds=seconds, bytes=BLOCK,
                 masks=tuple(masks) or (Mask("native", None),))


@contextlib.contextmanager
def extracted(tag: str, into: Path) -> Iterator[Path]:
    """Copy /opt/openssl out of a variant image onto the host (docker create + cp)."""
    _, created = run_cmd(["docker", "create", tag, "true"])
    cid = created.stdout.strip()
    try:
        run_cmd(["docker", "cp", f"{cid}:/opt/openssl", str(into)])
    finally:
        run_cmd(["docker", "rm", "-f", cid], check=False)
    yield into


def host_env(prefix: Path, extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSSL")}
    env.update({
        "LD_LIBRARY_PATH": f"{prefix}/lib:{prefix}/lib64",
        "OPENSSL_MODULES": f"{prefix}/lib/ossl-modules",
        "OPENSSL_ENGINES": str(next(iter(sorted(prefix.glob("lib/engines*"))), prefix / "lib")),
        "OPENSSL_CONF": f"{prefix}/ssl/openssl.cnf",
    })
    env.update(extra)
    return env


def host_speed(prefix: Path, command: Sequence[str], env: Mapping[str, str],
               algorithm: str) -> tuple[float, float, str]:
    """Run an ``openssl speed`` command on the host: (bytes/s, wall seconds, stdout)."""
    args = [str(prefix / "bin" / "openssl"), *command[1:]]
    secs, out = run_cmd(args, env=host_env(prefix, env))
    return host_figure(out.stdout, algorithm), secs, out.stdout


def is_speed(command: Sequence[str]) -> bool:
    return unwrap_speed(command)[:2] == ("openssl", "speed")


def tool_figure(outcome: Any, algorithm: str, mask: str = "native") -> float:
    for f in outcome.figures:
        if f.get("algorithm") == algorithm and f.get("block_size") == BLOCK and \
                f.get("mask") == mask and isinstance(f.get("bytes_per_s"), (int, float)):
            return float(f["bytes_per_s"])
    raise BenchmarkError(f"the tool recorded no figure for {algorithm} at {BLOCK} bytes "
                         f"(mask {mask}) in {outcome.run_dir}: {outcome.error}")


# -- 1. fidelity --------------------------------------------------------------------


def section_fidelity(ctx: Context) -> None:
    pairs = 3 if ctx.quick else 5
    cases = [("1.1.1w-asm-x86_64", "aes-128-cbc")]
    if not ctx.quick:
        cases += [("1.1.1w-asm-x86_64", "sha256"), ("3.0.20-asm-x86_64", "aes-128-cbc")]
    tree = ctx.tree("fidelity")
    ctx.ensure_built(tree, [variant(ctx.matrix, vid) for vid in dict(cases)])
    bencher = Bencher(ctx.matrix, ctx.backend, tree, engine=ctx.backend.engine_info(),
                      git_commit=None)
    results: list[dict[str, Any]] = []
    ctx.data["fidelity"] = results
    for vid, alg in cases:
        v = variant(ctx.matrix, vid)
        tag, _ = bencher.image_for(v)
        suite = one_suite(f"fidelity-{alg}", [alg])
        inv = speed_invocations(v.version.version, suite)[0][0]
        load = sample_load()
        tool: list[float] = []
        host: list[float] = []
        with tempfile.TemporaryDirectory(prefix="om-fidelity-") as tmp, \
                extracted(tag, Path(tmp)) as where:
            prefix = where / "openssl"
            order = []
            for i in range(pairs):
                order += ["tool", "host"] if i % 2 == 0 else ["host", "tool"]
            for side in order:
                if side == "tool":
                    outcome = bencher.bench([v], suite, "auto")[0]
                    tool.append(tool_figure(outcome, alg))
                else:
                    host.append(host_speed(prefix, inv.command, inv.env, alg)[0])
        ratio = median(tool) / median(host)
        item = {"variant": vid, "algorithm": alg, "command": list(inv.command),
                "order": order, "tool_bytes_per_s": tool, "host_bytes_per_s": host,
                "ratio_of_medians": ratio, "load_before": dataclasses.asdict(load),
                "load_after": dataclasses.asdict(sample_load(1.0))}
        results.append(item)
        ctx.say(f"  fidelity {vid} {alg}: tool {mbps(median(tool))}, host "
                f"{mbps(median(host))}, ratio {ratio:.4f}")
        ctx.rows.append(Row(
            "1", f"fidelity {alg}, {vid} ({pairs} A/B pairs, medians)",
            f"{ratio:.3f} (tool {mbps(median(tool))}, host {mbps(median(host))}; "
            f"spread tool {cv_percent(tool):.1f}%, host {cv_percent(host):.1f}%)",
            ">= 0.99", "met" if ratio >= 0.99 else "MISSED", load.text()))


# -- 2. no-op rebuild ---------------------------------------------------------------


def default_versions(m: Matrix) -> dict[str, str]:
    """version -> sha256 of the versions the matrix's default variants build."""
    return {v.version.version: str(v.version.sha256) for v in m.variants}


def usable_marches(flags: Iterable[str]) -> list[str]:
    have = set(flags)
    return [m for m in NOOP_MARCHES if all(f in have for f in MARCH_NEEDS[m])]


def section_noop(ctx: Context) -> None:
    flags: tuple[str, ...] = ()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = tuple(line.split(":", 1)[1].split())
            break
    versions = default_versions(ctx.matrix)
    if ctx.quick:
        path = ctx.matrix.path
        only = "1.1.1w-*"
        m = ctx.matrix
    else:
        marches = usable_marches(flags)
        path = ctx.out / "noop-matrix.yaml"
        path.write_text(noop_matrix_yaml(versions, marches, "1.1.1w"))  # for the CLI
        m = matrix_from_document(noop_matrix_doc(versions, marches, "1.1.1w"), path=path,
                                 default_urls=default_urls)
        only = ""
    variants = m.select(only)
    tree = ctx.tree("noop")
    ctx.say(f"  no-op rebuild: {len(variants)} variants from {path}; building what is "
            "missing first (one-time)")
    t0 = time.monotonic()
    outcomes = ctx.ensure_built(tree, variants, matrix=m)
    first_s = time.monotonic() - t0
    built = [o for o in outcomes if o.status == "built"]
    ids_before = {o.tag: ctx.backend.image_id(str(o.tag)) for o in outcomes}
    args = ["build", f"--matrix={path}", f"--results={tree.root}"]
    if only:
        args.append(f"--only={only}")
    load = sample_load()
    times = []
    for _ in range(3 if ctx.quick else 5):
        secs, out = invoke(*args)
        ups = out.stdout.count("✓ up to date")
        if ups != len(variants) or "✓ built" in out.stdout:
            raise BenchmarkError(f"the no-op build did not find all {len(variants)} variants "
                                 f"up to date:\n{out.stdout[-1500:]}")
        times.append(secs)
    # The same no-op through the Python API with the real backend counting its calls.
    ctx.backend.reset()
    t0 = time.monotonic()
    api = Builder(m, ctx.backend, tree, workdir=ctx.out / "work").build(variants)
    api_s = time.monotonic() - t0
    build_calls, run_calls = len(ctx.backend.builds), len(ctx.backend.run_log)
    ids_after = {o.tag: ctx.backend.image_id(str(o.tag)) for o in api}
    unchanged = ids_before == ids_after
    ctx.data["noop"] = {
        "matrix": str(path), "variants": [v.id for v in variants], "cli_seconds": times,
        "api_seconds": api_s, "api_build_calls": build_calls, "api_container_runs": run_calls,
        "image_ids_unchanged": unchanged, "first_pass_seconds": first_s,
        "cold_builds": [{"variant": o.variant, "seconds": o.seconds} for o in built],
        "load_before": dataclasses.asdict(load),
    }
    ok = median(times) <= 3.0 and build_calls == 0 and unchanged
    ctx.rows.append(Row(
        "2", f"no-op `invoke matrix build`, {len(variants)} variants built (median of "
        f"{len(times)})",
        f"{median(times):.2f} s (max {max(times):.2f} s); docker builds {build_calls}, "
        f"containers {run_calls}, image ids {'unchanged' if unchanged else 'CHANGED'}",
        "<= 3 s, 0 builds", "met" if ok else "MISSED", load.text()))
    if built:
        build_s = [o.seconds for o in built]
        ctx.rows.append(Row(
            "2a", f"one-time cold builds for that matrix ({len(built)} variants, make -j"
            f"{os.cpu_count()})",
            f"median {median(build_s):.0f} s, total {sum(build_s) / 60:.1f} min",
            "(reported)", "", sample_load(0.5).text()))


# -- 3. cold build ------------------------------------------------------------------


def docker_rmi(ref: str) -> None:
    run_cmd(["docker", "rmi", "-f", ref], check=False)


def remove_nonce_images(nonce: str) -> int:
    """Remove the dangling stage images this benchmark made (their build steps carry
    the nonce); nothing else is touched."""
    _, out = run_cmd(["docker", "images", "-q", "--no-trunc", "--filter", "dangling=true"])
    ids = out.stdout.split()
    removed = 0
    if not ids:
        return 0
    _, info = run_cmd(["docker", "image", "inspect", *ids], check=False)
    try:
        images = json.loads(info.stdout or "[]")
    except json.JSONDecodeError:
        return 0
    for image in images:
        if nonce in json.dumps(image.get("ContainerConfig", {})):
            docker_rmi(str(image["Id"]))
            removed += 1
    return removed


def section_cold(ctx: Context) -> None:
    if ctx.quick:
        ctx.rows.append(Row("3", "cold build: tool vs plain docker build", "skipped (--quick): "
                            "a cold build takes minutes", "<= 1.05x", "", ""))
        return
    pairs = int(ctx.args.cold_rounds)
    base = variant(ctx.matrix, "1.1.1w-asm-x86_64")
    spec = base.version
    src = fetch_source_info(spec.version, spec.sha256, spec.urls,
                            lock_file=ctx.matrix.path.with_suffix(".lock"))
    make_jobs = max(1, os.cpu_count() or 1)
    tree = ctx.tree("cold")
    # the toolchain and the default variant exist (so the source stage is cached)
    ctx.ensure_built(tree, [base])
    tc_tag = render_toolchain_tag(base.base_image)
    load = sample_load()
    sides = ("tool", "same", "minimal")
    samples: dict[str, list[float]] = {side: [] for side in sides}
    logs: dict[str, list[list[LogStep]]] = {side: [] for side in sides}
    step_times: dict[str, list[list[dict[str, Any]]]] = {side: [] for side in sides}
    for i in range(pairs):
        for side in sides[i % 3:] + sides[:i % 3]:
            nonce = f"{ctx.nonce}{i}{side[0]}"
            if side == "tool":
                mpath = ctx.out / f"cold-{nonce}.yaml"
                doc = cold_matrix_doc(spec.version, str(spec.sha256), nonce)
                mpath.write_text(yaml.safe_dump(doc, sort_keys=False))  # for the CLI
                m = matrix_from_document(doc, path=mpath, default_urls=default_urls)
                v = m.select(f"*frandom-seed-{nonce}")[0]
                with StepTail(tree.root / "_builds" / v.id, "*/build.log") as tail:
                    tail.marks.append((time.monotonic(), "(command started)"))
                    secs, _ = invoke("build", f"--matrix={mpath}", f"--results={tree.root}",
                                     f"--only=*frandom-seed-{nonce}")
                    t_end = time.monotonic()
                step_times[side].append(step_durations(tail.marks, t_end))
                latest = read_latest(tree.root, v.id)
                assert latest is not None, f"{v.id}: built but no latest build record"
                log_path = build_dir(tree.root, v.id, latest.digest) / "build.log"
                logs[side].append(build_log_steps(log_path.read_text()))
                ctx.images_made.append(latest.tag)
            else:
                v = dataclasses.replace(base, configure=(*base.configure,
                                                         f"-frandom-seed={nonce}"))
                rendered = render(v)
                context = ctx.out / "work" / f"{side}-{nonce}"
                context.mkdir(parents=True, exist_ok=True)
                if side == "same":
                    # the tool's own Dockerfile and context, built by plain `docker build`
                    (context / "Dockerfile").write_text(rendered.dockerfile)
                    for name, path in rendered.context_files.items():
                        shutil.copy2(path, context / name)
                else:
                    (context / "Dockerfile").write_text(plain_dockerfile(
                        tc_tag, tarball_name(v), rendered.recipe.configure, make_jobs,
                        rendered.recipe.install))
                shutil.copy2(src.path, context / tarball_name(v))
                tag = f"openssl-matrix-bench/{side}:{nonce}"
                ctx.images_made.append(tag)
                t_start = time.monotonic()
                secs, output, marks = timed_build(
                    ["docker", "build", "--network", "none", "--build-arg",
                     f"MAKE_JOBS={make_jobs}", "-t", tag, str(context)])
                marks.insert(0, (t_start, "(command started)"))
                step_times[side].append(step_durations(marks, time.monotonic()))
                logs[side].append(build_log_steps(output))
            samples[side].append(secs)
            ctx.say(f"  cold build {side} #{i + 1}: {secs:.1f} s")
    ratio = median(samples["tool"]) / median(samples["same"])
    ratio_min = median(samples["tool"]) / median(samples["minimal"])
    # Every build must find the toolchain and the unpacked source in the cache, or the
    # comparison would charge one side for work the other skipped.
    source_cached = {side: all(all(s.cached for s in stage_steps(steps, "source"))
                               and stage_steps(steps, "source") for steps in logs[side])
                     for side in ("tool", "same")}
    minimal_cached = all(all(s.cached for s in steps[1:3]) for steps in logs["minimal"])
    cached_ok = source_cached["tool"]
    all_cached = cached_ok and source_cached["same"] and minimal_cached

    def med(side: str) -> str:
        return f"{median(samples[side]):.1f} s"

    ctx.rows.append(Row(
        "3", f"cold build of one 1.1.1w variant: `invoke matrix build` vs plain `docker "
        f"build` of the same Dockerfile and context ({pairs} rotated rounds, medians)",
        f"{ratio:.3f} (tool {med('tool')}, docker build {med('same')}; toolchain and unpack "
        f"from the cache in every build: {'yes' if all_cached else 'NO'})", "<= 1.05x",
        "met" if ratio <= 1.05 else "MISSED", load.text()))
    ctx.rows.append(Row(
        "3c", "the same tool builds vs a minimal hand-written Dockerfile (one stage: unpack, "
        "Configure, make, install_sw; no build record, no runtime stage)",
        f"{ratio_min:.3f} (tool {med('tool')}, minimal {med('minimal')})", "(reported)", "",
        load.text()))
    groups = {side: [group_steps(d) for d in runs] for side, runs in step_times.items()}
    names = [g for g, _ in STEP_GROUPS] + ["other steps"]
    parts = []
    for g in names:
        cols = [[x.get(g, 0.0) for x in groups[side]] for side in sides]
        if all(cols) and any(median(c) >= 0.05 for c in cols):
            parts.append(f"{g} " + "/".join(f"{median(c):.2f}" for c in cols))
    ctx.rows.append(Row(
        "3b", "where the time goes, seconds tool/same Dockerfile/minimal (medians; each "
        "build log's Step lines timestamped as they appeared)", "; ".join(parts), "", "", ""))
    ctx.data["cold"] = {"samples": samples, "ratio_of_medians": ratio,
                        "ratio_vs_minimal": ratio_min, "step_groups": groups,
                        "step_seconds": step_times,
                        "logs": {k: [[dataclasses.asdict(s) for s in steps] for steps in v]
                                 for k, v in logs.items()},
                        "load_before": dataclasses.asdict(load)}
    # What the shared stages cost when they are not shared.
    matrix_variants: list[Variant] = list(ctx.matrix.variants)
    if ctx.data.get("noop", {}).get("variants") and (ctx.out / "noop-matrix.yaml").exists():
        matrix_variants = list(load_matrix(ctx.out / "noop-matrix.yaml",
                                           default_urls=default_urls).variants)
    versions = {v.version.version: v for v in matrix_variants}
    source_s = {ver: unpack_stage_seconds(ctx, v) for ver, v in versions.items()}
    toolchain_s, why = toolchain_seconds(ctx, base.base_image)
    saved = shared_stage_savings(matrix_variants, toolchain_s or 0.0, source_s)
    unpack = ", ".join(f"{ver} {x:.1f} s" for ver, x in source_s.items())
    tc_text = f"toolchain image {toolchain_s:.0f} s" if toolchain_s is not None else \
        f"toolchain image not measured ({why})"
    ctx.rows.append(Row(
        "3a", f"shared layers: toolchain image built once per base image, unpacked source "
        f"once per version (the tool's cold builds above: toolchain and unpack steps "
        f"{'all from the cache' if cached_ok else 'NOT all from the cache'})",
        f"uncached: {tc_text}, unpack {unpack}; for the {len(matrix_variants)}-variant matrix "
        f"sharing saves {saved['total_s'] / 60:.1f} min"
        + ("" if toolchain_s is not None else " (unpack only)"),
        "once per base / version", "met" if cached_ok else "MISSED", ""))
    ctx.data["cold"].update({"unpack_s": source_s, "toolchain_s": toolchain_s,
                             "toolchain_not_measured": why, "savings": saved,
                             "savings_matrix": [v.id for v in matrix_variants]})


def unpack_stage_seconds(ctx: Context, v: Variant) -> float:
    """Build a variant's unpacked-source stage without the cache (no network needed)."""
    spec = v.version
    src = fetch_source_info(spec.version, spec.sha256, spec.urls,
                            lock_file=ctx.matrix.path.with_suffix(".lock"))
    src_ctx = ctx.out / "work" / f"source-{ctx.nonce}-{spec.version}"
    src_ctx.mkdir(parents=True, exist_ok=True)
    rendered = render(v)
    (src_ctx / "Dockerfile").write_text(rendered.dockerfile)
    for name, path in rendered.context_files.items():
        shutil.copy2(path, src_ctx / name)
    shutil.copy2(src.path, src_ctx / tarball_name(v))
    tag = f"openssl-matrix-bench/source-cold:{ctx.nonce}-{spec.version}"
    secs, _ = run_cmd(["docker", "build", "--no-cache", "--network", "none", "--target",
                       "source", "-t", tag, str(src_ctx)], timeout=600)
    ctx.images_made.append(tag)
    ctx.say(f"  uncached unpack stage of {spec.version}: {secs:.1f} s")
    return secs


def toolchain_seconds(ctx: Context, base_image: str) -> tuple[float | None, str]:
    """Build the toolchain image without the cache: apt-get from Debian's mirror, so the
    figure depends on the network. (None, reason) when it cannot be built here."""
    tc_ctx = ctx.out / "work" / f"toolchain-{ctx.nonce}"
    tc_ctx.mkdir(parents=True, exist_ok=True)
    (tc_ctx / "Dockerfile").write_text(toolchain_dockerfile(base_image))
    tag = f"openssl-matrix-bench/toolchain-cold:{ctx.nonce}"
    try:
        secs, _ = run_cmd(["docker", "build", "--no-cache", "-t", tag, str(tc_ctx)],
                          timeout=900)
    except subprocess.TimeoutExpired:
        return None, "apt-get did not finish within 15 minutes"
    except BenchmarkError as exc:
        lines = [ln for ln in str(exc).splitlines() if ln.strip()]
        return None, "docker build failed: " + (lines[-1][:160] if lines else "?")
    finally:
        ctx.images_made.append(tag)
    ctx.say(f"  uncached toolchain image: {secs:.1f} s")
    return secs, ""


# -- 4. bench overhead --------------------------------------------------------------


def section_overhead(ctx: Context) -> None:
    algorithms = ["aes-128-cbc", "sha256"] if ctx.quick else \
        ["aes-256-cbc", "md5", "sha1", "sha256", "sha512", "aes-128-cbc"]
    v = variant(ctx.matrix, "1.1.1w-asm-x86_64")
    tree = ctx.tree("overhead")
    ctx.ensure_built(tree, [v])
    bencher = Bencher(ctx.matrix, ctx.backend, tree, engine=ctx.backend.engine_info(),
                      git_commit=None)
    suite = one_suite("overhead", algorithms)
    invocations = speed_invocations(v.version.version, suite)[0]
    tag, _ = bencher.image_for(v)
    load = sample_load()
    ctx.backend.reset()
    t0 = time.monotonic()
    outcome = bencher.bench([v], suite, "auto")[0]
    total = time.monotonic() - t0
    if outcome.status != "complete":
        raise BenchmarkError(f"overhead bench did not complete: {outcome.error}")
    speed_runs = [(c, s) for c, s in ctx.backend.run_log if is_speed(c)]
    fixed = sum(s for c, s in ctx.backend.run_log if not is_speed(c))
    host_times: list[float] = []
    with tempfile.TemporaryDirectory(prefix="om-overhead-") as tmp, \
            extracted(tag, Path(tmp)) as where:
        for inv in invocations:
            reps = [host_speed(where / "openssl", inv.command, inv.env, inv.algorithm)[1]
                    for _ in range(3)]
            host_times.append(median(reps))
    split = overhead_split(total, fixed, [s for _, s in speed_runs], host_times)
    ctx.data["overhead"] = {"total_s": total, "run_log": ctx.backend.run_log,
                            "host_speed_s": host_times, **split,
                            "load_before": dataclasses.asdict(load)}
    ctx.rows.append(Row(
        "4", f"bench overhead per cell beyond `openssl speed` ({len(algorithms)} cells, "
        "-seconds 1)",
        f"{split['per_cell_s']:.2f} s (container {split['container_s']:.2f} s, parse+write "
        f"{split['parse_write_s']:.2f} s); plus {split['fixed_s']:.2f} s once per variant "
        "and bench (CPU and system state, `openssl version -a`, engine and mask probes)",
        "<= 0.5 s",
        "met" if split["per_cell_s"] <= 0.5 else "MISSED", load.text()))


# -- 5. repeatability (and 6. time to the blog table) -------------------------------


def section_repeat(ctx: Context) -> None:
    reps = 5
    if ctx.quick:
        v = variant(ctx.matrix, "1.1.1w-asm-x86_64")
        tree = ctx.tree("repeat")
        ctx.ensure_built(tree, [v])
        bencher = Bencher(ctx.matrix, ctx.backend, tree, engine=ctx.backend.engine_info(),
                          git_commit=None)
        suite = one_suite("repeat", ["aes-128-cbc"],
                          [Mask("native", None), Mask("no-aesni", None, ("aesni", "pclmulqdq"))])
        load = sample_load()
        samples: dict[str, list[float]] = {}
        for out in bencher.bench([v], suite, "auto", repeat=reps):
            for mask in ("native", "no-aesni"):
                samples.setdefault(f"{v.id} aes-128-cbc {mask}", []).append(
                    tool_figure(out, "aes-128-cbc", mask))
        cvs = {k: cv_percent(x) for k, x in samples.items()}
        ctx.data["repeat"] = {"samples": samples, "cv_percent": cvs,
                              "load_before": dataclasses.asdict(load)}
        ctx.rows.append(Row(
            "5", f"repeatability: CV over {reps} runs at {BLOCK} B, -seconds 1 "
            f"({len(cvs)} cells)", ", ".join(f"{k.split(' ', 1)[1]} {c:.1f}%"
                                             for k, c in cvs.items()),
            "(as measured)", "", load.text()))
        return
    # Full: the blog-fast suite over the default matrix, as a user types it: once (the
    # time to the table), then with --repeat 5 (the tool's interleaved repetitions).
    suite = ctx.matrix.suite("blog-fast")
    variants = list(ctx.matrix.variants)
    once, tree = ctx.tree("blog-once"), ctx.tree("blog-repeat")
    for t in (once, tree):
        ctx.ensure_built(t, variants)
    load = sample_load()
    once_s, _ = invoke("bench", "--cpu=auto", f"--suite={suite.name}", f"--results={once.root}")
    ctx.say(f"  blog-fast once: {once_s:.1f} s")
    repeat_s, _ = invoke("bench", "--cpu=auto", f"--suite={suite.name}", f"--repeat={reps}",
                         f"--results={tree.root}")
    ctx.say(f"  blog-fast --repeat {reps}: {repeat_s:.1f} s")
    rows = [r for r in export_records(tree) if r.get("suite") == suite.name]
    tables = {ver: method_table(rows, ver) for ver in default_versions(ctx.matrix)}
    blog_cvs = [c for t in tables.values() for c in table_cvs(t)]
    invocations = sum(len(speed_invocations(v.version.version, suite)[0]) for v in variants)
    ctx.data["blog"] = {"suite": dataclasses.asdict(suite), "once_s": once_s,
                        "repeat_s": repeat_s, "repeat": reps, "tables": tables,
                        "speed_runs": invocations, "load_before": dataclasses.asdict(load)}
    ctx.rows.append(Row(
        "5", f"repeatability: CV over {reps} runs at {BLOCK} B, -seconds {suite.seconds}, "
        f"blog-fast suite, `--repeat {reps}` ({len(blog_cvs)} table cells)",
        f"median {median(blog_cvs):.1f}%, max {max(blog_cvs):.1f}%", "(as measured)", "",
        load.text()))
    ctx.rows.append(Row(
        "6", f"time to the seed blog's method table: `invoke matrix bench --cpu=auto --suite "
        f"blog-fast` ({len(variants)} variants, {invocations} speed runs)",
        f"{once_s:.0f} s ({repeat_s / reps:.0f} s per round with --repeat {reps}); at speed's "
        f"default 3 s x 6 sizes per run the speed runs alone take {invocations * 18 / 60:.0f} "
        "min", "minutes", "met" if once_s <= 600 else "MISSED", load.text()))
    if not ctx.args.skip_precision:
        section_precision(ctx, rows)


def section_precision(ctx: Context, rows_1s: list[dict[str, Any]]) -> None:
    """What a longer -seconds buys: the same cells with -seconds 3, 5 interleaved runs."""
    reps = 5
    v = variant(ctx.matrix, "1.1.1w-asm-x86_64")
    suite = dataclasses.replace(ctx.matrix.suite("blog-fast"), seconds=3, engines=(None,),
                                name="blog-fast-3s")
    tree = ctx.tree("precision")
    ctx.ensure_built(tree, [v])
    bencher = Bencher(ctx.matrix, ctx.backend, tree, engine=ctx.backend.engine_info(),
                      git_commit=None)
    load = sample_load()
    bencher.bench([v], suite, "auto", repeat=reps)
    rows = list(export_records(tree))

    def cvs(rs: list[dict[str, Any]]) -> list[float]:
        t = method_table([r for r in rs if r.get("variant") == v.id], v.version.version)
        t.pop("Kernel (afalg)", None)
        return table_cvs(t)

    c1, c3 = cvs(rows_1s), cvs(rows)
    ctx.data["precision"] = {"cv_1s": c1, "cv_3s": c3, "load_before": dataclasses.asdict(load)}
    ctx.rows.append(Row(
        "5a", f"the same {len(c3)} cells of {v.id} with -seconds 3 instead of 1 ({reps} runs)",
        f"CV median {median(c3):.1f}% (max {max(c3):.1f}%) vs {median(c1):.1f}% "
        f"(max {max(c1):.1f}%) at 1 s", "(as measured)", "", load.text()))


# ----------------------------------------------------------------------------------
# main


def section_disturb(ctx: Context) -> None:
    """Figures under disturbances: flagged, or within 5 % of the quiet median
    (benchmarks/disturb.py, which also runs on its own)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("benchmarks_disturb",
                                                  ROOT / "benchmarks" / "disturb.py")
    assert spec is not None and spec.loader is not None
    disturb = importlib.util.module_from_spec(spec)
    sys.modules["benchmarks_disturb"] = disturb
    spec.loader.exec_module(disturb)
    out = ctx.out / "disturb"
    out.mkdir(exist_ok=True)
    data = disturb.run(out, quick=ctx.quick, say=ctx.say, cleanup=remove_nonce_images)
    ctx.data["disturb"] = data
    quiet = data["cases"]["quiet"]["counts"]
    n_quiet = sum(quiet[k] for k in ("ok_close", "flagged", "ok_off", "no_reference"))
    wrong = quiet["flagged"] / n_quiet if n_quiet else 1.0
    ctx.rows.append(Row("7", f"quiet host: figures wrongly flagged ({n_quiet} figures)",
                        data["cases"]["quiet"]["text"], "<= 5 %",
                        "met" if wrong <= 0.05 else "MISSED", ""))
    for name, case in data["cases"].items():
        if name == "quiet":
            continue
        ok_off = case["counts"]["ok_off"]
        extra = f"; speed runs overlapping the other bench: {case['overlap_s']} s" \
            if "overlap_s" in case else ""
        ctx.rows.append(Row("7", f"under {name}: {case['disturbance']}",
                            case["text"] + extra, "0 ok but > 5 % off",
                            "met" if ok_off == 0 else "MISSED", ""))
    ctx.say(disturb.table(data))


def section_mainjob(ctx: Context) -> None:
    """The README's main bench command as typed, on the default matrix, timed."""
    variants = list(ctx.matrix.variants)
    tree = ctx.tree("mainjob")
    ctx.ensure_built(tree, variants)
    load = sample_load()
    secs, done = invoke("bench", "--cpu=auto", f"--results={tree.root}")
    summary = [line.strip() for line in done.stdout.splitlines()
               if "figure(s) from" in line]
    ctx.data["mainjob"] = {"seconds": secs, "summary": summary, "stdout": done.stdout,
                           "load_before": dataclasses.asdict(load)}
    ctx.rows.append(Row("8", "the README's main job: `invoke matrix bench --cpu=auto` "
                        f"(suite {ctx.matrix.default_suite}, default variants)",
                        f"{secs / 60:.1f} min; " + (summary[-1] if summary else "no summary"),
                        "<= 6 min", "met" if secs <= 360 else "MISSED", load.text()))


def ship_rows(ships: Sequence[Mapping[str, Any]], build_s: float | None,
              toolchain: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """(measure, result) lines of the lab section's shipping half, from ship records."""
    out: list[tuple[str, str]] = []
    if ships:
        secs = [float(r["seconds"]) for r in ships]
        rates = [float(r["bytes_per_s"]) for r in ships if r.get("bytes_per_s")]
        spread = f" [{min(secs):.1f}–{max(secs):.1f}]" if len(secs) > 1 else ""
        out.append(("ship the 1.1.1w asm image to the engine (docker save → docker load, "
                    "streamed through the tool)",
                    f"{int(ships[0]['bytes']) / 1e6:.0f} MB in {median(secs):.1f} s{spread}, "
                    f"{median(rates) / 1e6:.1f} MB/s (median of {len(secs)})"))
    if toolchain:
        out.append(("ship the toolchain image there once (a build needs it; the engine has "
                    "no network for apt)",
                    f"{int(toolchain['bytes']) / 1e6:.0f} MB in {float(toolchain['seconds']):.1f}"
                    f" s, {float(toolchain['bytes_per_s']) / 1e6:.1f} MB/s"))
    if build_s is not None:
        out.append(("build the same image on that engine (cold: a fresh -frandom-seed)",
                    f"{build_s:.0f} s"))
    return out


def lab_matrix_doc(base: Mapping[str, Any], engines: Mapping[str, str],
                   vendor: str) -> dict[str, Any]:
    """The default matrix plus one profile per extra engine (this host's CPU, by vendor)."""
    doc = dict(base)
    doc["profiles"] = {**dict(base.get("profiles") or {}), **{
        name: {"description": f"this host's CPU through engine {name}", "vendor": vendor,
               "model": "*", "flags": [], "docker_host": url}
        for name, url in engines.items()}}
    return doc


def section_lab(ctx: Context) -> None:
    """Images to another engine: ship vs build; N engines at once vs one after another."""
    from openssl_matrix.engine.ship import Peer, Shipper
    from tests.engines_fixture import ExtraEngine, can_start_engines

    why = can_start_engines()
    if why:
        raise BenchmarkError(f"lab: {why}")
    v = variant(ctx.matrix, "1.1.1w-asm-x86_64")
    tree = ctx.tree("lab")
    [main_out] = ctx.ensure_built(tree, [v])
    main_engine = ctx.backend.engine_info()
    load = sample_load()
    engines = [ExtraEngine(f"lab{i}") for i in range(2)]
    data: dict[str, Any] = {"load_before": dataclasses.asdict(load)}
    try:
        for e in engines:
            e.start()
        target = DockerBackend(base_url=engines[0].url)
        info = target.engine_info()

        def peers() -> list[Peer]:
            return [Peer("the main engine", ctx.backend, main_engine)]

        ships: list[dict[str, Any]] = []
        for _ in range(1 if ctx.quick else 3):
            for tag in (str(main_out.tag), v.base_image):  # only on our own engine
                target.remove_image(tag)
            [out] = Builder(ctx.matrix, target, tree, workdir=ctx.out / "work",
                            images=Shipper(target, info, "ship", peers, tree.ships)).build([v])
            if out.status != "shipped":
                raise BenchmarkError(f"lab: shipping failed: {out.error}")
            ships.append(dict(out.record["shipped"]))
        build_s: float | None = None
        toolchain = None
        if not ctx.quick:
            doc = cold_matrix_doc(v.version.version, str(v.version.sha256), f"{ctx.nonce}lab")
            cold = matrix_from_document(doc, path=ctx.out / "lab-cold.yaml",
                                        default_urls=default_urls)
            cv = cold.select("*frandom-seed-*")[0]
            [built] = Builder(cold, target, tree, workdir=ctx.out / "work",
                              images=Shipper(target, info, "auto", peers, tree.ships)
                              ).build([cv])
            if built.status != "built":
                raise BenchmarkError(f"lab: the build on the extra engine failed: {built.error}")
            build_s = built.seconds
            tc = records.read_ship(records.ship_path(records.images_dir(
                tree.root, render_toolchain_tag(v.base_image)), engine_key(info)))
            toolchain = tc.to_json() if tc else None
        data.update(ships=ships, build_seconds=build_s, toolchain=toolchain)
        for measure, result in ship_rows(ships, build_s, toolchain):
            ctx.rows.append(Row("9", measure, result, "", "", load.text()))
        if build_s is not None and ships:
            ship_s = median([float(r["seconds"]) for r in ships])
            ctx.rows.append(Row("9", "shipping against building there", f"{ship_s:.1f} s "
                                f"against {build_s:.0f} s: {build_s / ship_s:.0f}x",
                                "shipping wins where it is cheaper (auto chooses it)",
                                "met" if ship_s < build_s else "MISSED", load.text()))
        # N engines at once against one after another (lab.py's --cpu=a,b)
        data["parallel"] = lab_parallel(ctx, engines, v)
    finally:
        for e in engines:
            e.remove()
        ctx.data["lab"] = data


def lab_parallel(ctx: Context, engines: Sequence[Any], v: Variant) -> dict[str, Any]:
    """``bench --cpu=lab0,lab1`` against ``--cpu=lab0`` then ``--cpu=lab1``, as typed."""
    from openssl_matrix.measure.hostinfo import parse_cpuinfo

    vendor = parse_cpuinfo(Path("/proc/cpuinfo").read_text()).vendor
    names = {f"lab{i}": e.url for i, e in enumerate(engines)}
    mpath = ctx.out / "lab-matrix.yaml"
    base = yaml.safe_load((ROOT / "matrix.yaml").read_text())
    mpath.write_text(yaml.safe_dump(lab_matrix_doc(base, names, vendor), sort_keys=False))
    common = (f"--matrix={mpath}", f"--only={v.id}")
    for tree in ("lab-seq", "lab-par"):  # each tree records the (shipped) images
        invoke("build", *common, f"--cpu={','.join(names)}", "--images=ship",
               f"--results={ctx.out / tree}")
    bench = ("bench", *common, "--suite=aes8k", "--repeat=1", "--settle=0")
    load = sample_load()
    seq, seq_out = 0.0, ""
    for name in names:
        secs, one = invoke(*bench, f"--cpu={name}", f"--results={ctx.out / 'lab-seq'}")
        seq, seq_out = seq + secs, seq_out + one.stdout
    both, done = invoke(*bench, f"--cpu={','.join(names)}", f"--results={ctx.out / 'lab-par'}")
    (n_par, ok_par), (n_seq, ok_seq) = figure_counts(done.stdout), figure_counts(seq_out)
    ctx.rows.append(Row("9", f"{len(names)} engines benched at once (--cpu={','.join(names)}) "
                        "vs the same work one after another (suite aes8k, 1 round)",
                        f"{both:.0f} s at once, {seq:.0f} s one after another "
                        f"({seq / both:.2f}x); figures ok: {ok_par} of {n_par} at once, "
                        f"{ok_seq} of {n_seq} one after another (one 2-core host: the "
                        "engines share its cores, and the accounting flags it)",
                        "", "", load.text()))
    return {"at_once_s": both, "one_after_another_s": seq, "stdout": done.stdout,
            "stdout_one_after_another": seq_out, "load_before": dataclasses.asdict(load)}


def figure_counts(stdout: str) -> tuple[int, int]:
    """(figures, ok figures) over the bench summaries' closing lines in ``stdout``."""
    found = re.findall(r"(\d+) figure\(s\) from \d+ measurement\(s\): (\d+) ok", stdout)
    return sum(int(n) for n, _ in found), sum(int(ok) for _, ok in found)


def blog_table_text(tables: Mapping[str, Mapping[str, Mapping[str, Cell]]]) -> str:
    out = []
    for version, table in tables.items():
        out.append(f"\nOpenSSL {version}, this host, {BLOCK}-byte blocks, median (CV) of the "
                   "runs, in 1000s of bytes per second as the blog prints them; a status in "
                   "[] is the tool's flag on that figure:")
        header = ["Method", *BLOG_ALGORITHMS]
        body = []
        for label, *_ in BLOG_METHODS:
            cells = []
            for alg in BLOG_ALGORITHMS:
                cell = table.get(label, {}).get(alg)
                if not cell or not cell["values"]:
                    cells.append("—")
                    continue
                xs = cell["values"]
                cv = f" ({cv_percent(xs):.1f}%)" if len(xs) >= 2 else ""
                flags = [str(x) for x in cell["statuses"] if x != "ok"]
                note = f" [{', '.join(flags)}]" if flags else ""
                cells.append(f"{median(xs) / 1000:,.2f}k{cv}{note}")
            body.append([label, *cells])
        out.append(markdown_table(header, body))
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--quick", action="store_true",
                   help="fewer repetitions, 1.1.1w only, no cold builds (about a minute)")
    p.add_argument("--sections", default="",
                   help=f"comma separated subset of {','.join(SECTIONS)} (default: all; "
                   "with --quick all but disturb, mainjob and lab, which take minutes)")
    p.add_argument("--out", default="",
                   help="folder for the results trees, work files and benchmark.json "
                   "(default: a new folder under /tmp)")
    p.add_argument("--json", default="", help="write all samples here "
                   "(default: OUT/benchmark.json)")
    p.add_argument("--cold-rounds", type=int, default=3,
                   help="cold-build rounds, each: the tool, the same Dockerfile by plain "
                   "docker build, a minimal Dockerfile, in rotating order (default 3)")
    p.add_argument("--skip-precision", action="store_true",
                   help="do not measure the blog-fast cells again with -seconds 3")
    p.add_argument("--keep-images", action="store_true",
                   help="keep the images the cold-build section makes (default: removed)")
    args = p.parse_args(argv)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()] or [
        s for s in SECTIONS if not (args.quick and s in ("disturb", "mainjob", "lab"))]
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        p.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="openssl-matrix-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    try:
        matrix = load_matrix(ROOT / "matrix.yaml", default_urls=default_urls)
        backend = TimedBackend()
        engine = backend.engine_info()
    except FatalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    ctx = Context(args=args, out=out, backend=backend, matrix=matrix)
    start = sample_load()
    machine = machine_description(engine)
    ctx.data.update({"started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                     "quick": ctx.quick, "machine": machine,
                     "load_at_start": dataclasses.asdict(start), "sections": sections,
                     "git_commit": _git_commit()})
    ctx.say(f"openssl-matrix benchmark ({'quick' if ctx.quick else 'full'}): {', '.join(sections)}"
            f"; work in {out}\nmachine: {start.text()}")
    funcs: dict[str, Callable[[Context], None]] = {
        "fidelity": section_fidelity, "noop": section_noop, "cold": section_cold,
        "overhead": section_overhead, "repeat": section_repeat,
        "disturb": section_disturb, "mainjob": section_mainjob, "lab": section_lab,
    }
    status = 0
    try:
        for name in SECTIONS:
            if name not in sections:
                continue
            ctx.say(f"▸ {name}")
            try:
                funcs[name](ctx)
            except (BenchmarkError, FatalError, subprocess.SubprocessError, ValueError) as exc:
                status = 1
                ctx.say(f"  {name} failed: {exc}")
                ctx.rows.append(Row("!", f"{name}", f"FAILED: {str(exc).splitlines()[0]}",
                                    "", "FAILED", ""))
                ctx.data.setdefault("failures", {})[name] = str(exc)
    finally:
        if ctx.images_made and not args.keep_images:
            # Cleaning up must never cost the table: an engine that stopped answering
            # leaves the images for the next run (they carry the nonce in their tags).
            try:
                for tag in ctx.images_made:
                    docker_rmi(tag)
                removed = remove_nonce_images(ctx.nonce)
                ctx.say(f"  removed the {len(ctx.images_made)} image(s) and {removed} "
                        "build-stage image(s) the cold-build section made")
            except (BenchmarkError, subprocess.SubprocessError, OSError) as exc:
                ctx.say(f"  could not remove this run's images ({str(exc).splitlines()[0]}); "
                        f"remove them by hand: docker images | grep {ctx.nonce}")
    end = sample_load()
    ctx.data["load_at_end"] = dataclasses.asdict(end)
    json_path = Path(args.json) if args.json else out / "benchmark.json"
    json_path.write_text(json.dumps(ctx.data, indent=2, default=str) + "\n")

    print(f"\nopenssl-matrix performance ({'quick' if ctx.quick else 'full'} run, "
          f"{ctx.data['started']}, git {str(ctx.data['git_commit'])[:12]})")
    print(f"machine: {machine['cpu_model']}, {machine['logical_cpus']} logical CPUs, "
          f"{machine['memory']}, kernel {machine['kernel']}, Docker {machine['docker_server']} "
          f"({machine['docker_storage']}), governor {machine['governor']}, boost "
          f"{machine['boost']}{', virtual machine' if machine['virtualised'] else ''}")
    print(f"load at start: {start.text()}; at end: {end.text()}")
    if not (start.quiet and end.quiet) or any("NOT QUIET" in r.conditions for r in ctx.rows):
        print("NOTE: the machine was NOT QUIET during (part of) this run: other processes used "
              f"more than {100 * QUIET_BUSY:.0f}% of the CPUs; figures are disturbed.")
    print()
    print(markdown_table(["#", "measure", "result", "goal", "verdict", "conditions at start"],
                         [[r.number, r.measure, r.result, r.goal, r.verdict, r.conditions]
                          for r in ctx.rows]))
    if "blog" in ctx.data:
        print(blog_table_text(ctx.data["blog"]["tables"]))
    print(f"\nall samples: {json_path}")
    if any(r.verdict == "MISSED" for r in ctx.rows):
        status = status or 2
    return status


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             cwd=ROOT, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


if __name__ == "__main__":
    sys.exit(main())
