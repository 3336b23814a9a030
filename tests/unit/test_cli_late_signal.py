"""A signal outside a command's own handling ends the process as an interruption (130,
one line), not with invoke's silent exit 1 (CI, 2026-12-06: a SIGTERM sent to `export`
as it ended gave exit status 1 and nothing on standard error)."""

from __future__ import annotations

import pytest
from invoke.collection import Collection
from invoke.context import Context
from invoke.tasks import task

from openssl_matrix.cli.main import _Program
from openssl_matrix.core.errors import INTERRUPTED
from openssl_matrix.core.interrupt import Stopped


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
