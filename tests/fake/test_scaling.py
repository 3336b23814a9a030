"""The report's scaling section and the method labels of AEAD and -multi figures.

The tree is made by the real Builder and Bencher against the fake backend, answering the
real wrapped runs of tests/fixtures/hostacct/multi{1,2}-aead-chacha (1.1.1w, -aead
chacha20-poly1305 at 16384 bytes, 1 and 2 processes) and the real probe of this machine's
sysfs (tests/fixtures/topology).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from openssl_matrix.measure.speedcmd import unwrap_speed
from openssl_matrix.report.page import build_report
from openssl_matrix.report.types import observations
from openssl_matrix.results.tree import ResultsTree

from ..fakes import one_release_bench

HOST = Path(__file__).resolve().parents[1] / "fixtures" / "hostacct"
PROBE = Path(__file__).resolve().parents[1] / "fixtures" / "topology" / "probe-2cpu-vm.txt"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ResultsTree:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))

    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        cmd = unwrap_speed(command)
        n = cmd[cmd.index("-multi") + 1]
        name = f"multi{n}-aead-chacha"
        return 0, (HOST / f"{name}.stdout").read_text(), (HOST / f"{name}.stderr").read_text()

    # the real probe of a 2-CPU VM: /proc/cpuinfo and sysfs topology
    m, _, t, bencher = one_release_bench(tmp_path, """\
  scale:
    kind: aead
    algorithms: [chacha20-poly1305]
    seconds: 1
    bytes: 16384
    multi: [1, all]
    repeat: 2
""", responder, cpuinfo=PROBE.read_text())
    bencher.bench(m.select("1.1.1w-asm-x86_64"), m.suite("scale"), "auto", repeat=2)
    return t


def test_multi_figures_are_labelled_and_scaled(tree: ResultsTree, tmp_path: Path) -> None:
    obs = observations(tree)
    assert {(o.processes, o.aead) for o in obs} == {(1, True), (2, True)}
    summary = build_report(tree, tmp_path / "report", block_size=16384)
    text = summary.text()
    assert "scaling at 16384 bytes" in text
    assert "topology: 2 logical CPUs = 2 cores, 1 thread per core (no SMT), 1 package" in text
    assert "2 processes on CPUs 0-1 (2 cores): one core each" in text
    data = json.loads((tmp_path / "report" / "data" / "report.json").read_text())
    [view] = data["scaling"]
    [line] = view["lines"]
    assert line["algorithm"] == "chacha20-poly1305" and "-aead" in line["method"]
    assert [r["processes"] for r in line["rows"]] == [1, 2]
    one, two = line["rows"]
    # both captures come from the busy host (the container on a CPU 52 % and 36 % of the
    # time, other work 1.3-1.5 cores): every figure is contended, no median, no ideal; the
    # chart shows what the flagged runs read, unfilled and labelled
    assert one["statuses"] == two["statuses"] == "2 contended"
    assert one["figure"].startswith("no ok") and one["ideal"] == "—"
    assert view["chart"] and (tmp_path / "report" / view["chart"]).is_file()
    page = (tmp_path / "report" / "index.html").read_text()
    assert '<h2 id="scaling">' in page and "ideal line" in page
    # the method table tells one process from two
    methods = {m for t in data["method_tables"] for m in t["methods"]}
    assert any(m.endswith("-aead · 2 processes") for m in methods)
    assert any(m.endswith("-aead") for m in methods)
