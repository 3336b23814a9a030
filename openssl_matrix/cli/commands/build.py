"""``invoke matrix build``: fetch and verify sources, build the variants' images (on a
profile's engine; with several profiles, on each of their engines at once)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openssl_matrix.cli.paths import results_tree
from openssl_matrix.cli.shared import (
    EngineFactory,
    backend_for,
    bounded,
    docker_engine,
    endbr32_of,
    lab,
    matrix_of,
)
from openssl_matrix.cli.table import EVERY, ONLY, PLAIN_TCP, Command, Flag, terminate_as_interrupt
from openssl_matrix.core import log
from openssl_matrix.core.errors import BuildError, FatalError
from openssl_matrix.engine.buildclaims import POLL
from openssl_matrix.engine.ship import Peer, Shipper, check_mode, check_registry
from openssl_matrix.images.build import Builder
from openssl_matrix.lab.run import Launcher, run_peers, split_cpus
from openssl_matrix.matrix.model import Matrix
from openssl_matrix.results.tree import lab_worker

COMMAND = Command("build", "fetch and verify sources, build the variants' images", flags=(
    ONLY, EVERY,
    Flag("jobs", 0, "how many variants to build at once (default 1)", low=1,
         unset="one variant at a time"),
    Flag("force", False, "rebuild even if up to date"),
    Flag("cpu", "", "a profile with docker_host builds on that machine's Docker engine; "
         "several, comma separated (--cpu=a,b), build on each engine at once"),
    Flag("ccache", False, "compile through a shared compiler cache: ccache (Debian's, in "
         "an image made once from the toolchain) in a BuildKit cache mount per release "
         "series, outside the images and their content hash, so the next build of the "
         "series recompiles only what changed (docs/building.md)"),
    Flag("images", "", "how a missing image reaches a profile's engine: build (build it "
         "there), ship (from the local engine, which holds it), auto (the default: "
         "whichever costs less, by the build time on record against the measured transfer "
         "rate)"),
    Flag("registry", "", "ship images by push and pull through this registry "
         "(HOST:PORT[/PATH]) instead of streaming docker save into docker load"),
    PLAIN_TCP,
))


def run(*, target: str, matrix: str, results: str, only: str, jobs: int | None,
       force: bool, cpu: str, all: bool = False, allow_plain_tcp: bool = False,
       images: str = "", registry: str = "", ccache: bool = False,
       engine: EngineFactory = docker_engine, launcher: Launcher | None = None,
       claim_poll: float = POLL) -> int:
    n_jobs = bounded("--jobs", jobs or 1, 1, 64)
    mode = check_mode(images)
    registry = check_registry(registry, mode) or ""
    m = matrix_of(matrix)
    variants = m.select(only or None, every=all)
    cpus = split_cpus(cpu)
    if len(cpus) > 1:
        return lab("build", m, cpus, {
            "matrix": matrix, "results": results, "only": only, "jobs": jobs, "force": force,
            "all": all, "allow_plain_tcp": allow_plain_tcp, "images": images,
            "registry": registry, "ccache": ccache}, results, launcher=launcher)
    backend = backend_for(m, cpu, allow_plain_tcp, engine)
    tree = results_tree(results, matrix)
    shipper = Shipper(backend, backend.engine_info(), mode, _peers(m, cpu, allow_plain_tcp, engine),
                      tree.ships, registry=registry or None)
    in_lab = lab_worker()
    builder = Builder(m, backend, tree, images=shipper,
                      engine_tag=(cpu or "auto") if in_lab else None,
                      claims=in_lab and bool(run_peers()), claim_poll=claim_poll,
                      compiler_cache="openssl-matrix" if ccache else None)
    with terminate_as_interrupt():
        outcomes = builder.build(variants, jobs=n_jobs, force=force)
    by_id = {v.id: v for v in variants}
    print("\nbuild summary")
    width = max(len(o.variant) for o in outcomes)
    for o in outcomes:
        mark = {"built": "✓ built", "up-to-date": "✓ up to date", "shipped": "✓ shipped",
                "failed": "✕ FAILED"}[o.status]
        extra = f"{o.seconds:.0f}s" if o.status in ("built", "shipped") else ""
        endbr = o.record.get("endbr32") if o.record else None
        print(f"  {o.variant:<{width}}  {mark:<14} {extra:>6}  {o.tag or ''}"
              + (f"  endbr32={endbr}" if endbr is not None else ""))
        warning = endbr32_of(by_id.get(o.variant), o.record)
        if warning:
            print(f"      ⚠ {warning}")
        if o.status == "failed":
            print(f"      {(o.error or '').splitlines()[0]}")
            if o.log_path:
                print(f"      log: {o.log_path}")
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        raise BuildError(f"{len(failed)} of {len(outcomes)} variant(s) failed to build",
                         hint="the other variants were built; see the logs above")
    return 0


def _peers(m: Matrix, cpu: str, allow_plain_tcp: bool, engine: EngineFactory,
           ) -> Callable[[], list[Any]]:
    """The engines images may be shipped from, connected when first needed: the local
    engine (the one `build` without a remote profile uses), when it is not the target,
    and in a lab the run's other engines (``lab.run_peers``). Engines the command does
    not name are never contacted; one that cannot be reached is left out with a warning."""
    target = m.profile(cpu) if cpu and cpu != "auto" else None
    mine = (target.docker_host if target is not None else None) or "local"
    wanted = {} if mine == "local" else {"local": "the local engine"}
    for names, url in run_peers():  # read now: in the worker's own thread
        if url != mine:
            wanted[url] = f"{names} ({url})" if url != "local" else \
                f"{names} (the local engine)"

    def connect() -> list[Peer]:
        found = []
        for url, label in wanted.items():
            try:
                backend = engine(None if url == "local" else url, allow_plain_tcp)
                found.append(Peer(label, backend, backend.engine_info()))
            except FatalError as exc:  # unreachable, or refused (plain tcp://)
                log.warn(f"{label} is not reachable: no images are shipped from it "
                         f"({exc.message})")
        return found

    return connect
