"""The public-key and handshake charts of the report: medians with their 95 % intervals
as error bars, like the bulk charts; the public-key chart on a log axis (docs/report.md
says why). The values are made up for the arithmetic under test."""

from __future__ import annotations

from pathlib import Path

import pytest

from openssl_matrix.report_ops import OpsObservation, chart, ops_tables
from openssl_matrix.stats import estimate


def _obs(kind: str, version: str, row: str, value: float, status: str = "ok",
         ) -> OpsObservation:
    return OpsObservation(cpu="host-x", variant=f"{version}-asm-x86_64", version=version,
                          asm=True, arch="x86_64", kind=kind, suite=kind, run="0001",
                          run_path=Path("/nonexistent"), invocation="inv", algorithm=row,
                          operation="sign", row=row, value=value, status=status,
                          raw_file="raw/inv.stdout", short=row)


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
