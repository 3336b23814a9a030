"""Indented JSON at the speed of the C encoder: the text ``json.dumps(obj, indent=2, ...)``
gives, byte for byte, for the plain data the tool writes (dicts with string keys, lists,
tuples, strings, numbers, booleans, None).

``json.dumps`` with ``indent`` runs the pure-Python encoder (the C one only writes compact
JSON): for ``parse --json`` of 20,000 runs and an import's 40,000 files that is most of
their time. Here every scalar goes through the C functions ``json`` itself uses
(``encode_basestring_ascii``, ``float.__repr__``) and only the containers' layout is
Python. Anything else (a key that is not a string, an object for ``default``, nesting
deeper than :data:`_MAX_DEPTH`, a cycle) is handed to ``json.dumps`` whole, so its result
and its errors are the reference's own. tests/unit/test_jsonfast.py compares the two.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain
from json.encoder import encode_basestring_ascii
from typing import Any

_MAX_DEPTH = 64


class _Fallback(Exception):
    """This object needs the reference encoder."""


def _scalar(value: Any, allow_nan: bool) -> str | None:
    """The JSON of a scalar as ``json`` writes it, or None when ``value`` is a container."""
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            if not allow_nan:
                raise _Fallback  # the reference raises its own ValueError
            return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
        return float.__repr__(value)
    if isinstance(value, (list, tuple, dict)):
        return None
    raise _Fallback  # default= decides


_SCALARS = frozenset({str, int, float, bool, type(None)})
_ENCODERS: dict[tuple[int, bool, bool], json.JSONEncoder] = {}


def _flat(value: Any, level: int, sort_keys: bool, allow_nan: bool) -> str:
    """A dict or list of scalars only, by the C encoder: its item separator carries the
    line break and the indentation that ``indent=2`` puts between items."""
    key = (level, sort_keys, allow_nan)
    encoder = _ENCODERS.get(key)
    if encoder is None:
        encoder = _ENCODERS[key] = json.JSONEncoder(
            separators=(",\n" + "  " * (level + 1), ": "), sort_keys=sort_keys,
            allow_nan=allow_nan)
    try:
        text = encoder.encode(value)
    except ValueError:
        raise _Fallback from None  # NaN refused: the reference's own error
    return f"{text[0]}\n{'  ' * (level + 1)}{text[1:-1]}\n{'  ' * level}{text[-1]}"


def _chunks(value: Any, level: int, sort_keys: bool, allow_nan: bool,
            ) -> Iterator[str]:
    if level > _MAX_DEPTH:
        raise _Fallback
    text = _scalar(value, allow_nan)
    if text is not None:
        yield text
        return
    if not value:
        yield "{}" if isinstance(value, dict) else "[]"
        return
    scalars = _SCALARS
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise _Fallback
        if all(type(v) in scalars for v in value.values()):
            yield _flat(value, level, sort_keys, allow_nan)
            return
        items = sorted(value.items()) if sort_keys else list(value.items())
    elif all(type(v) in scalars for v in value):
        yield _flat(value, level, sort_keys, allow_nan)
        return
    else:
        items = [(None, v) for v in value]
    inner = "\n" + "  " * (level + 1)
    opener = "{" if isinstance(value, dict) else "["
    for key, item in items:
        yield opener + inner if key is None else \
            f"{opener}{inner}{encode_basestring_ascii(key)}: "
        opener = ","
        yield from _chunks(item, level + 1, sort_keys, allow_nan)
    yield "\n" + "  " * level + ("}" if isinstance(value, dict) else "]")


def dumps_indented(obj: Any, *, sort_keys: bool = False, allow_nan: bool = True,
                   default: Callable[[Any], Any] | None = None, level: int = 0) -> str:
    """``json.dumps(obj, indent=2, sort_keys=sort_keys, allow_nan=allow_nan,
    default=default)``; ``level``: as if ``obj`` sat that deep in an enclosing document
    (its inner lines indented by ``2 * level`` more blanks)."""
    try:
        return "".join(_chunks(obj, level, sort_keys, allow_nan))
    except _Fallback:
        text = json.dumps(obj, indent=2, sort_keys=sort_keys, allow_nan=allow_nan,
                          default=default)
        return text.replace("\n", "\n" + "  " * level) if level else text


#: Every value of a table at once, by one C call: a NUL never appears in its output
#: outside a separator (a NUL in a string is written ``\\u0000``).
_VALUES = json.JSONEncoder(separators=("\0", ": "))


def rows_indented(keys: Sequence[str], rows: Iterable[Sequence[Any]], *, level: int = 0,
                  ) -> str:
    """``dumps_indented([dict(zip(keys, row)) for row in rows], level=level)`` (NaN and
    infinities as it writes them, too) without
    the dicts: every value by one call of the C encoder, the layout by joins (``parse
    --json`` writes 440,000 such records for a paste of 20,000 runs)."""
    values = list(chain.from_iterable(rows))
    width = len(keys)
    if not values or not width or len(values) % width or len(set(keys)) != width or \
            not set(map(type, values)) <= _SCALARS:
        # (no rows, ragged rows, a key twice, a container or a subclass: the reference)
        return dumps_indented([dict(zip(keys, row, strict=True)) for row in
                               _rows(values, width)], level=level)
    text = _VALUES.encode(values)
    parts = text[1:-1].split("\0")
    row, field = "  " * (level + 1), "  " * (level + 2)
    names = [encode_basestring_ascii(k) + ": " for k in keys]
    inner = [f",\n{field}{name}" for name in names]
    between = [f"\n{row}}},\n{row}{{\n{field}{names[0]}", *inner[1:]]
    prefixes = between * (len(values) // width)
    prefixes[0] = f"[\n{row}{{\n{field}{names[0]}"
    return "".join(chain.from_iterable(zip(prefixes, parts, strict=True))) + \
        f"\n{row}}}\n{'  ' * level}]"


def _rows(values: list[Any], width: int) -> list[list[Any]]:
    return [values[i:i + width] for i in range(0, len(values), width)] if width else []


#: A scalar of a layout's skeleton: a string no document of the tool holds (NUL marks).
_MARK = "\0{}\0"
_MARK_RE = re.compile(r'"\\u0000\d+\\u0000"')


def layout(skeleton: Any, *, level: int = 0) -> list[str]:
    """The text :func:`dumps_indented` gives ``skeleton`` (whose scalars are all
    :func:`mark` strings, in the order they are written), cut at its scalars: the text
    between them, for :func:`fill`."""
    return _MARK_RE.split(dumps_indented(skeleton, level=level))


def mark(number: int) -> str:
    """The ``number``-th scalar of a layout's skeleton."""
    return _MARK.format(number)


def fill(texts: Sequence[str], values: Sequence[Any]) -> str | None:
    """A :func:`layout` filled with ``values`` (one per scalar, in order): the text
    ``dumps_indented`` gives the document they make, every value by one C-encoder call;
    None when a value is not a plain scalar (whose container or type the layout cannot
    know: the caller writes the document itself)."""
    if len(texts) != len(values) + 1 or not set(map(type, values)) <= _SCALARS:
        return None
    if not values:
        return texts[0]
    parts = _VALUES.encode(values)[1:-1].split("\0")
    return "".join(chain.from_iterable(zip(texts, parts, strict=False))) + texts[-1]
