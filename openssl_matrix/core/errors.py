"""The one place where fatal errors and their exit codes are defined.

Every error a user can meet is a ``FatalError`` subclass whose message says what
went wrong and what to do next. Only the entry point (``cli.dispatch``, which the
``invoke matrix`` task in ``tasks.py`` calls) turns them into a message and an exit
status, using ``exit_code``.
"""

from __future__ import annotations


class FatalError(Exception):
    """An error that ends the command with a message and a distinct exit code."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}\n  hint: {self.hint}"
        return self.message


class ConfigError(FatalError):
    """matrix.yaml (or a report spec) is invalid."""

    exit_code = 2


class SourceError(FatalError):
    """A source tarball could not be obtained or failed verification."""

    exit_code = 3


class BuildError(FatalError):
    """One or more variants failed to build."""

    exit_code = 4


class BenchError(FatalError):
    """One or more benchmark cells failed."""

    exit_code = 5


class DockerUnavailable(FatalError):
    """The Docker engine cannot be reached."""

    exit_code = 6


class ProfileMismatch(FatalError):
    """The requested CPU profile does not describe this host."""

    exit_code = 7


class ParseError(FatalError):
    """Text that should be `openssl speed` output could not be understood."""

    exit_code = 8


class ResultsError(FatalError):
    """The results tree is missing, locked or damaged."""

    exit_code = 9


class UsageError(FatalError):
    """The command line itself is wrong (unknown subcommand, missing argument)."""

    exit_code = 10
