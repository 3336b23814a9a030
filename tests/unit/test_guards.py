"""Guards: pure checks against real outputs (tests/fixtures/guards) and the seed reports."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from openssl_matrix.core import statuses
from openssl_matrix.core.units import cycles
from openssl_matrix.matrix.isa import (
    IA32CAP_BITS,
    capabilities_of,
    parse_cpuinfo_line,
    render_ia32cap,
)
from openssl_matrix.measure.benchfigure import BenchFigure, bench_figures
from openssl_matrix.measure.guards import (
    Finding,
    apply_findings,
    cpu_compat_problems,
    engine_findings,
    engine_vs_builtin_findings,
    legacy_path_findings,
    mask_effect_findings,
    mask_syntax_findings,
    mask_vector_findings,
    measured_cpu_sets,
    profile_cpu_sets,
    read_engine_check,
    spread,
    time_basis_findings,
)
from openssl_matrix.measure.invocation import CpuTimes, split_times
from openssl_matrix.parse import figure_records, parse_speed

from ..values import num

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "guards"
EPYC_FLAGS = ["fpu", "cmov", "mmx", "sse", "sse2", "nopl", "pni", "pclmulqdq", "ssse3", "fma",
              "sse4_1", "sse4_2", "movbe", "popcnt", "aes", "avx", "f16c", "rdrand", "abm",
              "bmi1", "avx2", "bmi2", "rdseed", "adx", "avx512f", "sha_ni"]


def read(name: str) -> str:
    return (FIX / name).read_text()


# -- engines ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.1.1w", "3.0.20"])
def test_afalg_that_fails_to_init_is_not_engaged(version: str) -> None:
    d = f"real-{version}"
    check = read_engine_check("afalg", 1, read(f"{d}/engine-check--afalg.stdout"),
                              read(f"{d}/engine-check--afalg.stderr"))
    assert check.available is False
    assert "init failed" in check.detail
    stderr, _ = split_times(read(f"{d}/speed-afalg.stderr"))
    run = parse_speed(read(f"{d}/speed-afalg.stdout"), stderr, version=version, evp=True)
    recs = bench_figures(figure_records(run))
    assert recs and num(recs[0]["bytes_per_s"]) > 1e8  # speed printed numbers and exited 0 ...
    found = engine_findings("native--afalg--aes-128-cbc", "afalg", check, stderr)
    assert [f.code for f in found] == [statuses.ENGINE_NOT_ENGAGED]  # ... from the software
    assert "invalid engine" in found[0].message.lower()
    assert "init failed" in found[0].message
    recs = apply_findings([rec.with_(invocation="native--afalg--aes-128-cbc")
                           for rec in recs], found)
    assert recs[0]["status"] == statuses.ENGINE_NOT_ENGAGED
    assert recs[0]["bytes_per_s"] == run.figures[0].bytes_per_s  # the value is kept


def test_padlock_unavailable_and_missing_engine_command() -> None:
    d = "real-1.1.1w"
    check = read_engine_check("padlock", 0, read(f"{d}/engine-check--padlock.stdout"),
                              read(f"{d}/engine-check--padlock.stderr"))
    assert check.available is False and "[ unavailable ]" in check.detail
    # speed does not complain about padlock: the -t verdict alone marks the figures
    found = engine_findings("x", "padlock", check, "+DT:aes-128-cbc:1:8192\n")
    assert [f.code for f in found] == [statuses.ENGINE_NOT_ENGAGED]
    none = read_engine_check("afalg", 1, "", "Invalid command 'engine'; type \"help\" for a "
                             "list.\n")
    assert none.available is None
    assert [f.code for f in engine_findings("x", "afalg", none, "")] == \
        [statuses.ENGINE_UNVERIFIED]
    ok = read_engine_check("afalg", 0, "(afalg) AFALG engine support\n     [ available ]\n", "")
    assert ok.available is True and engine_findings("x", "afalg", ok, "") == []


def test_engine_figures_equal_to_builtin_are_unverified() -> None:
    def fig(rate: float) -> list[BenchFigure]:
        return [BenchFigure.of(algorithm="aes-128-cbc", block_size=8192, bytes_per_s=rate)]

    soft, same, kernel = fig(1.000e9), fig(1.012e9), fig(2.0e9)
    assert [f.code for f in engine_vs_builtin_findings("i", "afalg", same, soft)] == \
        [statuses.ENGINE_UNVERIFIED]
    assert engine_vs_builtin_findings("i", "afalg", kernel, soft) == []


# -- time basis ------------------------------------------------------------------------


def test_times_are_split_from_speed_stderr() -> None:
    stderr, times = split_times(read("real-1.1.1w/speed-builtin.stderr"))
    assert times == CpuTimes(user=0.22, system=0.0)
    assert "+CPUTIMES" not in stderr and "+R:" in stderr
    run = parse_speed(read("real-1.1.1w/speed-builtin.stdout"), stderr, version="1.1.1w")
    elapsed = sum(p.seconds_reported for p in run.progress)
    found = time_basis_findings("native--aes-128-cbc", times, elapsed)
    assert [f.code for f in found] == [statuses.TIME_BASIS]
    assert "22% user" in found[0].message and "4.5x higher" in found[0].message
    assert split_times("+R:1:x:1.0\n") == ("+R:1:x:1.0\n", None)


def test_time_basis_thresholds_and_kernel_work() -> None:
    assert time_basis_findings("i", CpuTimes(0.97, 0.01), 1.0) == []
    assert time_basis_findings("i", None, 1.0) == []
    kernel = time_basis_findings("i", CpuTimes(0.05, 0.9), 1.0)  # AF_ALG: system time
    assert "the kernel did the work" in kernel[0].message
    assert "20.0x higher" in kernel[0].message


# -- code path -------------------------------------------------------------------------


def test_legacy_aes_path_by_version() -> None:
    found, _ = legacy_path_findings("n", "1.1.1w", "legacy", ["aes-128-cbc", "sha256"])
    assert found[0].code == statuses.LEGACY_PATH and found[0].algorithms == ("aes-128-cbc",)
    assert legacy_path_findings("n", "1.1.1w", "evp", ["aes-128-cbc"]) == ([], [])
    assert legacy_path_findings("n", "1.0.0", "legacy", ["aes-128-cbc"]) == ([], [])
    found, notes = legacy_path_findings("n", "3.0.20", "legacy", ["aes-128-cbc"])
    assert found == [] and "through EVP" in notes[0]


def test_seed_freebsd_report_measured_the_legacy_path() -> None:
    """Seed 003 (freebsd-security, 2013): `openssl speed [-engine cryptodev] aes-256-cbc`.

    Without -evp, 1.0.1's speed calls the low-level AES: no AES-NI, and no engine either
    (engines replace EVP ciphers), which is why cryptodev "set" changed nothing for AES.
    """
    text = read("seed-003-freebsd-2013.txt")
    blocks = re.findall(r"^\$ \S+ speed ([^\n]*)\n((?:[^\n]*\n)*?)OpenSSL (\S+)[^\n]*\n"
                        r"type[^\n]*\n(aes-256 cbc [^\n]*)$", text, re.MULTILINE)
    assert [(b[0], b[2]) for b in blocks] == [
        ("aes-256-cbc", "0.9.8y"), ("aes-256-cbc", "1.0.1e"), ("aes-256-cbc", "0.9.8x"),
        ("-engine cryptodev aes-256-cbc", "1.0.1c")]
    for args, printed, version, row in blocks:
        algs = [a for a in args.split() if a.startswith("aes-")]
        assert "-evp" not in args and row.startswith("aes-256 cbc")  # the low-level row name
        found, _ = legacy_path_findings("seed", version, "legacy", algs)
        if version.startswith("0.9.8"):
            assert found == []  # no AES-NI code in that version on either path
            continue
        assert [f.code for f in found] == [statuses.LEGACY_PATH]
        if "-engine" in args:
            engine = engine_findings("seed", "cryptodev", None, printed, path="legacy",
                                     version=version)
            assert [f.code for f in engine] == [statuses.ENGINE_NOT_ENGAGED]
            assert "low-level" in engine[0].message


# -- masks -----------------------------------------------------------------------------


def test_render_masks_in_each_versions_syntax() -> None:
    assert render_ia32cap(["aesni", "pclmulqdq"], "1.0.1e") == ("~0x200000200000000", [])
    assert render_ia32cap(["aesni", "pclmulqdq"], "1.1.1w")[0] == "~0x200000200000000:~0x0"
    assert render_ia32cap(["sha"], "3.0.20")[0] == ":~0x20000000"
    assert render_ia32cap(["aesni", "sha"], "3.0.20")[0] == "~0x200000000000000:~0x20000000"
    value, notes = render_ia32cap(["aesni", "sha"], "1.0.1e")
    assert value == "~0x200000000000000" and "sha cannot be masked" in notes[0]
    value, notes = render_ia32cap(["sha"], "1.0.1e")
    assert value is None and "left out" in notes[-1]
    value, notes = render_ia32cap(["aesni"], "0.9.8s")
    assert value is None and "plain vector" in notes[0]


def test_real_3x_vectors_show_the_one_word_mask_overreaching() -> None:
    native = parse_cpuinfo_line(read("real-3.0.20/version-c--unmasked.stdout"))
    two = parse_cpuinfo_line(read("real-3.0.20/version-c--no-aesni.stdout"))
    one = parse_cpuinfo_line(read("real-3.0.20/version-c--post-mask.stdout"))
    assert native and two and one
    assert {"aesni", "sha", "avx2"} <= capabilities_of(native)
    assert "aesni" not in capabilities_of(two) and two[1] == native[1]
    assert mask_vector_findings("i", "no-aesni", "~0x200000200000000:~0x0", native, two) == []
    found = mask_vector_findings("i", "post-mask", "~0x200000200000000", native, one)
    assert [f.code for f in found] == [statuses.MASK_OVERREACH]
    assert "avx2" in found[0].message and "sha" in found[0].message
    # a mask that left AES-NI on
    left = mask_vector_findings("i", "m", "~0x200000000000000:~0x0", native, native)
    assert [f.code for f in left] == [statuses.MASK_NOT_APPLIED] and "aesni" in left[0].message


def test_mask_syntax_by_version_and_the_seed_mask() -> None:
    # Seed 001 (Ivy Bridge blog): 1.0.1e reads one word, the post's mask does what it says
    assert mask_syntax_findings("i", "m", "~0x200000200000000", "1.0.1e", EPYC_FLAGS) == []
    # the same value on 1.1.1w also turns off AVX2 and the SHA extensions
    found = mask_syntax_findings("i", "m", "~0x200000200000000", "1.1.1w", EPYC_FLAGS)
    assert found[0].code == statuses.MASK_OVERREACH and "sha" in found[0].message
    assert mask_syntax_findings("i", "m", "~0x200000200000000:~0x0", "1.1.1w", EPYC_FLAGS) == []
    assert mask_syntax_findings("i", "m", "~0x200000200000000:~0x0", "1.0.2u", EPYC_FLAGS)
    # a CPU without second-word capabilities loses nothing
    assert mask_syntax_findings("i", "m", "~0x200000200000000", "1.1.1w", ["aes"]) == []


def test_aesni_mask_without_effect_on_figures() -> None:
    native = [BenchFigure.of(algorithm="aes-128-cbc", block_size=8192, bytes_per_s=1.19e9)]
    masked = [BenchFigure.of(algorithm="aes-128-cbc", block_size=8192, bytes_per_s=1.18e9,
                             evp=True)]
    found = mask_effect_findings("i", "no-aesni", {"aesni"}, masked, native, ["aes"])
    assert [f.code for f in found] == [statuses.MASK_NOT_APPLIED]
    # ENVIRONMENT.md: 1.19 vs 0.35 GB/s on this machine
    masked[0] = masked[0].with_(bytes_per_s=0.35e9)
    assert mask_effect_findings("i", "no-aesni", {"aesni"}, masked, native, ["aes"]) == []
    assert mask_effect_findings("i", "no-aesni", {"aesni"}, masked, native, ["sse2"]) == []


def test_capability_table_matches_the_facts() -> None:
    assert IA32CAP_BITS["aesni"] == (0, 57) and IA32CAP_BITS["pclmulqdq"] == (0, 33)
    assert IA32CAP_BITS["sha"] == (1, 29) and IA32CAP_BITS["avx2"] == (1, 5)


# -- can it run there? -----------------------------------------------------------------


def test_endbr32_and_march_on_the_via_c3() -> None:
    has, lacks = profile_cpu_sets([], ["nopl", "sse2"], "c3-2")
    problems = cpu_compat_problems(arch="i386", march=None, endbr32=5120, has=has, lacks=lacks)
    assert len(problems) == 1 and "ENDBR32" in problems[0]
    assert cpu_compat_problems(arch="i386", march=None, endbr32=0, has=has, lacks=lacks) == []
    problems = cpu_compat_problems(arch="i386", march="pentium4", endbr32=0, has=has,
                                   lacks=lacks)
    assert "sse2" in problems[0]
    assert cpu_compat_problems(arch="i386", march="c3-2", endbr32=0, has=has, lacks=lacks) == []
    has, lacks = profile_cpu_sets(["aes", "avx"], [], "sandybridge")
    assert "avx2" in cpu_compat_problems(arch="x86_64", march="znver2", endbr32=None,
                                         has=has, lacks=lacks)[0]
    has, lacks = measured_cpu_sets(EPYC_FLAGS)
    assert cpu_compat_problems(arch="x86_64", march="znver2", endbr32=0, has=has,
                               lacks=lacks) == []
    assert cpu_compat_problems(arch="i386", march=None, endbr32=9, has=has, lacks=lacks) == []


# -- statuses, spread, cycles ----------------------------------------------------------


def test_apply_findings_keeps_values_and_takes_the_gravest_status() -> None:
    recs = [BenchFigure.of(invocation="a", algorithm="aes-128-cbc", status="ok", detail="",
                           bytes_per_s=5.0),
            BenchFigure.of(invocation="a", algorithm="sha256", status="zero", detail="",
                           bytes_per_s=None),
            BenchFigure.of(invocation="b", algorithm="aes-128-cbc", status="ok", detail="")]
    given = [r.to_json() for r in recs]
    marked = apply_findings(recs, [Finding(statuses.TIME_BASIS, "slow", "a"),
                                   Finding(statuses.LEGACY_PATH, "low level", "a",
                                           ("aes-128-cbc",))])
    assert [r.to_json() for r in recs] == given  # new figures: the given ones unchanged
    assert marked[2] is recs[2]  # a figure no finding concerns is handed back as it was
    recs = marked
    assert recs[0]["status"] == statuses.LEGACY_PATH and recs[0]["bytes_per_s"] == 5.0
    assert recs[0]["guards"] == [statuses.TIME_BASIS, statuses.LEGACY_PATH]
    assert "slow" in recs[0]["detail"] and "low level" in recs[0]["detail"]
    assert recs[1]["status"] == "zero" and recs[1]["guards"] == [statuses.TIME_BASIS]
    assert "guards" not in recs[2]


def test_spread_and_noise() -> None:
    s = spread([100.0, 101.0, 99.0], 0.05)
    assert s is not None and s.median == 100.0 and s.cv is not None and s.cv < 0.02
    assert not s.noisy
    noisy = spread([300.0, 1000.0, 310.0], 0.05)
    assert noisy is not None and noisy.noisy and noisy.min == 300.0 and noisy.max == 1000.0
    one = spread([5.0], 0.05)
    assert one is not None and one.cv is None and not one.noisy
    assert spread([], 0.05) is None


def test_cycles_per_byte_of_the_seed_blog() -> None:
    """Seed 004 (VIA Luke / Ryzen blog), AES-256-CBC at 8192 bytes."""
    ryzen = cycles(1_086_559.57e3, 3.6e9)  # AES-NI, 3.6 GHz
    via = cycles(11_122.01e3, 1.0e9)  # asm, 1.0 GHz
    padlock = cycles(520_596.10e3, 1.0e9)
    assert ryzen is not None and via is not None and padlock is not None
    assert round(ryzen, 2) == 3.31 and round(via, 1) == 89.9 and round(padlock, 2) == 1.92
    assert cycles(2e9, 3e9, processes=2) == 3.0
    assert cycles(None, 3e9) is None and cycles(1e9, None) is None
