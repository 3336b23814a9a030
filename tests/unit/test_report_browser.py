"""The HTML report in a real browser: headless Chromium opens it from disk (file://),
shows its tables and charts, and logs no console errors, exceptions or failed loads.

Chromium is Debian's package (`apt-get install chromium`; `.ci/setup` installs it when
missing). Outside CI a machine without it skips this test and says so; in CI (``CI`` set)
a missing browser is a failure.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from openssl_matrix.report.page import build_report

from ..browser import chromium, open_moved_report, open_page
from ..fake.test_report import make_tree
from ..sessiontrees import Replay, bench_sessions

PAGE_FACTS = """
(() => {
  const imgs = Array.from(document.images);
  const tables = Array.from(document.querySelectorAll('table'));
  const method = tables.find(t => !t.classList.contains('quality'));  // the first table
  return {
    title: document.title,
    tables: tables.length,
    visibleTables: tables.filter(t => t.getBoundingClientRect().height > 0).length,
    methodRows: Array.from(method ? method.querySelectorAll('tr th:first-child') : [])
      .map(th => th.textContent),
    images: imgs.map(i => ({src: i.getAttribute('src'), complete: i.complete,
                            width: i.naturalWidth, height: i.naturalHeight,
                            shown: i.getBoundingClientRect().width})),
    links: Array.from(document.querySelectorAll('a[href]')).length,
    figures: Array.from(document.querySelectorAll(
        'table:not(.quality):not(.sessions):not(.changes) td.num'))  // not counts
      .map(td => td.firstChild ? td.firstChild.textContent.trim() : ''),
    provenance: Array.from(document.querySelectorAll('.prov a')).map(a => a.textContent),
    headings: Array.from(document.querySelectorAll('h2, h3')).map(h => h.textContent),
    protocol: location.protocol,
  };
})()
"""


def need_chromium() -> None:
    if chromium() is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs chromium for the HTML report test: `bash .ci/setup` "
                        "installs Debian's chromium package")
        pytest.skip("chromium is not installed (apt-get install chromium); the HTML report "
                    "was not checked in a browser")


def test_html_report_opens_from_disk_with_tables_and_charts(fake_matrix: Path,
                                                            tmp_path: Path) -> None:
    need_chromium()
    tree = make_tree(fake_matrix, tmp_path, rounds=1)
    summary = build_report(tree, tmp_path / "moved-later")
    page = open_moved_report(summary.out_dir, tmp_path, PAGE_FACTS)
    facts = page.result
    assert page.errors == [], page.errors
    assert facts["protocol"] == "file:"
    assert facts["title"] == "openssl-matrix report"
    # the quality panel's table per kind, method tables, by-size tables, runs
    assert facts["tables"] == 6 and facts["visibleTables"] == 6
    assert facts["methodRows"][:5] == ["Method", "no-asm", "no-asm, AES-NI & PCLMULQDQ off",
                                       "asm, AES-NI & PCLMULQDQ off",
                                       "asm + AES-NI & SHA ext."]
    assert len(facts["images"]) == 6
    for img in facts["images"]:
        assert img["complete"] and img["width"] == 1100 and img["height"] == 480, img
        assert img["shown"] > 0, img
    assert facts["links"] > 20
    # one unit on the page (issue 16: the tables were in speed's 1000s of bytes/s, "k"),
    # every figure a number with its sample count, every run link named by its run
    assert "Method tables (8192-byte blocks, MB/s)" in facts["headings"]
    assert "Measurement quality" in facts["headings"]
    shown = [f for f in facts["figures"] if f]
    assert shown and all(re.fullmatch(r"[\d,]+\.\d+", f) for f in shown), shown
    # one link per cell, to the cell's own page (its sessions and runs)
    assert set(facts["provenance"]) == {"1 session"}, facts["provenance"]


def test_a_broken_page_is_caught(tmp_path: Path) -> None:
    """The checker itself sees console errors and images that do not load."""
    need_chromium()
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><head><title>x</title></head><body>'
                    '<img src="missing.png"><script>console.error("boom")</script>'
                    "</body></html>")
    report = open_page(page.as_uri(), "Array.from(document.images).map(i => i.naturalWidth)")
    assert report.result == [0]
    assert any("boom" in e for e in report.errors), report.errors
    assert any("missing.png" in e for e in report.errors), report.errors


CHANGES_FACTS = """
(() => {
  const section = document.querySelector('table.changes');
  const rows = section ? Array.from(section.querySelectorAll('tr')).slice(1) : [];
  return {
    opensWith: Array.from(document.querySelectorAll('h2')).map(h => h.id)[0],
    changed: rows.map(r => ({cell: r.cells[0].textContent, what: r.cells[1].textContent,
                             conditions: r.cells[3].textContent,
                             href: r.querySelector('a').getAttribute('href')})),
    marked: document.querySelectorAll('a.cell + .changed').length,
    sessions: document.querySelectorAll('table.sessions tr').length - 1,
  };
})()
"""

CHART_FACTS = """
(() => {
  const svg = document.querySelector('svg.history');
  const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  const line = svg.querySelector('polyline.medians');
  const changed = Array.from(svg.querySelectorAll('circle.changed'));
  const bars = svg.querySelector('path.intervals');
  return {
    width: box.width, height: box.height,
    medians: line ? line.getAttribute('points').trim().split(/\\s+/).length : 0,
    intervals: bars ? (bars.getAttribute('d').match(/M/g) || []).length : 0,
    barsHeight: bars ? bars.getBBox().height : 0,
    changed: changed.map(c => c.querySelector('title').textContent),
    changedShown: changed.map(c => c.getBoundingClientRect().width > 0),
    shown: svg.querySelectorAll('circle.shown').length,
    rows: document.querySelectorAll('table.sessions tr').length - 1,
    figure: document.querySelector('p.figure b').textContent,
  };
})()
"""


def test_the_history_chart_and_the_changed_list_on_a_replayed_real_tree(
        fake_matrix: Path, tmp_path: Path) -> None:
    """Three bench sessions of a tree replaying real `openssl speed` runs
    (``sessiontrees.Replay``: tests/fixtures/speed's 1.1.1w and 3.0.20 runs); in the third
    the EVP AES figures are the real legacy-path ones (AES-NI gone) and the kernel
    changed. The page opens with the two cells that changed (1.1.1w's AES rows that had
    AES-NI), the kernel beside them; a changed cell's page draws three sessions with
    their intervals and the change."""
    need_chromium()
    text = fake_matrix.read_text().replace("algorithms: [aes-128-cbc]",
                                           "algorithms: [aes-128-cbc, sha256]")
    fake_matrix.write_text(text)
    tree = bench_sessions(fake_matrix, tmp_path, [1.0, 1.0, 1.0],
                          kernels=["6.1.0", "6.1.0", "6.1.99"], responder=Replay(2))
    folder = tmp_path / "elsewhere" / "report"
    build_report(tree, folder)
    page = open_page((folder / "index.html").as_uri(), CHANGES_FACTS)
    facts = page.result
    assert page.errors == [], page.errors
    assert facts["opensWith"] == "changes" and facts["sessions"] == 3
    assert sorted(c["cell"].split(" · ")[3] for c in facts["changed"]) == \
        ["asm + AES-NI & SHA ext.", "no-asm"]
    for c in facts["changed"]:
        assert "OpenSSL 1.1.1w" in c["cell"] and "aes-128-cbc" in c["cell"]
        assert re.fullmatch(r"changed on \d{4}-\d\d-\d\d by -7\d\.\d % \(to confirm\)",
                            c["what"]), c
        assert "kernel: Linux 6.1.0 x86_64 → Linux 6.1.99 x86_64" in c["conditions"]
    assert facts["marked"] == 2 * 2  # each says "changed" by its link, in both tables
    chart = open_page((folder / facts["changed"][0]["href"]).as_uri(), CHART_FACTS)
    assert chart.errors == [], chart.errors
    c = chart.result
    assert c["width"] == 560 and c["height"] == 170
    assert c["medians"] == 3 and c["intervals"] == 3 and c["barsHeight"] > 0
    assert len(c["changed"]) == 1 and c["changedShown"] == [True]
    assert c["changed"][0].startswith("changed on ") and "kernel" in c["changed"][0]
    assert c["shown"] == 1 and c["rows"] == 3
    assert re.fullmatch(r"[\d,]+\.\d+ ± [\d,.]+ \(n=3\)", c["figure"]), c["figure"]
