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

from openssl_matrix import guards
from openssl_matrix.bench import MAX_ATTEMPTS, Bencher
from openssl_matrix.build import Builder
from openssl_matrix.export import render as export
from openssl_matrix.model import load_matrix
from openssl_matrix.results import ResultsTree
from openssl_matrix.sources import default_urls

from .conftest import local_versions
from .fakes import FakeBackend

FIX = Path(__file__).resolve().parent / "fixtures" / "stime"
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
    m = load_matrix(path, default_urls=default_urls)

    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        assert command[-1] == "openssl-matrix-tls" and "s_time" in command[2]
        done = sum(c[-1] == "openssl-matrix-tls" for _, c, _ in backend.runs)
        return 0, (FIX / (BUSY if done == 1 else LATER)).read_text(), ""

    backend = FakeBackend(responder)
    tree = ResultsTree(tmp_path / "results")
    Builder(m, backend, tree, workdir=tmp_path / "work").build(list(m.variants))
    return Bencher(m, backend, tree, engine=backend.engine_info(), git_commit=None,
                   max_attempts=MAX_ATTEMPTS), backend


def test_contended_handshakes_are_remeasured_and_summarised_with_their_interval(
        bench: tuple[Bencher, FakeBackend], capsys: pytest.CaptureFixture[str]) -> None:
    bencher, _ = bench
    m = bencher.matrix
    outs = bencher.bench(list(m.variants), m.suite("hs"), "auto", repeat=1)
    # the planned attempt and two re-measurements of the invocation, each in its own folder
    assert [o.round for o in outs] == [1, 2, 3] and len({o.run_dir for o in outs}) == 3
    statuses = [{f["operation"]: f["status"] for f in o.figures} for o in outs]
    assert statuses == [{"handshake": guards.CONTENDED, "resume": guards.CONTENDED},
                        {"handshake": "ok", "resume": guards.CONTENDED},
                        {"handshake": "ok", "resume": guards.CONTENDED}]
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

    from openssl_matrix.commands import _print_bench_summary

    _print_bench_summary(outs, 8192, planned=1)
    out = capsys.readouterr().out
    full = [float(f["ops_per_s"]) for o in outs[1:] for f in o.figures
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
