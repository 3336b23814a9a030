"""A handshake bench on a busy host, replayed: real TLS-suite outputs with the host samples
the script took around each ``s_time`` run (0.9.8y, tests/fixtures/stime/README.md), fake
engine. Contended figures are filed as such per operation, measured again like bulk ones,
kept out of the series' median, and the summary prints each figure with its unit,
interval and sample count."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from openssl_matrix.core.statuses import CONTENDED
from openssl_matrix.measure.session import MAX_ATTEMPTS, Bencher
from openssl_matrix.results.export import render as export

from ..conftest import local_versions
from ..fakes import FakeBackend, fake_bench
from ..values import num

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "stime"
BUSY = "0.9.8y--tls--rsa2048--cross-core--busy.stdout"  # both operations contended
LATER = "0.9.8y--tls--rsa2048--cross-core.stdout"       # handshakes clean, resumes not


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Bencher, FakeBackend]:
    versions = local_versions(tmp_path, monkeypatch, "0.9.8y")
    path = tmp_path / "matrix.yaml"
    path.write_text(f"""
defaults:
  base_image: debian:bookworm
versions:
{versions}
axes:
  asm: [asm]
suites:
  hs:
    kind: tls
    algorithms: [rsa2048]
    protocols: [tls1.2, tls1.3]
    modes: [new, reuse]
    pinning: [cross-core]
    seconds: 1
""")

    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        assert command[-1] == "openssl-matrix-tls" and "s_time" in command[2]
        done = sum(c[-1] == "openssl-matrix-tls" for _, c, _ in backend.runs)
        return 0, (FIX / (BUSY if done == 1 else LATER)).read_text(), ""

    _, backend, _, bencher = fake_bench(path, tmp_path, responder, max_attempts=MAX_ATTEMPTS)
    return bencher, backend


def test_contended_handshakes_are_remeasured_and_summarised_with_their_interval(
        bench: tuple[Bencher, FakeBackend], capsys: pytest.CaptureFixture[str]) -> None:
    bencher, _ = bench
    m = bencher.matrix
    outs = bencher.bench(list(m.variants), m.suite("hs"), "auto", repeat=1)
    # the planned attempt and two re-measurements of the invocation, each in its own folder
    assert [o.round for o in outs] == [1, 2, 3] and len({o.run_dir for o in outs}) == 3
    statuses = [{f["operation"]: f["status"] for f in o.figures} for o in outs]
    assert statuses == [{"handshake": CONTENDED, "resume": CONTENDED},
                        {"handshake": "ok", "resume": CONTENDED},
                        {"handshake": "ok", "resume": CONTENDED}]
    for o in outs:
        for f in o.figures:
            assert f["own_share"] is not None and f["foreign_cores"] is not None
            assert "host_accounting" not in f  # kept in the run's metadata, per s_time run
        meta = json.loads((Path(str(o.run_dir)) / "meta.json").read_text())
        [entry] = meta["invocations"]
        assert set(entry["host_accounting"]) == {"tls1.0 handshake", "tls1.0 resume"}
        assert entry["host_accounting"]["tls1.0 resume"]["own_source"] == "cgroup"
        assert any("TLS 1.0 (the newest protocol 0.9.8 has): measured instead" in n
                   for n in meta["notes"])
    second = json.loads((Path(str(outs[1].run_dir)) / "meta.json").read_text())
    assert second["subset"] == {"invocations": ["tls--rsa2048--cross-core"],
                                "why": "re-measuring figures the host disturbed"}
    rows = list(csv.DictReader(io.StringIO(export(bencher.tree, "csv"))))
    assert len(rows) == 6 and all(r["own_share"] and r["foreign_cores"] for r in rows)
    assert {r["unit"] for r in rows} == {"connections/s"}

    from openssl_matrix.cli.summary import print_bench_summary

    print_bench_summary(outs, 8192, planned=1)
    out = capsys.readouterr().out
    full = [num(f["ops_per_s"]) for o in outs[1:] for f in o.figures
            if f["operation"] == "handshake"]
    assert full[0] == full[1]  # the same output replayed twice: a zero-width interval
    line = next(x for x in out.splitlines() if "tls1.0-rsa2048 handshake cross-core" in x
                and "±" in x)
    assert f"{full[0]:,.1f} ± 0.0 conn/s (n=2)" in line
    assert "(1 contended attempt(s) left out)" in line
    resume = next(x for x in out.splitlines() if "tls1.0-rsa2048 resume cross-core" in x
                  and "n=0" in x)
    assert "conn/s (n=0 clean of 3)" in resume and "[contended]" in resume
    assert "2 figure(s) from 6 measurement(s): 1 ok, 1 flagged (1 contended); 4 attempt(s)" \
        in out


def test_progress_says_which_handshake_figures_were_flagged_and_why(
        bench: tuple[Bencher, FakeBackend], capsys: pytest.CaptureFixture[str]) -> None:
    """The line of a TLS run that exited 0 does not read a plain "ok" when its figures are
    contended; the reasons are printed as the speed path's findings are, once each (not
    prefixed twice with the invocation), and left out of a series' warning list."""
    bencher, _ = bench
    m = bencher.matrix
    outs = bencher.bench(list(m.variants), m.suite("hs"), "auto", repeat=1)
    err = capsys.readouterr().err
    assert "· 1 handshake run(s) →" in err
    assert "    note: " in err and "TLS 1.0" in err  # said up front, before it measures
    lines = [x for x in err.splitlines() if "[1/1] tls--rsa2048--cross-core: ok" in x]
    assert ", flagged: 2 contended of 2 figure(s)" in lines[0]
    assert ", flagged: 1 contended of 2 figure(s)" in lines[1]
    why = "contended: tls--rsa2048--cross-core: tls1.0-rsa2048 resume: host not quiet"
    assert why in err and err.index(lines[0]) < err.index(why)  # the run, then why
    warned = [w for o in outs for w in o.warnings if "contended" in w]
    assert warned and all(w.startswith("contended: tls--rsa2048--cross-core: ")
                          for w in warned)

    from openssl_matrix.cli.summary import print_bench_summary

    print_bench_summary(outs, 8192, planned=1)
    out = capsys.readouterr().out
    assert "contended attempt(s) left out" in out
    assert not [x for x in out.splitlines() if "warning" in x and "contended:" in x]


def test_the_report_shows_handshakes_with_interval_count_and_flagged_cells(
        bench: tuple[Bencher, FakeBackend], tmp_path: Path) -> None:
    """In the page and in the terminal: median ± half-width (n), and for a figure every
    attempt of which was contended, what it read and that it was contended — no bare
    number, no empty cell."""
    from openssl_matrix.report.page import build_report

    bencher, _ = bench
    m = bencher.matrix
    bencher.bench(list(m.variants), m.suite("hs"), "auto", repeat=1)
    summary = build_report(bencher.tree, tmp_path / "report")
    text = summary.text()
    assert "TLS handshakes (connections per second, higher is better) — median ± " \
        "half-width of the 95 % interval, conn/s" in text
    full = next(x for x in text.splitlines() if "full handshake" in x)
    assert " ± 0.0 (n=2)" in full
    resumed = next(x for x in text.splitlines() if "resumption" in x)
    assert ", all 3 contended" in resumed and "≈ " in resumed
    assert "in 0 table(s) and 1 public-key/handshake table(s)" in text
    page = (tmp_path / "report" / "index.html").read_text()
    assert " ± 0.0 (n=2)" in page and "no usable figure" in page
    assert "all 3 contended" in page


def test_the_chart_keeps_the_row_whose_handshakes_were_all_contended(
        bench: tuple[Bencher, FakeBackend], tmp_path: Path) -> None:
    """The resumption row, contended in all three attempts, is drawn as an unfilled,
    cross-hatched bar at what it read, labelled "all 3 contended", beside the full
    handshake's median: it does not vanish from the picture."""
    from openssl_matrix.report.charts import Charts
    from openssl_matrix.report.page import build_report

    from ..unit.test_report_ops import capture_charts, flagged_bars

    bencher, _ = bench
    m = bencher.matrix
    bencher.bench(list(m.variants), m.suite("hs"), "auto", repeat=1)
    charts, save = capture_charts()
    build_report(bencher.tree, tmp_path / "report", charts=Charts(save=save))
    [ax] = next(f for name, f in charts.items() if name.startswith("tls-")).axes
    rows = [x.get_text() for x in ax.get_yticklabels()]
    assert len(rows) == 2 and "full" in rows[0] and "resumed" in rows[1]
    resumes = [float(f["ops_per_s"]) for p in bencher.tree.root.rglob("figures.json")
               for f in json.loads(p.read_text()) if f["operation"] == "resume"]
    [bar] = flagged_bars(ax)
    assert bar.get_y() + bar.get_height() / 2 == pytest.approx(1.0)  # the resumption row
    assert bar.get_width() == pytest.approx(sorted(resumes)[1])  # what they read: median
    assert " all 3 contended" in [x.get_text() for x in ax.texts]


def test_the_quality_panel_counts_handshake_figures_and_cells(
        bench: tuple[Bencher, FakeBackend], tmp_path: Path) -> None:
    """A tree of handshakes only: the measurement-quality panel (page, terminal,
    report.json) counts them — 6 figures from three attempts, 4 contended and kept out;
    the full-handshake cell rests on 2 clean samples with an interval, the resumption
    cell on none — instead of "All 0 bulk figure(s) are ok"."""
    from openssl_matrix.report.page import build_report

    bencher, _ = bench
    m = bencher.matrix
    bencher.bench(list(m.variants), m.suite("hs"), "auto", repeat=1)
    out = tmp_path / "report"
    summary = build_report(bencher.tree, out)
    line = ("TLS handshakes (connections/s): 6 figure(s): 2 ok, 4 flagged (0 kept in the "
            "medians, 4 kept out, 4 of them contended); 2 table cell(s): 1 with a 95 % "
            "interval (n ≥ 2), 0 on one sample (no interval), 1 with no usable figure")
    text = summary.text().splitlines()
    assert "Measurement quality: 6 figure(s), 4 flagged, 4 of them kept out of the " \
        "medians; per kind (each in its own unit):" in text
    assert f"  {line}" in text
    assert "  flagged contended: 4 figure(s) (4 tls), kept out of the medians" in text
    assert not any(x.lstrip().startswith("bulk ciphers") for x in text), "no empty kind"
    page = (out / "index.html").read_text()
    panel = page.split('id="quality"')[1].split('id="methods"')[0]
    assert "<td>TLS handshakes (connections/s)</td><td class=\"num\">6</td>" \
        "<td class=\"num\">2</td><td class=\"num\">0</td><td class=\"num\">4</td>" \
        "<td class=\"num\">4</td><td class=\"num\">2</td><td class=\"num\">1</td>" \
        "<td class=\"num\">0</td><td class=\"num\">1</td>" in panel
    assert "4 of 6 figure(s) flagged; 4 of them kept out of the medians" in panel
    assert '<td class="bad">contended</td><td class="num">4</td><td>4 tls</td>' in panel
    assert "0.9.8y-asm-x86_64/hs: <a href=" in panel
    assert "bulk (MB/s) figure(s)" not in panel
    data = json.loads((out / "data" / "report.json").read_text())["quality"]
    assert (data["figures"], data["flagged"], data["out_of_medians"]) == (6, 4, 4)
    [tls] = data["kinds"]
    assert tls["kind"] == "tls" and tls["contended"] == 4 and tls["cells_with_interval"] == 1
    assert tls["cells_no_usable_figure"] == 1
    [contended] = data["statuses"]
    assert contended["by_kind"] == {"tls": 4} and len(contended["runs"]) == 3
