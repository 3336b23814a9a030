"""The lexer's vocabulary: what the paste reader (:mod:`openssl_matrix.parse.paste`) looks
for in a paste's stream of tokens, and what its line cache (:mod:`openssl_matrix.parse.
lexlines`) needs to know of it: the number and value tokens, the version line, the
header fields, the public-key table headers, the anchors a header field's value runs to,
the ``-mr``, progress and ``-multi`` records, the notes and table headers, and the words
of command lines and row names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from openssl_matrix.parse.grammar import (
    PK_HEADERS,
    PROGRESS_KS_RE,
    PROGRESS_PK_RE,
    PROGRESS_SYM_COUNT_RE,
    PROGRESS_SYM_RE,
)

_R_NUM = r"(?:-?\d+\.\d+k?|infk?|-?nank?)"
_R_NUM_TOKEN = re.compile(_R_NUM)
_R_PK_VALUE = re.compile(r"(?:\d+(?:\.\d+)?|inf|-?nan)")
_R_PK_SECONDS = re.compile(r"(?:\d+(?:\.\d+)?|inf|-?nan)s")
_R_VERSION = (
    r"OpenSSL \d+\.\d+\.\d+[a-z]*(?:[-+][\w.+-]*)? "
    r"(?:\d{1,2} [A-Z][a-z]{2} \d{4}|xx XXX xxxx)(?: \([^()]{0,80}\))?"
)
_R_FIELDS = (
    "built on:", "platform:", "options:", "compiler:", "OPENSSLDIR:", "ENGINESDIR:",
    "MODULESDIR:", "Seeding source:", "available timing options:", "timing function used:",
    "CPUINFO:",
)  # fmt: skip
_R_PK_HEADER_TEXTS = {" ".join(cols): kind for cols, kind in PK_HEADERS.items()}
#: First characters of the field names and public-key headers: a token starting with any
#: other cannot begin one, so _step skips their loops (a string test per token, not 15).
_R_STARTS = frozenset(t[0] for t in (*_R_FIELDS, *_R_PK_HEADER_TEXTS))
#: The same, by first character, in their order: the loops try only those a token can be.
_R_FIELDS_BY_START = {c: tuple(f for f in _R_FIELDS if f[0] == c) for c in _R_STARTS}
#: The words ``_step_marker`` looks for (and any token starting "+"): a quick test first.
_R_MARKER_WORDS = frozenset(("Got:", "Forked", "Doing", "You", "OpenSSL", "version:"))
_R_PK_HEADERS_BY_START = {
    c: tuple((t, k) for t, k in _R_PK_HEADER_TEXTS.items() if t[0] == c) for c in _R_STARTS
}
_R_VERSION_RE = re.compile(_R_VERSION)
_R_VERSION_FIELD = re.compile(r"version: \d+\.\d+\.\d+\S*")
_R_SPEED_WORD = re.compile(r"speed[)\]:.,]*")
_R_ENV_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=\S*")
_R_BITS = re.compile(r"bits?")
_R_CURVE = re.compile(r"\([^()\s]+\)")
_R_ANCHOR = re.compile(
    "|".join(
        [
            _R_VERSION,
            r"version: \d",
            *(re.escape(f) for f in _R_FIELDS),
            r"The 'numbers' are",
            r"type \d+ bytes",
            r"Doing ",
            r"You have chosen",
            r"\+(?:H|F\d*|DTP?|DNP?|R\d*):",
            r"\$ ",
            *(re.escape(t) for t in _R_PK_HEADER_TEXTS),
        ]
    )
)
_R_MR = re.compile(
    r"\+(?:D[TN]:[^:\s]+(?: [^:\s]+){0,2}:\d+:\d+"
    r"|D[TN]P:\d+:[^:\s]*:[^:\s]+(?: [^:\s]+){0,2}:\d+"
    r"|D[TN]P:[^:\s]+:[^:\s]+:\d+"
    r"|R:\d+:[^:\s]+(?: [^:\s]+){0,2}:\d+(?:\.\d+)?"
    r"|F:\d+:[^:\s]+(?: [^:\s]+){0,2}(?::[^:\s]+)+"
    r"|(?:H|F\d+|R\d+):\S*)"
)
_R_PROGRESS = (PROGRESS_SYM_RE, PROGRESS_SYM_COUNT_RE, PROGRESS_PK_RE, PROGRESS_KS_RE)
_R_ELAPSED = re.compile(r"You have chosen to measure elapsed time instead of user CPU time\.?")
_R_NUMBERS = re.compile(r"The 'numbers' are in 1000s of bytes per second processed\.?")
_R_SYM_HEADER = re.compile(r"type(?: \d+ bytes)+")
#: A token that cannot be part of a command line: a capitalised word ("This") or one that
#: ends a sentence ("set.", "...", "gives:").
_R_PROSE_WORD = re.compile(r"[A-Z][a-z]|[a-z][.,;!?]$|\.\.\.$|[a-z]:$")
_R_EVP_ARG = re.compile(r"(?:^| )-evp (\S+)")
_R_PROMPT = re.compile(r"^(?:\$|%|#|\S*[>$#%]|\(\S*\)|\[\S*\])$")


#: -multi: ``Got: +F:22:evp:1.00:... from 0`` and ``Forked child 0``.
_R_MULTI = re.compile(r"Got: \+(?:H|F\d*|R\d*):\S* from \d+")
_R_FORKED = re.compile(r"Forked child \d+")
#: A word that ends a sentence or a label line cannot be (the start of) a row name.
_R_LABEL_END = re.compile(r"[:.,;!?]$")
#: The second word of speed's two-word names (the legacy table of 0.9.8 to 1.1.1).
_R_LABEL_MODE = re.compile(r"cbc|ige|ede3|cfb|ofb|ecb|ctr")
#: How many words of prose may sit between a table's header (or rows) and its next row.
_R_LABEL_LINE_WORDS = 12

_R_QUOTES = re.compile(r">+")
_QUOTE_PREFIX_RE = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.MULTILINE)


@dataclass(slots=True)  # ~17 a run: no __dict__ each
class _Item:
    kind: str
    text: str
