#!/usr/bin/env python3
"""Parse and import time, and peak memory, for pasted reports of 2,000 and 20,000 runs.

    python benchmarks/pastes.py              # 2,000 and 20,000 runs
    python benchmarks/pastes.py --runs 500   # other sizes

The pastes are made by repetition from real ``openssl speed`` output kept in
tests/fixtures/speed (1.1.1w and 3.0.20, ``-evp -elapsed``, as the tool's bench recorded
them): copy *k* of a fixture has ``(copy k)`` added to its ``built on:`` line, so that no
copy is folded as a quoted duplicate of another, and every figure stays as printed.

For each size it prints the paste's size, ``parse`` (``parsing.parse_paste``) time and
peak memory (tracemalloc, in a second parse: the memory Python allocated for it, the
parsed runs included), and
``import`` (``invoke matrix import``'s handler into a fresh results tree) time and the
bytes it wrote, with the host accounting of the run (the load average before and after;
``contended`` when it is above the number of CPUs). Numbers go to stdout only.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FIXTURES = ROOT / "tests" / "fixtures" / "speed"
SOURCES = ("real-1.1.1w/evp-elapsed.stdout", "real-3.0.20/evp-elapsed.stdout")


def paste(runs: int) -> str:
    """A pasted report of ``runs`` real speed runs (see the module's docstring)."""
    base = [(FIXTURES / rel).read_text(encoding="utf-8") for rel in SOURCES]
    parts = []
    for k in range(runs):
        text = base[k % len(base)]
        parts.append(text.replace("built on: ", f"built on: (copy {k}) ", 1))
    return "\n".join(parts)


def _load() -> str:
    one, _five, _ = os.getloadavg()
    cpus = os.cpu_count() or 1
    return f"load {one:.2f} on {cpus} CPUs ({'contended' if one > cpus else 'ok'})"


@dataclass
class Figures:
    runs: int
    bytes: int
    parse_s: float
    parse_peak: int
    import_s: float
    written: int
    host: str


def measure(runs: int, work: Path) -> Figures:
    from openssl_matrix.cli import commands
    from openssl_matrix.parse import parse_paste

    text = paste(runs)
    src = work / f"paste-{runs}.txt"
    src.write_text(text, encoding="utf-8")
    before = _load()
    t0 = time.perf_counter()
    parsed = parse_paste(text)
    parse_s = time.perf_counter() - t0
    assert len(parsed) == runs, (len(parsed), runs)
    del parsed
    tracemalloc.start()  # a second parse for the memory: tracemalloc slows it down 10×
    parse_paste(text)
    _, parse_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    tree = work / f"results-{runs}"
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = commands.cmd_import(target=str(src), matrix="", results=str(tree),
                                   as_=f"bench-{runs}")
    import_s = time.perf_counter() - t0
    assert code == 0
    written = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())
    return Figures(runs, len(text.encode()), parse_s, parse_peak, import_s, written,
                   f"{before} → {_load()}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, nargs="*", default=[2000, 20000])
    args = ap.parse_args(argv)
    print(f"{'runs':>7} {'paste':>9} {'parse':>8} {'peak mem':>10} {'× paste':>8} "
          f"{'import':>8} {'written':>10}  host")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.runs:
            r = measure(n, Path(tmp))
            print(f"{n:>7} {r.bytes / 1e6:>7.2f}MB {r.parse_s:>7.2f}s "
                  f"{r.parse_peak / 1e6:>8.1f}MB {r.parse_peak / r.bytes:>7.1f}× "
                  f"{r.import_s:>7.2f}s {r.written / 1e6:>8.1f}MB  {r.host}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
