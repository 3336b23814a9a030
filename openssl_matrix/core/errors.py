"""The one place where fatal errors and their exit codes are defined.

Every error a user can meet is a ``FatalError`` subclass whose message says what
went wrong and what to do next. Only the entry point (``cli.dispatch``, which the
``invoke matrix`` task in ``tasks.py`` calls) turns them into a message and an exit
status, using ``exit_code``. :data:`EXIT_CODES` lists every status the tool ends with,
those of no error class (0, 70, 125, 128, 130, 141) included; docs/exit-codes.md says each
at length.
"""

from __future__ import annotations

import errno


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


class FileSystemError(FatalError):
    """The file system refused: read-only, full, a name too long, a path through a file,
    permission denied. Not a bug, and nothing half-written is left trusted."""

    exit_code = 11

    @classmethod
    def of(cls, exc: OSError, doing: str = "", where: str = "") -> FileSystemError:
        """The named error for an ``OSError`` the environment raised (``errno`` in
        :data:`ENVIRONMENT_ERRNOS`): the path it names, else ``where`` (what the command
        was writing, as its caller knows it), never just "a file"."""
        what, todo = _HINTS.get(exc.errno or 0, (exc.strerror or str(exc), "check the path"))
        if exc.filename is not None:
            name = str(exc.filename)
            shown = repr(name) if len(name) <= 200 else repr(name[:200] + "…")
        else:
            shown = where[:260] or "a file"
        return cls(f"{shown}: {what}" + (f" (while {doing})" if doing else ""), hint=todo)


#: Exit status of a lab some engines of which did not finish: ``LAB_EXIT + mask``, bit *i*
#: of the mask standing for the *i*-th engine of ``--cpu`` (the 5th bit for the 5th and any
#: later one), so a lab ends with 33 to :data:`LAB_EXIT_LAST`.
LAB_EXIT = 32
LAB_EXIT_LAST = LAB_EXIT + 31


class LabError(FatalError):
    """Some engines of a lab did not finish (exit status LAB_EXIT + mask)."""

    exit_code = LAB_EXIT

    def __init__(self, message: str, *, mask: int, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.exit_code = LAB_EXIT + min(mask, 31)


#: A bug: an exception no error class names (``core.crash`` writes its crash log).
INTERNAL_ERROR = 70
#: ``bisect --run``: the commit is skipped (it does not build, or could not be placed);
#: what ``git bisect run`` reads as "skip" (its 1 is ``like-bad``, this table's 1).
BISECT_SKIP = 125
#: ``bisect --run``: the run is stopped (``like-neither``, or an error): above 127, so
#: ``git bisect run`` stops instead of marking the commit.
BISECT_ABORT = 128
#: Ctrl-C (or SIGTERM in a lab): finished results are kept.
INTERRUPTED = 130

#: Every exit status, in the few words a lab's summary line gives an engine's status.
#: A reader of standard output that went away (``… | head``): 128 + SIGPIPE, as a shell
#: reports it.
STDOUT_CLOSED = 141

#: ``LAB_EXIT`` stands for its whole range (to ``LAB_EXIT_LAST``).
EXIT_CODES: dict[int, str] = {
    0: "done",
    FatalError.exit_code: "error",
    ConfigError.exit_code: "configuration error",
    SourceError.exit_code: "source error",
    BuildError.exit_code: "build failed",
    BenchError.exit_code: "bench cells failed",
    DockerUnavailable.exit_code: "engine unreachable",
    ProfileMismatch.exit_code: "CPU does not match the profile",
    ParseError.exit_code: "parse error",
    ResultsError.exit_code: "results tree / engine busy",
    UsageError.exit_code: "usage error",
    FileSystemError.exit_code: "the file system refused",
    LAB_EXIT: "engines of a lab failed",
    INTERNAL_ERROR: "internal error (crash log written)",
    BISECT_SKIP: "bisect --run: commit skipped",
    BISECT_ABORT: "bisect --run: git's run stopped",
    INTERRUPTED: "interrupted",
    STDOUT_CLOSED: "the reader of standard output went away",
}


def _errnos() -> dict[int, tuple[str, str]]:
    return {
        errno.EROFS: ("the file system is read-only", "write to a writable folder (--results "
                      "DIR / --output DIR), or remount it read-write; nothing was changed"),
        errno.ENOSPC: ("no space left on the device", "free some space (or give a folder on "
                       "another file system) and rerun the same command: what finished is "
                       "kept, nothing half-written is counted"),
        errno.EDQUOT: ("the disk quota is exceeded", "free some space and rerun the same "
                       "command: what finished is kept"),
        errno.ENAMETOOLONG: ("a file name is too long for this file system",
                             "use a shorter --results/--output path or --as name"),
        errno.ENOTDIR: ("a part of this path is a file, not a folder",
                        "give a path whose folders are folders"),
        errno.EACCES: ("permission denied", "give a folder you may write (or read), or fix "
                       "its permissions"),
        errno.EPERM: ("operation not permitted", "give a folder you may write, or fix its "
                      "permissions"),
        errno.EISDIR: ("is a folder where a file was expected", "give a file name"),
        errno.ELOOP: ("too many levels of symbolic links", "give a path without link loops"),
        errno.EMFILE: ("too many open files", "raise the limit (ulimit -n) and rerun"),
        errno.EIO: ("an input/output error on the device", "check the disk (dmesg) and rerun"),
    }


_HINTS = _errnos()
#: The errno values that mean "the environment refused", never "a bug in the tool".
ENVIRONMENT_ERRNOS = frozenset(_HINTS)
