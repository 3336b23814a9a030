"""The ``invoke matrix <command> [TARGET] [--flags]`` entry point.

invoke reads ``invoke matrix build`` as two tasks. ``MatrixTask`` arranges for it:
the ``matrix`` task takes the subcommand as its first positional argument and an
optional second positional (``parse FILE``, ``pin VERSION`` ...) that is only
demanded by the subcommands that need one. Fatal errors become a message and the
error's exit code here, and nowhere else.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from invoke.exceptions import Exit
from invoke.parser.argument import Argument
from invoke.tasks import Task

from .errors import FatalError, UsageError

# subcommand -> (needs a TARGET?, flags it accepts)
COMMON = {"matrix", "results"}
COMMANDS: dict[str, tuple[str | None, set[str]]] = {
    "list": (None, {"json", "only", "all"}),
    "render": (None, {"only", "output", "all"}),
    "build": (None, {"only", "jobs", "force", "cpu", "all"}),
    "bench": (None, {"cpu", "only", "suite", "force", "wait", "repeat", "fresh"}),
    "profiles": (None, {"json"}),
    "export": (None, {"format", "output"}),
    "parse": ("FILE", {"json"}),
    "pin": ("VERSION", {"file", "force"}),
    "import": ("FILE", {"as_"}),
    "report": (None, {"output", "block_size"}),
    "reproduce": ("REPORT", {"cpu", "force", "wait", "json"}),
}


class _TargetArgument(Argument):
    """A positional that counts as missing only for subcommands that need a target."""

    def __init__(self, command_arg: Argument, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.command_arg = command_arg

    @property
    def value(self) -> Any:
        if self._value is not None:
            return self._value
        spec = COMMANDS.get(str(self.command_arg.value))
        if spec is not None and spec[0] is not None:
            return None  # still needed: the parser will take the next word for it
        return ""

    @value.setter
    def value(self, arg: str) -> None:
        self.set_value(arg, cast=True)


class MatrixTask(Task[Any]):
    """An invoke task whose second positional argument is optional."""

    def get_arguments(self, ignore_unknown_help: bool | None = None) -> list[Argument]:
        args: list[Argument] = super().get_arguments(ignore_unknown_help)
        command = next(a for a in args if a.name == "command")
        out = []
        for a in args:
            if a.name == "target":
                a = _TargetArgument(command, names=a.names, kind=a.kind, default="",
                                    help=a.help, positional=True)
            out.append(a)
        return out


def _flag(name: str) -> str:
    return "--" + name.strip("_").replace("_", "-")


def dispatch(command: str, target: str, flags: dict[str, Any],
             handlers: dict[str, Callable[..., int]]) -> None:
    """Check the command line, run the handler, turn FatalError into an exit."""
    try:
        spec = COMMANDS.get(command)
        if spec is None:
            import difflib

            close = difflib.get_close_matches(command, list(COMMANDS), n=1)
            raise UsageError(
                f"unknown command {command!r}",
                hint=(f"perhaps you meant `invoke matrix {close[0]}`? " if close else "")
                + "commands: " + ", ".join(COMMANDS),
            )
        needs, allowed = spec
        if target and needs is None:
            raise UsageError(f"`invoke matrix {command}` takes no argument, got {target!r}")
        given = {k for k, v in flags.items() if v not in (None, False, "")}
        stray = sorted(given - allowed - COMMON)
        if stray:
            raise UsageError(
                f"`invoke matrix {command}` does not take "
                + ", ".join(_flag(s) for s in stray),
                hint="it takes: " + ", ".join(_flag(s) for s in sorted(allowed | COMMON)),
            )
        code = handlers[command](target=target,
                                 **{k: flags[k] for k in allowed | COMMON if k in flags})
    except FatalError as exc:
        from . import log

        log.error("\n".join(line if len(line) <= 2000 else f"{line[:2000]}… (cut)"
                             for line in str(exc).splitlines()))  # never unbounded text
        raise Exit(code=exc.exit_code) from None
    except KeyboardInterrupt:
        print("\ninterrupted: finished results are kept; rerun the same command to go on",
              file=sys.stderr)
        raise Exit(code=130) from None
    except Exception as exc:  # the last resort: one line, the traceback in a crash log
        from .crash import INTERNAL_ERROR, crash_line, write_crash_log

        print("error: " + crash_line(command, exc, write_crash_log(command, exc)),
              file=sys.stderr)
        raise Exit(code=INTERNAL_ERROR) from None
    if code:
        raise Exit(code=code)
