"""``invoke matrix parse FILE`` prints units, and throughput apart from operations."""

from __future__ import annotations

from pathlib import Path

import pytest

from openssl_matrix.cli.commands.parse import run as cmd_parse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_parse_prints_units_and_separates_throughput_from_operations(
        capsys: pytest.CaptureFixture[str]) -> None:
    cmd_parse(target=str(FIXTURES / "reports" / "ivy-bridge-aesni-blog.txt"), matrix="",
              results="", json=False)
    out = capsys.readouterr().out
    assert "throughput, bytes per second" in out
    assert "block (bytes)" in out and "bytes/s" in out and "MB/s" in out
    # the blog's 305049.90k at 16 bytes, as bytes/s and MB/s
    assert "305,049,900     305.05  ok" in out
    assert "operations per second" not in out

    cmd_parse(target=str(FIXTURES / "speed" / "real-3.0.20" / "mr-usertime-pk.stdout"),
              matrix="", results="", json=False)
    out = capsys.readouterr().out
    throughput, _, operations = out.partition("operations per second")
    assert "md5" in throughput and "rsa-1024" not in throughput
    assert "ops/s" in operations and "rsa-1024" in operations and "sign" in operations
    assert "bytes/s" not in operations


def test_export_tells_imported_figures_from_measured_ones(tmp_path: Path) -> None:
    import csv
    import io

    from openssl_matrix.cli.commands.import_ import run as cmd_import
    from openssl_matrix.results.export import render
    from openssl_matrix.results.tree import ResultsTree

    tree = ResultsTree(tmp_path / "results")
    cmd_import(target=str(FIXTURES / "reports" / "ivy-bridge-aesni-blog.txt"), matrix="",
               results=str(tree.root), as_="ivy-bridge")
    rows = list(csv.DictReader(io.StringIO(render(tree, "csv"))))
    assert rows and {r["source"] for r in rows} == {"imported:ivy-bridge"}
