#!/usr/bin/env python3
"""Disturbance benchmark: does the tool flag every figure a busy host distorted?

Run from anywhere (it uses the checkout it lives in)::

    python benchmarks/disturb.py [--quick] [--out DIR]
    python benchmarks/run.py --sections disturb      # the same, as a row of the benchmark

The same cells (1.1.1w asm, EVP aes-256-cbc, sha256 and md5 at 8192 bytes, with the CPU's
extensions on and with AES-NI/PCLMULQDQ/SHA masked off: 6 speed runs per round) are
measured by the tool's bench (its Python API, the real engine, the tool's own lock and
accounting, no settling: this measures *detection*) first on the quiet host, then under
each disturbance:

a. ``siblings``     busy loops in sibling containers at Docker's default CPU weight, one
                    per CPU;
b. ``host-loops``   busy loops on the host (outside Docker), one per CPU;
c. ``second-bench`` a second ``invoke matrix bench`` on another results tree, started
                    just before (the host lock must make them take turns: their speed
                    runs are checked for overlap);
d. ``build``        an OpenSSL build of a new variant by ``invoke matrix build`` on the
                    same engine, started just before (the bench must wait for the build
                    step, or the build pause while the bench measures).

Every attempt's figure is classified against the quiet median of its cell: ``ok`` and
within 5 %, ``flagged`` (any status other than ok: ``contended`` here), or ``ok`` but
further off (the goal: none). On the quiet host: the share flagged (goal <= 5 %).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from openssl_matrix.engine.backend import DockerBackend
from openssl_matrix.engine.hostlock import HostLock, engine_key
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.model import Mask, Suite
from openssl_matrix.measure import hostacct
from openssl_matrix.measure.session import Bencher
from openssl_matrix.results.records import read_json
from openssl_matrix.results.tree import ResultsTree

#: The checkout: its matrix.yaml, tasks.py and docs (the package is imported as installed).
ROOT = Path(__file__).resolve().parent.parent

VARIANT = "1.1.1w-asm-x86_64"
ALGORITHMS = ("aes-256-cbc", "sha256", "md5")
TOLERANCE = 0.05
CASES = ("quiet", "siblings", "host-loops", "second-bench", "build")
BUSY_LOOP = "while :; do :; done"
LABEL = "openssl-matrix.disturb"


def suite() -> Suite:
    return Suite(name="disturb", description="benchmarks/disturb.py", algorithms=ALGORITHMS,
                 evp=True, seconds=1, bytes=8192,
                 masks=(Mask("native", None),
                        Mask("no-aesni-sha", None, ("aesni", "pclmulqdq", "sha"))))


# ----------------------------------------------------------------------------------
# pure helpers (tested in tests/test_disturb.py)


def cell_key(fig: Mapping[str, Any]) -> tuple[Any, ...]:
    return (fig.get("invocation"), fig.get("algorithm"), fig.get("block_size"))


def quiet_reference(figures: Iterable[Mapping[str, Any]]) -> dict[tuple[Any, ...], float]:
    """The median of each cell's ``ok`` figures on the quiet host."""
    values: dict[tuple[Any, ...], list[float]] = {}
    for f in figures:
        if f.get("status") == "ok" and isinstance(f.get("bytes_per_s"), (int, float)):
            values.setdefault(cell_key(f), []).append(float(f["bytes_per_s"]))
    return {k: statistics.median(v) for k, v in values.items()}


@dataclass
class Counts:
    ok_close: int = 0
    flagged: int = 0
    ok_off: int = 0
    no_reference: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    off: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.ok_close + self.flagged + self.ok_off + self.no_reference

    def text(self) -> str:
        why = ", ".join(f"{n} {s}" for s, n in sorted(self.reasons.items()))
        return (f"{self.total} figures: {self.ok_close} ok within {TOLERANCE:.0%}, "
                f"{self.flagged} flagged" + (f" ({why})" if why else "")
                + f", {self.ok_off} ok but further off"
                + (f" ({'; '.join(self.off[:3])})" if self.off else ""))


def classify(figures: Iterable[Mapping[str, Any]], reference: Mapping[tuple[Any, ...], float],
             tolerance: float = TOLERANCE) -> Counts:
    """Each figure against its cell's quiet median (see the module docstring)."""
    c = Counts()
    for f in figures:
        status = str(f.get("status"))
        if status != "ok":
            c.flagged += 1
            c.reasons[status] = c.reasons.get(status, 0) + 1
            continue
        ref = reference.get(cell_key(f))
        value = f.get("bytes_per_s")
        if ref is None or not isinstance(value, (int, float)):
            c.no_reference += 1
            continue
        off = value / ref - 1
        if abs(off) <= tolerance:
            c.ok_close += 1
        else:
            c.ok_off += 1
            c.off.append(f"{f.get('invocation')} {off:+.1%}")
    return c


def overlaps(a: Sequence[tuple[str, str]], b: Sequence[tuple[str, str]]) -> float:
    """Seconds during which an interval of ``a`` and one of ``b`` (ISO times) overlap."""
    def ts(x: str) -> float:
        return datetime.fromisoformat(x).timestamp()
    total = 0.0
    for s1, e1 in a:
        for s2, e2 in b:
            total += max(0.0, min(ts(e1), ts(e2)) - max(ts(s1), ts(s2)))
    return total


def speed_intervals(tree: ResultsTree) -> list[tuple[str, str]]:
    """(started, ended) of every speed run in a results tree."""
    out = []
    for ref in tree.runs():
        for inv in ref.meta.get("invocations") or []:
            if inv.get("started") and inv.get("ended"):
                out.append((str(inv["started"]), str(inv["ended"])))
    return out


def tree_figures(tree: ResultsTree) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for ref in tree.runs():
        if not ref.complete:
            continue
        figs = read_json(ref.path / "figures.json")
        if isinstance(figs, list):
            out += figs
    return out


# ----------------------------------------------------------------------------------
# disturbances (each removes exactly what it started)


@contextlib.contextmanager
def sibling_loops(n: int, nonce: str) -> Iterator[str]:
    names = [f"openssl-matrix-disturb-{nonce}-{i}" for i in range(n)]
    for name in names:
        subprocess.run(["docker", "run", "-d", "--rm", "--name", name, "--label",
                        f"{LABEL}={nonce}", "--network", "none", "debian:bookworm", "sh", "-c",
                        BUSY_LOOP], check=True, capture_output=True, text=True)
    try:
        yield f"{n} busy-loop container(s) at the default CPU weight"
    finally:
        subprocess.run(["docker", "rm", "-f", *names], capture_output=True, check=False)


@contextlib.contextmanager
def host_loops(n: int) -> Iterator[str]:
    procs = [subprocess.Popen(["sh", "-c", BUSY_LOOP]) for _ in range(n)]
    try:
        yield f"{n} busy loop(s) on the host"
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _invoke(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "invoke", "matrix", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


@contextlib.contextmanager
def second_bench(matrix_path: Path, other: ResultsTree, rounds: int) -> Iterator[str]:
    proc = _invoke("bench", "--cpu=auto", "--suite=disturb", f"--only={VARIANT}",
                   f"--repeat={rounds}", "--settle=0", f"--matrix={matrix_path}",
                   f"--results={other.root}")
    _wait_for_lock_holder(other)
    try:
        yield f"`invoke matrix bench` on {other.root} (pid {proc.pid}), started first"
    finally:
        out, _ = proc.communicate(timeout=1800)
        (other.root / "bench.log").write_text(out)


def _wait_for_lock_holder(tree: ResultsTree, timeout: float = 60) -> None:
    """Until the other process has taken its results tree's lock (it then goes for the
    host lock at once)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        lock = tree.root / ".lock"
        if lock.is_file() and lock.read_text().strip():
            time.sleep(1.0)
            return
        time.sleep(0.2)


@contextlib.contextmanager
def tool_build(matrix_path: Path, results: Path) -> Iterator[str]:
    proc = _invoke("build", f"--matrix={matrix_path}", f"--results={results}")
    time.sleep(3.0)  # the build is under way (its first step holds the engine)
    try:
        yield f"`invoke matrix build` of a new variant (pid {proc.pid}), started first"
    finally:
        out, _ = proc.communicate(timeout=3600)
        (results / "build-output.log").write_text(out)


def _run_module() -> Any:
    """benchmarks/run.py as a module (its cold-build helpers serve the build case)."""
    import importlib.util

    if "benchmarks_run" in sys.modules:
        return sys.modules["benchmarks_run"]
    spec = importlib.util.spec_from_file_location("benchmarks_run", ROOT / "benchmarks" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["benchmarks_run"] = module
    spec.loader.exec_module(module)
    return module


def disturb_matrix(base: Path, path: Path) -> Path:
    """The repository's matrix with the ``disturb`` suite (for the second bench's CLI)."""
    import yaml

    data = yaml.safe_load(base.read_text())
    s = suite()
    data.setdefault("suites", {})["disturb"] = {
        "algorithms": list(s.algorithms), "evp": True, "seconds": 1, "bytes": 8192,
        "masks": [{"name": "native"},
                  {"name": "no-aesni-sha", "disable": ["aesni", "pclmulqdq", "sha"]}]}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# ----------------------------------------------------------------------------------
# the run


def run(out: Path, *, quick: bool = False, cases: Sequence[str] = CASES,
        say: Callable[[str], None] = print,
        cleanup: Callable[[str], object] | None = None) -> dict[str, Any]:
    """Measure every case; ``cleanup(nonce)`` removes the build case's stage images."""
    backend = DockerBackend()
    engine = backend.engine_info()
    matrix_path = disturb_matrix(ROOT / "matrix.yaml", out / "matrix.yaml")
    m = load_matrix(matrix_path, default_urls=default_urls)
    [v] = [x for x in m.variants if x.id == VARIANT]
    s = m.suite("disturb")
    ncpu = os.cpu_count() or 2
    quiet_rounds, rounds = (3, 2) if quick else (5, 3)
    nonce = secrets.token_hex(4)
    data: dict[str, Any] = {"started": _now(), "variant": VARIANT, "suite": asdict(s),
                            "quiet_rounds": quiet_rounds, "rounds": rounds, "cases": {},
                            "thresholds": {"own_share_min": hostacct.OWN_SHARE_MIN,
                                           "foreign_cores_max": hostacct.FOREIGN_CORES_MAX,
                                           "steal_cores_max": hostacct.STEAL_CORES_MAX}}
    Builder(m, backend, ResultsTree(out / "quiet"), workdir=out / "work").build([v])

    lock = HostLock(engine_key(engine))

    def measure(name: str, n: int,
                disturbance: contextlib.AbstractContextManager[str] | None = None,
                ) -> tuple[ResultsTree, str]:
        """Bench the cells into tree ``name``; a ``disturbance`` starts only once this
        process holds the engine (so it never burns CPU while the bench waits)."""
        tree = ResultsTree(out / name)
        if tree.root != out / "quiet":
            Builder(m, backend, tree, workdir=out / "work").build([v])
        tree.lock()
        try:
            if disturbance is None:  # the bench takes the host lock itself
                bencher = Bencher(m, backend, tree, engine=engine, git_commit=None, settle=0,
                                  max_attempts=n)
                bencher.bench([v], s, "auto", repeat=n)
                return tree, "nothing else started"
            with lock.measuring(f"disturbance case {name}", say=say), disturbance as what:
                bencher = Bencher(m, backend, tree, engine=engine, git_commit=None, settle=0,
                                  max_attempts=n, take_host_lock=False)
                bencher.bench([v], s, "auto", repeat=n)
                return tree, what
        finally:
            tree.unlock()

    say(f"▸ quiet: {quiet_rounds} rounds of {VARIANT} · {', '.join(ALGORITHMS)}")
    t0 = time.monotonic()
    quiet, _ = measure("quiet", quiet_rounds)
    qfigs = tree_figures(quiet)
    ref = quiet_reference(qfigs)
    counts = classify(qfigs, ref)
    data["cases"]["quiet"] = _case(qfigs, counts, "nothing else started", t0, quiet)
    say(f"  quiet: {counts.text()}")
    for case in cases:
        if case == "quiet":
            continue
        t0 = time.monotonic()
        extra: dict[str, Any] = {}
        say(f"▸ {case}")
        if case in ("siblings", "host-loops"):
            loops = sibling_loops(ncpu, nonce) if case == "siblings" else host_loops(ncpu)
            tree, what = measure(case, rounds, loops)
        elif case in ("second-bench", "build"):
            ctx: contextlib.AbstractContextManager[str]
            if case == "second-bench":
                other = ResultsTree(out / "second-bench-other")
                Builder(m, backend, other, workdir=out / "work").build([v])
                ctx = second_bench(matrix_path, other, rounds)
            else:
                version = v.version.version
                # a variant no cache has seen, as the cold-build section of run.py makes it
                cold = out / "cold.yaml"
                cold.write_text(_run_module().cold_matrix_yaml(version, str(v.version.sha256),
                                                               nonce))
                ctx = tool_build(cold, out / "build-results")
            with ctx as what:  # started first: the bench must take turns with it
                tree, _ = measure(case, rounds)
        else:
            raise ValueError(f"unknown case {case}")
        if case == "second-bench":
            mine, theirs = speed_intervals(tree), speed_intervals(other)
            extra = {"overlap_s": round(overlaps(mine, theirs), 3),
                     "other_speed_runs": len(theirs),
                     "other_figures": classify(tree_figures(other), ref).text()}
        if case == "build":
            extra = {"build_log": str(out / "build-results" / "build-output.log")}
        figs = tree_figures(tree)
        counts = classify(figs, ref)
        data["cases"][case] = {**_case(figs, counts, what, t0, tree), **extra}
        say(f"  {case}: {counts.text()}" + (f"; overlap {extra['overlap_s']} s"
                                            if "overlap_s" in extra else ""))
    data["ended"] = _now()
    for record in (out / "build-results" / "_builds").glob("*/*/build.json"):
        built = read_json(record) or {}
        if nonce in str(built.get("configure_line")) and built.get("tag"):  # ours alone
            subprocess.run(["docker", "rmi", "-f", str(built["tag"])], capture_output=True,
                           check=False)
    if cleanup is not None:
        cleanup(nonce)
    (out / "disturb.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    return data


def _case(figs: list[dict[str, Any]], counts: Counts, what: str, t0: float,
          tree: ResultsTree) -> dict[str, Any]:
    shares = [float(f["own_share"]) for f in figs if isinstance(f.get("own_share"), float)]
    foreign = [float(f["foreign_cores"]) for f in figs
               if isinstance(f.get("foreign_cores"), float)]
    return {"disturbance": what, "seconds": round(time.monotonic() - t0, 1),
            "counts": asdict(counts), "text": counts.text(), "tree": str(tree.root),
            "own_share": [min(shares), max(shares)] if shares else None,
            "foreign_cores": [min(foreign), max(foreign)] if foreign else None}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def table(data: Mapping[str, Any]) -> str:
    lines = ["| case | disturbance | figures | ok, within 5 % of quiet | flagged (why) | "
             "ok but further off | own CPU share | others' cores |",
             "|---|---|---|---|---|---|---|---|"]
    for name, c in data["cases"].items():
        k = c["counts"]
        why = ", ".join(f"{n} {s}" for s, n in sorted(k["reasons"].items())) or "—"
        total = k["ok_close"] + k["flagged"] + k["ok_off"] + k["no_reference"]
        share = c.get("own_share")
        foreign = c.get("foreign_cores")
        extra = f"; overlap with the other bench {c['overlap_s']} s" if "overlap_s" in c else ""
        lines.append(
            f"| {name} | {c['disturbance']}{extra} | {total} | {k['ok_close']} | "
            f"{k['flagged']} ({why}) | {k['ok_off']} | "
            + (f"{share[0]:.2f}–{share[1]:.2f}" if share else "—") + " | "
            + (f"{foreign[0]:.2f}–{foreign[1]:.2f}" if foreign else "—") + " |")
    return "\n".join(lines)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--quick", action="store_true", help="3 quiet and 2 disturbed rounds")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--out", default="")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # a kill still removes the disturbances
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="openssl-matrix-disturb-"))
    out.mkdir(parents=True, exist_ok=True)
    data = run(out, quick=args.quick, cases=[c for c in args.cases.split(",") if c],
               cleanup=_run_module().remove_nonce_images)
    print(table(data))
    print(f"\nall samples: {out / 'disturb.json'}")
    bad = sum(c["counts"]["ok_off"] for n, c in data["cases"].items() if n != "quiet")
    q = data["cases"]["quiet"]["counts"]
    quiet_total = q["ok_close"] + q["flagged"] + q["ok_off"] + q["no_reference"]
    wrong = q["flagged"] / quiet_total if quiet_total else 1.0
    print(f"goals: no disturbed figure ok but further off than {TOLERANCE:.0%}: {bad} "
          f"({'met' if bad == 0 else 'MISSED'}); quiet figures flagged {wrong:.0%} "
          f"({'met' if wrong <= 0.05 else 'MISSED'}, goal <= 5 %)")
    return 0 if bad == 0 and wrong <= 0.05 else 2


if __name__ == "__main__":
    sys.exit(main())
