"""Checks a newcomer needs (issue 36, item 5): a claim judged where one side has no figure
of the report is refused at load; a build whose ``as_reported`` names another letter
release than its version entry is warned about; the message for a CPU the model cannot
size reads as a sentence whether the report names a CPU or not.

The specs' figures are this test's own inputs, not a report's.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import pytest

from openssl_matrix.cli.commands.reproduce import run as cmd_reproduce
from openssl_matrix.core.errors import ConfigError
from openssl_matrix.core.resources import project_reports
from openssl_matrix.measure.cpumodel import CORES
from openssl_matrix.repro.check import other_releases
from openssl_matrix.repro.judge import unknown_core_text
from openssl_matrix.repro.spec import Machine, ReportSpec
from openssl_matrix.repro.specload import load_spec

from ..fakes import engine_of

#: Two table rows, one at 16 bytes and one at 16384, and two full speed rows.
SPEC = """
schema: 1
title: sizes both sides have
source: {kind: site, where: a test}
machines:
  box: {cpu: not named in the report}
versions:
  1.1.1w: {}
  3.0.20: {}
builds:
  old: {version: 1.1.1w}
  new: {version: 3.0.20}
measurements:
  small: {build: old, block_size: 16, algorithms: {sha256: 100000.00k}}
  large: {build: new, block_size: 16384, algorithms: {sha256: 2000000.00k}}
  old-full: {build: old, algorithm: sha256, reference: {16: 100000.00k, 8192: 1900000.00k,
             16384: 2000000.00k}}
  new-full: {build: new, algorithm: sha256, reference: {16: 50000.00k, 8192: 1800000.00k}}
  new-bare: {build: new, algorithm: sha256}
claims:
  - CLAIM
"""

GOOD = "{id: fine, says: slower, compare: [new-full, old-full], expect: slower}"


def load(tmp_path: Path, claim: str, text: str = SPEC) -> ReportSpec:
    path = tmp_path / "sizes.yaml"
    path.write_text(text.replace("CLAIM", claim), encoding="utf-8")
    return load_spec(path)


def refused(tmp_path: Path, claim: str, text: str = SPEC) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        load(tmp_path, claim, text)
    return err.value


def test_a_claim_at_a_size_both_sides_have_loads(tmp_path: Path) -> None:
    spec = load(tmp_path, GOOD)
    assert spec.claims[0].block_sizes == (8192,)
    # a side the report printed no figures for is not checked: its claim states a ratio
    spec = load(tmp_path, "{id: bare, says: half, compare: [new-bare, old-full], "
                "expect: ratio, ratio: 0.5, block_sizes: [16]}")
    assert spec.claims[0].block_sizes == (16,)


def test_two_rows_at_different_block_sizes_are_refused(tmp_path: Path) -> None:
    err = refused(tmp_path, "{id: rows, says: 'the gap \"closes\"', "
                  "compare: [large.sha256, small.sha256], expect: faster, "
                  "block_sizes: [16]}")
    assert err.message.endswith(
        "claims[0] (rows).block_sizes: claim 'rows' is judged at block size 16, but the "
        "report gives no figure for 'large.sha256' at block size 16 (figures: "
        "'large.sha256' at 16384; 'small.sha256' at 16), so its two sides would not be "
        "compared at one block size")
    assert err.hint == (
        "compare two measurements the report printed at the same block sizes, or add the "
        "report's figures at 16 to measurements.large.algorithms.sha256 (a table row holds "
        "the figures of its block_size only)")


def test_the_default_size_must_be_printed_by_a_side_with_figures(tmp_path: Path) -> None:
    # block_sizes left out means 8192, which neither row printed
    err = refused(tmp_path, "{id: rows, says: x, compare: [large.sha256, small.sha256], "
                  "expect: faster}")
    # neither row printed 8192: both are named, with where to add each figure
    assert "judged at block size 8192, but the report gives no figure for 'large.sha256' " \
        "at block size 8192 or for 'small.sha256' at block size 8192" in err.message
    assert err.hint is not None and err.hint.endswith(
        "add the report's figures at 8192 to measurements.large.algorithms.sha256 (a table "
        "row holds the figures of its block_size only) and at 8192 to "
        "measurements.small.algorithms.sha256 (a table row holds the figures of its "
        "block_size only)")
    # one side has figures at 16 and 8192, the other at 16, 8192 and 16384: judged at
    # 16384 the advice names the largest size both have
    err = refused(tmp_path, "{id: big, says: x, compare: [new-full, old-full], "
                  "expect: slower, block_sizes: [8192, 16384]}")
    assert "no figure for 'new-full' at block size 16384 (figures: " \
        "'new-full' at 16 and 8192; 'old-full' at 16, 8192 and 16384)" in err.message
    assert err.hint is not None and err.hint.startswith(
        "write block_sizes: [8192] with a block size both have, or add the report's figures "
        "at 16384 to measurements.new-full.reference")


def test_a_side_without_figures_leaves_the_other_side_checked(tmp_path: Path) -> None:
    err = refused(tmp_path, "{id: one, says: x, compare: [new-bare, small.sha256], "
                  "expect: ratio, ratio: 0.5}")
    assert "no figure for 'small.sha256' at block size 8192 (figures: 'new-bare' none; " \
        "'small.sha256' at 16)" in err.message
    assert err.hint is not None and err.hint.startswith(
        "write block_sizes: [16] with a block size 'small.sha256' has, or add")


def test_a_trend_at_a_size_one_side_lacks_is_refused(tmp_path: Path) -> None:
    err = refused(tmp_path, "{id: gap, says: the gap closes, compare: [new-full, old-full], "
                  "expect: ratio, ratio: 2.0, trend: [16, 16384]}")
    assert "claims[0] (gap).trend: claim 'gap' is judged at block sizes 16 and 16384, but " \
        "the report gives no figure for 'new-full' at block size 16384" in err.message
    assert err.hint is not None and err.hint.startswith(
        "write trend: [16, 8192] with block sizes both have")
    # at the sizes both have, the same trend loads
    spec = load(tmp_path, "{id: gap, says: the gap closes, compare: [new-full, old-full], "
                "expect: ratio, ratio: 2.0, trend: [16, 8192]}")
    assert spec.claims[0].trend == (16, 8192)


THREADS_SPEC = SPEC.split("measurements:")[0] + """measurements:
  old: {build: old, operation: library, algorithm: fetch-digest, threads: [1, 2, 4],
        reference: {1: 4000000, 2: 8000000, 4: 9000000}}
  new: {build: new, operation: library, algorithm: fetch-digest, threads: [1, 2, 4],
        reference: {1: 2000000, 2: 2000000}}
claims:
  - CLAIM
"""


def test_a_thread_trend_at_a_count_one_side_lacks_is_refused(tmp_path: Path) -> None:
    err = refused(tmp_path, "{id: widens, says: the gap widens, compare: [new, old], "
                  "expect: slower, trend: {threads: [1, 4]}}", THREADS_SPEC)
    assert "claims[0] (widens).trend.threads: claim 'widens' is judged at thread counts 1 " \
        "and 4, but the report gives no figure for 'new' at thread count 4 (figures: " \
        "'new' at 1 and 2; 'old' at 1, 2 and 4)" in err.message
    assert err.hint is not None and err.hint.startswith(
        "write trend: {threads: [1, 2]} with thread counts both have, or add the report's "
        "figures at 4 to measurements.new.reference")
    spec = load(tmp_path, "{id: widens, says: the gap widens, compare: [new, old], "
                "expect: slower, trend: {threads: [1, 2]}}", THREADS_SPEC)
    assert spec.claims[0].trend == (1, 2)


def test_the_message_is_one_sentence_whatever_the_says_text(tmp_path: Path) -> None:
    # free text in the claim never reaches the message: only ids, names and sizes do
    err = refused(tmp_path, "{id: rows, says: \"a\\nb 'c' d\", "
                  "compare: [large.sha256, small.sha256], expect: faster}")
    assert "\n" not in err.message and "'c'" not in err.message


def test_every_shipped_spec_still_loads() -> None:
    shipped = sorted(Path(__file__).parents[2].joinpath(
        "openssl_matrix", "resources", "reports").glob("*.yaml"))
    # how many ship is the README's count (test_reportspec checks it against the folder)
    assert len(shipped) >= 12
    for path in shipped:
        assert load_spec(path).claims, path


def releases_of(tmp_path: Path, as_reported: str, version: str = "1.1.1t") -> list[str]:
    text = SPEC.replace("CLAIM", GOOD).replace("  1.1.1w: {}\n", f"  {version}: {{}}\n")
    text = text.replace("old: {version: 1.1.1w}",
                        f"old: {{version: {version}, as_reported: {as_reported}}}")
    path = tmp_path / "releases.yaml"
    path.write_text(text, encoding="utf-8")
    return other_releases(load_spec(path))


def test_a_build_printing_another_letter_release_is_warned(tmp_path: Path) -> None:
    warnings = releases_of(tmp_path, "'OpenSSL 1.1.1p  5 Jul 2022 (the paste''s version "
                           "line)'")
    assert warnings == [
        "builds.old: its as_reported (\"OpenSSL 1.1.1p  5 Jul 2022 (the paste's version "
        "line)\") names release 1.1.1p, but its version entry is 1.1.1t, so 1.1.1t would be "
        "built for it. Where the report's output printed 1.1.1p, that is what ran: declare "
        "versions.1.1.1p and write version: 1.1.1p in builds.old; where the report's text "
        "says 1.1.1t, keep it and say why in the spec's notes"]
    # the release at the end of a sentence, and a base release against a letter one
    assert "names release 1.1.1p, but its version entry is 1.1.1t" in \
        releases_of(tmp_path, "'the build printed 1.1.1p.'")[0]
    assert "names release 1.1.1, but its version entry is 1.1.1t" in \
        releases_of(tmp_path, "'OpenSSL 1.1.1 11 Sep 2018'")[0]


@pytest.mark.parametrize("as_reported", [
    "'OpenSSL 1.1.1t  7 Feb 2023'",            # the same release
    "'a 1.1.1t-freebsd base build'",           # the same, with a vendor's suffix
    "'built with gcc 12.2.0 on Debian'",       # another series: not a release of it
    "'the distribution package'",              # no release named
    "'OpenSSL 1.1.1p or 1.1.1t, the text says both'",  # one of them is the entry
])
def test_a_build_naming_its_own_release_or_none_is_not_warned(tmp_path: Path,
                                                              as_reported: str) -> None:
    assert releases_of(tmp_path, as_reported) == []


def test_check_lists_the_release_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError("--check must not reach Docker")

    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    text = (project_reports() / "ivy-bridge-aesni-blog.yaml").read_text()
    text = text.replace("      Arch Linux's openssl package (compiler line:",
                        "      Arch Linux's openssl 1.0.1c package (compiler line:", 1)
    spec = tmp_path / "ivy-release.yaml"
    spec.write_text(text)
    cmd_reproduce(target=str(spec), matrix="matrix.yaml",
                           results=str(tmp_path / "results"), cpu="", force=False,
                           wait=False, json=False, check=True, engine=engine_of(refuse))
    out = capsys.readouterr().out
    assert "; 1 build(s) naming another release than their version" in out
    assert "unused entr" not in out
    assert "  warning: builds.arch-package: its as_reported (\"Arch Linux's openssl 1.0.1c " \
        "package" in out
    assert "names release 1.0.1c, but its version entry is 1.0.1e" in out


def machine(cpu: str) -> Machine:
    return Machine(name="reporter", cpu=cpu, clock_ghz=None, flags=(), arch="x86_64",
                   os=None, compiler=None, notes="")


def test_an_unknown_named_cpu_is_quoted_in_a_sentence() -> None:
    text = unknown_core_text(machine("Some Vendor's \u201cChip\u201d\nrev 2"))
    assert text.startswith(
        "the CPU model does not know the core of the CPU \"Some Vendor's \u201cChip\u201d\\nrev "
        "2\" (machines.reporter), so it cannot carry this claim to another CPU. If that CPU "
        "has one of the cores ")
    assert f"cores {', '.join(CORES)}, write the core in machines.reporter.core. What can " \
        "still be judged: a claim that holds on any CPU (depends_on: code-path) is judged " \
        "as measured" in text
    assert "\n" not in text


def test_a_report_naming_no_cpu_says_so_and_what_can_be_judged() -> None:
    text = unknown_core_text(machine("not named in the report"))
    assert text == (
        "the report names no CPU for machines.reporter (its cpu reads 'not named in the "
        "report'), so the CPU model cannot say how large the ratio was there. What can "
        "still be judged: a claim that holds on any CPU (depends_on: code-path) is judged as "
        "measured; if the report names the CPU or its core elsewhere (a later comment, a "
        "linked log), write it in machines.reporter.cpu or machines.reporter.core")
    assert "does not know not named" not in text
    # long free text is cut, never echoed whole
    long = unknown_core_text(machine("model unknown, " + "x" * 500))
    assert "more characters)" in long and "x" * 200 not in long
