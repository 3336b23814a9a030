"""The report page of issue 16: one unit, runs named, imported reports titled by their
source, a measurement-quality panel, the reproductions' grids and the CPU model's words,
and a progress line while the charts are drawn.

The tree comes from the real Builder, Bencher and reproduce() against the fake backend
(the one seam), the import from the Ivy Bridge blog's tables (the real `import` code).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from openssl_matrix.cli.commands.import_ import run as cmd_import
from openssl_matrix.core.stats import estimate
from openssl_matrix.core.units import MBPS, raw_bytes, speed_k
from openssl_matrix.report.page import build_report
from openssl_matrix.repro.run import reproduce
from openssl_matrix.repro.specload import load_spec
from openssl_matrix.results.tree import ResultsTree

from ..fake.test_report import FIXTURES, links, make_tree
from ..fake.test_reproduce_fake import EVP_AES, setup  # noqa: F401  (setup is a fixture)

CPU_CLAIM = ("  - {id: twice-on-its-cpu, says: about 2x on its CPU, compare: [evp-on, evp-off],\n"
             "      expect: ratio, ratio: 2.0, depends_on: cpu}\n")


def test_units() -> None:
    assert MBPS.num(1_400_000_000.0) == "1,400.0"
    assert MBPS.num(12_340_000.0) == "12.34" and MBPS.num(123_400.0) == "0.123"
    assert MBPS.text(None) == "—" and MBPS.text(2e6) == "2.00 MB/s"
    assert MBPS.num(0.0, like=1_400_000_000.0) == "0.0"  # a half-width, as its median
    assert speed_k(1_086_559_570.0) == "1,086,559.57k"
    assert raw_bytes(1_400_000_000.0) == "1,400,000,000 bytes/s (1,400,000.00k)"


def test_one_unit_named_runs_and_a_quiet_quality_panel(
        fake_matrix: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = make_tree(fake_matrix, tmp_path, rounds=1, repeat=2)
    out = tmp_path / "report"
    summary = build_report(tree, out)
    html = (out / "index.html").read_text()
    # the old page printed speed's "1000s of bytes" (1,400,000.00k) in its tables: no
    # figure shown in the page carries that unit any more, only MB/s (speed's own unit is
    # quoted in tooltips, and once in the legend that converts it)
    shown = re.sub(r'title="[^"]*"', "", html).replace("1,400,000.00k is", "")
    assert not re.search(r"\d\.\d\dk\b", shown)
    cell = summary.groups[0].cell("asm + AES-NI & SHA ext.", "aes-128-cbc", 8192)
    assert cell is not None
    assert f">{MBPS.num(EVP_AES)} <span class=\"pm\">± " in html
    assert "Method tables (8192-byte blocks, MB/s)" in html
    # the raw figure is in the tooltip
    assert f"median {raw_bytes(EVP_AES)}" in html
    # provenance: one link per cell to its page; there each run is linked by its name,
    # its meta.json beside it
    assert f'<a class="cell" href="{cell.page}"' in html
    page = (out / cell.page).read_text()
    assert re.search(r'<a href="\.\./runs/[^"]+/0001/raw/[^"]+\.stdout" title="[^"]+/0001: ',
                     page)
    assert ">0002</a> <a class=\"meta\"" in page
    assert not re.search(r">m</a>", html)
    # every figure of the fake engine is ok: the panel says so, no table for it
    assert "Measurement quality" in html and "figure(s) are <em>ok</em>" in html
    # a progress line with elapsed time while the charts are drawn
    err = capsys.readouterr().err
    assert re.search(r"drawing charts: 6/6 \(\d+\.\ds\)", err), err
    # the summary printed to the terminal is in the page's unit too
    assert "interval, MB/s\n" in summary.text()
    # each terminal figure carries its sample count, as in the page
    assert re.search(rf"{re.escape(MBPS.num(EVP_AES))} ± [\d.,]+ \(n=2\)", summary.text())


def test_flagged_figures_reproductions_and_imports_in_the_page(
        setup: tuple[Path, object, object, ResultsTree],  # noqa: F811
        tmp_path: Path) -> None:
    spec_path, env, backend, tree = setup
    text = spec_path.read_text().replace(
        "m: {cpu: Made-up CPU, clock_ghz: 2.0, flags: [aes]}",
        "m: {cpu: Made-up CPU, core: ivybridge, clock_ghz: 2.0, flags: [aes]}")
    spec_path.write_text(text.replace("  - {id: faster, says: faster,",
                                      CPU_CLAIM + "  - {id: faster, says: faster,"))
    reproduce(load_spec(spec_path), env, backend, tree)  # type: ignore[arg-type]
    cmd_import(target=str(FIXTURES / "reports" / "ivy-bridge-aesni-blog.txt"), matrix="",
               results=str(tree.root), as_="ivy-bridge")
    out = tmp_path / "report"
    summary = build_report(tree, out)
    html = (out / "index.html").read_text()
    for t in links(html):
        assert (out / t).is_file(), t

    # the imported report is titled by its source, never "OpenSSL ? · ?"
    assert "ivy-bridge (as published: ivy-bridge-aesni-blog.txt) · OpenSSL 1.0.1e" in html
    assert "OpenSSL ?" not in html
    # its figures are transcribed, not repetitions: no interval, no error bar (the two
    # runs of the blog, 170 and 334 MB/s, gave a bar from -800 to +1300 MB/s)
    ref = next(g for g in summary.groups if g.key.cpu == "ref-ivy-bridge")
    published = ref.cell("as published", "aes-128-cbc", 8192)
    assert published is not None and published.estimate is not None
    assert published.estimate.half_width is None and published.error_bar(1e6) == (0.0, 0.0)
    # a measured cell's lower arm stops at zero
    measured = next(c for g in summary.groups if not g.key.source for c in g.cells.values())
    wide = type(measured)([dataclasses.replace(measured.observations[0], bytes_per_s=v)
                           for v in (1e6, 9e6)])
    # (1 MB/s is far below the best sample, 9: out of the median by the 5 % rule)
    assert wide.ok_values == [9e6] and wide.below_best_values == 1
    wide.__dict__["estimate"] = estimate([1e6, 9e6])  # an interval wider than its median
    assert wide.error_bar(1e6)[0] == pytest.approx(5.0)
    assert wide.error_bar(1e6)[1] > 5.0

    # the quality panel: the one-word mask's figures are mask-overreach (out of the
    # medians), the low-level path's legacy-path (in them), each linked to its runs
    panel = html.split('id="quality"')[1].split('id="methods"')[0]
    rows = dict(re.findall(r'<td class="(?:bad|muted)">([a-z-]+)</td><td class="num">(\d+)',
                           panel))
    # (the figures the tables show: each cell's latest session; the one-word mask runs
    # aes-128-cbc only: sha256 is compared by claims that cannot be judged here, so it is
    # not measured)
    assert int(rows["mask-overreach"]) >= 1 and int(rows["legacy-path"]) >= 2
    assert re.search(r"\d+ of \d+ figure\(s\) flagged; \d+ of them kept out of the medians",
                     panel)
    figures_links = re.findall(r'href="(runs/[^"]+/figures\.json)"', panel)
    assert figures_links
    flagged = json.loads((out / figures_links[0]).read_text())
    assert any(f.get("status") != "ok" for f in flagged)

    # the reproduction: the CPU model's verdict in words, reference → ours per block,
    # and the measurements' figures in MB/s
    repro = html.split('id="repro"')[1].split('id="sessions"')[0]
    assert "here 4.00× as the model predicts 4.00×" in repro
    assert "by the CPU model" in repro and "by our ratio" in repro and "depends on: cpu" in repro
    assert re.search(r"<td class=\"num\">2\.00×</td><td class=\"num\">4\.00×</td>", repro)
    assert f'title="{raw_bytes(EVP_AES)}">{MBPS.num(EVP_AES)}</td>' in repro
    assert "Reference (MB/s)" in repro


def test_a_busy_host_shows_its_flags_not_medians(fake_matrix: Path, tmp_path: Path) -> None:
    """Every figure flagged contended (as on a busy host): no cell has a median and no
    chart is drawn; each cell says what its flagged runs read, the panel counts them."""
    tree = make_tree(fake_matrix, tmp_path, rounds=1, repeat=2)
    for path in tree.root.glob("*/*/*/*/figures.json"):
        figures = json.loads(path.read_text())
        for f in figures:
            f["status"] = "contended"
        path.write_text(json.dumps(figures))
    out = tmp_path / "report"
    summary = build_report(tree, out)
    assert summary.charts == []
    html = (out / "index.html").read_text()
    assert html.count("No chart: not one figure of this table is usable") == 2
    assert f"≈ {MBPS.num(EVP_AES)}, all 2 contended" in html
    assert "[contended]" not in html, "a status all runs share is said once per cell"
    assert "[contended]" in (out / summary.groups[0].cells[next(iter(summary.groups[0].cells))]
                             .page).read_text(), "the cell's page marks each run's status"
    panel = html.split('id="quality"')[1].split('id="methods"')[0]
    assert re.search(r"(\d+) of \1 figure\(s\) flagged; \1 of them kept out", panel)
    assert "1.1.1w-asm-x86_64/quick: <a href=" in panel
    # the terminal table says why a cell has no figure, never a bare dash
    assert "no ok: all 2 contended" in summary.text()


def test_a_method_row_of_only_contended_figures_stays_in_its_chart(
        fake_matrix: Path, tmp_path: Path) -> None:
    """The bulk method chart: a row whose figures were all contended is drawn where its
    bars would be, unfilled and cross-hatched at what they read, labelled with their
    status, and keeps its legend entry (the public-key and handshake charts do the same)."""
    from openssl_matrix.report.charts import FLAGGED_LEGEND, Charts

    from .test_report_ops import capture_charts, flagged_bars

    tree = make_tree(fake_matrix, tmp_path, rounds=1, repeat=2)
    for path in tree.root.glob("*/1.1.1w-asm-x86_64/*/*/figures.json"):
        figures = json.loads(path.read_text())
        for f in figures:
            if f["mask"] == "no-aesni":
                f["status"] = "contended"
        path.write_text(json.dumps(figures))
    charts, save = capture_charts()
    summary = build_report(tree, tmp_path / "report", charts=Charts(save=save))
    g = summary.groups[0]
    masked = "asm, AES-NI & PCLMULQDQ off"
    cell = g.cell(masked, "aes-128-cbc", 8192)
    assert cell is not None and cell.median is None and cell.flagged is not None
    [ax] = charts[f"{g.key.slug}-methods-8192.png"].axes
    legend = [x.get_text() for x in ax.get_legend().get_texts()]
    assert masked in legend and FLAGGED_LEGEND in legend
    read = [f.value for a in ("aes-128-cbc", "sha256")
            if (c := g.cell(masked, a, 8192)) and (f := c.flagged)]
    assert [b.get_height() * MBPS.scale for b in flagged_bars(ax)] == pytest.approx(read)
    assert len(read) == 2
    assert [x.get_text() for x in ax.texts] == [" all 2 contended"] * 2


def test_the_quality_panel_counts_every_kind_and_splits_by_kind(
        fake_matrix: Path, tmp_path: Path) -> None:
    """Bulk figures (the fake tree's real outputs) and public-key figures (real 3.0.20
    values, one contended) in one panel: counted per kind, added up only as counts; a
    cell's samples decide whether it carries an interval."""
    from openssl_matrix.report.quality import quality
    from openssl_matrix.report.types import group_observations, observations

    from .test_report_ops import DSA2048_SIGN, RSA1024_SIGN, _obs

    tree = make_tree(fake_matrix, tmp_path, rounds=1, repeat=2)  # n=2 in one session
    bulk = observations(tree)
    cells = [c for g in group_observations(bulk) for c in g.cells.values()]
    q = quality(bulk, [_obs("pkey", "3.0.20", "rsa1024 sign", RSA1024_SIGN),
                       _obs("pkey", "3.0.20", "dsa2048 sign", DSA2048_SIGN, "contended")])
    b, p = q.kinds
    assert (b.kind, b.figures, b.cells) == ("bulk", len(bulk), len(cells))
    assert b.with_interval == sum(len(c.ok_values) >= 2 for c in cells) > 0
    assert b.ok + b.flagged_in_medians + b.flagged_out == b.figures
    assert (p.kind, p.figures, p.ok, p.flagged_out, p.contended) == ("pkey", 2, 1, 1, 1)
    assert (p.cells, p.with_interval, p.one_sample, p.no_usable) == (2, 0, 1, 1)
    assert q.total == len(bulk) + 2
    contended = next(r for r in q.statuses if r.status == "contended")
    assert contended.by_kind == {"pkey": 1} and contended.kinds_text == "1 pkey"
    lines = q.lines()
    assert lines[1].startswith(f"  bulk ciphers and hashes (MB/s): {len(bulk)} figure(s)")
    assert lines[2].startswith("  public-key operations (ops/s): 2 figure(s): 1 ok, 1 "
                               "flagged (0 kept in the medians, 1 kept out, 1 of them "
                               "contended); 2 table cell(s): 0 with a 95 % interval")
