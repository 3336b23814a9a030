"""The ``invoke matrix <command> [TARGET] [--flags]`` entry point, declared once.

Every command is a :class:`Command` in :data:`COMMANDS` and every flag a :class:`Flag` in
:data:`FLAGS`: its name, default, help and the commands that take it. From these two
tables come the invoke task's signature and help (:func:`matrix_task`, which ``tasks.py``
calls), the check of which flags a command accepts, the per-command help
(``invoke matrix build --help``, ``invoke matrix help build``) and the call of the
command's handler in ``commands.HANDLERS``, whose keyword parameters must be exactly the
command's flags (a test checks it).

**Adding a flag**: add one ``Flag(...)`` to :data:`FLAGS` naming the commands that take
it, and the keyword parameter to those handlers. Nothing else.

invoke reads ``invoke matrix build`` as two tasks. ``MatrixTask`` arranges for it: the
``matrix`` task takes the command as its first positional argument and an optional second
positional (``parse FILE``, ``pin VERSION`` ...). There are no short flags: invoke's
automatic ones misled (``-o`` was ``--only``, so ``export -o x.csv`` failed). Fatal
errors become a message and the error's exit code here, and nowhere else; a missing or
unknown command is a usage error (exit 10).
"""

from __future__ import annotations

import difflib
import inspect
import re
import sys
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from invoke.exceptions import Exit
from invoke.parser.argument import Argument
from invoke.tasks import Task, task

from openssl_matrix.core import log
from openssl_matrix.core.crash import crash_line, write_crash_log
from openssl_matrix.core.errors import (
    ENVIRONMENT_ERRNOS,
    INTERNAL_ERROR,
    INTERRUPTED,
    FatalError,
    FileSystemError,
    UsageError,
)

ALL = "*"  # a flag every command takes


@dataclass(frozen=True)
class Command:
    name: str
    summary: str
    target: str | None = None  # the positional argument it needs (FILE, VERSION ...)
    usage: str = ""  # how the target and main flags read, for help


@dataclass(frozen=True)
class Flag:
    """One ``--flag``: its Python name (``as_`` for ``--as``), default, and help; ``help``
    is one text, or one per command when the flag means something else in each."""

    name: str
    default: Any
    help: str | Mapping[str, str]
    commands: tuple[str, ...]

    @property
    def whole_number(self) -> bool:
        """An integer flag: invoke hands it over as text, parsed here (:func:`_value`)."""
        return isinstance(self.default, int) and not isinstance(self.default, bool)

    @property
    def option(self) -> str:
        return "--" + self.name.strip("_").replace("_", "-")

    def help_for(self, command: str | None = None) -> str:
        if isinstance(self.help, str):
            return self.help
        if command is not None and command in self.help:
            return self.help[command]
        return "; ".join(f"{c}: {h}" for c, h in self.help.items())


COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command("list", "the variants the matrix expands to, with build status"),
    Command("render", "write one Dockerfile per variant, deterministically"),
    Command("build", "fetch and verify sources, build the variants' images"),
    Command("bench", "run speed suites in each variant's image", usage="--cpu=PROFILE"),
    Command("profiles", "the CPU profiles, and which one describes this machine"),
    Command("export", "every figure in the results tree as flat records"),
    Command("parse", "parse pasted `openssl speed` output or a whole report", "FILE"),
    Command("pin", "record the sha256 of a tarball you trust", "VERSION", "--file PATH"),
    Command("import", "store a published report's figures as reference results", "FILE",
            "--as NAME"),
    Command("report", "tables, charts and a static HTML page from the results tree"),
    Command("reproduce", "reproduce a published report from reports/REPORT.yaml", "REPORT"),
    Command("help", "this help, or a command's flags", "[COMMAND]"),
)}

FLAGS: tuple[Flag, ...] = (
    Flag("matrix", "matrix.yaml", "matrix file to use (default: matrix.yaml)", (ALL,)),
    Flag("results", "results", "results tree folder (default: results)", (ALL,)),
    Flag("only", "", "variants to use: fnmatch pattern(s) over variant ids, comma "
         "separated; a pattern matching no default variant picks opt-in ones (e.g. "
         "--only '1.0.1e-*')", ("list", "render", "build", "bench")),
    Flag("all", False, "every variant the matrix declares, opt-in ones too",
         ("list", "render", "build")),
    Flag("jobs", 0, "how many variants to build at once (default 1)", ("build",)),
    Flag("force", False, {
        "build": "rebuild even if up to date",
        "bench": "run on a CPU the profile does not describe (results are marked forced)",
        "pin": "accept a tarball whose hash differs from the official release's",
        "reproduce": "measure again even when finished runs exist",
    }, ("build", "bench", "pin", "reproduce")),
    Flag("cpu", "", {
        "build": "a profile with docker_host builds on that machine's Docker engine; "
        "several, comma separated (--cpu=a,b), build on each engine at once",
        "bench": "CPU profile name from the matrix, or 'auto' for this host (a profile "
        "with docker_host uses that machine's Docker engine); several, comma separated "
        "(--cpu=ryzen,xeon), measure on every profile's engine at once into one results "
        "tree (docs/lab.md)",
        "reproduce": "CPU profile name from the matrix, or 'auto' for this host (a "
        "profile with docker_host uses that machine's Docker engine); several, comma "
        "separated (--cpu=ryzen,via), reproduce on each in turn, so that claims comparing "
        "two machines are judged from both",
    }, ("build", "bench", "reproduce")),
    Flag("images", "", "how a missing image reaches a profile's engine: build (build it "
         "there), ship (from the local engine, which holds it), auto (the default: whichever "
         "costs less, by the build time on record against the measured transfer rate)",
         ("build",)),
    Flag("registry", "", "ship images by push and pull through this registry "
         "(HOST:PORT[/PATH]) instead of streaming docker save into docker load",
         ("build",)),
    Flag("allow_plain_tcp", False, "accept a tcp:// Docker engine without TLS (anyone who "
         "can reach its port controls it; a loud warning is printed)",
         ("build", "bench", "reproduce")),
    Flag("suite", "", "suite name(s), comma separated (default: the matrix's default_suite)",
         ("bench",)),
    Flag("repeat", 0, "runs per variant, interleaved across variants (default: the "
         "suite's repeat, with extra rounds for figures whose 95 % interval is too wide); "
         "each figure's median, 95 % interval and clean-sample count are reported",
         ("bench",)),
    Flag("wait", False, "wait for another bench on the same results tree instead of "
         "failing", ("bench", "reproduce")),
    Flag("settle", "", "seconds to wait before each cell for a quiet host (default 20; 0: "
         "do not wait); the wait shows its reason and a countdown", ("bench",)),
    Flag("no_wait", False, "exit instead of queueing when another bench (any results "
         "tree) or a build of this tool holds the Docker engine", ("bench",)),
    Flag("fresh", False, "start a new session instead of resuming an interrupted one "
         "(cells it finished are measured again)", ("bench",)),
    Flag("json", False, "print JSON", ("list", "profiles", "parse", "reproduce")),
    Flag("check", False, "check the spec without Docker: validate it, check the report's "
         "own figures against its claims, resolve versions and stand-ins offline and print "
         "the plan (what would be built and measured, about how long)", ("reproduce",)),
    Flag("format", "", "csv (default) or jsonl", ("export",)),
    Flag("output", "", {
        "export": "write to this file instead of stdout",
        "render": "write the Dockerfiles to this folder (default dockerfiles/rendered/)",
        "report": "write the report to this folder (default <results>/_report)",
    }, ("export", "render", "report")),
    Flag("block_size", 0, "block size of the method tables and charts (default 8192)",
         ("report",)),
    Flag("block_sizes", "", "the block sizes of rows pasted without speed's `type 16 bytes "
         "...` header, comma separated (e.g. 16,64,256,1024,8192,16384); without it they "
         "are those the version line above the rows implies", ("parse",)),
    Flag("versions", "", "fnmatch patterns over release versions, comma separated "
         "('3.0.*'): the library section shows those releases only, in release order",
         ("report",)),
    Flag("session", "", "the bench session whose figures the cells show (an id from the "
         "report's Sessions table, or a unique start of one; default: each cell's latest "
         "session); the other sessions stay in each cell's history", ("report",)),
    Flag("since", "", "leave out sessions started before this ISO date or time "
         "(2026-12-01, 2026-12-01T08:00; UTC unless it says)", ("report",)),
    Flag("per_session", False, "one row per session and figure: the median and 95 % "
         "interval of that session's usable figures (never pooled across sessions)",
         ("export",)),
    Flag("file", "", "path of a tarball you trust", ("pin",)),
    Flag("as_", "", "name for the imported report (results go under results/ref-NAME)",
         ("import",)),
    Flag("help", False, "show the command's flags and exit", (ALL,)),
)
_BY_NAME = {f.name: f for f in FLAGS}
#: flags the entry point handles itself (never passed to a handler)
_OWN = {"help"}


def flags_of(command: str) -> list[Flag]:
    """The flags ``command`` takes, in declaration order."""
    return [f for f in FLAGS if ALL in f.commands or command in f.commands]


# -- invoke glue ------------------------------------------------------------------------


def _completing() -> bool:
    """Whether invoke's parser is asking, at the end of the command line, which
    positional arguments are still missing (rather than whether to take the next word)."""
    frame: Any = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            return False
        if frame.f_code.co_name == "complete_context":
            return True
        frame = frame.f_back
    return False


class _Positional(Argument):
    """A positional that takes the next word when there is one and is never reported
    missing by invoke: the command checks it and says what is missing (exit 10)."""

    def __init__(self, command_arg: Argument | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.command_arg = command_arg

    @property
    def value(self) -> Any:
        if self._value is not None:
            return self._value
        if self.command_arg is not None:
            spec = COMMANDS.get(str(self.command_arg.value))
            if spec is None or spec.target is None:
                return ""  # this command takes no target: a stray word stays an error
        return "" if _completing() else None

    @value.setter
    def value(self, arg: str) -> None:
        self.set_value(arg, cast=True)


class MatrixTask(Task[Any]):
    """An invoke task whose positional arguments are checked by the command itself."""

    def get_arguments(self, ignore_unknown_help: bool | None = None) -> list[Argument]:
        args: list[Argument] = super().get_arguments(ignore_unknown_help)
        command = next(a for a in args if a.name == "command")
        out: list[Argument] = []
        for a in args:
            if a.name == "command":
                a = command = _Positional(names=a.names, kind=str, default="", help=a.help,
                                          positional=True)
            elif a.name == "target":
                a = _Positional(command, names=a.names, kind=str, default="", help=a.help,
                                positional=True)
            out.append(a)
        return out


def matrix_task(handlers: Mapping[str, Callable[..., int]]) -> MatrixTask:
    """The ``matrix`` invoke task, its signature and help derived from the tables."""

    def matrix(c: Any, command: str = "", target: str = "", **flags: Any) -> None:
        dispatch(command, target, flags, handlers)

    matrix.__doc__ = ("Build and benchmark the OpenSSL matrix (`invoke matrix build`, "
                      "`bench --cpu=auto`); `invoke matrix help` lists the commands.")
    P = inspect.Parameter
    params = [P("c", P.POSITIONAL_OR_KEYWORD),
              P("command", P.POSITIONAL_OR_KEYWORD, default=""),
              P("target", P.POSITIONAL_OR_KEYWORD, default="")]
    # integer flags reach us as text (invoke's own int() would end in a traceback on
    # `--repeat=abc`); the table parses them, naming the flag (exit 10)
    params += [P(f.name, P.KEYWORD_ONLY, default=None if f.whole_number else f.default)
               for f in FLAGS]
    matrix.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    helps = {f.name: f.help_for() for f in FLAGS}
    helps["command"] = " | ".join(COMMANDS)
    helps["target"] = "; ".join(f"{c.target} for `{c.name}`" for c in COMMANDS.values()
                                if c.target)
    made: MatrixTask = task(klass=MatrixTask, positional=["command", "target"], help=helps,
                            auto_shortflags=False)(matrix)
    return made


# -- help -------------------------------------------------------------------------------


def _wrap(text: str, indent: int, width: int = 92) -> str:
    pad = " " * indent
    return textwrap.fill(text, width, initial_indent=pad, subsequent_indent=pad)[indent:]


def help_text(command: str = "") -> str:
    """``invoke matrix help [COMMAND]``: the commands, or one command's flags."""
    if not command:
        lines = ["usage: invoke matrix COMMAND [TARGET] [--flags]", "", "commands:"]
        lines += [f"  {c.name:<10} {c.summary}" for c in COMMANDS.values()]
        lines += ["", "`invoke matrix COMMAND --help` shows a command's flags; every command "
                  "takes --matrix PATH and --results DIR."]
        return "\n".join(lines) + "\n"
    spec = _command(command)
    head = " ".join(x for x in ("invoke matrix", spec.name, spec.target or "", spec.usage)
                    if x)
    lines = [f"usage: {head} [--flags]", "", spec.summary, "", "flags:"]
    for f in flags_of(command):
        value = "" if isinstance(f.default, bool) else \
            ("=INT" if isinstance(f.default, int) else "=TEXT")
        lines.append(f"  {f.option + value:<20} " + _wrap(f.help_for(command), 23))
    return "\n".join(lines) + "\n"


def _command(command: str) -> Command:
    spec = COMMANDS.get(command)
    if spec is None:
        close = difflib.get_close_matches(command, list(COMMANDS), n=1)
        raise UsageError(
            f"unknown command {command!r}",
            hint=(f"perhaps you meant `invoke matrix {close[0]}`? " if close else "")
            + "commands: " + ", ".join(COMMANDS))
    return spec


# -- dispatch ---------------------------------------------------------------------------


def dispatch(command: str, target: str, flags: Mapping[str, Any],
             handlers: Mapping[str, Callable[..., int]]) -> None:
    """Check the command line, run the handler, turn FatalError into an exit; anything
    else unexpected is the last resort's (crash.py): one line, a crash log, exit 70."""
    try:
        if not command:
            if flags.get("help"):
                sys.stdout.write(help_text())
                return
            raise UsageError("no command given: `invoke matrix COMMAND`",
                             hint="commands: " + ", ".join(COMMANDS)
                             + " (`invoke matrix help` says what each does)")
        spec = _command(command)
        if flags.get("help") or command == "help":
            sys.stdout.write(help_text(target if command == "help" else command))
            return
        if target and spec.target is None:
            raise UsageError(f"`invoke matrix {command}` takes no argument, got {target!r}")
        allowed = flags_of(command)
        names = {f.name for f in allowed}
        given = {k for k, v in flags.items() if v not in (None, False, "")
                 or (v == "" and k in _BY_NAME and _BY_NAME[k].whole_number)}
        stray = sorted(given - names)
        if stray:
            raise UsageError(
                f"`invoke matrix {command}` does not take "
                + ", ".join(_BY_NAME[s].option if s in _BY_NAME else f"--{s}" for s in stray),
                hint="it takes: " + ", ".join(sorted(f.option for f in allowed
                                                     if f.name not in _OWN)))
        if spec.target and not target:
            raise UsageError(f"`invoke matrix {command}` needs {spec.target}",
                             hint=f"`invoke matrix {command} --help` shows its usage")
        code = handlers[command](target=target, **{
            f.name: _value(f, flags.get(f.name)) for f in allowed if f.name not in _OWN})
    except FatalError as exc:
        log.error("\n".join(line if len(line) <= 2000 else f"{line[:2000]}… (cut)"
                             for line in str(exc).splitlines()))  # never unbounded text
        raise Exit(code=exc.exit_code) from None
    except OSError as exc:
        if exc.errno not in ENVIRONMENT_ERRNOS:
            return _last_resort(command, exc)
        log.error(str(FileSystemError.of(exc, f"`invoke matrix {command}`")))
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


def _last_resort(command: str, exc: BaseException) -> None:
    print("error: " + crash_line(command, exc, write_crash_log(command, exc)),
          file=sys.stderr)
    raise Exit(code=INTERNAL_ERROR) from None


def _value(flag: Flag, given: Any) -> Any:
    """A flag's value for its handler: the default when not given; an integer flag's text
    parsed as a whole number (``UsageError`` naming the flag when it is not one)."""
    if given is None:
        return flag.default
    if not flag.whole_number or (isinstance(given, int) and not isinstance(given, bool)):
        return given
    text = str(given).strip()
    if not re.fullmatch(r"[+-]?[0-9]{1,18}", text):
        shown = repr(given) if len(repr(given)) <= 40 else repr(given)[:40] + "…"
        raise UsageError(f"{flag.option} {shown}: expected a whole number",
                         hint=f"e.g. {flag.option}=2")
    return int(text)
