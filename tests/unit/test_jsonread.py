"""core/jsonread.loads: JSON nested deeper than Python's recursion is a JSONDecodeError
(a ValueError every reader already handles), not a RecursionError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openssl_matrix.core import jsonread
from openssl_matrix.results.bisections import Progress


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000,
                                  '{"a":' * 100_000 + "1" + "}" * 100_000])
def test_too_deep_a_nesting_is_a_decode_error(text: str) -> None:
    with pytest.raises(RecursionError):
        json.loads(text)  # what the standard library does
    with pytest.raises(json.JSONDecodeError, match=jsonread.TOO_DEEP):
        jsonread.loads(text)
    with pytest.raises(ValueError):
        jsonread.loads(text.encode())


def test_ordinary_json_reads_as_before() -> None:
    text = '{"a": [1, 2.5, null, "x"], "b": {"c": true}}'
    assert jsonread.loads(text) == json.loads(text)
    assert jsonread.loads("[" * 500 + "]" * 500) == json.loads("[" * 500 + "]" * 500)


def test_a_bisection_progress_line_nested_too_deeply_ends_the_replay(tmp_path: Path) -> None:
    progress = Progress(tmp_path / "progress-k.jsonl")
    progress.append({"releases": ["a", "b"], "n": 1, "rounds": []})
    with open(progress.path, "a") as fh:
        fh.write("[" * 100_000 + "]" * 100_000 + "\n")
    assert len(progress.entries()) == 1
