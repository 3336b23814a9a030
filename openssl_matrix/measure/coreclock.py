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
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from openssl_matrix.core.cachedir import cache_dir
from openssl_matrix.engine.backend import Backend

#: Why nothing was measured on a remote engine.
REMOTE = "the Docker engine is remote: its cores' clock cannot be measured from here"

#: Dependent adds per loop iteration (the loop's own counter runs beside the chain).
CHAIN = 16

PROBE_SOURCE = r"""
/* openssl-matrix core clock probe: a chain of dependent adds (1 cycle each) timed
   with CLOCK_MONOTONIC, pinned to each CPU named on the command line; with "aes", a
   chain of dependent AESENC after it gives that instruction's latency in cycles; with
   "ports", a throughput kernel (many independent chains) run for whole windows gives the
   instructions per cycle this core gives us (portshare.py says what it is for). */
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

/* The throughput kernel: per iteration 6 independent integer add chains, 4 independent
   PADDQ chains and, where the CPU has them, 4 independent AESENC and 2 independent
   SHA256RNDS2 chains: more independent work than one thread can issue, so it runs at the
   rate the core's execution ports allow, and slower when a sibling thread takes them. */
#define INT_SIMD \
    "add %6, %0\n\tadd %6, %1\n\tadd %6, %2\n\tadd %6, %3\n\tadd %6, %4\n\tadd %6, %5\n\t" \
    "paddq %%xmm2, %%xmm3\n\tpaddq %%xmm2, %%xmm4\n\tpaddq %%xmm2, %%xmm5\n\t" \
    "paddq %%xmm2, %%xmm6\n\t"
#define AES4 "aesenc %%xmm2, %%xmm7\n\taesenc %%xmm2, %%xmm8\n\t" \
    "aesenc %%xmm2, %%xmm9\n\taesenc %%xmm2, %%xmm10\n\t"
#define SHA2 "sha256rnds2 %%xmm0, %%xmm2, %%xmm11\n\tsha256rnds2 %%xmm0, %%xmm2, %%xmm12\n\t"
#define KERNEL(body) do { long a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, one = 1; \
    for (long i = 0; i < n; i++) \
        __asm__ volatile(".rept 4\n\t" body ".endr" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), \
                         "+r"(e), "+r"(f) : "r"(one) : "xmm0", "xmm3", "xmm4", "xmm5", \
                         "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12"); \
    } while (0)

/* instructions per iteration of the kernel the CPU can run (see kernel()) */
static int kernel_width(int aes, int sha) { return 4 * (10 + 4 * aes + 2 * sha); }

static void kernel(long n, int aes, int sha) {
    if (aes && sha) KERNEL(INT_SIMD AES4 SHA2);
    else if (aes) KERNEL(INT_SIMD AES4);
    else if (sha) KERNEL(INT_SIMD SHA2);
    else KERNEL(INT_SIMD);
}

/* instructions per second of the kernel over one window of at least `window` seconds:
   the whole window counts (a slice the core gave someone else slows it) */
static double ports_window(double window, int aes, int sha) {
    long batch = 2000, done = 0;
    double t0 = now(), t;
    do {
        kernel(batch, aes, sha);
        done += batch;
        t = now() - t0;
    } while (t < window);
    return (double)done * kernel_width(aes, sha) / t;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: probe CPU[,CPU...] [ITERATIONS] [aes] [ports]\n");
        return 2;
    }
    long n = argc > 2 ? atol(argv[2]) : 200000;
    unsigned a, b, c, d;
    /* CPUID leaf 1, ECX bit 25: AES-NI (without it AESENC is an illegal instruction) */
    int has_aes = __get_cpuid(1, &a, &b, &c, &d) && (c >> 25 & 1);
    /* CPUID leaf 7, EBX bit 29: the SHA extensions */
    int has_sha = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 29 & 1);
    int aes = 0, ports = 0;
    for (int i = 3; i < argc; i++) {
        aes |= strcmp(argv[i], "aes") == 0;
        ports |= strcmp(argv[i], "ports") == 0;
    }
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
        printf("cpu %d %.4f", cpu, best);
        if (aes && !has_aes) printf(" aesenc none");
        if (aes && has_aes) {
            /* AESENC latency in core cycles: its chain's time per instruction at the
               clock the add chain read (the two run back to back on the same core) */
            double fastest = -1.0;
            for (int i = 0; i < 40; i++) {
                double s = aes_chain(n / 4);
                if (s > 0 && (fastest < 0 || s < fastest)) fastest = s;
            }
            printf(" aesenc %.3f", fastest * best * 1e9);
        }
        if (ports && best > 0) {
            /* five windows of 20 ms: the median, in instructions per cycle of the clock
               the add chain read; the best window beside it */
            double w[5];
            for (int i = 0; i < 5; i++) w[i] = ports_window(0.02, has_aes, has_sha);
            qsort(w, 5, sizeof w[0], cmp_double);
            printf(" ports %.4f %.4f kernel %s%s", w[2] / (best * 1e9), w[4] / (best * 1e9),
                   has_aes ? "aes" : "", has_sha ? "sha" : "");
        }
        printf("\n");
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
    #: the throughput kernel's instructions per cycle per CPU, the median of five 20 ms
    #: windows (portshare.py); empty when not asked for
    ports: tuple[tuple[int, float], ...] = ()
    #: which instructions the kernel used beside integer adds and PADDQ ("aes", "sha")
    kernel: str = ""

    @property
    def ports_per_cycle(self) -> float | None:
        """The lowest over the cores measured: a run may have used any of them."""
        return min(v for _, v in self.ports) if self.ports else None

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
        if self.ports:
            out["ports_per_cycle"] = self.ports_per_cycle
            out["ports_per_cpu"] = {str(c): v for c, v in self.ports}
            out["ports_kernel"] = "int+paddq" + "".join(f"+{k}" for k in self.kernel.split(
                ",") if k)
        return out


def _cache_dir() -> Path:
    return cache_dir() / "coreclock"


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
    # names of this process *and thread*: two benches in one process (a lab's engines)
    # compile at once, and one's rename must not take the other's file away
    me = f"{os.getpid()}.{threading.get_ident()}"
    src = folder / f"probe.{me}.c"
    src.write_text(PROBE_SOURCE, encoding="utf-8")
    tmp = folder / f"probe.{me}.tmp"
    try:
        res = subprocess.run([gcc, "-O2", "-o", str(tmp), str(src)], capture_output=True,
                             text=True, timeout=120, check=False)
    finally:
        src.unlink(missing_ok=True)
    if res.returncode != 0:
        return f"gcc could not build the clock probe: {(res.stderr or '').strip()[:200]}"
    os.rename(tmp, exe)  # atomic in one folder (not os.replace: a test counts those)
    return exe


def measure(cpus: Sequence[int] | None = None, iterations: int = 200_000, *,
            aes: bool = False, ports: bool = False,
            on_host: Callable[..., str | None] | None = None) -> CoreClock | str:
    """The clock of each of ``cpus`` (default: every CPU this process may run on), or why
    it could not be measured; with ``aes``, also AESENC's latency in cycles on each (on a
    CPU with AES-NI: the probe asks CPUID); with ``ports``, also the throughput kernel's
    instructions per cycle on each (portshare.py). ``on_host`` runs the probe where the
    engine's containers run (``Backend.run_on_host``; default: here)."""
    exe = probe_path()
    if isinstance(exe, str):
        return exe
    chosen = sorted(set(cpus)) if cpus else sorted(os.sched_getaffinity(0))
    argv = [str(exe), ",".join(map(str, chosen)), str(iterations)] + (
        ["aes"] if aes else []) + (["ports"] if ports else [])
    try:
        stdout = on_host(argv, timeout=60) if on_host is not None else subprocess.run(
            argv, capture_output=True, text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the clock probe did not run: {exc}"
    if stdout is None:
        return REMOTE
    per: list[tuple[int, float]] = []
    lat: list[tuple[int, float]] = []
    share: list[tuple[int, float]] = []
    kernel = ""
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[0] != "cpu" or not parts[1].isdigit():
            continue
        cpu = int(parts[1])
        ghz = _plausible(parts[2], 0.1, 10)
        if ghz is None:
            continue
        per.append((cpu, ghz))
        words = parts[3:]
        if "aesenc" in words[:-1]:
            cycles = _plausible(words[words.index("aesenc") + 1], 0.5, 50)
            if cycles is not None:
                lat.append((cpu, cycles))
        if "ports" in words[:-1]:
            ipc = _plausible(words[words.index("ports") + 1], 0.01, 64)
            if ipc is not None:
                share.append((cpu, ipc))
        if "kernel" in words[:-1]:
            kernel = ",".join(k for k in ("aes", "sha") if k in words[words.index("kernel") + 1])
    if not per:
        return f"the clock probe gave no reading ({stdout.strip()[:80] or 'no output'})"
    return CoreClock(tuple(per), f"{CHAIN} dependent adds per iteration (1 cycle each), "
                     "CLOCK_MONOTONIC, best of 40, pinned per CPU on the engine's host"
                     + ("; AESENC latency: a dependent AESENC chain right after, best of 40,"
                        " in the add chain's cycles" if lat else "")
                     + ("; ports: a throughput kernel of independent chains, median of five"
                        " 20 ms windows, in instructions per add-chain cycle" if share
                        else ""), tuple(lat), tuple(share), kernel)


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


def reading(backend: Backend, cpuset: str | None, *, aes: bool = True,
            ports: bool = True) -> dict[str, object]:
    """One reading for a run's metadata, taken on the engine's host through ``backend``:
    ``{"ghz": ..., "per_cpu": ..., "method": ...}`` (with ``ports_per_cycle`` and
    AESENC's latency where asked) or ``{"error": why}`` (a remote engine's cores are not
    this host's)."""
    got = measure(cpus_of(cpuset), aes=aes, ports=ports, on_host=backend.run_on_host)
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
