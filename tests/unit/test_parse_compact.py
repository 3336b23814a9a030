"""A run's rows of common cells kept compactly (parse/figures.py's ``FigureRow`` in a
``FigureTable``, issue 35 item 4): the run is the run the slow paths give (equal, same
hash, repr, pickle), its values and ``parse``/``parse --json`` texts are those of its
figures, and a paste whose figures are all different is held in under 5x its size."""

from __future__ import annotations

import pickle
import tracemalloc
from dataclasses import fields, replace
from operator import attrgetter
from pathlib import Path

from openssl_matrix.cli.commands.parse import parse_run_json, parse_run_record, parse_table
from openssl_matrix.core.errors import ParseError
from openssl_matrix.core.jsonfast import dumps_indented
from openssl_matrix.parse import figure_records, figure_rows, parse_paste
from openssl_matrix.parse.fastpaths import slow_paths
from openssl_matrix.parse.figures import Figure, FigureRow, FigureTable, figure_values

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "speed"
_VALUES = attrgetter(*(f.name for f in fields(Figure)))

_ODD = """version: 3.0.20
built on: odd labels
type             16 bytes     64 bytes    256 bytes   1024 bytes   8192 bytes  16384 bytes
ae%s-128-cbc    1095755.79k  1324703.30k  1405652.22k  1422884.86k  1427816.45k  1429209.09k
"quoted"\\x     1.00k        2.01k        3.00k        4.00k        5.00k        6.99k
sha256é         123895.89k   401948.74k   0.00k        1476267.01k  1747361.79k  1780285.44k
sha512          99.50k       100.25k      101.00k      102.00k      103.00k      104.00k
"""


def _unique(runs: int) -> str:
    """``runs`` runs of three rows, every figure different from every other."""
    head = ("type             16 bytes     64 bytes    256 bytes   1024 bytes   8192 bytes"
            "  16384 bytes")
    parts = []
    for k in range(runs):
        rows = [f"{name:<16}" + " ".join(f"{1000 + k * 18 + r * 6 + c}.{(k + c) % 100:02d}k"
                                         for c in range(6))
                for r, name in enumerate(("sha256", "AES-128-CBC", "AES-256-GCM"))]
        parts.append("\n".join([f"version: 3.0.20\nbuilt on: copy {k}", head, *rows]))
    return "\n\n".join(parts) + "\n"


def _pastes() -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*/*.stdout"))]
    # (_ODD without its zero cell: every row kept as a row, --json's row templates)
    return [*texts, _ODD, _ODD.replace(" 0.00k", " 9.00k"), _unique(30)]


def test_compact_runs_are_the_slow_paths_runs() -> None:
    compact = 0
    for text in _pastes():
        try:
            fast = parse_paste(text, keep_duplicates=True)
        except ParseError:
            continue  # (a fixture without a table)
        with slow_paths():
            slow = parse_paste(text, keep_duplicates=True)
        assert fast == slow and slow == fast
        for a, b in zip(fast, slow, strict=True):
            compact += type(a.figures) is FigureTable
            assert type(b.figures) is tuple
            assert repr(a) == repr(b) and hash(a) == hash(b)
            assert a.figures == b.figures and b.figures == a.figures
            assert len(a.figures) == len(b.figures) and list(a.figures) == list(b.figures)
            assert all(a.figures[i] == b.figures[i] for i in range(-len(b.figures), len(b.figures)))
            assert a.figures[1:4] == b.figures[1:4]
            assert list(figure_values(a.figures)) == list(map(_VALUES, b.figures))
            assert list(figure_rows(a)) == list(figure_rows(b))
            assert figure_records(a) == figure_records(b)
            assert pickle.loads(pickle.dumps(a)) == b
            assert replace(a, figures=tuple(a.figures)) == a
            assert a.figure("sha256", 64) == b.figure("sha256", 64)
    assert compact > 30  # the rows were kept compactly


def test_the_odd_rows() -> None:
    """A zero cell is a figure of its own (the row is not kept as one); labels with ``%``,
    quotes, backslashes and accents are written as the encoder writes them."""
    (run,) = parse_paste(_ODD)
    assert isinstance(run.figures, FigureTable)
    kinds = [type(p) for p in run.figures.parts]
    assert kinds.count(FigureRow) == 3 and kinds.count(Figure) == 6
    assert [f.status for f in run.figures].count("zero") == 1


def test_parse_and_json_texts_are_the_figures_texts() -> None:
    for text in _pastes():
        try:
            runs = parse_paste(text)
        except ParseError:
            continue
        for i, run in enumerate(runs, start=1):
            plain = replace(run, figures=tuple(run.figures))
            expected = dumps_indented(parse_run_record(i, plain), level=1)
            assert parse_run_json(i, run) == expected
            assert parse_run_json(i, run) == expected  # (a second time: from what is kept)
            assert parse_table(run.figures) == parse_table(plain.figures)


def test_a_paste_of_different_figures_is_held_in_under_five_times_its_size() -> None:
    """The parsed runs themselves (what stays allocated once the parse is over: 3.0x this
    paste, where a Figure per cell held 13.2x; the peak adds the lexer's window: 7.1x of a
    paste of 2,000 runs, 2.8x of 20,000, docs/performance.md)."""
    text = _unique(2000)
    parse_paste(text)  # (caches warm, as benchmarks/pastes.py measures a second parse)
    tracemalloc.start()
    try:
        runs = parse_paste(text)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(runs) == 2000 and all(type(r.figures) is FigureTable for r in runs)
    assert held < 5 * len(text.encode())
