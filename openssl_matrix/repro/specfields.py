"""The fields of a published-report spec that several parts share: required keys, text,
figures, ratios and block sizes, checked the way :mod:`openssl_matrix.repro.specload`
reports errors (the key path, and what to write instead)."""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from openssl_matrix.matrix.check import CheckContext
from openssl_matrix.parse.figures import MAX_BLOCK_SIZE


def required(ctx: CheckContext, mapping: Mapping[str, Any], key: str, keypath: str) -> Any:
    if key not in mapping or mapping[key] is None:
        where = f"{keypath}.{key}" if keypath else key
        raise ctx.fail(where, "is required", hint="see docs/reports.md for what goes here")
    return mapping[key]


def plain_text(ctx: CheckContext, value: Any, keypath: str) -> str:
    if value is None:
        return ""
    return ctx.string(value, keypath).strip()


def opt_text(ctx: CheckContext, value: Any, keypath: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    return ctx.string(value, keypath).strip()


#: A reference figure as a report prints it: 1000s of bytes/s (``k``), or bytes/s.
FIGURE = re.compile(r"^\s*([0-9][0-9,]*(?:\.[0-9]+)?)\s*(k|B/s)?\s*\Z")


def parse_figure(ctx: CheckContext, value: Any, keypath: str) -> float:
    """A reference figure: a number in 1000s of bytes/s, or text as printed (``1,234.5k``)."""
    if isinstance(value, bool):
        raise ctx.fail(keypath, f"expected a figure, got {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ctx.fail(keypath, f"a figure cannot be negative ({value!r})")
        return possible_figure(ctx, float(value) * 1000.0, keypath, value)
    if isinstance(value, str):
        m = FIGURE.match(value)
        if m:  # through Decimal: '8365.14k' is 8365140.0, as the parser reads it
            number = Decimal(m.group(1).replace(",", ""))
            return possible_figure(ctx, float(number if m.group(2) == "B/s" else
                                                number * 1000), keypath, value)
    raise ctx.fail(keypath, f"{value!r} is not a figure",
                   hint="write it as printed, e.g. 305049.90k or '1,086,559.57k' "
                   "(1000s of bytes per second), or '9876.54 B/s'")


#: No ``openssl speed`` figure reaches this: 1 TB/s (a figure 1000 times too large, in
#: bytes where the report printed 1000s of bytes, still stays below it for real CPUs).
MAX_BYTES_PER_S = 1e12
#: Nor does any public-key or handshake rate: a billion operations per second.
MAX_OPS_PER_S = 1e9
#: A claimed ratio between two figures beyond this is a transcription slip, not a claim.
MAX_RATIO = 1e4


def possible_figure(ctx: CheckContext, figure: float, keypath: str, written: Any,
                    limit: float = MAX_BYTES_PER_S, unit: str = "bytes/s") -> float:
    """``figure`` if a real run could print it: finite, above zero, below ``limit``."""
    if not math.isfinite(figure):
        raise ctx.fail(keypath, f"{written!r} is not a finite figure",
                       hint="write the figure the report prints")
    if figure == 0:
        raise ctx.fail(keypath, f"a figure of {written!r} cannot be compared (a ratio with "
                       "it is 0 or infinite)", hint="leave the block size out if the report "
                       "prints no figure for it")
    if figure > limit:
        raise ctx.fail(keypath, f"{written!r} is {figure:.3g} {unit}: no openssl speed run "
                       f"gives more than {limit:.0e}", hint="check the units: bare numbers are "
                       "1000s of bytes per second, as speed prints them (305049.90k)")
    return figure


def ratio_number(ctx: CheckContext, value: Any, keypath: str) -> float | None:
    """A claim's ratio or tolerance: a positive finite number (NaN and inf refused)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ctx.fail(keypath, f"expected a finite positive number, got {value!r}")
    number = ctx.number(value, keypath)
    if number is not None and number > MAX_RATIO:
        raise ctx.fail(keypath, f"{number:g} is not a ratio a report claims between two "
                       f"figures (more than {MAX_RATIO:g}×)",
                       hint="write the ratio as the report states it, e.g. 2 for twice as fast")
    return number


def split_figure(key: Any) -> bool:
    """A mapping key that is really the tail of a figure split at a comma by YAML."""
    return not isinstance(key, str) or bool(re.match(r"^\d{3}(\.\d+)?(k|B/s)?\Z", key))


def sizes_mapping(ctx: CheckContext, value: Any, keypath: str) -> dict[Any, Any]:
    """A mapping keyed by block size (YAML reads the keys as numbers)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ctx.fail(keypath, "expected a mapping of block size to figure, e.g. "
                       "{16: 305049.90k, 8192: 333987.84k}")
    for key in value:
        if isinstance(key, str) and split_figure(key):
            raise ctx.fail(keypath, f"{key!r} is not a block size: a figure with thousands "
                           "separators was split at a comma in a {flow: mapping}",
                           hint="quote such figures: {8192: '1,086,559.57k'}")
    return value


def parse_block(ctx: CheckContext, key: Any, keypath: str) -> int:
    text = str(key)
    if isinstance(key, bool) or not text.isdigit() or len(text) > 10 or \
            not 0 < int(text) <= MAX_BLOCK_SIZE:
        raise ctx.fail(keypath if keypath.endswith("block_size") else f"{keypath}.{text}",
                       f"{text!r} is not a block size in bytes",
                       hint="keys are block sizes: 16, 64, 256, 1024, 8192, 16384")
    return int(text)
