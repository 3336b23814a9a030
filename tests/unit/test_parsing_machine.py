"""-mr across the unit flip, 3.2+ tables (real 3.6.3) and -multi (real 3.0.20)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openssl_matrix.parse import parse_speed
from openssl_matrix.parse.figures import (
    STATUS_INFINITE,
    STATUS_OK,
    STATUS_SUSPECT_TIME_BASIS,
    STATUS_UNIDENTIFIED,
    STATUS_UNKNOWN_UNIT,
    STATUS_ZERO,
    Figure,
    SpeedRun,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "speed"


def load(case: str, *, version: str | None = None, stderr: bool = True) -> SpeedRun:
    out = (FIXTURES / f"{case}.stdout").read_text()
    err_path = FIXTURES / f"{case}.stderr"
    err = err_path.read_text() if stderr and err_path.exists() else ""
    return parse_speed(out, err, version=version)


def one(run: SpeedRun, algorithm: str, *, size: int | None = None, op: str | None = None) -> Figure:
    found = [
        f
        for f in run.figures
        if f.algorithm == algorithm
        and (size is None or f.block_size == size)
        and (op is None or f.operation == op)
    ]
    assert len(found) == 1, found
    return found[0]


# --- before the flip: seconds per operation (hand-written from speed.c, see README) ----


def test_1_1_0_mr_public_key_is_seconds_per_op() -> None:
    run = load("handwritten-mr/1.1.0l-seed004-A1", version="1.1.0l")
    sign = one(run, "rsa-2048", op="sign")
    assert sign.seconds_per_op == 0.113258
    assert sign.ops_per_s == pytest.approx(1 / 0.113258)
    assert sign.status == STATUS_OK
    assert sign.evp is False
    assert one(run, "rsa-15360", op="sign").ops_per_s == pytest.approx(1 / 33.06)
    assert one(run, "dsa-2048", op="verify").ops_per_s == pytest.approx(1 / 0.034567)


def test_1_1_0_mr_symmetric_rows_by_name_and_index() -> None:
    run = load("handwritten-mr/1.1.0l-seed004-A1", version="1.1.0l")
    assert one(run, "md5", size=8192).bytes_per_s == 80191490.0
    assert one(run, "idea-cbc", size=16).label == "idea cbc"
    assert one(run, "sha256", size=16).evp is False  # +F:23, not the EVP row 22
    assert {f.status for f in run.figures if f.algorithm == "md2"} == {STATUS_ZERO}


def test_1_1_0_mr_without_version_refuses_to_guess() -> None:
    run = load("handwritten-mr/1.1.0l-seed004-A1")
    rsa = one(run, "rsa-2048", op="sign")
    assert (rsa.status, rsa.ops_per_s) == (STATUS_UNKNOWN_UNIT, None)
    assert "pass version=" in rsa.detail
    # symmetric +F records are bytes/s in every version
    assert one(run, "md5", size=8192).bytes_per_s == 80191490.0


def test_1_1_0_mr_curves_from_the_1_1_0_table() -> None:
    run = load("handwritten-mr/1.1.0l-seed004-Z1", version="1.1.0l")
    assert one(run, "ecdsa-p256", op="sign").ops_per_s == pytest.approx(1 / 0.0186)
    assert one(run, "ecdsa-k163", op="verify").seconds_per_op == 0.0147
    assert one(run, "ecdh-b571").ops_per_s == 6.3  # +F5 carries seconds and 1/seconds
    x25519 = one(run, "ecdh-x25519")  # index 16 in 1.1.0, 22 from 1.1.1
    assert (x25519.status, x25519.ops_per_s) == (STATUS_INFINITE, None)


def test_curve_index_that_disagrees_with_bits_is_refused() -> None:
    run = parse_speed("+F4:3:384:100.000000:50.000000\n", version="3.0.20")
    fig = run.figures[0]
    assert fig.status == STATUS_UNIDENTIFIED
    assert fig.ops_per_s is None


def test_1_1_0_mr_afalg_user_time_is_suspect() -> None:
    run = load("handwritten-mr/1.1.0l-seed004-afalg", version="1.1.0l")
    assert {f.status for f in run.figures} == {STATUS_SUSPECT_TIME_BASIS}
    assert {f.evp for f in run.figures} == {True}
    assert one(run, "aes-128-cbc", size=8192).bytes_per_s == 2753075200.0
    assert run.header.elapsed is None  # -mr never prints the elapsed notice
    assert len(run.warnings) == 1


def test_1_0_1_mr_five_sizes() -> None:
    run = load("handwritten-mr/1.0.1e-seed001", version="1.0.1e")
    assert [f.block_size for f in run.figures] == [16, 64, 256, 1024, 8192]
    assert one(run, "aes-128-cbc", size=8192).bytes_per_s == 333987840.0
    assert [p.count for p in run.progress] == [57196857, 15343650, 3897351, 978726, 122310]


# --- 3.2+ (real 3.6.3) ---------------------------------------------------------------


def test_3_6_human_four_rsa_operations_and_kem_sig_tables() -> None:
    run = load("real-3.6.3/evp-kem-sig-elapsed")
    assert run.header.version == "3.6.3"
    assert run.header.elapsed is True
    rsa = [f for f in run.figures if f.algorithm == "rsa-2048"]
    assert [(f.operation, f.ops_per_s) for f in rsa] == [
        ("sign", 3688.0),
        ("verify", 53526.0),
        ("encrypt", 42287.0),
        ("decrypt", 2311.0),
    ]
    assert one(run, "kem-ml-kem-768", op="encaps").ops_per_s == 26709.9
    assert one(run, "kem-rsa2048", op="decaps").ops_per_s == 2478.2
    # keygen: 14.3/s printed; 0.070000s is the more precise form
    assert one(run, "kem-rsa2048", op="keygen").ops_per_s == pytest.approx(1 / 0.07)
    assert one(run, "sig-ml-dsa-65", op="sign").ops_per_s == 490.1
    assert one(run, "sig-rsa2048", op="verify").ops_per_s == 29201.0
    assert one(run, "aes-128-cbc", size=16).bytes_per_s == 946524000.0
    assert len(run.figures) == 12 + 4 + 2 + 1 + 2 + 1 + 6 + 6
    kem = [p for p in run.progress if p.family == "kem"]
    assert [(p.label, p.operation, p.count) for p in kem[:2]] == [
        ("rsa2048 keygen", "keygen", 15),
        ("rsa2048 encaps", "encaps", 31745),
    ]


def test_3_6_mr_four_value_f2_and_named_f9_f10() -> None:
    run = load("real-3.6.3/mr-evp-kem-sig-elapsed", version="3.6.3")
    rsa = [f for f in run.figures if f.algorithm == "rsa-2048"]
    assert [f.ops_per_s for f in rsa] == [1975.0, 30199.0, 27920.0, 2182.0]
    assert one(run, "kem-ml-kem-768", op="keygen").ops_per_s == 12062.0
    assert one(run, "kem-rsa2048", op="keygen").ops_per_s == 10.185185
    assert one(run, "sig-ml-dsa-65", op="verify").ops_per_s == 2208.910891
    assert one(run, "sig-rsa2048", op="sign").ops_per_s == 1669.0
    assert one(run, "ecdh-x25519").ops_per_s == 14180.0
    assert one(run, "ffdh-2048").ops_per_s == 1651.0
    assert {f.status for f in run.figures} == {STATUS_OK}


def test_3_6_mr_kem_without_stderr_is_unidentified() -> None:
    run = load("real-3.6.3/mr-evp-kem-sig-elapsed", version="3.6.3", stderr=False)
    kem = [f for f in run.figures if f.algorithm.startswith(("kem-", "sig-"))]
    assert len(kem) == 12
    assert {(f.status, f.ops_per_s) for f in kem} == {(STATUS_UNIDENTIFIED, None)}
    assert one(run, "rsa-2048", op="decrypt").status == STATUS_OK


# --- -multi ---------------------------------------------------------------------------


def test_multi_table_without_type_header() -> None:
    run = load("real-3.0.20/multi2-evp")
    assert run.header.elapsed is True  # children measure wall time
    assert [f.block_size for f in run.figures] == [16, 64, 256, 1024, 8192, 16384]
    assert one(run, "aes-128-cbc", size=16).bytes_per_s == 1079231890.0
    assert any("-multi" in w for w in run.warnings)
    assert not run.machine_readable  # the children's 'Got: +F' echoes are not figures
