"""The suite kinds: one module each, answering :class:`~.base.SuiteKind`, and this
registry. Adding a kind is one new module and one line below (see docs/layout.md)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.matrix.check import CheckContext
from openssl_matrix.matrix.kinds import aead, library, pkey, pts, speed, tls
from openssl_matrix.matrix.kinds.base import KindOptions, SuiteKind

#: Every suite kind by name, in the order error messages list them.
KINDS: dict[str, SuiteKind] = {k.name: k for k in (
    speed.KIND, aead.KIND, pkey.KIND, tls.KIND, pts.KIND, library.KIND,
)}


def kind_of(name: str | None) -> SuiteKind:
    """The kind named ``name`` (None or empty: ``speed``, a suite's default)."""
    found = KINDS.get(name or speed.KIND.name)
    if found is None:
        raise ConfigError(f"{name!r} is not a suite kind ({', '.join(KINDS)})")
    return found


def find_kind(name: object) -> SuiteKind | None:
    """The kind named ``name`` in a record read back (None: not a kind this tool knows)."""
    return KINDS.get(name) if isinstance(name, str) else None


def kind_of_path(path: object) -> SuiteKind | None:
    """The kind whose figures are filed under ``path`` (the first that files there:
    ``evp`` is speed's, though an AEAD run without -aead files there too)."""
    for k in KINDS.values():
        if path in k.paths(True, True) or path in k.paths(False, False):
            return k
    return None


def check_entry(ctx: CheckContext, kind: SuiteKind, entry: Mapping[str, Any],
                algorithms: tuple[str, ...], kp: str) -> KindOptions:
    """The kind's own check, then the keys only another kind takes refused."""
    options = kind.check(ctx, entry, algorithms, kp)
    for other in KINDS.values():
        for key in () if other is kind else other.exclusive_keys:
            if key in entry:
                raise ctx.fail(f"{kp}.{key}", f"only a suite with kind: {other.name} takes "
                               "this key")
    return options


@contextmanager
def registered(kind: SuiteKind) -> Iterator[SuiteKind]:
    """``kind`` in the registry for a while (a test's kind of its own)."""
    if kind.name in KINDS:
        raise ValueError(f"a suite kind named {kind.name!r} is registered already")
    KINDS[kind.name] = kind
    try:
        yield kind
    finally:
        del KINDS[kind.name]
