"""``python -m openssl_matrix COMMAND ...`` and the ``openssl-matrix`` console script.

The same command and flag table as ``invoke matrix COMMAND ...`` (tasks.py): the
arguments are handed to invoke's parser as the ``matrix`` task's, so
``openssl-matrix render --matrix matrix.yaml --output out`` is exactly
``invoke matrix render --matrix matrix.yaml --output out``, from any folder.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence

from invoke.collection import Collection
from invoke.exceptions import Exit, ParseError
from invoke.program import Program

from openssl_matrix import __version__
from openssl_matrix.cli.table import REGISTRY, Table, default_handler, matrix_task, table
from openssl_matrix.core.errors import INTERRUPTED, UsageError
from openssl_matrix.core.interrupt import NOT_STARTED

PROGRAM = "openssl-matrix"
#: ``python -m openssl_matrix --lab-worker JOB``: a lab's engine worker (lab/run.py's
#: ``WORKER_FLAG``, spelled here so that this module does not import the lab).
WORKER_FLAG = "--lab-worker"


class _Handlers(Mapping[str, Callable[..., int]]):
    """The registered commands' handlers, each command's module imported only when it
    runs: ``parse`` and ``import`` need the parser and the results tree, not Docker, the
    report, the bench or the lab (about a second of imports, issue 35)."""

    def __getitem__(self, command: str) -> Callable[..., int]:
        return default_handler(command)

    def __iter__(self) -> Iterator[str]:
        return iter(REGISTRY)

    def __len__(self) -> int:
        return len(REGISTRY)


def table_for(args: Sequence[str]) -> Table:
    """The commands a command line is parsed with: only the one it names when every flag
    it gives is one of that command's (``parse FILE --json`` imports the parse module
    alone), else every registered command, so that a flag of another command, a word
    invoke would read as a flag, or no command at all is refused or helped exactly as
    with the whole table."""
    if args and args[0] in REGISTRY:
        one = table([args[0]])
        options = {f.option for f in one.flags_of(args[0])}
        if all(not w.startswith("-") or w.split("=", 1)[0] in options for w in args[1:]):
            return one
    return table()


class _Program(Program):
    """invoke's Program, whose own parse errors (the few the command table cannot take
    over, e.g. a flag value that is also a task's name) are usage errors: exit 10."""

    def run(self, argv: list[str] | None = None, exit: bool = True) -> None:
        """invoke ends a KeyboardInterrupt it catches — our ``Stopped``, from a signal
        outside a command's own handling (while invoke parses, or as the command
        returns) — with a silent exit 1: say so, and end as every interruption does."""
        try:
            super().run(argv, exit)
        except SystemExit as exc:
            if exc.code == 1 and isinstance(exc.__context__, KeyboardInterrupt):
                print("\ninterrupted: rerun the same command to go on", file=sys.stderr)
                raise SystemExit(INTERRUPTED) from None
            raise

    def parse_tasks(self) -> None:
        try:
            super().parse_tasks()
        except ParseError as exc:
            raise Exit(f"error: {exc}", code=UsageError.exit_code) from None


def main(argv: Sequence[str] | None = None) -> None:
    """Run one command; exits with its status (invoke's ``Exit``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-V"]):
        print(f"{PROGRAM} {__version__}")
        return
    if len(args) == 2 and args[0] == WORKER_FLAG:  # a lab's engine worker (lab/run.py)
        from openssl_matrix.cli.worker import worker  # lazy: as _Handlers' commands
        sys.exit(worker(args[1]))
    try:  # the command's module is imported here: a signal now has written nothing yet
        task = matrix_task(_Handlers(), table_for(args))
    except KeyboardInterrupt:
        print(NOT_STARTED, file=sys.stderr)
        raise SystemExit(INTERRUPTED) from None
    program = _Program(namespace=Collection(matrix=task), name=PROGRAM, binary=PROGRAM,
                       version=__version__)
    program.run([PROGRAM, "matrix", *args])
