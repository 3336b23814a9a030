"""Naming and reaching Docker engines the way Docker users name them.

A CPU profile's ``docker_host`` (or, without one, the environment) names an engine:

* ``context:NAME``: a Docker CLI context, read from the CLI's own store
  (``$DOCKER_CONFIG`` or ``~/.docker``): ``contexts/meta/<sha256 of NAME>/meta.json``
  holds the endpoint (``Endpoints.docker.Host``, ``SkipTLSVerify``) and
  ``contexts/tls/<sha256 of NAME>/docker/{ca,cert,key}.pem`` its TLS material, as
  ``docker context create NAME --docker host=...,ca=...,cert=...,key=...`` left them;
* ``ssh://[user@]host[:port]``: the ``ssh`` client logs in (keys, an agent or
  ``~/.ssh/config``; never a password prompt: BatchMode) and runs
  ``docker system dial-stdio`` there, as the Docker CLI does (:class:`SshTunnel`);
* ``tcp://host:port``: with TLS from ``$DOCKER_CERT_PATH`` (ca.pem, cert.pem, key.pem;
  ``$DOCKER_TLS_VERIFY`` set verifies the engine's certificate). A ``tcp://`` engine
  without TLS is anyone's on that network who can reach the port (root on that host):
  it is refused unless the caller allows it explicitly (``--allow-plain-tcp``), and
  then a loud warning is printed every time;
* ``unix:///path``: a local socket.

Without a ``docker_host``: ``$DOCKER_HOST``, else ``$DOCKER_CONTEXT`` or the CLI's
current context (``currentContext`` in ``config.json``), else the local socket, in the
Docker CLI's order. This module reads files and runs ``ssh``; ``backend`` (the only
module importing ``docker``) connects to what :func:`resolve` returns.
"""

from __future__ import annotations

import atexit
import contextlib
import difflib
import hashlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openssl_matrix.core import jsonread, log
from openssl_matrix.core.errors import DockerUnavailable, UsageError
from openssl_matrix.core.files import read_bounded_text

DEFAULT_SOCKET = "unix:///var/run/docker.sock"
#: Seconds ``ssh`` may take to connect (a host that is down must not hang the lab).
SSH_CONNECT_TIMEOUT = 15
_SSH = re.compile(r"^ssh://(?:(?P<user>[A-Za-z0-9_][A-Za-z0-9_.-]*)@)?"
                  r"(?P<host>[A-Za-z0-9_][A-Za-z0-9_.-]*|\[[0-9A-Fa-f:.]+\])"
                  r"(?::(?P<port>[0-9]{1,5}))?/?$")
_TCP = re.compile(r"^tcp://(?P<host>[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])"
                  r"(?::(?P<port>[0-9]{1,5}))?/?$")
PLAIN_TCP_WARNING = (
    "!!! {url} is a Docker engine over plain TCP: no TLS, no authentication. Anyone who "
    "can reach that port controls the engine (and so is root on its host), and every "
    "image, command and result crosses the network in clear. Protect it with TLS "
    "(docs/lab.md: 'a TLS engine') or reach it over ssh:// instead. !!!")


@dataclass(frozen=True)
class TlsFiles:
    """Client TLS material for a ``tcp://`` engine; ``verify``: check the engine's
    certificate against ``ca`` (never off unless the context says SkipTLSVerify)."""

    ca: str | None
    cert: str | None
    key: str | None
    verify: bool = True
    source: str = ""


def _named(url: str, spec: str) -> str:
    return url if spec == url else f"{url} ({spec})"


@dataclass(frozen=True)
class Engine:
    """A Docker engine as named (``spec``) and where it is (``url``)."""

    spec: str
    url: str
    context: str | None = None
    tls: TlsFiles | None = None

    @property
    def transport(self) -> str:
        scheme = self.url.split("://", 1)[0]
        if scheme == "tcp":
            return "tcp+tls" if self.tls is not None else "tcp (no TLS)"
        return scheme

    @property
    def plain_tcp(self) -> bool:
        return self.url.startswith("tcp://") and self.tls is None

    @property
    def is_ssh(self) -> bool:
        return self.url.startswith("ssh://")

    def describe(self) -> dict[str, Any]:
        """For provenance: how the engine was named and reached (no key material)."""
        return {"spec": self.spec, "url": self.url, "context": self.context,
                "transport": self.transport,
                "tls_verify": None if self.tls is None else self.tls.verify}


# -- the Docker CLI's configuration and context store ---------------------------------


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get("DOCKER_CONFIG") or Path.home() / ".docker")


def _context_key(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def context_names(environ: Mapping[str, str] | None = None) -> list[str]:
    """The contexts in the store (``docker context ls`` without ``default``)."""
    names = []
    for meta in sorted((config_dir(environ) / "contexts" / "meta").glob("*/meta.json")):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            name = jsonread.loads(read_bounded_text(meta, "config")).get("Name")
            if isinstance(name, str):
                names.append(name)
    return names


def current_context(environ: Mapping[str, str] | None = None) -> str | None:
    """``$DOCKER_CONTEXT``, else ``currentContext`` of the CLI's config.json."""
    env = os.environ if environ is None else environ
    if env.get("DOCKER_CONTEXT"):
        return env["DOCKER_CONTEXT"]
    path = config_dir(env) / "config.json"
    try:
        data = jsonread.loads(read_bounded_text(path, "config"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise DockerUnavailable(f"{path} cannot be read: {exc}",
                                hint="it is the Docker CLI's configuration; fix or move it",
                                ) from None
    name = data.get("currentContext") if isinstance(data, dict) else None
    return name if isinstance(name, str) and name else None


def read_context(name: str, environ: Mapping[str, str] | None = None) -> Engine:
    """The engine of Docker context ``name``, with its TLS material."""
    env = os.environ if environ is None else environ
    if name == "default":
        return _from_env_host(f"context:{name}", env)
    store = config_dir(env) / "contexts"
    digest = _context_key(name)
    meta_path = store / "meta" / digest / "meta.json"
    try:
        meta = jsonread.loads(read_bounded_text(meta_path, "config"))
    except FileNotFoundError:
        known = context_names(env)
        close = difflib.get_close_matches(name, known, n=1)
        raise DockerUnavailable(
            f"there is no Docker context named {name!r} in {config_dir(env)}"
            + (f" (perhaps you meant {close[0]!r}?)" if close else ""),
            hint=("contexts there: " + ", ".join(known) + "; " if known else "")
            + "`docker context ls` lists them; `docker context create NAME --docker "
            "host=ssh://user@host` adds one (set DOCKER_CONFIG if your store is elsewhere)",
        ) from None
    except (OSError, ValueError) as exc:
        raise DockerUnavailable(f"Docker context {name!r} cannot be read ({meta_path}): "
                                f"{exc}", hint="`docker context inspect NAME` shows it; "
                                "recreate it with `docker context create`") from None
    endpoint = (meta.get("Endpoints") or {}).get("docker") if isinstance(meta, dict) else None
    host = endpoint.get("Host") if isinstance(endpoint, dict) else None
    if not isinstance(host, str) or not host:
        raise DockerUnavailable(f"Docker context {name!r} has no Docker endpoint",
                                hint=f"`docker context update {name} --docker host=...`")
    assert isinstance(endpoint, dict)
    tls_dir = store / "tls" / digest / "docker"
    tls = None
    ca, cert, key = _pem_files(tls_dir)
    if ca or cert or key or endpoint.get("SkipTLSVerify"):
        tls = TlsFiles(ca, cert, key, verify=not endpoint.get("SkipTLSVerify"),
                       source=f"context {name} ({tls_dir})")
    return _check_url(Engine(spec=f"context:{name}", url=host, context=name, tls=tls))


def _env_tls(env: Mapping[str, str]) -> TlsFiles | None:
    """TLS from ``$DOCKER_CERT_PATH``/``$DOCKER_TLS_VERIFY``, as the Docker CLI reads it."""
    cert_path = env.get("DOCKER_CERT_PATH")
    verify = bool(env.get("DOCKER_TLS_VERIFY"))
    if not cert_path and not verify:
        return None
    folder = Path(cert_path) if cert_path else config_dir(env)
    ca, cert, key = _pem_files(folder)
    return TlsFiles(ca, cert, key, verify=verify, source=f"DOCKER_CERT_PATH ({folder})")


def _pem_files(folder: Path) -> tuple[str | None, str | None, str | None]:
    """``ca.pem``, ``cert.pem``, ``key.pem`` of a folder, each None when absent."""

    def one(name: str) -> str | None:
        path = folder / f"{name}.pem"
        return str(path) if path.exists() else None

    return one("ca"), one("cert"), one("key")


def _from_env_host(spec: str, env: Mapping[str, str]) -> Engine:
    host = env.get("DOCKER_HOST") or DEFAULT_SOCKET
    tls = _env_tls(env) if host.startswith("tcp://") else None
    return _check_url(Engine(spec=spec, url=host, tls=tls))


def _check_url(engine: Engine) -> Engine:
    url = engine.url
    if url.startswith("unix://"):
        return engine
    if url.startswith("ssh://"):
        if not _SSH.match(url):
            raise UsageError(f"{_named(url, engine.spec)} is not an ssh:// engine address",
                             hint="write ssh://user@host or ssh://user@host:port (a Host "
                             "alias of ~/.ssh/config works as the host)")
        return engine
    if url.startswith("tcp://"):
        if not _TCP.match(url):
            raise UsageError(f"{_named(url, engine.spec)} is not a tcp:// engine address",
                             hint="write tcp://host:2376")
        tls = engine.tls
        if tls is not None:
            for what in ("ca", "cert", "key"):
                path = getattr(tls, what)
                if path is not None and not Path(path).is_file():
                    raise DockerUnavailable(f"the TLS {what} file {path} of {engine.spec} "
                                            "is missing")
            if tls.verify and tls.ca is None:
                raise DockerUnavailable(
                    f"{engine.spec}: TLS verification is on but there is no ca.pem "
                    f"({tls.source})", hint="put the CA certificate that signed the "
                    "engine's certificate there as ca.pem (docs/lab.md: 'a TLS engine')")
            if (tls.cert is None) != (tls.key is None):
                raise DockerUnavailable(f"{engine.spec}: a client certificate needs both "
                                        f"cert.pem and key.pem ({tls.source})")
        return engine
    raise UsageError(f"{_named(url, engine.spec)} is not a Docker engine address",
                     hint="use ssh://user@host, tcp://host:2376 (with TLS), "
                     "unix:///path/docker.sock or context:NAME (a docker context)")


def describe_spec(spec: str, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """How ``spec`` would be reached (no connection, no warning), or the problem in it."""
    try:
        engine = resolve(spec, allow_plain_tcp=True, environ=environ, warn=False)
    except (UsageError, DockerUnavailable) as exc:
        return {"spec": spec, "problem": exc.message}
    return engine.describe()


def resolve(spec: str | None = None, *, allow_plain_tcp: bool = False,
            environ: Mapping[str, str] | None = None, warn: bool = True) -> Engine:
    """The engine ``spec`` names (a profile's ``docker_host``), or the environment's.

    A ``tcp://`` engine without TLS raises :class:`UsageError` unless
    ``allow_plain_tcp``; then :data:`PLAIN_TCP_WARNING` is logged.
    """
    env = os.environ if environ is None else environ
    if spec is None or spec == "":
        if env.get("DOCKER_HOST"):
            engine = _from_env_host("DOCKER_HOST", env)
        else:
            name = current_context(env)
            engine = read_context(name, env) if name and name != "default" else \
                Engine(spec="default", url=DEFAULT_SOCKET)
    elif spec.startswith("context:"):
        engine = read_context(spec.split(":", 1)[1], env)
    elif spec.startswith("tcp://"):
        engine = _check_url(Engine(spec=spec, url=spec, tls=_env_tls(env)))
    else:
        engine = _check_url(Engine(spec=spec, url=spec))
    if engine.plain_tcp:
        if not allow_plain_tcp:
            raise UsageError(
                f"refusing the Docker engine {_named(engine.url, engine.spec)}: plain TCP, no TLS "
                "— anyone who can reach that port controls the engine and sees every "
                "result",
                hint="give it TLS (DOCKER_CERT_PATH + DOCKER_TLS_VERIFY=1, or a docker "
                "context with ca/cert/key; docs/lab.md), reach it over ssh://, or pass "
                "--allow-plain-tcp if you accept the risk on a network you own")
        if warn:
            log.warn(PLAIN_TCP_WARNING.format(url=engine.url))
    elif engine.tls is not None and not engine.tls.verify and warn:
        log.warn(f"{_named(engine.url, engine.spec)}: TLS without checking the engine's "
                 f"certificate ({engine.tls.source}): encrypted, but whoever sits between "
                 "could pose as the engine; set DOCKER_TLS_VERIFY=1 (or drop "
                 "skip-tls-verify from the context) to check it against ca.pem")
    return engine


# -- ssh ------------------------------------------------------------------------------


class SshTunnel:
    """``ssh://`` as the Docker CLI does it: each connection of the SDK to a private unix
    socket becomes one ``ssh HOST docker system dial-stdio``, whose stdin and stdout are
    that very connection (no bytes pass through Python).

    The ssh client logs in as configured (keys, agent, ``~/.ssh/config``), never asks for
    a password (BatchMode) and gives up connecting after :data:`SSH_CONNECT_TIMEOUT`.
    The far side needs the ``docker`` CLI; it talks to that host's default engine.
    """

    def __init__(self, url: str) -> None:
        m = _SSH.match(url)
        if m is None:
            raise UsageError(f"{url!r} is not an ssh:// engine address")
        self.url = url
        self.user, self.host, self.port = m["user"], m["host"].strip("[]"), m["port"]
        self._dir = Path(tempfile.mkdtemp(prefix="openssl-matrix-ssh-"))
        self.socket_path = self._dir / "docker.sock"
        self._server: socket.socket | None = None
        self._procs: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()
        self._stderr = self._dir / "ssh.stderr"
        atexit.register(self.close)  # the private folder goes, even if nobody closes it

    def command(self, *remote: str) -> list[str]:
        ssh = shutil.which("ssh")
        if ssh is None:
            raise DockerUnavailable(f"{self.url}: there is no ssh client on this machine",
                                    hint="install openssh-client")
        return [ssh, "-o", "BatchMode=yes", "-o", f"ConnectTimeout={SSH_CONNECT_TIMEOUT}",
                "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4",
                *(["-p", self.port] if self.port else []),
                *(["-l", self.user] if self.user else []), "--", self.host, *remote]

    def check(self) -> str:
        """Log in once and ask the far side's engine its version; a failure says why
        (host unknown, key refused, no docker CLI there, engine down)."""
        cmd = self.command("docker", "version", "--format", "{{.Server.Version}}")
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                 timeout=SSH_CONNECT_TIMEOUT + 45)
        except subprocess.TimeoutExpired:
            raise DockerUnavailable(f"cannot reach the Docker engine at {self.url}: ssh did "
                                    "not finish in time", hint="check `ssh "
                                    f"{self._login()} docker version`") from None
        if out.returncode != 0 or not out.stdout.strip():
            why = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1][:300]
            raise DockerUnavailable(
                f"cannot reach the Docker engine at {self.url} over ssh: {why}",
                hint=f"`ssh {self._login()} docker version` must work without a password "
                "prompt: a key in ssh-agent or ~/.ssh (docs/lab.md), the host key in "
                "known_hosts, the docker CLI on that host and the user allowed to use its "
                "engine")
        return out.stdout.strip()

    def _login(self) -> str:
        port = f"-p {self.port} " if self.port else ""
        return f"{port}{self.user + '@' if self.user else ''}{self.host}"

    def start(self) -> str:
        """Listen on the private socket; return its ``unix://`` URL."""
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        os.chmod(self._dir, 0o700)
        server.bind(str(self.socket_path))
        server.listen(16)
        self._server = server
        threading.Thread(target=self._serve, daemon=True,
                         name=f"ssh tunnel {self.url}").start()
        return f"unix://{self.socket_path}"

    def _serve(self) -> None:
        assert self._server is not None
        cmd = self.command("docker", "system", "dial-stdio")
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return  # closed
            with conn, self._lock, self._stderr.open("ab") as err:
                self._reap()
                try:
                    self._procs.append(subprocess.Popen(cmd, stdin=conn.fileno(),
                                                        stdout=conn.fileno(), stderr=err,
                                                        start_new_session=True))
                except OSError:
                    continue  # the SDK sees the connection close

    def _reap(self) -> None:
        self._procs = [p for p in self._procs if p.poll() is None]

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        with self._lock:
            for p in self._procs:
                if p.poll() is None:
                    p.terminate()
            for p in self._procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(5)
            self._procs.clear()
        shutil.rmtree(self._dir, ignore_errors=True)
