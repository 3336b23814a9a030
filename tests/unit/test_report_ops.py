"""The public-key and handshake charts of the report: medians with their 95 % intervals
as error bars, like the bulk charts; the public-key chart on a log axis (docs/report.md
says why). The values are made up for the arithmetic under test, except where a test
names the real output it took them from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openssl_matrix.core.stats import estimate
from openssl_matrix.report.charts import FLAGGED_LEGEND, SaveFigure, save_figure
from openssl_matrix.report.ops import OpsObservation, chart, ops_tables, table_text, value_text


def _obs(kind: str, version: str, row: str, value: float, status: str = "ok",
         ) -> OpsObservation:
    return OpsObservation(cpu="host-x", variant=f"{version}-asm-x86_64", version=version,
                          asm=True, arch="x86_64", kind=kind, suite=kind, run="0001",
                          run_path=Path("/nonexistent"), invocation="inv", algorithm=row,
                          operation="sign", row=row, value=value, status=status,
                          raw_file="raw/inv.stdout", short=row)


def capture_charts() -> tuple[dict[str, Any], SaveFigure]:
    """A chart writer to pass down (``save=``, ``Charts(save=)``) and every figure it
    saved, by file name, to read what was drawn on it."""
    charts: dict[str, Any] = {}

    def save(fig: Any, path: Path) -> None:
        charts[Path(path).name] = fig
        save_figure(fig, path)

    return charts, save


def flagged_bars(ax: Any) -> list[Any]:
    """The bars ``report.flagged_bar`` drew: unfilled, cross-hatched."""
    return [p for p in ax.patches if p.get_hatch() == "xx"]


# tests/fixtures/speed/real-3.0.20/mr-usertime-pk.stdout: +F2 (rsa 1024 sign) and
# +F3 (dsa 2048 sign), operations per second
RSA1024_SIGN, DSA2048_SIGN = 12230.303030, 4227.0


def test_a_row_of_only_contended_figures_keeps_its_place_in_the_chart(tmp_path: Path) -> None:
    """Drawn where its bar would be, unfilled and cross-hatched, at what the contended
    figure read and labelled so, as the table's grey "≈ …, all 1 contended" — not left
    out of the picture; a table with no usable figure at all gets no chart (as bulk)."""
    charts, save = capture_charts()
    [t] = ops_tables([_obs("pkey", "3.0.20", "rsa1024 sign", RSA1024_SIGN),
                      _obs("pkey", "3.0.20", "dsa2048 sign", DSA2048_SIGN, "contended")])
    assert chart(t, tmp_path / "pkey.png", save)
    ax = charts["pkey.png"].axes[0]
    assert [x.get_text() for x in ax.get_yticklabels()] == ["dsa2048 sign", "rsa1024 sign"]
    [bar] = flagged_bars(ax)
    assert bar.get_width() == DSA2048_SIGN and bar.get_facecolor()[3] == 0  # unfilled
    assert bar.get_y() + bar.get_height() / 2 == pytest.approx(0.0)  # the dsa row
    assert " all 1 contended" in [x.get_text() for x in ax.texts]
    assert FLAGGED_LEGEND in [x.get_text() for x in ax.get_legend().get_texts()]
    filled = [p for p in ax.patches if p.get_hatch() is None]
    assert [p.get_width() for p in filled] == [RSA1024_SIGN]
    [flagged_only] = ops_tables([_obs("pkey", "3.0.20", "dsa2048 sign", DSA2048_SIGN,
                                      "contended")])
    assert not chart(flagged_only, tmp_path / "none.png")


def test_error_bars_are_the_95_percent_interval_cut_where_the_axis_ends() -> None:
    values = [1000.0, 1100.0, 1050.0]
    obs = [_obs("pkey", "3.0.20", "rsa-2048 sign", v) for v in values]
    obs.append(_obs("pkey", "3.0.20", "rsa-2048 sign", 10.0, status="contended"))
    obs += [_obs("pkey", "3.0.20", "rsa-4096 sign", v) for v in (200.0, 20.0, 380.0)]
    [t] = ops_tables(obs)
    e = estimate(values)
    assert e is not None and e.half_width is not None
    # the contended figure is no sample of the interval
    assert t.error_bar("rsa-2048 sign", "3.0.20", log=True) == pytest.approx(
        (e.half_width, e.half_width))
    # an interval reaching below zero: stops at zero on a linear axis, at a tenth of the
    # median on a log one
    wide = estimate([200.0, 20.0, 380.0])
    assert wide is not None and wide.half_width is not None and wide.half_width > 200
    assert t.error_bar("rsa-4096 sign", "3.0.20", log=False) == pytest.approx(
        (200.0, wide.half_width))
    assert t.error_bar("rsa-4096 sign", "3.0.20", log=True) == pytest.approx(
        (180.0, wide.half_width))
    # one sample: no interval, no bar
    [one] = ops_tables([_obs("tls", "1.1.1w", "tls1.2 full", 800.0)])
    assert one.error_bar("tls1.2 full", "1.1.1w", log=False) == (0.0, 0.0)


def test_charts_are_drawn_for_both_kinds(tmp_path: Path) -> None:
    for kind in ("pkey", "tls"):
        obs = [_obs(kind, v, "row", x) for v in ("1.1.1w", "3.0.20") for x in (90.0, 100.0)]
        [t] = ops_tables(obs)
        assert chart(t, tmp_path / f"{kind}.png")
        assert (tmp_path / f"{kind}.png").stat().st_size > 1000


def test_a_cell_carries_its_interval_and_count_and_flagged_ones_say_so() -> None:
    """Never a bare number: median ± half-width (n), (n=1) alone, or what the flagged
    figures read named by their status, in the page and in the terminal's table."""
    obs = [_obs("pkey", "3.0.20", "rsa-2048 sign", v) for v in (1000.0, 1100.0, 1050.0)]
    obs.append(_obs("pkey", "3.0.20", "rsa-2048 sign", 10.0, status="contended"))
    obs.append(_obs("pkey", "1.1.1w", "rsa-2048 sign", 1200.0))
    obs += [_obs("pkey", "3.5.7", "rsa-2048 sign", v, status="contended")
            for v in (900.0, 700.0)]
    [t] = ops_tables(obs)
    e = estimate([1000.0, 1100.0, 1050.0])
    assert e is not None and e.half_width is not None
    assert value_text(t, "rsa-2048 sign", "3.0.20") == f"1,050 ± {e.half_width:,.0f} (n=3)"
    assert value_text(t, "rsa-2048 sign", "1.1.1w") == "1,200 (n=1)"
    assert value_text(t, "rsa-2048 sign", "3.5.7") == "≈ 800, all 2 contended"
    header, columns, row, blank = table_text(t)
    assert "95 % interval" in header and "ops/s" in header and blank == ""
    assert columns.split()[1:] == ["OpenSSL", "1.1.1w", "OpenSSL", "3.0.20", "OpenSSL",
                                   "3.5.7"]
    assert "1,200 (n=1)" in row and "(n=3)" in row and "all 2 contended" in row
    [tls] = ops_tables([_obs("tls", "1.1.1w", "tls1.3 full", 800.0)])
    assert "conn/s" in table_text(tls)[0]


def test_an_algorithm_a_version_lacks_is_said_not_measured_with_the_reason() -> None:
    """ML-KEM on 1.1.1w: not an empty cell but "not measured" and why (the run's notes,
    read by ``add_refusals``), in the terminal's table and under the page's table."""
    from openssl_matrix.report.ops import _cell_view

    obs = [OpsObservation(cpu="host-x", variant="3.6.3-asm-x86_64", version="3.6.3",
                          asm=True, arch="x86_64", kind="pkey", suite="pkey", run="0001",
                          run_path=Path("/nonexistent"), invocation="default--ml-kem-768",
                          algorithm="kem-ml-kem-768", operation="encaps",
                          row="kem-ml-kem-768 encaps", value=56055.0, status="ok",
                          raw_file="raw/default--ml-kem-768.stdout")]
    obs.append(_obs("pkey", "1.1.1w", "rsa-2048 sign", 1731.0))
    [t] = ops_tables(obs)
    why = "OpenSSL 1.1.1w's speed has no such test (it exists from 3.5.0; source: …)"
    t.refused[("kem-ml-kem-768", "1.1.1w")] = why
    assert _cell_view(t, "kem-ml-kem-768 encaps", "1.1.1w") == {
        "refused": "OpenSSL 1.1.1w's speed has no such test", "why": why}
    assert _cell_view(t, "rsa-2048 sign", "3.6.3") is None  # not asked: a dash
    lines = table_text(t)
    row = next(x for x in lines if x.lstrip().startswith("kem-ml-kem-768 encaps"))
    assert "not measured" in row and "56,055 (n=1)" in row
    assert f"  kem-ml-kem-768: not measured on 1.1.1w: {why}" in lines


def test_a_public_key_cell_shows_one_session_and_keeps_the_others() -> None:
    """Sessions as the unit here too (issue 28): three sessions of one cell (three runs
    each; the values are made up for the arithmetic, around the real RSA-1024 signing rate
    above), the figure is the latest session's alone, the history has three entries, and
    the third session, 10 % lower beyond its interval, is a change."""
    from dataclasses import replace

    from openssl_matrix.report.sessions import Provenance

    obs = []
    for i, level in enumerate((1.0, 1.0, 0.9)):
        prov = Provenance(f"bench-{i}", False, f"2026-12-0{i + 1}T08:00:00", "local", None,
                          f"sha256:{i}", "Linux 6.1.0", None, None)
        for r, f in enumerate((1.0, 1.004, 0.996)):
            obs.append(replace(_obs("pkey", "3.0.20", "rsa1024 sign", RSA1024_SIGN * level * f),
                               run=f"{3 * i + r + 1:04d}", prov=prov))
    [t] = ops_tables(obs)
    key = ("rsa1024 sign", "3.0.20")
    assert [f.n for f in t.history(*key)] == [3, 3, 3]
    assert t.values(*key) == [o.value for o in obs[6:]]
    e = estimate(t.values(*key))
    assert e is not None and value_text(t, *key).startswith(f"{e.median:,.0f} ± ")
    [change] = t.changes(*key)
    assert change.at.session == "bench-2" and change.ratio == pytest.approx(-0.1, abs=0.005)
    assert ("image id", "sha256:1", "sha256:2") in change.conditions
    assert t.page(*key).startswith("cells/pkey-host-x-x86-64--rsa1024-sign-")
