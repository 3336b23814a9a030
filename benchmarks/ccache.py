#!/usr/bin/env python3
"""Compiler-cache benchmark: what the shared ccache saves a build (issue 33, item 5).

Run from anywhere (it uses the checkout it lives in)::

    python3 benchmarks/ccache.py [--sections step,four] [--out DIR] [--keep]

Real builds on the local Docker engine, through the tool's Builder, in a namespace of
their own (images ``openssl-matrix-bench/<variant>:<digest>``, compiler caches
``bench-<nonce>-ccache-<series>``), so nothing the user built is rebuilt or reused. Each
row is appended to ``<out>/rows.jsonl`` as it is measured; a build's seconds are its own
(the Builder's record: not the wait for another bench's measurement lock):

``step``   one tree built three times: the 3.0.20 release tarball with a line appended
           to ``crypto/evp/evp_lib.c`` (a new function) built cold without a cache (the
           classic builder, as ``invoke matrix build``), then cold into an empty
           cache (BuildKit, what the cache costs a first build), then the same tree
           with that function changed (a bisection's next step: one source file
           differs) with the cache the first build filled;
``four``   the default matrix's four builds (1.1.1w and 3.0.20, asm and no-asm) with a
           fresh shared cache, then without one.

Every tarball is the release's, repacked with a file naming this run (``BENCH-NONCE``,
compiled into nothing), so the engine's layer caches, classic or BuildKit, hold none
of its steps. The goal (issue 33): a step's build after the first takes at most a
quarter of a cold build of the same tree. Builds take their usual turn with benches
on the engine (the host lock), and the table says how busy the host was: the tool's
own accounting of /proc/stat (``hostacct``) over 2 s before each build (other work
only: this script is idle then) and over the build (its own work included).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import secrets
import shutil
import sys
import tarfile
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from openssl_matrix.engine.backend import DockerBackend  # noqa: E402
from openssl_matrix.images.build import Builder  # noqa: E402
from openssl_matrix.images.sources import default_urls, fetch_source_info  # noqa: E402
from openssl_matrix.matrix.load import load_matrix  # noqa: E402
from openssl_matrix.measure import hostacct  # noqa: E402
from openssl_matrix.results.tree import ResultsTree  # noqa: E402

PREFIX = "openssl-matrix-bench"
STEP_FILE = "crypto/evp/evp_lib.c"
FOUR = ("1.1.1w-asm-x86_64", "1.1.1w-no-asm-x86_64", "3.0.20-asm-x86_64",
        "3.0.20-no-asm-x86_64")
GOAL = 0.25


@dataclass
class Row:
    section: str
    what: str
    variant: str
    cache: str  # "none", "empty", "warm", "shared"
    status: str
    seconds: float | None
    cacheable: int | None
    hits: int | None
    others_busy_cores: float | None
    busy_cores_during: float | None
    loadavg: float


def release_tarball(version: str) -> Path:
    """The official tarball, from the tool's source cache (verified against the
    project matrix's checksum, or the catalogue's)."""
    m = load_matrix(ROOT / "matrix.yaml", default_urls=default_urls)
    spec = next(v for v in m.versions if v.version == version)
    return Path(fetch_source_info(spec.version, spec.sha256, spec.urls,
                                  local_dirs=m.sources_dirs,
                                  lock_file=m.path.with_suffix(".lock")).path)


def step_code(nonce: str, step: int) -> bytes:
    return (f"\n/* openssl-matrix benchmarks/ccache.py: a step's change ({nonce}) */\n"
            f"int openssl_matrix_bench_step(void);\n"
            f"int openssl_matrix_bench_step(void) {{ return {step}; }}\n").encode()


def repack(src: Path, dest: Path, version: str, nonce: str, step: int | None) -> str:
    """``src`` with ``BENCH-NONCE`` added and, for a step, code appended to STEP_FILE;
    returns the new tarball's sha256."""
    top = f"openssl-{version}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(src, "r:gz") as tin, gzip.open(dest, "wb", compresslevel=1) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tout:
        for member in tin:
            data = tin.extractfile(member) if member.isfile() else None
            if data is not None and step is not None and member.name == f"{top}/{STEP_FILE}":
                body = data.read() + step_code(nonce, step)
                member.size = len(body)
                tout.addfile(member, _bytes(body))
            else:
                tout.addfile(member, data)
        info = tarfile.TarInfo(f"{top}/BENCH-NONCE")
        text = f"benchmarks/ccache.py run {nonce}\n".encode()
        info.size, info.mtime = len(text), int(time.time())
        tout.addfile(info, _bytes(text))
    return hashlib.sha256(dest.read_bytes()).hexdigest()


def _bytes(data: bytes) -> Any:
    import io
    return io.BytesIO(data)


def write_matrix(folder: Path, tarballs: dict[str, tuple[str, Path]]) -> Path:
    lines = ["schema: 1", "versions:"]
    for version, (sha, path) in tarballs.items():
        lines += [f"  {version}:", f"    sha256: {sha}", f"    urls: [file://{path}]",
                  "    official: false"]
    lines += ["axes:", "  asm: [asm, no-asm]", "suites:", "  quick:",
              "    algorithms: [aes-128-cbc]", "    evp: true", "    seconds: 1",
              "    bytes: 8192", "    masks:", "      - name: native", ""]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "matrix.yaml"
    path.write_text("\n".join(lines))
    return path


def build(backend: DockerBackend, matrix: Path, out: Path, variants: tuple[str, ...], *,
          section: str, what: str, cache: str, namespace: str | None) -> list[Row]:
    """Build ``variants`` one after another (forced: the tags are this run's), each timed
    by the Builder's own record, with the host's state around it."""
    m = load_matrix(matrix, default_urls=default_urls)
    rows = []
    for vid in variants:
        [v] = [x for x in m.select(vid, every=True) if x.id == vid]
        tree = ResultsTree(out / "results" / f"{section}-{what}".replace(" ", "-"))
        builder = Builder(m, backend, tree, workdir=out / "work", tag_prefix=PREFIX,
                          compiler_cache=namespace)
        quiet = hostacct.sample_quiet(2.0)
        before = hostacct.read_host_stat()
        [o] = builder.build([v], force=True)
        acct = hostacct.accounting(before, hostacct.read_host_stat())
        cc = (o.record or {}).get("compiler_cache") or {}
        rows.append(Row(section, what, vid, cache, o.status,
                        round(o.seconds, 1) if o.status == "built" else None,
                        cc.get("cacheable"), cc.get("hits"), round(quiet.busy_cores, 2),
                        None if acct is None else round(acct.busy_cores, 2),
                        round(os.getloadavg()[0], 2)))
        print(f"  {section}: {what}: {vid}: {o.status} {o.seconds:.0f}s"
              + (f", ccache hits {cc.get('hits')}/{cc.get('cacheable')}" if cc else "")
              + f" (others' busy cores before: {quiet.busy_cores:.2f})", flush=True)
        if o.status != "built":
            print(f"    {o.error}  log: {o.log_path}", flush=True)
        with (out / "rows.jsonl").open("a", encoding="utf-8") as f:
            f.write(json.dumps(asdict(rows[-1])) + "\n")
    return rows


def section_step(backend: DockerBackend, out: Path, nonce: str,
                 releases: dict[str, Path]) -> list[Row]:
    src = releases["3.0.20"]
    first_dir, next_dir = out / "src-step0", out / "src-step1"
    sha0 = repack(src, first_dir / "openssl-3.0.20.tar.gz", "3.0.20", nonce, 0)
    sha1 = repack(src, next_dir / "openssl-3.0.20.tar.gz", "3.0.20", nonce, 1)
    first = write_matrix(out / "m-step0", {"3.0.20": (sha0, first_dir / "openssl-3.0.20.tar.gz")})
    after = write_matrix(out / "m-step1", {"3.0.20": (sha1, next_dir / "openssl-3.0.20.tar.gz")})
    vid = ("3.0.20-asm-x86_64",)
    namespace = f"bench-{nonce}-step"
    return [*build(backend, first, out, vid, section="step", what="cold, no cache",
                   cache="none", namespace=None),
            *build(backend, first, out, vid, section="step", what="cold, empty cache",
                   cache="empty", namespace=namespace),
            *build(backend, after, out, vid, section="step", what="step (one file changed)",
                   cache="warm", namespace=namespace)]


def section_four(backend: DockerBackend, out: Path, nonce: str,
                 releases: dict[str, Path]) -> list[Row]:
    tarballs = {}
    for version in ("1.1.1w", "3.0.20"):
        dest = out / "src-four" / f"openssl-{version}.tar.gz"
        tarballs[version] = (repack(releases[version], dest, version, nonce, None), dest)
    matrix = write_matrix(out / "m-four", tarballs)
    return [*build(backend, matrix, out, FOUR, section="four", what="shared cache",
                   cache="shared", namespace=f"bench-{nonce}-four"),
            *build(backend, matrix, out, FOUR, section="four", what="no cache",
                   cache="none", namespace=None)]


def table(rows: list[Row]) -> list[str]:
    out = ["| section | build | variant | seconds | ccache hits / cacheable calls | "
           "others' busy cores before | busy cores during |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        hits = "—" if r.cacheable is None else f"{r.hits} / {r.cacheable}"
        secs = "failed" if r.seconds is None else f"{r.seconds:.0f}"
        out.append(f"| {r.section} | {r.what} | {r.variant} | {secs} | {hits} | "
                   f"{r.others_busy_cores} | {r.busy_cores_during} |")
    totals: dict[str, float] = {}
    for what in ("shared cache", "no cache"):
        four = [r.seconds for r in rows if r.section == "four" and r.what == what]
        if len(four) == len(FOUR) and all(s is not None for s in four):
            totals[what] = sum(s for s in four if s is not None)
            out.append(f"| four | **total, {what}** | all four | {totals[what]:.0f} | | | |")
    out += four_totals(rows, totals)
    cold = [r for r in rows if r.section == "step" and r.what == "cold, no cache"]
    step = [r for r in rows if r.section == "step" and r.what.startswith("step")]
    if cold and step and cold[0].seconds and step[0].seconds:
        ratio = step[0].seconds / cold[0].seconds
        out.append("")
        out.append(f"step / cold: {ratio:.2f} (goal ≤ {GOAL:.2f}: "
                   f"{'met' if ratio <= GOAL else 'NOT met'})")
    return out


def four_totals(rows: list[Row], totals: dict[str, float]) -> list[str]:
    """The line issue 33 asks for: the four default builds' total with the shared cache
    and without it, and their ratio; or which of them did not build (no total then)."""
    if not any(r.section == "four" for r in rows):
        return []
    parts = []
    for what in ("shared cache", "no cache"):
        mine = [r for r in rows if r.section == "four" and r.what == what]
        failed = [r.variant for r in mine if r.seconds is None]
        if what in totals:
            parts.append(f"{what} {totals[what]:.0f} s")
        elif failed:
            parts.append(f"{what}: no total ({', '.join(failed)} did not build)")
        else:
            parts.append(f"{what}: not measured ({len(mine)} of {len(FOUR)} built)")
    line = "four default builds' total: " + "; ".join(parts)
    if len(totals) == 2 and totals["no cache"] > 0:
        line += f" (shared / none: {totals['shared cache'] / totals['no cache']:.2f})"
    return ["", line]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", default="step,four")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--keep", action="store_true", help="keep this run's images")
    args = ap.parse_args(argv)
    nonce = secrets.token_hex(4)
    out = args.out or Path("/tmp") / f"openssl-matrix-ccache-bench-{nonce}"
    out.mkdir(parents=True, exist_ok=True)
    backend = DockerBackend()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    print(f"ccache benchmark {nonce} on {os.cpu_count()} CPUs, started {started}; "
          f"work in {out}", flush=True)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    releases = {v: release_tarball(v) for v in ("1.1.1w", "3.0.20")}
    # the repacked trees carry release names: a source cache of their own, so the user's
    # cached release tarballs are never replaced by them
    os.environ["OPENSSL_MATRIX_CACHE"] = str(out / "cache")
    rows: list[Row] = []
    try:
        for name in sections:
            fn = {"step": section_step, "four": section_four}[name]
            rows += fn(backend, out, nonce, releases)
    finally:
        if not args.keep:
            for image in backend.client.images.list():
                for tag in image.tags:
                    if tag.startswith(f"{PREFIX}/"):
                        backend.remove_image(tag)
            shutil.rmtree(out / "work", ignore_errors=True)
    print(f"\nended {datetime.now(timezone.utc).isoformat(timespec='seconds')}")
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
