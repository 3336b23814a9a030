"""The report folder: method tables, per-block-size tables, CSV/JSON, charts, links.

The results tree is made by the real Builder and Bencher against the fake backend (the
one seam), answering `openssl speed -mr` in the real 1.1.1w format; a published report
is imported with the real `invoke matrix import` code from the Ivy Bridge blog's tables.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from openssl_matrix.cli.commands.import_ import run as cmd_import
from openssl_matrix.core.errors import ResultsError
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.session import Bencher
from openssl_matrix.report.charts import Charts
from openssl_matrix.report.page import build_report
from openssl_matrix.report.types import describe_mask, method_of, observations
from openssl_matrix.results.tree import ResultsTree

from ..fakes import FakeBackend
from .test_reproduce_fake import EVP_AES, EVP_AES_MASKED, fake_speed

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def make_tree(fake_matrix: Path, tmp_path: Path, rounds: int = 2, repeat: int = 1,
              ) -> ResultsTree:
    """``rounds`` bench commands (sessions) of ``repeat`` rounds each."""
    text = fake_matrix.read_text().replace("    bytes: 8192\n", "")
    text = text.replace("algorithms: [aes-128-cbc]", "algorithms: [aes-128-cbc, sha256]")
    fake_matrix.write_text(text)
    m = load_matrix(fake_matrix, default_urls=default_urls)
    backend = FakeBackend(fake_speed)
    tree = ResultsTree(tmp_path / "results")
    Builder(m, backend, tree, workdir=tmp_path / "work").build(list(m.variants))
    bencher = Bencher(m, backend, tree, engine=backend.engine_info(), git_commit="abc")
    for _ in range(rounds):
        outcomes = bencher.bench(list(m.variants), m.suite("quick"), "auto",
                                 repeat=repeat if repeat > 1 else None)
        assert {o.status for o in outcomes} == {"complete"}
    return tree


def links(html: str) -> list[str]:
    return re.findall(r'(?:href|src)="([^"#]+)"', html)


def test_report_folder(fake_matrix: Path, tmp_path: Path) -> None:
    tree = make_tree(fake_matrix, tmp_path)
    out = tmp_path / "report"
    summary = build_report(tree, out, block_size=8192)
    assert summary.out_dir == out.resolve()
    titles = [g.key.title for g in summary.groups]
    assert titles == ["host-amd-epyc-7b13 · OpenSSL 1.1.1w · x86_64",
                      "host-amd-epyc-7b13 · OpenSSL 3.0.20 · x86_64"]
    g = summary.groups[0]
    # rows in the blog's order: no-asm first, masked asm, asm with the CPU's extensions
    assert g.method_rows() == ["no-asm", "no-asm, AES-NI & PCLMULQDQ off",
                               "asm, AES-NI & PCLMULQDQ off", "asm + AES-NI & SHA ext."]
    assert g.algorithms == ["aes-128-cbc", "sha256"]
    cell = g.cell("asm + AES-NI & SHA ext.", "aes-128-cbc", 8192)
    # two bench commands are two sessions: the figure is the latest one's alone (issue 28),
    # the earlier one stays in the cell's history
    assert cell is not None and cell.median == EVP_AES and len(cell.ok_values) == 1
    assert len(cell.history) == 2 and cell.shown == cell.history[-1]
    assert cell.history[0].session != cell.history[1].session
    assert [f.n for f in cell.history] == [1, 1]
    masked = g.cell("asm, AES-NI & PCLMULQDQ off", "aes-128-cbc", 8192)
    assert masked is not None and masked.median == EVP_AES_MASKED
    assert sorted(g.blocks) == [16, 64, 256, 1024, 8192, 16384]

    # CSV and JSON carry the same medians, and where each came from
    rows = list(csv.DictReader(io.StringIO((out / "data" / "cells.csv").read_text())))
    assert len(rows) == 2 * 4 * 2 * 6  # versions x methods x algorithms x block sizes
    row = next(r for r in rows if r["version"] == "1.1.1w" and r["method"] ==
               "asm + AES-NI & SHA ext." and r["algorithm"] == "aes-128-cbc" and
               r["block_size"] == "8192")
    assert float(row["median_bytes_per_s"]) == EVP_AES and row["n"] == "1"
    assert row["sessions"] == "2" and row["session"] == cell.history[-1].session
    for run in row["runs"].split():
        assert (out / run / "meta.json").is_file()
    table = list(csv.DictReader(io.StringIO(
        (out / "data" / "method-table-8192.csv").read_text())))
    assert [r["method"] for r in table[:4]] == g.method_rows()
    data = json.loads((out / "data" / "report.json").read_text())
    assert data["method_tables"][0]["cells"]["asm + AES-NI & SHA ext."]["aes-128-cbc"] == \
        EVP_AES
    assert len(data["runs"]) == 4  # the shown (latest) session's runs of four variants
    assert len(data["sessions"]) == 2
    jcell = next(c for c in data["cells"] if c["page"] == cell.page)
    assert data["history_columns"] == ["session", "median", "ci_low", "ci_high", "n", "image"]
    assert [data["sessions"][r[0] - 1]["session"] for r in jcell["history"]] == \
        [f.session for f in cell.history]
    assert [r[1] for r in jcell["history"]] == [EVP_AES, EVP_AES]
    assert {"when", "engine", "kernel"} <= set(data["sessions"][0])
    assert jcell["images"][jcell["history"][0][5]].startswith("sha256:")

    # charts: one grouped-bar chart per table, one block-size chart per algorithm
    pngs = sorted(p.name for p in (out / "charts").iterdir())
    assert len(pngs) == 2 * (1 + 2)
    for p in (out / "charts").iterdir():
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert p.stat().st_size > 5000

    # the page: tables, images, one link per cell to its own page; every link resolves
    html = (out / "index.html").read_text()
    assert html.count("<table>") == 2 + 2  # method tables, by-size tables
    assert html.count('<table class="sessions">') == 1
    targets = links(html)
    assert any(t.endswith(".png") for t in targets)
    assert not any(t.endswith(".stdout") for t in targets)
    for t in targets:
        assert (out / t).is_dir() if t.endswith("/") else (out / t).is_file(), t
    assert sum(t.startswith("cells/") for t in targets) == 2 * 4 * 2 * (1 + 6)
    # the cell's page: both sessions, the shown one's run copied and linked; each
    # session's page lists its runs, the earlier one's linked in the tree
    page = (out / cell.page).read_text()
    assert page.count("<tr") == 1 + 2 and '<svg class="history"' in page
    [raw] = [t for t in links(page) if t.endswith(".stdout")]
    assert raw.startswith("../runs/") and (out / "cells" / raw).read_text().startswith("+H:")
    assert [t for t in links(page) if "sessions/" in t] == ["../sessions/2.html"] * 2 + [
        "../sessions/1.html"]  # the figure's session, then the table, newest first
    earlier = links((out / "sessions" / "1.html").read_text())
    runs = [t for t in earlier if t.endswith("/") and "quick" in t]
    assert len(runs) == 4 and not any(t.startswith("../runs/") for t in runs)
    for t in runs:
        folder = (out / "sessions" / t).resolve()
        assert folder.is_relative_to(tree.root.resolve()) and (folder / "meta.json").is_file()
    assert all(t.startswith("../runs/") for t in links((out / "sessions" / "2.html")
                                                       .read_text()) if "quick" in t)


def test_report_replaces_the_old_one_and_keeps_it_on_failure(
        fake_matrix: Path, tmp_path: Path) -> None:
    tree = make_tree(fake_matrix, tmp_path, rounds=1)
    out = tmp_path / "report"
    build_report(tree, out)
    (out / "marker").write_text("old")
    build_report(tree, out)
    assert not (out / "marker").exists()
    (out / "marker").write_text("old")

    def boom(*args: object, **kwargs: object) -> bool:
        raise RuntimeError("chart failed")

    with pytest.raises(RuntimeError):
        build_report(tree, out, charts=Charts(method=boom))
    assert (out / "marker").read_text() == "old", "a failed report leaves the old one alone"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".report")] == []


def test_published_report_appears_beside_ours(fake_matrix: Path, tmp_path: Path) -> None:
    tree = make_tree(fake_matrix, tmp_path, rounds=1)
    cmd_import(target=str(FIXTURES / "reports" / "ivy-bridge-aesni-blog.txt"), matrix="",
               results=str(tree.root), as_="ivy-bridge")
    summary = build_report(tree, tmp_path / "report")
    ref = next(g for g in summary.groups if g.key.cpu == "ref-ivy-bridge")
    assert ref.key.version == "1.0.1e"
    assert ref.method_rows() == ["as published"]
    cell = ref.cell("as published", "aes-128-cbc", 8192)
    assert cell is not None
    assert sorted(cell.ok_values) == [170_519_210.0, 333_987_840.0]
    assert len(cell.history) == 1  # one import: one session
    page = tmp_path / "report" / cell.page
    raw = [t for t in links(page.read_text()) if t.endswith(".txt")]  # the paste, copied
    assert raw and all((page.parent / t).is_file() for t in raw), raw
    for t in links((tmp_path / "report" / "index.html").read_text()):
        assert (tmp_path / "report" / t).exists(), t


def test_methods_and_masks_are_named() -> None:
    assert describe_mask("~0x200000200000000") == "AES-NI & PCLMULQDQ off"
    assert describe_mask("~0x200000000000000:~0x20000000") == "AES-NI & SHA ext. off"
    assert describe_mask(":~0x20") == "AVX2 off"
    assert describe_mask("0x1dbae3ffffebffff") == "OPENSSL_ia32cap=0x1dbae3ffffebffff"


def test_no_tree_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ResultsError) as err:
        build_report(ResultsTree(tmp_path / "nothing"), tmp_path / "out")
    assert "invoke matrix bench" in str(err.value)


def test_engine_and_legacy_runs_get_their_own_rows(fake_matrix: Path, tmp_path: Path) -> None:
    tree = make_tree(fake_matrix, tmp_path, rounds=1)
    obs = observations(tree)
    o = next(x for x in obs if x.asm and x.ia32cap is None)
    from dataclasses import replace

    assert method_of(replace(o, evp=False)) == (3, "asm (no -evp)")
    assert method_of(replace(o, engine="afalg")) == (5, "engine afalg")
    assert method_of(replace(o, host_flags=("sse2",))) == (4, "asm")
