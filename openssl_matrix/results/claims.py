"""A lab's engines' claims on the images they build, as files of the results tree:
``_builds/_claims/<key>.json`` (engine/buildclaims.py decides who builds what and hands
the claims here; ``key`` is its hash of the image's tag and the engine's architectures).

A claim is written whole to a temp file, then linked into place, which fails if a claim
is there: a peer never reads a claim half written, which it would take for none."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from openssl_matrix.core import jsonread
from openssl_matrix.core.files import read_bounded_text


class ClaimFiles:
    """The claims folder of one tree (:meth:`ResultsTree.claim_files`): what
    ``engine/buildclaims.BuildClaims`` stores its claims in."""

    def __init__(self, folder: Path) -> None:
        self.dir = folder

    def path(self, key: str) -> Path:
        """The file of the claim ``key``."""
        return self.dir / f"{key}.json"

    def take(self, key: str, body: Mapping[str, Any]) -> bool:
        """Create the claim ``key`` holding ``body``; False if a claim is there."""
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / f".{self.path(key).name}.{os.getpid()}.{threading.get_ident()}"
        tmp.write_text(json.dumps(dict(body)), encoding="utf-8")
        try:
            os.link(tmp, self.path(key))
        except FileExistsError:
            return False
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        return True

    def read(self, key: str) -> Any:
        """The claim ``key`` as parsed JSON (any value: the caller judges it); KeyError
        when there is none or it is unreadable."""
        try:
            return jsonread.loads(read_bounded_text(self.path(key), "results"))
        except (OSError, ValueError):
            raise KeyError(key) from None

    def drop(self, key: str) -> None:
        """Remove the claim ``key`` (gone already: nothing to do)."""
        with contextlib.suppress(OSError):
            self.path(key).unlink()
