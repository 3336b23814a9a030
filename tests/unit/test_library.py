"""The library suite without Docker: the harness's output read back (real outputs of the
1.1.1w harness, tests/fixtures/libbench/README.md), its host accounting, the suite's
model checks and plan, and the harness image's identity."""

from __future__ import annotations

from pathlib import Path

import pytest

from openssl_matrix.core import statuses
from openssl_matrix.core.errors import ConfigError
from openssl_matrix.core.resources import project_reports
from openssl_matrix.images import harness
from openssl_matrix.matrix.libvocab import MEMORY_OPS, OPERATIONS, LibraryOptions
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.model import Mask
from openssl_matrix.measure import hostacct
from openssl_matrix.measure.library import (
    LibraryInvocation,
    invocation_name,
    library_invocations,
    parse_library,
    read_output,
)
from openssl_matrix.measure.opsummary import series_line

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "libbench"
MATRIX = Path(__file__).resolve().parents[2] / "matrix.yaml"


def _inv(op: str, threads: int) -> LibraryInvocation:
    return LibraryInvocation(name=invocation_name(op, threads), mask=Mask("default", None),
                             algorithm=op, command=(harness.BINARY,), env={}, path="library",
                             algorithms=(op,), operation=op, threads=threads)


def _result_fields(text: str) -> dict[str, str]:
    line = next(x for x in text.splitlines() if x.startswith("+LIB:result:"))
    return dict(p.split("=", 1) for p in line.split(":")[2:] if "=" in p)


def test_a_two_thread_handshake_run_gives_its_rate_latency_and_host_accounting() -> None:
    text = (FIX / "1.1.1w-handshake-tls1.3-rsa2048-t2.txt").read_text()
    raw = _result_fields(text)
    recs, elapsed, findings, warnings = parse_library(_inv("handshake-tls1.3-rsa2048", 2),
                                                      text)
    assert warnings == [] and len(recs) == 1
    rec = recs[0]
    ops, wall = int(raw["ops"]), float(raw["elapsed_s"])
    cpu = [float(x) for x in raw["cpu_s"].split(",")]
    assert rec["ops_per_s"] == pytest.approx(ops / wall)
    assert rec["us_per_op"] == pytest.approx(1e6 * 2 * wall / ops)
    assert rec["cpu_us_per_op"] == pytest.approx(1e6 * sum(cpu) / ops)
    assert rec["threads"] == 2 and rec["thread_cpu_s"] == cpu and rec["unit"] == "ops/s"
    assert rec["operation"] == "handshake" and rec["path"] == "library"
    assert str(rec["openssl_runtime"]).startswith("OpenSSL 1.1.1w")
    assert elapsed == pytest.approx(wall)
    # the accounting is the harness's own samples, judged as two processes
    acct = hostacct.accounting(*hostacct.split_samples(
        "\n".join(x for x in text.splitlines() if not x.startswith("+LIB:")) + "\n")[1],
        processes=2)
    assert acct is not None and rec["host_accounting"] == acct.as_dict()
    assert rec["host_accounting"]["processes"] == 2
    reasons = hostacct.contention_reasons(acct)
    # recorded on a busy host (see the fixture README): the verdict is hostacct's
    assert bool(reasons) == any(f.code == statuses.CONTENDED for f in findings)
    assert reasons, "the fixture was recorded while the host was busy"


def test_memory_figures_are_exact_byte_counts_with_no_host_accounting() -> None:
    text = (FIX / "1.1.1w-memory.txt").read_text()
    recs, _, findings, warnings = parse_library(_inv("memory", 1), text)
    assert warnings == [] and findings == []
    by = {r["algorithm"]: r for r in recs}
    assert set(by) == {"mem-handshake-tls1.2-rsa2048", "mem-idle-tls1.3-ecdsap256",
                       "mem-ssl-ctx"}
    for line in text.splitlines():
        if line.startswith("+LIB:result:"):
            f = dict(p.split("=", 1) for p in line.split(":")[2:] if "=" in p)
            rec = by[f["op"]]
            assert rec["bytes"] == int(f["bytes"]) and rec["unit"] == "bytes"
            assert rec["status"] == "ok" and rec["ops_per_s"] is None
            assert rec["host_accounting"] is None
    assert by["mem-idle-tls1.3-ecdsap256"]["client_bytes"] is not None
    assert by["mem-handshake-tls1.2-rsa2048"]["leaked"] == 0


def test_a_failed_or_refused_operation_is_said_not_counted() -> None:
    text = ("+LIB:openssl:header=0x30000140:runtime=OpenSSL 3.0.20:memory_hooks=0\n"
            "+LIB:begin:op=resume-tls1.3-rsa2048:threads=1\n"
            "+LIB:result:op=resume-tls1.3-rsa2048:threads=1:status=error:ops=0:"
            "elapsed_s=0.004:cpu_s=0.001:per_thread_ops=0:api=-:what=one resumed:"
            "reason=thread 0: the session was not resumed\n"
            "+LIB:end:op=resume-tls1.3-rsa2048\n"
            "+LIB:begin:op=handshake-tls1.3-rsa2048:threads=1\n"
            "+LIB:refused:op=handshake-tls1.3-rsa2048:reason=this OpenSSL has no TLS 1.3\n"
            "+LIB:end:op=handshake-tls1.3-rsa2048\n+LIB:begin:op=cmac:threads=1\n")
    recs, _, findings, warnings = parse_library(_inv("resume-tls1.3-rsa2048", 1), text)
    assert [r["status"] for r in recs] == ["failed"] and recs[0]["ops_per_s"] is None
    assert recs[0]["detail"] == "thread 0: the session was not resumed"
    assert any("refused by the harness: this OpenSSL has no TLS 1.3" in w for w in warnings)
    assert any("cmac: the harness began it and never ended it" in w for w in warnings)
    assert findings == []
    assert read_output(text).header["runtime"] == "OpenSSL 3.0.20"


def test_the_library_suite_plans_one_container_per_operation_and_thread_count() -> None:
    m = load_matrix(MATRIX)
    suite = m.suite("library")
    assert suite.kind == "library" and suite.library == LibraryOptions((1, 2))
    invs, notes = library_invocations("3.0.20", suite, 2)
    timed = [o for o in OPERATIONS if o != "memory"]
    assert len(invs) == 2 * len(timed) + 1 and notes == []
    assert len({i.name for i in invs}) == len(invs)
    mem = next(i for i in invs if i.algorithm == "memory")
    assert mem.exec_command == [harness.BINARY, *MEMORY_OPS]
    hs = next(i for i in invs if i.name == "lib--handshake-tls1.2-rsa2048--t2")
    assert hs.exec_command == [harness.BINARY, "--seconds", "1", "--threads", "2",
                               "handshake-tls1.2-rsa2048"]
    # 1.1.0 has no TLS 1.3: refused with the reason before anything runs
    old, notes = library_invocations("1.1.0l", suite, 2)
    assert not any("tls1.3" in i.algorithm for i in old)
    assert sum("has no TLS 1.3 (from 1.1.1)" in n for n in notes) == 4
    # more threads than CPUs is said
    _, notes = library_invocations("3.0.20", suite, 1)
    assert any("2 thread(s) on 1 CPU(s)" in n for n in notes)
    assert LibraryOptions(None).counts(4) == (1, 2, 3, 4)


def _matrix(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "m.yaml"
    p.write_text("versions:\n  3.0.20: {}\naxes:\n  asm: [asm]\nsuites:\n" + body)
    return p


def test_the_model_refuses_unknown_operations_and_misplaced_threads(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_matrix(_matrix(tmp_path, "  l:\n    kind: library\n    algorithms: [fetch-digst]\n"))
    assert "suites.l.algorithms[0]" in str(err.value) and "fetch-digest" in str(err.value)
    with pytest.raises(ConfigError) as err:
        load_matrix(_matrix(tmp_path, "  s:\n    algorithms: [sha256]\n    threads: [1]\n"))
    assert "only a suite with kind: library" in str(err.value)
    with pytest.raises(ConfigError):
        load_matrix(_matrix(tmp_path, "  l:\n    kind: library\n    algorithms: [all]\n"
                                      "    threads: [0]\n"))
    m = load_matrix(_matrix(tmp_path, "  l:\n    kind: library\n    algorithms: [all]\n"
                                      "    threads: all\n"))
    assert m.suite("l").library == LibraryOptions(None)
    assert m.suite("l").describe()["library"] == {"threads": "all"}


def test_the_harness_image_is_keyed_by_the_variant_image_and_the_source() -> None:
    src = harness.source_text()
    assert "CRYPTO_set_mem_functions" in src
    a = harness.harness_digest("openssl-matrix/3.0.20-asm-x86_64:aaa", "tc:1", src)
    assert a == harness.harness_digest("openssl-matrix/3.0.20-asm-x86_64:aaa", "tc:1", src)
    assert a != harness.harness_digest("openssl-matrix/3.0.20-asm-x86_64:bbb", "tc:1", src)
    assert a != harness.harness_digest("openssl-matrix/3.0.20-asm-x86_64:aaa", "tc:1",
                                       src + "\n")
    df = harness.dockerfile("openssl-matrix/3.0.20-asm-x86_64:aaa", "tc:1")
    assert df.splitlines()[1] == "FROM openssl-matrix/3.0.20-asm-x86_64:aaa AS variant"
    assert "FROM openssl-matrix/3.0.20-asm-x86_64:aaa\n" in df and harness.BINARY in df
    assert harness.refusal("1.0.2u") is not None and harness.refusal("1.1.1w") is None


def test_report_specs_name_library_figures_with_a_thread_count(tmp_path: Path) -> None:
    from openssl_matrix.repro.specload import load_spec

    reports = project_reports()
    spec = load_spec(reports / "openssl-issue-17064-threaded-aes-sha.yaml")
    m = spec.measurements["new-aes-t32"]
    assert (m.kind, m.algorithm, m.threads, m.unit) == ("library", "cipher-setup", 32, "op/s")
    assert {c.depends_on for c in spec.claims} == {"threads"}
    text = (reports / "openssl-issue-15199-pkcs8-decoding.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("algorithm: pkey-decode-der-rsa2048",
                                "algorithm: pkey-decode-der-rsa", 1))
    with pytest.raises(ConfigError) as err:
        load_spec(bad)
    assert "not a timed operation of the library harness" in str(err.value)
    bad.write_text(text.replace("    threads: 1\n    reference: 2500",
                                "    threads: 0\n    reference: 2500", 1))
    with pytest.raises(ConfigError):
        load_spec(bad)


def test_a_thread_count_above_the_hosts_cpus_is_not_measured_and_says_why() -> None:
    from openssl_matrix.measure.hostinfo import CpuInfo
    from openssl_matrix.repro.plan import plan
    from openssl_matrix.repro.resolve import HostFacts, ResolvedVersion
    from openssl_matrix.repro.specload import load_spec

    two = HostFacts(CpuInfo("GenuineIntel", "a 2-core test CPU", ("aes",), None, 2), {},
                    (False, "test"), (False, "test"))
    spec = load_spec(project_reports() / "openssl-issue-17064-threaded-aes-sha.yaml")
    resolved = {"1.0.2": ResolvedVersion("1.0.2", "1.1.1w", True, "0" * 64, (), None, None),
                "3.0.0": ResolvedVersion("3.0.0", "3.0.20", True, "0" * 64, (), None, None)}
    planned, groups, _ = plan(spec, resolved, two)
    for name in ("old-aes-t32", "new-aes-t32"):
        problem = planned[name].problem
        assert problem is not None
        assert problem.startswith("needs 32 threads each on its own CPU, and this host has 2")
    assert planned["new-aes-t2"].problem is None and planned["new-aes-t2"].suite
    [g] = [g for g in groups.values() if g.variant == "3.0.20-asm-x86_64"]
    assert g.definition["kind"] == "library" and g.definition["threads"] == [2]
    assert g.definition["algorithms"] == ["cipher-setup", "hmac"]


def test_a_repeated_library_bench_names_each_rows_thread_count() -> None:
    """The bench summary's rows of one operation at 1 and 2 threads are told apart."""
    row = {"algorithm": "handshake-tls1.2-rsa2048", "operation": "handshake", "n": 3,
           "median": 680.6, "ci_low": 488.9, "ci_high": 872.3, "min": 631.8, "max": 783.0,
           "cv": 0.11, "statuses": ["ok"], "clean": True}
    one = series_line({**row, "invocation": "lib--handshake-tls1.2-rsa2048--t1"}, "ops/s")
    two = series_line({**row, "invocation": "lib--handshake-tls1.2-rsa2048--t2"}, "ops/s")
    assert "handshake-tls1.2-rsa2048 handshake ×1 thread " in one
    assert "handshake-tls1.2-rsa2048 handshake ×2 threads" in two
    assert "680.6 ± 191.7 ops/s (n=3)" in one
