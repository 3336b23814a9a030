"""Suite kinds are plug-ins (issue 34): outside ``matrix/kinds/`` no code compares a suite
kind's name, and a kind of a test's own, one module and one registry entry, loads,
plans, runs and reports (the rest in tests/fake/test_kinds_toy.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.matrix.kinds import KINDS, base, find_kind, kind_of, kind_of_path, registered

PACKAGE = Path(__file__).resolve().parents[2] / "openssl_matrix"
KINDS_DIR = PACKAGE / "matrix" / "kinds"

#: Comparisons with a string that is also a kind's name but is no suite kind: the line
#: kinds of the speed parser (parse/ sits below the kinds and has none of its own).
NOT_SUITE_KINDS = {PACKAGE / "parse" / "paste.py"}


def _strings(node: ast.AST) -> list[str]:
    """The string constants ``node`` is, or holds as a tuple, list or set."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _strings(e)]
    return []


def kind_comparisons(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, text) of each comparison (``==``, ``!=``, ``in``, ``not in``, ``match``
    cases) of anything with a string in ``names``."""
    found: list[tuple[int, str]] = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        operands: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.MatchValue):
            operands = [node.value]
        hits = sorted({s for o in operands for s in _strings(o)} & names)
        if hits:
            found.append((getattr(node, "lineno", 0), ", ".join(hits)))
    return found


def test_the_check_sees_a_comparison() -> None:
    names = {"tls", "speed"}
    assert kind_comparisons('if suite.kind == "tls":\n    pass\n', names) == [(1, "tls")]
    assert kind_comparisons('ok = kind in ("speed", "x")\n', names) == [(1, "speed")]
    assert kind_comparisons('match k:\n    case "tls":\n        pass\n', names) == \
        [(2, "tls")]
    assert kind_comparisons('x = {"tls": 1}\ny = f(kind="tls")\n', names) == []


def test_no_code_outside_the_kinds_compares_a_kind_name() -> None:
    names = set(KINDS)
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(KINDS_DIR) or path in NOT_SUITE_KINDS:
            continue
        for line, hit in kind_comparisons(path.read_text(encoding="utf-8"), names):
            offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {hit}")
    assert offenders == [], "ask the kind (matrix/kinds/) instead:\n" + "\n".join(offenders)


def test_every_kind_answers_with_the_words_the_layers_key_by() -> None:
    runners = {base.RUNNER_SPEED, base.RUNNER_PTS, base.RUNNER_S_TIME, base.RUNNER_HARNESS}
    shapes = {base.FIGURES_BLOCKS, base.FIGURES_OPERATIONS, base.FIGURES_HANDSHAKES,
              base.FIGURES_THREADS}
    assert list(KINDS) == ["speed", "aead", "pkey", "tls", "pts", "library"]
    for kind in KINDS.values():
        assert kind.runner in runners and kind.figures in shapes, kind.name
        assert (kind.table_title is None) == (kind.panel_label is None), kind.name
        assert kind.paths(True, False), kind.name
    assert kind_of(None) is KINDS["speed"] and find_kind(3) is None
    assert kind_of_path("pts") is KINDS["pts"] and kind_of_path("legacy") is KINDS["speed"]


def test_a_kind_is_registered_once_and_for_a_while() -> None:
    toy = base.BaseKind("toy", base.RUNNER_SPEED, base.FIGURES_BLOCKS, "a toy figure")
    with registered(toy):
        assert kind_of("toy") is toy
        with pytest.raises(ValueError, match="registered already"), registered(toy):
            pass
    assert "toy" not in KINDS
    with pytest.raises(ConfigError, match="'toy' is not a suite kind"):
        kind_of("toy")
