"""A paste read a window at a time and handed on run by run (issue 35: 20,000 runs in
under 5× the paste's memory): the windows change nothing that is read, the duplicate
check by digest drops exactly the runs ``==`` calls equal, and ``parse`` prints each run
before the paste's end is read; ``parse --json``'s records written without a dict per
figure give the same text."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from openssl_matrix.cli.commands.parse import parse_run_json, parse_run_record
from openssl_matrix.core.jsonfast import dumps_indented, rows_indented
from openssl_matrix.parse import iter_paste, parse_paste, paste
from openssl_matrix.parse.paste import run_key

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TEXTS = [p.read_text(encoding="utf-8", errors="replace")
         for p in sorted((FIXTURES / "reports").glob("*.txt"))
         + sorted((FIXTURES / "speed").glob("real-*/*.std*"))]
PROSE = ["Here is what I got:", "$ openssl speed rsa", "FOO=1 BAR=2 openssl speed sha256",
         "1.00 2.00 3.00", "version: 3.0.2", "OpenSSL 1.1.1w  11 Sep 2023",
         "> OpenSSL 3.0.20 19 Sep 2023", "type 16 bytes 64 bytes", "aes 1.00k 2.00k", "thanks"]


def _items(text: str, size: int, step: int = 1) -> list[tuple[str, str]]:
    """The lexer's items with chunks of ``size`` characters, ``step`` tokens a window."""
    return [(i.kind, i.text) for i in paste._Lexer(text, chunk=size, step=step).run()]


def _mixed(rng: random.Random) -> str:
    """Fixtures (whole, cut, quoted) and lines that look like speed's, in a random order."""
    parts = []
    for _ in range(rng.randint(2, 6)):
        text = rng.choice(TEXTS)
        if rng.random() < 0.3:
            lines = text.split("\n")
            a = rng.randint(0, len(lines))
            text = "\n".join(lines[a:rng.randint(a, len(lines))])
        if rng.random() < 0.2:
            text = "\n".join("> " + line for line in text.split("\n"))
        parts += [rng.choice(PROSE[4:7]), text, *rng.sample(PROSE, rng.randint(0, 3))]
    return "\n".join(parts)


@pytest.mark.parametrize("seed", range(12))
def test_windows_read_what_the_whole_text_reads(seed: int) -> None:
    rng = random.Random(seed)
    text = _mixed(rng)
    assert len(list(paste._windows(text, 1))) > 1  # the text is cut, and often
    whole = _items(text, 10**12)
    assert whole
    for size, step in ((1, 1), (97, 1), (2000, 1), (1, 300), (97, 5000)):
        assert _items(text, size, step) == whole, (size, step)


def test_windows_cut_only_before_a_version_line() -> None:
    text = "\n".join([*TEXTS[:6], "OpenSSL 1.1.1 without a date", "version 3"])
    pieces = list(paste._windows(text, 1))
    assert "".join(pieces) == text
    for piece in pieces[1:]:
        first = piece.split("\n", 1)[0].lstrip(" \t>")
        assert first.startswith(("OpenSSL ", "version: ")), first
        assert not first.startswith("OpenSSL 1.1.1 without")
    assert list(paste._windows("one line\nand two", 1)) == ["one line\nand two"]


def test_runs_stream_and_equal_the_whole_reading() -> None:
    text = "\n".join(TEXTS)
    runs = parse_paste(text)
    streamed = iter_paste(text)
    first = next(streamed)
    assert first == runs[0]
    assert [first, *streamed] == runs


def test_the_duplicate_digest_is_equality() -> None:
    runs = parse_paste("\n".join(TEXTS))
    keys = [run_key(r) for r in runs]
    assert len(set(keys)) == len(runs)  # no two distinct runs share a digest
    run = runs[0]
    copy = dataclasses.replace(run, figures=tuple(dataclasses.replace(f) for f in run.figures),
                               warnings=("another warning",))
    # what the duplicate check compares: header and figures (a copy's warnings may differ)
    assert (copy.header, copy.figures) == (run.header, run.figures)
    assert run_key(copy) == run_key(run)
    changed = dataclasses.replace(run, figures=(
        dataclasses.replace(run.figures[0], raw=run.figures[0].raw + " "), *run.figures[1:]))
    assert run_key(changed) != run_key(run)
    # a quoted copy of a run is dropped, as before: once by the digest
    text = TEXTS[0] + "\n" + "\n".join("> " + line for line in TEXTS[0].split("\n"))
    assert len(parse_paste(text)) == len(parse_paste(TEXTS[0]))


def test_rows_indented_is_dumps_indented() -> None:
    rng = random.Random(35)
    pool: list[object] = [None, True, False, 0, -5, 2**70, 1.5, 1e300, 5e-324, "x", "é\x00\"\\\n",
                          "", float("nan"), float("inf"), "\udc80", [1], {"a": 1}]
    for _ in range(2000):
        width = rng.randint(1, 5)
        keys = [rng.choice(["a", "é", "\x00k", 'q"']) + str(i) for i in range(width)]
        if rng.random() < 0.05:
            keys[-1] = keys[0]  # a key twice: the dicts keep one
        rows = [[rng.choice(pool) for _ in range(width)] for _ in range(rng.randint(0, 4))]
        level = rng.randint(0, 3)
        assert rows_indented(keys, rows, level=level) == dumps_indented(
            [dict(zip(keys, row, strict=True)) for row in rows], level=level)


def test_a_run_as_json_is_its_record_as_json() -> None:
    for i, run in enumerate(parse_paste("\n".join(TEXTS)), 1):
        assert parse_run_json(i, run) == dumps_indented(parse_run_record(i, run), level=1)
