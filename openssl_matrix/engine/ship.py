"""Images to engines: build a variant's image on the engine that needs it, or ship one
that another engine already built — whichever costs less.

**Identity.** A variant's image is tagged by the content hash of its build inputs
(``build.py``), and an image's ID is the sha256 of its configuration: ``docker save`` →
``docker load`` and a push/pull through a registry keep both, labels included. A shipped
image is therefore the very image its build record describes; on arrival its ID is read
back on the target engine and compared with the source's (a mismatch removes the arrived
tag and fails the shipment), then ``build.py`` runs the image's build-info check on the
target, which proves it runs there (an i386 image on an x86_64 engine included).

**Who can serve.** A peer engine that holds the tag, whose image's OS and architecture the
target engine runs (:func:`runs_on`): an amd64 or 386 image on an x86_64 engine, arm64 on
aarch64, never across.

**Cost.** Building costs the seconds the build record says the build took (on the engine
that built it; the target may be slower or faster, and the reason says so). Shipping costs
the image's size over the bytes per second measured by the last shipments between the same
two engines (ship records in the results tree). With no rate on record the first shipment
is the measurement: it is given the build's time as a budget and gives up, leaving the
variant to be built, when the transfer is slower than that. ``--images`` forces a way:
``build`` (the tool's behaviour before this module), ``ship`` (a variant no engine can
serve fails, saying so), ``auto`` (the default: the cheaper).

**Both hosts are busy while an image moves** (reading layers on one, unpacking them on
the other): a transfer takes each engine's build-step lock (``hostlock``), so it waits for
a bench measuring there and a bench waits for it.

**Records.** Every arrival is written as ``shipped-<engine>.json`` beside the variant's
build record (``records.ShipRecord``): from which engine, how, bytes, seconds, bytes/s,
why it was chosen and what was checked. Base and toolchain images that arrive the same way
are recorded under ``_builds/_images/``.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openssl_matrix.core import log
from openssl_matrix.core.clock import now
from openssl_matrix.core.errors import BuildError, DockerUnavailable, UsageError
from openssl_matrix.engine.backend import Backend, ImageFacts
from openssl_matrix.engine.hostlock import HostLock, engine_key
from openssl_matrix.results import records

MODES = ("build", "ship", "auto")
SAVE_LOAD = "save-load"
REGISTRY = "registry"

#: Docker image architectures an engine of a given ``uname -m`` runs natively.
RUNS = {
    "x86_64": ("amd64", "386"), "amd64": ("amd64", "386"),
    "i686": ("386",), "i386": ("386",),
    "aarch64": ("arm64",), "arm64": ("arm64",),
}


def check_mode(mode: str) -> str:
    mode = mode or "auto"
    if mode not in MODES:
        raise UsageError(f"--images {mode!r} is not one of {', '.join(MODES)}",
                         hint="build: build on each engine; ship: move built images to it; "
                         "auto: whichever costs less (the default)")
    return mode


def check_registry(registry: str, mode: str) -> str | None:
    """``--registry`` as ``host[:port][/path]`` (None when not given)."""
    if not registry:
        return None
    if not re.fullmatch(r"[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[a-z0-9._-]+)*/?", registry):
        raise UsageError(f"--registry {registry!r}: expected HOST[:PORT][/PATH] (no scheme)",
                         hint="e.g. --registry registry.lab:5000/openssl-matrix")
    if mode == "build":
        raise UsageError("--registry ships images: it does not go with --images build")
    return registry


def runs_on(image: ImageFacts, engine: Mapping[str, Any]) -> str | None:
    """None when ``engine`` (its :meth:`Backend.engine_info`) runs ``image``, else why not."""
    os_type = str(engine.get("os_type") or "linux")
    if image.os and image.os != os_type:
        return f"a {image.os} image, the engine runs {os_type}"
    machine = str(engine.get("arch") or "")
    ok = RUNS.get(machine)
    if ok is None:
        return f"the engine's architecture {machine or '(not reported)'} is not known here"
    if image.arch not in ok:
        return f"an {image.arch or '(unknown)'} image, the engine is {machine}"
    return None


def family(engine: Mapping[str, Any]) -> str:
    """The image architectures an engine (its :meth:`Backend.engine_info`) runs, as one
    word (``amd64+386``); its ``uname -m`` when not known here."""
    machine = str(engine.get("arch") or "")
    return "+".join(RUNS.get(machine, (machine or "unknown",)))


def same_family(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two engines run the same image architectures, so that what one builds the
    other can run."""
    return str(a.get("arch") or "") in RUNS and family(a) == family(b)


def engine_ref(engine: Mapping[str, Any]) -> dict[str, Any]:
    """What a record keeps of an engine: enough to name it, never more."""
    return {k: engine.get(k) for k in ("id", "name", "endpoint", "arch") if k in engine}


# -- the choice (pure) -----------------------------------------------------------------


@dataclass(frozen=True)
class Peer:
    """Another engine images may come from."""

    name: str
    backend: Backend
    engine: Mapping[str, Any]


@dataclass(frozen=True)
class Source:
    """A peer holding the image, and the image as it reports it."""

    peer: Peer
    facts: ImageFacts


@dataclass(frozen=True)
class Costs:
    build_seconds: float | None  # on record
    size: int  # bytes of the image (what save/load moves)
    rate: float | None  # bytes per second measured between the two engines

    @property
    def ship_seconds(self) -> float | None:
        return self.size / self.rate if self.rate else None


@dataclass(frozen=True)
class Choice:
    way: str  # "build" | "ship" | "fail" (--images ship and no engine can serve)
    why: str
    source: Source | None = None
    budget: float | None = None  # seconds the shipment may take before it gives up
    costs: Costs | None = None


def choose(mode: str, source: Source | None, costs: Costs | None,
           unusable: Sequence[str] = ()) -> Choice:
    """How an image reaches the engine: build there or ship from ``source``."""
    if mode == "build":
        return Choice("build", "--images build")
    if source is None or costs is None:
        why = "no other engine holds it" + (f" ({'; '.join(unusable)})" if unusable else "")
        return Choice("fail", f"--images ship, but {why}") if mode == "ship" else \
            Choice("build", why)
    if mode == "ship":
        return Choice("ship", "--images ship", source, costs=costs)
    if costs.build_seconds is None:
        return Choice("ship", "no build time on record to weigh against", source, costs=costs)
    est = costs.ship_seconds
    if est is None:
        return Choice("ship", f"no transfer rate on record from {source.peer.name}: this "
                      f"shipment measures it, given up after {costs.build_seconds:.0f}s (the "
                      "build time on record)", source, budget=costs.build_seconds,
                      costs=costs)
    rate = costs.rate or 0.0
    verdict = (f"shipping {costs.size / 1e6:.0f} MB at {rate / 1e6:.1f} MB/s (measured) "
               f"takes ~{est:.0f}s, building took {costs.build_seconds:.0f}s on record")
    if est < costs.build_seconds:
        return Choice("ship", verdict, source, costs=costs)
    return Choice("build", verdict, costs=costs)


def rate_on_record(ships: Iterable[records.ShipRecord], source: Mapping[str, Any],
                   target: Mapping[str, Any], method: str) -> float | None:
    """The median bytes/s of the last three shipments from ``source`` to ``target``."""
    found = [s for s in ships
             if s.method == method and s.bytes_per_s
             and (s.from_engine or {}).get("id") == source.get("id")
             and (s.to_engine or {}).get("id") == target.get("id")]
    found.sort(key=lambda s: s.ended or "")
    last = sorted(float(s.bytes_per_s or 0) for s in found[-3:])
    return last[len(last) // 2] if last else None


# -- moving an image -------------------------------------------------------------------


class GaveUp(BuildError):
    """A shipment slower than building: abandoned (the variant is built instead)."""


@dataclass
class _Meter:
    """Counts the bytes of a stream and stops it when it outlives its budget."""

    budget: float | None
    moved: int = 0
    started: float = field(default_factory=time.monotonic)

    def wrap(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        try:
            for chunk in chunks:
                self.moved += len(chunk)
                if self.budget is not None and self.seconds > self.budget:
                    raise GaveUp(f"the transfer outlived the build time on record "
                                 f"({self.budget:.0f}s) after {self.moved / 1e6:.0f} MB")
                yield chunk
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started


@dataclass(frozen=True)
class Arrival:
    """One image that reached the target engine, and what it cost."""

    record: records.ShipRecord


class Shipper:
    """Brings images to one target engine from its peers.

    ``peers`` is called once, when an image is first missing (so ``--images build`` never
    connects to another engine); an unreachable peer is left out with a warning.
    ``registry`` (``host:port[/path]``): ship by push and pull through it instead of a
    save/load stream. ``ships`` gives the ship records on file (``ResultsTree.ships``),
    for the rates they show; what ships is handed up (:class:`Arrival`), never filed here.
    """

    def __init__(self, target: Backend, target_engine: Mapping[str, Any], mode: str,
                 peers: Callable[[], Sequence[Peer]],
                 ships: Callable[[], Iterable[records.ShipRecord]], *,
                 registry: str | None = None) -> None:
        self.target = target
        self.engine = dict(target_engine)
        self.mode = check_mode(mode)
        self._peers_fn = peers
        self._peers: list[Peer] | None = None
        self._ships = ships
        self.registry = registry.rstrip("/") if registry else None
        self.method = REGISTRY if self.registry else SAVE_LOAD
        self._measured: dict[str, float] = {}  # engine id -> bytes/s seen in this run
        self._lock = threading.Lock()  # one transfer at a time: they share the link

    @property
    def key(self) -> str:
        return engine_key(self.engine)

    def peers(self) -> list[Peer]:
        if self._peers is None:
            me = self.engine.get("id")
            self._peers = [p for p in self._peers_fn()
                           if not me or p.engine.get("id") != me]
        return self._peers

    def sources(self, tag: str, labels: Mapping[str, str] | None = None,
                ) -> tuple[Source | None, list[str]]:
        """The first peer holding ``tag`` (with ``labels``) that this engine can run, and
        why the others that hold it cannot serve."""
        unusable: list[str] = []
        for peer in self.peers():
            try:
                facts = peer.backend.image_facts(tag)
            except DockerUnavailable as exc:
                log.warn(f"engine {peer.name} stopped answering ({exc.message}); images "
                         "are not shipped from it")
                continue
            if facts is None:
                continue
            if labels and any(facts.labels.get(k) != v for k, v in labels.items()):
                continue
            why = runs_on(facts, self.engine)
            if why is not None:
                unusable.append(f"{peer.name}: {why}")
                continue
            return Source(peer, facts), unusable
        return None, unusable

    def rate(self, source: Source) -> float | None:
        seen = self._measured.get(str(source.peer.engine.get("id")))
        if seen is not None:
            return seen
        return rate_on_record(self._ships(), source.peer.engine, self.engine,
                              self.method)

    def choice(self, tag: str, build_seconds: float | None) -> Choice:
        if self.mode == "build":
            return choose("build", None, None)
        source, unusable = self.sources(tag)
        costs = None if source is None else Costs(build_seconds, source.facts.size,
                                                  self.rate(source))
        return choose(self.mode, source, costs, unusable)

    def ship(self, choice: Choice, tag: str) -> Arrival:
        """Move ``tag`` from the choice's source; check the image ID on arrival."""
        assert choice.source is not None
        src = choice.source
        with self._lock, contextlib.ExitStack() as held:
            # a transfer loads both hosts: it waits for, and holds off, their benches
            for engine in (src.peer.engine, self.engine):
                if engine.get("id"):
                    held.enter_context(HostLock(engine_key(dict(engine))).building(
                        f"ship {tag}", say=log.info))
            started = now("seconds")
            meter = _Meter(choice.budget)
            try:
                if self.method == SAVE_LOAD:
                    self.target.load_image(meter.wrap(src.peer.backend.save_image(tag)))
                    moved = meter.moved
                else:
                    ref = f"{self.registry}/{tag}"
                    src.peer.backend.push_image(tag, ref)
                    self.target.pull_image(ref, tag)
                    moved = src.facts.size  # the registry compresses: the image's size
            except GaveUp:
                if meter.seconds > 0:
                    self._measured[str(src.peer.engine.get("id"))] = meter.moved / meter.seconds
                raise
            seconds = meter.seconds
        arrived = self.target.image_facts(tag)
        if arrived is None or arrived.id != src.facts.id:
            if arrived is not None:
                self.target.remove_image(tag)
            raise BuildError(f"{tag} shipped from {src.peer.name} arrived as "
                             f"{arrived.id if arrived else 'nothing'}, not {src.facts.id}: "
                             "removed again", hint="rerun with --images build")
        rate = moved / seconds if seconds > 0 else None
        if rate:
            self._measured[str(src.peer.engine.get("id"))] = rate
        return Arrival(records.ShipRecord(
            tag=tag, image_id=arrived.id, method=self.method,
            to_engine=engine_ref(self.engine), from_engine=engine_ref(src.peer.engine),
            bytes=moved, seconds=round(seconds, 2),
            bytes_per_s=None if rate is None else round(rate, 1),
            checked=f"image ID {arrived.id} on {self.engine.get('name') or 'this engine'} "
                    f"equals the source's ({src.peer.name})",
            why=choice.why,
            build_seconds=choice.costs.build_seconds if choice.costs else None,
            started=started, ended=now("seconds")))

    def bring(self, tag: str, labels: Mapping[str, str] | None = None) -> Arrival | None:
        """Ship an image that is an input, not a variant (a base or toolchain image): from
        any peer holding it with ``labels``; None when none does or the mode is build.
        The caller files the arrival (``ResultsTree.file_image_ship``)."""
        if self.mode == "build":
            return None
        source, _ = self.sources(tag, labels)
        if source is None:
            return None
        log.info(f"  {tag}: shipping from {source.peer.name} "
                 f"({source.facts.size / 1e6:.0f} MB)")
        return self.ship(Choice("ship", "an input image missing on this engine", source),
                         tag)


def arrival_on(build_dir: Path, engine: Mapping[str, Any]) -> dict[str, Any] | None:
    """How an image got to ``engine``, if it was shipped there (for a run's provenance)."""
    path = records.ship_path(build_dir, engine_key(dict(engine)))
    if not path.is_file():
        return None
    rec = records.read_ship(path)
    return None if rec is None else rec.to_json()
