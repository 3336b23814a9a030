"""The one OpenSSL version type (pure unit tests)."""

from __future__ import annotations

import pytest

from openssl_matrix.core.version import Version, VersionError, series, sort_key
from openssl_matrix.matrix.isa import IA32CAP_BITS, render_ia32cap
from openssl_matrix.matrix.patches import version_key
from openssl_matrix.parse.figures import version_tuple
from openssl_matrix.report.types import CAP_BITS, describe_mask


def test_parse_compare_series_era() -> None:
    v = Version.parse("1.1.1w")
    assert (v.major, v.minor, v.patch, v.letters) == (1, 1, 1, "w")
    assert v.series == (1, 1, 1) and v.era == "1.1.1" and str(v) == "1.1.1w"
    assert Version.parse("3.0.20").era == "3.x"
    assert Version.parse("1.0.1") < Version.parse("1.0.1c") < Version.parse("1.0.1t") \
        < Version.parse("1.0.2") < Version.parse("3.0.2") < Version.parse("3.0.10")
    assert Version.parse("0.9.8z") < Version.parse("0.9.8za")
    beta = Version.parse("3.0.0-beta1")
    assert beta.suffix == "-beta1" and beta.release == "3.0.0" and beta == Version.parse("3.0.0")
    assert series("0.9.8n") == (0, 9, 8)


@pytest.mark.parametrize("bad", ["", "garbage", "1.1", "1.1.1w; rm -rf /", "v1.1.1",
                                 "1.1.1abc", " 1.2.3 x"])
def test_bad_input_is_refused_the_same_way_everywhere(bad: str) -> None:
    with pytest.raises(VersionError):
        Version.parse(bad)
    with pytest.raises(ValueError):
        version_key(bad)
    with pytest.raises(ValueError):
        render_ia32cap(["aesni"], bad)


def test_find_reads_versions_out_of_text() -> None:
    found = Version.find("OpenSSL 1.1.1w  11 Sep 2023")
    assert found is not None and found.release == "1.1.1w"
    assert Version.find("1.0.0f-dev") == Version.parse("1.0.0f")
    assert Version.find("garbage") is None and Version.find(None) is None
    assert str(Version.find("OpenSSL 3.0.13+quic 30 Jan 2024")) == "3.0.13"
    assert str(Version.find("OpenSSL 3.0.0-beta1 17 Jun 2021")) == "3.0.0-beta1"
    assert version_tuple("3.0.2") == (3, 0, 2)


def test_sort_key_orders_releases_after_unknown_text() -> None:
    names = ["3.0.10", "?", "1.0.1e", "3.0.2", "1.0.1"]
    assert sorted(names, key=sort_key) == ["?", "1.0.1", "1.0.1e", "3.0.2", "3.0.10"]


def test_one_ia32cap_table_names_the_report_masks() -> None:
    assert CAP_BITS[IA32CAP_BITS["movbe"]] == "MOVBE"
    assert (0, 51) not in CAP_BITS  # CPUID.1 ECX bit 19 is SSE4.1, and OpenSSL ignores it
    assert describe_mask("~0x200000200000000") == "AES-NI & PCLMULQDQ off"
    assert describe_mask("~0x4000000") == "SSE2 off"
