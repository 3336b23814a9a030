"""parse_speed against real outputs of 1.1.1w and 3.0.20 (human and -mr)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from openssl_matrix.core.errors import ParseError
from openssl_matrix.parse import figure_records, parse_speed
from openssl_matrix.parse.figures import (
    STATUS_OK,
    Figure,
    SpeedRun,
    canonical_algorithm,
    version_tuple,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "speed"


def load(case: str, *, version: str | None = None, evp: bool | None = None) -> SpeedRun:
    """Parse the stdout/stderr pair ``<case>.stdout`` / ``<case>.stderr``."""
    stdout = (FIXTURES / f"{case}.stdout").read_text()
    stderr_path = FIXTURES / f"{case}.stderr"
    stderr = stderr_path.read_text() if stderr_path.exists() else ""
    return parse_speed(stdout, stderr, version=version, evp=evp)


def one(run: SpeedRun, algorithm: str, *, size: int | None = None, op: str | None = None,
        label: str | None = None) -> Figure:  # fmt: skip
    found = [
        f
        for f in run.figures
        if f.algorithm == algorithm
        and (size is None or f.block_size == size)
        and (op is None or f.operation == op)
        and (label is None or f.label == label)
    ]
    assert len(found) == 1, found
    return found[0]


# --- 3.0.20 human --------------------------------------------------------------------


def test_3_0_human_header() -> None:
    run = load("real-3.0.20/evp-elapsed")
    h = run.header
    assert h.version_line == "version: 3.0.20"
    assert h.version == "3.0.20"
    assert h.built_on == "Sat Jun  6 19:56:20 2026 UTC"
    assert h.options == "bn(64,64)"
    assert h.compiler is not None and h.compiler.startswith("gcc -fPIC -pthread -m64")
    assert h.cpuinfo == "OPENSSL_ia32cap=0xfffa3203078bffff:0x405fc6f1bf07ab"
    assert h.elapsed is True
    assert not run.machine_readable
    assert run.warnings == ()


def test_3_0_human_symmetric_exact() -> None:
    run = load("real-3.0.20/evp-elapsed")
    fig = one(run, "aes-128-cbc", size=16384)
    assert fig.label == "AES-128-CBC"
    assert fig.bytes_per_s == 1429209090.0  # "1429209.09k"
    assert fig.ops_per_s == pytest.approx(1429209090.0 / 16384)
    assert fig.evp is True
    assert fig.status == STATUS_OK
    assert fig.raw == "1429209.09k"
    assert one(run, "sha256", size=16).bytes_per_s == 123895890.0
    sizes = [f.block_size for f in run.figures if f.algorithm == "sha256"]
    assert sizes == [16, 64, 256, 1024, 8192, 16384]


def test_3_0_human_public_key() -> None:
    run = load("real-3.0.20/evp-elapsed")
    sign = one(run, "rsa-2048", op="sign")
    assert (sign.ops_per_s, sign.seconds_per_op, sign.bits) == (4127.0, 0.000242, 2048)
    assert sign.block_size is None and sign.bytes_per_s is None
    assert one(run, "rsa-2048", op="verify").ops_per_s == 61813.0
    assert one(run, "ecdsa-p256", op="sign").ops_per_s == 51169.0
    assert one(run, "ecdsa-p256", op="verify").ops_per_s == 16382.0
    ecdh = one(run, "ecdh-p256")
    assert (ecdh.operation, ecdh.ops_per_s, ecdh.label) == (
        "op",
        21354.0,
        "256 bits ecdh (nistp256)",
    )
    assert one(run, "ed25519", op="sign").ops_per_s == 26992.0
    assert all(f.evp is True for f in run.figures)


def test_3_0_human_more_tables() -> None:
    run = load("real-3.0.20/usertime-pk")
    assert run.header.elapsed is False
    assert one(run, "hmac-md5", size=64).bytes_per_s == 163335740.0
    assert one(run, "des-ede3-cbc", size=16).label == "des-ede3"
    assert one(run, "dsa-2048", op="verify").ops_per_s == 4530.0
    assert one(run, "ecdsa-brainpoolp256r1", op="sign").ops_per_s == 2863.0
    assert one(run, "ecdh-x25519").ops_per_s == 28569.0
    assert one(run, "sm2", op="verify").ops_per_s == 2668.0
    assert one(run, "ffdh-2048").ops_per_s == 3294.0
    assert len(run.figures) == 3 * 6 + 2 + 2 + 2 + 1 + 2 + 1


def test_3_0_progress_lines() -> None:
    run = load("real-3.0.20/evp-elapsed")
    first = run.progress[0]
    assert (first.label, first.seconds_requested, first.block_size) == ("sha256", 1.0, 16)
    assert (first.count, first.seconds_reported) == (7743493, 1.0)
    rsa = [p for p in run.progress if p.family == "rsa"]
    assert [(p.operation, p.bits, p.count) for p in rsa] == [
        ("sign", 2048, 4127),
        ("verify", 2048, 61813),
    ]
    ecdh = [p for p in run.progress if p.family == "ecdh"]
    assert [(p.operation, p.bits, p.count) for p in ecdh] == [("op", 256, 21354)]
    assert len(run.progress) == 12 + 2 + 2 + 1 + 2


# --- 3.0.20 -mr ----------------------------------------------------------------------


def test_3_0_machine_readable() -> None:
    run = load("real-3.0.20/mr-evp-elapsed", version="3.0.20")
    assert run.machine_readable
    assert run.header.version == "3.0.20"
    assert run.header.version_line is None
    assert run.header.elapsed is None  # -mr does not print the notice
    assert one(run, "aes-128-cbc", size=16).bytes_per_s == 1054815792.0  # bytes, not k
    assert one(run, "sha256", size=8192).bytes_per_s == 1742675968.0
    assert one(run, "rsa-2048", op="sign").ops_per_s == 4063.0
    assert one(run, "rsa-2048", op="verify").ops_per_s == 60905.0
    assert one(run, "ecdsa-p256", op="sign").ops_per_s == 51199.0  # index 3 -> nistp256
    assert one(run, "ecdh-p256").ops_per_s == 21839.0
    assert one(run, "ed25519", op="verify").ops_per_s == 9353.0
    assert all(f.status == STATUS_OK for f in run.figures)
    assert len(run.progress) == 19
    assert run.progress[-1].count == 9353


def test_3_0_machine_readable_curves_by_index() -> None:
    run = load("real-3.0.20/mr-usertime-pk", version="3.0.20")
    assert one(run, "ecdsa-brainpoolp256r1", op="verify").ops_per_s == 3151.515152
    assert one(run, "ecdh-x25519").ops_per_s == 29135.0  # +F5:22:253
    assert one(run, "sm2", op="sign").ops_per_s == 2920.0
    assert one(run, "ffdh-2048").ops_per_s == 3649.0
    assert one(run, "rsa-1024", op="sign").ops_per_s == 12230.30303


def test_3_0_mr_without_version_is_still_rates_for_late_records() -> None:
    stdout = (FIXTURES / "real-3.0.20/mr-usertime-pk.stdout").read_text()
    run = parse_speed(stdout)  # no version, no stderr
    assert one(run, "sm2", op="sign").status == STATUS_OK  # +F7 exists only from 3.0
    rsa = one(run, "rsa-1024", op="sign")
    assert (rsa.status, rsa.ops_per_s) == ("unknown-unit", None)
    assert any("version" in w for w in run.warnings)


def test_mr_unit_from_progress_when_version_unknown() -> None:
    run = load("real-3.0.20/mr-usertime-pk")  # stderr has +R1:<count>:1024:<secs>
    rsa = one(run, "rsa-1024", op="sign")
    assert (rsa.status, rsa.ops_per_s) == (STATUS_OK, 12230.30303)
    assert any("unit taken from the progress lines" in w for w in run.warnings)


# --- 1.1.1w ---------------------------------------------------------------------------


def test_1_1_1_human_legacy_and_evp_rows() -> None:
    run = load("real-1.1.1w/evp-elapsed")
    assert run.header.version_line == "OpenSSL 1.1.1w  11 Sep 2023"
    assert run.header.version == "1.1.1w"
    assert (
        run.header.options == "bn(64,64) rc4(8x,int) des(int) aes(partial) idea(int) blowfish(ptr)"
    )
    legacy = one(run, "aes-128-cbc", size=16, label="aes-128 cbc")
    evp = one(run, "aes-128-cbc", size=16, label="aes-128-cbc")
    assert (legacy.evp, legacy.bytes_per_s) == (False, 208570350.0)
    assert (evp.evp, evp.bytes_per_s) == (True, 523607840.0)
    # sha256 prints the same name on both paths, but 1.x has one EVP row: aes-128-cbc
    assert one(run, "sha256", size=16).evp is False
    assert one(run, "rsa-2048", op="sign").evp is False  # RSA_sign
    assert one(run, "ecdh-p256").evp is True  # EVP_PKEY_derive from 1.1.1
    assert one(run, "ecdsa-p256", op="sign").ops_per_s == 23723.8


def test_1_1_1_machine_readable_rates() -> None:
    run = load("real-1.1.1w/mr-evp-elapsed", version="1.1.1w")
    assert one(run, "aes-128-cbc", size=256, label="aes-128-cbc").bytes_per_s == 614749528.71
    assert one(run, "aes-128-cbc", size=256, label="aes-128 cbc").evp is False
    # sha256 is +F:23, not the EVP row (+F:22 in 1.0.0..1.1.1)
    assert one(run, "sha256", size=16).evp is False
    assert one(run, "rsa-2048", op="sign").ops_per_s == 1015.0  # ops/s from 1.1.1
    assert one(run, "ed25519", op="sign").ops_per_s == 25532.673267
    ecdh = one(run, "ecdh-p256")
    assert (ecdh.ops_per_s, ecdh.seconds_per_op) == (16186.0, 0.000062)


def test_1_1_1_usertime_on_busy_host_is_not_suspect() -> None:
    run = load("real-1.1.1w/usertime-pk")
    assert run.header.elapsed is False
    ratios = [p.time_ratio for p in run.progress]
    assert min(r for r in ratios if r is not None) == pytest.approx(0.41)
    assert all(f.status == STATUS_OK for f in run.figures)
    assert one(run, "rsa-1024", op="verify").ops_per_s == 193765.9


def test_1_1_1_bytes_single_column() -> None:
    run = load("real-1.1.1w/bytes1024")
    (fig,) = run.figures
    assert (fig.algorithm, fig.block_size, fig.bytes_per_s) == ("sha256", 1024, 1121499140.0)


# --- units, names, errors --------------------------------------------------------------


def test_values_below_10000_are_bytes_not_thousands() -> None:
    out = "type 16 bytes 64 bytes\nmd2 0.00 9876.54 \n"
    run = parse_speed(out)
    zero, small = run.figures
    assert (zero.status, zero.bytes_per_s, zero.ops_per_s) == ("zero", None, None)
    assert small.bytes_per_s == 9876.54
    assert small.status == STATUS_OK


@pytest.mark.parametrize(
    ("label", "algorithm"),
    [
        ("aes-128 cbc", "aes-128-cbc"),
        ("aes-128-cbc", "aes-128-cbc"),
        ("AES-128-CBC", "aes-128-cbc"),
        ("idea cbc", "idea-cbc"),
        ("hmac(md5)", "hmac-md5"),
        ("rc5-32/12 cbc", "rc5-cbc"),
        ("des ede3", "des-ede3-cbc"),
        ("blowfish cbc", "bf-cbc"),
        ("blowfish", "bf-cbc"),
        ("cast cbc", "cast5-cbc"),
        ("rmd160", "ripemd160"),
        ("camellia-256 cbc", "camellia-256-cbc"),
        ("evp", "evp"),
    ],
)
def test_canonical_algorithm(label: str, algorithm: str) -> None:
    assert canonical_algorithm(label) == algorithm


def test_version_tuple() -> None:
    assert version_tuple("1.0.0f-dev") == (1, 0, 0)
    assert version_tuple("OpenSSL 1.1.1w  11 Sep 2023") == (1, 1, 1)
    assert version_tuple("3.0.2") == (3, 0, 2)
    assert version_tuple("garbage") is None


def test_not_speed_output_raises() -> None:
    with pytest.raises(ParseError):
        parse_speed("Usage: openssl speed [options] [algorithm...]\n", "bad option\n")
    with pytest.raises(ParseError):
        parse_speed("", "")


def test_figure_records_are_json() -> None:
    run = load("real-3.0.20/usertime-pk")
    records = figure_records(run)
    assert len(records) == len(run.figures)
    text = json.dumps(records, allow_nan=False)
    first = json.loads(text)[0]
    for key in ("algorithm", "label", "evp", "block_size", "bytes_per_s", "ops_per_s",
                "operation", "status", "detail"):  # fmt: skip
        assert key in first
    assert not any(
        isinstance(v, float) and not math.isfinite(v) for r in records for v in r.values()
    )


def test_public_key_time_basis_and_degenerate_rows() -> None:
    stderr = (
        "Doing 2048 bits private rsa's for 10s: 400 2048 bits private RSA's in 0.50s\n"
        "Doing 2048 bits public rsa's for 10s: 90000 2048 bits public RSA's in 9.90s\n"
        "Doing 256 bits  ecdh's for 10s: 0 256-bits ECDH ops in 10.00s\n"
    )
    stdout = (
        "version: 3.0.20\n"
        "                  sign    verify    sign/s verify/s\n"
        "rsa 2048 bits 0.001250s 0.000110s    800.0   9090.9\n"
        "                              op      op/s\n"
        " 256 bits ecdh (nistp256)      infs      0.0\n"
        "                              sign    verify    sign/s verify/s\n"
        " 253 bits EdDSA (Ed25519)   0.0000s   0.0000s      inf      inf\n"
    )
    run = parse_speed(stdout, stderr)
    sign = one(run, "rsa-2048", op="sign")
    assert (sign.status, sign.ops_per_s) == ("suspect-time-basis", 800.0)
    assert one(run, "rsa-2048", op="verify").status == STATUS_OK
    ecdh = one(run, "ecdh-p256")
    assert (ecdh.status, ecdh.ops_per_s) == ("zero", None)
    ed = one(run, "ed25519", op="sign")
    assert (ed.status, ed.ops_per_s) == ("infinite", None)
    assert any("time basis" in w for w in run.warnings)


def test_version_hint_may_be_the_openssl_version_line() -> None:
    stdout = (FIXTURES / "real-1.1.1w/mr-evp-elapsed.stdout").read_text()
    run = parse_speed(stdout, version="OpenSSL 1.1.1w  11 Sep 2023")
    assert run.header.version == "1.1.1w"
    assert one(run, "rsa-2048", op="sign").ops_per_s == 1015.0


def test_1_x_digest_row_alone_needs_the_evp_hint() -> None:
    stdout = "OpenSSL 1.1.1w  11 Sep 2023\ntype 16 bytes\nsha256 123.45k\n"
    assert parse_speed(stdout).figures[0].evp is None
    assert parse_speed(stdout, evp=True).figures[0].evp is True
    assert parse_speed(stdout, evp=False).figures[0].evp is False
