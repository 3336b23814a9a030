"""Extra Docker engines on this machine, standing in for the hosts of a lab (test helper).

:class:`ExtraEngine` is a dockerd of our own: its own socket, data root, exec root,
pidfile, an empty configuration file and a bridge of its own (with ``--bridge none``
dockerd deletes the host's docker0, which the main engine's containers need), no
iptables. It can also listen on TCP with TLS (:func:`make_tls`: a CA, a server and a
client certificate made with the host's ``openssl`` CLI). :class:`LocalSshd` is an sshd
on 127.0.0.1 at a non-standard port that lets a test key in as root, so an engine is
reached over ``ssh://`` as a remote one would be. :func:`copy_image` puts an image on an
extra engine by ``docker save | docker load`` from the main engine (tests never build
OpenSSL on an extra engine: too slow).

Shared by the docker-marked tests that need more than the main engine
(``test_resilience_docker``, ``test_guards_docker``, ``test_lab_docker``, ship's tests).
Every name carries the pid, and each engine's bridge gets a /24 that no interface of
this host uses yet (chosen under a lock), so two test processes do not collide.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest

#: Bridges of extra engines take a free /24 from here.
BRIDGE_POOL = ipaddress.ip_network("172.31.128.0/17")
_ALLOC_LOCK = Path("/run/lock/openssl-matrix-test-bridges.lock")


def wait_for(predicate: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def can_start_engines() -> str | None:
    """Why extra engines cannot be started here, or None."""
    if os.geteuid() != 0:
        return "needs root to start extra Docker engines"
    for tool in ("dockerd", "ip", "docker"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (`bash .ci/setup` installs it)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _used_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True)
    nets = []
    for line in out.stdout.splitlines():
        parts = line.split()
        if "inet" in parts:
            nets.append(ipaddress.ip_interface(parts[parts.index("inet") + 1]).network)
    return nets


@contextlib.contextmanager
def _allocation() -> Iterator[None]:
    _ALLOC_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with _ALLOC_LOCK.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


@dataclass(frozen=True)
class TlsFiles:
    """A CA and a server and client certificate signed by it (PEM files in ``folder``)."""

    folder: Path

    @property
    def ca(self) -> Path:
        return self.folder / "ca.pem"

    @property
    def server_cert(self) -> Path:
        return self.folder / "server-cert.pem"

    @property
    def server_key(self) -> Path:
        return self.folder / "server-key.pem"

    @property
    def cert(self) -> Path:
        return self.folder / "cert.pem"

    @property
    def key(self) -> Path:
        return self.folder / "key.pem"

    def client_dir(self, dest: Path) -> Path:
        """A DOCKER_CERT_PATH-shaped folder: ca.pem, cert.pem, key.pem."""
        dest.mkdir(parents=True, exist_ok=True)
        for f in (self.ca, self.cert, self.key):
            shutil.copy(f, dest / f.name)
        return dest


def make_tls(folder: Path, host: str = "127.0.0.1") -> TlsFiles:
    """Make a CA, a server certificate for ``host`` and a client certificate with the host's
    openssl CLI (short-lived, EC keys: quick to make)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(folder)

    def ossl(*args: str) -> None:
        res = subprocess.run(["openssl", *args], cwd=folder, capture_output=True, text=True)
        assert res.returncode == 0, f"openssl {' '.join(args)}: {res.stderr}"

    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    ossl("req", "-x509", *ec, "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", "2",
         "-subj", "/CN=openssl-matrix test CA")
    (folder / "server.ext").write_text(
        f"subjectAltName=IP:{host},DNS:localhost\nextendedKeyUsage=serverAuth\n")
    (folder / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name, cn, ext in (("server", host, "server.ext"), ("client", "client", "client.ext")):
        ossl("req", "-new", *ec, "-keyout", f"{name}-key.pem", "-out", f"{name}.csr",
             "-subj", f"/CN={cn}")
        ossl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem",
             "-CAcreateserial", "-out", f"{name}-cert.pem", "-days", "2", "-extfile", ext)
    os.replace(folder / "client-cert.pem", files.cert)
    os.replace(folder / "client-key.pem", files.key)
    for key in folder.glob("*key.pem"):
        key.chmod(0o600)
    return files


class ExtraEngine:
    """A dockerd of our own (own socket, data root, exec root, bridge; no iptables).

    ``tls``: it also listens on ``tcp://127.0.0.1:<port>`` requiring client certificates
    signed by that CA (``tcp_url``).
    """

    def __init__(self, label: str = "x", *, tls: TlsFiles | None = None) -> None:
        name = f"om-{label}-{os.getpid()}"
        self.name = name
        self.sock, self.data = f"/run/{name}.sock", f"/var/lib/{name}"
        self.exec_root, self.pidfile = f"/run/{name}", f"/run/{name}.pid"
        self.log = Path(f"/tmp/{name}-dockerd.log")
        self.url = f"unix://{self.sock}"
        self.bridge = f"om{label[:4]}{os.getpid() % 100000}"[:15]
        self.tls = tls
        self.tcp_port = free_port() if tls is not None else None
        self.tcp_url = f"tcp://127.0.0.1:{self.tcp_port}" if tls is not None else None
        self.proc: subprocess.Popen[bytes] | None = None

    def _bridge_up(self) -> None:
        if subprocess.run(["ip", "link", "show", self.bridge],
                          capture_output=True).returncode == 0:
            return
        with _allocation():
            used = _used_networks()
            net = next(n for n in BRIDGE_POOL.subnets(new_prefix=24)
                       if not any(n.overlaps(u) for u in used))
            subprocess.run(["ip", "link", "add", self.bridge, "type", "bridge"], check=True)
            subprocess.run(["ip", "addr", "add", f"{next(net.hosts())}/24", "dev",
                            self.bridge], check=True)

    def _config(self) -> dict[str, str]:
        """The daemon.json: empty but, before Docker 23, a key file of its own. The engine
        ID (what the measurement lock is keyed by) comes from that key there, so extra
        engines would share the main engine's ID; from 23 on it lives in the data root."""
        out = subprocess.run(["dockerd", "--version"], capture_output=True, text=True).stdout
        major = out.split("version", 1)[-1].strip().split(".", 1)[0]
        if major.isdigit() and int(major) < 23:
            return {"deprecated-key-path": f"{self.exec_root}-key.json"}
        return {}

    def start(self) -> None:
        self._bridge_up()
        # its own (empty) configuration: the host's /etc/docker/daemon.json may set
        # data-root or a bridge, which would clash with the flags below
        config = self.log.with_name(self.log.stem + "-daemon.json")
        config.write_text(json.dumps(self._config()) + "\n")
        hosts = ["--host", self.url]
        if self.tls is not None:
            hosts += ["--host", str(self.tcp_url), "--tlsverify",
                      "--tlscacert", str(self.tls.ca), "--tlscert", str(self.tls.server_cert),
                      "--tlskey", str(self.tls.server_key)]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                ["dockerd", "--config-file", str(config), *hosts,
                 "--data-root", self.data, "--exec-root", self.exec_root,
                 "--pidfile", self.pidfile, "-b", self.bridge,
                 "--iptables=false", "--ip-masq=false", "--ip-forward=false"],
                stdout=log, stderr=log, start_new_session=True)
        wait_for(lambda: self.answers() or self.proc is None or self.proc.poll() is not None,
                 60, f"dockerd {self.name}")
        assert self.proc.poll() is None, self.log.read_text()[-2000:]

    def answers(self) -> bool:
        # a plain connect first: the SDK leaks the socket of a failed connect
        with socket.socket(socket.AF_UNIX) as sock:
            try:
                sock.connect(self.sock)
            except OSError:
                return False
        try:  # the SDK asks the version when it connects: a starting engine may reset it
            client = docker.DockerClient(base_url=self.url, timeout=30)
        except docker.errors.DockerException:
            return False
        try:
            return bool(client.ping())
        except docker.errors.DockerException:
            return False
        finally:
            client.close()

    def client(self) -> docker.DockerClient:
        return docker.DockerClient(base_url=self.url, timeout=120)

    def stop(self) -> None:
        """Stop dockerd (SIGTERM: it stops its containers). Not SIGKILL: a dockerd killed
        so leaves its containerd behind and does not start again on the same roots."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def remove(self) -> None:
        self.stop()
        subprocess.run(["umount", "-R", self.data], capture_output=True)
        shutil.rmtree(self.data, ignore_errors=True)
        shutil.rmtree(self.exec_root, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{self.exec_root}-key.json")
        subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True)


def copy_image(image: str, to: str, source: str | None = None) -> None:
    """``docker save IMAGE | docker -H TO load`` (from the main engine, or ``source``)."""
    save_cmd = ["docker", *(["-H", source] if source else []), "save", image]
    save = subprocess.Popen(save_cmd, stdout=subprocess.PIPE)
    load = subprocess.run(["docker", "-H", to, "load"], stdin=save.stdout, capture_output=True,
                          text=True)
    assert save.stdout is not None
    save.stdout.close()
    assert save.wait() == 0 and load.returncode == 0, load.stderr


@contextlib.contextmanager
def extra_engine(label: str = "x", *, tls: TlsFiles | None = None,
                 images: tuple[str, ...] = ()) -> Iterator[ExtraEngine]:
    """A started :class:`ExtraEngine` holding ``images`` (copied from the main engine);
    removed afterwards, whatever happened. Skips the test where engines cannot start."""
    why = can_start_engines()
    if why:
        pytest.skip(why)
    engine = ExtraEngine(label, tls=tls)
    try:
        engine.start()
        for image in images:
            copy_image(image, engine.url)
        yield engine
    finally:
        engine.remove()


class LocalSshd:
    """An sshd on 127.0.0.1 at a free, non-standard port that lets one test key in as root
    (no password, no PAM), and an ``ssh`` on a PATH of its own that knows that key and the
    server's host key (``path_env``): ``ssh://root@127.0.0.1:<port>`` then reaches this
    machine as a remote engine is reached. Every session gets ``DOCKER_HOST`` set to
    ``docker_host``, so ``docker system dial-stdio`` on the far side talks to that engine.
    Nothing outside ``folder`` is touched but /run/sshd (sshd's privilege-separation
    directory).
    """

    def __init__(self, folder: Path, docker_host: str) -> None:
        self.folder = folder
        self.docker_host = docker_host
        self.port = free_port()
        self.url = f"ssh://root@127.0.0.1:{self.port}"
        self.bin = folder / "bin"
        self.proc: subprocess.Popen[bytes] | None = None

    def path_env(self) -> str:
        """A PATH whose ``ssh`` uses this server's client configuration."""
        return f"{self.bin}:{os.environ.get('PATH', '/usr/bin:/bin')}"

    def start(self) -> None:
        sshd = shutil.which("sshd") or "/usr/sbin/sshd"
        if not Path(sshd).exists() or shutil.which("ssh") is None:
            pytest.skip("openssh-server and openssh-client are needed (`bash .ci/setup`)")
        f = self.folder
        f.mkdir(parents=True, exist_ok=True)
        self.bin.mkdir(exist_ok=True)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        for key in ("host_key", "client_key"):
            if not (f / key).exists():
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                                f"openssl-matrix test {key}", "-f", str(f / key)], check=True)
        (f / "authorized_keys").write_text((f / "client_key.pub").read_text())
        host_pub = (f / "host_key.pub").read_text().split()
        (f / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {host_pub[0]} {host_pub[1]}\n")
        (f / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {f / 'host_key'}\n"
            f"PidFile {f / 'sshd.pid'}\nAuthorizedKeysFile {f / 'authorized_keys'}\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            f"SetEnv DOCKER_HOST={self.docker_host}\n")
        (f / "ssh_config").write_text(
            f"Host *\n  IdentityFile {f / 'client_key'}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {f / 'known_hosts'}\n  StrictHostKeyChecking yes\n")
        wrapper = self.bin / "ssh"
        wrapper.write_text(f"#!/bin/sh\nexec {shutil.which('ssh')} -F {f / 'ssh_config'} "
                           '"$@"\n')
        wrapper.chmod(0o755)
        with (f / "sshd.log").open("ab") as log:
            self.proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(f / "sshd_config")],
                                         stdout=log, stderr=log, start_new_session=True)

        def listening() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", self.port)) == 0

        wait_for(lambda: listening() or (self.proc is not None and self.proc.poll() is not None),
                 30, "sshd")
        assert self.proc.poll() is None, (f / "sshd.log").read_text()[-2000:]

    def stop(self) -> None:
        """Stop dockerd (SIGTERM: it stops its containers). Not SIGKILL: a dockerd killed
        so leaves its containerd behind and does not start again on the same roots."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
