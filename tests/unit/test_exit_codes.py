"""Every exit status is in the one table (``EXIT_CODES``, core/errors.py), and
docs/exit-codes.md lists exactly those; what the page says of exit 1 holds."""

from __future__ import annotations

import ast
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


#: What a status the scan cannot evaluate is, by its text: each comes from the table.
DYNAMIC = {
    "exc.exit_code",  # a FatalError's own: every class's code is in the table (above)
    "code",  # a command handler's return (cli/table.py): each handler's returns are scanned
    "worker(args[1])",  # a lab worker: the worst status of the commands it ran
}


def _value(node: ast.expr, names: dict[str, int]) -> int | str:
    """An exit status as written: an int, a constant of core/errors.py or of its module
    (``ABORT``), ``SomeError.exit_code``; else its text (a status known at run time)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.Attribute) and node.attr == "exit_code" \
            and isinstance(node.value, ast.Name) and hasattr(errors, node.value.id):
        return int(getattr(errors, node.value.id).exit_code)
    return ast.unparse(node)


#: Where the command handlers are: one module per command, each handler named ``run``.
HANDLERS_AT = "openssl_matrix/cli/commands/"


def exit_statuses() -> dict[str, int | str]:
    """Every status the package ends a process with, where it is written: ``sys.exit``,
    ``SystemExit``, ``os._exit`` and invoke's ``Exit(code=)``, what a command handler
    (``run`` in a command's module under cli/commands/) returns, and the statuses
    ``bisect --run`` gives git."""
    from openssl_matrix.sweep.bisect import DECISIONS, exit_code

    table = {n: v for n, v in vars(errors).items() if isinstance(v, int)}
    found: dict[str, int | str] = {f"bisect --run {d}": exit_code(d) for d in DECISIONS}
    for path in sorted((ROOT / "openssl_matrix").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {**table, **{t.id: v.value for n in tree.body if isinstance(n, ast.Assign)
                             for t in n.targets if isinstance(t, ast.Name)
                             and isinstance(v := n.value, ast.Constant)
                             and isinstance(v.value, int)}}
        for n in tree.body:  # ``ABORT = BISECT_ABORT``: a name for a constant of the table
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) \
                    and n.value.id in names:
                names.update({t.id: names[n.value.id] for t in n.targets
                              if isinstance(t, ast.Name)})
        where = path.relative_to(ROOT).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = ast.unparse(node.func)
                if func in ("sys.exit", "SystemExit", "os._exit") and node.args:
                    arg = node.args[0]
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        continue  # a message: exit 1, which is in the table
                    found[f"{where}:{node.lineno}"] = _value(arg, names)
                elif func == "Exit":
                    for kw in node.keywords:
                        if kw.arg == "code":
                            found[f"{where}:{node.lineno}"] = _value(kw.value, names)
            elif isinstance(node, ast.FunctionDef) and (
                    node.name.startswith("cmd_")
                    or (node.name == "run" and where.startswith(HANDLERS_AT))):
                for r in ast.walk(node):
                    if isinstance(r, ast.Return) and r.value is not None and not (
                            isinstance(r.value, ast.Call)):  # a call: scanned where it is
                        found[f"{where}:{r.lineno}"] = _value(r.value, names)
    return found


def test_every_status_the_package_ends_with_is_in_the_table_and_the_docs() -> None:
    found = exit_statuses()
    assert len(found) >= 15, found  # the walk found the entry points and the handlers
    assert sum(w.startswith(HANDLERS_AT) for w in found) >= 13, found  # every command's
    documented = _documented()
    in_docs = {c for first, last in documented.items() for c in range(first, last + 1)}
    unknown = {w: s for w, s in found.items()
               if not (isinstance(s, int) and s in EXIT_CODES and s in in_docs)
               and s not in DYNAMIC}
    assert unknown == {}, "add the status to EXIT_CODES (core/errors.py) and the page"
