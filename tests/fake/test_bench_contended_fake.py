"""A bench on a busy host, replayed: real speed runs with their host samples, fake engine.

The speed outputs are the real runs of tests/fixtures/hostacct (1.1.1w asm, EVP
aes-128-cbc at 8192 bytes on this machine while it was busy). The bench must file them
``contended``, keep every attempt, measure them again up to its limit, keep them out of
the series' median and say so in the export.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from openssl_matrix.core import statuses
from openssl_matrix.measure.session import MAX_ATTEMPTS, Bencher
from openssl_matrix.measure.speedcmd import unwrap_speed
from openssl_matrix.results.export import render as export

from ..fakes import FakeBackend, fake_bench
from ..values import num
from .test_bench_fake import matrix  # noqa: F401  (the fixture)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "hostacct"


@pytest.fixture
def bench(matrix: Path, tmp_path: Path) -> tuple[Bencher, FakeBackend]:  # noqa: F811
    """test_bench_fake's matrix (1.1.1w, suite ``rep``: aes-128-cbc at 8192 B), replayed
    from the busy-host runs."""
    path = matrix
    replies = ["busy-saturated", "busy-other-core"]

    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        assert unwrap_speed(command)[:2] == ("openssl", "speed")
        name = replies[min(len(backend.runs), 99) % 2]
        return 0, (FIX / f"{name}.stdout").read_text(), (FIX / f"{name}.stderr").read_text()

    _, backend, _, bencher = fake_bench(path, tmp_path, responder, max_attempts=MAX_ATTEMPTS)
    return bencher, backend


def test_contended_figures_are_kept_remeasured_and_never_reported_ok(
        bench: tuple[Bencher, FakeBackend]) -> None:
    bencher, _ = bench
    m = bencher.matrix
    outs = bencher.bench(m.select("1.1.1w-asm-x86_64"), m.suite("rep"), "auto", repeat=1)
    # one planned attempt and two re-measurements, each in its own run folder
    assert [o.round for o in outs] == [1, 2, 3]
    assert len({o.run_dir for o in outs}) == 3
    for o in outs:
        [fig] = o.figures
        assert fig["status"] == statuses.CONTENDED and num(fig["bytes_per_s"]) > 0
        assert fig["own_share"] is not None and num(fig["foreign_cores"]) > 1.0
        meta = json.loads((Path(str(o.run_dir)) / "meta.json").read_text())
        [entry] = meta["invocations"]
        assert entry["host_accounting"]["own_source"] == "cgroup"
        assert entry["host_accounting"]["foreign_cores"] > 1.0
        assert any(w.startswith("contended: ") for w in meta["warnings"])
        assert (Path(str(o.run_dir)) / "raw" / "default--aes-128-cbc.stderr").is_file()
    second = json.loads((Path(str(outs[1].run_dir)) / "meta.json").read_text())
    assert second["subset"] == {"invocations": ["default--aes-128-cbc"],
                                "why": "re-measuring figures the host disturbed"}
    # time-basis is not claimed for a process that waited for a CPU
    assert all(statuses.TIME_BASIS not in o.figures[0]["guards"] for o in outs)
    rows = list(csv.DictReader(io.StringIO(export(bencher.tree, "csv"))))
    assert len(rows) == 3 and {r["status"] for r in rows} == {statuses.CONTENDED}
    assert all(r["samples"] == "1" and float(r["foreign_cores"]) > 1 for r in rows)


def test_a_series_exports_its_clean_sample_count_and_interval(
        bench: tuple[Bencher, FakeBackend], capsys: pytest.CaptureFixture[str]) -> None:
    """Three rounds: the first replayed busy (contended), the others from a run recorded
    without host samples (nothing to judge); the contended one is measured again in a
    fourth round, and the series reports three clean samples."""
    bencher, backend = bench
    guards_fix = FIX.parent / "guards" / "real-1.1.1w"
    busy = backend.responder
    assert busy is not None

    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        if sum(unwrap_speed(c)[:2] == ("openssl", "speed") for _, c, _ in backend.runs) == 1:
            return busy(image, command, env)
        return 0, (guards_fix / "speed-builtin.stdout").read_text(), \
            (guards_fix / "speed-builtin.stderr").read_text()

    backend.responder = responder
    m = bencher.matrix
    outs = bencher.bench(m.select("1.1.1w-asm-x86_64"), m.suite("rep"), "auto", repeat=3)
    assert [(o.round, o.figures[0]["status"]) for o in outs] == [
        (1, statuses.CONTENDED), (2, "time-basis"), (3, "time-basis"), (4, "time-basis")]
    rows = list(csv.DictReader(io.StringIO(export(bencher.tree, "csv"))))
    assert [r["samples"] for r in rows] == ["3"] * 4
    value = float(rows[1]["bytes_per_s"])
    assert float(rows[0]["ci_low"]) == pytest.approx(value) == float(rows[0]["ci_high"])
    assert {r["ci_method"] for r in rows} == {"t95"}
    from openssl_matrix.cli.summary import print_bench_summary

    print_bench_summary(outs, 8192)
    out = capsys.readouterr().out
    assert f"{value / 1e6:,.1f} ± 0.0" in out and "(n=3)" in out
    assert "1 contended attempt(s) left out" in out
    assert "1 figure(s) from 4 measurement(s): 0 ok, 1 flagged (1 time-basis); 1 attempt" in out
