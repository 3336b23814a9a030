"""The release sweep: build every OpenSSL release in a folder of tarballs and print the table.

    python3 benchmarks/sweep.py --tarballs DIR [--arch x86_64,i386] [--asm asm,no-asm]
                                [--only '1.0.*'] [--results DIR] [--no-speed] [--record]
    python3 benchmarks/sweep.py --show        # the recorded table, building nothing
    python3 benchmarks/sweep.py --docs        # write it into docs/building.md and docs/releases.md

Each release found as ``openssl-<v>.tar.gz`` (or Debian's ``openssl_<v>.orig.tar.gz``) is
built the way ``invoke matrix build`` builds it (default base image debian:bookworm, the
compat patches, the source-stage checks), for x86_64 and i386, asm and no-asm unless
--arch/--asm say otherwise, one variant at a time, with the build seconds. What built
runs ``openssl speed -elapsed -evp aes-128-cbc`` at 8192-byte blocks --runs times
(default 3): a smoke check, not a measurement; the table gives the median ± the 95 %
half-width with the run count, and the tool's host accounting of the worst run (clean or
contended, and why). A tarball of a release with an official checksum on record must
match it; other trees are pinned in the sweep's own lock file and marked third-party. An
optional ``notes.yaml`` in the folder (version: where the tree came from) fills the
source column. ``--record`` stores the table in the package
(openssl_matrix/resources/sweep-table.json), which ``invoke matrix list`` reads. Builds and results
go under --results (default results-sweep/), never the main tree.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path

from openssl_matrix.sweep import sweep, table

#: The checkout: its matrix.yaml, tasks.py and docs (the package is imported as installed).
ROOT = Path(__file__).resolve().parent.parent


def declared_versions(matrix: Path) -> list[str]:
    """The versions a matrix file declares (none if there is no such file)."""
    if not matrix.is_file():
        return []
    from openssl_matrix.matrix.load import load_matrix

    return [v.version for v in load_matrix(matrix).versions]


def recorded_rows() -> list[table.Row]:
    return [table.Row.from_dict(r) for r in table.read_table()["rows"]]


def record(rows: list[table.Row], *, keep_tried: bool = False) -> None:
    """Merge ``rows`` into the recorded table (a "not tried" row, with ``keep_tried``,
    never replaces an outcome). Two sweeps may run at once (say, one building the old
    series at make -j1 beside one building 3.x): the read-merge-write holds a lock."""
    import fcntl
    import tempfile

    lock = Path(tempfile.gettempdir()) / "openssl-matrix-sweep-table.lock"
    with open(lock, "a", encoding="utf-8") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        table.write_table(table.merge_rows(recorded_rows(), rows, keep_tried=keep_tried),
                          host=socket.gethostname())


def write_docs(root: Path = ROOT) -> None:
    """The recorded table into docs/building.md, its per-release summary into
    docs/releases.md."""
    recorded = table.read_table()
    rows = [table.Row.from_dict(r) for r in recorded["rows"]]
    for path, name, body in (
            (root / "docs" / "building.md", "sweep-table",
             table.format_table(rows, when=recorded.get("swept_at"))),
            (root / "docs" / "releases.md", "sweep-releases", table.release_summary(rows))):
        path.write_text(table.replace_block(path.read_text(encoding="utf-8"), name, body),
                        encoding="utf-8")
        print(f"wrote the {name} block of {path}")


#: The on/off switches: (flag, help).
SWITCHES = (
    ("--show", "print the recorded table (openssl_matrix/resources/sweep-table.json), build "
               "nothing"),
    ("--docs", "write the recorded table into docs/building.md and its per-release summary "
               "into docs/releases.md (their sweep blocks), build nothing"),
    ("--resmoke", "build nothing: run the smoke check again (--runs runs, with host "
                  "accounting) for recorded built cells whose figure falls short: no "
                  "accounting, contended, or fewer runs (their images found through the "
                  "build records under --results; --only narrows it)"),
    ("--third-party", "also build trees whose bytes differ from their version's official "
                      "tarball (pinned in the sweep's own lock; marked)"),
    ("--no-speed", "skip the speed smoke check"),
    ("--record", "store the table in openssl_matrix/resources/sweep-table.json, each row as "
                 "soon as its cell is done"),
    ("--resume", "leave out the cells the recorded table already has built or failed (a "
                 "sweep cut short goes on where it stopped)"),
    ("--retry-failed", "with --resume: build the selected failed cells again (after a fix, "
                       "or with another tree of the release)"),
)


def main(argv: list[str] | None = None, *,
         plan_sweep: Callable[..., sweep.Plan] = sweep.plan_sweep) -> int:
    """The sweep's command line; ``plan_sweep``: what plans it from the flags (a test of
    the flags passes its own, which plans nothing)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tarballs", type=Path,
                        help="folder of openssl-<version>.tar.gz files")
    parser.add_argument("--arch", default=",".join(table.ARCHES),
                        help=f"x86_64,i386 (default {','.join(table.ARCHES)})")
    parser.add_argument("--asm", default="asm,no-asm", help="asm,no-asm (default both)")
    parser.add_argument("--only", default="", help="fnmatch patterns over versions, comma "
                        "separated ('1.0.*,3.5.7')")
    parser.add_argument("--results", type=Path, default=Path("results-sweep"))
    parser.add_argument("--matrix", type=Path, default=ROOT / "matrix.yaml",
                        help="its versions without a tarball in the folder are tabled as "
                        "not tried (default: the project's matrix.yaml)")
    parser.add_argument("--not-tried", metavar="REASON", default="",
                        help="build nothing: table the selected cells as not tried, for "
                        "REASON (recorded only where the table has no row for them yet)")
    parser.add_argument("--runs", type=int, default=sweep.SMOKE_RUNS,
                        help="speed runs per smoke check; the table gives their median, "
                        f"95 %% interval and count (default {sweep.SMOKE_RUNS})")
    for flag, text in SWITCHES:
        parser.add_argument(flag, action="store_true", help=text)
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs {args.runs}: give 1 or more (3 gives a figure its interval)")
    if args.show:
        recorded = table.read_table()
        print(table.format_table([table.Row.from_dict(r) for r in recorded["rows"]],
                                 when=recorded.get("swept_at")), end="")
        return 0
    if args.docs:
        write_docs()
        return 0
    if args.resmoke:
        patterns = [p for p in args.only.split(",") if p]
        rows = [r for r in recorded_rows()
                if not patterns or any(fnmatch.fnmatchcase(r.version, p) for p in patterns)]
        done = sweep.resmoke(rows, args.results, runs=args.runs,
                             on_row=lambda row: record([row]))
        print(table.format_table(done), end="")
        return 0
    if args.tarballs is None:
        parser.error("--tarballs DIR is required (or --show, --docs)")
    arches = [a for a in args.arch.split(",") if a]
    asms = [a for a in args.asm.split(",") if a]
    bad = [a for a in arches if a not in table.ARCHES] + [a for a in asms if a not in table.ASMS]
    if bad or not args.tarballs.is_dir():
        print(f"sweep: bad arguments: {', '.join(bad) or f'{args.tarballs} is not a folder'}",
              file=sys.stderr)
        return 10
    plan = plan_sweep(args.tarballs, args.results / "_sweep", arches=arches, asms=asms,
                      only=[p for p in args.only.split(",") if p],
                      declared=declared_versions(args.matrix),
                      third_party=args.third_party,
                      cache_dir=Path(os.environ["OPENSSL_MATRIX_CACHE"])
                      if os.environ.get("OPENSSL_MATRIX_CACHE") else None)
    print(f"sweep: {len(plan.variants)} variant(s) to build from {args.tarballs} "
          f"(matrix {plan.matrix_path})", flush=True)
    if args.not_tried:
        rows = [*plan.skipped, *sweep.not_tried(plan, args.not_tried)]
    else:
        skip = table.tried_cells(recorded_rows(), failed=not args.retry_failed) \
            if args.resume else set()
        if skip & set(plan.variants):
            print(f"sweep: resuming: {len(skip & set(plan.variants))} cell(s) already in "
                  "the recorded table are left out", flush=True)
        rows = sweep.run_sweep(plan, args.results, speed=not args.no_speed, skip=skip,
                               runs=args.runs,
                               on_row=(lambda row: record([row])) if args.record else None)
    print(table.format_table(rows))
    if args.record:
        record(rows, keep_tried=True)
        print(f"recorded in {table.TABLE_FILE}")
    return 1 if any(r.status == "fails" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
