"""A hostile-input corpus: whatever a user (or an attacker) hands the tool — a matrix, a
pasted report, a results-tree file, a command-line value, an output target — the answer
is an exit code and a message naming the problem, never a traceback (nor the last-resort
exit 70), and nothing outside the command's target changes.

Each case builds its inputs in a fresh folder, snapshots that folder (every path with its
type, mode, size and content hash), runs the command line through ``cli.dispatch`` as
``invoke matrix ...`` does, and compares the snapshot afterwards: only the paths the case
names as its target may differ.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import os
import re
import shutil
import signal
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import yaml
from invoke.exceptions import Exit

from openssl_matrix.cli.shared import handlers
from openssl_matrix.cli.table import dispatch
from openssl_matrix.core.errors import INTERNAL_ERROR
from openssl_matrix.report.charts import NO_CHARTS

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.hostile
DEFAULT = yaml.safe_load((ROOT / "matrix.yaml").read_text())
FLAGS = {"matrix": "", "results": "", "only": "", "jobs": 0, "force": False, "cpu": "",
         "suite": "", "wait": False, "fresh": False, "repeat": 0, "json": False, "format": "",
         "output": "", "file": "", "as_": "", "all": False, "block_size": 0}


# ----------------------------------------------------------------------------------
# running a command line and watching the folder around it


def snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every path under root: type, mode, size, link target or content hash."""
    out: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = os.lstat(p)
            rel = str(p.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                out[rel] = ("file", stat.S_IMODE(st.st_mode), st.st_size,
                            hashlib.sha256(p.read_bytes()).hexdigest())
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ("other", stat.S_IFMT(st.st_mode))
    return out


def changed(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def alarm(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"no answer in {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


#: The command table without the report's charts (they draw the medians, read no file,
#: and take most of a report's time).
NO_CHART_HANDLERS = handlers(charts=NO_CHARTS)


def run(command: str, target: str = "", *, table: Any = None,
        **flags: Any) -> tuple[int, str, str]:
    """``invoke matrix COMMAND [TARGET] --flags`` in this process: (exit code, out, err);
    ``table``: the handlers (the command line's own by default)."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), time_limit(60):
        try:
            dispatch(command, target, {**FLAGS, **flags},
                     handlers() if table is None else table)
        except Exit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


# ----------------------------------------------------------------------------------
# inputs


def matrix_text(**changes: Any) -> str:
    """The default matrix with top-level keys replaced (None deletes)."""
    doc = copy.deepcopy(DEFAULT)
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return yaml.safe_dump(doc, sort_keys=False)


def suite_with(**values: Any) -> str:
    doc = copy.deepcopy(DEFAULT)
    doc["suites"]["blog"].update(values)
    return yaml.safe_dump(doc, sort_keys=False)


def bomb(levels: int = 9, tail: str = "") -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]"
              for i in range(1, levels)]
    return "\n".join(lines) + "\n" + tail


def patch_bomb() -> str:
    """Patch metadata whose every key is known, with the bomb's anchors inside ``why``
    and the blast in ``apply`` (the first value the loader's checks echo)."""
    anchors = ", ".join(f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8))
    return ("provides: evil\ndescription: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
            f"why: [{anchors}]\nversions: ['*']\napply: *a7\n")


def nested(depth: int) -> str:
    return "versions: " + "[" * depth + "]" * depth + "\n"


MR_1E400 = "+H:16:64:256:1024:8192\n+F:22:aes-128-cbc:1e400:-5:nan:1e30:1000.00\n"
REPORT = ("OpenSSL 1.0.1e 11 Feb 2013\n"
          "type 16 bytes 64 bytes 256 bytes 1024 bytes 8192 bytes\n"
          "aes-128-cbc 305049.90k 327331.20k 332573.95k 334071.81k 333987.84k\n")


def pasted(version_line: str) -> str:
    return REPORT.replace("OpenSSL 1.0.1e 11 Feb 2013", version_line)


def _keep(rel: str, text: str) -> Callable[[Path, str], None]:
    def check(w: Path, out: str) -> None:
        assert (w / rel).read_text() == text

    return check

def _mkfifo(rel: str) -> Callable[[Path], None]:
    return lambda w: os.mkfifo(w / rel)

def _symlink(rel: str, to: str) -> Callable[[Path], None]:
    return lambda w: (w / rel).symlink_to(w / to)

def _touch(path: Path) -> Path:
    path.touch()
    return path


# ----------------------------------------------------------------------------------
# the corpus


@dataclass
class Case:
    id: str
    files: dict[str, str | bytes]  # relative path -> content
    command: str
    target: str = ""
    flags: dict[str, Any] = field(default_factory=dict)
    code: int = 2
    message: str = ""  # a regex the output (stderr + stdout) must match
    may_change: tuple[str, ...] = ()  # relative paths (and below) the command may write
    setup: Callable[[Path], None] | None = None
    check: Callable[[Path, str], None] | None = None
    tree: bool = False  # start from a real results tree (made with the fake backend)


def M(id: str, text: str | bytes, message: str, code: int = 2,
      command: str = "list") -> Case:
    """A matrix case: ``invoke matrix list --matrix m.yaml`` (or render)."""
    flags: dict[str, Any] = {"matrix": "{w}/m.yaml"}
    if command == "render":
        flags["output"] = "{w}/rendered"
    return Case(id, {"m.yaml": text}, command, flags=flags, code=code, message=message,
                may_change=("rendered",) if code == 0 else ())


MATRICES = [
    M("billion-laughs", bomb() + "versions: *a8\n", r"expands to more than 100000 values"),
    M("billion-laughs-dup-key-deep", bomb(tail="versions: {v: {x: 1, x: 2}}\n"),
      r"m\.yaml: versions\.v: duplicate key 'x' \(line 10; first at line 10\)"),
    M("bomb-in-a-string-position", bomb(7) + matrix_text().replace(
        f"default_suite: {DEFAULT['default_suite']}\n", "default_suite: *a6\n"),
      r"expected a string|expands"),
    M("nesting-100", nested(100), r"nested more than 40 levels deep"),
    M("nesting-20000", nested(20000), r"nested more than 40 levels deep"),
    M("mapping-nesting", "versions: " + "{a: " * 60 + "1" + "}" * 60 + "\n",
      r"nested more than 40 levels deep"),
    M("too-many-aliases", "x: &x 1\nl: [" + ", ".join(["*x"] * 1500) + "]\n",
      r"more than 1000 alias references"),
    M("two-megabytes", "# " + "x" * (2 << 20) + "\n", r"larger than 1048576 bytes \(1 MiB\)"),
    M("nul-byte", "versions:\x00 {}\n", r"m\.yaml: YAML syntax error.*#x0000"),
    M("not-utf8", b"versions: \xff\xfe\n", r"m\.yaml: is not UTF-8 text"),
    M("unknown-alias", "versions: *nothing\n", r"YAML syntax error.*alias"),
    M("march-escapes", matrix_text(axes={"march": ["../../../../tmp/pwned"]},
                                   default_variants=None, include=None),
      r"axes\.march\[0\]: '\.\./\.\./\.\./\.\./tmp/pwned' contains '\.\.'", command="render"),
    M("march-slash", matrix_text(axes={"march": ["x86-64/v3"]}, default_variants=None,
                                 include=None),
      r"axes\.march\[0\]: 'x86-64/v3' contains '/'", command="render"),
    M("include-march-dot", matrix_text(include=[{"version": "1.1.1w", "march": ".hidden"}]),
      r"include\[0\]\.march: '\.hidden' must start with a letter or a digit"),
    M("profile-march-escape", matrix_text(profiles={"p": {"march": "../x"}}, include=[
        {"version": "1.1.1w", "cpu": "p"}]), r"profiles\.p\.march: '\.\./x' contains '\.\.'"),
    M("algorithm-escapes", suite_with(algorithms=["../../etc/passwd"]),
      r"suites\.blog\.algorithms\[0\]: '\.\./\.\./etc/passwd' contains '\.\.'"),
    M("algorithm-hidden", suite_with(algorithms=[".profile"]),
      r"suites\.blog\.algorithms\[0\]: '\.profile' must start with a letter"),
    M("mask-name-dots", suite_with(masks=[{"name": "a..b"}]),
      r"suites\.blog\.masks\[0\]\.name: 'a\.\.b' contains '\.\.'"),
    M("profile-name-slash", matrix_text(profiles={"a/b": {"description": "x"}}),
      r"profiles\.a/b: 'a/b': profile names are"),
    M("suite-name-dotdot", matrix_text(suites={"..": {"algorithms": ["md5"]}},
                                       default_suite=".."),
      r"suites\.\.\.: '\.\.': suite names are"),
    M("seconds-huge", suite_with(seconds=10**32),
      r"suites\.blog\.seconds: expected a positive whole number from 1 to 3600, got 1000"),
    M("seconds-float", suite_with(seconds=1e32),
      r"suites\.blog\.seconds: expected a positive whole number from 1 to 3600"),
    M("seconds-zero", suite_with(seconds=0), r"suites\.blog\.seconds: .*from 1 to 3600"),
    M("bytes-huge", suite_with(bytes=10**12),
      r"suites\.blog\.bytes: expected a positive whole number from 1 to 16777216"),
    M("multi-huge", suite_with(multi=1000000),
      r"suites\.blog\.multi: expected a positive whole number from 1 to 1024"),
    M("repeat-huge", suite_with(repeat=10**6),
      r"suites\.blog\.repeat: expected a positive whole number from 1 to 100"),
    M("repeat-negative", suite_with(repeat=-1), r"suites\.blog\.repeat: .*from 1 to 100"),
    M("long-unknown-key", matrix_text(**{"k" * 100_000: 1}),
      r"unknown key \(allowed here"),
    M("long-hostile-token", suite_with(algorithms=["md5;" + "x" * 200_000]),
      r"algorithms\[0\]: .*contains characters"),
    Case("matrix-is-a-fifo", {}, "list", "", {"matrix": "{w}/fifo"}, 2,
         r"fifo: cannot read: not a regular file", setup=_mkfifo("fifo")),
    Case("matrix-is-dev-zero", {}, "list", "", {"matrix": "/dev/zero"}, 2,
         r"/dev/zero: cannot read: not a regular file"),
    Case("spec-is-dev-zero", {}, "reproduce", "/dev/zero.yaml", {}, 2,
         r"/dev/zero\.yaml: no such report spec"),
    M("duplicate-key-top", "versions: {}\nversions: {}\n",
      r"m\.yaml: duplicate key 'versions' \(line 2; first at line 1\)"),
]


def corpus_long_messages_are_clipped(out: str) -> None:
    assert len(out) < 5000, len(out)


#: The smallest results tree: an empty _builds/ folder.
TREE: dict[str, str | bytes] = {"results/_builds/.keep": ""}


def _tree_flags(**extra: Any) -> dict[str, Any]:
    return {"results": "{w}/results", **extra}


PASTED = [
    Case("import-version-escapes", {"r.txt": pasted("version: 3.0.2/../../../../tmp/X")},
         "import", "{w}/r.txt", {"as_": "x", "results": "{w}/results"}, 8,
         r"r\.txt: run 1: the version in its header: '3\.0\.2/\.\./\.\./\.\./\.\./tmp/X' "
         r"contains '\.\.'"),
    Case("import-version-absolute", {"r.txt": pasted("version: 3.0.20/etc/passwd")},
         "import", "{w}/r.txt", {"as_": "x", "results": "{w}/results"}, 8,
         r"the version in its header: '3\.0\.20/etc/passwd' contains '/'"),
    Case("import-version-dotdot-suffix", {"r.txt": pasted("OpenSSL 1.1.1w-..+x 11 Sep 2023")},
         "import", "{w}/r.txt", {"as_": "x", "results": "{w}/results"}, 8,
         r"the version in its header: '1\.1\.1w-\.\.\+x' contains '\.\.'"),
    Case("import-version-escape-sequence", {"r.txt": pasted("version: 3.0.2\x1b]0;x\x07")},
         "import", "{w}/r.txt", {"as_": "x", "results": "{w}/results"}, 8,
         r"the version in its header: .* contains '\\x07', '\\x1b', ';', ']'"),
    Case("import-as-escapes", {"r.txt": REPORT}, "import", "{w}/r.txt",
         {"as_": "../../x", "results": "{w}/results"}, 10, r"needs --as NAME .*'\.\./\.\./x'"),
    Case("import-as-hidden", {"r.txt": REPORT}, "import", "{w}/r.txt",
         {"as_": ".x", "results": "{w}/results"}, 10, r"needs --as NAME"),
    Case("import-as-long", {"r.txt": REPORT}, "import", "{w}/r.txt",
         {"as_": "a" * 5000, "results": "{w}/results"}, 10, r"--as NAME .*more characters",
         check=lambda w, out: corpus_long_messages_are_clipped(out)),
    Case("import-as-dotdot-inside", {"r.txt": REPORT}, "import", "{w}/r.txt",
         {"as_": "a..b", "results": "{w}/results"}, 10, r"--as NAME .*'a\.\.b'"),
    Case("import-nothing-in-it", {"r.txt": "hello\n"}, "import", "{w}/r.txt",
         {"as_": "x", "results": "{w}/results"}, 8, r"no `openssl speed` table found"),
    Case("parse-binary", {"r.bin": bytes(range(256)) * 64}, "parse", "{w}/r.bin", {}, 8,
         r"no `openssl speed` table found"),
    Case("parse-a-folder", {"d/x": "1"}, "parse", "{w}/d", {}, 10, r"cannot read .*/d"),
    Case("parse-missing", {}, "parse", "{w}/nope.txt", {}, 10, r"cannot read .*nope\.txt"),
    Case("parse-a-fifo", {}, "parse", "{w}/fifo", {}, 10,
         r"cannot read .*fifo.*: not a regular file", setup=_mkfifo("fifo")),
    Case("import-dev-zero", {}, "import", "/dev/zero", {"as_": "x", "results": "{w}/results"},
         10, r"cannot read '/dev/zero': not a regular file"),
    Case("import-a-huge-file", {}, "import", "{w}/big.txt",
         {"as_": "x", "results": "{w}/results"}, 10, r"big\.txt.*: larger than 67108864 bytes",
         setup=lambda w: os.truncate(_touch(w / "big.txt"), 65 << 20)),
    Case("parse-1e400", {"r.txt": MR_1E400}, "parse", "{w}/r.txt", {"json": True}, 0,
         r'"status": "impossible"',
         check=lambda w, out: _no_inf_ok(out)),
]


def _no_inf_ok(out: str) -> None:
    runs = json.loads(out[out.index("["):])
    statuses = {(r["block_size"], r["status"]) for r in runs[0]["records"]}
    assert statuses == {(16, "impossible"), (64, "unparsable"), (256, "infinite"),
                        (1024, "impossible"), (8192, "ok")}, statuses


COMMAND_LINE = [
    Case("bench-repeat-huge", {}, "bench", "", {"cpu": "auto", "repeat": 10**9}, 10,
         r"--repeat 1000000000: expected a whole number from 1 to 100"),
    Case("bench-repeat-negative", {}, "bench", "", {"cpu": "auto", "repeat": -1}, 10,
         r"--repeat -1: expected a whole number from 1 to 100"),
    Case("build-jobs-huge", {}, "build", "", {"jobs": 10**6}, 10,
         r"--jobs 1000000: expected a whole number from 1 to 64"),
    Case("build-jobs-negative", {}, "build", "", {"jobs": -3}, 10, r"--jobs -3: .*1 to 64"),
    Case("report-block-negative", TREE, "report", "",
         _tree_flags(block_size=-5), 10, r"--block-size -5: expected a whole number"),
    Case("report-block-huge", TREE, "report", "",
         _tree_flags(block_size=10**12), 10, r"--block-size 1000000000000: .*16777216"),
    Case("export-format", {}, "export", "", {"format": "xml"}, 10, r"--format 'xml'"),
    Case("unknown-command", {}, "rm", "", {}, 10, r"unknown command 'rm'"),
    Case("cpu-escapes", {}, "bench", "", {"cpu": "../../x"}, 2,
         r"no CPU profile named '\.\./\.\./x'"),
    Case("suite-escapes", {}, "bench", "", {"cpu": "auto", "suite": "../x"}, 2,
         r"no suite named '\.\./x'"),
    # a bisection's cell names a suite and a mask: checked before any engine or folder
    Case("bisect-suite-escapes", {}, "bisect", "",
         {"figure": "../x:sha256:8192", "good": "3.0.17", "bad": "3.0.22"}, 2,
         r"no suite named '\.\./x'"),
    Case("bisect-mask-escapes", {}, "bisect", "",
         {"figure": "blog-8k:sha256:8192:../../x", "good": "3.0.17", "bad": "3.0.22"}, 2,
         r"suite blog-8k has no mask \.\./\.\./x"),
    Case("matrix-missing", {}, "list", "", {"matrix": "{w}/nope.yaml"}, 2,
         r"nope\.yaml: no such matrix file"),
    Case("matrix-is-a-folder", {"d/x": "1"}, "list", "", {"matrix": "{w}/d"}, 2,
         r"/d: cannot read"),
    Case("pin-version-escapes", {"t.tar.gz": b"x"}, "pin", "../../x",
         {"file": "{w}/t.tar.gz", "matrix": "{w}/m.yaml"}, 3, r"'\.\./\.\./x'"),
]


def _no_file_named_dash(w: Path, out: str) -> None:
    assert not (w / "-").exists()


def _linked_dockerfile(w: Path) -> None:
    (w / "r").mkdir()
    (w / "r" / "1.1.1w-asm-x86_64.Dockerfile").symlink_to(w / "real")


def _legacy_report(w: Path) -> None:
    (w / "results" / "_report" / "data").mkdir(parents=True)
    (w / "results" / "_report" / "data" / "report.json").write_text("{}")


OUTPUTS = [
    Case("report-into-users-folder", {**TREE, "mine/precious.txt": "mine"},
         "report", "", _tree_flags(output="{w}/mine"), 10,
         r"--output '.*/mine' is not empty and was not written by `invoke matrix report`",
         check=_keep("mine/precious.txt", "mine")),
    Case("report-into-the-tree", {**TREE, "results/host-x/.keep": ""}, "report", "",
         _tree_flags(output="{w}/results"), 10, r"is the results tree itself"),
    Case("report-inside-the-tree", {**TREE, "results/host-x/.keep": ""}, "report", "",
         _tree_flags(output="{w}/results/host-x"), 10,
         r"is inside the results tree .* only its own _report"),
    Case("report-new-folder-inside-the-tree", TREE, "report", "",
         _tree_flags(output="{w}/results/new"), 10, r"is inside the results tree"),
    Case("report-over-the-tree's-parent", TREE, "report", "",
         _tree_flags(output="{w}"), 10, r"holds the results tree"),
    Case("report-onto-a-file", {**TREE, "f.html": "mine"}, "report", "",
         _tree_flags(output="{w}/f.html"), 10, r"exists and is not a folder",
         check=_keep("f.html", "mine")),
    Case("report-onto-a-symlink", {**TREE, "real/a": "mine"}, "report", "",
         _tree_flags(output="{w}/link"), 10, r"is a symbolic link",
         setup=_symlink("link", "real"), check=_keep("real/a", "mine")),
    Case("report-dotdot-into-the-tree", {**TREE, "results/host-x/f": "1", "o/.keep": ""},
         "report", "",
         _tree_flags(output="{w}/o/../results/host-x"), 10, r"inside the results tree"),
    Case("report-replaces-legacy-own", TREE, "report", "", _tree_flags(), 0,
         r"report: .*results/_report/index\.html", may_change=("results/_report",),
         setup=_legacy_report),
    Case("export-onto-a-folder", {"out/x": "1"}, "export", "",
         _tree_flags(output="{w}/out"), 10, r"--output '.*/out' is a folder"),
    Case("export-onto-a-symlink", {"real.csv": "mine"}, "export", "",
         _tree_flags(output="{w}/link.csv"), 10, r"is a symbolic link",
         setup=_symlink("link.csv", "real.csv"), check=_keep("real.csv", "mine")),
    Case("export-onto-a-fifo", {}, "export", "", _tree_flags(output="{w}/fifo"), 10,
         r"is not a regular file", setup=_mkfifo("fifo")),
    Case("export-under-a-file", {"f": "mine"}, "export", "", _tree_flags(output="{w}/f/x.csv"),
         11, r"f/x\.csv': '.*/f' is a file, not a folder", check=_keep("f", "mine")),
    Case("export-into-a-run-folder", {}, "export", "",
         _tree_flags(output="{w}/results/host-amd-epyc-7b13/3.0.20-asm-x86_64/quick/0001/"
                     "meta.json"), 10, r"would write into the results tree's own folders",
         tree=True),
    Case("export-onto-the-tree-lock", TREE, "export", "", _tree_flags(output="{w}/results/.lock"),
         10, r"would write into the results tree's own folders"),
    Case("export-beside-the-runs-is-fine", TREE, "export", "",
         _tree_flags(output="{w}/results/export.csv"), 0, r"wrote .*results/export\.csv",
         may_change=("results/export.csv",)),
    Case("export-to-stdout-dash", TREE, "export", "", _tree_flags(output="-"), 0,
         r"^cpu,variant,version", check=_no_file_named_dash),
    Case("render-onto-a-symlinked-dockerfile", {"m.yaml": matrix_text(), "real": "mine"},
         "render", "", {"matrix": "{w}/m.yaml", "output": "{w}/r", "only": "1.1.1w-asm-x86_64"},
         10, r"1\.1\.1w-asm-x86_64\.Dockerfile' would be written outside .*/r$",
         setup=_linked_dockerfile, check=_keep("real", "mine")),
]

def _tree_with_a_link_to_a_secret(w: Path) -> None:
    """A copy of a real run whose raw output is a symbolic link to a file outside."""
    (w / "secret.txt").write_text("SECRET")
    run_dir = next((w / "results").rglob("0001"))
    raw = next(p for p in (run_dir / "raw").iterdir() if p.name.endswith(".stdout"))
    raw.unlink()
    raw.symlink_to(w / "secret.txt")


def _secret_not_copied(w: Path, out: str) -> None:
    for p in (w / "rep").rglob("*"):
        assert not p.is_symlink(), p
        assert not p.is_file() or b"SECRET" not in p.read_bytes(), p


def _damage(name: str, content: str | bytes | None) -> Callable[[Path], None]:
    """Replace the first run's ``name`` (meta.json, figures.json ...) with ``content``;
    None makes it a folder."""
    def setup(w: Path) -> None:
        path = sorted((w / "results").rglob(name))[0]
        path.unlink()
        if content is None:
            path.mkdir()
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)

    return setup


def _negative_figure(w: Path) -> None:
    path = sorted((w / "results").rglob("figures.json"))[0]
    figures = json.loads(path.read_text())
    figures[0]["bytes_per_s"] = -5.0
    path.write_text(json.dumps(figures))


def _impossible_in_export(w: Path, out: str) -> None:
    rows = [json.loads(line) for line in out.splitlines()]
    bad = [r for r in rows if r["status"] == "impossible"]
    assert len(bad) == 1 and bad[0]["bytes_per_s"] is None, bad


def D(id: str, name: str, content: str | bytes | None, message: str,
      command: str = "export") -> Case:
    """A damaged results-tree file: exit 9 naming it, whatever the command reads."""
    flags = _tree_flags(output="{w}/rep") if command == "report" else _tree_flags()
    if command == "list":
        flags = _tree_flags(matrix="{w}/../matrix.yaml")
    return Case(id, {}, command, "", flags, 9, message, setup=_damage(name, content),
                tree=True)


RESULTS_FILES = [
    D("figures-a-list-of-numbers", "figures.json", "[1, 2, 3]",
      r"figures\.json: damaged: .*expected a JSON object"),
    D("figures-a-string", "figures.json", '"ok"', r"figures\.json: damaged: .*list"),
    D("figures-nan", "figures.json", '[{"algorithm": "a", "bytes_per_s": NaN}]',
      r"figures\.json: damaged: .*NaN", command="report"),
    D("figures-a-folder", "figures.json", None, r"figures\.json"),
    D("meta-a-list", "meta.json", "[]", r"meta\.json: damaged: .*expected a JSON object"),
    D("meta-not-utf8", "meta.json", b"\xff\xfe{}", r"meta\.json: damaged: .*not UTF-8",
      command="report"),
    D("meta-variant-a-string", "meta.json", '{"status": "complete", "variant": "x"}',
      r"meta\.json: damaged: .*'variant'"),
    D("meta-truncated", "meta.json", '{"status": "comp', r"meta\.json: damaged: .*not JSON"),
    D("build-record-damaged", "build.json", "{", r"build\.json: damaged", command="list"),
    # nested deeper than Python's recursion: json.loads raises RecursionError
    D("meta-nested-deep", "meta.json", "[" * 100_000 + "]" * 100_000,
      r"meta\.json: damaged: .*nested deeper than this tool reads"),
    D("figures-nested-deep", "figures.json", '{"a":' * 100_000 + "1" + "}" * 100_000,
      r"figures\.json: damaged: .*nested deeper", command="report"),
    D("build-record-nested-deep", "build.json", "[" * 100_000 + "]" * 100_000,
      r"build\.json: damaged: .*nested deeper", command="list"),
    Case("figures-negative-is-impossible", {}, "export", "", _tree_flags(format="jsonl"), 0,
         r'"status": "impossible"', setup=_negative_figure, check=_impossible_in_export,
         tree=True),
    Case("export-results-typo", {}, "export", "", {"results": "{w}/resluts"}, 9,
         r"resluts: no results tree here"),
    Case("export-results-not-a-tree", {"notes/todo.txt": "x"}, "export", "",
         {"results": "{w}/notes"}, 9, r"notes is not a results tree"),
]


OTHER_FILES = [
    Case("report-does-not-copy-a-linked-secret", {}, "report", "",
         _tree_flags(output="{w}/rep"), 0, r"report: .*/rep/index\.html",
         may_change=("rep",), setup=_tree_with_a_link_to_a_secret, check=_secret_not_copied,
         tree=True),
    Case("spec-bomb", {"s.yaml": bomb() + "id: *a8\n"}, "reproduce", "{w}/s.yaml", {}, 2,
         r"s\.yaml: the document expands to more than 100000 values"),
    Case("spec-duplicate-key-after-bomb", {"s.yaml": bomb(tail="claims: {a: 1, a: 2}\n")},
         "reproduce", "{w}/s.yaml", {}, 2, r"s\.yaml: claims: duplicate key 'a'"),
    Case("patch-metadata-bomb", {
        "m.yaml": matrix_text(patches_dirs=["p"]),
        "p/evil.yaml": patch_bomb(), "p/evil.patch": ""}, "list", "",
         {"matrix": "{w}/m.yaml"}, 2, r"evil\.yaml: the document expands to more than",
         check=lambda w, out: corpus_long_messages_are_clipped(out)),
    Case("patch-metadata-long-name", {
        "m.yaml": matrix_text(patches_dirs=["p"]),
        "p/evil.yaml": "provides: " + "A" * 300_000 + "\nversions: ['*']\nwhy: x\n",
        "p/evil.patch": ""}, "list", "", {"matrix": "{w}/m.yaml"}, 2,
         r"evil\.yaml: provides: 'AAAA.*more characters\) is not a valid name",
         check=lambda w, out: corpus_long_messages_are_clipped(out)),
]


# ----------------------------------------------------------------------------------
# issue 26: inputs that slipped through, writes where there should be none

SPEC = (ROOT / "openssl_matrix" / "resources" / "reports" / "ivy-bridge-aesni-blog.yaml"
        ).read_text()


def spec_with(old: str, new: str) -> str:
    assert old in SPEC, old
    return SPEC.replace(old, new, 1)


def _no_formula_cells(w: Path, out: str) -> None:
    import csv

    rows = list(csv.reader(io.StringIO(out)))
    cells = [c for row in rows[1:] for c in row]
    assert any("cmd|" in c for c in cells), "the hostile label is exported"
    assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r")
                or (c[:1] == "-" and not re.fullmatch(r"-[0-9.e+-]*", c))], "formula cell"


def _hand_edited_dockerfile(w: Path) -> None:
    (w / "r").mkdir()
    (w / "r" / "1.1.1w-asm-x86_64.Dockerfile").write_text("FROM mine\n")


def _imported_formula(w: Path) -> None:
    text = REPORT.replace("aes-128-cbc", "=cmd|calc")
    (w / "f.txt").write_text(text)
    code, _, err = run("import", str(w / "f.txt"), as_="f", results=str(w / "results"))
    assert code == 0, err


def _tarball(w: Path) -> None:
    from ..conftest import make_tarball

    make_tarball(w / "openssl-3.0.20.tar.gz", "3.0.20")


def _only_lock_beside(w: Path) -> None:
    assert sorted(p.name for p in w.iterdir()) == ["m.lock", "m.yaml",
                                                   "openssl-3.0.20.tar.gz"]


def _tarball_and_fifo_lock(w: Path) -> None:
    from ..conftest import make_tarball

    make_tarball(w / "openssl-3.0.20.tar.gz", "3.0.20")
    os.mkfifo(w / "m.lock")


INPUTS_26 = [
    Case("import-as-trailing-newline", {"r.txt": REPORT}, "import", "{w}/r.txt",
         {"as_": "x\n", "results": "{w}/results"}, 10, r"needs --as NAME .*'x\\n'"),
    Case("import-as-trailing-tab", {"r.txt": REPORT}, "import", "{w}/r.txt",
         {"as_": "x\t", "results": "{w}/results"}, 10, r"needs --as NAME"),
    Case("bench-repeat-text", {}, "bench", "", {"cpu": "auto", "repeat": "abc"}, 10,
         r"--repeat 'abc': expected a whole number"),
    Case("build-jobs-empty-text", {}, "build", "", {"jobs": " "}, 10,
         r"--jobs ' ': expected a whole number"),
    Case("report-block-size-text", TREE, "report", "", _tree_flags(block_size="8k"), 10,
         r"--block-size '8k': expected a whole number"),
    Case("spec-ratio-nan", {"s.yaml": spec_with("ratio: 2.0", "ratio: .nan")}, "reproduce",
         "{w}/s.yaml", {"check": True}, 2, r"claims\[0\].*\.ratio: .*finite|claims\[0\].*ratio"),
    Case("spec-ratio-inf", {"s.yaml": spec_with("ratio: 2.0", "ratio: .inf")}, "reproduce",
         "{w}/s.yaml", {"check": True}, 2, r"\.ratio: "),
    Case("spec-tolerance-nan", {"s.yaml": spec_with("tolerance: 0.25", "tolerance: .nan")},
         "reproduce", "{w}/s.yaml", {"check": True}, 2, r"\.tolerance: "),
    Case("spec-figure-zero", {"s.yaml": spec_with("{16: 305049.90k", "{16: 0k")},
         "reproduce", "{w}/s.yaml", {"check": True}, 2,
         r"measurements\.evp-aesni\.reference\.16: .*'0k'"),
    Case("spec-figure-absurd", {"s.yaml": spec_with("{16: 305049.90k", "{16: 1e26")},
         "reproduce", "{w}/s.yaml", {"check": True}, 2,
         r"measurements\.evp-aesni\.reference\.16: "),
    Case("spec-figure-nan-number", {"s.yaml": spec_with("{16: 305049.90k", "{16: .nan")},
         "reproduce", "{w}/s.yaml", {"check": True}, 2,
         r"measurements\.evp-aesni\.reference\.16: "),
    Case("spec-block-size-absurd", {"s.yaml": spec_with("block_sizes: [8192]",
                                                        "block_sizes: [" + "1" * 31 + "]")},
         "reproduce", "{w}/s.yaml", {"check": True}, 2, r"block_sizes.*is not a block size"),
    Case("parse-block-size-absurd", {"r.txt": REPORT.replace(
        "type 16 bytes", "type 99999999999999999999999999 bytes")}, "parse", "{w}/r.txt",
         {"json": True}, 0, r'"status": "impossible"',
         check=lambda w, out: _no_huge_ok_block(out)),
    Case("export-neutralises-formulas", {}, "export", "", _tree_flags(), 0, r"cmd\|",
         setup=_imported_formula, check=_no_formula_cells, may_change=("results",)),
    Case("pin-matrix-typo", {"t.tar.gz": b"x"}, "pin", "3.0.20",
         {"file": "{w}/t.tar.gz", "matrix": "{w}/nope/m.yaml", "force": True}, 2,
         r"nope/m\.yaml: no such matrix file"),
    Case("pin-matrix-is-the-lock", {"m.lock": "versions: {}\n", "t.tar.gz": b"x"}, "pin",
         "3.0.20", {"file": "{w}/t.tar.gz", "matrix": "{w}/m.lock", "force": True}, 2,
         r"m\.lock.*(lock file|\.yaml)", check=_keep("m.lock", "versions: {}\n")),
    Case("pin-tarball-is-a-fifo", {"m.yaml": "versions: {}\n"}, "pin", "3.0.20",
         {"file": "{w}/t.tar.gz", "matrix": "{w}/m.yaml"}, 3,
         r"t\.tar\.gz: not a regular file", setup=_mkfifo("t.tar.gz")),
    Case("pin-tarball-is-dev-zero", {"m.yaml": "versions: {}\n"}, "pin", "3.0.20",
         {"file": "{w}/t.tar.gz", "matrix": "{w}/m.yaml"}, 3,
         r"t\.tar\.gz: not a regular file", setup=_symlink("t.tar.gz", "/dev/zero")),
    Case("pin-lock-is-a-fifo", {"m.yaml": "versions: {}\n"}, "pin", "3.0.20",
         {"file": "{w}/openssl-3.0.20.tar.gz", "matrix": "{w}/m.yaml", "force": True}, 3,
         r"lock file .*m\.lock.*not a regular file", setup=_tarball_and_fifo_lock),
    Case("spec-is-a-fifo", {}, "reproduce", "{w}/s.yaml", {"check": True}, 2,
         r"s\.yaml.*not a regular file", setup=_mkfifo("s.yaml")),
    Case("spec-is-a-link-to-dev-zero", {}, "reproduce", "{w}/s.yaml", {"check": True}, 2,
         r"s\.yaml.*not a regular file", setup=_symlink("s.yaml", "/dev/zero")),
    Case("patch-metadata-is-a-fifo", {"m.yaml": matrix_text(patches_dirs=["p"]),
                                      "p/evil.patch": ""}, "list", "",
         {"matrix": "{w}/m.yaml"}, 2, r"evil\.yaml: cannot read.*not a regular file",
         setup=_mkfifo("p/evil.yaml")),
    Case("pin-leaves-no-guard-file", {"m.yaml": "versions: {}\n"}, "pin", "3.0.20",
         {"file": "{w}/openssl-3.0.20.tar.gz", "matrix": "{w}/m.yaml", "force": True}, 0,
         r"pinned openssl 3\.0\.20", may_change=("m.lock",), setup=_tarball,
         check=lambda w, out: _only_lock_beside(w)),
    Case("import-into-a-project-folder", {"r.txt": REPORT, "proj/README.md": "mine"},
         "import", "{w}/r.txt", {"as_": "x", "results": "{w}/proj"}, 9,
         r"proj is not a results tree"),
    Case("import-results-is-a-file", {"r.txt": REPORT}, "import", "{w}/r.txt",
         {"as_": "x", "results": "{w}/r.txt"}, 9, r"r\.txt.*not a folder"),
    Case("import-results-dangling-link", {"r.txt": REPORT}, "import", "{w}/r.txt",
         {"as_": "x", "results": "{w}/gone"}, 9, r"gone.*(dangling|symbolic link)",
         setup=lambda w: (w / "gone").symlink_to(w / "nowhere")),
    Case("render-over-a-hand-edited-dockerfile", {"m.yaml": matrix_text()}, "render", "",
         {"matrix": "{w}/m.yaml", "output": "{w}/r", "only": "1.1.1w-asm-x86_64"}, 10,
         r"1\.1\.1w-asm-x86_64\.Dockerfile.*not written by `invoke matrix render`",
         setup=_hand_edited_dockerfile,
         check=_keep("r/1.1.1w-asm-x86_64.Dockerfile", "FROM mine\n")),
    Case("render-twice-is-fine", {"m.yaml": matrix_text()}, "render", "",
         {"matrix": "{w}/m.yaml", "output": "{w}/r", "only": "1.1.1w-asm-x86_64"}, 0,
         r"r/1\.1\.1w-asm-x86_64\.Dockerfile", may_change=("r",),
         setup=lambda w: _render_once(w)),
]


def _render_once(w: Path) -> None:
    code, _, err = run("render", matrix=str(w / "m.yaml"), output=str(w / "r"),
                       only="1.1.1w-asm-x86_64")
    assert code == 0, err


def _no_huge_ok_block(out: str) -> None:
    runs = json.loads(out[out.index("["):])
    assert {r["status"] for r in runs[0]["records"] if r["block_size"] is None
            or r["block_size"] > 1 << 40} == {"impossible"}


#: Encodings the YAML inputs cannot be read in (a BOM of UTF-16 LE/BE or UTF-32, Latin-1
#: bytes): a matrix and a report spec are each refused as not UTF-8, naming the file.
_UNREADABLE = {
    "utf16le-bom": b"\xff\xfe" + "versions: [x]\n".encode("utf-16-le"),
    "utf16be-bom": b"\xfe\xff" + "versions: [x]\n".encode("utf-16-be"),
    "utf32le-bom": b"\xff\xfe\x00\x00" + "versions: [x]\n".encode("utf-32-le"),
    "latin1": "versions: [caf\xe9]\n".encode("latin-1"),
}
ENCODINGS = [
    *(M(f"matrix-{name}", data, r"m\.yaml: is not UTF-8 text") for name, data in
      _UNREADABLE.items()),
    *(Case(f"spec-{name}", {"s.yaml": data}, "reproduce", "{w}/s.yaml", {}, 2,
           r"s\.yaml: is not UTF-8 text") for name, data in _UNREADABLE.items()),
]

CORPUS = (MATRICES + PASTED + COMMAND_LINE + OUTPUTS + RESULTS_FILES + OTHER_FILES
          + INPUTS_26 + ENCODINGS)


def _fill(value: Any, work: Path) -> Any:
    return value.replace("{w}", str(work)) if isinstance(value, str) else value


@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_hostile_input(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      request: pytest.FixtureRequest) -> None:
    if case.tree:
        from ..fake.test_report import make_tree

        made = make_tree(request.getfixturevalue("fake_matrix"), tmp_path / "made", rounds=1)
        shutil.copytree(made.root, tmp_path / "work" / "results")
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")  # never reached
    monkeypatch.chdir(ROOT)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    for rel, content in case.files.items():
        path = work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    if case.setup is not None:
        case.setup(work)
    around = tmp_path  # the work folder and everything beside it
    before = snapshot(around)
    flags = {k: _fill(v, work) for k, v in case.flags.items()}
    code, out, err = run(case.command, _fill(case.target, work), **flags)
    text = err + out
    assert "Traceback" not in text
    assert code != INTERNAL_ERROR, text
    assert code == case.code, (code, text[:2000])
    assert re.search(case.message, text, re.MULTILINE), text[:2000]
    if code:
        assert err.startswith("error: "), err[:500]
    allowed = (*tuple(f"work/{p}" for p in case.may_change), "cache")
    diff = {p for p in changed(before, snapshot(around))
            if not any(p == a or p.startswith(a + "/") for a in allowed)}
    assert diff == set(), f"changed outside the target: {sorted(diff)[:10]}"
    if case.check is not None:
        case.check(work, out if code == 0 else text)
    for escaped in (Path("/tmp/X"), Path("/tmp/pwned"), Path("/tmp/pwned.Dockerfile")):
        assert not escaped.exists() or escaped.stat().st_mtime < 0


def test_the_corpus_is_big_enough() -> None:
    assert len(CORPUS) >= 60
    assert len({c.id for c in CORPUS}) == len(CORPUS)


def test_a_valid_matrix_with_anchors_and_merge_keys_still_loads(tmp_path: Path) -> None:
    from openssl_matrix.matrix.load import load_matrix

    path = tmp_path / "m.yaml"
    doc = (ROOT / "matrix.yaml").read_text()
    anchored = doc.replace("suites:\n", "suites:\n  base: &base\n    algorithms: &algs [md5, "
                           "sha1]\n    evp: true\n    seconds: 1\n  anchored:\n    <<: *base\n"
                           "    seconds: 2\n  listed:\n    algorithms: *algs\n", 1)
    path.write_text(anchored)
    m = load_matrix(path)
    assert m.suite("anchored").seconds == 2
    assert m.suite("anchored").algorithms == ("md5", "sha1") == m.suite("listed").algorithms
