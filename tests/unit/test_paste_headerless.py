"""Rows pasted without speed's `type 16 bytes ...` header (issue 36)."""

from __future__ import annotations

import pytest

from openssl_matrix.core.errors import ParseError
from openssl_matrix.parse import read_paste

ROWS = """OpenSSL 1.1.1p  21 Jun 2022
md5              88472.39k   253340.81k   558017.45k   799027.54k   922042.37k   932210.69k
"""


def test_rows_without_header_take_the_versions_block_sizes() -> None:
    reading = read_paste(ROWS)
    (run,) = reading.runs
    assert reading.assumed[0].sizes == (16, 64, 256, 1024, 8192, 16384)
    assert run.figure("md5", 16384) is not None
    assert run.figure("md5", 16384).raw == "932210.69k"  # type: ignore[union-attr]
    assert any("16, 64, 256, 1024, 8192, 16384 assumed" in w for w in run.warnings)


def test_rows_that_cannot_be_placed_are_refused() -> None:
    with pytest.raises(ParseError) as err:
        read_paste(ROWS.replace("OpenSSL 1.0.2u  20 Dec 2019", "").replace(
            "OpenSSL 1.1.1p  21 Jun 2022", "OpenSSL 1.0.2u  20 Dec 2019"))
    assert "do not match their 6 figures" in str(err.value)
