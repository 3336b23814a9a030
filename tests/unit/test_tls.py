"""TLS handshake suites: the per-version plan and command construction, from 0.9.8 to 3.6.

Only 1.1.1w, 3.0.x and 3.5.7 run here (tests/test_tls_docker.py); for the older eras these
tests check what the script would run, against the options of their apps/s_server.c and
apps/s_time.c (1.0.1k, 1.0.2s, 1.1.0g read from their sources).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.tlsvocab import PROTOCOLS, TlsOptions
from openssl_matrix.measure.speedcmd import speed_invocations
from openssl_matrix.measure.tls import client_options, config_text, plans, script, server_options

ROOT = Path(__file__).resolve().parents[2]
ALL = TlsOptions(protocols=("tls1.0", "tls1.2", "tls1.3"), pinning=("same-core", "cross-core"))


def test_protocols_per_era_are_refused_up_front_with_the_reason() -> None:
    found, notes = plans("0.9.8y", ("rsa2048",), ALL)
    assert [p.protocols for p in found] == [("tls1.0",), ("tls1.0",)]
    assert notes == ["TLS 1.2: not measured: OpenSSL 0.9.8y has no TLS 1.2 (from 1.0.1)",
                     "TLS 1.3: not measured: OpenSSL 0.9.8y has no TLS 1.3 (from 1.1.1)"]
    assert PROTOCOLS["tls1.0"].label == "TLS 1.0 (the newest protocol 0.9.8 has)"
    found, notes = plans("1.0.2u", ("rsa2048", "ecdsap256"), ALL)
    assert found[0].protocols == ("tls1.0", "tls1.2") and len(found) == 4
    assert notes == ["TLS 1.3: not measured: OpenSSL 1.0.2u has no TLS 1.3 (from 1.1.1)"]
    found, notes = plans("3.6.3", ("rsa2048",), ALL)
    assert found[0].protocols == ("tls1.0", "tls1.2", "tls1.3") and not notes
    found, notes = plans("3.0.20", ("ecdsap256",), ALL, ("no-tls1_3", "no-ec"))
    assert found == []
    assert "TLS 1.3: not measured: this build was configured with no-tls1_3" in notes
    assert "ecdsap256: not measured: this build has no ECDSA" in notes


@pytest.mark.parametrize(("version", "group"), [
    ("0.9.8y", ["-named_curve", "prime256v1"]), ("1.0.1e", ["-named_curve", "prime256v1"]),
    ("1.0.2u", ["-curves", "P-256"]), ("1.1.0l", ["-curves", "P-256"]),
    ("1.1.1w", ["-groups", "P-256"]), ("3.0.20", ["-groups", "P-256"]),
])
def test_tls12_server_names_cipher_and_group_in_each_versions_words(
        version: str, group: list[str]) -> None:
    from openssl_matrix.core.version import series

    opts = server_options(PROTOCOLS["tls1.2"], "rsa2048", series(version))
    assert opts == ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256", *group, "-www"]


def test_tls13_names_the_suite_and_the_group_on_both_sides() -> None:
    p = PROTOCOLS["tls1.3"]
    assert server_options(p, "ecdsap256", (3, 5, 7)) == [
        "-tls1_3", "-ciphersuites", "TLS_AES_128_GCM_SHA256", "-groups", "X25519", "-www"]
    assert client_options(p, "ecdsap256", (1, 1, 1)) == ["-ciphersuites",
                                                          "TLS_AES_128_GCM_SHA256"]
    # the client's key share: 3.5+ would also send ML-KEM; the run's config names one group
    assert "Groups = X25519" in config_text(p, (3, 5, 7))
    assert "Groups = P-256" in config_text(PROTOCOLS["tls1.2"], (1, 1, 1))
    # before 1.1.1 no ssl_conf part (no system_default / Groups there): only [req]
    old = config_text(PROTOCOLS["tls1.2"], (1, 0, 2))
    assert "ssl_conf" not in old and "Groups" not in old and "[req]" in old


def test_old_s_time_has_no_protocol_or_suite_options_so_the_server_decides() -> None:
    # 1.0.x/1.1.0 s_time: -cipher but no -tls1_2 / -ciphersuites (apps/s_time.c)
    assert client_options(PROTOCOLS["tls1.2"], "rsa2048", (1, 0, 2)) == [
        "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"]
    assert client_options(PROTOCOLS["tls1.0"], "rsa2048", (0, 9, 8)) == ["-cipher", "AES128-SHA"]
    # 0.9.8's s_time says hello in the SSLv2 format, which a -tls1 server refuses (seen on
    # the 0.9.8y image here): its server keeps SSLv23 and turns SSLv2/SSLv3 off instead
    assert server_options(PROTOCOLS["tls1.0"], "rsa2048", (0, 9, 8))[:4] == [
        "-no_ssl2", "-no_ssl3", "-cipher", "AES128-SHA"]
    assert server_options(PROTOCOLS["tls1.0"], "rsa2048", (1, 0, 1))[:3] == [
        "-tls1", "-cipher", "AES128-SHA"]


def test_tls10_from_3_0_runs_at_security_level_0_on_both_sides() -> None:
    # 3.0.20 refused TLS 1.0's MD5+SHA-1 signature at the default level 1 here
    p = PROTOCOLS["tls1.0"]
    assert server_options(p, "rsa2048", (3, 0, 20))[:2] == ["-tls1", "-cipher"]
    assert server_options(p, "rsa2048", (3, 0, 20))[2] == "AES128-SHA:@SECLEVEL=0"
    assert client_options(p, "rsa2048", (3, 6, 3)) == ["-cipher", "AES128-SHA:@SECLEVEL=0"]
    assert client_options(p, "rsa2048", (1, 1, 1)) == ["-cipher", "AES128-SHA"]
    assert client_options(PROTOCOLS["tls1.2"], "rsa2048", (3, 0, 20)) == [
        "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"]


def test_a_version_without_any_of_the_suites_protocols_measures_its_newest_labelled() -> None:
    found, notes = plans("0.9.8y", ("rsa2048",), TlsOptions())  # the default: 1.2 and 1.3
    assert [p.protocols for p in found] == [("tls1.0",)]
    assert notes[-1] == ("TLS 1.0 (the newest protocol 0.9.8 has): measured instead of the "
                         "suite's tls1.2, tls1.3: the newest protocol OpenSSL 0.9.8y has "
                         "(labelled so on its figures)")
    # a build that left the suite's protocols out is not measured on another one
    found, notes = plans("3.0.20", ("rsa2048",), TlsOptions(), ("no-tls1_2", "no-tls1_3"))
    assert found == [] and notes[-1] == ("no protocol of the suite exists in this version: "
                                         "nothing measured")


def _commands(text: str, word: str) -> list[list[str]]:
    out = []
    for line in text.splitlines():
        if word in line and not line.lstrip().startswith(("#", "echo", "sed")):
            out.append(shlex.split(line.split("#")[0].replace("\\", ""), posix=True))
    return out


def test_script_pins_awaits_readiness_checks_and_stops_the_server() -> None:
    found, _ = plans("1.1.1w", ("rsa2048",), TlsOptions(pinning=("same-core", "cross-core"),
                                                        seconds=2))
    same, cross = (script(p) for p in found)
    assert 'CCPU="$FIRST"' in same and 'CCPU="$SECOND"' in cross
    assert 'taskset -c "$SCPU" openssl s_server' in same
    assert 'taskset -c "$CCPU" openssl s_time' in same
    assert "grep -q '^ACCEPT'" in same and "kill -0" in same       # readiness, not a sleep
    assert "! listening 1151" in same  # or its LISTEN socket (0.9.8y logs no ACCEPT)
    assert "_hs 0 2> host0.txt" in same and "_hs 1 2> host1.txt" in same  # host samples
    assert "sleep 1" not in same and "sleep 2" not in same
    assert 'kill -TERM "$SPID"' in same and 'wait "$SPID"; rc=$?' in same
    assert "-time 2 -www /" in same
    assert "/proc/$1/stat" in same and "times > times0.txt" in same   # server and client CPU
    assert "openssl genrsa -out key.pem 2048" in same
    assert 'cat key.pem' in same and 'cat cert.pem' in same            # kept in the raw output
    starts = [c for c in _commands(same, "start_server tls")]
    assert starts[0][2:-1] == ["tls1.2", "-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256",
                               "-groups", "P-256", "-www;"]
    measures = [c for c in _commands(same, "measure tls")]
    assert measures[0] == ["measure", "tls1.2", "new", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"]
    assert measures[-1] == ["measure", "tls1.3", "reuse", "-ciphersuites",
                            "TLS_AES_128_GCM_SHA256"]


def test_old_era_script_uses_era_commands() -> None:
    found, _ = plans("0.9.8y", ("ecdsap256",), TlsOptions(protocols=("tls1.0", "tls1.2")))
    text = script(found[0])
    assert "openssl ecparam -name prime256v1 -genkey -noout -out key.pem" in text
    assert "-named_curve prime256v1" in text and "-tls1_2" not in text


def test_tls_suite_in_the_default_matrix_becomes_four_containers() -> None:
    m = load_matrix(ROOT / "matrix.yaml")
    suite = m.suite("tls")
    assert suite.kind == "tls" and suite.tls is not None
    inv, notes = speed_invocations("3.0.20", suite)
    assert [i.name for i in inv] == ["tls--rsa2048--same-core", "tls--rsa2048--cross-core",
                                     "tls--ecdsap256--same-core", "tls--ecdsap256--cross-core"]
    assert inv[0].exec_command[:2] == ["/bin/sh", "-c"] and "s_time" in inv[0].exec_command[2]
    assert notes == []


def test_matrix_checks_tls_keys(tmp_path: Path) -> None:
    base = (ROOT / "matrix.yaml").read_text()
    path = tmp_path / "m.yaml"
    path.write_text(base.replace("    protocols: [tls1.2, tls1.3]", "    protocols: [tls1.4]"))
    with pytest.raises(ConfigError, match=r"suites.tls.protocols\[0\]: 'tls1.4' is not one of"):
        load_matrix(path)
    path.write_text(base.replace("    pinning: [same-core, cross-core]",
                                 "    pinning: [same-cores]"))
    with pytest.raises(ConfigError, match="perhaps you meant 'same-core'"):
        load_matrix(path)
