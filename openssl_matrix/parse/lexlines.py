"""The paste lexer's line cache and line path: a whole line read again as it was read
before, and chunks of whole lines read without tokenizing them.

The lexer (:mod:`openssl_matrix.parse.paste`) reads a paste token by token, so that lost
line breaks and wrapping do not matter. But a paste of many runs repeats its lines: the
version line, the header fields, the 'numbers' note, the table headers, and often the
rows. When a line that starts where a line of the text starts was read, as a whole, as
one item (a row, a header, a field ...), the lexer keeps it here, with its state before
and after (the symmetric table's width, the public-key table) and the condition on what
follows the line under which the same reading holds: the next time the same line comes
in the same state and the condition holds, the item is emitted without the steps.

Why a line's reading depends on nothing else (each decision of the lexer's ``_step``
looks at the line's own tokens, and at most at the first token after it):

* a row of a symmetric table reads the next token (it must not be a number);
* a ``type 16 bytes ...`` header would go on into a next line that starts with digits;
* an ``OpenSSL 1.1.1w  11 Sep 2023`` line would take a ``(...)`` that follows it;
* a header field's value runs to the next structure: kept only when none of its own
  words can start one (:data:`_ANCHOR_WORD`: every structure the anchor pattern knows
  starts with one of these), and replayed only when the next token starts one;
* a line that could be the start of a longer literal (a field name or table header of
  several words) is not kept, nor one that starts with a word the lexer reads as a
  marker (``Got:``, ``+H``, ``Doing`` ...) unless it is a version line.

Only lines with a line break after them are considered (a paste that kept its lines);
``-multi`` parent tables (read with the children's sizes) are not.

The line path (:func:`line_items`) goes one step further: a chunk of a paste that kept
its lines, with no quote mark in it, is split into lines once and read line by line
without tokenizing it, when every line of it is one item of its own (a row by
:func:`row_line`, a line kept here, a header field, or a line the steps read once, in a
scratch lexer, and keep); a chunk with any other line (wrapped, joined, prose, a BOM) is
cut before each version line in it and its pieces tried in turn: a piece refused is read
token by token, from its start, so every odd case keeps the steps' reading.
tests/unit/test_parse_shapes.py compares the lexer with and without this cache and path.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from openssl_matrix.parse.fastpaths import FAST, register_cache
from openssl_matrix.parse.lexvocab import (
    _R_ANCHOR,
    _R_FIELDS,
    _R_FIELDS_BY_START,
    _R_LABEL_END,
    _R_LABEL_MODE,
    _R_MARKER_WORDS,
    _R_NUM,
    _R_NUM_TOKEN,
    _R_PK_HEADER_TEXTS,
    _Item,
)

#: Item kinds a line may be kept as.
KEPT_KINDS = frozenset(("version", "field", "numbers", "symheader", "symrow", "pkheader",
                        "pkrow"))

#: Conditions on the token after the line.
ANY, NEXT_NOT_NUMBER, NEXT_NOT_DIGIT, NEXT_NOT_PAREN, NEXT_ANCHOR = range(5)

#: A word that may start a structure the anchor pattern matches (a superset: the first
#: word of each of its alternatives, as a prefix).
_ANCHOR_WORD = re.compile("|".join(re.escape(w) for w in sorted({
    "OpenSSL", "version:", "The", "type", "Doing", "You", "+", "$",
    *(f.split()[0] for f in _R_FIELDS), *(t.split()[0] for t in _R_PK_HEADER_TEXTS),
})))
#: Literals of several words the lexer matches at a token: a line that is the start of
#: one could be read otherwise with another line after it.
_LITERALS = (*_R_FIELDS, *_R_PK_HEADER_TEXTS, "The 'numbers' are", "You have chosen")
_LITERALS_BY_START = {c: tuple(t for t in _LITERALS if t[0] == c) for c in
                      {t[0] for t in _LITERALS}}

#: (line, table width, public-key table) -> (kind, width after, table after, condition)
LINES: dict[tuple[str, int, str | None], tuple[str, int, str | None, int]] = {}
register_cache(LINES.clear)
LINES_MAX = 256


def condition(kind: str, text: str, tokens: list[str]) -> int | None:
    """The condition under which a line (``text``, its ``tokens``) read as one item of
    ``kind`` is read so again, or None when it is not to be kept."""
    first = tokens[0]
    if kind == "version":
        return NEXT_NOT_PAREN if first == "OpenSSL" else ANY
    if kind not in KEPT_KINDS or first in _R_MARKER_WORDS or first.startswith("+"):
        return None
    if kind == "field":
        name = next(f for f in _R_FIELDS if text.startswith(f))
        if any(_ANCHOR_WORD.match(t) or t.endswith("openssl")
               for t in tokens[len(name.split()):]):
            return None
        return NEXT_ANCHOR
    if kind == "pkheader":
        return ANY
    if kind == "numbers":
        return ANY if text.endswith(".") else None
    if _starts_literal(text):
        return None
    if kind == "pkrow":
        return ANY
    return NEXT_NOT_NUMBER if kind == "symrow" else NEXT_NOT_DIGIT


def _starts_literal(text: str) -> bool:
    """Whether ``text`` is the start of a literal of :data:`_LITERALS`."""
    return any(literal.startswith(text) for literal in _LITERALS_BY_START.get(text[0], ()))


#: A symmetric row as a whole line: a name of one word, or of two whose second is a mode,
#: then number tokens only (the row ``_sym_row_end`` finds, when the name may be one).
_ROW_LINE = re.compile(rf"(\S+)(?: (?:{_R_LABEL_MODE.pattern}))?((?: {_R_NUM})+)")


def row_line(text: str, columns: int) -> bool:
    """Whether the lexer's steps read the line ``text``, at a line start in a symmetric
    table of ``columns`` figures, as one row, when the token after it is no number:
    it has exactly ``columns`` figures, and its name is no marker, field or number and
    does not end a sentence (as ``_sym_row_end`` asks; :func:`_row_name`)."""
    match = _ROW_LINE.fullmatch(text)
    if match is None or match.group(2).count(" ") != columns:
        return False
    name = match.group(1)
    known = _ROW_NAMES.get(name)
    if known is None:
        if len(_ROW_NAMES) >= LINES_MAX:
            _ROW_NAMES.clear()
        known = _ROW_NAMES[name] = _row_name(name)
    return known


_ROW_NAMES: dict[str, bool] = {}
#: The field names of one word (those of several cannot start a row: a row's second
#: word is a mode or a number, never "on:", "source:", "timing" or "function").
_ONE_WORD_FIELDS = tuple(f for f in _R_FIELDS if " " not in f)


def _row_name(name: str) -> bool:
    """Whether a line of :data:`_ROW_LINE`'s shape whose first word is ``name`` is read as
    a row: no marker word or ``-mr`` record starts it, no field name (a field of one word
    has no blank, so the line starts with it only if ``name`` does), and ``name`` is no
    number and does not end a sentence. (No literal of several words starts with such a
    line: none holds a number token.)"""
    return not (name in _R_MARKER_WORDS or name.startswith("+") or _R_NUM_TOKEN.fullmatch(name)
                or _R_LABEL_END.search(name) or name.startswith(_ONE_WORD_FIELDS))


def keep(key: tuple[str, int, str | None], kept: tuple[str, int, str | None, int]) -> None:
    if not FAST.on:
        return
    if len(LINES) >= LINES_MAX:
        LINES.clear()
    LINES[key] = kept


def next_holds(cond: int, tokens: list[str], stop: int) -> bool | None:
    """Whether the token at ``stop`` meets the condition (None: the lexer must look,
    :data:`NEXT_ANCHOR`)."""
    if stop >= len(tokens):
        return True
    return _word_meets(cond, tokens[stop])


def _word_meets(cond: int, after: str) -> bool | None:
    """Whether the next word (``after``) meets ``cond``; None for :data:`NEXT_ANCHOR`,
    which the next word alone cannot answer."""
    if cond == ANY:
        return True
    if cond == NEXT_NOT_NUMBER:
        return not _R_NUM_TOKEN.fullmatch(after)
    if cond == NEXT_NOT_DIGIT:
        return not after[:1].isdigit()
    if cond == NEXT_NOT_PAREN:
        return not after.startswith("(")
    return None


#: A line's first reading, when it is not kept: (its words, the next line's words, the
#: symmetric table's width, the public-key table) -> (kind, width after, table after), or
#: None when the steps read it as anything but one item of its own.
FirstReading = Callable[[list[str], list[str], int, "str | None"],
                        "tuple[str, int, str | None] | None"]


def line_items(chunk: str, columns: int, pk_kind: str | None, first: FirstReading,
               ) -> tuple[list[_Item], int, str | None] | None:
    """The items of a chunk of a paste that kept its lines, read line by line without
    tokenizing it, when each of its lines is read as one item of its own; else None (the
    lexer reads the chunk token by token).

    The caller passes a chunk that follows a version line's start (parse/paste.py's
    windows) or starts the paste, holds no quote mark, and is read from a line start with
    no ``-multi`` table open, in the state ``columns``, ``pk_kind``. A line is accepted
    as ``_step_line`` reads it: a row of the symmetric table by :func:`row_line`, or the
    reading kept in :data:`LINES` (or found now by ``first`` and kept) under its condition
    on the next line's first word; a condition that needs the anchor pattern is met only
    when the next line alone matches it (a match there is one in the joined text). After
    the chunk's last line comes the next chunk's version line, which meets every
    condition, or the paste's end."""
    texts = [t for t in map(" ".join, map(str.split, chunk.splitlines())) if t]
    out: list[_Item] = []
    append = out.append
    last = len(texts) - 1
    for k, text in enumerate(texts):
        if columns and row_line(text, columns) and (
                k == last or not _R_NUM_TOKEN.fullmatch(texts[k + 1].partition(" ")[0])):
            append(_Item("symrow", text))
            continue
        key = (text, columns, pk_kind)
        kept = LINES.get(key)
        if kept is None:
            kept = _field(text, columns, pk_kind)
            if kept is None:
                read = first(text.split(" "), texts[k + 1].split(" ") if k < last else [],
                             columns, pk_kind)
                if read is None:
                    return None
                cond = condition(read[0], text, text.split(" "))
                if cond is None:
                    return None
                kept = (*read, cond)
            keep(key, kept)
        if kept[3] != ANY and k < last and not _holds(kept[3], texts[k + 1]):
            return None
        append(_Item(kept[0], text))
        columns, pk_kind = kept[1], kept[2]
    return out, columns, pk_kind


def _field(text: str, columns: int, pk_kind: str | None,
           ) -> tuple[str, int, str | None, int] | None:
    """A header field's line as the steps read it, when its value runs to its line's end
    (no word of it can start a structure: :func:`condition`) and the next line starts one:
    its name is the first of the field names (in their order) the line starts with, and
    no marker word starts a line that starts with a field name. The state is unchanged."""
    for name in _R_FIELDS_BY_START.get(text[0], ()):
        if text.startswith(name):
            cond = condition("field", text, text.split(" "))
            return None if cond is None else ("field", columns, pk_kind, cond)
    return None


def _holds(cond: int, line: str) -> bool:
    """Whether the next line (``line``) meets ``cond``."""
    met = _word_meets(cond, line.partition(" ")[0])
    return met if met is not None else _R_ANCHOR.match(line) is not None
