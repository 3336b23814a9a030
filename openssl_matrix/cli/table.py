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
unknown command is a usage error (exit 10). So are the command line's other mistakes,
which invoke's parser would end with its own message and exit 1: a last positional
(``rest``) takes every word the parser does not know (``--bogus``, a second FILE), and a
flag that takes a value may be given without one; :func:`dispatch` refuses both.
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
import os
import re
import signal
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
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

ALL = "*"  # a flag every command takes


@dataclass(frozen=True)
class Command:
    name: str
    summary: str
    target: str | None = None  # the positional argument it needs (FILE, VERSION ...)
    usage: str = ""  # how the target and main flags read, for help
    #: a flag that, given, takes the target's place (``reproduce --draft PASTE``)
    target_unless: str | None = None


@dataclass(frozen=True)
class Flag:
    """One ``--flag``: its Python name (``as_`` for ``--as``), default, and help; ``help``
    is one text, or one per command when the flag means something else in each."""

    name: str
    default: Any
    help: str | Mapping[str, str]
    commands: tuple[str, ...]
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
    Command("reproduce", "reproduce a published report from reports/REPORT.yaml; --draft "
            "drafts such a spec from a paste", "REPORT", "(or --draft PASTE --as ID)",
            target_unless="draft"),
    Command("bisect", "which release between two moved a figure (docs/bisect.md)",
            usage="--figure SUITE:ALGORITHM:BLOCK[:MASK] --good A --bad B"),
    Command("profile", "where a cell's time goes: perf in the variant's image, flame "
            "graphs, two builds compared (docs/profile.md)",
            usage="--only VARIANT (or --compare A,B) --algorithm ALG --bytes N (or --suite "
            "NAME --cell TEXT)"),
    Command("help", "this help, or a command's flags", "[COMMAND]"),
)}

FLAGS: tuple[Flag, ...] = (
    Flag("matrix", "", "matrix file to use (default: $OPENSSL_MATRIX_FILE, else "
         "matrix.yaml)", (ALL,)),
    Flag("results", "", "results tree folder (default: $OPENSSL_MATRIX_RESULTS, else the "
         "matrix's settings.results, else results)", (ALL,)),
    Flag("only", "", {c: "variants to use: fnmatch pattern(s) over variant ids, comma "
                      "separated; a pattern matching no default variant picks opt-in ones "
                      "(e.g. --only '1.0.1e-*')" for c in ("list", "render", "build", "bench")}
         | {"profile": "the variant to profile: one variant id (e.g. 3.0.20-asm-x86_64)"},
         ("list", "render", "build", "bench", "profile")),
    Flag("all", False, "every variant the matrix declares, opt-in ones too",
         ("list", "render", "build")),
    Flag("jobs", 0, "how many variants to build at once (default 1)", ("build",), low=1,
         unset="one variant at a time"),
    Flag("force", False, {
        "build": "rebuild even if up to date",
        "bench": "run on a CPU the profile does not describe (results are marked forced)",
        "pin": "accept a tarball whose hash differs from the official release's",
        "reproduce": "measure again even when finished runs exist; with --draft, replace "
        "an existing spec file of that id",
        "export": "replace an --output file that export did not write",
    }, ("build", "bench", "pin", "reproduce", "export")),
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
        "bisect": "CPU profile name from the matrix, or 'auto' for this host (default); "
        "one profile: a bisection's comparisons stay within one engine",
    }, ("build", "bench", "reproduce", "bisect")),
    Flag("images", "", "how a missing image reaches a profile's engine: build (build it "
         "there), ship (from the local engine, which holds it), auto (the default: whichever "
         "costs less, by the build time on record against the measured transfer rate)",
         ("build",)),
    Flag("registry", "", "ship images by push and pull through this registry "
         "(HOST:PORT[/PATH]) instead of streaming docker save into docker load",
         ("build",)),
    Flag("allow_plain_tcp", False, "accept a tcp:// Docker engine without TLS (anyone who "
         "can reach its port controls it; a loud warning is printed)",
         ("build", "bench", "reproduce", "bisect")),
    Flag("suite", "", {"bench": "suite name(s), comma separated (default: the matrix's "
                       "default_suite)",
                       "profile": "the suite whose cell to profile (with --cell; any kind "
                       "the bench runs: speed, pkey, tls, library)"}, ("bench", "profile")),
    Flag("cell", "", "the cell of --suite to profile, named as its figures are: "
         "ALG:BYTES (speed), ALG:OP (pkey: rsa2048:sign), PROTOCOL-KEY:OP[:PINNING] (tls: "
         "tls1.3-rsa2048:handshake), OP[:tTHREADS] (library: pkey-decode-pem-rsa2048:t1)",
         ("profile",)),
    Flag("repeat", 0, "runs per variant, interleaved across variants (default: the "
         "suite's repeat, with extra rounds for figures whose 95 % interval is too wide); "
         "each figure's median, 95 % interval and clean-sample count are reported",
         ("bench",), low=1, unset="the suite's repeat"),
    Flag("wait", False, "wait for another command holding the same results tree (a "
         "bench, an import) instead of failing", ("bench", "reproduce", "import", "bisect")),
    Flag("settle", "", "seconds to wait before each cell for a quiet host (default 20; 0: "
         "do not wait); the wait shows its reason and a countdown", ("bench",)),
    Flag("no_wait", False, "exit instead of queueing when another bench (any results "
         "tree) or a build of this tool holds the Docker engine", ("bench",)),
    Flag("fresh", False, {
        "bench": "start a new session instead of resuming an interrupted one (cells it "
                 "finished are measured again)",
        "bisect": "measure from the start instead of replaying what an earlier bisection "
                  "of the same range measured (it is set aside, not deleted)"},
         ("bench", "bisect")),
    Flag("json", False, "print JSON", ("list", "profiles", "parse", "reproduce", "bisect",
                                       "profile")),
    Flag("figure", "", "the cell to bisect: SUITE:ALGORITHM:BLOCK[:MASK] (e.g. "
         "blog-fast:aes-256-cbc:8192; no MASK: the suite's first mask)", ("bisect",)),
    Flag("good", "", "the release whose figure is the old one (a catalogue release)",
         ("bisect",)),
    Flag("bad", "", "the release whose figure moved (a catalogue release, either side of "
         "--good in time)", ("bisect",)),
    Flag("build", "", "how each release is built: the part of its variant id after the "
         "version (default asm-x86_64: 3.0.13-asm-x86_64)", ("bisect",)),
    Flag("algorithm", "", "the speed algorithm to profile (e.g. sha256, aes-128-cbc: as "
         "`openssl speed -evp` takes it)", ("profile",)),
    Flag("bytes", 0, "the block size to profile, in bytes (speed's -bytes)", ("profile",),
         low=1, unset="none: required"),
    Flag("seconds", 0, "how long the profiled run lasts (default 3; with --suite: the "
         "suite's seconds)", ("profile",),
         low=1, unset="3 seconds"),
    Flag("compare", "", "two variants, comma separated (A,B): profile both on the same cell "
         "and print the difference per function and library against the measured gap",
         ("profile",)),
    Flag("agree", False, "profile the cell twice, one run after the other (--only's "
         "variant), and print whether the two agree on the top 10 functions' time per "
         "operation within 2σ of their sample counts' combined uncertainty",
         ("profile",)),
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
         ("report",), low=1, unset="8192"),
    Flag("block_sizes", "", "the block sizes of rows pasted without speed's `type 16 bytes "
         "...` header, comma separated (e.g. 16,64,256,1024,8192,16384); without it they "
         "are those the version line above the rows implies (reproduce: with --draft)",
         ("parse", "reproduce")),
    Flag("draft", "", "draft a spec from a paste (PASTE: a file with the report's text and "
         "its `openssl speed` tables) and write it to reports/ID.yaml beside the matrix "
         "(with --as ID): versions, builds, one measurement per run and row with the "
         "parsed figures, and claim stubs to edit; an existing file is kept unless --force",
         ("reproduce",)),
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
    Flag("as_", "", {
        "import": "name for the imported report (results go under results/ref-NAME)",
        "reproduce": "with --draft: the id of the spec drafted (reports/ID.yaml)",
    }, ("import", "reproduce")),
    Flag("help", False, "show the command's flags and exit", (ALL,)),
)
_BY_NAME = {f.name: f for f in FLAGS}
#: flags the entry point handles itself (never passed to a handler)
_OWN = {"help"}


def flags_of(command: str) -> list[Flag]:
    """The flags ``command`` takes, in declaration order."""
    return [f for f in FLAGS if ALL in f.commands or command in f.commands]


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
            elif a.name == "rest":
                a = _Rest(names=a.names, kind=str, default="", help=a.help, positional=True)
            elif a.kind is not bool and not a.positional:
                a = _ValueFlag(names=a.names, kind=a.kind, default=a.default, help=a.help,
                               attr_name=a.attr_name)
            out.append(a)
        return out


def matrix_task(handlers: Mapping[str, Callable[..., int]]) -> MatrixTask:
    """The ``matrix`` invoke task, its signature and help derived from the tables."""

    def matrix(c: Any, command: str = "", target: str = "", rest: Any = (),
               **flags: Any) -> None:
        dispatch(command, target, flags, handlers, rest=tuple(rest or ()))

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
               for f in FLAGS]
    matrix.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    helps = {f.name: f.help_for() for f in FLAGS}
    helps["command"] = " | ".join(COMMANDS)
    helps["target"] = "; ".join(f"{c.target} for `{c.name}`" for c in COMMANDS.values()
                                if c.target)
    helps["rest"] = "(nothing: a word or flag the command does not take is refused, exit 10)"
    made: MatrixTask = task(klass=MatrixTask, positional=["command", "target", "rest"],
                            help=helps, auto_shortflags=False)(matrix)
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
             rest: Sequence[str] = ()) -> None:
    """Check the command line, run the handler, turn FatalError into an exit; anything
    else unexpected is the last resort's (crash.py): one line, a crash log, exit 70.
    ``rest``: the words invoke's parser did not know (an unknown flag, an extra word)."""
    try:
        if not command:
            if flags.get("help"):
                sys.stdout.write(help_text())
                return
            raise UsageError("no command given: `invoke matrix COMMAND`",
                             hint="commands: " + ", ".join(COMMANDS)
                             + " (`invoke matrix help` says what each does)")
        spec = _command(command)
        if flags.get("help") or command == "help" or "-h" in rest:
            sys.stdout.write(help_text(target if command == "help" else command))
            return
        if rest:
            _refuse_rest(command, spec, rest)
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
        for f in allowed:
            if flags.get(f.name) is True and not isinstance(f.default, bool):
                raise UsageError(f"{f.option} needs a value (`{f.option}=...`)",
                                 hint=f"`invoke matrix {command} --help` says what "
                                 f"{f.option} takes")
        if spec.target and not target and not (spec.target_unless
                                                and flags.get(spec.target_unless)):
            raise UsageError(f"`invoke matrix {command}` needs {spec.target}",
                             hint=f"`invoke matrix {command} --help` shows its usage")
        values = {f.name: _value(f, flags.get(f.name)) for f in allowed if f.name not in _OWN}
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


def _refuse_rest(command: str, spec: Command, rest: Sequence[str]) -> None:
    """UsageError for the words invoke's parser left over: an unknown flag (with the
    closest one the command takes), else a word beyond the command's one argument."""
    takes = sorted(f.option for f in flags_of(command) if f.name not in _OWN)
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
