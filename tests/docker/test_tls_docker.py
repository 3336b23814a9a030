"""A short handshake suite and a short public-key suite end to end on real OpenSSL
1.1.1w and 3.0.20 in real containers: bench, results tree, export and report.

The images are the default matrix's ``1.1.1w-asm-x86_64`` and ``3.0.20-asm-x86_64``
(built here if missing). The suites are kept short (1 s per s_time / speed run, one key,
one pinning): about 40 s here once the images exist.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from openssl_matrix.measure.hostacct import HostAccounting, contention_reasons
from openssl_matrix.measure.session import Bencher
from openssl_matrix.report.page import build_report
from openssl_matrix.results.export import render
from openssl_matrix.results.tree import ResultsTree

from ..conftest import built_matrix
from ..values import num

pytestmark = pytest.mark.docker
VARIANTS = "1.1.1w-asm-x86_64,3.0.20-asm-x86_64"
SUITES: dict[str, Any] = {
    "hs": {"kind": "tls", "algorithms": ["ecdsap256"], "protocols": ["tls1.2", "tls1.3"],
           "modes": ["new", "reuse"], "pinning": ["same-core"], "seconds": 1},
    "pk": {"kind": "pkey", "algorithms": ["rsa2048", "ecdhx25519", "ml-kem-768"],
           "seconds": 1},
}
USABLE = {"ok", "time-basis"}
#: A valid reading the busy host disturbed (issue 12): kept out of medians and measured
#: again in a follow-up round; on this shared machine the public-key runs often are.
MEASURED = USABLE | {"contended", "shared-core"}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Bencher, ResultsTree]:
    _, m, tree, backend = built_matrix(tmp_path_factory.mktemp("tls"), SUITES, "hs", VARIANTS)
    return Bencher(m, backend, tree, engine=backend.engine_info(), git_commit=None), tree


def test_handshake_and_public_key_suites_end_to_end(setup: tuple[Bencher, ResultsTree],
                                                    tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    b, tree = setup
    variants = b.matrix.select(VARIANTS)
    hs = b.bench(variants, b.matrix.suite("hs"), "auto")
    assert [o.status for o in hs] == ["complete", "complete"], [o.error for o in hs]
    for out in hs:
        run = Path(str(out.run_dir))
        raw = (run / "raw" / "tls--ecdsap256--same-core.stdout").read_text()
        assert "-----BEGIN CERTIFICATE-----" in raw and "PRIVATE KEY-----" in raw
        assert "+TLS:server-stop:tls1.2:alive=1:rc=143" in raw  # stopped by us, alive till then
        assert "+TLS:server-stop:tls1.3:alive=1:rc=143" in raw
        figs = {(f["protocol"], f["operation"]): f for f in out.figures}
        assert set(figs) == {("tls1.2", "handshake"), ("tls1.2", "resume"),
                             ("tls1.3", "handshake"), ("tls1.3", "resume")}
        meta = json.loads((run / "meta.json").read_text())
        [entry] = meta["invocations"]
        # host accounting around each s_time run, as around each speed run
        assert set(entry["host_accounting"]) == {f"{p} {o}" for p, o in figs}
        for acct in entry["host_accounting"].values():
            assert acct["own_source"] == "cgroup" and acct["elapsed_s"] > 0.5
        assert "+HOSTSTAT 0" in raw and "+TLS:host-begin:tls1.3:reuse" in raw
        for f in figs.values():
            assert f["status"] in MEASURED, f
            assert num(f["own_share"]) > 0 and num(f["foreign_cores"]) >= 0 \
                and num(f["steal_cores"]) >= 0
            # hostacct's contended rule, applied to the run's own accounting
            acct = HostAccounting(**entry["host_accounting"][f"{f['protocol']} "
                                                             f"{f['operation']}"])
            assert ("contended" in f["guards"]) == bool(contention_reasons(acct))
            assert num(f["ops_per_s"]) > 10 and num(f["connections"]) > 0
            assert f["unit"] == "connections/s"
            assert num(f["server_cpu_s"]) > 0 and num(f["client_cpu_s"]) > 0
            assert f["bottleneck"] in ("server", "client", "both (within 10 %)")
            assert f["tls_pinning"] == "same-core" and f["server_cpu"] == f["client_cpu"]
        assert figs[("tls1.2", "resume")]["resumed"] == figs[("tls1.2", "resume")]["connections"]
        assert figs[("tls1.3", "resume")]["resumed"] == figs[("tls1.3", "resume")]["connections"]
        assert figs[("tls1.3", "handshake")]["cipher"] == "TLS_AES_128_GCM_SHA256"
        assert figs[("tls1.3", "handshake")]["group"] == "X25519"
    from openssl_matrix.cli.summary import print_bench_summary

    print_bench_summary(hs, 8192)
    lines = capsys.readouterr().out.splitlines()
    for p, o in (("tls1.2", "handshake"), ("tls1.3", "resume")):
        line = next(x for x in lines if f"{p}-ecdsap256 {o} same-core" in x)
        assert " conn/s (n=1)" in line  # never a bare number
    outcomes = b.bench(variants, b.matrix.suite("pk"), "auto")
    # round 1 per variant, then follow-up rounds for figures the host disturbed
    assert {o.status for o in outcomes} == {"complete"}, [o.error for o in outcomes]
    pk = [o for o in outcomes if o.round == 1]
    assert [o.status for o in pk] == ["complete", "complete"], [o.error for o in pk]
    for out in pk:
        meta = json.loads((Path(str(out.run_dir)) / "meta.json").read_text())
        assert any(n.startswith("ml-kem-768: not measured: OpenSSL") for n in meta["notes"])
        assert [i["name"] for i in meta["invocations"]] == ["default--rsa2048",
                                                           "default--ecdhx25519"]
        ops = {(f["algorithm"], f["operation"]): f for f in out.figures}
        assert {("rsa-2048", "sign"), ("rsa-2048", "verify"), ("ecdh-x25519", "op")} <= set(ops)
        verify, sign = ops[("rsa-2048", "verify")], ops[("rsa-2048", "sign")]
        assert num(verify["ops_per_s"]) > num(sign["ops_per_s"])
        assert all(f["status"] in MEASURED for f in ops.values())
    rows = list(csv.DictReader(io.StringIO(render(tree, "csv"))))
    assert {r["operation"] for r in rows if r["suite"] == "hs"} == {"handshake", "resume"}
    assert {r["unit"] for r in rows if r["suite"] == "hs"} == {"connections/s"}
    summary = build_report(tree, tmp_path / "report")
    page = (tmp_path / "report" / "index.html").read_text()
    assert "TLS handshakes (connections per second, higher is better)" in page
    assert "Public-key operations (operations per second, higher is better)" in page
    assert "OpenSSL 1.1.1w</th><th>OpenSSL 3.0.20" in page
    # a chart shows medians of usable figures: on a busy host every handshake figure may be
    # contended (hostacct), and then the table lists them marked, without a chart
    usable = any(f["status"] in USABLE for o in hs for f in o.figures)
    assert any(p.name.startswith("tls-") for p in summary.charts) == usable
    if not usable:
        # each cell then reads "≈ 1,234, all 2 contended" or "≈ 1,234 (1 contended, 1 shared-core)":
        # which flag the host earned (contended, shared-core) is noise's choice, not the test's
        flagged = {f["status"] for o in hs for f in o.figures} - USABLE
        assert flagged and any(re.search(rf"≈ [0-9,.]+[^<]*?\b\d+ {re.escape(s)}", page)
                               for s in flagged), flagged
    cells = (tmp_path / "report" / "data" / "ops-cells.csv").read_text()
    assert "full handshake" in cells and "rsa-2048 sign" in cells
    # a cell links its own page (issue 28), and that page links each run's raw output
    cell_pages = [(tmp_path / "report" / line.split('href="', 1)[1].split('"', 1)[0])
                  for line in page.splitlines() if 'href="cells/tls-' in line]
    assert cell_pages
    link = next(line for cp in cell_pages for line in cp.read_text().splitlines()
                if "tls--ecdsap256--same-core.stdout" in line)
    assert link
    assert any((tmp_path / "report" / "runs").rglob("tls--ecdsap256--same-core.stdout"))
