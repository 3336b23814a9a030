"""Broken and hostile matrices: whatever a user (or an attacker) writes into matrix.yaml,
the command line answers with a configuration error naming the file and the key path,
never a traceback, and no value with a shell metacharacter reaches a Dockerfile.

Hypothesis mutates the default matrix (values replaced by other types, keys deleted,
renamed or added, lines duplicated, characters inserted) and drives the commands a
user types through ``cli.dispatch``.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from invoke.exceptions import Exit

from openssl_matrix.cli.shared import handlers
from openssl_matrix.cli.table import dispatch
from openssl_matrix.core.errors import ConfigError
from openssl_matrix.matrix.check import SAFE_TOKEN
from openssl_matrix.matrix.load import load_matrix

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TEXT = (ROOT / "matrix.yaml").read_text()
DEFAULT = yaml.safe_load(DEFAULT_TEXT)

# Values a user might type, and values an attacker would.
HOSTILE = ["no-asm; rm -rf /", "$(id)", "`id`", "a b", "x\ny", "-march=native && curl x",
           "'\"", "{{ 7*7 }}", "{% raw %}", "\\", "|", ">", "../../etc/passwd", "a\x00b",
           "~0x200000000000000; id", "debian:bookworm\nRUN id", "", " ", "*", "?", "[",
           "%s", "1.1.1w", "3.0.20", "asm", "no-asm", "x86_64", "i386", "default"]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 10**20), st.floats(allow_nan=True),
    st.sampled_from(HOSTILE), st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.one_of(st.text(max_size=8),
                                                      st.sampled_from(HOSTILE),
                                                      st.integers(0, 3)), inner, max_size=3)),
    max_leaves=6,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        doc = doc[key]
    return doc


@st.composite
def mutated(draw: st.DrawFn) -> str:
    doc = copy.deepcopy(DEFAULT)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = _parent(doc, path)
        key = path[-1]
        op = draw(st.sampled_from(["replace", "delete", "rename", "add", "duplicate"]))
        if op == "replace":
            parent[key] = draw(values)
        elif op == "delete":
            del parent[key]
        elif op == "rename" and isinstance(parent, dict):
            new = draw(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=10),
                                 st.just(str(key)[:-1] or "x"), st.just(str(key) + "s")))
            parent[new] = parent.pop(key)
        elif op == "add" and isinstance(parent, dict):
            parent[draw(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=8)))] = \
                draw(values)
        elif op == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    if draw(st.booleans()):
        # text-level damage: a duplicated line (duplicate keys), or stray characters
        lines = text.splitlines(keepends=True)
        i = draw(st.integers(0, max(0, len(lines) - 1)))
        if draw(st.booleans()):
            lines.insert(i, lines[i] if lines else "")
        else:
            junk = draw(st.sampled_from(["\t", ":", "- ", "{", "]", "&a ", "*a", "!!python/x ",
                                         "%", "@", "\x00", "\ufeff", "  "]))
            col = draw(st.integers(0, len(lines[i]) if lines else 0))
            lines[i] = lines[i][:col] + junk + lines[i][col:] if lines else junk
        text = "".join(lines)
    return text


def run_cli(command: str, matrix: Path, workdir: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    flags: dict[str, Any] = {"matrix": str(matrix), "results": str(workdir / "results")}
    if command == "list":
        flags["json"] = True
    else:
        flags.update(only="", output=str(workdir / "rendered"))
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            dispatch(command, "", flags, handlers())
        except Exit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_no_mutated_matrix_reaches_the_user_as_a_traceback(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        matrix = work / "matrix.yaml"
        matrix.write_bytes(text.encode("utf-8", "surrogatepass"))
        for command in ("list", "render"):
            code, out, err = run_cli(command, matrix, work)
            assert "Traceback" not in err + out
            assert code in (0, ConfigError.exit_code), (command, code, err)
            if code:
                first = err.strip().splitlines()[0]
                assert first.startswith(f"error: {matrix}"), first
                continue
            if command == "render":
                # whatever was accepted, no Dockerfile line carries a shell metacharacter
                # from the matrix: every value passed the SAFE_TOKEN check
                m = load_matrix(matrix)
                for v in m.variants:
                    for token in (*v.configure, v.march or "x", v.arch):
                        assert SAFE_TOKEN.match(token), token
                for df in (work / "rendered").glob("*.Dockerfile"):
                    check_dockerfile(df.read_text())


def check_dockerfile(text: str) -> None:
    """Every RUN line is exec form (a JSON list: no shell parses matrix values) or the
    template's one fixed shell line; no instruction comes from anywhere else."""
    for line in text.splitlines():
        if line.startswith("RUN "):
            body = line[4:]
            if body.startswith("["):
                argv = json.loads(body)
                assert isinstance(argv, list) and all(isinstance(a, str) for a in argv)
            else:
                assert body == "mkdir -p /src/tree \\", line
        elif line.startswith("FROM "):
            assert re.fullmatch(r"FROM [a-z0-9][a-z0-9._/:@-]*( AS [a-z]+)?", line), line


@pytest.mark.parametrize(("text", "where"), [
    ("versions:\n  1.1.1w: {sha256: " + "a" * 64 + "}\n  1.1.1w: {sha256: " + "b" * 64 + "}\n"
     "suites: {s: {algorithms: [md5]}}\n", "m.yaml: versions: duplicate key '1.1.1w' "
     "(line 3; first at line 2)"),
    ("versions: {1.1.1w: {sha256: " + "a" * 64 + "}}\nsuites: {s: {algorithms: [md5]}}\n"
     "suites: {t: {algorithms: [md5]}}\n", "m.yaml: duplicate key 'suites' (line 3; first "
     "at line 2)"),
])
def test_duplicate_keys_are_refused_with_their_line(tmp_path: Path, text: str,
                                                    where: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_matrix(path)
    assert where in str(exc.value)


@pytest.mark.parametrize(("mutation", "message"), [
    ({"suites": {"blog": {"algorithms": ["aes-256-cbc", "md5; curl evil"]}}},
     r"suites.blog.algorithms\[1\]: 'md5; curl evil' contains characters"),
    ({"suites": {"blog": {"masks": [{"name": "x", "ia32cap": "~0x2 $(id)"}]}}},
     r"suites.blog.masks\[0\].ia32cap: .* contains characters"),
    ({"axes": {"march": ["default", "native\nRUN curl evil"]}},
     r"axes.march\[1\]: .* contains characters"),
    ({"defaults": {"base_image": "debian:bookworm\nRUN id"}},
     r"defaults.base_image: .* is not a Docker image reference"),
    ({"versions": {"1.1.1w": {"sha256": "a" * 64, "configure": ["{{ 7*7 }}"]}}},
     r"versions.1.1.1w.configure\[0\]: .* contains characters"),
    ({"suites": {"blog": {"devices": ["/dev/../etc/shadow"]}}},
     r"suites.blog.devices\[0\]: .* is not a device path"),
    ({"include": [{"version": "9.9.9"}]}, r"include\[0\].version: '9.9.9' is not declared"),
    ({"exclude": [{"arch": "i386"}]}, r"exclude\[0\]: rule .* matches no variant"),
    ({"suites": {"blog": {"seconds": "1"}}}, r"suites.blog.seconds: expected a positive"),
    ({"suites": {"blog": {"algoritms": ["md5"]}}}, r"perhaps you meant 'algorithms'"),
])
def test_hostile_values_name_file_and_key_path(tmp_path: Path, mutation: dict[str, Any],
                                               message: str) -> None:
    doc = copy.deepcopy(DEFAULT)

    def merge(dst: dict[str, Any], src: dict[str, Any]) -> None:
        for k, v in src.items():
            if isinstance(v, dict) and isinstance(dst.get(k), dict):
                merge(dst[k], v)
            else:
                dst[k] = v

    merge(doc, mutation)
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, _, err = run_cli("list", path, tmp_path)
    assert code == ConfigError.exit_code
    assert re.search(message, err), err
    assert err.startswith(f"error: {path}: ")
