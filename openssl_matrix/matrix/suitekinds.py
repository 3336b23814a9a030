"""The options of each suite kind in matrix.yaml (``kind: library``'s threads, ``multi``
process counts, what a pkey or tls suite lists), checked with their key paths; the rest of
a suite is read by :mod:`openssl_matrix.matrix.load`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from openssl_matrix.core.names import clip
from openssl_matrix.matrix.aead import ALGORITHMS as AEAD_ALGORITHMS
from openssl_matrix.matrix.check import CheckContext, choices_hint
from openssl_matrix.matrix.libvocab import OPERATIONS as LIBRARY_OPERATIONS
from openssl_matrix.matrix.libvocab import LibraryOptions
from openssl_matrix.matrix.model import MAX_MULTI
from openssl_matrix.matrix.pkey import ALGORITHMS as PK_ALGORITHMS
from openssl_matrix.matrix.pts import OPTIONS as PTS_OPTIONS
from openssl_matrix.matrix.tlsvocab import KEYS as TLS_KEYS
from openssl_matrix.matrix.tlsvocab import MODES as TLS_MODES
from openssl_matrix.matrix.tlsvocab import PINNINGS as TLS_PINNINGS
from openssl_matrix.matrix.tlsvocab import PROTOCOLS as TLS_PROTOCOLS
from openssl_matrix.matrix.tlsvocab import TlsOptions

#: Most threads a library suite may ask for.
MAX_THREADS = 256

def library_options(ctx: CheckContext, kind: str, entry: Mapping[str, Any],
                     algorithms: tuple[str, ...], kp: str) -> LibraryOptions | None:
    """The options of a ``kind: library`` suite (None for another kind)."""
    if kind != "library":
        if "threads" in entry:
            raise ctx.fail(f"{kp}.threads", "only a suite with kind: library takes this key")
        return None
    for key in ("evp", "decrypt", "engine", "bytes", "multi", "protocols", "modes",
                "pinning"):
        if key in entry:
            raise ctx.fail(f"{kp}.{key}", "not used by a suite with kind: library")
    names = [*LIBRARY_OPERATIONS, "all"]
    for i, a in enumerate(algorithms):
        if a not in names:
            raise ctx.fail(f"{kp}.algorithms[{i}]", f"{a!r} is not an operation of the "
                           "library harness", hint=choices_hint(a, names))
    value = entry.get("threads", [1, 2])
    if value == "all":
        return LibraryOptions(threads=None)
    if not isinstance(value, list) or not value:
        raise ctx.fail(f"{kp}.threads", f"expected a list of thread counts such as [1, 2] "
                       f"or 'all', got {clip(repr(value))}")
    counts = tuple(ctx.posint(t, f"{kp}.threads[{i}]", optional=False, maximum=MAX_THREADS)
                   or 1 for i, t in enumerate(value))
    return LibraryOptions(threads=tuple(dict.fromkeys(counts)))


def multi_counts(ctx: CheckContext, value: Any, keypath: str) -> tuple[int, ...]:
    """``multi: 2``, ``multi: [1, 2]`` or ``multi: all`` (0 stands for all, resolved per
    engine when the bench plans its commands)."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ctx.fail(keypath, "list at least one process count (or leave the key out)")
    out: list[int] = []
    for i, item in enumerate(items):
        kpi = keypath if not isinstance(value, list) else f"{keypath}[{i}]"
        if item == "all":
            n = 0
        elif isinstance(item, str):
            raise ctx.fail(kpi, f"expected a process count or 'all', got {clip(item, 40)}")
        else:
            n = ctx.posint(item, kpi, maximum=MAX_MULTI) or 0
        if n in out:
            raise ctx.fail(kpi, f"{'all' if n == 0 else n} is listed twice")
        out.append(n)
    return tuple(out)


def suite_kind(ctx: CheckContext, kind: str, entry: Mapping[str, Any], algorithms: tuple[str, ...],
                kp: str) -> TlsOptions | None:
    """Check what a pkey or tls suite lists; the TLS options of a tls suite."""
    tls_keys = [k for k in ("protocols", "modes", "pinning") if k in entry]
    if kind != "tls" and tls_keys:
        raise ctx.fail(f"{kp}.{tls_keys[0]}", "only a suite with kind: tls takes this key")
    if kind == "speed":
        return None
    if kind == "pts":  # pts/openssl's command and columns: see pts.py
        for key in ("evp", "engine", "provider", "devices", "bytes", "decrypt"):
            if key in entry:
                raise ctx.fail(f"{kp}.{key}", "not used by a suite with kind: pts (it runs "
                               "pts/openssl's command lines)")
        for i, a in enumerate(algorithms):
            if a not in PTS_OPTIONS:
                raise ctx.fail(f"{kp}.algorithms[{i}]", f"{a!r} is not an entry of "
                               "pts/openssl's algorithm menu",
                               hint=choices_hint(a, list(PTS_OPTIONS)))
        return None
    if kind == "aead":  # the method (-aead or plain EVP) is the version's: see aead.py
        for key in ("evp", "engine", "provider", "devices"):
            if key in entry:
                raise ctx.fail(f"{kp}.{key}", "not used by a suite with kind: aead (the "
                               "method, -aead or plain EVP, follows the version)")
        for i, a in enumerate(algorithms):
            if a not in AEAD_ALGORITHMS:
                raise ctx.fail(f"{kp}.algorithms[{i}]", f"{a!r} is not an AEAD cipher",
                               hint=choices_hint(a, list(AEAD_ALGORITHMS)))
        return None
    for key in ("evp", "decrypt", "engine", "bytes", "multi"):
        if key in entry:
            raise ctx.fail(f"{kp}.{key}", f"not used by a suite with kind: {kind}")
    if kind == "pkey":
        for i, a in enumerate(algorithms):
            if a not in PK_ALGORITHMS:
                raise ctx.fail(f"{kp}.algorithms[{i}]", f"{a!r} is not a public-key test",
                               hint=choices_hint(a, list(PK_ALGORITHMS)))
        return None
    for i, a in enumerate(algorithms):
        if a not in TLS_KEYS:
            raise ctx.fail(f"{kp}.algorithms[{i}]", f"{a!r} is not a server key type of a "
                           "tls suite", hint=choices_hint(a, list(TLS_KEYS)))

    def listed(key: str, allowed: Sequence[str], default: tuple[str, ...]) -> tuple[str, ...]:
        if key not in entry:
            return default
        items = ctx.tokens(entry.get(key), f"{kp}.{key}")
        if not items:
            raise ctx.fail(f"{kp}.{key}", "list at least one")
        for i, item in enumerate(items):
            if item not in allowed:
                raise ctx.fail(f"{kp}.{key}[{i}]", f"{item!r} is not one of "
                               + ", ".join(allowed), hint=choices_hint(item, allowed))
        return items

    defaults = TlsOptions()
    return TlsOptions(
        protocols=listed("protocols", list(TLS_PROTOCOLS), defaults.protocols),
        modes=listed("modes", TLS_MODES, defaults.modes),
        pinning=listed("pinning", TLS_PINNINGS, defaults.pinning),
        seconds=ctx.posint(entry.get("seconds"), f"{kp}.seconds") or defaults.seconds)
