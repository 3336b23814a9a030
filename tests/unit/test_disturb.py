"""benchmarks/disturb.py: how it classifies figures and finds overlapping speed runs."""

from __future__ import annotations

from ..scripts import load_script

disturb = load_script("disturb")


def fig(value: float, status: str = "ok", inv: str = "native--aes-256-cbc") -> dict[str, object]:
    return {"invocation": inv, "algorithm": inv.split("--")[-1], "block_size": 8192,
            "bytes_per_s": value, "status": status}


def test_figures_are_judged_against_the_quiet_median_of_their_cell() -> None:
    ref = disturb.quiet_reference([fig(100.0), fig(102.0), fig(98.0), fig(50.0, "contended"),
                                   fig(10.0, "ok", "native--md5")])
    assert ref == {("native--aes-256-cbc", "aes-256-cbc", 8192): 100.0,
                   ("native--md5", "md5", 8192): 10.0}
    c = disturb.classify([fig(104.0), fig(94.0), fig(60.0, "contended"),
                          fig(61.0, "contended"), fig(5.0, "ok", "native--sha1")], ref)
    assert (c.ok_close, c.ok_off, c.flagged, c.no_reference) == (1, 1, 2, 1)
    assert c.reasons == {"contended": 2} and c.off == ["native--aes-256-cbc -6.0%"]
    assert c.text().startswith("5 figures: 1 ok within 5%, 2 flagged (2 contended), 1 ok but")


def test_overlap_of_speed_runs() -> None:
    a = [("2026-11-30T20:00:00+00:00", "2026-11-30T20:00:02+00:00")]
    b = [("2026-11-30T20:00:01.500+00:00", "2026-11-30T20:00:04+00:00"),
         ("2026-11-30T20:00:05+00:00", "2026-11-30T20:00:06+00:00")]
    assert disturb.overlaps(a, b) == 0.5
    assert disturb.overlaps(a, b[1:]) == 0.0
