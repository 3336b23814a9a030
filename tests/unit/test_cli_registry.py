"""The CLI declared once: each command's module declares its flags, the registry collects
them, and the one table drives the task, help and dispatch."""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from invoke.exceptions import Exit

from openssl_matrix.cli import table as cli
from openssl_matrix.cli.shared import handlers

from .test_cli import invoke

ROOT = Path(__file__).resolve().parents[2]
HANDLERS = handlers()


def test_every_handler_takes_exactly_its_commands_flags() -> None:
    assert set(HANDLERS) == set(cli.table().commands) - {"help"}
    for name, handler in HANDLERS.items():
        params = set(inspect.signature(handler).parameters) - {"target"}
        flags = {f.name for f in cli.flags_of(name)} - {"help"}
        assert params == flags, name


def test_the_task_signature_comes_from_the_table() -> None:
    task = cli.matrix_task(HANDLERS)
    names = {a.name for a in task.get_arguments()}
    assert names == {"command", "target", "rest", *cli.table().flags}
    assert all(len(n) > 1 for a in task.get_arguments() for n in a.names), "no short flags"


def test_per_command_help_shows_only_that_commands_flags() -> None:
    out = invoke("matrix", "build", "--help")
    assert out.returncode == 0, out.stderr
    assert "usage: invoke matrix build" in out.stdout
    assert "--jobs" in out.stdout and "--only" in out.stdout and "--matrix" in out.stdout
    assert "--repeat" not in out.stdout and "--block-size" not in out.stdout
    same = invoke("matrix", "help", "build")
    assert same.returncode == 0 and same.stdout == out.stdout
    bench = invoke("matrix", "bench", "--help")
    assert "--repeat" in bench.stdout and "--jobs" not in bench.stdout


def test_help_lists_the_commands() -> None:
    for args in (("matrix", "help"), ("matrix", "--help")):
        out = invoke(*args)
        assert out.returncode == 0, out.stderr
        assert all(f"  {name}" in out.stdout for name in cli.table().commands)


def test_a_bare_or_unknown_command_is_a_usage_error() -> None:
    out = invoke("matrix")
    assert out.returncode == 10 and "no command given" in out.stderr
    assert "Traceback" not in out.stderr
    out = invoke("matrix", "biuld")
    assert out.returncode == 10 and "perhaps you meant `invoke matrix build`" in out.stderr
    out = invoke("matrix", "pin")
    assert out.returncode == 10 and "needs VERSION" in out.stderr


def test_no_misleading_short_flags() -> None:
    out = invoke("matrix", "export", "-o", "x.csv")
    assert out.returncode != 0 and "--only" not in out.stderr
    out = invoke("matrix", "bench", "-a", "3", "--cpu=auto")
    assert out.returncode != 0 and "repeat" not in out.stdout


def test_the_command_line_hands_every_command_to_its_handler() -> None:
    """cli/main.py's table imports a command's module only when it runs (issue 35): it
    holds the same commands and handlers as ``shared.handlers()``."""
    from openssl_matrix.cli import main
    from openssl_matrix.lab import run

    table = main._Handlers()
    assert set(table) == set(HANDLERS) and len(table) == len(HANDLERS)
    for name in HANDLERS:
        mine, theirs = table[name], HANDLERS[name]
        assert getattr(mine, "func", mine) is getattr(theirs, "func", theirs), name
        assert inspect.signature(mine) == inspect.signature(theirs), name
    assert main.WORKER_FLAG == run.WORKER_FLAG


def test_parse_and_import_start_without_docker_or_the_report() -> None:
    code = ("import sys; import openssl_matrix.cli.main; "
            "print(sorted(m for m in ('docker', 'requests', 'jinja2', 'openssl_matrix.report',"
            " 'openssl_matrix.measure', 'openssl_matrix.lab', 'openssl_matrix.cli.commands')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


HEAVY = ("docker", "requests", "jinja2", "openssl_matrix.report", "openssl_matrix.measure",
         "openssl_matrix.lab", "openssl_matrix.cli.shared")


def _loaded_after(code: str) -> list[str]:
    probe = (f"import sys; {code}; "
             f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert out.returncode == 0, out.stderr
    return [m for m in HEAVY if f"'{m}'" in out.stdout]


def test_a_parse_or_import_line_loads_its_own_module_only() -> None:
    """The line's table (cli/main.py) and handler hold the command's module alone: no
    other command's imports (Docker, the report, the bench, the lab)."""
    for line in (["parse", "x.txt", "--json"], ["import", "x.txt", "--as=ref"],
                 ["parse", "--help"]):
        code = ("from openssl_matrix.cli import main; "
                f"t = main.table_for({line!r}); main._Handlers()[{line[0]!r}]; "
                f"assert list(t.commands) == [{line[0]!r}, 'help'], t.commands")
        assert _loaded_after(code) == [], line


def test_a_line_with_another_commands_flag_is_parsed_with_every_command() -> None:
    """``parse x --output y`` is refused as today ("does not take --output"), not as an
    unknown flag: a flag the named command does not declare loads the whole table."""
    from openssl_matrix.cli import main

    assert set(main.table_for(["parse", "x", "--output", "y"]).commands) == \
        set(cli.table().commands)
    assert set(main.table_for(["biuld"]).commands) == set(cli.table().commands)
    assert set(main.table_for([]).commands) == set(cli.table().commands)
    assert list(main.table_for(["export", "--format=csv"]).commands) == ["export", "help"]


def test_every_command_module_declares_its_flags_and_is_registered_once() -> None:
    package = ROOT / "openssl_matrix" / "cli" / "commands"
    modules = {f"{cli.COMMANDS_PACKAGE}.{p.stem}" for p in package.glob("*.py")
               if p.stem != "__init__"}
    assert sorted(cli.REGISTRY.values()) == sorted(modules)  # each module: one line
    assert len(set(cli.REGISTRY.values())) == len(cli.REGISTRY)
    everything = cli.table()
    for name in cli.REGISTRY:
        module = cli.command_module(name)
        spec = module.COMMAND
        assert isinstance(spec, cli.Command) and spec.name == name
        assert all(isinstance(f, cli.Flag) and f.help for f in spec.flags), name
        assert len({f.name for f in spec.flags}) == len(spec.flags), name
        # its handler takes exactly those flags (and seams with defaults after them)
        params = inspect.signature(module.run).parameters
        flags = {f.name for f in everything.flags_of(name)} - {"help"}
        assert flags <= set(params), name
        extra = set(params) - flags - {"target"}
        assert all(params[p].default is not inspect.Parameter.empty for p in extra), name
    for name, found in everything.flags.items():  # one invoke signature: kinds agree
        assert len({(type(f.default), f.default) for f in found}) == 1, name


def test_only_the_registry_imports_a_command_module_by_name() -> None:
    """The graph the layout test reads misses the registry's imports by name: there is
    one such import (cli/table.py's ``command_module``), and no module of the package
    imports a command module except another command module."""
    calls = []
    for path in (ROOT / "openssl_matrix").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls += [path.name for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Attribute)
                  and node.func.attr == "import_module"]
        if path.parent.name == "commands":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(cli.COMMANDS_PACKAGE), path
    assert calls == ["table.py"]


TOY = '''
from openssl_matrix.cli.table import JSON, Command, Flag

COMMAND = Command("toy", "a command added in a test", "WORD", flags=(
    Flag("times", 0, "how often to say WORD", low=1, unset="once"),
    JSON,
))


def run(*, target: str, matrix: str, results: str, times: int, json: bool,
        shout: str = "!") -> int:
    print(("[%r]" if json else "%s") % ((target + shout + " ") * (times or 1)).strip())
    return 3 if target == "fail" else 0
'''


def test_a_toy_command_is_one_module_and_one_registry_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "toy_command.py").write_text(textwrap.dedent(TOY), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))  # the module outside the package
    registry = {**cli.REGISTRY, "toy": "toy_command"}  # the one line
    table = cli.table(registry=registry)
    run = {**HANDLERS, "toy": cli.handler("toy", registry, shout="?")}
    assert set(inspect.signature(run["toy"]).parameters) == \
        {"target", "matrix", "results", "times", "json"}

    cli.dispatch("toy", "hi", {"times": "2"}, run, the_table=table)
    assert capsys.readouterr().out == "hi? hi?\n"
    with pytest.raises(Exit) as failed:  # its status is the command's exit code
        cli.dispatch("toy", "fail", {}, run, the_table=table)
    assert failed.value.code == 3
    for flags, said in (({"times": "0"}, "--times=0: expected a whole number of at least 1"),
                        ({"repeat": "2"}, "`invoke matrix toy` does not take --repeat"),
                        ({}, "`invoke matrix toy` needs WORD")):
        with pytest.raises(Exit) as refused:
            cli.dispatch("toy", "" if not flags else "x", flags, run, the_table=table)
        assert refused.value.code == 10 and said in capsys.readouterr().err
    cli.dispatch("help", "", {}, run, the_table=table)  # listed among the commands
    assert "  toy        a command added in a test" in capsys.readouterr().out
    assert "--times=INT" in cli.help_text("toy", table)
    task = cli.matrix_task(run, table)  # invoke's task takes its flags
    assert {"times", "json"} <= {a.name for a in task.get_arguments()}


def test_no_layer_below_the_command_line_starts_it_by_name() -> None:
    """The lab starts its engine workers through the package's own entry point
    (``python -m openssl_matrix --lab-worker JOB``, lab/run.py's ``WORKER_COMMAND``): no
    module below cli/ names a module of it, in an import or in a string it runs."""
    from openssl_matrix.lab.run import WORKER_COMMAND, WORKER_FLAG

    assert WORKER_COMMAND == ("-m", "openssl_matrix", WORKER_FLAG)
    named = []
    for path in (ROOT / "openssl_matrix").rglob("*.py"):
        where = path.relative_to(ROOT / "openssl_matrix").parts
        if "cli" in where or where == ("__main__.py",):  # the command line, its entry
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in docstrings and "openssl_matrix.cli" in node.value:
                named.append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "openssl_matrix.cli"):
                named.append(f"{path.name}:{node.lineno}")
    assert named == []
