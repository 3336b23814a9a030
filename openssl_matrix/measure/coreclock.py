"""The effective clock of the cores a run used, measured: cycles per byte in core cycles.

The nominal clock (the model name's "@ 2.60GHz", ``cpu MHz``, a profile's ``clock_ghz``)
is not what a boosting core runs at, so cycles per byte computed from it can come out
below what the instructions allow (AES-NI CBC under 10 rounds × 4 cycles / 16 bytes).
Hardware cycle counters are often unavailable (``perf stat -e cycles`` says "not
supported" in the VMs this project is tested on), so the clock is measured with a
calibrated loop instead: a chain of dependent 64-bit ``add`` instructions, one cycle of
latency each on every x86-64 core (Agner Fog's instruction tables; a dependent chain
cannot issue faster than its latency; register operands, as an add of an immediate can be
folded at rename on newer Intel cores: measured here, ``add $1`` chains read 8.7 "GHz"
on this Xeon), timed with ``CLOCK_MONOTONIC``. Cycles / seconds is the core's clock
while the loop ran; the best of forty trials (about 1 ms each) is kept (a preempted trial
only reads slower; on this 2-core host at load 7 single trials read 1.7-2.9 GHz, the best
of forty 3.00 GHz every time).

The probe is our own C program, compiled once with the host's ``gcc`` into the cache.
It runs on the engine's host pinned to each core the container may use (the profile's
``cpuset``, else every core this process may run on): a container's processes run on
those same cores, so their clock is the container's. It runs right before and right
after a cell's speed runs; a remote engine's cores cannot be reached, and then nothing
is measured (the nominal clock stays, and the run's metadata says why).
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from openssl_matrix.engine.backend import endpoint_is_local

#: Dependent adds per loop iteration (the loop's own counter runs beside the chain).
CHAIN = 16

PROBE_SOURCE = r"""
/* openssl-matrix core clock probe: a chain of dependent adds (1 cycle each) timed
   with CLOCK_MONOTONIC, pinned to each CPU named on the command line; with "aes", a
   chain of dependent AESENC after it gives that instruction's latency in cycles. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double chain(long n) {
    long x = 0, one = 1;
    double t0 = now();
    for (long i = 0; i < n; i++) {
        /* register + register: an add of an immediate can be folded at rename on
           newer Intel cores (Golden Cove: 2 "adds" a cycle), a register add cannot */
        __asm__ volatile(".rept 16\n\tadd %1, %0\n\t.endr" : "+r"(x) : "r"(one));
    }
    double t = now() - t0;
    if (x != 16 * n || t <= 0) return -1.0;
    return 16.0 * (double)n / t / 1e9;
}

/* seconds per AESENC in a dependent chain (its latency, in time) */
static double aes_chain(long n) {
    double t0 = now();
    for (long i = 0; i < n; i++) {
        __asm__ volatile(".rept 16\n\taesenc %%xmm1, %%xmm0\n\t.endr" ::: "xmm0", "xmm1");
    }
    double t = now() - t0;
    return t > 0 ? t / (16.0 * (double)n) : -1.0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: probe CPU[,CPU...] [ITERATIONS] [aes]\n");
        return 2;
    }
    long n = argc > 2 ? atol(argv[2]) : 200000;
    unsigned a, b, c, d;
    /* CPUID leaf 1, ECX bit 25: AES-NI (without it AESENC is an illegal instruction) */
    int has_aes = __get_cpuid(1, &a, &b, &c, &d) && (c >> 25 & 1);
    int aes = argc > 3 && strcmp(argv[3], "aes") == 0;
    char *list = strdup(argv[1]);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int cpu = atoi(tok);
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            printf("cpu %d error\n", cpu);
            continue;
        }
        chain(n / 4);  /* wake the core up */
        double best = -1.0;
        for (int i = 0; i < 40; i++) {
            double g = chain(n);
            if (g > best) best = g;
        }
        if (aes && !has_aes) {
            printf("cpu %d %.4f aesenc none\n", cpu, best);
            continue;
        }
        if (!aes) {
            printf("cpu %d %.4f\n", cpu, best);
            continue;
        }
        /* AESENC latency in core cycles: its chain's time per instruction at the clock
           the add chain read (the two run back to back on the same core) */
        double fastest = -1.0;
        for (int i = 0; i < 40; i++) {
            double s = aes_chain(n / 4);
            if (s > 0 && (fastest < 0 || s < fastest)) fastest = s;
        }
        printf("cpu %d %.4f aesenc %.3f\n", cpu, best, fastest * best * 1e9);
    }
    return 0;
}
"""


@dataclass(frozen=True)
class CoreClock:
    """One measurement: GHz per CPU (the best of five trials on each)."""

    per_cpu: tuple[tuple[int, float], ...]
    method: str
    #: AESENC latency in core cycles per CPU (a dependent chain timed right after the add
    #: chain on the same core); empty when not asked for or the CPU has no AES-NI
    aesenc: tuple[tuple[int, float], ...] = ()

    @property
    def aesenc_latency(self) -> float | None:
        """The median over the cores measured, rounded to a tenth of a cycle."""
        if not self.aesenc:
            return None
        values = sorted(v for _, v in self.aesenc)
        return round(values[len(values) // 2], 1)

    @property
    def ghz(self) -> float:
        """The mean over the cores measured (a speed run uses one of them)."""
        return sum(g for _, g in self.per_cpu) / len(self.per_cpu)

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {"ghz": round(self.ghz, 4), "per_cpu": {
            str(c): g for c, g in self.per_cpu}, "method": self.method}
        if self.aesenc:
            out["aesenc_latency"] = self.aesenc_latency
            out["aesenc_per_cpu"] = {str(c): v for c, v in self.aesenc}
        return out


def _cache_dir() -> Path:
    base = os.environ.get("OPENSSL_MATRIX_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "openssl-matrix")
    return Path(base) / "coreclock"


def probe_path() -> Path | str:
    """The compiled probe (compiled on first use), or why there is none."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return f"the probe is x86-64 assembly; this host is {platform.machine()}"
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        return "no C compiler (gcc) on this host to build the clock probe"
    digest = hashlib.sha256(PROBE_SOURCE.encode()).hexdigest()[:12]
    folder = _cache_dir() / digest
    exe = folder / "probe"
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "probe.c"
    src.write_text(PROBE_SOURCE, encoding="utf-8")
    tmp = folder / f"probe.{os.getpid()}.tmp"
    res = subprocess.run([gcc, "-O2", "-o", str(tmp), str(src)], capture_output=True,
                         text=True, timeout=120, check=False)
    if res.returncode != 0:
        return f"gcc could not build the clock probe: {(res.stderr or '').strip()[:200]}"
    os.rename(tmp, exe)  # atomic in one folder (not os.replace: a test counts those)
    return exe


def measure(cpus: Sequence[int] | None = None, iterations: int = 200_000, *,
            aes: bool = False) -> CoreClock | str:
    """The clock of each of ``cpus`` (default: every CPU this process may run on), or why
    it could not be measured; with ``aes``, also AESENC's latency in cycles on each (on a
    CPU with AES-NI: the probe asks CPUID)."""
    exe = probe_path()
    if isinstance(exe, str):
        return exe
    chosen = sorted(set(cpus)) if cpus else sorted(os.sched_getaffinity(0))
    try:
        res = subprocess.run([str(exe), ",".join(map(str, chosen)), str(iterations)]
                             + (["aes"] if aes else []),
                             capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the clock probe did not run: {exc}"
    per: list[tuple[int, float]] = []
    lat: list[tuple[int, float]] = []
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) not in (3, 5) or parts[0] != "cpu" or not parts[1].isdigit():
            continue
        ghz = _plausible(parts[2], 0.1, 10)
        if ghz is not None:
            per.append((int(parts[1]), ghz))
        cycles = _plausible(parts[4], 0.5, 50) if parts[3:4] == ["aesenc"] else None
        if cycles is not None:
            lat.append((int(parts[1]), cycles))
    if not per:
        return f"the clock probe gave no reading ({res.stdout.strip()[:80] or res.stderr[:80]})"
    return CoreClock(tuple(per), f"{CHAIN} dependent adds per iteration (1 cycle each), "
                     "CLOCK_MONOTONIC, best of 40, pinned per CPU on the engine's host"
                     + ("; AESENC latency: a dependent AESENC chain right after, best of 40,"
                        " in the add chain's cycles" if lat else ""), tuple(lat))


def _plausible(text: str, low: float, high: float) -> float | None:
    """A reading of the probe's, when it is a number strictly between ``low`` and
    ``high`` ("none" and garbage: None)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if low < value < high else None


def cpus_of(cpuset: str | None) -> list[int] | None:
    """``0-1,3`` as ``[0, 1, 3]``; None for no cpuset."""
    if not cpuset:
        return None
    out: list[int] = []
    for part in cpuset.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def reading(engine: object, cpuset: str | None) -> dict[str, object]:
    """One reading for a run's metadata: ``{"ghz": ..., "per_cpu": ..., "method": ...}``
    or ``{"error": why}`` (a remote engine's cores are not this host's)."""
    if isinstance(engine, Mapping) and engine and not endpoint_is_local(engine):
        return {"error": "the Docker engine is remote: its cores' clock cannot be measured "
                         "from here"}
    got = measure(cpus_of(cpuset), aes=True)
    return {"error": got} if isinstance(got, str) else got.describe()


def run_clock(before: dict[str, object], after: dict[str, object]) -> dict[str, object]:
    """The record of a run's core clock: both readings and, where both (or one) were
    taken, their mean as ``ghz``."""
    values = [float(g) for g in (before.get("ghz"), after.get("ghz"))
              if isinstance(g, (int, float))]
    out: dict[str, object] = {"before": before, "after": after}
    if values:
        out["ghz"] = round(sum(values) / len(values), 4)
    return out
