"""The s_time parser and the TLS suite's reader, on real outputs of this machine's builds
(tests/fixtures/stime/README.md says how each was made)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openssl_matrix.matrix.tlsvocab import TlsOptions
from openssl_matrix.measure.tls import parse_output, plans, read_output
from openssl_matrix.parse.stime import parse_stime

from ..values import num

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stime"


def _text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def _plan(version: str, key: str, pinning: str):  # type: ignore[no-untyped-def]
    found, _ = plans(version, (key,), TlsOptions(pinning=(pinning,)))
    return found[0]


# (fixture, version, key, pinning) -> per (protocol, mode): connections, user s, real s,
# resumed marks, bytes per connection, as printed
EXPECTED: dict[tuple[str, str, str, str],
               dict[tuple[str, str], tuple[int, float | None, int, int, int | None]]] = {
    ("1.1.1w--tls--rsa2048--same-core.stdout", "1.1.1w", "rsa2048", "same-core"): {
        ("tls1.2", "new"): (2272, 0.56, 4, 0, 2193),
        ("tls1.2", "reuse"): (12091, 0.96, 4, 12091, 1441),
        ("tls1.3", "new"): (3082, 0.70, 4, 0, 4930),
        ("tls1.3", "reuse"): (7597, None, 4, 7597, None),
    },
    ("1.1.1w--tls--ecdsap256--cross-core.stdout", "1.1.1w", "ecdsap256", "cross-core"): {
        ("tls1.2", "new"): (3198, 1.10, 4, 0, 2203),
        ("tls1.2", "reuse"): (7668, 0.88, 4, 7668, 1449),
        ("tls1.3", "new"): (4011, 1.22, 4, 0, 4930),
        ("tls1.3", "reuse"): (6354, 1.07, 4, 6354, 4389),
    },
    ("3.0.20--tls--rsa2048--cross-core.stdout", "3.0.20", "rsa2048", "cross-core"): {
        ("tls1.2", "new"): (1564, 0.86, 4, 0, 2149),
        ("tls1.2", "reuse"): (8231, 0.87, 4, 8231, 1441),
        ("tls1.3", "new"): (2436, 1.06, 4, 0, 4887),
        ("tls1.3", "reuse"): (4177, 0.98, 4, 4177, 4371),
    },
    ("3.5.7--tls--ecdsap256--same-core.stdout", "3.5.7", "ecdsap256", "same-core"): {
        ("tls1.2", "new"): (2247, 0.71, 4, 0, 2411),
        ("tls1.2", "reuse"): (7433, 0.76, 4, 7433, 1498),
        ("tls1.3", "new"): (2321, 0.80, 4, 0, 5145),
        ("tls1.3", "reuse"): (4709, 0.90, 4, 4709, 4377),
    },
    # the older eras, 1 s per s_time run (the README's second table); 0.9.8 has TLS 1.0 only
    # and its -reuse phase begins with one full handshake ('t'), later ones resume them all
    ("0.9.8y--tls--rsa2048--cross-core.stdout", "0.9.8y", "rsa2048", "cross-core"): {
        ("tls1.0", "new"): (670, 0.09, 2, 0, 1221),
        ("tls1.0", "reuse"): (46, 0.00, 2, 45, 1164),
    },
    ("0.9.8y--tls--rsa2048--cross-core--busy.stdout", "0.9.8y", "rsa2048", "cross-core"): {
        ("tls1.0", "new"): (722, 0.12, 2, 0, 1221),
        ("tls1.0", "reuse"): (46, 0.00, 2, 45, 1164),
    },
    ("0.9.8y-i386--tls--ecdsap256--cross-core.stdout", "0.9.8y", "ecdsap256", "cross-core"): {
        ("tls1.0", "new"): (427, 0.86, 2, 0, 1269),
        ("tls1.0", "reuse"): (46, 0.00, 2, 45, 1201),
    },
    ("1.0.1s--tls--rsa2048--cross-core.stdout", "1.0.1s", "rsa2048", "cross-core"): {
        ("tls1.2", "new"): (494, 0.33, 2, 0, 1328),
        ("tls1.2", "reuse"): (46, 0.01, 2, 46, 1319),
    },
    ("1.0.2u--tls--ecdsap256--cross-core.stdout", "1.0.2u", "ecdsap256", "cross-core"): {
        ("tls1.2", "new"): (2558, 0.59, 2, 0, 1892),
        ("tls1.2", "reuse"): (46, 0.00, 2, 46, 1514),  # printed rate: "inf"
    },
    ("1.0.2u-i386--tls--rsa2048--cross-core.stdout", "1.0.2u", "rsa2048", "cross-core"): {
        ("tls1.2", "new"): (145, 0.30, 2, 0, 1882),
        ("tls1.2", "reuse"): (44, 0.00, 2, 44, 1506),
    },
    ("1.1.0i--tls--rsa2048--cross-core.stdout", "1.1.0i", "rsa2048", "cross-core"): {
        ("tls1.2", "new"): (680, 0.14, 2, 0, 1803),
        ("tls1.2", "reuse"): (3771, 0.17, 2, 3771, 1323),
    },
}
#: Seconds asked of s_time (-time) per fixture; the default: 3.
REQUESTED = {name: 1 for (name, *_rest) in EXPECTED if not name.startswith(("1.1.1", "3."))}


@pytest.mark.parametrize("case", list(EXPECTED), ids=lambda c: c[0])
def test_each_s_time_phase_is_read_as_printed(case: tuple[str, str, str, str]) -> None:
    out = read_output(_text(case[0]))
    assert out.done and out.cpus and out.key_pem.startswith("-----BEGIN")
    assert "BEGIN CERTIFICATE" in out.cert_pem
    seen = {}
    for section in out.sections:
        run = parse_stime("\n".join(section.lines))
        assert not run.warnings, run.warnings
        assert len(run.phases) == 1 and run.phases[0].mode == section.mode
        p = run.phases[0]
        seen[(section.protocol, section.mode)] = p
        assert p.full + p.resumed == p.connections  # one progress mark per connection
    for key, (conns, user, real, resumed, per) in EXPECTED[case].items():
        p = seen[key]
        assert p.connections == conns and p.real_seconds == real and p.resumed == resumed
        if user is not None:
            assert p.user_seconds == user
        if per is not None:
            assert p.bytes_per_connection == per
        if key[1] == "new":
            assert p.requested_seconds == REQUESTED.get(case[0], 3) and p.full == conns
        else:
            assert p.full == conns - resumed  # 0.9.8: its one full handshake first


def test_figures_are_connections_over_the_measured_wall_time_with_cpu_accounting() -> None:
    name = "1.1.1w--tls--rsa2048--same-core.stdout"
    records, warnings, findings = parse_output(_text(name), _plan("1.1.1w", "rsa2048",
                                                                  "same-core"))
    assert warnings == [] and findings == []
    by = {(r["protocol"], r["operation"]): r for r in records}
    full = by[("tls1.2", "handshake")]
    assert full["status"] == "ok" and full["connections"] == 2272
    assert full["wall_s"] == pytest.approx(1796067503.008305675 - 1796067499.986448426)
    assert full["ops_per_s"] == pytest.approx(2272 / num(full["wall_s"]))
    assert full["unit"] == "connections/s" and full["cipher"] == "ECDHE-RSA-AES128-GCM-SHA256"
    assert full["group"] == "P-256" and full["tls_pinning"] == "same-core"
    # client: the shell's children times before and after; server: /proc ticks / CLK_TCK
    assert full["client_cpu_s"] == pytest.approx((0.62 + 0.31) - (0.06 + 0.01))
    assert full["server_cpu_s"] is not None and full["server_cpu_s"] > 0
    assert full["bottleneck"] == "server"  # RSA-2048 signing on the server
    assert full["stime_exit"] == "1"       # s_time -new always exits 1; not a failure
    assert by[("tls1.3", "resume")]["operation"] == "resume"
    assert by[("tls1.3", "resume")]["resumed"] == by[("tls1.3", "resume")]["connections"]


def test_ecdsa_handshakes_are_client_bound() -> None:
    records, _, _ = parse_output(_text("1.1.1w--tls--ecdsap256--cross-core.stdout"),
                                 _plan("1.1.1w", "ecdsap256", "cross-core"))
    full = [r for r in records if r["operation"] == "handshake"]
    assert {r["bottleneck"] for r in full} == {"client"}  # ECDSA verify costs more than sign


def test_a_resumption_run_that_did_not_resume_is_flagged() -> None:
    # derived from the real output: the reuse phase's marks replaced by new-session marks
    text = _text("1.1.1w--tls--rsa2048--same-core.stdout")
    lines = text.splitlines()
    out, in_reuse = [], False
    for line in lines:
        if line.startswith("+TLS:run-begin:tls1.2:reuse"):
            in_reuse = True
        elif line.startswith("+TLS:run-end"):
            in_reuse = False
        out.append(line.replace("r", "*") if in_reuse and set(line) == {"r"} else line)
    records, _, findings = parse_output("\n".join(out), _plan("1.1.1w", "rsa2048", "same-core"))
    assert [(f[0], f[2], f[3]) for f in findings] == [("not-resumed", "tls1.2-rsa2048",
                                                       "resume")]
    resume = next(r for r in records if r["protocol"] == "tls1.2" and r["operation"] == "resume")
    assert resume["resumed"] == 0 and resume["full"] == resume["connections"]


def test_a_server_that_died_and_a_check_that_negotiated_otherwise_are_flagged() -> None:
    text = _text("1.1.1w--tls--rsa2048--same-core.stdout")
    text = text.replace("+TLS:server-stop:tls1.3:alive=1:rc=143",
                        "+TLS:server-stop:tls1.3:alive=0:rc=139")
    text = text.replace("Server Temp Key: X25519, 253 bits", "Server Temp Key: ECDH, P-256")
    _, _, findings = parse_output(text, _plan("1.1.1w", "rsa2048", "same-core"))
    codes = {(f[0], f[2]) for f in findings}
    assert ("server-exit", "tls1.3-rsa2048") in codes
    assert ("negotiation-differs", "tls1.3-rsa2048") in codes


def test_an_output_without_s_time_phases_gives_no_figure_and_says_so() -> None:
    run = parse_stime("ERROR\n140:error:0200206F:system library:connect:Connection refused\n")
    assert run.phases == () and run.connections is None
    assert run.warnings == ("no s_time phase found in the output",)


def test_an_infinite_user_time_rate_is_no_rate() -> None:
    """1.0.2u printed "inf connections/user sec" (0.00 s of user time): a figure record
    holding it made the run's figures.json unreadable (JSON has no Infinity)."""
    import json

    text = _text("1.0.2u--tls--ecdsap256--cross-core.stdout")
    assert "inf connections/user sec" in text
    out = read_output(text)
    resume = next(s for s in out.sections if s.mode == "reuse")
    assert parse_stime("\n".join(resume.lines)).user_rate is None
    records, _, _ = parse_output(text, _plan("1.0.2u", "ecdsap256", "cross-core"))
    json.dumps([r.to_json() for r in records], allow_nan=False)  # numbers JSON allows


def test_each_s_time_run_carries_the_host_accounting_taken_around_it() -> None:
    """0.9.8y, the third attempt of a busy bench: its full handshakes ran while the rest
    of the host was idle, its resumptions while other work kept a core busy."""
    from openssl_matrix.measure.hostacct import FOREIGN_CORES_MAX

    name = "0.9.8y--tls--rsa2048--cross-core.stdout"
    records, _, findings = parse_output(_text(name), _plan("0.9.8y", "rsa2048", "cross-core"))
    by = {r["operation"]: r for r in records}
    full, resume = by["handshake"], by["resume"]
    assert full["protocol_label"] == "TLS 1.0 (the newest protocol 0.9.8 has)"
    acct = full["host_accounting"]
    assert acct is not None and acct["own_source"] == "cgroup"  # the container: both sides
    assert num(full["own_share"]) > 0.9 and num(full["foreign_cores"]) < FOREIGN_CORES_MAX
    assert num(resume["foreign_cores"]) > FOREIGN_CORES_MAX
    assert [(f[0], f[3]) for f in findings] == [("contended", "resume")]
    assert findings[0][1].startswith("host not quiet: other work kept 0.99 core(s) busy")
    # fixtures from before the script took host samples: nothing to judge, nothing claimed
    old, _, found = parse_output(_text("1.1.1w--tls--rsa2048--same-core.stdout"),
                                 _plan("1.1.1w", "rsa2048", "same-core"))
    assert {r["own_share"] for r in old} == {None} and found == []


def test_a_resumption_that_waited_on_the_connection_is_told_from_a_busy_host() -> None:
    """1.0.2u: 46 resumptions in 2 s with both sides almost idle on an idle host."""
    records, _, findings = parse_output(_text("1.0.2u--tls--ecdsap256--cross-core.stdout"),
                                        _plan("1.0.2u", "ecdsap256", "cross-core"))
    resume = next(r for r in records if r["operation"] == "resume")
    assert resume["foreign_cores"] == 0.0 and num(resume["own_share"]) < 0.05
    [(code, message, alg, op)] = findings
    assert (code, alg, op) == ("time-basis", "tls1.2-ecdsap256", "resume")
    assert "core(s) of the host were idle" in message and "44 ms per connection" in message
    assert "waited for a CPU" not in message


def test_the_bench_files_contended_handshakes_per_operation() -> None:
    from openssl_matrix.core.statuses import CONTENDED
    from openssl_matrix.matrix.model import Mask
    from openssl_matrix.measure.tlsbench import TlsInvocation, parse_tls

    plan = _plan("0.9.8y", "rsa2048", "cross-core")
    inv = TlsInvocation(name=plan.name, mask=Mask("default", None), algorithm="rsa2048",
                        command=(), env={}, path="tls", plan=plan)
    records, _, _, warnings = parse_tls(inv, _text("0.9.8y--tls--rsa2048--cross-core.stdout"))
    assert {r["operation"]: r["status"] for r in records} == {"handshake": "ok",
                                                             "resume": CONTENDED}
    assert any(w.startswith("contended: tls--rsa2048--cross-core: tls1.0-rsa2048 resume: ")
               for w in warnings)
