"""Sessions as the unit of the report (issue 28): a cell's figure is one session's median
and interval, every session is one entry of the cell's history, and a session that moves
a figure beyond its interval is flagged as a change, with what else changed.

The trees come from the real Builder and Bencher against the fake backend (the one seam):
``sessiontrees.bench_sessions``, whose responder gives each session a level and each
repetition a small factor (a documented synthetic load, not a measurement).
"""

from __future__ import annotations

import csv
import io
import json
import re
from html import escape
from pathlib import Path

import pytest

from openssl_matrix.core.errors import UsageError
from openssl_matrix.core.stats import estimate
from openssl_matrix.report.history import MIN_RUN, changes
from openssl_matrix.report.medians import SESSION_FIELDS, session_medians
from openssl_matrix.report.page import build_report
from openssl_matrix.report.sessions import Provenance, Selection, SessionFigure
from openssl_matrix.results.export import records, render, render_rows
from openssl_matrix.results.records import FROM_JOURNAL, FROM_SERIES, META

from ..sessiontrees import bench_sessions
from .test_report import links
from .test_reproduce_fake import EVP_AES

ASM = "asm + AES-NI & SHA ext."


def test_two_sessions_are_two_entries_and_the_interval_is_one_sessions(
        fake_matrix: Path, tmp_path: Path) -> None:
    tree = bench_sessions(fake_matrix, tmp_path, [1.0, 1.0])
    summary = build_report(tree, tmp_path / "report")
    cell = summary.groups[0].cell(ASM, "aes-128-cbc", 8192)
    assert cell is not None and len(cell.observations) == 6
    assert [f.n for f in cell.history] == [3, 3]
    first, latest = cell.history
    assert first.session != latest.session and cell.shown == latest
    # the figure and its interval are the latest session's own, never the six pooled
    own = estimate([o.bytes_per_s for o in cell.observations
                    if o.prov is not None and o.prov.session == latest.session
                    and o.bytes_per_s is not None])
    assert cell.estimate == own and own is not None and own.n == 3
    pooled = estimate([o.bytes_per_s for o in cell.observations if o.bytes_per_s])
    assert pooled is not None and own.half_width != pooled.half_width and pooled.n == 6
    assert cell.changes == []
    data = json.loads((tmp_path / "report" / "data" / "report.json").read_text())
    row = next(c for c in data["cells"] if c["page"] == cell.page)
    sessions = [s["session"] for s in data["sessions"]]
    assert [(sessions[r[0] - 1], r[4]) for r in row["history"]] == \
        [(first.session, 3), (latest.session, 3)]
    assert own.ci_low is not None and own.ci_high is not None
    assert row["history"][1][1:4] == [round(own.median), round(own.ci_low),
                                      round(own.ci_high)]
    assert row["n"] == 3 and row["session"] == latest.session
    assert data["changes"] == [] and len(data["sessions"]) == 2
    # --session: the figure is the first session's, its history still both
    chosen = build_report(tree, tmp_path / "r1", selection=Selection.of(first.session))
    c1 = chosen.groups[0].cell(ASM, "aes-128-cbc", 8192)
    assert c1 is not None and c1.shown is not None and c1.shown.session == first.session
    assert len(c1.history) == 2 and c1.estimate == first.estimate
    common = next(first.session[:i] for i in range(len(first.session))
                  if first.session[:i + 1] != latest.session[:i + 1])
    with pytest.raises(UsageError, match="names 2 sessions"):
        build_report(tree, tmp_path / "r2", selection=Selection.of(common))
    with pytest.raises(UsageError, match="no session of this results tree"):
        build_report(tree, tmp_path / "r2", selection=Selection.of("nonesuch"))
    # --since after both: nothing left to show, every cell says so
    late = build_report(tree, tmp_path / "r3", selection=Selection.of(since="2999-01-01"))
    c3 = late.groups[0].cell(ASM, "aes-128-cbc", 8192)
    assert c3 is not None and c3.history == [] and c3.median is None
    with pytest.raises(UsageError, match="not a date"):
        Selection.of(since="yesterday")


def test_a_third_session_that_moves_a_figure_is_a_change(fake_matrix: Path,
                                                          tmp_path: Path) -> None:
    tree = bench_sessions(fake_matrix, tmp_path, [1.0, 1.0, 0.9],
                          kernels=["6.1.0", "6.1.0", "6.1.99"])
    out = tmp_path / "report"
    summary = build_report(tree, out)
    g = summary.groups[0]
    cell = g.cell(ASM, "aes-128-cbc", 8192)
    assert cell is not None and len(cell.history) == 3
    [change] = cell.changes
    assert change.at == cell.history[2] and change.reference == cell.history[1]
    assert not change.confirmed  # the newest session: to confirm with another one
    assert change.ratio == pytest.approx(-0.10, abs=0.005)
    assert ("kernel", "Linux 6.1.0 x86_64", "Linux 6.1.99 x86_64") in change.conditions
    # every cell moved: every cell of every table is in the list, none twice
    assert summary.changes == sum(len(g.cells) for g in summary.groups)
    html = (out / "index.html").read_text()
    changed = html.split('id="changes"')[1].split('id="quality"')[0]
    assert f'<a href="{cell.page}">{escape(cell.title)}</a>' in changed
    assert "changed on " in changed and "by -10.0 % (to confirm)" in changed
    assert "kernel: Linux 6.1.0 x86_64 → Linux 6.1.99 x86_64" in changed
    assert html.index('id="changes"') < html.index('id="methods"')  # the page opens with it
    data = json.loads((out / "data" / "report.json").read_text())
    entry = next(c for c in data["changes"] if c["page"] == cell.page)
    assert entry["session"] == cell.history[2].session and entry["confirmed"] is False
    assert entry["ratio"] == pytest.approx(change.ratio)
    assert {"what": "kernel", "before": "Linux 6.1.0 x86_64",
            "after": "Linux 6.1.99 x86_64"} in entry["conditions_changed"]
    # the cell's page: the chart with three sessions and the change marked, every link
    # resolves (the shown session's runs in the report, the others in the tree)
    page = (out / cell.page).read_text()
    chart = page.split('<svg class="history"')[1].split("</svg>")[0]
    assert chart.split('points="')[1].split('"')[0].count(",") == 3  # three medians
    assert chart.count("V") == 3  # three intervals
    assert chart.count('class="changed"') == 1 and chart.count('class="shown"') == 1
    for t in links(page):
        assert (out / "cells" / t).resolve().is_file(), t
    copied = {p.parent.parent for p in (out / "runs").glob("*/*/*/*/raw/*.stdout")}
    assert len(copied) == 4 * 3  # the latest session: four variants, three rounds


def test_the_change_rule_sustained_outlier_and_no_interval() -> None:
    """The rule of ``history``, on sessions given by their intervals."""

    def s(i: int, median: float, half: float | None) -> SessionFigure:
        e = estimate([median]) if half is None else estimate([median - half, median,
                                                              median + half])
        prov = Provenance(f"s{i}", False, f"2026-12-0{i}T00:00:00", "e", None, None,
                          "6.1" if i < 4 else "6.2", None, None)
        return SessionFigure(f"s{i}", prov.started, prov, e, 3, ())

    assert MIN_RUN == 2
    level = [s(1, 100, 1), s(2, 100.5, 1)]
    assert changes(level) == []
    # one odd session that falls back: an outlier, never a change nor a reference
    assert changes([*level, s(3, 90, 1), s(4, 100, 1)]) == []
    # sustained: confirmed, with the kernel that changed at it
    [c] = changes([*level, s(3, 100, 1), s(4, 90, 1), s(5, 90.2, 1)])
    assert c.confirmed and c.at.session == "s4" and c.reference.session == "s3"
    assert c.conditions == (("kernel", "6.1", "6.2"),)
    assert c.text().startswith("changed on 2026-12-04 by -10.0 %; kernel 6.1 → 6.2")
    # sessions without an interval never start or confirm one
    assert changes([*level, s(3, 50, None), s(4, 50, None)]) == []


def test_a_run_without_a_session_id_gets_one_derived(fake_matrix: Path,
                                                      tmp_path: Path) -> None:
    """Trees written before runs named their session: from the bench journal, else the
    series of a repeated bench; the same grouping either way, never one pool."""
    tree = bench_sessions(fake_matrix, tmp_path, [1.0, 1.0])
    recorded = build_report(tree, tmp_path / "a").groups[0].cell(ASM, "aes-128-cbc", 8192)
    assert recorded is not None
    for path in tree.root.glob(f"*/*/*/*/{META}"):
        meta = json.loads(path.read_text())
        del meta["session"]
        path.write_text(json.dumps(meta))
    old = build_report(tree, tmp_path / "b").groups[0].cell(ASM, "aes-128-cbc", 8192)
    assert old is not None
    assert [f.session for f in old.history] == [FROM_JOURNAL + f.session
                                                for f in recorded.history]
    assert all(f.prov.derived for f in old.history)
    for journal in (tree.root / "_journal").rglob("*.json"):
        journal.unlink()
    older = build_report(tree, tmp_path / "c").groups[0].cell(ASM, "aes-128-cbc", 8192)
    assert older is not None and len(older.history) == 2
    assert all(f.session.startswith(FROM_SERIES) for f in older.history)
    assert [f.estimate for f in older.history] == [f.estimate for f in recorded.history]
    assert "(derived)" in (tmp_path / "c" / "index.html").read_text()


def test_the_export_names_sessions_and_gives_one_row_per_sessions_median(
        fake_matrix: Path, tmp_path: Path) -> None:
    tree = bench_sessions(fake_matrix, tmp_path, [1.0, 0.9])
    rows = list(csv.DictReader(io.StringIO(render(tree, "csv"))))
    assert len({r["session"] for r in rows}) == 2
    assert all(r["session_derived"] == "False" for r in rows)
    text = render_rows(list(session_medians(records(tree))), SESSION_FIELDS, "csv")
    medians = list(csv.DictReader(io.StringIO(text)))
    assert len(medians) == len(rows) // 3  # three rounds per session
    aes = [r for r in medians if r["variant"] == "1.1.1w-asm-x86_64" and r["mask"] == "native"
           and r["algorithm"] == "aes-128-cbc" and r["block_size"] == "8192"]
    assert [r["samples"] for r in aes] == ["3", "3"] and aes[0]["session"] != aes[1]["session"]
    assert float(aes[0]["bytes_per_s"]) == pytest.approx(EVP_AES)
    assert float(aes[1]["bytes_per_s"]) == pytest.approx(EVP_AES * 0.9)
    assert float(aes[0]["ci_low"]) < EVP_AES < float(aes[0]["ci_high"])
    assert aes[0]["ci_method"] == "t95" and aes[0]["runs"] == "3"
    assert re.fullmatch(r"ok=3", aes[0]["statuses"])


def test_a_session_low_on_history_and_on_the_cpu_model_names_both(
        fake_matrix: Path, tmp_path: Path) -> None:
    """Issue 31, item 4's third reference: a session at half the earlier sessions' level
    sits below the CPU model's figure for the host's core at the run's measured clock too
    (the records keep the host's CPUID family and model, and the clock probe's clock)."""
    tree = bench_sessions(fake_matrix, tmp_path, [1.0, 1.0, 0.5])
    meta = json.loads(next(tree.root.rglob("meta.json")).read_text())
    assert {"cpu_family", "cpu_model_number"} <= set(meta["host"])
    summary = build_report(tree, tmp_path / "report")
    cell = summary.groups[0].cell(ASM, "aes-128-cbc", 8192)
    assert cell is not None and cell.model_figure == pytest.approx(2.45e9 / 2.5)
    assert cell.sits_low is not None
    assert "50% below the best of 2 earlier session(s)" in cell.sits_low
    # the best sample (the level's 0.70 GB/s times its repetition's small factor) against 0.98
    assert re.search(r"\b2[89]% below the CPU model's figure", cell.sits_low), cell.sits_low


def test_a_whole_session_that_sits_low_is_said_so(fake_matrix: Path, tmp_path: Path) -> None:
    """Issue 31, item 4: a session whose every sample is 10 % slower (a sibling busy for
    the whole session: its own spread is as narrow as ever) is marked on the page against
    the earlier sessions of the cell; the sessions before it are not."""
    tree = bench_sessions(fake_matrix, tmp_path, [1.0, 1.0, 0.9])
    out = tmp_path / "report"
    summary = build_report(tree, out)
    cells = [c for g in summary.groups for c in g.cells.values()]
    # the no-asm build's C code is outside the CPU model: history alone says it sits low
    plain = [c for c in cells if c.model_figure is None]
    assert plain and all(c.sits_low is not None and "10% below the best of 2 earlier "
                         "session(s)" in c.sits_low for c in plain)
    # the fake's synthetic AES-NI figure (1.26 GB/s at 0.9) is above what the model gives
    # the host's core (Zen: 10 rounds x 4 cycles / 16 bytes at 2.45 GHz = 0.98 GB/s), so
    # the model says the core did all it can: not low on all three, not marked
    cell = summary.groups[0].cell(ASM, "aes-128-cbc", 8192)
    assert cell is not None and cell.model_figure == pytest.approx(2.45e9 / 2.5)
    assert cell.sits_low is None
    html = (out / "index.html").read_text()
    # every such cell is marked wherever the page shows it (one cell's mark per showing)
    assert html.count('class="bad low"') >= len(plain)
    first = build_report(tree, tmp_path / "r1",
                         selection=Selection.of(cell.history[1].session))
    c1 = first.groups[0].cell(ASM, "aes-128-cbc", 8192)
    assert c1 is not None and c1.sits_low is None
    assert 'class="bad low"' not in (tmp_path / "r1" / "index.html").read_text()


def test_a_rounds_ratio_on_too_few_pairs_says_so_instead_of_an_interval(
        fake_matrix: Path, tmp_path: Path) -> None:
    """Issue 31: a bench session of three rounds (``bench --repeat 3``, the fake engine)
    gives each comparison 3+3 samples, too few for the two sets' interval, and 3 same-round
    pairs, too few for theirs (6, docs/noise.md §3). Both sides get the same factor in each
    round, so the pairs agree exactly: a t interval on them (the rule until 2026-12-06) was
    [1.000–1.000]. The page's paired table, report.json and the summary's text say "too
    few pairs" instead."""
    tree = bench_sessions(fake_matrix, tmp_path, [1.0])
    out = tmp_path / "report"
    summary = build_report(tree, out)
    data = json.loads((out / "data" / "report.json").read_text())
    rows = data["paired"]
    assert rows and {r["kind"] for r in rows} >= {"asm/no-asm", "release", "mask/native"}
    for r in rows:
        assert (r["pairs"], r["samples"], r["ci_low"], r["ci_high"]) == (3, [3, 3], None, None)
        assert r["ci_method"] == "mann-whitney"
    html = (out / "index.html").read_text()
    table = html[html.index('id="paired"'):]
    table = table[:table.index("</table>")]
    assert table.count("too few pairs: n=3, 3+3 samples") == len(rows)
    assert "[" not in table.split("<tbody>")[1]  # no row shows an interval
    lines = [x for x in summary.text().splitlines() if " / " in x and "bytes, " in x]
    assert lines and all(x.endswith("(too few pairs: n=3, 3+3 samples)") for x in lines)
