"""Pasted reports: rebuild the lines of ``openssl speed`` output from a mailing-list post
or blog (mail quoting, wrapped lines, prose between tables, several runs) and split it
into runs, each parsed by the line parser of :mod:`openssl_matrix.parse.lines`.

The public entry point is :func:`openssl_matrix.parse.parse_paste`.
"""

from __future__ import annotations

import gc
import hashlib
import marshal
import re
from array import array
from bisect import bisect_left
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate, chain, count
from operator import add, attrgetter

from openssl_matrix.core.errors import ParseError
from openssl_matrix.parse.fastpaths import FAST, register_cache
from openssl_matrix.parse.figures import SpeedRun, figure_values
from openssl_matrix.parse.grammar import (
    MR_H_RE,
)
from openssl_matrix.parse.lexlines import (
    LINES,
    condition,
    keep,
    line_items,
    next_holds,
    row_line,
)
from openssl_matrix.parse.lexvocab import (
    _QUOTE_PREFIX_RE,
    _R_ANCHOR,
    _R_BITS,
    _R_CURVE,
    _R_ELAPSED,
    _R_ENV_ASSIGN,
    _R_EVP_ARG,
    _R_FIELDS_BY_START,
    _R_FORKED,
    _R_LABEL_END,
    _R_LABEL_LINE_WORDS,
    _R_LABEL_MODE,
    _R_MARKER_WORDS,
    _R_MR,
    _R_MULTI,
    _R_NUM_TOKEN,
    _R_NUMBERS,
    _R_PK_HEADERS_BY_START,
    _R_PK_SECONDS,
    _R_PK_VALUE,
    _R_PROGRESS,
    _R_PROMPT,
    _R_PROSE_WORD,
    _R_QUOTES,
    _R_SPEED_WORD,
    _R_SYM_HEADER,
    _R_VERSION,
    _R_VERSION_FIELD,
    _R_VERSION_RE,
    _Item,
)
from openssl_matrix.parse.lines import parse_lines

# --------------------------------------------------------------------------------------
# Reports: rebuild the lines of a pasted text, then split it into runs
#
# A report is read as a stream of blank-separated tokens, so that lost line breaks, mail
# wrapping and quoting do not matter. The lexer below recognises speed's own structures
# (headers, progress sentences, tables, -mr records, command lines) in that stream and
# emits one logical line per structure; everything else is prose and is dropped. A chunk
# whose lines are each one structure (nearly every paste that kept its lines) is read line
# by line without tokenizing it (parse/lexlines.line_items), in the same state.


#: Where a paste is cut into chunks: a line that starts (quote marks aside) with a version
#: header that ``_R_ANCHOR`` matches, ``OpenSSL 1.1.1w  11 Sep 2023`` or ``version: 3``.
_W_CANDIDATE = re.compile(r"\n(?=[ \t>]*(?:OpenSSL \d|version: \d))")
_W_HEADER = re.compile(rf"{_R_VERSION}|version: \d")
#: Characters of text per chunk (at least; a chunk ends where the next version line is).
_W_CHUNK = 1 << 16


def _windows(text: str, size: int = _W_CHUNK) -> Iterator[str]:
    """``text`` in consecutive pieces of about ``size`` characters or more, each after the
    first starting with a line whose first words are a version header as the lexer reads
    them (quote marks and blanks removed, words joined by one blank). A paste without
    line breaks is one piece."""
    if text.count("\n") <= 2:
        yield text
        return
    start = 0
    while True:
        cut = None
        for found in _W_CANDIDATE.finditer(text, start + size):
            line = _QUOTE_PREFIX_RE.sub("", text[found.end():found.end() + 400].split("\n")[0])
            words = [w for w in line.split()[:40] if not _R_QUOTES.fullmatch(w)]
            if words and words[0] in ("OpenSSL", "version:") and \
                    _W_HEADER.match(" ".join(words)):
                cut = found.end()
                break
        if cut is None:
            yield text[start:]
            return
        yield text[start:cut]
        start = cut


#: Tokens of a window read token by token, with the quoted chunks after a refused one
#: (~350 kB), and with the pieces after a refused piece: few windows where odd lines are many.
_W_STEP_TOKENS, _W_PIECE_TOKENS = 1 << 15, 1 << 11


@dataclass(slots=True)
class _Chunk:
    """A chunk of the paste (:func:`_windows`), its tokens once tokenized, and whether it
    is a piece of a chunk the line path refused, cut before each version line in it."""

    text: str
    tokens: tuple[list[str], bytearray] | None = None
    piece: bool = False


class _Lexer:
    """Reads the paste a window at a time (:func:`_windows`): at most a few chunks of its
    tokens are held, never all of them (a 20,000-run paste: 800,000 tokens, ~9× its
    size as words, offsets and their joined text). ``chunk`` (characters) and ``step``
    (tokens) size the windows: a test reads a text through tiny ones."""

    def __init__(self, text: str, *, chunk: int = _W_CHUNK, step: int = _W_STEP_TOKENS,
                 ) -> None:
        self.text = text
        self.chunk, self.step = chunk, step
        #: Where the text kept its line breaks: does a token end its line? A table row
        #: ends one (wrapped or not); a flattened copy tells nothing, all are True.
        self.lined = text.count("\n") > 2  # quote marks removed keep every line break
        self.tokens: list[str] = []
        self.joined = ""
        self.line_end = bytearray()
        self.offsets = array("I")
        self.items: list[_Item] = []
        self.prose: list[str] = []
        self.sym_columns = 0
        self.pk_kind: str | None = None
        self._texts: Iterator[str] | None = _windows(text, chunk)
        self._ahead: list[_Chunk] = []
        self._scratch: _Lexer | None = None
        self.multi_columns = 0
        """Sizes announced by a -multi child's ``Got: +H:...``: 3.x's parent prints its
        table without a ``type`` header."""

    def _tokenize(self, chunk: str) -> tuple[list[str], bytearray]:
        """A chunk's tokens, and for each whether it ends its line."""
        unquoted = _QUOTE_PREFIX_RE.sub("", chunk)  # "> " and ">>" at line starts
        tokens: list[str] = []
        # one string per distinct word: speed's names, units and headers repeat in every run
        shared: dict[str, str] = {}
        share = shared.setdefault
        line_end = bytearray()
        lined = self.lined
        for line in unquoted.splitlines() if lined else [unquoted]:
            words = line.split()
            if ">" in line:  # inline quote marks
                words = [t for t in words if not _R_QUOTES.fullmatch(t)]
            tokens += map(share, words, words)
            if words:
                line_end += bytes(len(words) - 1) + b"\x01" if lined else \
                    b"\x01" * len(words)
        return tokens, line_end

    def _load(self, window: Sequence[tuple[list[str], bytearray]]) -> None:
        """Make ``window``'s chunks the tokens the lexer reads (indexes from its start)."""
        self.tokens = tokens = list(chain.from_iterable(chunk for chunk, _ in window)) \
            if len(window) > 1 else window[0][0]
        self.line_end = bytearray().join(ends for _, ends in window)
        self.joined = " ".join(tokens)
        # 4-byte offsets while they fit (half the memory of "q" for the same bisection)
        # token k starts after the k tokens before it and their k blanks (C-level loops)
        self.offsets = array("I" if len(self.joined) < 2**32 else "q", [0])
        self.offsets.extend(map(add, accumulate(map(len, tokens)), count(1)))
        self.offsets.pop()  # where a token after the last would start

    # -- helpers -----------------------------------------------------------------------

    def _end_index(self, end: int) -> int | None:
        """Token index following a match ending at character ``end``, if on a boundary."""
        if end >= len(self.joined):
            return len(self.tokens)
        if self.joined[end] != " ":
            return None
        i = bisect_left(self.offsets, end + 1)
        return i if i < len(self.offsets) and self.offsets[i] == end + 1 else None

    def _match(self, regex: re.Pattern[str], i: int) -> tuple[str, int] | None:
        match = regex.match(self.joined, self.offsets[i])
        if match is None:
            return None
        nxt = self._end_index(match.end())
        return (match.group(0), nxt) if nxt is not None else None

    def _until_anchor(self, start: int) -> int:
        """Index of the first token from ``start`` on that begins a known structure."""
        for j in range(start, len(self.tokens)):
            if _R_ANCHOR.match(self.joined, self.offsets[j]) or self._is_command(j):
                return j
            if self.multi_columns and self._sym_row_end(j, self.multi_columns) is not None:
                return j  # the -multi parent's row, right after its header fields
        return len(self.tokens)

    def _is_command(self, i: int) -> bool:
        token = self.tokens[i]
        if not token.endswith("openssl") or i + 1 >= len(self.tokens):
            return False
        if not _R_SPEED_WORD.fullmatch(self.tokens[i + 1]):
            return False
        if "/" in token:
            return True
        j = i - 1
        while j >= 0 and _R_ENV_ASSIGN.fullmatch(self.tokens[j]):
            j -= 1  # environment assignments before the command
        return j < 0 or bool(_R_PROMPT.match(self.tokens[j]))

    def emit(self, kind: str, text: str) -> None:
        if self.prose:
            self.items.append(_Item("prose", " ".join(self.prose)))
            self.prose = []
        self.items.append(_Item(kind, text))

    # -- main loop -----------------------------------------------------------------------

    def run(self) -> Iterator[_Item]:
        """The items, as they are found (the caller reads runs while the lexer goes on).

        The lexer steps through the first chunk of a window of two (or more) while the
        next is there to look ahead into; each chunk after the first starts with a version
        line (:func:`_windows`), which no structure that starts before it can run into
        (it is not a figure, a unit, a row's name or an environment assignment, and it
        ends a header field's value), so every step reads what it would read in the whole
        text. A step may also look a table's width or a label line's 12 words further:
        the window grows until that much follows.
        """
        items = self.items
        i = 0
        while (chunk := self._chunk_ahead(0)) is not None:
            del self._ahead[0]
            if i == 0 and not self.multi_columns and self.lined and FAST.on and \
                    ">" not in chunk.text:
                read = line_items(chunk.text, self.sym_columns, self.pk_kind,
                                  self._first_reading)
                if read is not None:  # every line one item: no token read
                    lines, self.sym_columns, self.pk_kind = read
                    if lines:
                        self.emit(lines[0].kind, lines[0].text)  # after the prose before
                        items += lines[1:]
                    if len(items) > 64:
                        yield from items
                        items.clear()
                    continue
                if not chunk.piece and chunk.tokens is None:
                    # its runs read apart: only those about the odd line token by token
                    # (not once tokenized for a look ahead: it would be tokenized again)
                    pieces = [_Chunk(t, piece=True) for t in _windows(chunk.text, 1)]
                    if len(pieces) > 1:
                        self._ahead[0:0] = pieces
                        continue
            i = yield from self._read_tokens(chunk, i)
        self.emit("end", "")
        items.pop()
        yield from items
        items.clear()

    def _chunk_ahead(self, k: int) -> _Chunk | None:
        """The ``k``-th chunk after those read, or None past the paste's end."""
        ahead = self._ahead
        while len(ahead) <= k and self._texts is not None:
            text = next(self._texts, None)
            if text is None:
                self._texts = None
            else:
                ahead.append(_Chunk(text))
        return ahead[k] if k < len(ahead) else None

    def _tokens_of(self, chunk: _Chunk) -> tuple[list[str], bytearray]:
        if chunk.tokens is None:
            chunk.tokens = self._tokenize(chunk.text)
        return chunk.tokens

    def _read_tokens(self, chunk: _Chunk, i: int) -> Generator[_Item, None, int]:
        """Step through ``chunk``'s tokens from ``i`` (with chunks after it the line path
        refuses: ``_W_STEP_TOKENS``) while the chunk after them is there to look ahead
        into; return where the next chunk is to be read from."""
        items = self.items
        window = [self._tokens_of(chunk)]
        while len(window[0][0]) < self.step and (following := self._chunk_ahead(0)) and (
                ">" in following.text or not self.lined or not FAST.on or (
                    following.piece and len(window[0][0]) < _W_PIECE_TOKENS)):
            del self._ahead[0]
            tokens, ends = self._tokens_of(following)
            window[0] = (window[0][0] + tokens, window[0][1] + ends)
        if (following := self._chunk_ahead(0)) is not None:
            window.append(self._tokens_of(following))
        self._load(window)
        limit = len(window[0][0])
        while i < limit:
            if len(self.tokens) - i <= _R_LABEL_LINE_WORDS + 8 + self.sym_columns + \
                    self.multi_columns and (
                    following := self._chunk_ahead(len(window) - 1)) is not None:
                window.append(self._tokens_of(following))
                self._load(window)
                continue
            nxt = self._step_line(i) if self.lined and not self.multi_columns and (
                i == 0 or self.line_end[i - 1]) else self._step(i)
            if nxt is None:
                if not self._table_resumes(i):
                    if self.sym_columns:
                        self._note_broken_table(i)
                    self.sym_columns = 0
                    self.pk_kind = None
                self.prose.append(self.tokens[i])
                i += 1
            else:
                i = nxt
                if len(items) > 64:  # handed on in batches: a yield per item costs
                    yield from items
                    items.clear()
        return i - limit

    def _first_reading(self, words: list[str], after: list[str], columns: int,
                       pk_kind: str | None) -> tuple[str, int, str | None] | None:
        """How the steps read a line (``words``) at a line start in the state given,
        with the next line (``after``) to look ahead into: its one item's kind and the
        state after it, or None (parse/lexlines.py's ``line_items`` asks)."""
        scratch = self._scratch
        if scratch is None:
            scratch = self._scratch = _Lexer("")
        scratch.items, scratch.prose = [], []
        scratch.sym_columns, scratch.pk_kind, scratch.multi_columns = columns, pk_kind, 0
        ends = bytearray(len(words) - 1) + b"\x01"
        if after:
            ends += bytearray(len(after) - 1) + b"\x01"
        scratch._load([(words + after, ends)])
        if scratch._step(0) != len(words) or len(scratch.items) != 1 or \
                scratch.multi_columns:
            return None
        item = scratch.items[0]
        if item.text != " ".join(words):
            return None
        return item.kind, scratch.sym_columns, scratch.pk_kind

    def _table_resumes(self, i: int) -> bool:
        """Whether the prose at ``i`` is a short line between a table's rows.

        Authors label groups of rows ("openssl speed -evp rc4:", "openssl-3.0") under the
        header they pasted once; a row of the table must follow within a few words.
        """
        if self.sym_columns < 2 and self.pk_kind is None:
            return False  # a one-column (-bytes) table would read "about 3.5" as a row
        for j in range(i + 1, min(i + 1 + _R_LABEL_LINE_WORDS, len(self.tokens))):
            if self.sym_columns and self._sym_row_end(j, self.sym_columns) is not None:
                return True
            if self.pk_kind is not None and self._pk_row_end(j) is not None:
                return True
        return False

    def _note_broken_table(self, i: int) -> None:
        window = self.tokens[i : i + self.sym_columns + 4]
        if sum(1 for t in window if _R_NUM_TOKEN.fullmatch(t)) >= 2:
            self.emit("broken", " ".join(window))

    def _step_line(self, i: int) -> int | None:
        """:meth:`_step` at the start of a line: a row of the symmetric table read by one
        match, or a line read before as one item, in the same state, read again from the
        line cache (parse/lexlines.py)."""
        tokens = self.tokens
        stop = self.line_end.find(1, i) + 1 or len(tokens)
        start = self.offsets[i]
        text = self.joined[start:self.offsets[stop] - 1] if stop < len(tokens) else \
            self.joined[start:]
        fast = FAST.on
        if fast and self.sym_columns and row_line(text, self.sym_columns) and (
                stop >= len(tokens) or not _R_NUM_TOKEN.fullmatch(tokens[stop])):
            self.emit("symrow", text)  # the row _step reads, by one match
            return stop
        key = (text, self.sym_columns, self.pk_kind)
        kept = LINES.get(key) if fast else None
        if kept is not None:
            holds = next_holds(kept[3], tokens, stop)
            if holds or (holds is None and (_R_ANCHOR.match(self.joined, self.offsets[stop])
                                            or self._is_command(stop))):
                self.emit(kept[0], text)
                self.sym_columns, self.pk_kind = kept[1], kept[2]
                return stop
        before = len(self.items)
        nxt = self._step(i)
        if nxt == stop and len(self.items) - before in (1, 2) and \
                self.items[-1].text == text and (len(self.items) - before == 1 or
                                                 self.items[-2].kind == "prose"):
            cond = condition(self.items[-1].kind, text, tokens[i:stop])
            if cond is not None:
                keep(key, (self.items[-1].kind, self.sym_columns, self.pk_kind, cond))
        return nxt

    def _step(self, i: int) -> int | None:
        """The index after the structure that starts at token ``i``, emitted; None if
        none does (the token is prose)."""
        token = self.tokens[i]
        if token in _R_MARKER_WORDS or token.startswith("+"):
            nxt = self._step_marker(i, token)
            if nxt is not None:
                return nxt
        return self._step_structure(i, token)

    def _step_marker(self, i: int, token: str) -> int | None:
        """A structure that starts with a fixed word: a ``-multi`` echo, a ``-mr``
        record, progress, the elapsed note or the version."""
        if token == "Got:" and i + 1 < len(self.tokens) and self.tokens[i + 1].startswith("+"):
            found = self._match(_R_MULTI, i)
            if found:
                # a child's -mr record echoed by the -multi parent: not a result of its own
                self.emit("multi", found[0])
                header = MR_H_RE.match(found[0][5:].split(" from ")[0])
                if header:
                    self.multi_columns = len(header.group(1).split(":")) - 1
                return found[1]
        if token == "Forked":
            found = self._match(_R_FORKED, i)
            if found:
                self.emit("multi", found[0])
                return found[1]
        if token.startswith("+"):
            found = self._match(_R_MR, i)
            if found:
                self.emit("mr", found[0])
                return found[1]
        if token == "Doing":
            for regex in _R_PROGRESS:
                found = self._match(regex, i)
                if found:
                    self.emit("progress", found[0])
                    return found[1]
        if token == "You":
            found = self._match(_R_ELAPSED, i)
            if found:
                self.emit("elapsed", found[0])
                return found[1]
        if token == "OpenSSL":
            found = self._match(_R_VERSION_RE, i)
            if found:
                self.emit("version", found[0])
                return found[1]
        if token == "version:":
            found = self._match(_R_VERSION_FIELD, i)
            if found:
                self.emit("version", found[0])
                return found[1]
        return None

    def _step_structure(self, i: int, token: str) -> int | None:
        """A header field, the numbers note, a table header or row, or a command line."""
        start = token[0]
        for name in _R_FIELDS_BY_START.get(start, ()):
            if self.joined.startswith(name, self.offsets[i]):
                # the value runs to the next structure; "options:bn(64,64)" glues it on
                end = self._until_anchor(i + len(name.split()))
                self.emit("field", " ".join(self.tokens[i:end]))
                return end
        if token == "The":
            found = self._match(_R_NUMBERS, i)
            if found:
                self.emit("numbers", found[0])
                return found[1]
        if token == "type":
            found = self._match(_R_SYM_HEADER, i)
            if found:
                self.emit("symheader", found[0])
                self.sym_columns = found[0].count("bytes")
                self.multi_columns = 0
                self.pk_kind = None
                return found[1]
        if self.sym_columns:
            nxt = self._sym_row(i)
            if nxt is not None:
                return nxt
        elif self.multi_columns:
            nxt = self._sym_row_end(i, self.multi_columns)
            if nxt is not None:
                self.emit("symrow", " ".join(self.tokens[i:nxt]))
                return nxt
        for text, kind in _R_PK_HEADERS_BY_START.get(start, ()):
            if self.joined.startswith(text, self.offsets[i]):
                nxt = self._end_index(self.offsets[i] + len(text))
                if nxt is not None:
                    self.emit("pkheader", text)
                    self.sym_columns = 0
                    self.pk_kind = kind
                    return nxt
        nxt = self._pk_row(i)
        if nxt is not None:
            return nxt
        if self._is_command(i):
            end = i + 2 if self.tokens[i + 1] != "speed" else self._until_anchor(i + 2)
            for j in range(i + 2, end):
                if _R_PROSE_WORD.search(self.tokens[j]):
                    end = j  # the command line ended without a line break: prose follows
                    break
            self.emit("command", " ".join(self.tokens[i:end]))
            return end
        return None

    def _sym_row(self, i: int) -> int | None:
        stop = self._sym_row_end(i, self.sym_columns)
        if stop is not None:
            self.emit("symrow", " ".join(self.tokens[i:stop]))
        return stop

    def _sym_row_end(self, i: int, columns: int) -> int | None:
        """End of a row of ``columns`` figures whose name starts at ``i``, if one does.

        speed's names are one word, or a cipher and its mode (``aes-128 cbc``, ``des
        ede3``, ``rc5-32/12 cbc``): a word before them ("openssl-3.0", "rc4:") is not
        part of the name.
        """
        first = self.tokens[i]
        if _R_NUM_TOKEN.fullmatch(first) or _R_LABEL_END.search(first):
            return None
        for label_words in (1, 2):
            start = i + label_words
            stop = start + columns
            if stop > len(self.tokens):
                return None
            if label_words == 2 and not _R_LABEL_MODE.fullmatch(self.tokens[i + 1]):
                return None
            values = self.tokens[start:stop]
            if all(_R_NUM_TOKEN.fullmatch(t) for t in values) and not (
                stop < len(self.tokens) and _R_NUM_TOKEN.fullmatch(self.tokens[stop])
            ):
                # speed ends the line after the last figure: "about 3.50 on my box" is prose
                return stop if self.line_end[stop - 1] else None
        return None

    def _pk_row(self, i: int) -> int | None:
        stop = self._pk_row_end(i)
        if stop is None:
            return None
        self.emit("pkrow", " ".join(self.tokens[i:stop]))
        self.sym_columns = 0
        return stop

    def _pk_row_end(self, i: int) -> int | None:
        t = self.tokens
        n = len(t)
        start: int | None = None
        if t[i] in ("rsa", "dsa") and i + 2 < n and t[i + 1].isdigit():
            if _R_BITS.fullmatch(t[i + 2]):
                start = i + 3
        elif t[i].isdigit() and i + 2 < n and _R_BITS.fullmatch(t[i + 1]):
            if t[i + 2] == "ffdh":
                start = i + 3
            elif (
                t[i + 2] in ("ecdsa", "ecdh", "EdDSA", "SM2")
                and i + 3 < n
                and _R_CURVE.fullmatch(t[i + 3])
            ):
                start = i + 4
        elif self.pk_kind in ("kem", "sig") and i + 1 < n and _R_PK_SECONDS.fullmatch(t[i + 1]):
            start = i + 1
        if start is None:
            return None
        seconds = 0
        while start + seconds < n and _R_PK_SECONDS.fullmatch(t[start + seconds]):
            seconds += 1
        stop = start + 2 * seconds
        if seconds == 0 or stop > n:
            return None
        if not all(_R_PK_VALUE.fullmatch(v) for v in t[start + seconds : stop]):
            return None
        return stop


@dataclass
class _Segment:
    items: list[_Item] = field(default_factory=list)
    has_results: bool = False
    has_version: bool = False
    has_table_header: bool = False
    #: Whether an item is progress (:func:`_is_progress_item`): read first.
    has_progress: bool = False
    commands: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)


def _row_key(item: _Item, pk_header: str) -> str:
    """What a table row measures: its name, or (public key) its table, name and key size.

    3.2+ names ``rsa2048`` in both the KEM and the signature table of one run.
    """
    text = item.text
    if item.kind == "symrow":
        # the lexer's row (words joined by one blank): its name's one or two words
        # (neither a number), then numbers
        words = text.split(" ", 2)
        return words[0] if _R_NUM_TOKEN.fullmatch(words[1]) else f"{words[0]} {words[1]}"
    name = _PK_NAMES.get(text) if FAST.on else None
    if name is None:
        name = " ".join(w for w in text.split() if not _R_PK_SECONDS.fullmatch(w)
                        and not (_R_PK_VALUE.fullmatch(w) and "." in w))
        if FAST.on:
            if len(_PK_NAMES) >= 256:
                _PK_NAMES.clear()
            _PK_NAMES[text] = name
    return f"{pk_header} | {name}" if name else f"{pk_header} |"


#: A public-key row's text -> its name words (a paste repeats its rows: read once).
_PK_NAMES: dict[str, str] = {}
register_cache(_PK_NAMES.clear)


def _segments(items: Iterable[_Item]) -> Iterator[_Segment]:
    """The segments (runs to be) of the items, each handed on once the next has begun."""
    current = _Segment()
    last = ""
    rows_seen: set[str] = set()
    prose_since_row = False
    pk_header = ""
    for item in items:
        kind, before, last = item.kind, last, item.kind
        if kind == "pkheader":
            pk_header = item.text
        if kind == "field" and before not in ("version", "field"):
            last = "prose"
            continue  # "options:" or "compiler:" in prose, not under a speed header
        if kind == "prose":
            if current.commands and not current.has_results and len(item.text.split()) > 12:
                current.commands.clear()  # a command quoted in prose, not the run's own
            prose_since_row = True
            continue
        row_key = _row_key(item, pk_header) if kind in ("symrow", "pkrow") else None
        repeated_row = (
            row_key is not None
            and row_key in rows_seen
            and (prose_since_row or before == "pkheader")
        )  # the same row again after words or a header of its own: another measurement
        starts_run = (
            (current.has_results and kind in ("command", "progress", "elapsed", "version"))
            or (current.has_results and kind == "multi")
            or (kind == "version" and current.has_version and current.has_results)
            or (kind == "symheader" and current.has_table_header)
            or (kind == "mr" and item.text.startswith("+H") and current.has_results)
            or repeated_row
        )
        if starts_run:
            done, current = current, _Segment()
            rows_seen = set()
            if repeated_row:
                header = _table_header(done, move=before in ("symheader", "pkheader"))
                if header is not None:
                    current.items.append(header)
                    current.has_table_header = header.kind == "symheader"
            if done.has_results:
                yield done
        elif kind == "version" and current.has_version:
            # A version line with no table after it was not a speed header (an `openssl
            # version` in the prose): forget it, keep the commands and progress read since.
            current.items = [it for it in current.items if it.kind not in ("version", "field")]
        if kind == "command":
            current.commands.append(item.text)
            continue
        if kind == "broken":
            current.broken.append(item.text)
            continue
        current.items.append(item)
        if kind in _PROGRESS_KINDS:
            current.has_progress = True
        if row_key is not None:
            rows_seen.add(row_key)
            prose_since_row = False
        if kind in ("symrow", "pkrow") or (kind == "mr" and item.text.startswith("+F")):
            current.has_results = True
        elif kind == "version":
            current.has_version = True
        elif kind == "symheader":
            current.has_table_header = True
    if current.has_results:
        yield current


def _table_header(segment: _Segment, *, move: bool) -> _Item | None:
    """The last table header of a segment, for the rows of the next one.

    ``move``: the header ended the segment (it was printed for the rows that follow).
    """
    for index in range(len(segment.items) - 1, -1, -1):
        if segment.items[index].kind in ("symheader", "pkheader"):
            return segment.items.pop(index) if move else segment.items[index]
    return None


#: The kinds of the items :func:`_is_progress_item` may call progress.
_PROGRESS_KINDS = frozenset(("progress", "elapsed", "mr"))


def _is_progress_item(item: _Item) -> bool:
    return item.kind in ("progress", "elapsed") or (
        item.kind == "mr" and item.text.startswith(("+DT", "+DN", "+R"))
    )


def paste_runs(text: str, *, keep_duplicates: bool) -> list[SpeedRun]:
    """The runs in a pasted report (see :func:`openssl_matrix.parse.parse_paste`)."""
    return list(iter_paste_runs(text, keep_duplicates=keep_duplicates))


def iter_paste_runs(text: str, *, keep_duplicates: bool) -> Iterator[SpeedRun]:
    """:func:`paste_runs` one run at a time, each parsed when it is asked for: a caller
    that drops each run once used (``parse``) never holds them all. ParseError (no run)
    is raised after the last item, before anything is handed on."""
    # The parse makes no reference cycles but many long-lived objects (a paste of 20,000
    # runs: ~400,000 figures), which the cyclic collector would rescan again and again
    # (a fifth of the time): paused while the runs are read, and restored as it was.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield from _paste_runs(text, keep_duplicates=keep_duplicates)
    finally:
        if enabled:
            gc.enable()


def run_key(run: SpeedRun) -> bytes:
    """What makes two runs the same run (header and figures, as ``==`` compares them),
    as a 16-byte digest: the duplicate check keeps this, not the run. ``marshal``'s
    version 2 writes each value by its type and value alone (no sharing, no interning
    marks); every field is None or of one scalar type."""
    header = attrgetter(*run.header.__dataclass_fields__)(run.header)
    data = marshal.dumps((header, list(figure_values(run.figures))), 2)
    return hashlib.blake2b(data, digest_size=16).digest()


def _paste_runs(text: str, *, keep_duplicates: bool) -> Iterator[SpeedRun]:
    seen: set[bytes] = set()  # one digest per run, not the run
    previous: SpeedRun | None = None
    any_run = False
    for segment in _segments(_Lexer(text).run()):
        evp: bool | None = None
        evp_names: frozenset[str] | None = None
        if segment.commands:
            named = [m.group(1) for c in segment.commands for m in _R_EVP_ARG.finditer(c)]
            evp = bool(named)
            evp_names = frozenset(named)
        # progress first, as parse_speed reads stderr first: -mr units may depend on it
        if segment.has_progress:
            progress = [i.text for i in segment.items if _is_progress_item(i)]
            lines = progress + [i.text for i in segment.items if not _is_progress_item(i)]
        else:
            lines = [i.text for i in segment.items]
        run = parse_lines(lines, evp=evp, evp_names=evp_names)
        extra = [f"table text that could not be read: {b!r}" for b in segment.broken]
        if (
            run.header.version is None
            and previous is not None
            and previous.header.version is not None
            and not run.machine_readable
            and not previous.machine_readable
        ):
            # The author printed the build header once above several tables of one build.
            inherited = replace(previous.header, elapsed=run.header.elapsed)
            run = parse_lines(lines, version=inherited.version, evp=evp, evp_names=evp_names)
            run = replace(run, header=replace(inherited, elapsed=run.header.elapsed))
            extra.append(
                f"no header printed with this table: header of the run above "
                f"({inherited.version_line}) assumed"
            )
        if extra:
            run = replace(run, warnings=(*run.warnings, *extra))
        if segment.commands:
            run = replace(run, commands=tuple(segment.commands))
        previous = run
        if not keep_duplicates:
            key = run_key(run)
            if key in seen:
                continue  # a quoted copy of a run already read
            seen.add(key)
        any_run = True
        yield run
    if not any_run:
        raise ParseError(
            "no `openssl speed` table found in this report",
            hint="a table starts with 'type 16 bytes ...', 'sign verify ...' or '+H:'",
        )
