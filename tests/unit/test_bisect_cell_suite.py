"""The suite a bisection measures (sweep/bisectrun.py, cell_suite): narrowed to the cell,
down to its block size, under a name of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.sweep.bisect import parse_cell
from openssl_matrix.sweep.bisectrun import cell_suite

ROOT = Path(__file__).resolve().parents[2]


def test_a_suite_of_every_size_is_measured_at_the_cells_size_only() -> None:
    m = load_matrix(ROOT / "matrix.yaml")
    assert m.suite("blog").bytes is None
    small = cell_suite(m, parse_cell("blog:sha256:16"))
    assert (small.name, small.bytes, small.algorithms) == ("blog-bisect-16", 16, ("sha256",))
    assert [x.name for x in small.masks] == ["native"]
    large = cell_suite(m, parse_cell("blog:sha256:8192"))
    assert (large.name, large.bytes) == ("blog-bisect-8192", 8192)  # never one folder


def test_a_suite_of_one_size_keeps_its_name_and_refuses_another() -> None:
    m = load_matrix(ROOT / "matrix.yaml")
    one = cell_suite(m, parse_cell("blog-fast:sha256:8192:no-aesni-sha"))
    assert (one.name, one.bytes) == ("blog-fast-bisect", 8192)
    assert [x.name for x in one.masks] == ["no-aesni-sha"]
    with pytest.raises(ConfigError, match="8192-byte blocks only"):
        cell_suite(m, parse_cell("blog-fast:sha256:16"))
