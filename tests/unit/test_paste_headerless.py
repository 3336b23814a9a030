"""Rows pasted without speed's `type 16 bytes ...` header (issue 36)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openssl_matrix.cli.commands.parse import run as cmd_parse
from openssl_matrix.core.errors import ParseError, UsageError
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


#: Rows in the shape of a 0.9.8 report (five block sizes, 16 to 8192), with a version line
#: that implies six: only --block-sizes places them. The figures are this test's own.
FIVE = """OpenSSL 1.1.1p  21 Jun 2022
md5              88472.39k   253340.81k   558017.45k   799027.54k   922042.37k
"""


def test_parse_takes_block_sizes_for_rows_without_a_header(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paste = tmp_path / "paste.txt"
    paste.write_text(FIVE)
    with pytest.raises(ParseError) as err:
        cmd_parse(target=str(paste), matrix="", results="", json=False)
    assert "6 block sizes (those of OpenSSL 1.1.1p's speed) do not match their 5 figures" \
        in (err.value.hint or "")
    cmd_parse(target=str(paste), matrix="", results="", json=True,
              block_sizes="16,64,256,1024,8192")
    (run,) = json.loads(capsys.readouterr().out)
    sizes = {r["block_size"]: r["raw"] for r in run["records"]}
    assert sizes == {16: "88472.39k", 64: "253340.81k", 256: "558017.45k",
                     1024: "799027.54k", 8192: "922042.37k"}
    assert any("16, 64, 256, 1024, 8192 assumed" in w and "--block-sizes" in w
               for w in run["warnings"])


@pytest.mark.parametrize("given", ["16,64,x", "64,16", "16,16", "0,16", "16,99999999999"])
def test_block_sizes_that_are_not_ascending_sizes_are_a_usage_error(
        tmp_path: Path, given: str) -> None:
    paste = tmp_path / "paste.txt"
    paste.write_text(FIVE)
    with pytest.raises(UsageError, match="expected block sizes in bytes, ascending"):
        cmd_parse(target=str(paste), matrix="", results="", json=False, block_sizes=given)


#: Two tables labelled only by a line naming the release, as openssl/openssl#20998 pasted
#: them ("1.1.1t:" above the first, "3.1.0" above the second; rows of md5 and sha256 from
#: that issue's tables, its own figures).
LABELLED = """1.1.1t:
md5              59938.36k   151965.12k   294799.79k   384826.71k   423436.29k   426404.52k
sha256           70298.92k   186744.51k   364388.35k   479638.87k   527955.29k   531841.02k

3.1.0
md5              30466.39k    95734.66k   228009.41k   350011.35k   418365.10k   422969.34k
"""


def test_a_line_naming_the_release_gives_the_rows_their_block_sizes() -> None:
    reading = read_paste(LABELLED)
    assert [h.sizes for h in reading.assumed.values()] == [(16, 64, 256, 1024, 8192, 16384)] * 2
    first, second = reading.runs
    assert first.figure("sha256", 16384).raw == "531841.02k"  # type: ignore[union-attr]
    assert second.figure("md5", 16).raw == "30466.39k"  # type: ignore[union-attr]
    assert any("those of OpenSSL 1.1.1t's speed" in w for w in first.warnings)
    assert any("those of OpenSSL 3.1.0's speed" in w for w in second.warnings)


def test_rows_no_line_places_say_rows_were_found() -> None:
    """Not "no table found" when rows are there: what was found, and what to give."""
    with pytest.raises(ParseError) as err:
        read_paste(LABELLED.replace("1.1.1t:\n", "first run\n").replace("3.1.0\n", "then\n"))
    assert "rows without their table's header were found" in str(err.value)
    assert "give --block-sizes 16,64,256,1024,8192,16384" in (err.value.hint or "")
