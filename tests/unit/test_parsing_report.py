"""parse_paste: flattened, quoted, wrapped and multi-run reports; round trips."""

from __future__ import annotations

import re
import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openssl_matrix.core.errors import ParseError
from openssl_matrix.parse import parse_paste, parse_speed
from openssl_matrix.parse.figures import STATUS_OK, STATUS_ZERO, SpeedRun

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "speed"
SEED_DIR = Path(__file__).resolve().parents[3] / "shared" / "seeds"

# Line-structured outputs: (stdout, stderr) as speed printed them.
STRUCTURED = [
    ("seeds/004-1.1.0l-no-asm-x86.txt", None),
    ("seeds/004-1.1.0l-netbsd-no-asm.txt", None),
    ("seeds/004-3.0.2-asm-ryzen.txt", None),
    ("seeds/001-1.0.1e-aesni.txt", None),
    ("real-3.0.20/usertime-pk.stdout", "real-3.0.20/usertime-pk.stderr"),
    ("real-1.1.1w/evp-elapsed.stdout", "real-1.1.1w/evp-elapsed.stderr"),
]

PROSE_BEFORE = "Hi all,\nhere is what my box prints, the numbers look low to me:\n\n"
PROSE_AFTER = "\nAny idea why?  Thanks.\n-- \nsomeone\n"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def as_pasted(stdout_name: str, stderr_name: str | None) -> tuple[str, SpeedRun]:
    """The terminal text of one run (stderr first, as a terminal shows it) and its parse."""
    stdout = read(stdout_name)
    stderr = read(stderr_name) if stderr_name else ""
    return stderr + stdout, parse_speed(stdout, stderr)


def flatten(text: str) -> str:
    return " ".join(text.split())


def squeeze(run: SpeedRun) -> dict[str, object]:
    """Header fields with runs of blanks squeezed (a report cannot keep them)."""
    return {
        k: " ".join(v.split()) if isinstance(v, str) else v for k, v in vars(run.header).items()
    }


def same_figures(a: SpeedRun, b: SpeedRun) -> None:
    assert a.figures == b.figures
    assert squeeze(a) == squeeze(b)


@pytest.mark.parametrize(("stdout", "stderr"), STRUCTURED)
def test_flattened_copy_gives_every_figure_exactly(stdout: str, stderr: str | None) -> None:
    pasted, expected = as_pasted(stdout, stderr)
    (run,) = parse_paste(flatten(pasted))
    same_figures(run, expected)
    assert len(run.progress) == len(expected.progress)


@pytest.mark.parametrize(("stdout", "stderr"), STRUCTURED)
def test_quoted_wrapped_and_surrounded_by_prose(stdout: str, stderr: str | None) -> None:
    pasted, expected = as_pasted(stdout, stderr)
    wrapped = "\n".join(
        textwrap.fill(line, width=72, break_long_words=False, break_on_hyphens=False)
        for line in pasted.splitlines()
    )
    mail = PROSE_BEFORE + wrapped + PROSE_AFTER
    quoted = "\n".join("> " + line for line in mail.splitlines())
    reply = "On Monday someone wrote:\n" + quoted + "\n\nTry -elapsed.\n"
    (run,) = parse_paste(reply)
    same_figures(run, expected)


def test_numbers_are_never_invented() -> None:
    pasted, _ = as_pasted("seeds/004-3.0.2-asm-ryzen.txt", None)
    flat = flatten(pasted)
    (run,) = parse_paste(flat)
    printed = set(flat.split())
    for fig in run.figures:
        for token in fig.raw.split():
            assert token in printed, fig


def test_several_runs_split_at_each_header() -> None:
    a, run_a = as_pasted("real-1.1.1w/usertime-pk.stdout", "real-1.1.1w/usertime-pk.stderr")
    b, run_b = as_pasted("real-3.0.20/evp-elapsed.stdout", "real-3.0.20/evp-elapsed.stderr")
    c, run_c = as_pasted("seeds/004-1.1.0l-no-asm-x86.txt", None)
    report = PROSE_BEFORE + a + "\nand the new one:\n" + b + "\nand an old one\n" + c
    runs = parse_paste(report)
    assert len(runs) == 3
    for got, expected in zip(runs, (run_a, run_b, run_c), strict=True):
        same_figures(got, expected)
    # the same report with every line break lost
    flat_runs = parse_paste(flatten(report))
    assert [r.figures for r in flat_runs] == [r.figures for r in runs]


def test_quoted_copy_of_a_run_is_read_once() -> None:
    pasted, expected = as_pasted("seeds/001-1.0.1e-aesni.txt", None)
    quoted = "\n".join("> " + line for line in pasted.splitlines())
    report = pasted + "\nYou wrote:\n" + quoted
    (run,) = parse_paste(report)
    same_figures(run, expected)
    assert len(parse_paste(report, keep_duplicates=True)) == 2


def test_report_without_speed_output_raises() -> None:
    with pytest.raises(ParseError):
        parse_paste("OpenSSL 1.0.1 will be the first release with AES-NI. type 16 bytes")


@pytest.mark.skipif(not SEED_DIR.exists(), reason="seed reports not present")
@pytest.mark.parametrize(
    ("seed", "runs", "figures"),
    [
        ("000_7b7db1047e4d09ca.txt", 20, 20 * 15),
        ("001_cc1246047009c34e.txt", 2, 10),
        ("003_8bf6aab444a2c6dc.txt", 9, 45),
    ],
)
def test_whole_seed_reports(seed: str, runs: int, figures: int) -> None:
    text = (SEED_DIR / seed).read_text()
    parsed = parse_paste(text)
    assert len(parsed) == runs
    assert sum(len(r.figures) for r in parsed) == figures
    printed = set(text.split())
    for run in parsed:
        for fig in run.figures:
            assert all(token in printed for token in fig.raw.split()), fig


# --- property tests --------------------------------------------------------------------

LABELS = [
    "md5", "sha256", "hmac(md5)", "aes-128 cbc", "aes-128-cbc", "AES-256-CBC", "rc5-32/12 cbc",
    "camellia-192 cbc", "des ede3", "idea cbc", "blowfish", "ghash", "evp",
]  # fmt: skip
SIZES = [16, 64, 256, 1024, 8192, 16384]

cents = st.integers(min_value=0, max_value=10**13)  # values in hundredths


def render_cell(hundredths: int) -> tuple[str, float | None]:
    """A bytes/s value as speed.c prints it, and the bytes/s the printed text means."""
    value = Decimal(hundredths) / 100  # bytes/s, two decimals
    if value > 10000:
        thousands = (value / 1000).quantize(Decimal("0.01"))
        return f" {thousands:11}k", float(thousands * 1000)
    return f" {value:11.2f} ", None if value == 0 else float(value)


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[int], list[tuple[str, list[int]]]]:
    ncols = draw(st.integers(min_value=1, max_value=6))
    sizes = SIZES[:ncols] if draw(st.booleans()) else [draw(st.sampled_from(SIZES))][:ncols]
    labels = draw(st.lists(st.sampled_from(LABELS), min_size=1, max_size=6, unique=True))
    rows = [(label, draw(st.lists(cents, min_size=len(sizes), max_size=len(sizes))))
            for label in labels]  # fmt: skip
    return sizes, rows


def render_table(sizes: list[int], rows: list[tuple[str, list[int]]]) -> tuple[str, list[Any]]:
    lines = ["The 'numbers' are in 1000s of bytes per second processed."]
    lines.append("type        " + "".join(f"{s:7d} bytes" for s in sizes))
    expected = []
    for label, values in rows:
        cells = [render_cell(v) for v in values]
        lines.append(f"{label:<13s}" + "".join(c[0] for c in cells))
        expected += [(label, size, c[1]) for size, c in zip(sizes, cells, strict=True)]
    return "\n".join(lines) + "\n", expected


@settings(max_examples=150, deadline=None)
@given(tables())
def test_rendered_table_parses_back(table: tuple[list[int], list[tuple[str, list[int]]]]) -> None:
    text, expected = render_table(*table)
    run = parse_speed(text, version="1.1.1w")
    got = [(f.label, f.block_size, f.bytes_per_s) for f in run.figures]
    assert got == expected
    for fig, (_, _, value) in zip(run.figures, expected, strict=True):
        assert fig.status == (STATUS_OK if value is not None else STATUS_ZERO)
    # and with the line breaks lost
    (flat,) = parse_paste("OpenSSL 1.1.1w  11 Sep 2023 " + flatten(text))
    assert [(f.label, f.block_size, f.bytes_per_s) for f in flat.figures] == expected


@settings(max_examples=100, deadline=None)
@given(tables())
def test_rendered_mr_table_parses_back(
    table: tuple[list[int], list[tuple[str, list[int]]]],
) -> None:
    sizes, rows = table
    lines = ["+H" + "".join(f":{s}" for s in sizes)]
    expected = []
    for index, (label, values) in enumerate(rows):
        printed = [f"{Decimal(v) / 100:.2f}" for v in values]
        lines.append(f"+F:{index}:{label}" + "".join(f":{p}" for p in printed))
        expected += [(label, s, float(p) or None) for s, p in zip(sizes, printed, strict=True)]
    run = parse_speed("\n".join(lines) + "\n", version="3.0.20")
    assert run.machine_readable
    assert [(f.label, f.block_size, f.bytes_per_s) for f in run.figures] == expected


rates = st.integers(min_value=1, max_value=10**9)  # tenths of ops/s


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([512, 1024, 2048, 4096]), rates, rates),
                min_size=1, max_size=4, unique_by=lambda t: t[0]))  # fmt: skip
def test_rendered_rsa_table_parses_back(rows: list[tuple[int, int, int]]) -> None:
    lines = [f"{'':18s}sign    verify    sign/s verify/s"]
    for bits, sign, verify in rows:
        s, v = sign / 10, verify / 10
        lines.append(f"rsa {bits:4d} bits {1 / s:8.6f}s {1 / v:8.6f}s {s:8.1f} {v:8.1f}")
    run = parse_speed("\n".join(lines) + "\n", version="1.1.1w")
    assert len(run.figures) == 2 * len(rows)
    pairs = list(zip(run.figures[::2], run.figures[1::2], strict=True))
    for (bits, sign, verify), pair in zip(rows, pairs, strict=True):
        for fig, tenths, op in zip(pair, (sign, verify), ("sign", "verify"), strict=True):
            assert (fig.algorithm, fig.operation) == (f"rsa-{bits}", op)
            # the value is one of the two printed forms, whichever is more precise
            printed_rate = float(f"{tenths / 10:.1f}")
            printed_seconds = float(f"{1 / (tenths / 10):.6f}")
            candidates = [printed_rate]
            if printed_seconds > 0:
                candidates.append(1 / printed_seconds)
            assert fig.ops_per_s in candidates
            assert re.fullmatch(r"\S+s \S+", fig.raw)


def test_machine_readable_report_with_stdout_pasted_before_stderr() -> None:
    stdout = read("real-3.6.3/mr-evp-kem-sig-elapsed.stdout")
    stderr = read("real-3.6.3/mr-evp-kem-sig-elapsed.stderr")
    expected = parse_speed(stdout, stderr)  # no version: units from the +R progress
    (run,) = parse_paste("results:\n" + flatten(stdout) + "\nand stderr said\n" + stderr)
    assert run.machine_readable
    assert run.figures == expected.figures
    assert {f.status for f in run.figures} == {STATUS_OK}


def test_quote_markers_glued_to_the_text() -> None:
    pasted, expected = as_pasted("seeds/001-1.0.1e-aesni.txt", None)
    quoted = "\n".join(">" + line for line in pasted.splitlines())
    (run,) = parse_paste(">> earlier text\n" + quoted)
    same_figures(run, expected)


def test_header_words_in_prose_are_not_headers() -> None:
    pasted, expected = as_pasted("seeds/001-1.0.1e-aesni.txt", None)
    report = pasted + "\nThe build options: no-asm, compiler: clang, nothing else.\n"
    (run,) = parse_paste(report)
    assert run.header.options == expected.header.options
    assert run.header.compiler == expected.header.compiler


def test_multi_pasted_reads_the_parents_table_not_the_children() -> None:
    """Real 3.0.20 -multi 2 pasted: the Got: records are each child's; the table is the sum."""
    stdout = read("real-3.0.20/multi2-evp.stdout")
    (run,) = parse_paste(stdout)
    assert run.figures == parse_speed(stdout).figures
    first = run.figure("aes-128-cbc", block_size=16)
    assert first is not None and first.bytes_per_s == 1079231890.0  # the sum, 1079231.89k
    (flat,) = parse_paste(flatten(stdout))
    assert flat.figures == run.figures


def test_label_line_between_rows_keeps_the_table_but_not_for_one_column() -> None:
    text = (
        "type 16 bytes 64 bytes\nmd5 1.00k 2.00k\nopenssl-3.0\nmd5 3.00k 4.00k\n"
        "type 1024 bytes\nsha256 5.00k\nabout 3.50 on the other box\n"
    )
    first, second, third = parse_paste(text)
    assert [f.bytes_per_s for f in first.figures] == [1000.0, 2000.0]
    assert [f.bytes_per_s for f in second.figures] == [3000.0, 4000.0]
    assert [(f.algorithm, f.bytes_per_s) for f in third.figures] == [("sha256", 5000.0)]
