"""Issue 35, the item left over: hostile values of `invoke matrix profile`'s flags.

Each case runs the command line in this process as invoke hands it over (every flag's
value as text, as typed) against a matrix of local files, with an engine that must never
be reached: every hostile value is refused before any container, image or folder. Each
asserts exit 10 (a usage error), a message naming the flag and the value as given (quoted,
cut short, no raw control character), no traceback, and no change in the folder around
the command (the results tree included: nothing is filed for a refused profile).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from invoke.exceptions import Exit

from openssl_matrix.cli.shared import handlers
from openssl_matrix.cli.table import dispatch
from openssl_matrix.core.errors import UsageError
from openssl_matrix.engine.backend import Backend

pytestmark = pytest.mark.hostile

ONE = "3.0.20-asm-x86_64"
OTHER = "3.0.20-no-asm-x86_64"
LONG = "x" * 10_000
SPEED = {"only": ONE, "algorithm": "sha256", "bytes": "16"}
#: a pkey suite run under two masks (one run per mask) and a library suite
SUITES = """  pk2:
    kind: pkey
    algorithms: [rsa2048]
    seconds: 1
    masks:
      - name: native
      - name: no-aesni
        ia32cap: "~0x200000200000000:~0x0"
  lib:
    kind: library
    algorithms: [pkey-decode-pem-rsa2048]
    threads: [1, 2]
    seconds: 1
"""


class EngineReached(BaseException):
    """The command got past its checks to the engine (only the control case may); not an
    Exception, so that the command line's last resort does not take it for a crash."""


def _engine(base_url: str | None, allow_plain_tcp: bool) -> Backend:
    raise EngineReached


@pytest.fixture
def matrix(fake_matrix: Path) -> Path:
    fake_matrix.write_text(fake_matrix.read_text().replace("suites:\n", "suites:\n" + SUITES, 1))
    return fake_matrix


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def profile(tmp_path: Path, matrix: Path, **flags: str) -> tuple[int, str, str]:
    """``invoke matrix profile --flags`` in this process: (exit code, out, err)."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    given = {"matrix": str(matrix), "results": str(tmp_path / "results"), **flags}
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            dispatch("profile", "", given, handlers(_engine))
        except Exit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def unchanged(tmp_path: Path) -> Iterator[None]:
    before = _listing(tmp_path)
    yield
    assert _listing(tmp_path) == before, "something was written"


def refused(tmp_path: Path, matrix: Path, flag: str, shown: str, **flags: str) -> str:
    """The refusal's text, after the checks every case shares."""
    with unchanged(tmp_path):
        code, out, err = profile(tmp_path, matrix, **flags)
    text = out + err
    assert code == UsageError.exit_code, text
    assert "Traceback" not in text and "crash" not in text, text
    assert f"error: {flag}" in err, err
    assert shown in err, (shown, err)
    assert "hint:" in err, err
    assert all(c.isprintable() or c == "\n" for c in err), repr(err)
    err.encode("utf-8")  # no lone surrogate reaches the terminal
    assert len(err) < 1500, len(err)
    assert not (tmp_path / "results" / "_profiles").exists()
    return err


def test_the_control_case_reaches_the_engine(tmp_path: Path, matrix: Path) -> None:
    """Good flags get past every check (so each refusal below is the value's doing)."""
    for flags in (SPEED, {"only": ONE, "suite": "quick", "cell": "aes-128-cbc:8192"},
                  {"compare": f"{ONE},{OTHER}", "algorithm": "sha256", "bytes": "16",
                   "seconds": "3600"},
                  {"only": ONE, "suite": "lib", "cell": "pkey-decode-pem-rsa2048:t2"}):
        with pytest.raises(EngineReached):
            profile(tmp_path, matrix, **flags)


NAMES = {
    "dotdot": "..", "parent": "../x", "separator": "a/b", "absolute": "/etc/passwd",
    "backslash": "a\\b", "nul": "a\0b", "bell": "a\x07b", "escape": "a\x1b[31mb",
    "newline": "a\nb", "surrogate": "a\udcffb", "shell": "$(id);`x`|&>y", "glob": "3.0.*",
    "leading-dash": "-rf",
}


@pytest.mark.parametrize("value", NAMES.values(), ids=NAMES.keys())
@pytest.mark.parametrize("flag", ["--only", "--algorithm", "--suite"])
def test_a_hostile_name_is_refused_naming_its_flag(tmp_path: Path, matrix: Path, flag: str,
                                                   value: str) -> None:
    flags = {"--only": {**SPEED, "only": value},
             "--algorithm": {**SPEED, "algorithm": value},
             "--suite": {"only": ONE, "suite": value, "cell": "aes-128-cbc:8192"}}[flag]
    err = refused(tmp_path, matrix, flag, repr(value), **flags)
    assert "names are letters, digits" in err


@pytest.mark.parametrize("flag", ["--only", "--algorithm", "--suite"])
def test_a_long_or_blank_name_is_refused_naming_its_flag(tmp_path: Path, matrix: Path,
                                                         flag: str) -> None:
    key = flag.removeprefix("--")
    base = SPEED if flag != "--suite" else {"only": ONE, "cell": "aes-128-cbc:8192"}
    err = refused(tmp_path, matrix, flag, "more characters", **{**base, key: LONG})
    assert "longer than 120 characters" in err
    refused(tmp_path, matrix, flag, "'   '", **{**base, key: "   "}) if flag != "--only" else \
        refused(tmp_path, matrix, "`invoke matrix profile` needs --only", "--compare A,B",
                **{**base, key: "   "})


@pytest.mark.parametrize("flag, value", [("--only", "9.9.9-asm-x86_64"),
                                         ("--suite", "nosuch")])
def test_an_unknown_variant_or_suite_says_what_exists(tmp_path: Path, matrix: Path, flag: str,
                                                      value: str) -> None:
    flags = {**SPEED, "only": value} if flag == "--only" else \
        {"only": ONE, "suite": value, "cell": "x:1"}
    err = refused(tmp_path, matrix, flag, repr(value), **flags)
    assert "no such" in err
    assert ("invoke matrix list --all" in err) if flag == "--only" else ("quick (speed)" in err)


@pytest.mark.parametrize("value, why", [
    (ONE, "takes two variants"), (f"{ONE},{OTHER},1.1.1w-asm-x86_64", "got 3 parts"),
    (f"{ONE},{ONE}", "names 3.0.20-asm-x86_64 twice"), (f",{ONE}", "is not a variant id"),
    (f"{ONE},", "is not a variant id"), (",", "is not a variant id"),
    (f"{ONE}, ", "is not a variant id"), (f"{ONE},../x", "contains '..'"),
    (f"{ONE},a\0b", "'\\x00'"), (f"{LONG},{LONG}", "more characters"),
    (f"{ONE},9.9.9-asm-x86_64", "declares no such variant"),
], ids=["one", "three", "twice", "empty-first", "empty-second", "comma-only", "blank-second",
        "dotdot", "nul", "long", "unknown"])
def test_compare_takes_two_different_known_variants(tmp_path: Path, matrix: Path, value: str,
                                                    why: str) -> None:
    flags = {"compare": value, "algorithm": "sha256", "bytes": "16"}
    shown = repr(value) if len(value) < 70 and why != "declares no such variant" else ""
    err = refused(tmp_path, matrix, "--compare", shown, **flags)
    assert why in err, err
    assert "A,B" in err or "list --all" in err or "two different builds" in err, err


def test_only_and_compare_together_are_refused(tmp_path: Path, matrix: Path) -> None:
    refused(tmp_path, matrix, "--only", "--compare", only=ONE, compare=f"{ONE},{OTHER}",
            algorithm="sha256", bytes="16")


NUMBERS = ["0", "-1", "abc", "", " ", "1e3", "1.5", "nan", "inf", "-inf", "16/..",
           "99999999999999999999", "999999999999999999", "16777217", "0x10", "١٦"]


@pytest.mark.parametrize("value", NUMBERS)
@pytest.mark.parametrize("flag", ["--bytes", "--seconds"])
def test_a_count_that_is_not_one_the_matrix_allows_is_refused(tmp_path: Path, matrix: Path,
                                                              flag: str, value: str) -> None:
    if flag == "--seconds" and value == "16777217":
        value = "3601"
    err = refused(tmp_path, matrix, flag, "", **{**SPEED, flag.removeprefix("--"): value})
    assert repr(value) in err or f"{flag}={int(value)}" in err, err
    assert "whole number" in err


CELLS = {
    "dotdot": "../x", "absolute": "/etc/passwd", "nul": "aes-128-cbc:\0", "escape":
    "aes-128-cbc:\x1b[2J", "newline": "aes-128-cbc:8192\n", "surrogate": "aes-128-cbc:\udcff",
    "blank": "   ", "shell": "$(id):`x`", "no-match": "sha512:16", "bare": "aes-128-cbc",
    "extra-part": "aes-128-cbc:8192:x", "zero-bytes": "aes-128-cbc:0",
    "negative-bytes": "aes-128-cbc:-1", "huge-bytes": "aes-128-cbc:99999999999999999999",
    "over-bound": "aes-128-cbc:16777217", "other-digits": "aes-128-cbc:١٢",
    "bytes-path": "aes-128-cbc:../8192", "long": LONG,
}


@pytest.mark.parametrize("value", CELLS.values(), ids=CELLS.keys())
def test_a_cell_that_names_no_cell_is_refused_naming_cell(tmp_path: Path, matrix: Path,
                                                          value: str) -> None:
    shown = repr(value) if len(value) < 70 else "more characters"
    err = refused(tmp_path, matrix, "--cell", shown, only=ONE, suite="quick", cell=value)
    assert "no such cell" in err or "contains" in err or "blank" in err \
        or "longer than" in err, err


@pytest.mark.parametrize("value", ["pkey-decode-pem-rsa2048:t0", "pkey-decode-pem-rsa2048:t257",
                                   "pkey-decode-pem-rsa2048:t99999999999999",
                                   "pkey-decode-pem-rsa2048:t-1", "memory:t1",
                                   "pkey-decode-pem-rsa2048:t1:t2"])
def test_a_library_cell_s_threads_are_bounded(tmp_path: Path, matrix: Path,
                                              value: str) -> None:
    err = refused(tmp_path, matrix, "--cell", repr(value), only=ONE, suite="lib", cell=value)
    assert "pkey-decode-pem-rsa2048:t1" in err  # the cells it has


def test_a_cell_matching_several_runs_is_a_usage_error(tmp_path: Path, matrix: Path) -> None:
    """A pkey suite under two masks runs rsa2048:sign twice: a profile is one run."""
    err = refused(tmp_path, matrix, "--cell", "'rsa2048:sign'", only=ONE, suite="pk2",
                  cell="rsa2048:sign")
    assert "matches 2 runs of suite pk2" in err and "one mask" in err, err
