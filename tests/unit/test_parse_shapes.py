"""The parser's fast paths against its slow ones (issue 35, item 4): a line's shape kept
per distinct line (parse/shapes.py), a row's figures kept and built by one match
(``common_row``, ``new_figure``), and the lexer's line cache and whole-row match
(parse/lexlines.py) give the runs and items the step-by-step reading gives, on every
fixture and on randomised pastes whose rows the fast paths must accept or refuse."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path

from openssl_matrix.parse import lexlines, parse_paste, parse_speed, paste, shapes
from openssl_matrix.parse.fastpaths import slow_paths
from openssl_matrix.parse.figures import (
    Figure,
    common_cell,
    common_row,
    new_figure,
    sane,
    sym_value,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TEXTS = sorted(p for d in ("speed", "reports") for p in (FIXTURES / d).rglob("*")
               if p.is_file())

_NAMES = ["aes-128-cbc", "aes-128 cbc", "des ede3", "sha256", "AES-256-GCM", "rc4", "md5",
          "hmac(md5)", "The", "type", "You", "OpenSSL", "+F:", "rc4:", "evp", "1.5",
          "camellia-128 cbc", "blowfish cbc", "rsa", "sign", "built", "options:x"]


def _number(rng: random.Random) -> str:
    form = rng.random()
    if form < 0.6:
        return f"{rng.uniform(0, 10 ** rng.randint(1, 13)):.2f}k"
    return rng.choice([
        "0.00k", "0.00", "-124.63k", "inf", "infk", "nan", "-nan", "12.5M", "1e400",
        f"{rng.uniform(1, 9999):.2f}", f"{rng.uniform(1, 9999):.3f}k", "123456789012.34k",
        "1.5", "7k", "٣.٥٠k", f"{rng.uniform(1, 99):.1f}k", "00.00k", "0.01k",
    ])


def _row(rng: random.Random, columns: int) -> str:
    cells = [_number(rng) for _ in range(columns + rng.choice([0, 0, 0, 0, -1, 1]))]
    blank = rng.choice([" ", "  ", "   ", "\t", " \t "])
    return rng.choice(_NAMES) + blank + blank.join(cells) + rng.choice(["", " ", "\t"])


_HEADERS = [
    "OpenSSL 1.1.1w  11 Sep 2023", "version: 3.0.20", "OpenSSL 1.0.2u  20 Dec 2019",
    "OpenSSL 1.1.1w  11 Sep 2023", "(Library: OpenSSL 1.1.1w  11 Sep 2023)",
]
_FIELDS = [
    "built on: Mon Nov 30 03:38:08 2026 UTC", "options:bn(64,64) rc4(8x,int) des(int)",
    "compiler: gcc -O3 -DOPENSSL_PIC", "CPUINFO: OPENSSL_ia32cap=0x7ffaf3bfffebffff:0x0",
    "options: Doing type 16 bytes", "compiler: cc /usr/bin/openssl", "platform: linux-x86_64",
    "built on: reproducible", "compiler: gcc You have chosen",
]
_NOTES = [
    "The 'numbers' are in 1000s of bytes per second processed.",
    "The 'numbers' are in 1000s of bytes per second processed",
    "The 'numbers' are in 1000s of bytes per second", "The 'numbers' are in 1000s",
    "You have chosen to measure elapsed time instead of user CPU time.",
]
_PK = [
    "                  sign    verify    sign/s verify/s",
    "rsa 2048 bits 0.000242s 0.000016s   4127.0  61813.0",
    "rsa 2048 bits 0.000242s 0.000016s   4127.0",
    "                              op      op/s",
    " 256 bits ecdh (nistp256)   0.0000s  21354.0",
    " 256 bits ecdsa (nistp256)   0.0000s   0.0001s  51169.0  16382.0",
    " 253 bits EdDSA (Ed25519)   0.0000s   0.0001s  26992.0   9914.0",
    "keygen encaps decaps keygens/s encaps/s decaps/s",
    "ML-KEM-512 0.000010s 0.000011s 0.000012s 100000.0 90000.0 80000.0",
]
_PROSE = ["Here are my results:", "openssl-3.0", "openssl speed -evp rc4:", "16 bytes",
          "$ openssl speed -elapsed aes-128-cbc", "about 3.50 on my box", "> quoted 1.00k",
          "", "", "speed", "Doing aes-128-cbc for 3s on 16 size blocks: 5 aes's in 3.00s"]


def _paste(rng: random.Random, runs: int) -> str:
    """A paste of repeated, varied and odd lines: the caches see lines again, in other
    states and before other lines."""
    out: list[str] = []
    for _ in range(runs):
        out.append(rng.choice(_HEADERS))
        out += rng.sample(_FIELDS, rng.randint(0, 3))
        if rng.random() < 0.7:
            out.append(rng.choice(_NOTES))
        columns = rng.choice([1, 5, 6, 6, 6])
        sizes = [16, 64, 256, 1024, 8192, 16384][:columns]
        if rng.random() < 0.9:
            out.append("type" + "".join(f" {rng.choice(['', ' '])}{s} bytes" for s in sizes))
        rows = [_row(rng, columns) for _ in range(rng.randint(1, 4))]
        for _ in range(rng.randint(1, 6)):
            choice = rng.random()
            out.append(rng.choice(rows) if choice < 0.5 else rng.choice(_PK) if choice < 0.75
                       else rng.choice(_PROSE) if choice < 0.9 else rng.choice(_NOTES))
    return "\n".join(out) + rng.choice(["", "\n"])


def _texts() -> Iterator[tuple[str, str]]:
    for path in TEXTS:
        yield path.name, path.read_text(encoding="utf-8", errors="replace")
    rng = random.Random(35)
    for k in range(40):
        yield f"random-{k}", _paste(rng, rng.randint(1, 30))


def _both(read: Callable[[str], object]) -> None:
    """Every text read with the fast paths (their caches cold, then warm) and without them
    (``fastpaths.slow_paths``): the same result, ``repr`` for ``repr``."""
    texts = list(_texts())
    fast = [repr(read(text)) for _, text in texts]
    fast_again = [repr(read(text)) for _, text in texts]  # every cache warm
    with slow_paths():
        for (name, text), one, two in zip(texts, fast, fast_again, strict=True):
            reference = repr(read(text))
            assert one == reference, name
            assert two == reference, name


def _runs(text: str) -> object:
    try:
        return parse_paste(text)
    except Exception as exc:  # the same error, too
        return (type(exc).__name__, str(exc))


def _speed(text: str) -> object:
    try:
        return parse_speed(text, version="1.1.1w")
    except Exception as exc:
        return (type(exc).__name__, str(exc))


def _items(text: str) -> object:
    return [(i.kind, i.text) for i in paste._Lexer(text).run()]


def test_the_fast_paths_and_the_slow_ones_agree() -> None:
    _both(_runs)
    _both(_speed)
    _both(_items)


def test_the_slow_paths_take_no_fast_path_and_keep_nothing() -> None:
    text = (FIXTURES / "speed" / "real-1.1.1w" / "evp-elapsed.stdout").read_text(encoding="utf-8")
    with slow_paths():
        parse_paste(text)
        assert not shapes.SHAPES and not lexlines.LINES
    parse_paste(text)
    assert shapes.SHAPES and lexlines.LINES


def test_the_fast_paths_are_taken_and_refuse() -> None:
    """The caches hold the repeated lines of a paste; rows that are not plain are refused
    by the whole-row match (each read by the steps instead)."""
    lexlines.LINES.clear()
    shapes.SHAPES.clear()
    text = (FIXTURES / "speed/real-3.0.20/evp-elapsed.stdout").read_text()
    parse_paste(text + "\n" + text.replace("built on:", "built on: again"))
    kinds = {kept[0] for kept in lexlines.LINES.values()}
    assert {"version", "field", "numbers", "symheader", "pkheader", "pkrow"} <= kinds
    assert any(shape[0] == shapes.PKROW and shape[-1] for shape in shapes.SHAPES.values())
    row = "sha256          123895.89k   401948.74k   956102.66k  1476267.01k"
    assert lexlines.row_line(" ".join(row.split()), 4)
    for refused in ("sha256 1.00k 2.00k 3.00k", "rc4: 1.00k 2.00k 3.00k 4.00k",
                    "You 1.00k 2.00k 3.00k 4.00k", "1.5 1.00k 2.00k 3.00k 4.00k",
                    "+F: 1.00k 2.00k 3.00k 4.00k", "a b 1.00k 2.00k 3.00k 4.00k"):
        assert not lexlines.row_line(refused, 4), refused
    assert lexlines.row_line("aes-128 cbc 1.00k 2.00k 3.00k 4.00k", 4)
    assert lexlines.condition("numbers", "The 'numbers' are in 1000s of bytes per second "
                              "processed", ["The"]) is None  # a "." may follow
    assert lexlines.condition("field", "compiler: cc Doing", ["compiler:", "cc", "Doing"]) \
        is None


def test_new_figure_is_a_figure() -> None:
    rng = random.Random(7)
    for _ in range(200):
        values = ("aes-128-cbc", "aes-128 cbc", rng.choice([True, False, None]),
                  rng.choice([16, None]), rng.choice([1.5, None]), rng.random(),
                  rng.choice([None, "sign"]), "ok", rng.choice(["", "x"]),
                  rng.choice([None, 2048]), rng.choice([None, 0.5]), "1.50k")
        made, reference = new_figure(*values), Figure(*values)
        assert made == reference and hash(made) == hash(reference)
        assert repr(made) == repr(reference) and type(made) is Figure


def test_common_row_agrees_with_each_cell() -> None:
    rng = random.Random(11)
    taken = 0
    for _ in range(3000):
        columns = rng.randint(1, 6)
        tokens = [_number(rng) if rng.random() < 0.1 else
                  f"{rng.uniform(0, 10 ** rng.randint(1, 12)):.2f}k" for _ in range(columns)]
        sizes = [rng.choice([16, 64, 0, 8192, 2**31]) if rng.random() < 0.05 else 16 << c
                 for c in range(columns)]
        row = common_row("a", "a", True, sizes, tokens)
        cells = []
        for size, token in zip(sizes, tokens, strict=True):
            fig = common_cell("a", "a", True, size, token)
            if fig is None:
                value, status, detail = sym_value(token, thousands_suffix=True)
                fig = sane(Figure("a", "a", True, size, value,
                                  value / size if value is not None and size else None,
                                  None, status, detail, None, None, token))
            cells.append(fig)
        if row is not None:
            taken += 1
            assert row == cells, tokens
            assert common_row("a", "a", True, sizes, tokens, checked=True) == cells
    assert 1000 < taken < 3000  # both ways taken


def test_row_shape_agrees_with_the_split() -> None:
    rng = random.Random(13)
    fast = 0
    for _ in range(3000):
        line = _row(rng, rng.randint(1, 6)).strip()
        if rng.random() < 0.5:
            line = " ".join(line.split())
        shape = shapes.row_shape(line)
        split = shapes.sym_split(line)
        assert (shape[1], shape[2]) == ((None, None) if split is None else split), line
        fast += shape[4]
    assert 300 < fast < 3000


def test_a_filled_layout_is_the_document() -> None:
    """``parse --json``'s runs are their values filled into a layout (core/jsonfast):
    the text ``dumps_indented`` gives, whatever the scalars; None for anything else."""
    from openssl_matrix.core.jsonfast import dumps_indented, fill, layout, mark

    rng = random.Random(17)
    scalars = [None, True, False, 0, -3, 2**70, 1.5, float("nan"), float("inf"), -0.0,
               "", "a\0b", "é\u2028\"\\", "\x00", "1.00k"]
    for _ in range(300):
        width, rows = rng.randint(1, 4), rng.randint(0, 3)
        keys = [f"k{n}" for n in range(width)]
        values = [rng.choice(scalars) for _ in range(1 + width * rows)]
        marks = iter(map(mark, range(len(values))))
        skeleton = {"n": next(marks), "rows": [dict(zip(keys, marks, strict=False))
                                               for _ in range(rows)]}
        level = rng.randint(0, 2)
        it = iter(values)
        document = {"n": next(it), "rows": [dict(zip(keys, it, strict=False))
                                            for _ in range(rows)]}
        texts = layout(skeleton, level=level)
        assert fill(texts, values) == dumps_indented(document, level=level)
    texts = layout({"n": mark(0)})
    assert fill(texts, [[1]]) is None and fill(texts, [{"a": 1}]) is None
    assert fill(texts, [1, 2]) is None


_CLEAN = [(FIXTURES / "speed" / p / "evp-elapsed.stdout").read_text(encoding="utf-8")
          for p in ("real-1.1.1w", "real-3.0.20")]


def _odd(rng: random.Random, text: str) -> str:
    """``text`` with lines the line path must refuse or read as the steps do: quoted,
    wrapped, joined, indented, tabbed, lost, prose between them; CRLF or a BOM at times."""
    out: list[str] = []
    for line in text.split("\n"):
        r = rng.random()
        if r < 0.04:
            out.append(rng.choice(["> ", ">> ", " > "]) + line)
        elif r < 0.08 and len(line) > 30:
            cut = rng.randint(5, len(line) - 5)
            out += [line[:cut], line[cut:]]  # a wrapped row or field
        elif r < 0.11 and out:
            out[-1] += " " + line  # a lost line break
        elif r < 0.15:
            out.append(line.replace(" ", "\t"))
        elif r < 0.17:
            out.append("  " + line)
        elif r < 0.19:
            out.append(rng.choice(_PROSE))
        elif r < 0.22:
            pass  # a lost line: a field before a row, a row under another table
        else:
            out.append(line)
    odd = "\n".join(out)
    r = rng.random()
    return odd.replace("\n", "\r\n") if r < 0.2 else "\ufeff" + odd if r < 0.3 else odd


def _repeated(rng: random.Random, runs: int, odd: float) -> str:
    parts = []
    for k in range(runs):
        text = rng.choice(_CLEAN).replace("built on: ", f"built on: (copy {k}) ", 1)
        parts.append(_odd(rng, text) if rng.random() < odd else text)
    return "\n".join(parts)


def test_the_line_path_reads_what_the_steps_read() -> None:
    """Pastes of clean runs (the line path reads their chunks) with odd ones among them
    (it must refuse theirs): the same items, chunk by chunk or whole, as the steps alone,
    and the same runs."""
    rng = random.Random(39)
    for k in range(24):
        text = _repeated(rng, rng.randint(2, 12), rng.choice([0.0, 0.2, 0.5, 1.0]))
        fast = [[(i.kind, i.text) for i in paste._Lexer(text, chunk=size).run()]
                for size in (1, 700, 10**9)]
        runs = repr(_runs(text))
        with slow_paths():
            slow = [(i.kind, i.text) for i in paste._Lexer(text, chunk=10**9).run()]
            assert runs == repr(_runs(text)), k
        for one in fast:
            assert one == slow, k


def _first(lexer: paste._Lexer) -> lexlines.FirstReading:
    return lexer._first_reading


def test_the_line_path_takes_clean_chunks_and_refuses_odd_ones() -> None:
    lexer = paste._Lexer("")
    clean = _CLEAN[1]
    read = lexlines.line_items(clean, 0, None, _first(lexer))
    assert read is not None
    items, columns, pk_kind = read
    assert [i.kind for i in items][:3] == ["version", "field", "field"]
    assert (columns, pk_kind) == (0, "sign-verify")  # the last table: EdDSA's
    # a tab or a CRLF is a blank or a line break: the same items
    assert lexlines.line_items(clean.replace(" ", "\t").replace("\n", "\r\n"), 0, None,
                               _first(lexer)) == read
    lines = clean.split("\n")
    row = next(k for k, line in enumerate(lines) if line.startswith("sha256"))
    wrapped = [*lines[:row], lines[row][:40], lines[row][40:], *lines[row + 1:]]
    joined = [*lines[:row - 1], lines[row - 1] + " " + lines[row], *lines[row + 1:]]
    prose = [*lines[:row], "Here are my results:", *lines[row:]]
    for odd in (wrapped, joined, prose):
        assert lexlines.line_items("\n".join(odd), 0, None, _first(lexer)) is None
    assert lexlines.line_items("\ufeff" + clean, 0, None, _first(lexer)) is None
    # a kept field before a line that is no anchor: the field's value runs on
    cpuinfo = next(k for k, line in enumerate(lines) if line.startswith("CPUINFO"))
    lost = "\n".join([*lines[:cpuinfo + 1], next(x for x in lines if x.startswith("rsa"))])
    assert (lines[cpuinfo], 0, None) in lexlines.LINES
    assert lexlines.line_items(lost, 0, None, _first(lexer)) is None
    text = "\n".join([clean, clean, lost])  # the second reads it in the state of the third
    fast = [(i.kind, i.text) for i in paste._Lexer(text, chunk=1).run()]
    with slow_paths():
        assert fast == [(i.kind, i.text) for i in paste._Lexer(text, chunk=1).run()]
    assert ("field", " ".join(lost.split("\n", cpuinfo)[-1].split())) in fast
