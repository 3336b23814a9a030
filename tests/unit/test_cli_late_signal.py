"""A signal outside a command's own handling ends the process as an interruption (130,
one line), not with invoke's silent exit 1 (CI, 2026-12-06: a SIGTERM sent to `export`
as it ended gave exit status 1 and nothing on standard error)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from invoke.collection import Collection
from invoke.context import Context
from invoke.tasks import task

from openssl_matrix.cli.main import _Program
from openssl_matrix.core.errors import INTERRUPTED
from openssl_matrix.core.interrupt import Stopped

ROOT = Path(__file__).resolve().parents[2]


@task
def late(c: Context) -> None:
    raise Stopped("signal 15")  # what raise_stopped does outside dispatch's handling


@task
def fine(c: Context) -> None:
    pass


@task
def fails(c: Context) -> None:
    raise SystemExit(1)  # an exit 1 with no interrupt behind it


def program() -> _Program:
    return _Program(namespace=Collection(late, fine, fails), name="t", binary="t", version="0")


def test_a_stop_that_invoke_catches_exits_130_and_says_so(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        program().run(["t", "late"])
    assert ended.value.code == INTERRUPTED
    assert "interrupted: rerun the same command to go on" in capsys.readouterr().err


def test_other_endings_are_invokes_own() -> None:
    program().run(["t", "fine"])  # returns: no exit at all
    with pytest.raises(SystemExit) as ended:
        program().run(["t", "fails"])
    assert ended.value.code == 1  # an exit 1 of its own is left alone


_SIGNAL_DURING_IMPORT = """
import signal, sys
from openssl_matrix.core.interrupt import install
install()
class _Hook:
    def find_spec(self, name, path=None, target=None):
        if name == "openssl_matrix.cli.commands.report":
            signal.raise_signal(signal.SIGINT)
        return None
sys.meta_path.insert(0, _Hook())
from openssl_matrix.cli.main import main
main(["report", "--results", "nowhere", "--output", "page"])
"""


def test_a_signal_while_a_commands_module_is_imported_exits_130_without_a_traceback(
        tmp_path: Path) -> None:
    # the full suite under load: SIGINT 0.8 s into `report` landed in the lazy import of
    # the command's module (cli/table.command_module), before invoke ran: a traceback
    done = subprocess.run([sys.executable, "-c", _SIGNAL_DURING_IMPORT], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == INTERRUPTED, done.stderr
    assert "Traceback" not in done.stderr
    assert "nothing was written" in done.stderr
    assert not (tmp_path / "page").exists()
