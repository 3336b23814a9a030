"""Engines named as Docker users name them (engines.py), without a Docker engine: the CLI's
context store laid out as `docker context create` leaves it, TLS from a context or the
environment, plain TCP refused unless allowed (then warned about), ssh:// addresses and
the ssh command the tunnel runs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from openssl_matrix.core.errors import DockerUnavailable, UsageError
from openssl_matrix.engine import engines
from openssl_matrix.engine.engines import SshTunnel, resolve


def add_context(config: Path, name: str, host: str, *, tls: bool = False,
                skip_verify: bool = False) -> Path:
    """A context as `docker context create NAME --docker host=...,ca=,cert=,key=` stores it
    (layout checked against the Docker CLI 20.10 on this machine)."""
    digest = hashlib.sha256(name.encode()).hexdigest()
    meta = config / "contexts" / "meta" / digest
    meta.mkdir(parents=True)
    (meta / "meta.json").write_text(json.dumps({
        "Name": name, "Metadata": {"Description": "a lab host"},
        "Endpoints": {"docker": {"Host": host, "SkipTLSVerify": skip_verify}}}))
    tls_dir = config / "contexts" / "tls" / digest / "docker"
    if tls:
        tls_dir.mkdir(parents=True)
        for f in ("ca", "cert", "key"):
            (tls_dir / f"{f}.pem").write_text(f"-----BEGIN {f}-----\n")
    return tls_dir


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"DOCKER_CONFIG": str(tmp_path / "docker-config")}


def test_a_context_with_tls_material_is_read_from_the_store(env: dict[str, str]) -> None:
    tls_dir = add_context(Path(env["DOCKER_CONFIG"]), "xeon", "tcp://xeon.lab:2376", tls=True)
    e = resolve("context:xeon", environ=env)
    assert (e.url, e.context, e.transport) == ("tcp://xeon.lab:2376", "xeon", "tcp+tls")
    assert e.tls is not None and e.tls.verify
    assert (e.tls.ca, e.tls.cert, e.tls.key) == tuple(str(tls_dir / f"{f}.pem")
                                                     for f in ("ca", "cert", "key"))
    assert e.describe() == {"spec": "context:xeon", "url": "tcp://xeon.lab:2376",
                            "context": "xeon", "transport": "tcp+tls", "tls_verify": True}


def test_an_ssh_context_and_a_skip_verify_context(env: dict[str, str]) -> None:
    add_context(Path(env["DOCKER_CONFIG"]), "ryzen", "ssh://bench@ryzen.lab:2222")
    add_context(Path(env["DOCKER_CONFIG"]), "loose", "tcp://10.0.0.9:2376", skip_verify=True)
    assert resolve("context:ryzen", environ=env).transport == "ssh"
    loose = resolve("context:loose", environ=env)
    assert loose.tls is not None and not loose.tls.verify and loose.transport == "tcp+tls"


def test_an_unknown_context_names_the_close_one_and_what_to_do(env: dict[str, str]) -> None:
    add_context(Path(env["DOCKER_CONFIG"]), "ryzen", "ssh://bench@ryzen.lab")
    with pytest.raises(DockerUnavailable) as err:
        resolve("context:ryzn", environ=env)
    text = str(err.value)
    assert "no Docker context named 'ryzn'" in text and "perhaps you meant 'ryzen'" in text
    assert "docker context create" in text and "DOCKER_CONFIG" in text


def test_without_a_docker_host_the_cli_order_applies(env: dict[str, str]) -> None:
    config = Path(env["DOCKER_CONFIG"])
    add_context(config, "ryzen", "ssh://bench@ryzen.lab")
    assert resolve(None, environ=env).url == engines.DEFAULT_SOCKET
    (config / "config.json").write_text(json.dumps({"currentContext": "ryzen"}))
    assert resolve(None, environ=env).url == "ssh://bench@ryzen.lab"
    add_context(config, "other", "unix:///run/other.sock")
    assert resolve(None, environ={**env, "DOCKER_CONTEXT": "other"}).url == \
        "unix:///run/other.sock"
    assert resolve(None, environ={**env, "DOCKER_HOST": "unix:///run/x.sock"}).url == \
        "unix:///run/x.sock", "DOCKER_HOST wins over contexts, as in the Docker CLI"
    assert resolve("context:default", environ=env).url == engines.DEFAULT_SOCKET


def test_plain_tcp_is_refused_unless_allowed_and_then_warned_about(
        env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError) as err:
        resolve("tcp://xeon.lab:2375", environ=env)
    assert "plain TCP" in str(err.value) and "--allow-plain-tcp" in str(err.value)
    with pytest.raises(UsageError):
        resolve(None, environ={**env, "DOCKER_HOST": "tcp://xeon.lab:2375"})
    e = resolve("tcp://xeon.lab:2375", allow_plain_tcp=True, environ=env)
    assert e.plain_tcp and e.transport == "tcp (no TLS)"
    assert "!!! tcp://xeon.lab:2375 is a Docker engine over plain TCP" in capsys.readouterr().err


def test_tcp_tls_from_docker_cert_path(tmp_path: Path, env: dict[str, str]) -> None:
    certs = tmp_path / "certs"
    certs.mkdir()
    for f in ("ca", "cert", "key"):
        (certs / f"{f}.pem").write_text("x")
    e = resolve("tcp://xeon.lab:2376", environ={**env, "DOCKER_CERT_PATH": str(certs),
                                                "DOCKER_TLS_VERIFY": "1"})
    assert e.tls is not None and e.tls.verify and e.tls.ca == str(certs / "ca.pem")
    (certs / "ca.pem").unlink()
    with pytest.raises(DockerUnavailable, match=r"no ca\.pem"):
        resolve("tcp://xeon.lab:2376", environ={**env, "DOCKER_CERT_PATH": str(certs),
                                                "DOCKER_TLS_VERIFY": "1"})


@pytest.mark.parametrize("bad", ["ssh://-oProxyCommand=x", "ssh://a b", "tcp://h:2376/x;y",
                                 "http://h:2375", "ryzen.lab"])
def test_malformed_addresses_are_refused(bad: str, env: dict[str, str]) -> None:
    with pytest.raises(UsageError, match="engine address"):
        resolve(bad, environ=env)


def test_the_ssh_command_never_prompts_and_ends_its_options(tmp_path: Path) -> None:
    t = SshTunnel("ssh://bench@ryzen.lab:2222")
    try:
        cmd = t.command("docker", "system", "dial-stdio")
    finally:
        t.close()
    assert cmd[1:] == ["-o", "BatchMode=yes", "-o",
                       f"ConnectTimeout={engines.SSH_CONNECT_TIMEOUT}", "-o",
                       "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4", "-p", "2222",
                       "-l", "bench", "--", "ryzen.lab", "docker", "system", "dial-stdio"]


def test_a_refused_ssh_login_says_why_and_what_to_do(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "ssh"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bench@ryzen.lab: Permission denied (publickey).' >&2\n"
                    "exit 255\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    t = SshTunnel("ssh://bench@ryzen.lab")
    try:
        with pytest.raises(DockerUnavailable) as err:
            t.check()
    finally:
        t.close()
    text = str(err.value)
    assert "Permission denied (publickey)" in text
    assert "`ssh bench@ryzen.lab docker version` must work without a password prompt" in text


def test_profiles_describe_an_engine_without_connecting_or_warning(
        env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    add_context(Path(env["DOCKER_CONFIG"]), "xeon", "tcp://xeon.lab:2376", tls=True)
    assert engines.describe_spec("context:xeon", env)["transport"] == "tcp+tls"
    assert engines.describe_spec("tcp://x.lab:2375", env)["transport"] == "tcp (no TLS)"
    assert "no Docker context named 'nope'" in engines.describe_spec("context:nope",
                                                                     env)["problem"]
    assert capsys.readouterr().err == ""


def test_tls_that_does_not_check_the_engine_is_said_once_in_words(
        tmp_path: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    certs = tmp_path / "certs"
    certs.mkdir()
    for f in ("ca", "cert", "key"):
        (certs / f"{f}.pem").write_text("x")
    e = resolve("tcp://xeon.lab:2376", environ={**env, "DOCKER_CERT_PATH": str(certs)})
    assert e.tls is not None and not e.tls.verify
    err = capsys.readouterr().err
    assert "TLS without checking the engine's certificate (DOCKER_CERT_PATH" in err
    assert "set DOCKER_TLS_VERIFY=1" in err
    add_context(Path(env["DOCKER_CONFIG"]), "loose", "tcp://10.0.0.9:2376", skip_verify=True)
    resolve("context:loose", environ=env)
    assert "TLS without checking the engine's certificate (context loose" in \
        capsys.readouterr().err
    resolve("tcp://xeon.lab:2376", environ={**env, "DOCKER_CERT_PATH": str(certs),
                                            "DOCKER_TLS_VERIFY": "1"})
    assert capsys.readouterr().err == "", "a checked engine: no warning"
