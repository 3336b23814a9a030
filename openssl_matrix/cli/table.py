"""The ``invoke matrix <command> [TARGET] [--flags]`` entry point: the registry of the
commands, and the one parsing, help, errors and exit codes they share.

Each command is one module under ``cli/commands/`` (``build.py``, ``bench.py`` ...) that
declares ``COMMAND``, a :class:`Command` holding its own :class:`Flag` s (name, help,
default, lower bound), and its handler ``run``; :data:`REGISTRY` names every module, one
line each. From the declarations come the invoke task's signature and help
(:func:`matrix_task`, which ``tasks.py`` and ``cli/main.py`` call), the check of which
flags a command accepts, the per-command help (``invoke matrix build --help``, ``invoke
matrix help build``) and the call of the handler, whose keyword parameters must be exactly
``target`` and the command's flags (then any seams: :func:`handler`; a test checks it).

**Adding a command**: one module under ``cli/commands/`` and one line in
:data:`REGISTRY`. **Adding a flag**: one ``Flag(...)`` in the command's ``COMMAND`` and
the keyword parameter of its ``run``. Nothing else.

invoke reads ``invoke matrix build`` as two tasks. ``MatrixTask`` arranges for it: the
``matrix`` task takes the command as its first positional argument and an optional second
positional (``parse FILE``, ``pin VERSION`` ...). There are no short flags: invoke's
automatic ones misled (``-o`` was ``--only``, so ``export -o x.csv`` failed). Fatal
errors become a message and the error's exit code here, and nowhere else; a missing or
unknown command is a usage error (exit 10). So are the command line's other mistakes,
which invoke's parser would end with its own message and exit 1: a last positional
(``rest``) takes every word the parser does not know (``--bogus``, a second FILE), and a
flag that takes a value may be given without one; :func:`dispatch` refuses both.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import importlib
import inspect
import os
import re
import signal
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import Any

from invoke.exceptions import Exit
from invoke.parser.argument import Argument
from invoke.tasks import Task, task

from openssl_matrix.cli.paths import results_root
from openssl_matrix.core import log
from openssl_matrix.core.crash import crash_line, write_crash_log
from openssl_matrix.core.errors import (
    ENVIRONMENT_ERRNOS,
    INTERNAL_ERROR,
    INTERRUPTED,
    STDOUT_CLOSED,
    FatalError,
    FileSystemError,
    UsageError,
)
from openssl_matrix.core.interrupt import raise_stopped
from openssl_matrix.core.names import clip


@dataclass(frozen=True)
class Flag:
    """One ``--flag`` of a command: its Python name (``as_`` for ``--as``), default and
    help. Two commands may declare a flag of the same name, each with its own help (what
    ``--force`` means differs); the default and kind must agree (one invoke signature)."""

    name: str
    default: Any
    help: str
    #: the smallest whole number the command line may give (a count of 0 is not "the
    #: default": leaving the flag out is)
    low: int | None = None
    unset: str = ""  # what leaving the flag out means, for the hint

    @property
    def whole_number(self) -> bool:
        """An integer flag: invoke hands it over as text, parsed here (:func:`_value`)."""
        return isinstance(self.default, int) and not isinstance(self.default, bool)

    @property
    def option(self) -> str:
        return "--" + self.name.strip("_").replace("_", "-")


@dataclass(frozen=True)
class Command:
    """A command as its module declares it (``COMMAND``): name, summary, the positional
    argument it needs, and its own flags (the shared ``--matrix``, ``--results`` and
    ``--help`` are added by the registry)."""

    name: str
    summary: str
    target: str | None = None  # the positional argument it needs (FILE, VERSION ...)
    usage: str = ""  # how the target and main flags read, for help
    #: a flag that, given, takes the target's place (``reproduce --draft PASTE``)
    target_unless: str | None = None
    flags: tuple[Flag, ...] = ()


#: Flags every command takes, before its own (``--matrix``, ``--results``) and after
#: them (``--help``, which the entry point handles itself).
SHARED: tuple[Flag, ...] = (
    Flag("matrix", "", "matrix file to use (default: $OPENSSL_MATRIX_FILE, else "
         "matrix.yaml)"),
    Flag("results", "", "results tree folder (default: $OPENSSL_MATRIX_RESULTS, else the "
         "matrix's settings.results, else results)"),
)
HELP_FLAG = Flag("help", False, "show the command's flags and exit")
#: flags the entry point handles itself (never passed to a handler)
_OWN = {"help"}

#: Flags several commands declare alike (a command module picks the ones it takes).
ONLY = Flag("only", "", "variants to use: fnmatch pattern(s) over variant ids, comma "
            "separated; a pattern matching no default variant picks opt-in ones "
            "(e.g. --only '1.0.1e-*')")
EVERY = Flag("all", False, "every variant the matrix declares, opt-in ones too")
JSON = Flag("json", False, "print JSON")
WAIT = Flag("wait", False, "wait for another command holding the same results tree (a "
            "bench, an import) instead of failing")
PLAIN_TCP = Flag("allow_plain_tcp", False, "accept a tcp:// Docker engine without TLS "
                 "(anyone who can reach its port controls it; a loud warning is printed)")
BLOCK_SIZES = Flag("block_sizes", "", "the block sizes of rows pasted without speed's "
                   "`type 16 bytes ...` header, comma separated (e.g. "
                   "16,64,256,1024,8192,16384); without it they are those the version line "
                   "above the rows implies (reproduce: with --draft)")

HELP_COMMAND = Command("help", "this help, or a command's flags", "[COMMAND]")

#: The registry: every command, one line each (the command, its module), in the order
#: help lists them. A module declares
#: ``COMMAND`` (a :class:`Command` with its flags) and ``run`` (the handler, whose keyword
#: parameters are ``target`` and exactly the command's flags, then any seams with their
#: defaults). Modules are imported by name when a command needs them, so that a command
#: starts with its own imports only (``parse`` without Docker or the report, issue 35).
COMMANDS_PACKAGE = "openssl_matrix.cli.commands"
REGISTRY: Mapping[str, str] = {
    "list": COMMANDS_PACKAGE + ".list",
    "render": COMMANDS_PACKAGE + ".render",
    "build": COMMANDS_PACKAGE + ".build",
    "bench": COMMANDS_PACKAGE + ".bench",
    "profiles": COMMANDS_PACKAGE + ".profiles",
    "export": COMMANDS_PACKAGE + ".export",
    "parse": COMMANDS_PACKAGE + ".parse",
    "pin": COMMANDS_PACKAGE + ".pin",
    "import": COMMANDS_PACKAGE + ".import_",
    "report": COMMANDS_PACKAGE + ".report",
    "reproduce": COMMANDS_PACKAGE + ".reproduce",
    "bisect": COMMANDS_PACKAGE + ".bisect",
    "profile": COMMANDS_PACKAGE + ".profile",
}


def command_module(name: str, registry: Mapping[str, str] = REGISTRY) -> ModuleType:
    """The module of registered command ``name``, imported (once), its declaration
    checked: ``COMMAND`` of that name and a ``run`` handler."""
    module = importlib.import_module(registry[name])
    declared = getattr(module, "COMMAND", None)
    if not isinstance(declared, Command) or declared.name != name \
            or not callable(getattr(module, "run", None)):
        raise TypeError(f"{module.__name__} must declare COMMAND = Command({name!r}, ...) "
                        "and a run(...) handler")
    return module


class Table:
    """The commands of one command line, as the registry's modules declare them (every
    one, or only the one a line names: :func:`table`)."""

    def __init__(self, commands: Sequence[Command],
                 registry: Mapping[str, str] = REGISTRY) -> None:
        #: every command's name (the unknown command's suggestions)
        self.names = [*registry, HELP_COMMAND.name]
        self.commands: dict[str, Command] = {c.name: c for c in commands}
        self.commands[HELP_COMMAND.name] = HELP_COMMAND
        #: every flag name, with each command's declaration of it
        self.flags: dict[str, list[Flag]] = {f.name: [f] for f in SHARED}
        for c in commands:
            for f in c.flags:
                self.flags.setdefault(f.name, []).append(f)
        self.flags[HELP_FLAG.name] = [HELP_FLAG]

    def flags_of(self, command: str) -> list[Flag]:
        """The flags ``command`` takes, in declaration order: the shared ones, its own,
        ``--help``."""
        spec = self.commands.get(command)
        return [*SHARED, *(spec.flags if spec is not None else ()), HELP_FLAG]

    def flag(self, name: str) -> Flag | None:
        """A flag's (first) declaration: its option spelling and kind."""
        found = self.flags.get(name)
        return found[0] if found else None

    def flag_help(self, name: str) -> str:
        """A flag's help for invoke's own task help: its one text, or each command's."""
        helps = {c.name: f.help for c in self.commands.values() for f in c.flags
                 if f.name == name}
        if len(set(helps.values())) <= 1:
            return next(iter(helps.values()), self.flags[name][0].help)
        return "; ".join(f"{c}: {h}" for c, h in helps.items())


@functools.cache
def _full() -> Table:
    return Table([command_module(n).COMMAND for n in REGISTRY])


def table(names: Sequence[str] | None = None,
          registry: Mapping[str, str] = REGISTRY) -> Table:
    """The table of every command of ``registry`` (``names`` None), or of those named."""
    if names is None and registry is REGISTRY:
        return _full()
    return Table([command_module(n, registry).COMMAND for n in names or registry], registry)


def flags_of(command: str) -> list[Flag]:
    """The flags ``command`` takes, in declaration order."""
    return table().flags_of(command)


def handler(name: str, registry: Mapping[str, str] = REGISTRY,
            **seams: Any) -> Callable[..., int]:
    """Command ``name``'s handler with the ``seams`` it takes bound (an engine factory,
    a chart drawer ...; the others keep their defaults); its signature is ``target`` and
    its flags alone (what dispatch calls it with, and the registry's test checks)."""
    run = command_module(name, registry).run
    sig = inspect.signature(run)
    bound = partial(run, **{k: v for k, v in seams.items() if k in sig.parameters})
    keep = {"target", *(f.name for f in table([name], registry).flags_of(name))} - _OWN
    bound.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[p for n, p in sig.parameters.items() if n in keep])
    return bound


@functools.cache
def default_handler(name: str) -> Callable[..., int]:
    """Command ``name``'s handler with its seams' defaults (the real engine ...)."""
    return handler(name)


# -- invoke glue ------------------------------------------------------------------------


#: The steps of invoke's parser that read an argument: those that look for a missing
#: positional to fill with the next word, the one that checks none is left missing at
#: the end, and the one that asks whether a flag's value may be left out.
_FILLING = ("handle", "see_positional_arg")
_CHECKING = ("complete_context",)
_AMBIGUITY = "check_ambiguity"
_HELP = "help_for"  # invoke's --help: a flag's value shown as needed (--as=STRING)


def _asker() -> str | None:
    """Which of invoke's parser steps is reading a positional's value (None: not the
    parser, e.g. the task's call with the values)."""
    frame: Any = sys._getframe(2)
    for _ in range(5):
        if frame is None:
            return None
        if frame.f_code.co_name in (*_FILLING, *_CHECKING, _AMBIGUITY, _HELP):
            return str(frame.f_code.co_name)
        frame = frame.f_back
    return None


class _Positional(Argument):
    """A positional that takes the next word when there is one and is never reported
    missing by invoke: the command checks it and says what is missing (exit 10)."""

    def __init__(self, command_arg: Argument | None = None, table: Table | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.command_arg = command_arg
        self.table = table

    @property
    def value(self) -> Any:
        if self._value is not None:
            return self._value
        if self.command_arg is not None and self.table is not None:
            spec = self.table.commands.get(str(self.command_arg.value))
            if spec is None or spec.target is None:
                return ""  # this command takes no target: a stray word stays an error
        return "" if _asker() in _CHECKING else None

    @value.setter
    def value(self, arg: str) -> None:
        self.set_value(arg, cast=True)


class _Rest(Argument):
    """The last positional: every word invoke's parser does not know (an unknown flag, a
    word after the target) lands here instead of ending in invoke's own "No idea what
    '--bogus' is!" (exit 1); :func:`dispatch` refuses them as the tool's usage error."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.words: list[str] = []

    @property
    def value(self) -> Any:
        # always "missing" to the steps that fill positionals, so it takes any word
        return None if _asker() in _FILLING else list(self.words)

    @value.setter
    def value(self, arg: str) -> None:
        self.words.append(str(arg))


class _ValueFlag(Argument):
    """A flag that takes a value and may be left without one (invoke's "optional", then
    True): ``--output`` at the end is the command's error (``dispatch``: exit 10), not
    invoke's "needed value" (exit 1). To invoke's ambiguity check it is not optional, so
    a value that happens to be a task's name (``--output matrix``) is still its value;
    nor to invoke's help, which shows the value as needed."""

    @property
    def optional(self) -> bool:
        return _asker() not in (_AMBIGUITY, _HELP)

    @optional.setter
    def optional(self, value: bool) -> None:
        pass  # always optional, as above


class MatrixTask(Task[Any]):
    """An invoke task whose positional arguments are checked by the command itself."""

    table: Table  # the commands it was made from (matrix_task)

    def get_arguments(self, ignore_unknown_help: bool | None = None) -> list[Argument]:
        args: list[Argument] = super().get_arguments(ignore_unknown_help)
        command = next(a for a in args if a.name == "command")
        out: list[Argument] = []
        for a in args:
            if a.name == "command":
                a = command = _Positional(names=a.names, kind=str, default="", help=a.help,
                                          positional=True)
            elif a.name == "target":
                a = _Positional(command, self.table, names=a.names, kind=str, default="",
                                help=a.help, positional=True)
            elif a.name == "rest":
                a = _Rest(names=a.names, kind=str, default="", help=a.help, positional=True)
            elif a.kind is not bool and not a.positional:
                a = _ValueFlag(names=a.names, kind=a.kind, default=a.default, help=a.help,
                               attr_name=a.attr_name)
            out.append(a)
        return out


def matrix_task(handlers: Mapping[str, Callable[..., int]],
                the_table: Table | None = None) -> MatrixTask:
    """The ``matrix`` invoke task, its signature and help derived from the commands'
    declarations (``the_table``: every registered command, unless given)."""
    tab = the_table or table()

    def matrix(c: Any, command: str = "", target: str = "", rest: Any = (),
               **flags: Any) -> None:
        dispatch(command, target, flags, handlers, rest=tuple(rest or ()), the_table=tab)

    matrix.__doc__ = ("Build and benchmark the OpenSSL matrix (`invoke matrix build`, "
                      "`bench --cpu=auto`); `invoke matrix help` lists the commands.")
    P = inspect.Parameter
    params = [P("c", P.POSITIONAL_OR_KEYWORD),
              P("command", P.POSITIONAL_OR_KEYWORD, default=""),
              P("target", P.POSITIONAL_OR_KEYWORD, default=""),
              P("rest", P.POSITIONAL_OR_KEYWORD, default="")]
    # integer flags reach us as text (invoke's own int() would end in a traceback on
    # `--repeat=abc`); the table parses them, naming the flag (exit 10)
    params += [P(f.name, P.KEYWORD_ONLY, default=None if f.whole_number else f.default)
               for f in (found[0] for found in tab.flags.values())]
    matrix.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    helps = {name: tab.flag_help(name) for name in tab.flags}
    helps["command"] = " | ".join(tab.commands)
    helps["target"] = "; ".join(f"{c.target} for `{c.name}`" for c in tab.commands.values()
                                if c.target)
    helps["rest"] = "(nothing: a word or flag the command does not take is refused, exit 10)"
    made: MatrixTask = task(klass=MatrixTask, positional=["command", "target", "rest"],
                            help=helps, auto_shortflags=False)(matrix)
    made.table = tab
    return made


# -- help -------------------------------------------------------------------------------


def _wrap(text: str, indent: int, width: int = 92) -> str:
    pad = " " * indent
    return textwrap.fill(text, width, initial_indent=pad, subsequent_indent=pad)[indent:]


def help_text(command: str = "", the_table: Table | None = None) -> str:
    """``invoke matrix help [COMMAND]``: the commands, or one command's flags."""
    tab = the_table or table()
    if not command:
        lines = ["usage: invoke matrix COMMAND [TARGET] [--flags]", "", "commands:"]
        lines += [f"  {c.name:<10} {c.summary}" for c in tab.commands.values()]
        lines += ["", "`invoke matrix COMMAND --help` shows a command's flags; every command "
                  "takes --matrix PATH and --results DIR."]
        return "\n".join(lines) + "\n"
    spec = _command(command, tab)
    head = " ".join(x for x in ("invoke matrix", spec.name, spec.target or "", spec.usage)
                    if x)
    lines = [f"usage: {head} [--flags]", "", spec.summary, "", "flags:"]
    for f in tab.flags_of(command):
        value = "" if isinstance(f.default, bool) else \
            ("=INT" if isinstance(f.default, int) else "=TEXT")
        lines.append(f"  {f.option + value:<20} " + _wrap(f.help, 23))
    return "\n".join(lines) + "\n"


def _command(command: str, tab: Table) -> Command:
    spec = tab.commands.get(command)
    if spec is None:
        close = difflib.get_close_matches(command, tab.names, n=1)
        raise UsageError(
            f"unknown command {command!r}",
            hint=(f"perhaps you meant `invoke matrix {close[0]}`? " if close else "")
            + "commands: " + ", ".join(tab.names))
    return spec


# -- dispatch ---------------------------------------------------------------------------


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Let SIGTERM (a `kill`, a stopping CI job) clean up like Ctrl-C does, in every
    command: containers removed, run folders marked interrupted, journals saved, an
    import or a report left for its rerun to go on (exit 130). Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    old = {sig: signal.signal(sig, raise_stopped) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def dispatch(command: str, target: str, flags: Mapping[str, Any],
             handlers: Mapping[str, Callable[..., int]], *,
             rest: Sequence[str] = (), the_table: Table | None = None) -> None:
    """Check the command line, run the handler, turn FatalError into an exit; anything
    else unexpected is the last resort's (crash.py): one line, a crash log, exit 70.
    ``rest``: the words invoke's parser did not know (an unknown flag, an extra word);
    ``the_table``: the commands the line was parsed with (every registered one unless
    given)."""
    try:
        tab = the_table or table()
        if not command:
            if flags.get("help"):
                sys.stdout.write(help_text(the_table=tab))
                return
            raise UsageError("no command given: `invoke matrix COMMAND`",
                             hint="commands: " + ", ".join(tab.names)
                             + " (`invoke matrix help` says what each does)")
        spec = _command(command, tab)
        if flags.get("help") or command == "help" or "-h" in rest:
            sys.stdout.write(help_text(target if command == "help" else command, tab))
            return
        values = _checked(spec, target, flags, rest, tab)
        main = threading.current_thread() is threading.main_thread()  # (a lab's threads)
        with contextlib.redirect_stdout(_NamedStdout(sys.stdout)) if main else \
                contextlib.nullcontext(), terminate_as_interrupt():
            code = handlers[command](target=target, **values)
            sys.stdout.flush()  # a full device says so here, naming standard output
    except FatalError as exc:
        log.error("\n".join(line if len(line) <= 2000 else f"{line[:2000]}… (cut)"
                             for line in str(exc).splitlines()))  # never unbounded text
        raise Exit(code=exc.exit_code) from None
    except BrokenPipeError as exc:
        if exc.filename != STDOUT:
            return _last_resort(command, exc)
        _stdout_closed()  # `| head` read what it wanted: no crash log, nothing more printed
        raise Exit(code=STDOUT_CLOSED) from None
    except OSError as exc:
        if exc.errno not in ENVIRONMENT_ERRNOS:
            return _last_resort(command, exc)
        log.error(str(FileSystemError.of(exc, f"`invoke matrix {command}`",
                                         _written(command, flags))))
        raise Exit(code=FileSystemError.exit_code) from None
    except KeyboardInterrupt:
        print("\ninterrupted: finished results are kept; rerun the same command to go on",
              file=sys.stderr)
        raise Exit(code=INTERRUPTED) from None
    except Exit:
        raise
    except Exception as exc:  # the last resort: one line, the traceback in a crash log
        _last_resort(command, exc)
    if code:
        raise Exit(code=code)


def _checked(spec: Command, target: str, flags: Mapping[str, Any], rest: Sequence[str],
             tab: Table) -> dict[str, Any]:
    """The handler's keyword values from the command line, or UsageError (exit 10): a
    word or flag the command does not take, a flag without its value, a missing target."""
    command = spec.name
    if rest:
        _refuse_rest(command, spec, rest, tab)
    if target and spec.target is None:
        raise UsageError(f"`invoke matrix {command}` takes no argument, got {target!r}")
    allowed = tab.flags_of(command)
    names = {f.name for f in allowed}
    given = {k for k, v in flags.items() if v not in (None, False, "")
             or (v == "" and (f := tab.flag(k)) is not None and f.whole_number)}
    stray = sorted(given - names)
    if stray:
        raise UsageError(
            f"`invoke matrix {command}` does not take "
            + ", ".join(f.option if (f := tab.flag(s)) is not None else f"--{s}"
                        for s in stray),
            hint="it takes: " + ", ".join(sorted(f.option for f in allowed
                                                 if f.name not in _OWN)))
    for f in allowed:
        if flags.get(f.name) is True and not isinstance(f.default, bool):
            raise UsageError(f"{f.option} needs a value (`{f.option}=...`)",
                             hint=f"`invoke matrix {command} --help` says what "
                             f"{f.option} takes")
    if spec.target and not target and not (spec.target_unless
                                            and flags.get(spec.target_unless)):
        raise UsageError(f"`invoke matrix {command}` needs {spec.target}",
                         hint=f"`invoke matrix {command} --help` shows its usage")
    return {f.name: _value(f, flags.get(f.name)) for f in allowed if f.name not in _OWN}


STDOUT = "<standard output>"
#: The exit status when the reader of standard output went away (``| head``): a process
#: killed by SIGPIPE reports 128 + 13 to the shell.


def _stdout_closed() -> None:
    """Point standard output at /dev/null, so that Python's flush at exit does not fail
    again on the closed pipe (and print "Exception ignored")."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())  # type: ignore[union-attr]
        os.close(devnull)


class _NamedStdout:
    """Standard output whose write errors name it (a full device, a closed pipe): an
    OSError from a ``print`` has no file name of its own."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except OSError as exc:
            exc.filename = STDOUT if exc.filename is None else exc.filename
            raise

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            exc.filename = STDOUT if exc.filename is None else exc.filename
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _written(command: str, flags: Mapping[str, Any]) -> str:
    """What ``command`` was writing when the file system refused without naming a path
    (a file written without the atomic writer, a chart): its output or results tree."""
    output = flags.get("output")
    results = results_root(flags.get("matrix"), flags.get("results"))
    if command == "export" and isinstance(output, str) and output not in ("", "-"):
        return clip(output, 200)
    folder = {"report": output or f"{results}/_report",
              "render": output or "dockerfiles/rendered"}.get(command, results)
    return f"{clip(str(folder), 200)} (a file in it)"


def _refuse_rest(command: str, spec: Command, rest: Sequence[str], tab: Table) -> None:
    """UsageError for the words invoke's parser left over: an unknown flag (with the
    closest one the command takes), else a word beyond the command's one argument."""
    takes = sorted(f.option for f in tab.flags_of(command) if f.name not in _OWN)
    unknown = [w.split("=", 1)[0] for w in rest if w.startswith("-") and w != "-"]
    if unknown:
        close = difflib.get_close_matches(unknown[0], takes, n=1)
        raise UsageError(f"`invoke matrix {command}`: unknown flag {clip(unknown[0], 60)}",
                         hint=(f"perhaps you meant {close[0]}? " if close else "")
                         + "it takes: " + ", ".join(takes))
    if spec.target is None:
        raise UsageError(f"`invoke matrix {command}` takes no argument, got "
                         f"{clip(rest[0], 60)}")
    raise UsageError(f"`invoke matrix {command}` takes one {spec.target}, got more: "
                     f"{clip(rest[0], 60)}", hint=f"`invoke matrix {command} --help` shows "
                     "its usage (a name with spaces goes in quotes)")


def _last_resort(command: str, exc: BaseException) -> None:
    print("error: " + crash_line(command, exc, write_crash_log(command, exc)),
          file=sys.stderr)
    raise Exit(code=INTERNAL_ERROR) from None


def _value(flag: Flag, given: Any) -> Any:
    """A flag's value for its handler: the default when not given; an integer flag's text
    parsed as a whole number (``UsageError`` naming the flag when it is not one, or is
    below the flag's ``low``: ``--repeat=0`` is refused, not taken for the default)."""
    if given is None:
        return flag.default
    if not flag.whole_number or (isinstance(given, int) and not isinstance(given, bool)):
        return given
    text = str(given).strip()
    if not re.fullmatch(r"[+-]?[0-9]{1,18}", text):
        shown = repr(given) if len(repr(given)) <= 40 else repr(given)[:40] + "…"
        raise UsageError(f"{flag.option} {shown}: expected a whole number",
                         hint=f"e.g. {flag.option}=2")
    value = int(text)
    if flag.low is not None and value < flag.low:
        raise UsageError(f"{flag.option}={value}: expected a whole number of at least "
                         f"{flag.low}", hint=f"e.g. {flag.option}={flag.low + 1}, or leave "
                         f"{flag.option} out for {flag.unset or 'its default'}")
    return value
