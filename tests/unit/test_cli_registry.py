"""The CLI declared once: the command and flag tables drive the task, help and dispatch."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

from openssl_matrix.cli import table as cli
from openssl_matrix.cli.commands import HANDLERS

from .test_cli import invoke

ROOT = Path(__file__).resolve().parents[2]


def test_every_handler_takes_exactly_its_commands_flags() -> None:
    assert set(HANDLERS) == set(cli.COMMANDS) - {"help"}
    for name, handler in HANDLERS.items():
        params = set(inspect.signature(handler).parameters) - {"target"}
        flags = {f.name for f in cli.flags_of(name)} - {"help"}
        assert params == flags, name


def test_the_task_signature_comes_from_the_table() -> None:
    task = cli.matrix_task(HANDLERS)
    names = {a.name for a in task.get_arguments()}
    assert names == {"command", "target", "rest", *(f.name for f in cli.FLAGS)}
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
        assert all(f"  {name}" in out.stdout for name in cli.COMMANDS)


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
    """cli/main.py's table imports the other commands only when one runs (issue 35):
    it holds the same commands and handlers as ``commands.HANDLERS``."""
    from openssl_matrix.cli import main
    from openssl_matrix.lab import run

    table = main._Handlers()
    assert set(table) == set(HANDLERS) and len(table) == len(HANDLERS)
    for name in HANDLERS:
        assert table[name] is HANDLERS[name], name
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
