"""The parser's fast paths give what the reference behaviour gives (issue 35): symmetric
cells without Decimal, figure records without asdict, indented JSON through the C
encoder, a figure's EVP-ness set without dataclasses.replace, and ``parse --json``
written run by run."""

from __future__ import annotations

import dataclasses
import io
import json
import random
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from openssl_matrix.cli.commands.parse import parse_run_record
from openssl_matrix.cli.commands.parse import run as cmd_parse
from openssl_matrix.core.errors import ParseError
from openssl_matrix.core.jsonfast import dumps_indented
from openssl_matrix.parse import figure_records, parse_paste
from openssl_matrix.parse.figures import Figure, sym_value, sym_value_reference
from openssl_matrix.parse.figures import with_evp as _with_evp

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _pastes() -> list[Path]:
    """The report fixtures and real outputs that hold a table (some hold stderr only)."""
    found = []
    for path in sorted((FIXTURES / "reports").glob("*.txt")) + sorted(
            (FIXTURES / "speed").glob("real-*/*.stdout")):
        try:
            parse_paste(path.read_bytes().decode("utf-8", errors="replace"))
        except ParseError:
            continue
        found.append(path)
    return found


REPORTS = _pastes()


def _tokens() -> list[str]:
    rnd = random.Random(35)
    found = ["0.00", "0.00k", "00.00k", "1.5k", "1.5K", "208570.35k", "9876.54", "1.k", ".5k",
             "1..5k", "\uff11.5k", "-1.5k", "inf", "nank", "-nan", "0.001k", "1e400",
             "12345678901234567890123.45k", "1234567890123456789012345.6789k", " 1.5k "]
    for _ in range(20000):
        whole = str(rnd.randrange(10 ** rnd.randrange(1, 24)))
        fraction = str(rnd.randrange(10 ** rnd.randrange(1, 9))).zfill(rnd.randrange(1, 9))
        found.append(f"{whole}.{fraction}{rnd.choice(['', 'k', 'K'])}")
    return found


@pytest.mark.parametrize("human", [True, False])
def test_sym_value_equals_the_decimal_reference(human: bool) -> None:
    for token in _tokens():
        assert sym_value(token, thousands_suffix=human) == \
            sym_value_reference(token, thousands_suffix=human), token


def test_figure_records_equal_asdict() -> None:
    runs = [run for path in REPORTS
            for run in parse_paste(path.read_bytes().decode("utf-8", errors="replace"))]
    assert sum(len(r.figures) for r in runs) > 100
    for run in runs:
        assert figure_records(run) == [dataclasses.asdict(f) for f in run.figures]


def test_with_evp_equals_replace() -> None:
    assert len(dataclasses.fields(Figure)) == 12  # _with_evp and _sym_figures name all 12
    fig = Figure("a", "b", None, 16, 1.0, 2.0, "op", "ok", "d", 3, 4.0, "raw")
    for evp in (True, False):
        assert _with_evp(fig, evp) == dataclasses.replace(fig, evp=evp)


@pytest.mark.parametrize("obj", [
    [], {}, "é\u2028\"", 10**30, -0.0, 1e-300, True, None, [1, [2, []], {"a": {}}],
    {"b": 1, "a": [{}, [], {"x": None, "y": (1, 2.5)}]}, {"k": float("nan")},
    {1: "int key"}, {"p": Path("/x")}, [[[[[[1]]]]]],
])
@pytest.mark.parametrize("sort_keys", [True, False])
def test_dumps_indented_equals_json_dumps(obj: object, sort_keys: bool) -> None:
    reference = json.dumps(obj, indent=2, sort_keys=sort_keys, default=str)
    assert dumps_indented(obj, sort_keys=sort_keys, default=str) == reference
    with pytest.raises(ValueError):
        dumps_indented([float("inf")], allow_nan=False)


def test_dumps_indented_of_parsed_runs() -> None:
    for path in REPORTS:
        runs = parse_paste(path.read_bytes().decode("utf-8", errors="replace"))
        records = [parse_run_record(i, r) for i, r in enumerate(runs, 1)]
        assert dumps_indented(records) == json.dumps(records, indent=2)
        assert dumps_indented(records[0], level=1) == \
            json.dumps([records[0]], indent=2)[4:-2]


@pytest.mark.parametrize("path", REPORTS[:6], ids=lambda p: p.name)
def test_parse_json_is_the_whole_list_as_json_dumps_writes_it(path: Path) -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert cmd_parse(target=str(path), matrix="", results="", json=True) == 0
    runs = parse_paste(path.read_bytes().decode("utf-8", errors="replace"))
    expected = [parse_run_record(i, r) for i, r in enumerate(runs, 1)]
    assert out.getvalue() == json.dumps(expected, indent=2) + "\n"
