"""The bench's typed records (measure/benchfigure, hostacct, guards, portshare) are the
very JSON the dicts they replaced were: same keys, order and values, every key a reader
sets is declared, and a figure goes through figures.json and back unchanged. And the count
of ``dict[str, Any]`` in ``measure/`` (issue 34: none there) stays 0."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from openssl_matrix.core import statuses
from openssl_matrix.core.stats import RatioEstimate
from openssl_matrix.images import harness
from openssl_matrix.matrix.model import Mask
from openssl_matrix.matrix.tlsvocab import TlsOptions
from openssl_matrix.measure import portshare
from openssl_matrix.measure.benchfigure import (
    BenchFigure,
    FigureFields,
    FindingRecord,
    SeriesHead,
    SeriesRow,
    SettleRecord,
    bench_figures,
)
from openssl_matrix.measure.cell import CellOutcome
from openssl_matrix.measure.guards import Finding, apply_findings
from openssl_matrix.measure.hostacct import AccountingRecord, HostAccounting
from openssl_matrix.measure.library import LibraryInvocation, invocation_name, parse_library
from openssl_matrix.measure.paired import Comparison, ComparisonRecord
from openssl_matrix.measure.session import summarize_series
from openssl_matrix.measure.tls import parse_output, plans
from openssl_matrix.measure.topology import (
    CpuTopology,
    TopologyRecord,
    cpulist,
    parse_topology,
)
from openssl_matrix.parse import figure_records, parse_speed
from openssl_matrix.results import records

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"

#: Lines with ``dict[str, Any]`` left in measure/: 85 before issue 34's typed bench core,
#: 15 before the interleaved pair record (results/pairrecord.py) and the engine's
#: description (engine/engineinfo.py) were typed; none now (issue 34's "done when").
DICT_ANY_IN_MEASURE = 0


def test_dict_str_any_in_measure_only_goes_down() -> None:
    # lines that hold it, as ``grep -rc --include=*.py "dict\[str, Any\]"`` counts
    found = {p.name: sum(1 for line in p.read_text(encoding="utf-8").splitlines()
                         if "dict[str, Any]" in line)
             for p in (ROOT / "openssl_matrix" / "measure").rglob("*.py")}
    total = sum(found.values())
    assert total <= DICT_ANY_IN_MEASURE, {k: n for k, n in sorted(found.items()) if n}


def _old_accounting(acct: HostAccounting) -> dict[str, Any]:
    """What ``HostAccounting.as_dict`` returned before it was typed."""
    return {k: (round(v, 4) if isinstance(v, float) else v)
            for k, v in dataclasses.asdict(acct).items()}


def test_an_accounting_record_is_the_json_it_was() -> None:
    acct = HostAccounting(elapsed_s=3.123456, cpus=2, processes=1, own_cpu_s=2.987654,
                          own_source="cgroup", own_share=0.956789, busy_cores=1.2345678,
                          foreign_cores=0.23456789, idle_cores=0.76543, steal_cores=0.0,
                          iowait_cores=0.00012345, runnable_before=1, runnable_after=None)
    bare = dataclasses.replace(acct, own_cpu_s=None, own_source=None, own_share=None)
    for a in (acct, bare):
        rec: AccountingRecord = a.as_dict()
        assert json.dumps(rec) == json.dumps(_old_accounting(a))
        assert set(rec) == AccountingRecord.__required_keys__
    assert acct.as_dict()["foreign_cores"] == 0.2346


def test_a_finding_record_is_the_json_it_was() -> None:
    for f in (Finding(statuses.CONTENDED, "host not quiet", "inv"),
              Finding(statuses.LEGACY_PATH, "low level", "inv", ("aes-128-cbc", "aes-256-cbc")),
              Finding(statuses.NOISY, "spread", None, ())):
        old = dataclasses.asdict(f)
        old["algorithms"] = None if f.algorithms is None else list(f.algorithms)
        rec: FindingRecord = f.as_dict()
        assert json.dumps(rec) == json.dumps(old)
        assert set(rec) == FindingRecord.__required_keys__


def test_port_readings_are_the_json_they_were() -> None:
    base = portshare.PortBaseline()
    for ipc in (3.0, 3.03, 2.97, 3.01):
        base.observe({"ports_per_cycle": ipc})
    got = portshare.run_readings({"ports_per_cycle": 2.5},
                                 {"error": "the Docker engine is remote"}, base)
    # the usual reading: the upper quartile of 2.5, 2.97, 3.0, 3.01, 3.03 is 3.01
    assert json.dumps(got) == json.dumps(
        {"before": {"ports_per_cycle": 2.5, "share_of_usual": 0.8306}, "after": None})


def _speed_figures() -> list[BenchFigure]:
    d = FIXTURES / "speed" / "real-3.0.20"
    name = next(p.stem for p in sorted(d.glob("*.stdout")) if p.stem.startswith("evp"))
    run = parse_speed((d / f"{name}.stdout").read_text(), (d / f"{name}.stderr").read_text(),
                      version="3.0.20", evp=True)
    recs = bench_figures(figure_records(run))
    assert recs
    recs = [rec.with_(mask="default", ia32cap=None, invocation="default--evp", engine=None,
                      path="evp", direction=None, multi=None, own_share=0.99,
                      foreign_cores=0.01, steal_cores=0.0) for rec in recs]
    recs = apply_findings(recs, [Finding(statuses.NOISY, "spread", "default--evp")])
    return [rec.with_(clock_hz=2.45e9, cycles_per_byte=1.5, cycles_per_op=None)
            for rec in recs]


def _tls_figures() -> list[BenchFigure]:
    found, _ = plans("1.1.1w", ("rsa2048",), TlsOptions(pinning=("same-core",)))
    text = (FIXTURES / "stime" / "1.1.1w--tls--rsa2048--same-core.stdout").read_text()
    recs, _, _ = parse_output(text, found[0])
    return recs


def _library_figures() -> list[BenchFigure]:
    out: list[BenchFigure] = []
    for name, op, threads in (("1.1.1w-handshake-tls1.3-rsa2048-t2.txt",
                               "handshake-tls1.3-rsa2048", 2),
                              ("1.1.1w-memory.txt", "memory", 1)):
        inv = LibraryInvocation(name=invocation_name(op, threads), mask=Mask("default", None),
                                algorithm=op, command=(harness.BINARY,), env={},
                                path="library", algorithms=(op,), operation=op,
                                threads=threads)
        recs, _, _, _ = parse_library(inv, (FIXTURES / "libbench" / name).read_text())
        out += recs
    return out


def test_every_key_a_reader_sets_is_declared() -> None:
    """The readers' figures hold only the keys FigureFields names (none kept as ``extra``),
    and BenchFigure has a field for each of them, one for one."""
    declared = FigureFields.__optional_keys__ | FigureFields.__required_keys__
    assert {f.name for f in dataclasses.fields(BenchFigure)} - {"given", "extra"} == declared
    for recs in (_speed_figures(), _tls_figures(), _library_figures()):
        assert recs
        for rec in recs:
            assert not rec.extra and set(rec.to_json()) <= declared


def test_a_figure_is_frozen_and_its_changes_are_new_figures() -> None:
    rec = _speed_figures()[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.status = "ok"  # type: ignore[misc]
    assert isinstance(rec.guards, tuple) and rec["guards"] == [statuses.NOISY]
    done = rec.with_(status=statuses.CONTENDED)
    assert rec.status == statuses.NOISY and done.status == statuses.CONTENDED
    assert rec.without("own_share").to_json() == {
        k: v for k, v in rec.to_json().items() if k != "own_share"}
    # a key set to None is filed as null; one never set is not filed
    assert "cycles_per_op" in rec.to_json() and rec.to_json()["cycles_per_op"] is None
    assert "threads" not in rec.to_json() and rec.get("threads", "-") == "-"


def test_a_figure_goes_through_figures_json_and_back_unchanged(tmp_path: Path) -> None:
    for recs in (_speed_figures(), _tls_figures(), _library_figures()):
        records.write_figures(tmp_path, [r.to_json() for r in recs], durable=False)
        first = (tmp_path / "figures.json").read_bytes()
        back = bench_figures(records.figures_as_dicts(records.read_figures(tmp_path)))
        assert back == recs
        # read back and filed again: the very bytes (figures.json as the dicts gave it)
        records.write_figures(tmp_path, [r.to_json() for r in back], durable=False)
        assert (tmp_path / "figures.json").read_bytes() == first


def test_a_series_and_its_rows_go_through_the_series_file_and_back(tmp_path: Path) -> None:
    outs = [CellOutcome("a", "complete", round=r, figures=[BenchFigure.of(
        invocation="n", algorithm="aes-128-cbc", block_size=8192, bytes_per_s=v, status=s,
        cycles_per_byte=2.0)])
        for r, (v, s) in enumerate(((100.0, "ok"), (104.0, "ok"), (50.0, statuses.CONTENDED)), 1)]
    rows: list[SeriesRow] = summarize_series(outs, 0.05)
    assert set(rows[0]) == SeriesRow.__required_keys__
    head = SeriesHead(id="20261206T120000.000000Z", rounds=3, order=["1:a", "2:a", "3:a"])
    written = {**head, "variant": "a", "suite": "s", "noise_threshold": 0.05,
               "ci_method": "t95", "runs": [], "statuses": ["complete"] * 3, "figures": rows}
    path = records.write_series(tmp_path, written)
    back = records.read_series(path)
    assert back is not None
    assert json.loads(json.dumps(written)) == \
        {k: v for k, v in back.to_json().items() if k != "schema"}


def test_a_settle_reading_goes_through_the_run_record_and_back(tmp_path: Path) -> None:
    settled = SettleRecord(waited_s=2.5, quiet=False, last="others kept 1.20 core(s) busy",
                           limit_s=30.0)
    records.write_meta(tmp_path, {"status": "running", "settle": settled}, durable=False)
    meta = records.read_meta(tmp_path)
    assert meta is not None and meta.to_json()["settle"] == settled


def test_a_topology_record_is_the_json_it_was() -> None:
    topo = parse_topology({"topology": "cpu0:0:0:0,2 cpu1:0:1:1,3 cpu2:0:0:0,2 cpu3:0:1:1,3",
                           "allowed": "0-1"})
    assert topo is not None
    old = {"cpus": len(topo.threads), "cores": topo.cores_of(), "packages": topo.packages,
           "threads_per_core": topo.threads_per_core, "smt": topo.smt,
           "allowed": None if topo.allowed is None else cpulist(topo.allowed),
           "threads": [{"cpu": t.cpu, "package": t.package, "core": t.core,
                        "siblings": cpulist(t.siblings)} for t in topo.threads],
           "summary": topo.describe()}
    rec: TopologyRecord = topo.as_dict()
    assert json.dumps(rec) == json.dumps(old)
    assert CpuTopology.from_dict(json.loads(json.dumps(rec))) == topo


def test_a_comparison_record_is_the_json_it_was() -> None:
    e = RatioEstimate(pairs=3, ratio=1.25, ci_low=1.2, ci_high=1.3, method="mann-whitney",
                      sizes=(5, 6))
    c = Comparison("asm/no-asm", "3.0.20-asm", "3.0.20-no-asm", "aes-128-cbc", 8192, e)
    old = {"kind": c.kind, "numerator": c.numerator, "denominator": c.denominator,
           "algorithm": c.algorithm, "block_size": c.block, "pairs": e.pairs,
           "samples": list(e.sizes), "ratio": e.ratio, "ci_low": e.ci_low,
           "ci_high": e.ci_high, "ci_method": e.method}
    rec: ComparisonRecord = c.as_dict()
    assert json.dumps(rec) == json.dumps(old)
