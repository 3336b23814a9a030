"""The report's *Profiles* section from profiles `invoke matrix profile` filed (engine faked
at its seam, around the real perf capture in tests/fixtures/perf: see
test_profile_fake.py): each cell's flame graph and a comparison's differential one,
copied into the report folder and opened from disk by a real browser (Chromium)."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

from openssl_matrix.report.page import build_report
from openssl_matrix.results.profiles import latest_comparisons, latest_profiles
from openssl_matrix.results.tree import ResultsTree

from ..browser import open_moved_report
from ..unit.test_report_browser import need_chromium
from .test_profile_fake import faked, responder, run

BOTH = "1.1.1w-asm-x86_64,3.0.20-asm-x86_64"

FACTS = """
(() => {
  const imgs = Array.from(document.querySelectorAll('img.flame'));
  const section = document.getElementById('profiles');
  return {
    heading: section ? section.textContent : null,
    nav: Array.from(document.querySelectorAll('nav a')).map(a => a.textContent),
    flames: imgs.map(i => ({src: i.getAttribute('src'), complete: i.complete,
                            width: i.naturalWidth, shown: i.getBoundingClientRect().width})),
    links: Array.from(document.querySelectorAll('a[href^="profiles/"]'))
      .map(a => a.getAttribute('href')),
  };
})()
"""


def profiled_tree(tmp_path: Path, fake_matrix: Path) -> Path:
    backend, root = faked(tmp_path, fake_matrix,
                          responder({"1.1.1w": 1_200_000, "3.0.20": 1_000_000}))
    assert run(backend, fake_matrix, root, only="", compare=BOTH) == 0
    return root


def test_the_report_shows_each_profile_and_the_comparison(tmp_path: Path,
                                                           fake_matrix: Path) -> None:
    root = profiled_tree(tmp_path, fake_matrix)
    assert [f.record["variant"] for f in latest_profiles(root)] == BOTH.split(",")
    [comparison] = latest_comparisons(root)
    summary = build_report(ResultsTree(root), tmp_path / "report")
    out = summary.out_dir
    page = (out / "index.html").read_text(encoding="utf-8")
    assert '<h2 id="profiles">' in page and '<a href="#profiles">Profiles</a>' in page
    data = json.loads((out / "data" / "report.json").read_text())
    cells, comps = data["profiles"]["cells"], data["profiles"]["comparisons"]
    assert [c["variant"] for c in cells] == BOTH.split(",")
    for c in cells:  # the page's figures are the filed record's
        filed = next(f.record for f in latest_profiles(root) if f.record["variant"] == c["variant"])
        assert c["ns_per_op"] == filed["ns_per_op"] and c["samples"] == filed["samples"] > 0
        assert c["status"] == filed["status"] and c["cell"] == "speed-sha256-16"
        ElementTree.parse(out / c["svg"])  # a copy in the report folder, well-formed SVG
        assert (out / c["folded"]).read_text() == (
            Path(c["source"]) / "stacks.folded").read_text()
    [comp] = comps
    assert (comp["a"], comp["b"]) == tuple(BOTH.split(","))
    assert comp["gap"] == comparison.record["gap_ns_per_op"]
    assert comp["share"] == comparison.record["explained_share"]
    ElementTree.parse(out / comp["svg"])
    assert f'{comp["a"]} → {comp["b"]}' in page


def test_a_profile_folder_without_its_record_is_not_shown(tmp_path: Path,
                                                          fake_matrix: Path) -> None:
    """A profile interrupted before its meta.json (written last) was never finished."""
    root = profiled_tree(tmp_path, fake_matrix)
    cell = root / "_profiles" / "3.0.20-asm-x86_64" / "speed-sha256-16"
    (cell / "0002").mkdir()
    (cell / "0002" / "flame.svg").write_text("<svg")
    [shown] = [f for f in latest_profiles(root) if f.record["variant"] == "3.0.20-asm-x86_64"]
    assert shown.folder.name == "0001"


def test_the_flame_graphs_open_from_disk_in_a_browser(tmp_path: Path,
                                                      fake_matrix: Path) -> None:
    need_chromium()
    root = profiled_tree(tmp_path, fake_matrix)
    summary = build_report(ResultsTree(root), tmp_path / "moved-later")
    page = open_moved_report(summary.out_dir, tmp_path, FACTS)
    facts = page.result
    assert page.errors == [], page.errors
    assert facts["heading"] == "Profiles: where the time goes"
    assert "Profiles" in facts["nav"]
    assert len(facts["flames"]) == 3  # two builds' flame graphs and the differential one
    for img in facts["flames"]:
        assert img["complete"] and img["width"] > 0 and img["shown"] > 0, img
    assert any(h.endswith("/diff.svg") for h in facts["links"]), facts["links"]
    assert any(h.endswith("/stacks.folded") for h in facts["links"]), facts["links"]
