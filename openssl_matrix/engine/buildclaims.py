"""Who in a lab builds which image: one engine builds it, the others wait and receive it.

In ``invoke matrix build --cpu=a,b`` every engine worker needs the same images. Without
coordination two engines of one architecture would both build a missing image at the
same time and neither could ship to the other. Before an engine worker builds an image (a
toolchain or a variant) it **claims** it: a claim keyed by the sha256 of the tag and the
engine's architectures, created exclusively, naming the engine and the worker's process,
removed when the build ends (built or failed). The claims are kept where the caller's
:class:`ClaimStore` keeps them: in a results tree, ``_builds/_claims/<key>.json``
(``ResultsTree.claim_files``, results/claims.py), so this layer writes no file of the
tree itself. Engines of different architectures never wait for each other.

A worker that finds an image claimed by a peer engine that can serve it (same
architecture family, ``ship.same_family``) goes on with its other images, and comes back
to the claimed ones at the end: it waits for the claim to go, then weighs shipping
against building as usual (``ship.choose``; the peer's fresh build record is the build
time on record). The engines of one architecture thus split the list between them:
each builds what nobody has claimed, and receives the rest.

**What it costs.** An engine that waits gives up building that image in parallel: it gets
the image after the peer's remaining build time plus the transfer, instead of after its
own build time. With engines of equal speed and a fast link that is about the same wall
time for the last image and far less CPU on the waiting engine (and, for the toolchain,
the only way their variants' digests match, so that anything can be shipped at all:
the toolchain's image ID is part of every variant's digest). For a slow engine (a VIA
C3) it is much quicker. It is slower only when the link is slower than the waiting
engine's own build, which ``auto`` then sees on record the next time and builds.

A claim whose process is gone (a worker killed with SIGKILL) is stale and is taken over.
BuildClaims exist only in a lab and only with ``--images auto|ship`` (never with
``--images build`` or ``--force``, which build everything on every engine).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from openssl_matrix.core import log
from openssl_matrix.core.clock import now
from openssl_matrix.engine.ship import family

#: seconds between two looks at a claim being waited for
POLL = 1.0
#: seconds between two "still waiting" lines
SAY_EVERY = 60.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ClaimStore(Protocol):
    """Where claims are kept, by key (results/claims.py's ``ClaimFiles``)."""

    def take(self, key: str, body: Mapping[str, Any]) -> bool:
        """Create the claim ``key`` whole; False if a claim is there."""

    def read(self, key: str) -> Any:
        """The claim ``key`` as parsed JSON; KeyError if there is none or it is
        unreadable."""

    def drop(self, key: str) -> None:
        """Remove the claim ``key``, if it is there."""


class BuildClaims:
    """BuildClaims of one engine (``engine``: its :meth:`Backend.engine_info`) in a results
    tree. ``serves(claim)`` says whether the claiming engine could ship the image here
    (a peer of this run, of the same architecture family)."""

    def __init__(self, store: ClaimStore, engine: Mapping[str, Any],
                 serves: Callable[[Mapping[str, Any]], bool], *,
                 poll: float | None = None) -> None:
        self.store = store  # ResultsTree.claim_files
        self.engine = {k: engine.get(k) for k in ("id", "name", "endpoint", "arch")}
        self.family = family(engine)
        self.serves = serves
        self.poll = POLL if poll is None else poll

    def key(self, tag: str) -> str:
        """The claim's key: the sha256 of the tag and this engine's architectures."""
        return hashlib.sha256(f"{tag}|{self.family}".encode()).hexdigest()[:32]

    def holder(self, tag: str) -> dict[str, Any] | None:
        """The live claim on ``tag``, if any (a stale one is removed)."""
        try:
            claim = self.store.read(self.key(tag))
        except KeyError:  # none, or unreadable (being written: not ours to remove)
            return None
        pid = claim.get("pid") if isinstance(claim, dict) else None
        if not isinstance(claim, dict) or not isinstance(pid, int) or not _alive(pid):
            self.store.drop(self.key(tag))
            return None
        return dict(claim)

    def _take(self, tag: str) -> bool:
        body = {"tag": tag, "engine": self.engine, "pid": os.getpid(),
                "thread": threading.get_ident(), "since": now("seconds")}
        return self.store.take(self.key(tag), body)

    @contextlib.contextmanager
    def building(self, tag: str) -> Iterator[dict[str, Any] | None]:
        """Yield None when this engine is to build ``tag`` (the claim is held until the
        block ends), or the claim of the peer engine building it, which can serve it here
        (nothing held: wait for it with :meth:`wait`, then look for the image again)."""
        for _ in range(3):  # a stale claim removed between two looks: try again
            if self._take(tag):
                try:
                    yield None
                finally:
                    self.store.drop(self.key(tag))
                return
            claim = self.holder(tag)
            if claim is None:
                continue
            engine = claim.get("engine") or {}
            if engine.get("id") != self.engine.get("id") and self.serves(engine):
                yield claim
                return
            break  # our own engine, or one that cannot serve here: build it anyway
        yield None

    def wait(self, claim: Mapping[str, Any], what: str) -> None:
        """Block until ``claim`` is gone (built, failed, or its process died)."""
        tag = str(claim.get("tag"))
        engine = claim.get("engine") or {}
        who = engine.get("name") or engine.get("endpoint") or engine.get("id")
        log.info(f"  {what}: {who} is building {tag} (since {claim.get('since')}); waiting "
                 "to receive it rather than building it here at the same time")
        started = last = time.monotonic()
        while True:
            current = self.holder(tag)
            if current is None or current.get("since") != claim.get("since") or \
                    current.get("pid") != claim.get("pid"):
                return
            time.sleep(self.poll)
            if time.monotonic() - last >= SAY_EVERY:
                last = time.monotonic()
                log.info(f"  {what}: still waiting for {who} "
                         f"({last - started:.0f}s so far)")
