"""Every OpenSSL series from the seed reports: 0.9.8, 1.0.0, 1.0.1, 1.1.0 and 3.0."""

from __future__ import annotations

from pathlib import Path

import pytest

from openssl_matrix.parse import parse_paste, parse_speed
from openssl_matrix.parse.figures import (
    STATUS_INFINITE,
    STATUS_OK,
    STATUS_SUSPECT_TIME_BASIS,
    STATUS_ZERO,
)

from .test_parsing import one

SEEDS = Path(__file__).resolve().parents[1] / "fixtures" / "speed" / "seeds"


def text(name: str) -> str:
    return (SEEDS / name).read_text()




# --- 0.9.8 ------------------------------------------------------------------------------


def test_0_9_8s_flattened_legacy_and_evp_tables() -> None:
    legacy, evp = parse_paste(text("000-0.9.8s-asm.flat.txt"))
    h = legacy.header
    assert h.version_line == "OpenSSL 0.9.8s xx XXX xxxx"
    assert h.version == "0.9.8s"
    assert h.built_on == "Tue Dec 6 15:34:52 CET 2011"
    assert h.platform == "linux-x86_64"
    assert (
        h.options == "bn(64,64) md2(int) rc4(1x,char) des(idx,cisc,16,int) idea(int) blowfish(idx)"
    )
    assert h.compiler is not None and h.compiler.endswith("-DMD5_ASM -DAES_ASM")
    assert [f.block_size for f in legacy.figures[:5]] == [16, 64, 256, 1024, 8192]
    assert one(legacy, "rc4", size=16).bytes_per_s == 365479360.0
    assert one(legacy, "aes-128-cbc", size=8192).bytes_per_s == 268593830.0
    assert one(legacy, "aes-128-cbc", size=8192).evp is False
    assert one(legacy, "rc4", size=16).evp is False  # the command had no -evp
    # the second table was pasted under the same header, from `speed -evp rc4` etc.
    assert evp.header.version == "0.9.8s"
    assert any("header of the run above" in w for w in evp.warnings)
    assert one(evp, "rc4", size=8192).bytes_per_s == 388210390.0
    assert one(evp, "rc4", size=8192).evp is True  # named after -evp on its command line
    assert one(evp, "aes-256-cbc", size=16).bytes_per_s == 143636490.0
    assert len(legacy.figures) == len(evp.figures) == 15


def test_0_9_8y_timing_lines() -> None:
    (run,) = parse_paste(text("003-0.9.8y.flat.txt"))
    h = run.header
    assert h.version_line == "OpenSSL 0.9.8y 5 Feb 2013 (9.1-BETA1)"
    assert h.version == "0.9.8y"
    assert h.built_on == "date not available"
    assert h.compiler == "cc"
    assert h.timing_options == "USE_TOD HZ=128 [sysconf value]"
    assert h.timing_function == "getrusage"
    assert h.elapsed is None  # no progress lines were pasted: cannot tell
    assert [f.bytes_per_s for f in run.figures] == [
        58919920.0, 62134880.0, 62611080.0, 62776470.0, 62910030.0,
    ]  # fmt: skip


# --- 1.0.0 and 1.0.1 -----------------------------------------------------------------------


def test_1_0_0_dev() -> None:
    legacy, evp = parse_paste(text("000-1.0.0f-asm.flat.txt"))
    assert legacy.header.version == "1.0.0f-dev"
    assert one(legacy, "aes-128-cbc", size=8192).bytes_per_s == 114088720.0
    assert one(evp, "aes-128-cbc", size=8192).bytes_per_s == 114186620.0


def test_1_0_1_dev_aesni_only_on_evp_path() -> None:
    legacy, evp = parse_paste(text("000-1.0.1-dev-asm.flat.txt"))
    assert legacy.header.version == "1.0.1-dev"
    low = one(legacy, "aes-128-cbc", size=8192)
    high = one(evp, "aes-128-cbc", size=8192)
    assert (low.evp, low.bytes_per_s) == (False, 114555600.0)
    assert (high.evp, high.bytes_per_s) == (True, 670826170.0)


def test_1_0_1_without_any_header() -> None:
    legacy, evp = parse_paste(text("000-1.0.1-dev-noaesni.flat.txt"))
    assert legacy.header.version is None  # nothing above to inherit from
    assert one(legacy, "rc4", size=16).bytes_per_s == 387707670.0
    assert one(evp, "aes-256-cbc", size=8192).bytes_per_s == 255108200.0
    assert one(evp, "aes-256-cbc", size=8192).evp is True


def test_1_0_1e_seed_001_exact() -> None:
    run = parse_speed(text("001-1.0.1e-aesni.txt"))
    h = run.header
    assert h.version_line == "OpenSSL 1.0.1e 11 Feb 2013"
    assert h.version == "1.0.1e"
    assert h.built_on == "Sun Oct 20 14:49:13 CEST 2013"
    assert (
        h.options
        == "bn(64,64) rc4(16x,int) des(idx,cisc,16,int) aes(partial) idea(int) blowfish(idx)"
    )
    assert h.elapsed is True
    fig = one(run, "aes-128-cbc", size=8192)
    assert fig.bytes_per_s == 333987840.0  # 333987.84k
    assert fig.ops_per_s == pytest.approx(333987840.0 / 8192)
    assert fig.evp is True
    assert [p.count for p in run.progress] == [57196857, 15343650, 3897351, 978726, 122310]
    assert all(p.seconds_requested == 3.0 and p.seconds_reported == 3.0 for p in run.progress)
    masked = parse_speed(text("001-1.0.1e-noaesni.txt"))
    assert one(masked, "aes-128-cbc", size=8192).bytes_per_s == 170519210.0


def test_1_0_1e_freebsd_17_gb_per_s_is_suspect() -> None:
    (run,) = parse_paste(text("003-1.0.1e-freebsd-cryptodev-usertime.flat.txt"))
    assert run.header.version == "1.0.1e-freebsd"
    assert run.header.elapsed is False
    fig = one(run, "aes-256-cbc", size=8192)
    assert fig.bytes_per_s == 17858822140.0  # as printed, never altered
    assert fig.status == STATUS_SUSPECT_TIME_BASIS
    assert "0.05s for a 3s run" in fig.detail
    assert {f.status for f in run.figures} == {STATUS_SUSPECT_TIME_BASIS}
    assert any("time basis" in w and "-elapsed" in w for w in run.warnings)
    (elapsed,) = parse_paste(text("003-1.0.1e-freebsd-cryptodev-elapsed.flat.txt"))
    assert elapsed.header.elapsed is True
    assert {f.status for f in elapsed.figures} == {STATUS_OK}
    assert one(elapsed, "aes-256-cbc", size=8192).bytes_per_s == 279819610.0


# --- 1.1.0 -------------------------------------------------------------------------------


def test_1_1_0l_full_table() -> None:
    run = parse_speed(text("004-1.1.0l-no-asm-x86.txt"))
    assert run.header.version == "1.1.0l"
    assert run.header.built_on == "reproducible build, date unspecified"
    assert len(run.figures) == 29 * 6 + 7 * 2 + 3 * 2
    md2 = [f for f in run.figures if f.algorithm == "md2"]
    assert [(f.status, f.bytes_per_s) for f in md2] == [(STATUS_ZERO, None)] * 6
    assert one(run, "rc5-cbc", size=16).status == STATUS_ZERO
    assert one(run, "idea-cbc", size=8192).bytes_per_s == 9684210.0
    assert one(run, "hmac-md5", size=16384).bytes_per_s == 79107410.0
    assert one(run, "des-cbc", size=16).evp is False
    assert one(run, "sha256", size=16).evp is None  # same name on both paths, no hint
    # the rate column says 0.0; the seconds column 33.060000s is the precise form
    slow = one(run, "rsa-15360", op="sign")
    assert slow.status == STATUS_OK
    assert slow.ops_per_s == pytest.approx(1 / 33.06)
    assert slow.seconds_per_op == 33.06
    assert one(run, "rsa-2048", op="verify").ops_per_s == 352.7
    assert one(run, "dsa-1024", op="sign").ops_per_s == pytest.approx(1 / 0.011801)


def test_1_1_0l_ecdsa_ecdh_bit_rows_and_inf() -> None:
    run = parse_speed(text("004-1.1.0l-netbsd-no-asm.txt"))
    assert one(run, "ecdsa-p256", op="sign").label == "256 bit ecdsa (nistp256)"
    assert one(run, "ecdsa-p256", op="sign").ops_per_s == 53.7
    assert one(run, "ecdsa-secp160r1", op="verify").ops_per_s == 127.1
    assert one(run, "ecdh-k163").ops_per_s == 140.4
    x25519 = one(run, "ecdh-x25519")
    assert (x25519.status, x25519.ops_per_s) == (STATUS_INFINITE, None)
    assert "inf" in x25519.detail
    assert one(run, "ecdsa-b571", op="sign").evp is False


def test_1_1_0l_afalg_user_time_is_suspect() -> None:
    (run,) = parse_paste(text("004-1.1.0l-afalg-usertime.flat.txt"))
    assert [f.block_size for f in run.figures] == [16, 64, 256, 1024, 8192, 16384]
    assert {f.status for f in run.figures} == {STATUS_SUSPECT_TIME_BASIS}
    assert one(run, "aes-128-cbc", size=16384).bytes_per_s == 4959436800.0
    assert [p.seconds_reported for p in run.progress] == [0.25, 0.27, 0.23, 0.24, 0.16, 0.11]


# --- 3.0 ---------------------------------------------------------------------------------


def test_3_0_2_every_table() -> None:
    run = parse_speed(text("004-3.0.2-asm-ryzen.txt"))
    h = run.header
    assert (h.version_line, h.version) == ("version: 3.0.2", "3.0.2")
    assert h.cpuinfo == "OPENSSL_ia32cap=0xdef82203078bffff:0x840021"
    assert h.options == "bn(64,64)"
    assert len(run.figures) == 25 * 6 + 7 * 2 + 3 * 2 + 22 * 2 + 24 + 2 * 2 + 2 + 5
    assert all(f.evp is True for f in run.figures)
    assert one(run, "bf-cbc", size=16).label == "blowfish"
    assert one(run, "des-ede3-cbc", size=64).bytes_per_s == 34008000.0
    assert one(run, "ghash", size=16384).bytes_per_s == 9173494440.0
    assert one(run, "aes-256-cbc", size=8192).bytes_per_s == 1097910950.0
    assert one(run, "rsa-4096", op="verify").ops_per_s == 12105.3
    p256 = one(run, "ecdsa-p256", op="sign")
    assert (p256.ops_per_s, p256.seconds_per_op) == (50187.2, 0.0)
    assert one(run, "ecdsa-brainpoolp512t1", op="verify").ops_per_s == 951.9
    assert one(run, "ecdh-x448").ops_per_s == 6306.2
    assert one(run, "ed448", op="sign").ops_per_s == 5386.3
    assert one(run, "sm2", op="verify").ops_per_s == 3320.2
    assert one(run, "ffdh-8192").ops_per_s == pytest.approx(1 / 0.1529)
    assert {f.status for f in run.figures} == {STATUS_OK}


def test_3_0_2_cpuinfo_not_available() -> None:
    run = parse_speed(text("004-3.0.2-no-asm-x86.txt"))
    assert run.header.cpuinfo == "N/A"
    assert one(run, "ffdh-6144").ops_per_s == pytest.approx(1 / 8.64)
    assert one(run, "ecdh-x25519").ops_per_s == 223.7


# --- cross-checks --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "001-1.0.1e-aesni.txt",
        "001-1.0.1e-noaesni.txt",
        "003-1.0.1e-freebsd-cryptodev-usertime.flat.txt",
        "003-1.0.1e-freebsd-cryptodev-elapsed.flat.txt",
        "004-1.1.0l-afalg-usertime.flat.txt",
    ],
)
def test_figures_agree_with_their_progress_lines(name: str) -> None:
    (run,) = parse_paste(text(name))
    for progress in run.progress:
        fig = one(run, "aes-256-cbc" if "256" in progress.label else "aes-128-cbc",
                  size=progress.block_size)  # fmt: skip
        expected = progress.count * (progress.block_size or 0) / progress.seconds_reported
        rounding = 0.005 / progress.seconds_reported  # the time is printed with %.2f
        assert fig.bytes_per_s == pytest.approx(expected, rel=rounding + 1e-3)
