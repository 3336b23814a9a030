"""benchmarks/ccache.py's table without Docker: the four default builds' total with the
shared cache and without it (issue 33 item 5), or why there is no total. The rows' seconds
are made up for the arithmetic under test."""

from __future__ import annotations

from ..scripts import load_script

ccache = load_script("ccache")


def row(what: str, variant: str, seconds: float | None) -> object:
    return ccache.Row("four", what, variant, "shared" if what == "shared cache" else "none",
                      "built" if seconds is not None else "failed", seconds, None, None,
                      0.5, 1.0, 1.0)


def test_the_four_builds_totals_with_and_without_the_shared_cache() -> None:
    rows = [row("shared cache", v, s) for v, s in zip(ccache.FOUR, (100, 40, 200, 90), strict=True)]
    rows += [row("no cache", v, s) for v, s in zip(ccache.FOUR, (100, 100, 200, 200), strict=True)]
    lines = ccache.table(rows)
    assert "| four | **total, shared cache** | all four | 430 | | | |" in lines
    assert "| four | **total, no cache** | all four | 600 | | | |" in lines
    assert lines[-1] == ("four default builds' total: shared cache 430 s; no cache 600 s "
                         "(shared / none: 0.72)")


def test_no_total_when_a_build_failed_or_is_missing_and_it_says_which() -> None:
    seconds = (100, None, 200, 90)
    rows = [row("shared cache", v, s) for v, s in zip(ccache.FOUR, seconds, strict=True)]
    rows += [row("no cache", ccache.FOUR[0], 100)]
    line = ccache.table(rows)[-1]
    assert f"shared cache: no total ({ccache.FOUR[1]} did not build)" in line
    assert "no cache: not measured (1 of 4 built)" in line and "shared / none" not in line
    assert not any("four default builds" in x for x in ccache.table(
        [ccache.Row("step", "cold, no cache", "3.0.20-asm-x86_64", "none", "built", 500.0,
                    None, None, 0.1, 1.0, 1.0)]))
