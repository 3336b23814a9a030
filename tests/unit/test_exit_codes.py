"""Every exit status is in the one table (``EXIT_CODES``, core/errors.py), and
docs/exit-codes.md lists exactly those; what the page says of exit 1 holds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from openssl_matrix.cli.main import main
from openssl_matrix.core import errors
from openssl_matrix.core.errors import EXIT_CODES, LAB_EXIT, LAB_EXIT_LAST, FatalError
from openssl_matrix.lab.view import REASONS

ROOT = Path(__file__).resolve().parents[2]
#: A code or a range at the start of a list item: ``- 9 results ...``, ``- 32–63 some ...``.
ITEM = re.compile(r"^- (\d+)(?:–(\d+))? ", re.MULTILINE)


def _documented() -> dict[int, int]:
    """The page's codes: first code -> last code of its range (itself when not a range)."""
    text = (ROOT / "docs" / "exit-codes.md").read_text(encoding="utf-8")
    return {int(a): int(b or a) for a, b in ITEM.findall(text)}


def test_the_docs_list_exactly_the_codes_of_the_table() -> None:
    documented = _documented()
    assert set(documented) == set(EXIT_CODES)
    assert documented[LAB_EXIT] == LAB_EXIT_LAST == 63
    assert all(last == first for first, last in documented.items() if first != LAB_EXIT)


def test_every_error_class_has_its_code_in_the_table() -> None:
    classes = [c for c in vars(errors).values()
               if isinstance(c, type) and issubclass(c, FatalError)]
    assert len(classes) >= 12  # the walk found them: FatalError and its subclasses
    for cls in classes:
        assert cls.exit_code in EXIT_CODES, cls.__name__


def test_a_lab_error_stays_in_its_documented_range() -> None:
    assert errors.LabError("x", mask=0b1).exit_code == 33
    assert errors.LabError("x", mask=1 << 9).exit_code == LAB_EXIT_LAST


def test_the_lab_summary_words_come_from_the_table() -> None:
    assert REASONS[errors.FileSystemError.exit_code] == EXIT_CODES[11]
    assert 0 not in REASONS  # a worker that ended 0 finished: never a reason for failing


@pytest.mark.parametrize("argv", [["list", "--bogus"], ["list", "--matrix"],
                                  ["report", "a", "b"]])
def test_a_command_line_invokes_parser_refuses_exits_10_not_1(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """What invoke's own parser refuses is a command-line error like any other (10): exit
    1 is left to errors without a code of their own."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 10
    assert "error:" in capsys.readouterr().err
