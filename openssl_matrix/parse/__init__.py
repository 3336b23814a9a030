"""Pure parser for the output of ``openssl speed`` (OpenSSL 0.9.8 to 3.x).

Nothing here runs a process or touches the disk: every function takes text and returns
frozen dataclasses. Two entry points:

* :func:`parse_speed` reads one invocation as the bench runs it (stdout, stderr), in the
  human format or with ``-mr``;
* :func:`parse_paste` reads a pasted report (mailing-list post, blog page) that may hold
  several runs, mail quoting, prose between tables, and copies whose line breaks were lost.

Formats understood (read from apps/speed.c of 1.0.2, 1.1.0, 1.1.1w, 3.0.20, 3.5.7 and 3.6.3,
and checked against real outputs, see tests/fixtures/speed/README.md):

* headers: ``OpenSSL 1.0.1e 11 Feb 2013`` (0.9.8-1.1.1) or ``version: 3.0.2`` (3.x),
  ``built on:``, ``platform:``, ``options:``, ``compiler:``, ``available timing options:``,
  ``timing function used:``, ``CPUINFO:`` and the ``You have chosen to measure elapsed
  time`` notice;
* symmetric tables: a ``type 16 bytes 64 bytes ...`` header with any number of columns
  (5 up to 1.0.2, 6 from 1.1.0, 1 with ``-bytes``, the AEAD and multi-block sizes), rows
  with a name that may contain spaces (``aes-128 cbc``, ``rc5-32/12 cbc``) followed by one
  figure per column. speed.c prints a figure above 10000 bytes/s as ``%.2fk`` (thousands)
  and anything else as plain bytes/s (``0.00``, ``9876.54``); both are read;
* public-key tables: rsa (2 or, from 3.2, 4 operations), dsa, ecdsa, ecdh, EdDSA, SM2,
  ffdh and the 3.2+ KEM and signature tables, with ``inf``/``nan`` where speed.c divided
  by zero;
* ``-mr``: ``+H``, ``+F`` (bytes/s), ``+F2``..``+F10``. Up to 1.1.0 ``+F2``..``+F4`` hold
  seconds per operation and ``+F5`` (seconds, ops/s); from 1.1.1 they hold operations per
  second (``+F5`` becomes ops/s, seconds). ``+F2`` has four values from 3.2. The ecdsa and
  ecdh records carry only an index and a bit count: the curve comes from speed.c's curve
  table, and the bit count must agree with it or the figure is refused;
* progress lines, human (``Doing aes-128-cbc for 3s on 16 size blocks: 5 aes-128-cbc's in
  3.00s``, the ``... ops for ...`` wording of 3.5+, the public-key forms) and ``-mr``
  (``+DT``/``+DTP`` followed by ``+R``, ``+R1``..``+R20``).

Algorithm ids (``Figure.algorithm``) are lower case and dash separated:

* symmetric: the printed name lower-cased with blanks turned into dashes, ``name(x)``
  written ``name-x``, and the few legacy names that differ from their EVP name mapped to
  it: ``aes-128 cbc`` -> ``aes-128-cbc``, ``idea cbc`` -> ``idea-cbc``, ``hmac(md5)`` ->
  ``hmac-md5``, ``des cbc`` -> ``des-cbc``, ``des ede3``/``des-ede3`` -> ``des-ede3-cbc``,
  ``blowfish cbc``/``blowfish`` -> ``bf-cbc``, ``cast cbc``/``cast-cbc`` -> ``cast5-cbc``,
  ``rc5-32/12 cbc`` -> ``rc5-cbc``, ``rmd160`` -> ``ripemd160``; ``evp`` stays ``evp``
  (``-multi`` prints the EVP row under that name);
* public key: ``rsa-2048``, ``dsa-1024``, ``ffdh-2048``, ``ecdsa-<curve>``,
  ``ecdh-<curve>`` with NIST curves shortened (``nistp256`` -> ``p256``, ``nistk163`` ->
  ``k163``, ``nistb571`` -> ``b571``) and others lower-cased (``secp160r1``,
  ``brainpoolp256r1``, ``x25519``, ``x448``); EdDSA rows are ``ed25519``/``ed448``, SM2
  rows ``sm2``; rows of 3.2+'s generic tables get a prefix because they may name the same
  key types as the classic tables through other code paths: ``kem-ml-kem-768``,
  ``sig-ml-dsa-65``, ``kem-rsa2048``.

``Figure.operation`` is None for symmetric rows, else one of sign, verify, encrypt,
decrypt, op (ecdh, ffdh), keygen, encaps, decaps.

``Figure.status`` is ``ok`` or a reason code; a non-ok figure must not be averaged in:

* ``zero`` - speed.c printed 0 (the algorithm is not in this build, or nothing ran);
  value None;
* ``infinite`` - speed.c printed ``inf``/``nan`` (a time of 0); value None;
* ``unparsable`` - a token that is not a number, a negative figure (3.0.0-alpha3's wrap
  ciphers printed ``-124.63``), or a row whose column count does not match its header;
  value None;
* ``unknown-unit`` - a ``-mr`` public-key record whose unit (seconds per op before 1.1.1,
  ops per second after) cannot be decided because the version is unknown; value None;
* ``unidentified`` - a ``-mr`` record whose algorithm cannot be named (index and bit count
  disagree with every known curve table, a 3.2+ KEM/signature index without the ``+DTP``
  progress that names it); value None;
* ``suspect-time-basis`` - the value is as printed, but the progress lines show the
  measured time far below the requested time (user CPU time while the work ran
  elsewhere: /dev/crypto, AF_ALG, a busy host); the run also carries a warning;
* ``imprecise`` - the value is as printed but every printed form of it is rounded by more
  than 1 % (``-mr`` seconds per op of fast operations before 1.1.1, ``0.2`` ops/s);
* ``impossible`` - a value that is not finite once scaled (``1e400``), not positive, or
  absurd (above ``MAX_BYTES_PER_S`` / ``MAX_OPS_PER_S``); value None, the printed token
  kept in ``raw``.

A number in a figure always comes from the text: it is the printed value scaled by the
printed unit (``k`` = 1000) or, for public-key rows that print both seconds per operation
and operations per second, whichever printed form is the more precise (1 / seconds when
the rate column shows ``0.2`` but the seconds column ``4.436667s``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields, replace

from openssl_matrix.core.errors import ParseError
from openssl_matrix.parse.figures import Figure, SpeedRun, figure_values
from openssl_matrix.parse.headerless import AssumedHeader, assume_headers
from openssl_matrix.parse.lines import Builder
from openssl_matrix.parse.paste import iter_paste_runs, paste_runs


def _version_token(version: str | None) -> str | None:
    """``"OpenSSL 1.1.1w  11 Sep 2023"`` -> ``"1.1.1w"``; other text is kept as given."""
    if version is None:
        return None
    match = re.match(r"\s*OpenSSL\s+(\d+\.\d+\.\d+\S*)", version)
    return match.group(1) if match else version.strip()


def _split_lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


# --------------------------------------------------------------------------------------
# Public API


def parse_speed(
    stdout: str, stderr: str = "", *, version: str | None = None, evp: bool | None = None
) -> SpeedRun:
    """One invocation of ``openssl speed`` (human or ``-mr``; -mr progress goes to stderr).

    ``version`` (from ``openssl version``, e.g. "1.1.1w") decides the -mr unit flip and the
    EVP-ness (3.x: always EVP) when the output does not print it; ``evp`` tells whether
    -evp was passed (digests print the same name on both paths in 1.x).

    Raises ParseError when neither stream looks like speed output at all.
    """
    builder = Builder(version_hint=_version_token(version), evp_hint=evp)
    for line in _split_lines(stderr):
        builder.feed(line)
    # Progress printed on stderr must not end a table that starts on stdout.
    builder.sym_sizes = None
    builder.pk_table = None
    for line in _split_lines(stdout):
        builder.feed(line)
    run = builder.finish()
    if not run.figures and not run.progress and run.header.version_line is None:
        excerpt = (stdout.strip() or stderr.strip())[:200]
        raise ParseError(
            "this is not `openssl speed` output: no table, no progress line, no header",
            hint=f"the text starts with {excerpt!r}" if excerpt else "both streams are empty",
        )
    if not run.figures:
        return replace(run, warnings=(*run.warnings, "no figures: the run printed no table"))
    return run


#: Figure's field names, in order: its fields are scalars, so a record is what
#: ``dataclasses.asdict`` gives (its deep copy of each value changes nothing) at a tenth
#: of the cost (a paste of 20,000 runs has ~440,000 figures).
_FIGURE_FIELDS = tuple(f.name for f in fields(Figure))
FIGURE_FIELDS = _FIGURE_FIELDS


def figure_rows(run: SpeedRun) -> Iterator[tuple[object, ...]]:
    """Each figure's values in :data:`FIGURE_FIELDS` order: :func:`figure_records`
    without a dict per figure, nor a figure where the run keeps a row of them
    (``parse.figures.FigureTable``)."""
    return figure_values(run.figures)


def figure_records(run: SpeedRun) -> list[dict[str, object]]:
    """Flat JSON-able dicts, one per figure (all Figure fields, NaN never appears)."""
    names = _FIGURE_FIELDS
    return [dict(zip(names, values, strict=True)) for values in figure_values(run.figures)]


def parse_paste(text: str, *, keep_duplicates: bool = False,
                block_sizes: Sequence[int] | None = None) -> list[SpeedRun]:
    """A pasted report: every speed run in it, in order.

    Handles mail quoting ("> "), wrapped lines, prose between tables, several runs (split
    at each header, progress block or table header), and copies whose line breaks were
    lost. A run that repeats an earlier one exactly (a quoted copy in a reply) is dropped
    unless ``keep_duplicates``. A table printed without its own header (the author pasted
    the header once) inherits the header of the run above, with a warning.

    Short label lines between a table's rows ("openssl-3.0", "openssl speed -evp rc4:")
    do not end the table; a row that measures again what the run already holds (the same
    name, and key size, after such words or a header of its own) starts a new run. With
    ``-multi`` the children's ``Got: ...`` records are skipped, as in :func:`parse_speed`:
    the parent's table (3.x prints it without a ``type`` header) is the result.

    Rows pasted without speed's ``type 16 bytes ...`` header are read when their column
    count is that of the block sizes the version line above them implies (or of
    ``block_sizes``); the run says which sizes were assumed (:func:`read_paste`).
    """
    return read_paste(text, keep_duplicates=keep_duplicates, block_sizes=block_sizes).runs


@dataclass(frozen=True)
class PasteReading:
    """The runs of a paste, and the block sizes assumed for rows pasted without a header
    (by run index; each such run also carries the assumption as a warning)."""

    runs: list[SpeedRun]
    assumed: dict[int, AssumedHeader] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)


def read_paste(text: str, *, keep_duplicates: bool = False,
               block_sizes: Sequence[int] | None = None) -> PasteReading:
    """:func:`parse_paste`, with the assumptions it made said apart. Headers are assumed
    only when ``block_sizes`` is given or the paste holds no table that can be read."""
    if not block_sizes:
        try:
            return PasteReading(paste_runs(text, keep_duplicates=keep_duplicates))
        except ParseError:
            pass
    return _assumed_reading(text, keep_duplicates=keep_duplicates, block_sizes=block_sizes)


def _assumed_reading(text: str, *, keep_duplicates: bool,
                     block_sizes: Sequence[int] | None) -> PasteReading:
    """:func:`read_paste` once headers are to be assumed."""
    placed, assumed, refused = assume_headers(text, block_sizes)
    try:
        runs = paste_runs(placed, keep_duplicates=keep_duplicates)
    except ParseError:
        if refused:  # rows were there: say so, and why none could be placed
            raise ParseError("no `openssl speed` table could be read: rows without their "
                             "table's header were found, and their block sizes are not "
                             "known", hint="; ".join(refused)) from None
        raise
    by_run: dict[int, AssumedHeader] = {}
    for header in assumed:
        name, first = header.first_row.rsplit(" ", 1)
        for i, run in enumerate(runs):
            if i not in by_run and any(f.label == name and f.raw == first for f in run.figures):
                by_run[i] = header
                break
    runs = [replace(run, warnings=(*run.warnings, by_run[i].text())) if i in by_run else run
            for i, run in enumerate(runs)]
    if refused and runs:
        runs[-1] = replace(runs[-1], warnings=(*runs[-1].warnings, *refused))
    return PasteReading(runs, by_run, refused)


def iter_paste(text: str, *, block_sizes: Sequence[int] | None = None) -> Iterator[SpeedRun]:
    """:func:`parse_paste`'s runs one at a time, each parsed when asked for (``parse``
    prints each and drops it: a paste of 20,000 runs is never held as runs). A paste
    that needs headers assumed (no table readable, or ``block_sizes``) is read whole,
    as :func:`read_paste` reads it."""
    if not block_sizes:
        runs = iter_paste_runs(text, keep_duplicates=False)
        try:
            first = next(runs)
        except ParseError:
            pass  # no table at all: perhaps rows without their header
        else:
            yield first
            yield from runs
            return
    yield from _assumed_reading(text, keep_duplicates=False, block_sizes=block_sizes).runs
