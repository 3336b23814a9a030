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

from ..browser import chromium, open_page
from ..fake.test_report import make_tree

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
    figures: Array.from(document.querySelectorAll('table:not(.quality) td.num'))  // not counts
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
    # the folder must work on its own: move it away from the results tree first
    folder = tmp_path / "elsewhere" / "report"
    folder.parent.mkdir()
    summary.out_dir.rename(folder)
    page = open_page((folder / "index.html").as_uri(), PAGE_FACTS)
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
    assert set(facts["provenance"]) >= {"0001", "meta"}, facts["provenance"]


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
