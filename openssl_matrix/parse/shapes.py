"""What a line of ``openssl speed`` output is, decided once per distinct line.

The line reader (:class:`openssl_matrix.parse.lines.Builder`) asks, for every line, the
same questions in the same order: a header line (version, a field, the 'numbers' note)?
a ``type`` header? a public-key table header? a public-key row (rsa, dsa, ffdh, a
curve)? a symmetric row's name and figures? Each answer depends on the line's text
alone, so :func:`shape_of` gives them all at once as a *shape*, and :data:`SHAPES`
keeps the shape of each line seen (bounded): a paste of 20,000 runs repeats its header,
table headers and often its rows, and each repeated line is then one dictionary look-up
instead of its patterns. What depends on the reader's state (the table's block sizes,
the EVP-ness, a 3.2+ KEM or signature table) is decided by the reader when it applies
the shape; a shape's ``memo`` keeps the figures a row gave for that state (figures are
frozen: sharing one between runs changes nothing).

Lines the reader treats specially before these questions (``-multi`` echoes, progress,
``-mr`` records, the elapsed-time notice) have no shape: :func:`has_shape`.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from openssl_matrix.parse.fastpaths import FAST, register_cache
from openssl_matrix.parse.grammar import (
    ELAPSED_RE,
    FAMILY_OPERATIONS,
    HEADER_FIELD_RES,
    HEADER_LINE_STARTS,
    NUMBERS_NOTE_RE,
    PK_CURVE_RE,
    PK_FFDH_RE,
    PK_HEADERS,
    PK_RSA_DSA_RE,
    SYM_HEADER_RE,
    SYM_VALUE_RE,
    VERSION3_LINE_RE,
    VERSION_LINE_RE,
    canonical_curve,
)

ELAPSED_TEXT = ELAPSED_RE.pattern
assert re.escape(ELAPSED_TEXT) == ELAPSED_TEXT.replace(" ", "\\ ")  # no metacharacter
PK_HEADER_FIRST = tuple(sorted({columns[0] for columns in PK_HEADERS}))
assert SYM_HEADER_RE.pattern.startswith(r"^\s*type")
#: Lines the reader handles before asking for a shape (they change its state otherwise).
SPECIAL_STARTS = ("Got: ", "Forked child", "Doing ", "+")


def _literal_prefix(regex: re.Pattern[str]) -> str:
    """The text a stripped line must start with for ``regex`` (``^\\s*`` and a literal)
    to match it: its literal characters up to the first special one."""
    body = regex.pattern.removeprefix(r"^\s*").lstrip("(")
    literal = re.match(r"[^\\\[\](){}.*+?|^$]*", body)
    assert literal is not None and literal.group(0) and not regex.flags & re.I
    return literal.group(0)


#: What a header line starts with: a row ("aes-128 cbc ...") is tried against none of
#: their patterns.
HEADER_PREFIXES = tuple(
    _literal_prefix(r)
    for r in (VERSION_LINE_RE, VERSION3_LINE_RE, NUMBERS_NOTE_RE, *(r for _, r in HEADER_FIELD_RES))
)

#: The kinds of shape (the first item of each shape tuple).
HEADER, SYMHEADER, PKHEADER, PKROW, ROW = "header", "symheader", "pkheader", "pkrow", "row"

#: Shapes of the lines seen, by stripped line; cleared when it holds :data:`SHAPES_MAX`.
SHAPES: dict[str, tuple[Any, ...]] = {}
register_cache(SHAPES.clear)
SHAPES_MAX = 256


def has_shape(stripped: str) -> bool:
    """Whether the reader asks :func:`shape_of` about this (stripped, non-empty) line."""
    return not stripped.startswith(SPECIAL_STARTS) and ELAPSED_TEXT not in stripped


def remembered(stripped: str) -> tuple[Any, ...]:
    """:func:`shape_of`, kept in :data:`SHAPES` (only for lines :func:`has_shape`; not
    kept inside ``fastpaths.slow_paths``)."""
    shape = shape_of(stripped)
    if not FAST.on:
        return shape
    if len(SHAPES) >= SHAPES_MAX:
        SHAPES.clear()
    SHAPES[stripped] = shape
    return shape


def header_values(line: str) -> tuple[tuple[str, str], ...] | None:
    """The header values a header line sets (none for the 'numbers' note), or None when
    the (stripped, non-empty) line is no header line."""
    if line[0] not in HEADER_LINE_STARTS or not line.startswith(HEADER_PREFIXES):
        return None
    match = VERSION_LINE_RE.match(line) or VERSION3_LINE_RE.match(line)
    if match:
        return (("version_line", match.group(1)), ("version", match.group(2)))
    for name, regex in HEADER_FIELD_RES:
        match = regex.match(line)
        if match:
            return ((name, match.group(1)),)
    return () if NUMBERS_NOTE_RE.match(line) else None


def sym_split(line: str) -> tuple[str, list[str]] | None:
    """A symmetric row's name and printed figures (the trailing number tokens), or None
    when the line has no name or no figure."""
    tokens = line.split()
    cut, fullmatch = len(tokens), SYM_VALUE_RE.fullmatch
    while cut and fullmatch(tokens[cut - 1]):
        cut -= 1
    values, tokens = tokens[cut:], tokens[:cut]
    if not tokens or not values:
        return None
    return sys.intern(" ".join(tokens)), values  # a row name: one string for all runs


def pk_identity(line: str) -> tuple[str, int, str, str, list[str]] | None:
    """A classic public-key row (rsa, dsa, ffdh, a curve): family, bits, algorithm id,
    label and value tokens; None for any other line."""
    # line is stripped: "rsa", "dsa" or the digits of a bit count start these rows
    first = line[0]
    match = PK_RSA_DSA_RE.match(line) if first in "rd" else \
        PK_FFDH_RE.match(line) if first.isdigit() else None
    curve = None
    if match is None and first.isdigit():
        match = PK_CURVE_RE.match(line)
        if match is not None:
            curve = match.group("curve")
    if match is None:
        return None
    family = match.group("fam").lower()
    bits = int(match.group("bits"))
    label = sys.intern(line[: match.start("vals")].strip())  # as for sym_split
    if family in ("ecdsa", "ecdh"):
        assert curve is not None
        algorithm = f"{family}-{canonical_curve(curve)}"
    elif family == "eddsa" or family == "sm2":
        assert curve is not None
        algorithm = "sm2" if family == "sm2" else curve.lower()
    else:
        algorithm = f"{family}-{bits}"
    return family, bits, algorithm, label, match.group("vals").split()


def pk_columns_ok(family: str, tokens: list[str]) -> bool:
    """Whether a public-key row's value tokens are the seconds and rates its family's
    operations print (else its figures are unparsable, with a warning)."""
    count = len(tokens) // 2
    operations = FAMILY_OPERATIONS.get("rsa4" if family == "rsa" and count == 4 else family,
                                       ())
    return (len(tokens) % 2 == 0 and count == len(operations)
            and all(tok.endswith("s") for tok in tokens[:count]))


def shape_of(line: str) -> tuple[Any, ...]:
    """The shape of a stripped, non-empty line that :func:`has_shape`: the answers the
    reader's questions give, in its order (see the module's docstring)."""
    values = header_values(line)
    if values is not None:
        return (HEADER, values)
    match = SYM_HEADER_RE.match(line) if line.startswith("type") else None
    if match:
        return (SYMHEADER, tuple(int(n) for n in re.findall(r"\d+", match.group(1))))
    columns = tuple(line.split()) if line.startswith(PK_HEADER_FIRST) else ()
    if columns in PK_HEADERS:
        return (PKHEADER, PK_HEADERS[columns])
    identity = pk_identity(line)
    if identity is not None:
        family, bits, algorithm, label, tokens = identity
        return (PKROW, family, bits, algorithm, label, tokens,
                pk_columns_ok(family, tokens), {})
    return row_shape(line)


#: A row as a paste's lines give it (one blank between words) whose figures are all
#: common cells (``208570.35k``, :func:`openssl_matrix.parse.figures.common_row`): its
#: name (as few words as can be) and its figures, by one match.
_COMMON_ROW = re.compile(r"(\S+(?: \S+)*?)((?: [0-9]{1,11}\.[0-9]{2}k)+)")


def row_shape(line: str) -> tuple[Any, ...]:
    """The shape of a line that is no header and no public-key row: its name and figures
    as :func:`sym_split` gives them (None when it has none), whether every figure is a
    common cell, and the memo of its figures."""
    match = _COMMON_ROW.fullmatch(line) if FAST.on else None
    if match is not None:
        label = match.group(1)
        # the name's last word is no figure of another form ("1.5", "inf"): the figures
        # are all the trailing number tokens, as sym_split finds them
        if not SYM_VALUE_RE.fullmatch(label.rpartition(" ")[2]):
            return (ROW, sys.intern(label), match.group(2).split(), {}, True)
    split = sym_split(line)
    return (ROW, None, None, None, False) if split is None else \
        (ROW, split[0], split[1], {}, False)
