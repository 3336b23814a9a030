"""The container backend: the only module that imports ``docker``.

Everything else talks to ``DockerBackend``: build an image from a context folder,
ask whether an image exists, run a hardened container and get back its stdout,
stderr, exit code and timings, describe the engine. Unit tests substitute a fake
with the same methods (see ``tests/fakes.py``).
"""

from __future__ import annotations

import contextlib
import io
import json
import socket
import subprocess
import tarfile
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import docker
import docker.errors
import docker.tls
import requests.exceptions
import urllib3.exceptions

from openssl_matrix.core import log as _log
from openssl_matrix.core.clock import now as _now
from openssl_matrix.core.errors import BenchError, BuildError, DockerUnavailable
from openssl_matrix.core.settings import ENVIRONMENT, environment_settings
from openssl_matrix.engine.buildkitlog import TRACE_ID, Progress
from openssl_matrix.engine.engineinfo import EngineInfo
from openssl_matrix.engine.engines import Engine, SshTunnel
from openssl_matrix.engine.engines import resolve as resolve_engine

KEEP_ENV = ENVIRONMENT["keep_containers"]
PROGRESS_EVERY = 30.0  # seconds between "still building" notes
#: Exit code given to a container run killed for exceeding its time limit (as timeout(1)).
TIMEOUT_EXIT = 124
#: An unprivileged user (nobody) for every container run: openssl speed needs no root.
NOBODY = "65534:65534"


@dataclass(frozen=True)
class RunResult:
    """What one container run produced."""

    command: tuple[str, ...]
    env: Mapping[str, str]
    stdout: str
    stderr: str
    exit_code: int
    started: str
    ended: str
    seconds: float


@dataclass(frozen=True)
class RunLimits:
    """Isolation for a container run: no network, no capabilities, no privilege gain,
    read-only root, memory and pid limits, an unprivileged user. Never privileged.

    ``devices`` (host paths such as ``/dev/crypto``) are passed only when given: a
    suite asks for them and the bench checks the host has them. ``labels`` mark the
    container so that one left behind by a killed process can be found and removed.
    """

    network: str = "none"
    memory: str = "1g"
    pids: int = 256
    cpuset: str | None = None
    cpus: float | None = None
    """CPU quota in CPUs (Docker's --cpus); None: no quota."""
    cpu_shares: int | None = None
    """CPU weight against other containers (Docker's --cpu-shares, default 1024)."""
    read_only: bool = True
    devices: tuple[str, ...] = ()
    timeout: float = 3600.0
    user: str | None = NOBODY
    labels: tuple[tuple[str, str], ...] = ()
    cap_add: tuple[str, ...] = ()
    """Capabilities given back after dropping all (a profiler's ``SYS_ADMIN``, which also
    lets Docker's default seccomp profile allow ``perf_event_open``); none by default."""


@dataclass(frozen=True)
class ImageFacts:
    """What an engine says about one image: its ID (the sha256 of its configuration, the
    same on every engine that holds it), size, platform, labels and tags."""

    id: str
    size: int
    os: str
    arch: str  # Docker's platform name: amd64, 386, arm64 ...
    labels: Mapping[str, str]
    tags: tuple[str, ...] = ()


class Backend(Protocol):
    """The seam: what build and bench need from a container engine."""

    def engine_info(self) -> EngineInfo: ...

    def image_id(self, tag: str) -> str | None: ...

    def image_labels(self, tag: str) -> dict[str, str]: ...

    def build(self, context: Path, tag: str, *, log_path: Path, network: str | None,
              labels: Mapping[str, str], buildargs: Mapping[str, str] | None = None,
              buildkit: bool = False) -> str: ...

    def run(self, image: str, command: Sequence[str], *, env: Mapping[str, str] | None = None,
            limits: RunLimits | None = None) -> RunResult: ...

    def remove_containers(self, labels: Mapping[str, str]) -> list[str]: ...

    def image_facts(self, tag: str) -> ImageFacts | None: ...

    def save_image(self, tag: str) -> Iterator[bytes]: ...

    def load_image(self, chunks: Iterable[bytes]) -> None: ...

    def push_image(self, tag: str, ref: str) -> None: ...

    def pull_image(self, ref: str, tag: str) -> None: ...

    def remove_image(self, tag: str) -> None: ...

    def run_on_host(self, argv: Sequence[str], *, timeout: float) -> str | None:
        """Run a program of ours (the core probe) on the machine whose cores the
        containers use, and give its output; None when that machine is not this one
        (a remote engine). OSError and subprocess.TimeoutExpired pass through."""
        ...



def endpoint_is_local(engine: Mapping[str, Any]) -> bool:
    """Whether the engine :meth:`Backend.engine_info` describes runs on this machine (so
    its kernel and devices are this host's): a local socket, not a TCP/SSH endpoint."""
    endpoint = str(engine.get("endpoint") or "local")
    return endpoint == "local" or endpoint.startswith("unix://")


class _Api(docker.APIClient):  # type: ignore[misc]
    """The SDK's API client, except that the engine's own CA decides: requests lets
    $REQUESTS_CA_BUNDLE/$CURL_CA_BUNDLE replace a session's CA (psf/requests#3829), so a
    TLS engine's ca.pem would be ignored wherever those are set."""

    def merge_environment_settings(self, url: Any, proxies: Any, stream: Any, verify: Any,
                                   cert: Any) -> dict[str, Any]:
        settings: dict[str, Any] = super().merge_environment_settings(url, proxies, stream,
                                                                      verify, cert)
        if verify is None:
            settings["verify"] = self.verify
        return settings


class _Client(docker.DockerClient):  # type: ignore[misc]
    def __init__(self, **kwargs: Any) -> None:  # what DockerClient does, with _Api
        self.api = _Api(**kwargs)


class DockerBackend:
    """A Docker engine reached through the SDK: a local socket, ``tcp://`` with TLS,
    ``ssh://`` or a Docker context, as ``engines.resolve`` names it; ``answer_timeout``:
    seconds its first answer may take (None: :data:`ANSWER_TIMEOUT_S`)."""

    def __init__(self, base_url: str | None = None, *, engine: Engine | None = None,
                 allow_plain_tcp: bool = False, answer_timeout: float | None = None) -> None:
        self.spec = base_url
        self.answer_timeout = ANSWER_TIMEOUT_S if answer_timeout is None else answer_timeout
        self.engine = engine or resolve_engine(base_url, allow_plain_tcp=allow_plain_tcp)
        self.base_url = self.engine.url
        self._tunnel: SshTunnel | None = None
        client = None
        tls = self.engine.tls
        if tls is not None and not tls.verify:
            # engines.resolve warned once, in words; not urllib3 again for every request
            warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
        try:
            connect_url = self.base_url
            if self.engine.is_ssh:
                self._tunnel = SshTunnel(self.base_url)
                self._tunnel.check()
                connect_url = self._tunnel.start()
            _probe_unix_socket(connect_url)
            with self._first_answer():  # the SDK asks the engine's API version here
                client = _Client(
                    base_url=connect_url, timeout=self.answer_timeout,
                    tls=docker.tls.TLSConfig(
                        client_cert=(tls.cert, tls.key) if tls.cert and tls.key else None,
                        ca_cert=tls.ca, verify=tls.verify) if tls is not None else False)
                client.ping()
            client.api.timeout = 120  # later requests: image builds, pulls, long runs
        except (docker.errors.DockerException, requests.exceptions.RequestException,
                OSError, DockerUnavailable) as exc:
            if client is not None:
                client.close()
            self.close()
            if isinstance(exc, DockerUnavailable):
                raise
            where = self.base_url
            if self.engine.spec != where:
                where += f" ({self.engine.spec})"
            raise DockerUnavailable(
                f"cannot reach the Docker engine at {where}: {_short(exc)}",
                hint=("start it (e.g. `dockerd &`, or `bash .ci/setup` on a fresh machine) "
                      "and check `docker info`" if self.base_url.startswith("unix://") else
                      f"check `docker {self._cli_args()} info`"
                      + (" (the engine's certificate must be signed by ca.pem and name "
                         "the host; see docs/lab.md)" if tls is not None else "")),
            ) from None
        self.client = client

    def _where(self) -> str:
        where = self.base_url
        if self.engine.spec != where:
            where += f" ({self.engine.spec})"
        return where

    @contextlib.contextmanager
    def _first_answer(self) -> Iterator[None]:
        """Around the first requests to the engine: after :data:`PROGRESS_AFTER_S` a line
        says whom we wait for; an engine that took the connection and did not answer in
        ``answer_timeout`` seconds is DockerUnavailable, saying what to check."""
        answered = threading.Event()
        where = self._where()

        def progress() -> None:
            if not answered.wait(PROGRESS_AFTER_S):
                _log.info(f"waiting for the Docker engine at {where} to answer (giving up "
                          f"after {self.answer_timeout:g} s)…")

        threading.Thread(target=progress, daemon=True).start()
        try:
            yield
        except (requests.exceptions.RequestException, docker.errors.DockerException) as exc:
            if not _timed_out(exc):
                raise
            raise DockerUnavailable(
                f"the Docker engine at {where} took the connection but did not answer in "
                f"{self.answer_timeout:g} s",
                hint=f"check that a Docker engine (not another program) listens there and "
                f"is not hung: `docker {self._cli_args()} info`".replace("  ", " ")
                + "; restart it if that hangs too") from None
        finally:
            answered.set()

    def _cli_args(self) -> str:
        if self.engine.context:
            return f"--context {self.engine.context}"
        tls = self.engine.tls
        extra = ""
        if tls is not None:
            extra = (" --tlsverify" if tls.verify else " --tls") + \
                (f" --tlscacert {tls.ca}" if tls.ca else "") + \
                (f" --tlscert {tls.cert} --tlskey {tls.key}" if tls.cert else "")
        return f"-H {self.base_url}{extra}"

    def close(self) -> None:
        """Close the connection (and an ssh tunnel's ssh processes)."""
        client = getattr(self, "client", None)
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
        if self._tunnel is not None:
            self._tunnel.close()
            self._tunnel = None

    def _guard(self, what: str, exc: BaseException) -> DockerUnavailable:
        return DockerUnavailable(
            f"the Docker engine stopped answering while {what}: {_short(exc)}",
            hint="restart it and rerun the same command: finished work is kept and skipped",
        )

    def _answers(self) -> bool:
        """Whether the engine still answers a ping a moment later (an engine shutting
        down fails some requests with a 500 before it stops answering)."""
        time.sleep(1.0)
        try:
            return bool(self.client.ping())
        except (docker.errors.DockerException, requests.exceptions.RequestException):
            return False

    def engine_info(self) -> EngineInfo:
        try:
            info = self.client.info()
            version = self.client.version()
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise self._guard("describing the engine", exc) from None
        return EngineInfo.from_json({
            "endpoint": self.base_url,
            "endpoint_spec": self.spec if self.spec else self.engine.spec,
            "transport": self.engine.transport,
            "context": self.engine.context,
            "id": info.get("ID"),
            "name": info.get("Name"),
            "root_dir": info.get("DockerRootDir"),
            "server_version": version.get("Version"),
            "api_version": version.get("ApiVersion"),
            "os": info.get("OperatingSystem"),
            "kernel": info.get("KernelVersion"),
            "arch": info.get("Architecture"),
            "os_type": info.get("OSType"),
            "ncpu": info.get("NCPU"),
            "mem_total": info.get("MemTotal"),
            "storage_driver": info.get("Driver"),
        })

    def image_id(self, tag: str) -> str | None:
        try:
            return str(self.client.images.get(tag).id)
        except docker.errors.ImageNotFound:
            return None
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise self._guard(f"looking up image {tag}", exc) from None

    def image_labels(self, tag: str) -> dict[str, str]:
        try:
            labels = self.client.images.get(tag).labels or {}
        except docker.errors.ImageNotFound:
            return {}
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise self._guard(f"looking up image {tag}", exc) from None
        return {str(k): str(v) for k, v in labels.items()}

    def build(self, context: Path, tag: str, *, log_path: Path, network: str | None,
              labels: Mapping[str, str], buildargs: Mapping[str, str] | None = None,
              buildkit: bool = False) -> str:
        """Build ``context/Dockerfile`` as ``tag``; stream the log to ``log_path``.
        ``buildkit``: with the engine's BuildKit (``RUN --mount=type=cache``), its
        progress read back as plain text (``buildkitlog``); else the classic builder."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        image_id: str | None = None
        last: list[str] = []
        error: str | None = None
        progress = Progress()
        try:
            stream = self._buildkit(context, tag, network, labels, buildargs) if buildkit \
                else self.client.api.build(
                    path=str(context), tag=tag, rm=True, forcerm=True, decode=True,
                    network_mode=network, labels=dict(labels), pull=False,
                    buildargs=dict(buildargs or {}))
            t0 = time.monotonic()
            next_note = t0 + PROGRESS_EVERY
            step = ""
            with log_path.open("w", encoding="utf-8") as log:
                for chunk in stream:
                    text = ""
                    if "stream" in chunk:
                        text = str(chunk["stream"])
                        if text.startswith("Step "):
                            step = text.strip()
                    elif chunk.get("id") == TRACE_ID and isinstance(chunk.get("aux"), str):
                        text = progress.read(chunk["aux"])
                        step = progress.current
                    if text:
                        log.write(text)
                        log.flush()
                        last.extend(text.splitlines())
                        del last[:-40]
                    now = time.monotonic()
                    if now >= next_note:
                        next_note = now + PROGRESS_EVERY
                        _log.info(f"    … {tag}: {step[:90] or 'starting'} "
                                  f"({int(now - t0) // 60}m{int(now - t0) % 60:02d}s)")
                    if "aux" in chunk and isinstance(chunk["aux"], dict) and "ID" in chunk["aux"]:
                        image_id = str(chunk["aux"]["ID"])
                    if "error" in chunk:
                        error = str(chunk["error"]).strip()
                        log.write(f"\nERROR: {error}\n")
        except docker.errors.APIError as exc:
            error = _short(exc)
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise self._guard(f"building {tag}", exc) from None
        if error is not None or image_id is None:
            tail = "\n".join("    " + line for line in last[-15:])
            raise BuildError(
                f"docker build of {tag} failed: {error or 'no image produced'}\n{tail}",
                hint=f"full log: {log_path}",
            )
        return image_id

    def _buildkit(self, context: Path, tag: str, network: str | None,
                  labels: Mapping[str, str], buildargs: Mapping[str, str] | None,
                  ) -> Iterator[dict[str, Any]]:
        """``POST /build?version=2``: the SDK's ``build`` has no parameter for BuildKit,
        so the request is made with its client's own session, the context sent as a tar
        (ustar: dockerd's BuildKit recognises an archive by its first kilobyte)."""
        api = self.client.api
        params: dict[str, Any] = {
            "t": tag, "rm": True, "forcerm": True, "pull": False, "version": "2",
            "labels": json.dumps(dict(labels)), "buildargs": json.dumps(dict(buildargs or {}))}
        if network:
            params["networkmode"] = network
        response = api._post(api._url("/build"), data=_context_tar(context), params=params,
                             headers={"Content-Type": "application/x-tar"}, stream=True,
                             timeout=None)
        api._raise_for_status(response)
        return iter(api._stream_helper(response, decode=True))

    def run_on_host(self, argv: Sequence[str], *, timeout: float) -> str | None:
        if not endpoint_is_local({"endpoint": self.base_url}):
            return None  # the engine's cores are another machine's
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                              check=False).stdout

    def run(self, image: str, command: Sequence[str], *, env: Mapping[str, str] | None = None,
            limits: RunLimits | None = None) -> RunResult:
        """Run ``command`` (exec form, no shell) in a fresh hardened container.

        A run that outlives ``limits.timeout`` is killed and comes back with exit code
        124 and a note on stderr. The container is removed afterwards (set
        $OPENSSL_MATRIX_KEEP_CONTAINERS to keep it for debugging).
        """
        lim = limits or RunLimits()
        env = dict(env or {})
        container = None
        started = _now()
        t0 = time.monotonic()
        what = " ".join(command)
        try:
            container = self.client.containers.create(
                image, list(command), environment=env, network_mode=lim.network,
                cap_drop=["ALL"], security_opt=["no-new-privileges"], read_only=lim.read_only,
                mem_limit=lim.memory, memswap_limit=lim.memory, pids_limit=lim.pids,
                cpuset_cpus=lim.cpuset, nano_cpus=int(lim.cpus * 1e9) if lim.cpus else None,
                cpu_shares=lim.cpu_shares,
                user=lim.user, tmpfs={"/tmp": "rw,nosuid,nodev,size=64m"},
                devices=list(lim.devices) or None, privileged=False, detach=True,
                labels=dict(lim.labels), cap_add=list(lim.cap_add) or None,
            )
            container.start()
            timed_out = False
            try:
                status = container.wait(timeout=lim.timeout)
            except requests.exceptions.RequestException as exc:
                if not _read_timeout(exc):
                    raise
                # Either the command hangs or the engine does: kill the container; if the
                # engine answers that, it was the command.
                container.kill()
                status = container.wait(timeout=60)
                timed_out = True
            seconds = time.monotonic() - t0
            ended = _now()
            stdout = container.logs(stdout=True, stderr=False).decode("utf-8", "replace")
            stderr = container.logs(stdout=False, stderr=True).decode("utf-8", "replace")
            code = int(status.get("StatusCode", -1))
            if timed_out:
                code = TIMEOUT_EXIT
                stderr += f"\nopenssl-matrix: killed after the time limit of {lim.timeout:g}s\n"
        except docker.errors.ImageNotFound:
            raise BuildError(f"image {image} is not built",
                             hint="run `invoke matrix build` first") from None
        except docker.errors.APIError as exc:
            if _engine_gone(exc) or (int(exc.status_code or 0) >= 500 and not self._answers()):
                raise self._guard(f"running {what}", exc) from None
            raise BenchError(f"the Docker engine refused to run `{what}` in {image}: "
                             f"{_short(exc)}") from None
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise self._guard(f"running {what}", exc) from None
        finally:
            if container is not None and not environment_settings().keep_containers:
                with contextlib.suppress(docker.errors.DockerException,
                                         requests.exceptions.RequestException):
                    container.remove(force=True)
        return RunResult(command=tuple(command), env=env, stdout=stdout, stderr=stderr,
                         exit_code=code, started=started, ended=ended, seconds=seconds)

    def remove_containers(self, labels: Mapping[str, str]) -> list[str]:
        """Remove (killing if needed) every container carrying all of ``labels``.

        Used to clear containers a killed bench left running, before a resumed bench
        measures: an orphan ``openssl speed`` would compete for the CPU.
        """
        filters = {"label": [f"{k}={v}" for k, v in labels.items()]}
        removed: list[str] = []
        try:
            for container in self.client.containers.list(all=True, filters=filters):
                with contextlib.suppress(docker.errors.NotFound):
                    container.remove(force=True)
                    removed.append(str(container.short_id))
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise self._guard("removing containers left by an interrupted run", exc) from None
        return removed

    # -- moving images between engines (ship.py) ------------------------------------

    def image_facts(self, tag: str) -> ImageFacts | None:
        try:
            image = self.client.images.get(tag)
        except docker.errors.ImageNotFound:
            return None
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise self._guard(f"looking up image {tag}", exc) from None
        attrs = image.attrs or {}
        return ImageFacts(id=str(image.id), size=int(attrs.get("Size") or 0),
                          os=str(attrs.get("Os") or ""),
                          arch=str(attrs.get("Architecture") or ""),
                          labels={str(k): str(v) for k, v in (image.labels or {}).items()},
                          tags=tuple(str(t) for t in image.tags))

    def save_image(self, tag: str) -> Iterator[bytes]:
        """``docker save TAG``, streamed: a tar with the image's layers, config and tag."""
        try:
            yield from self.client.api.get_image(tag, chunk_size=1 << 20)
        except docker.errors.ImageNotFound:
            raise BuildError(f"image {tag} is not on the engine it was to be shipped from",
                             hint="rerun: the tool builds or ships from another engine") \
                from None
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise self._guard(f"saving image {tag}", exc) from None

    @contextlib.contextmanager
    def _moving(self, what: str) -> Iterator[None]:
        """An image transfer's SDK errors: a refusal is a BuildError, a lost engine the
        guard's DockerUnavailable."""
        try:
            yield
        except docker.errors.APIError as exc:
            raise BuildError(f"{what} failed: {_short(exc)}") from None
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise self._guard(what, exc) from None

    def load_image(self, chunks: Iterable[bytes]) -> None:
        """``docker load`` from a stream of tar chunks (sent as they come)."""
        with self._moving("docker load"):
            _stream_ok(self.client.api.load_image(iter(chunks)), "docker load")

    def push_image(self, tag: str, ref: str) -> None:
        """Tag ``tag`` as ``ref`` (a registry reference) and push it; the extra tag is
        removed afterwards."""
        repo, _, version = ref.rpartition(":")
        with self._moving(f"docker push {ref}"):
            self.client.api.tag(tag, repo, version)
            try:
                _stream_ok(self.client.api.push(repo, version, stream=True, decode=True),
                           f"docker push {ref}")
            finally:
                with contextlib.suppress(docker.errors.DockerException):
                    self.client.api.remove_image(ref, noprune=True)

    def pull_image(self, ref: str, tag: str) -> None:
        """Pull ``ref`` from its registry and tag it ``tag`` (the registry tag removed)."""
        repo, _, version = ref.rpartition(":")
        name, _, label = tag.rpartition(":")
        with self._moving(f"docker pull {ref}"):
            _stream_ok(self.client.api.pull(repo, version, stream=True, decode=True),
                       f"docker pull {ref}")
            self.client.api.tag(ref, name, label)
            with contextlib.suppress(docker.errors.DockerException):
                self.client.api.remove_image(ref, noprune=True)

    def remove_image(self, tag: str) -> None:
        """Remove one tag this tool put on the engine (an image that arrived and then
        failed its check); layers other images use stay."""
        try:
            self.client.api.remove_image(tag, noprune=False)
        except docker.errors.ImageNotFound:
            return
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise self._guard(f"removing image {tag}", exc) from None


def _context_tar(context: Path) -> bytes:
    """The build context as an uncompressed ustar archive: whole-second times, no owner
    names, in name order (symbolic links kept as links)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path in sorted(context.rglob("*")):
            info = tar.gettarinfo(str(path), arcname=path.relative_to(context).as_posix())
            info.mtime = int(info.mtime)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if info.isfile():
                with path.open("rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    return buf.getvalue()


def _stream_ok(statuses: Iterable[Any], what: str) -> None:
    """Read an engine's progress stream to its end; an error in it is a BuildError."""
    for status in statuses:
        if isinstance(status, dict) and status.get("error"):
            raise BuildError(f"{what} failed: {str(status['error'])[:300]}",
                             hint="a registry must be reachable from the engine (a plain "
                             "http one listed in its insecure-registries)"
                             if "push" in what or "pull" in what else None)


#: How long the first request to an engine may take before it is given up, and when a
#: line says whom the tool is waiting for.
ANSWER_TIMEOUT_S = 30.0
PROGRESS_AFTER_S = 4.0


def _probe_unix_socket(url: str) -> None:
    """Connect to a unix:// endpoint once (and close it): the SDK leaks the socket of a
    failed connect, and this gives a plainer reason (no such file, refused)."""
    if not url.startswith("unix://"):
        return
    path = url[len("unix://"):]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(path)


def _timed_out(exc: BaseException | None) -> bool:
    """A read timeout anywhere in ``exc``'s chain (the SDK wraps the one of its version
    request in a DockerException)."""
    for _ in range(6):
        if exc is None:
            return False
        if isinstance(exc, requests.exceptions.RequestException) and _read_timeout(exc):
            return True
        if isinstance(exc, (urllib3.exceptions.ReadTimeoutError, TimeoutError)):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _read_timeout(exc: requests.exceptions.RequestException) -> bool:
    """requests reports a read timeout on a unix socket as a ConnectionError."""
    if isinstance(exc, requests.exceptions.ReadTimeout):
        return True
    reason = exc.args[0] if exc.args else None
    return isinstance(reason, urllib3.exceptions.ReadTimeoutError)


def _engine_gone(exc: docker.errors.APIError) -> bool:
    """An API error that means the engine is going away rather than refusing the request."""
    text = str(exc).lower()
    return "shutting down" in text or "connection refused" in text


def _short(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
