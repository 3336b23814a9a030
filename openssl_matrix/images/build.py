"""Build: sources → build contexts → images, one per variant, never rebuilt when unchanged.

Images are tagged ``openssl-matrix/<variant>:<digest>`` where the digest covers the
rendered Dockerfile, every file of the build context, the base image id and the
toolchain image id. An image whose tag exists is up to date. Each build leaves a
record (log, Configure line, ``openssl version -a``, ENDBR32 count) in
``results/_builds/<variant>/<digest>/``.

The build record is what marks a variant finished: it is written (atomically) only
after the image exists, so a build killed at any point (SIGINT, SIGKILL, the engine
going away) leaves either a finished variant or none, and rerunning the same command
builds only what is missing (Docker's layer cache keeps the steps that completed).
A run journal (``results/_journal/build-*.json``) tells the rerun it is resuming. One
failing variant, or one failing toolchain image, never stops the others.

With a :class:`~openssl_matrix.engine.ship.Shipper` (``--images``), a missing image may instead
be shipped from another engine that holds it (``ship.py`` weighs the costs); a missing
base image is shipped, and a missing toolchain image is taken from a peer only when a
variant must be built here.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openssl_matrix.core import log
from openssl_matrix.core.clock import now
from openssl_matrix.core.errors import (
    BuildError,
    ConfigError,
    DockerUnavailable,
    FatalError,
    ResultsError,
)
from openssl_matrix.core.files import file_sha256
from openssl_matrix.engine.backend import Backend, RunLimits
from openssl_matrix.engine.buildclaims import POLL, BuildClaims
from openssl_matrix.engine.engineinfo import EngineInfo
from openssl_matrix.engine.hostlock import HostLock, engine_key
from openssl_matrix.engine.ship import Choice, Shipper, engine_ref, same_family
from openssl_matrix.images.render import (
    CCACHE_MARK,
    CompilerCache,
    Rendered,
    cache_id,
    ccache_dockerfile,
    ccache_tag,
    render,
    tarball_name,
    toolchain_dockerfile,
    toolchain_tag,
)
from openssl_matrix.images.sources import fetch_source_info
from openssl_matrix.matrix.eras import base_image_hint
from openssl_matrix.matrix.model import Matrix, Variant
from openssl_matrix.matrix.patches import endbr32_warning
from openssl_matrix.results.tree import Journal, ResultsTree

WORK = ".work"
#: The file that marks a ``.work`` folder beside a matrix as this tool's.
WORK_MARKER = ".openssl-matrix-work"
#: What the tool makes in its work folder (a ``.work`` of only these, and ``engine-*``
#: folders, was made by a version before the marker: it is taken as the tool's).
WORK_ENTRIES = ("toolchain", "ccache", "contexts", "libbench", "pairbench")
FINISHED_BUILD = ("built", "up-to-date", "shipped")
BUILDINFO_DIR = "/opt/openssl/share/openssl-matrix"


@dataclass
class PlannedBuild:
    """A variant ready to build: rendered, with its context and image tag decided."""

    variant: Variant
    rendered: Rendered
    context: Path
    digest: str
    tag: str
    tarball_sha256: str
    source_origin: str
    base_image_id: str
    toolchain_id: str


@dataclass
class BuildOutcome:
    variant: str
    status: str  # built | up-to-date | shipped | failed
    tag: str | None = None
    seconds: float = 0.0
    error: str | None = None
    log_path: str | None = None
    record: dict[str, Any] = field(default_factory=dict)


class Builder:
    def __init__(self, matrix: Matrix, backend: Backend, tree: ResultsTree, *,
                 workdir: Path | None = None, engine_tag: str | None = None,
                 images: Shipper | None = None, claims: bool = False,
                 claim_poll: float = POLL, compiler_cache: str | None = None,
                 tag_prefix: str = "openssl-matrix") -> None:
        self.matrix = matrix
        #: a shared compiler cache (ccache in a BuildKit cache mount, one per series),
        #: named ``<compiler_cache>-ccache-<series>``; None: every build compiles cold
        self.compiler_cache = compiler_cache
        self._ccache_images: dict[str, str | None] = {}  # base image -> ccache image
        #: images are tagged ``<tag_prefix>/<variant>:<digest>`` (a benchmark's own
        #: namespace keeps its builds apart from the user's)
        self.tag_prefix = tag_prefix
        self.backend = backend
        self.tree = tree
        #: set when several engines build into one tree at once (a lab): a journal, a build
        #: context folder and a build log of this engine's own
        self.engine_tag = engine_tag
        self._workdir = workdir
        self.images = images
        #: in a lab (``claims``): claim an image before building it, and wait for a peer
        #: engine that is building it to ship it here (claims.py)
        self._claims_wanted = claims and images is not None and images.mode != "build"
        self._claim_poll = claim_poll  # seconds between two looks at a peer's claim
        self.claims: BuildClaims | None = None
        self._host_lock: HostLock | bool | None = False  # False: not looked up yet
        self._engine: EngineInfo | None = None
        self._peer_toolchains: dict[str, str] = {}  # tag -> base id: on a peer, not here
        self._toolchain_lock = threading.Lock()

    @property
    def workdir(self) -> Path:
        """Where the build contexts are laid out: the folder given, else ``.work`` beside
        the matrix (:func:`work_folder`: made and marked on first use, refused when it is
        someone else's), in a lab ``.work/engine-TAG``."""
        if self._workdir is None:
            work = work_folder(self.matrix.path.parent)
            self._workdir = work / f"engine-{self.engine_tag}" if self.engine_tag else work
        return self._workdir

    def engine(self) -> EngineInfo:
        if self._engine is None:
            self._engine = self.backend.engine_info()
        return self._engine

    def _step(self, what: str) -> contextlib.AbstractContextManager[None]:
        """One build step on the engine: it pauses while a bench measures there (the
        engine's measurement lock, ``hostlock``), and a bench waits for it to end."""
        if self._host_lock is False:
            info = self.engine()
            self._host_lock = HostLock(engine_key(info)) if info.get("id") else None
        lock = self._host_lock
        return lock.building(what, say=log.info) if isinstance(lock, HostLock) else \
            contextlib.nullcontext()

    def _serves(self, engine: Mapping[str, Any]) -> bool:
        """Whether the engine holding a claim is a peer that can ship its image here."""
        if self.images is None:
            return False
        return any(p.engine.get("id") == engine.get("id") and same_family(p.engine,
                                                                          self.engine())
                   for p in self.images.peers())

    def _claim(self, tag: str) -> contextlib.AbstractContextManager[dict[str, Any] | None]:
        """claims.Claims.building, or "build it" (None) when there are no claims."""
        if self.claims is None:
            return contextlib.nullcontext(None)
        return self.claims.building(tag)

    # -- base and toolchain images -------------------------------------------
    def base_image_id(self, image: str) -> str:
        found = self.backend.image_id(image)
        if found is None and self.images is not None:
            arrival = self.images.bring(image)
            if arrival is not None:
                self.tree.file_image_ship(image, self.images.key, arrival.record)
            found = arrival.record.image_id if arrival else None
        if found is None:
            raise BuildError(
                f"base image {image} is not present in the Docker engine",
                hint=base_image_hint(image),
            )
        return found

    def ensure_toolchain(self, base_image: str) -> str:
        """Build (once, with network for apt) the toolchain image for ``base_image``."""
        base_id = self.base_image_id(base_image)
        tag = toolchain_tag(base_image)
        existing = self.backend.image_id(tag)
        if existing and self.backend.image_labels(tag).get("openssl-matrix.base-id") == base_id:
            return existing
        peer = self._peer_toolchain(tag, base_id)
        if peer is not None:
            return peer
        with self._claim(tag) as holder:
            if holder is None:
                # in a lab, a peer may have built it between the look above and the claim
                peer = self._peer_toolchain(tag, base_id) if self.claims else None
                return peer or self._build_toolchain(base_image, base_id, tag)
        assert self.claims is not None
        self.claims.wait(holder, f"toolchain image for {base_image}")
        return self.ensure_toolchain(base_image)  # look again: the peer holds it now

    def _peer_toolchain(self, tag: str, base_id: str) -> str | None:
        """A peer's toolchain on the same base: its ID goes into the digests (so the peers'
        images match); the image itself is shipped only if a variant must be built here."""
        if self.images is None or self.images.mode == "build":
            return None
        source, _ = self.images.sources(tag, {"openssl-matrix.base-id": base_id})
        if source is None:
            return None
        self._peer_toolchains[tag] = base_id
        return source.facts.id

    def _build_toolchain(self, base_image: str, base_id: str, tag: str) -> str:
        context = self.workdir / "toolchain" / tag.split(":", 1)[1]
        context.mkdir(parents=True, exist_ok=True)
        (context / "Dockerfile").write_text(toolchain_dockerfile(base_image), encoding="utf-8")
        log_path = self.tree.toolchain_log(tag.split(':', 1)[1])
        with log.step(f"toolchain image for {base_image} (apt-get, needs network)"), \
                self._step(f"toolchain {tag}"):
            return self.backend.build(context, tag, log_path=log_path, network=None,
                                      labels={"openssl-matrix.base-id": base_id,
                                              "openssl-matrix.base-image": base_image})

    def ensure_ccache(self, base_image: str, toolchain_id: str) -> str | None:
        """The compiler-cache image (the toolchain plus Debian's ccache; built once, with
        network for apt), or None when it cannot be made: those builds compile cold."""
        if base_image in self._ccache_images:
            return self._ccache_images[base_image]
        tag = ccache_tag(base_image)
        found: str | None = tag
        if self.backend.image_labels(tag).get("openssl-matrix.toolchain-id") != toolchain_id:
            context = self.workdir / "ccache" / tag.split(":", 1)[1]
            context.mkdir(parents=True, exist_ok=True)
            (context / "Dockerfile").write_text(ccache_dockerfile(base_image), encoding="utf-8")
            log_path = self.tree.toolchain_log(f"ccache-{tag.split(':', 1)[1]}")
            try:
                with log.step(f"compiler-cache image for {base_image} (apt-get ccache, "
                              "needs network)"), self._step(f"ccache {tag}"):
                    self.backend.build(context, tag, log_path=log_path, network=None,
                                       labels={"openssl-matrix.toolchain-id": toolchain_id,
                                               "openssl-matrix.base-image": base_image})
            except DockerUnavailable:
                raise
            except FatalError as exc:
                log.warn(f"no compiler cache for {base_image}: {exc.message} (log: "
                         f"{log_path}); its variants are built without one")
                found = None
        self._ccache_images[base_image] = found
        return found

    def _cache_for(self, v: Variant) -> CompilerCache | None:
        """The cache a variant's build would use (its image is made when a build needs
        it: :meth:`_with_cache`)."""
        if self.compiler_cache is None:
            return None
        return CompilerCache(cache_id(v, self.compiler_cache), ccache_tag(v.base_image))

    def _with_cache(self, p: PlannedBuild) -> None:
        """Before ``p`` is built: make its compiler-cache image, or, when that fails,
        build it without a cache (the same recipe and content hash)."""
        if p.rendered.cache is None:
            return
        api = str(self.engine().get("api_version") or "")
        if re.fullmatch(r"\d+\.\d+", api) and tuple(map(int, api.split("."))) < (1, 39):
            image = None  # before Docker 18.09: no BuildKit behind the Engine API
            log.warn(f"{p.variant.id}: this engine (API {api}) has no BuildKit: built "
                     "without the compiler cache")
        else:
            with self._toolchain_lock:
                image = self.ensure_ccache(p.variant.base_image, p.toolchain_id)
        if image is None:
            p.rendered = render(p.variant)
            (p.context / "Dockerfile").write_text(p.rendered.built, encoding="utf-8")

    # -- planning -------------------------------------------------------------
    def plan(self, variants: list[Variant], *, toolchains: dict[str, str]) -> list[PlannedBuild]:
        plans = []
        fetched: dict[str, Any] = {}
        for v in variants:
            spec = v.version
            if spec.version not in fetched:
                fetched[spec.version] = fetch_source_info(
                    spec.version, spec.sha256, spec.urls,
                    local_dirs=self.matrix.sources_dirs,
                    lock_file=self.matrix.path.with_suffix(".lock"),
                )
            src = fetched[spec.version]
            tc_id = toolchains[v.base_image]
            rendered = render(v, self._cache_for(v))
            context = self.workdir / "contexts" / v.id
            files = dict(rendered.context_files)
            files[tarball_name(v)] = Path(src.path)
            file_hashes = {name: (src.sha256 if name == tarball_name(v) else file_sha256(path))
                           for name, path in files.items()}
            base_id = self.base_image_id(v.base_image)
            digest = rendered.digest({**file_hashes, "<base>": base_id, "<toolchain>": tc_id})
            plans.append(PlannedBuild(
                variant=v, rendered=rendered, context=context, digest=digest,
                tag=f"{self.tag_prefix}/{v.id}:{digest[:12]}", tarball_sha256=src.sha256,
                source_origin=str(src.origin), base_image_id=base_id, toolchain_id=tc_id,
            ))
            _write_context(context, rendered, files)
        return plans

    # -- building -------------------------------------------------------------
    def build(self, variants: list[Variant], *, jobs: int = 1, force: bool = False,
              ) -> list[BuildOutcome]:
        """Build every variant not yet built; ``force`` rebuilds the up-to-date ones too."""
        outcomes: list[BuildOutcome] = []
        toolchains: dict[str, str] = {}
        if self._claims_wanted and not force and self.claims is None:
            self.claims = BuildClaims(self.tree.claim_files(), self.engine(), self._serves,
                                      poll=self._claim_poll)
        for base in sorted({v.base_image for v in variants}):
            try:
                toolchains[base] = self.ensure_toolchain(base)
            except DockerUnavailable:
                raise
            except FatalError as exc:
                log.error(f"toolchain image for {base}: {exc}")
                log_path = self.tree.toolchain_log(toolchain_tag(base).split(':', 1)[1])
                outcomes += [BuildOutcome(v.id, "failed", error=f"toolchain image for {base} "
                                          f"failed: {exc.message}", log_path=str(log_path))
                             for v in variants if v.base_image == base]
        journal = self.tree.journal("build", {"variants": sorted(v.id for v in variants), **(
            {"engine": self.engine_tag} if self.engine_tag else {})}, fresh=force)
        if journal.resumed:
            done = [n for n, c in journal.cells.items() if c.get("status") in FINISHED_BUILD]
            log.info(f"resuming an interrupted build ({len(done)} of {len(variants)} "
                     "variant(s) finished then); finished variants are not built again")
        plans: list[PlannedBuild] = []
        for v in variants:
            if v.base_image not in toolchains:
                continue
            try:
                plans.extend(self.plan([v], toolchains=toolchains))
            except DockerUnavailable:
                raise
            except FatalError as exc:
                log.error(f"{v.id}: {exc}")
                outcomes.append(BuildOutcome(v.id, "failed", error=str(exc)))
        todo: list[PlannedBuild] = []
        for p in plans:
            image_id = None if force else self.backend.image_id(p.tag)
            if image_id is None:
                todo.append(p)
                continue
            record = self.tree.build_record(p.variant.id, p.digest)
            if record is None:
                # The image exists but this tree has no record of it (built for another
                # results tree, or killed between the build and the record): record it.
                try:
                    record = self._record(p, image_id, self._buildinfo(p.tag), started=None,
                                          seconds=None, make_jobs=None)
                except DockerUnavailable:
                    raise
                except FatalError as exc:
                    log.warn(f"{p.variant.id}: the image {p.tag} cannot report its build "
                             f"info ({exc.message}); building it again")
                    todo.append(p)
                    continue
            else:
                self._point_latest(p)
            log.info(f"  {p.variant.id}: up to date ({p.tag})")
            outcomes.append(BuildOutcome(p.variant.id, "up-to-date", tag=p.tag, record=record))
        for o in outcomes:
            journal.record(o.variant, o.status, tag=o.tag, error=o.error, log=o.log_path)
        if todo and self.images is not None and not force:  # --force: build, never ship
            todo, arrived = self._acquire(todo, journal)
            outcomes += arrived
        if todo:
            outcomes += self._build_all(todo, jobs, journal)
        order = {v.id: i for i, v in enumerate(variants)}
        outcomes.sort(key=lambda o: order.get(o.variant, 0))
        if all(o.status in FINISHED_BUILD for o in outcomes):
            journal.close("finished")
        return outcomes

    # -- the image-acquisition step: build here or ship (ship.py) -------------------
    def _acquire(self, todo: list[PlannedBuild], journal: Journal,
                 ) -> tuple[list[PlannedBuild], list[BuildOutcome]]:
        """Ship the missing images that are cheaper to ship; return those to build here
        and the outcomes of the others."""
        assert self.images is not None
        here: list[PlannedBuild] = []
        done: list[BuildOutcome] = []
        for p in todo:
            choice = self.images.choice(p.tag, self.build_seconds_on_record(p))
            out: BuildOutcome | None
            if choice.way == "build":
                if self.images.mode != "build":
                    log.info(f"  {p.variant.id}: built here ({choice.why})")
                out = None
            elif choice.way == "fail":
                log.error(f"{p.variant.id}: {choice.why}")
                out = BuildOutcome(p.variant.id, "failed", tag=p.tag, error=choice.why)
            else:
                out = self._ship_one(p, choice)
            if out is None:
                here.append(p)
                continue
            done.append(out)
            journal.record(out.variant, out.status, tag=out.tag, error=out.error)
        return here, done

    def build_seconds_on_record(self, p: PlannedBuild) -> float | None:
        """How long building this image took (this digest, else the variant's newest
        timed build)."""
        mine = self.tree.build_record(p.variant.id, p.digest)
        if mine and isinstance(mine.get("seconds"), (int, float)):
            return float(mine["seconds"])
        timed = [r for r in self.tree.build_records(p.variant.id)
                 if r.seconds is not None]
        timed.sort(key=lambda r: r.ended or "")
        return float(timed[-1].seconds) if timed and timed[-1].seconds is not None else None

    def _ship_one(self, p: PlannedBuild, choice: Choice) -> BuildOutcome | None:
        """Ship one image and check it runs here; None: build it here instead."""
        assert self.images is not None and choice.source is not None
        src = choice.source
        log.info(f"▸ {p.variant.id}: shipping {p.tag} from {src.peer.name} "
                 f"({src.facts.size / 1e6:.0f} MB): {choice.why}")
        arrived = False
        try:
            arrival = self.images.ship(choice, p.tag)
            arrived = True
            info = self._buildinfo(p.tag)  # the image runs on this engine's CPU
        except DockerUnavailable:
            raise
        except FatalError as exc:
            if arrived:
                self.backend.remove_image(p.tag)
            if self.images.mode == "ship":
                log.error(f"{p.variant.id}: shipping failed ✕ — {exc.message}")
                return BuildOutcome(p.variant.id, "failed", tag=p.tag,
                                    error=f"shipping from {src.peer.name} failed: "
                                    f"{exc.message}")
            log.warn(f"{p.variant.id}: shipping from {src.peer.name} failed "
                     f"({exc.message}); building it here instead")
            return None
        rec = arrival.record
        record = self.tree.build_record(p.variant.id, p.digest) or self._record(
            p, rec.image_id, info, started=None, seconds=None, make_jobs=None,
            built_on=src.peer.engine)
        self._point_latest(p)
        self.tree.file_ship(p.variant.id, p.digest, self.images.key, rec)
        log.info(f"  {p.variant.id}: shipped ✓ {(rec.bytes or 0) / 1e6:.0f} MB in "
                 f"{rec.seconds:.0f}s; image ID checked on arrival")
        return BuildOutcome(p.variant.id, "shipped", tag=p.tag, seconds=rec.seconds or 0.0,
                            record={**record, "shipped": rec.to_json()})

    def _toolchain_here(self, base_image: str) -> None:
        """Ship the toolchain image a variant's digest was planned with, if it is only on a
        peer (the build needs it here)."""
        assert self.images is not None
        tag = toolchain_tag(base_image)
        with self._toolchain_lock:
            base_id = self._peer_toolchains.get(tag)
            if base_id is None:
                return
            arrival = self.images.bring(tag, {"openssl-matrix.base-id": base_id})
            if arrival is None:
                raise BuildError(f"the toolchain image {tag} this build was planned with is "
                                 "no longer on any other engine",
                                 hint="rerun: the plan is made again")
            self.tree.file_image_ship(tag, self.images.key, arrival.record)
            del self._peer_toolchains[tag]

    def _build_all(self, todo: list[PlannedBuild], jobs: int, journal: Journal,
                   ) -> list[BuildOutcome]:
        """Build ``todo``, ``jobs`` at a time. Ctrl-C stops at once: builds run in daemon
        threads, and the engine cancels a build whose client went away."""
        make_jobs = max(1, (os.cpu_count() or 1) // max(1, jobs))
        total = len(todo)
        log.info(f"building {total} variant(s), {jobs} at a time, make -j{make_jobs}")
        results: dict[int, BuildOutcome] = {}
        stop: list[BaseException] = []
        slots = threading.Semaphore(max(1, jobs))
        #: claimed by a peer engine that is building it: received (or built) at the end
        waiting: list[tuple[int, PlannedBuild, dict[str, Any]]] = []

        def work(i: int, p: PlannedBuild) -> None:
            with slots:
                if stop:
                    return
                try:
                    with self._claim(p.tag) as holder:
                        if holder is not None:
                            waiting.append((i, p, holder))
                            return
                        out = self._arrived_meanwhile(p) or \
                            self._build_one(p, make_jobs, i + 1, total)
                except DockerUnavailable as exc:
                    stop.append(exc)
                    return
                except Exception as exc:  # a bug: keep its traceback, build the others
                    out = self._internal_error(p, exc)
                results[i] = out
                journal.record(out.variant, out.status, tag=out.tag, error=out.error,
                               log=out.log_path)

        threads = [threading.Thread(target=work, args=(i, p), daemon=True,
                                    name=f"build {p.variant.id}") for i, p in enumerate(todo)]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.2)
        if not stop:
            for i, p, holder in sorted(waiting, key=lambda w: w[0]):
                out = self._after_peer(p, holder, journal, make_jobs, i + 1, total)
                results[i] = out
                journal.record(out.variant, out.status, tag=out.tag, error=out.error,
                               log=out.log_path)
        if stop:
            kept = sum(o.status == "built" for o in results.values())
            log.error(f"build stopped: {kept} variant(s) built in this run are kept; "
                      "rerun the same command to build the rest")
            raise stop[0]
        return [results[i] for i in sorted(results)]

    def _arrived_meanwhile(self, p: PlannedBuild) -> BuildOutcome | None:
        """In a lab, a peer engine may have built ``p`` since the plan was made (its claim
        came and went before ours): receive it when that is cheaper."""
        if self.claims is None or self.images is None:
            return None
        choice = self.images.choice(p.tag, self.build_seconds_on_record(p))
        return self._ship_one(p, choice) if choice.way == "ship" else None

    def _after_peer(self, p: PlannedBuild, holder: dict[str, Any], journal: Journal,
                    make_jobs: int, index: int, total: int) -> BuildOutcome:
        """A variant a peer engine was building: wait for it, then receive it (or build it
        here when shipping costs more, or the peer's build failed)."""
        assert self.claims is not None
        self.claims.wait(holder, p.variant.id)
        here, done = self._acquire([p], journal)
        if done:
            return done[0]
        assert here == [p]
        try:
            return self._build_one(p, make_jobs, index, total)
        except DockerUnavailable:
            raise
        except Exception as exc:  # a bug: keep its traceback
            return self._internal_error(p, exc)

    def _internal_error(self, p: PlannedBuild, exc: Exception) -> BuildOutcome:
        log_path = self.tree.write_error_log(self.tree.build_dir(p.variant.id, p.digest),
                                             traceback.format_exc())
        log.error(f"{p.variant.id}: internal error ({type(exc).__name__}: {exc}); "
                  f"traceback in {log_path}; the other variants go on")
        return BuildOutcome(p.variant.id, "failed", tag=p.tag,
                            error=f"internal error {type(exc).__name__}: {exc}",
                            log_path=str(log_path))

    def _point_latest(self, p: PlannedBuild) -> None:
        """Make the variant's latest build record name this build (a kill may have come
        before it was written)."""
        try:
            current = self.tree.read_latest(p.variant.id)
        except ResultsError:
            current = None  # damaged: rewritten below
        if current is None or current.digest != p.digest or current.tag != p.tag:
            self.tree.write_latest(p.variant.id, p.digest, p.tag)

    def _build_one(self, p: PlannedBuild, make_jobs: int, index: int, total: int) -> BuildOutcome:
        v = p.variant
        log_path = self.tree.build_log(v.id, p.digest, self.engine_tag)
        jobs = make_jobs  # a legacy (Makefile.org) tree builds at -j1 all the same
        if self.images is not None:  # before the clock: shipping is not building
            try:
                self._toolchain_here(v.base_image)
            except DockerUnavailable:
                raise
            except FatalError as exc:
                log.error(f"[{index}/{total}] {v.id}: {exc}")
                return BuildOutcome(v.id, "failed", tag=p.tag, error=exc.message)
        self._with_cache(p)
        t0 = time.monotonic()
        started = now("seconds")
        log.info(f"▸ [{index}/{total}] {v.id}: building {p.tag} (log: {log_path})")
        try:
            with self._step(v.id):
                # the build's own time: not the wait for a bench's measurement lock
                t0 = time.monotonic()
                started = now("seconds")
                image_id = self.backend.build(
                    p.context, p.tag, log_path=log_path, network="none",
                    labels={"openssl-matrix.variant": v.id, "openssl-matrix.digest": p.digest,
                            "openssl-matrix.tarball-sha256": p.tarball_sha256},
                    buildargs={"MAKE_JOBS": str(jobs)},
                    # asked for only with a cache: a backend of before it need not know it
                    **({"buildkit": True} if p.rendered.cache is not None else {}),
                )
                info = self._buildinfo(p.tag)
        except DockerUnavailable:
            raise
        except FatalError as exc:
            secs = time.monotonic() - t0
            log.error(f"[{index}/{total}] {v.id}: build failed ✕ after {secs:.0f}s — {exc}")
            return BuildOutcome(v.id, "failed", tag=p.tag, seconds=secs, error=exc.message,
                                log_path=str(log_path))
        secs = time.monotonic() - t0
        cache = p.rendered.cache
        used = None if cache is None else \
            {"id": cache.id, "image": cache.image, **ccache_stats(log_path)}
        record = self._record(p, image_id, info, started=started, seconds=secs,
                              make_jobs=jobs, compiler_cache=used)
        log.info(f"  [{index}/{total}] {v.id}: built ✓ in {secs:.0f}s — "
                 f"{info.get('openssl_version', '?')}, endbr32={info.get('endbr32')}"
                 + ("" if used is None else f", ccache hits {used.get('hits')}/"
                    f"{used.get('cacheable')}"))
        return BuildOutcome(v.id, "built", tag=p.tag, seconds=secs, log_path=str(log_path),
                            record=record)

    def _record(self, p: PlannedBuild, image_id: str, info: dict[str, Any], *, started: str | None,
                seconds: float | None, make_jobs: int | None,
                built_on: Mapping[str, Any] | None = None,
                compiler_cache: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Write the build record (and the variant's latest pointer) into the results tree."""
        v = p.variant
        record = {
            "variant": v.describe(),
            "tag": p.tag,
            "image_id": image_id,
            "digest": p.digest,
            "tarball_sha256": p.tarball_sha256,
            "source_origin": p.source_origin,
            "base_image": v.base_image,
            "base_image_id": p.base_image_id,
            "toolchain_image_id": p.toolchain_id,
            "configure_line": p.rendered.recipe.configure_line,
            "make_jobs": make_jobs,
            "compiler_cache": None if compiler_cache is None else dict(compiler_cache),
            "started": started,
            "ended": now("seconds") if started else None,
            "seconds": None if seconds is None else round(seconds, 1),
            "matrix_digest": self.matrix.digest,
            "engine": engine_ref(built_on if built_on is not None else self.engine()),
            **info,
            "endbr32_warning": endbr32_warning(v.id, v.sigill_cpus, info.get("endbr32")),
        }
        if record["endbr32_warning"]:
            log.warn(str(record["endbr32_warning"]))
        # The record marks the variant finished, so it is written after the Dockerfile;
        # the latest pointer is repaired by the next run if a kill comes before it is written.
        self.tree.write_dockerfiles(  # and what was built: the recipe, through ccache
            p.variant.id, p.digest, p.rendered.dockerfile,
            p.rendered.built if compiler_cache is not None else None)
        self.tree.write_build(v.id, p.digest, record)
        self._point_latest(p)
        return record

    def _buildinfo(self, tag: str) -> dict[str, Any]:
        """Read what buildinfo.sh recorded inside the image."""
        res = self.backend.run(
            tag, ["/bin/sh", "-c", f"cd {BUILDINFO_DIR} && for f in *.txt; do "
                  "echo \"==> $f\"; cat \"$f\"; done"],
            limits=RunLimits(timeout=120),
        )
        if res.exit_code != 0:
            raise BuildError(f"{tag}: the built image cannot report its build info "
                             f"(exit {res.exit_code}): {res.stderr.strip()[:300]}")
        files: dict[str, str] = {}
        current = None
        for line in res.stdout.splitlines():
            if line.startswith("==> "):
                current = line[4:].strip()
                files[current] = ""
            elif current:
                files[current] += line + "\n"
        version_a = files.get("version.txt", "").strip()
        first = version_a.splitlines()[0] if version_a else ""
        if not first.startswith("OpenSSL"):
            raise BuildError(f"{tag}: `openssl version -a` in the image failed: {first[:200]}",
                             hint="the binary may not run on this CPU (see build.log)")

        def count(name: str) -> int | None:
            text = files.get(name, "").strip()
            return int(text) if text.isdigit() else None

        return {
            "openssl_version": first,
            "openssl_version_a": version_a,
            "configure_line_in_image": files.get("configure.txt", "").strip(),
            "endbr32": count("endbr32.txt"),
            "endbr64": count("endbr64.txt"),
            "patches_in_image": files.get("patches.txt", "").split(),
            "engine_modules": files.get("engine-modules.txt", "").split(),
            # srcfacts.pl's findings in the unpacked tree, and the compat scripts' changes
            "source_facts": dict(line.split("=", 1) for line in
                                 files.get("source-facts.txt", "").splitlines() if "=" in line),
            "compat_changes": files.get("compat.txt", "").splitlines(),
        }


#: ``ccache --show-log-stats`` lines: ``Hits:  12 / 40 (30.00%)``
_STAT = re.compile(r"^\s*(Cacheable calls|Hits|Misses|Direct|Preprocessed):\s+(\d+)\s*/\s*(\d+)")


def ccache_stats(log_path: Path) -> dict[str, Any]:
    """What ccache said of one build (its stats log, printed after make under
    :data:`CCACHE_MARK`): ``cacheable`` compiler calls, ``hits`` (``direct`` and
    ``preprocessed``) and ``misses``; ``{"stats": None}`` when the log has none (make's
    step came from the engine's layer cache: nothing was compiled)."""
    try:
        text = log_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {"stats": None}
    at = text.rfind(CCACHE_MARK)
    if at < 0:
        return {"stats": None}
    out: dict[str, Any] = {}
    names = {"Cacheable calls": "cacheable", "Hits": "hits", "Misses": "misses",
             "Direct": "direct", "Preprocessed": "preprocessed"}
    for line in text[at:].splitlines()[1:12]:
        m = _STAT.match(line)
        if m and names[m.group(1)] not in out:
            out[names[m.group(1)]] = int(m.group(2))
            if m.group(1) == "Cacheable calls":
                out["calls"] = int(m.group(3))
    if not out:
        return {"stats": None}
    return out


def _write_context(context: Path, rendered: Rendered, files: dict[str, Path]) -> None:
    """Lay out the build context: Dockerfile plus the files it COPYs (hard-linked)."""
    context.mkdir(parents=True, exist_ok=True)
    wanted = {"Dockerfile", *files}
    for old in context.iterdir():
        if old.name not in wanted:
            if old.is_dir():
                shutil.rmtree(old)
            else:
                old.unlink()
    (context / "Dockerfile").write_text(rendered.built, encoding="utf-8")
    for name, src in files.items():
        dest = context / name
        if dest.exists() and dest.stat().st_size == src.stat().st_size and \
                dest.stat().st_ino == src.stat().st_ino:
            continue
        if dest.exists():
            dest.unlink()
        try:
            os.link(src, dest)
        except OSError:
            shutil.copy2(src, dest)


def work_folder(matrix_dir: Path) -> Path:
    """``.work`` beside the matrix, where build contexts are laid out (the tool removes
    what a context no longer needs there): made and marked (:data:`WORK_MARKER`) on first
    use. A ``.work`` that holds anything the tool does not make there, without the marker,
    is someone else's folder of that name: ConfigError, nothing written or removed."""
    work = matrix_dir / WORK
    try:
        entries = sorted(p.name for p in work.iterdir())
    except FileNotFoundError:
        entries = []
    except NotADirectoryError:
        raise ConfigError(f"{work} is a file: the tool lays out its build contexts in a "
                          "folder of that name beside the matrix",
                          hint="move the file aside, or keep the matrix in another folder"
                          ) from None
    foreign = [n for n in entries if n != WORK_MARKER and n not in WORK_ENTRIES
               and not n.startswith("engine-")]
    if foreign and WORK_MARKER not in entries:
        shown = ", ".join(foreign[:3]) + (", …" if len(foreign) > 3 else "")
        raise ConfigError(f"{work} was not made by openssl-matrix (it holds {shown}): the "
                          "tool lays out its build contexts there and removes what they no "
                          "longer need, so it leaves this folder alone",
                          hint="move the folder aside, or keep the matrix in another folder")
    work.mkdir(parents=True, exist_ok=True)
    marker = work / WORK_MARKER
    if not marker.exists():
        marker.write_text("build contexts of openssl-matrix (safe to delete)\n",
                          encoding="utf-8")
    return work
