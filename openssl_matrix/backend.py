"""The container backend: the only module that imports ``docker``.

Everything else talks to ``DockerBackend``: build an image from a context folder,
ask whether an image exists, run a hardened container and get back its stdout,
stderr, exit code and timings, describe the engine. Unit tests substitute a fake
with the same methods (see ``tests/fakes.py``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

import docker
import docker.errors
import requests.exceptions

from . import log as _log
from .errors import BuildError, DockerUnavailable

KEEP_ENV = "OPENSSL_MATRIX_KEEP_CONTAINERS"
PROGRESS_EVERY = 30.0  # seconds between "still building" notes


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
    """Isolation for a bench container: no network, no capabilities, read-only root."""

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


class Backend(Protocol):
    """The seam: what build and bench need from a container engine."""

    def engine_info(self) -> dict[str, Any]: ...

    def image_id(self, tag: str) -> str | None: ...

    def image_labels(self, tag: str) -> dict[str, str]: ...

    def build(self, context: Path, tag: str, *, log_path: Path, network: str | None,
              labels: Mapping[str, str], buildargs: Mapping[str, str] | None = None) -> str: ...

    def run(self, image: str, command: Sequence[str], *, env: Mapping[str, str] | None = None,
            limits: RunLimits | None = None) -> RunResult: ...


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class DockerBackend:
    """A Docker engine reached through the SDK (local socket, tcp:// or ssh://)."""

    def __init__(self, base_url: str | None = None) -> None:
        self.spec = base_url
        base_url = resolve_docker_host(base_url) if base_url else None
        self.base_url = base_url
        try:
            if base_url:
                self.client = docker.DockerClient(
                    base_url=base_url, timeout=120,
                    use_ssh_client=base_url.startswith("ssh://"))
            else:
                self.client = docker.from_env(timeout=120)
            self.client.ping()
        except (docker.errors.DockerException, requests.exceptions.RequestException,
                OSError) as exc:
            where = base_url or os.environ.get("DOCKER_HOST") or "the local socket"
            if self.spec and self.spec != base_url:
                where += f" ({self.spec})"
            raise DockerUnavailable(
                f"cannot reach the Docker engine at {where}: {_short(exc)}",
                hint=(f"check `docker -H {base_url} info` (for ssh:// the ssh client must "
                      "log in without a password prompt)" if base_url else
                      "start it (e.g. `dockerd &`, or `bash .ci/setup` on a fresh machine) "
                      "and check `docker info`"),
            ) from None

    def _guard(self, what: str, exc: BaseException) -> DockerUnavailable:
        return DockerUnavailable(
            f"the Docker engine stopped answering while {what}: {_short(exc)}",
            hint="restart it and rerun the same command: finished work is kept and skipped",
        )

    def engine_info(self) -> dict[str, Any]:
        try:
            info = self.client.info()
            version = self.client.version()
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise self._guard("describing the engine", exc) from None
        return {
            "endpoint": self.base_url or os.environ.get("DOCKER_HOST") or "local",
            "endpoint_spec": self.spec,
            "id": info.get("ID"),
            "name": info.get("Name"),
            "root_dir": info.get("DockerRootDir"),
            "server_version": version.get("Version"),
            "api_version": version.get("ApiVersion"),
            "os": info.get("OperatingSystem"),
            "kernel": info.get("KernelVersion"),
            "arch": info.get("Architecture"),
            "ncpu": info.get("NCPU"),
            "mem_total": info.get("MemTotal"),
            "storage_driver": info.get("Driver"),
        }

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
        return {str(k): str(v) for k, v in labels.items()}

    def build(self, context: Path, tag: str, *, log_path: Path, network: str | None,
              labels: Mapping[str, str], buildargs: Mapping[str, str] | None = None) -> str:
        """Build ``context/Dockerfile`` as ``tag``; stream the log to ``log_path``."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        image_id: str | None = None
        last: list[str] = []
        error: str | None = None
        try:
            stream = self.client.api.build(
                path=str(context), tag=tag, rm=True, forcerm=True, decode=True,
                network_mode=network, labels=dict(labels), pull=False,
                buildargs=dict(buildargs or {}),
            )
            t0 = time.monotonic()
            next_note = t0 + PROGRESS_EVERY
            step = ""
            with log_path.open("w", encoding="utf-8") as log:
                for chunk in stream:
                    if "stream" in chunk:
                        text = str(chunk["stream"])
                        log.write(text)
                        log.flush()
                        last.extend(text.splitlines())
                        del last[:-40]
                        if text.startswith("Step "):
                            step = text.strip()
                    now = time.monotonic()
                    if now >= next_note:
                        next_note = now + PROGRESS_EVERY
                        _log.info(f"    … {tag}: {step[:90] or 'starting'} "
                                  f"({int(now - t0) // 60}m{int(now - t0) % 60:02d}s)")
                    if "aux" in chunk and "ID" in chunk["aux"]:
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

    def run(self, image: str, command: Sequence[str], *, env: Mapping[str, str] | None = None,
            limits: RunLimits | None = None) -> RunResult:
        """Run ``command`` (exec form, no shell) in a fresh hardened container."""
        lim = limits or RunLimits()
        env = dict(env or {})
        container = None
        started = _now()
        t0 = time.monotonic()
        try:
            container = self.client.containers.create(
                image, list(command), environment=env, network_mode=lim.network,
                cap_drop=["ALL"], security_opt=["no-new-privileges"], read_only=lim.read_only,
                mem_limit=lim.memory, pids_limit=lim.pids, cpuset_cpus=lim.cpuset,
                nano_cpus=int(lim.cpus * 1e9) if lim.cpus else None,
                cpu_shares=lim.cpu_shares,
                tmpfs={"/tmp": "rw,size=64m"}, devices=list(lim.devices) or None,
                privileged=False, detach=True,
            )
            container.start()
            status = container.wait(timeout=lim.timeout)
            seconds = time.monotonic() - t0
            ended = _now()
            stdout = container.logs(stdout=True, stderr=False).decode("utf-8", "replace")
            stderr = container.logs(stdout=False, stderr=True).decode("utf-8", "replace")
            code = int(status.get("StatusCode", -1))
        except requests.exceptions.ReadTimeout:
            raise self._guard(f"waiting for {' '.join(command)} (timeout {lim.timeout}s)",
                              TimeoutError("container did not finish")) from None
        except docker.errors.ImageNotFound:
            raise BuildError(f"image {image} is not built",
                             hint="run `invoke matrix build` first") from None
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise self._guard(f"running {' '.join(command)}", exc) from None
        finally:
            if container is not None and not os.environ.get(KEEP_ENV):
                with contextlib.suppress(docker.errors.DockerException,
                                         requests.exceptions.RequestException):
                    container.remove(force=True)
        return RunResult(command=tuple(command), env=env, stdout=stdout, stderr=stderr,
                         exit_code=code, started=started, ended=ended, seconds=seconds)


def resolve_docker_host(spec: str) -> str:
    """A profile's ``docker_host`` as a base URL: ``context:NAME`` is looked up."""
    if not spec.startswith("context:"):
        return spec
    name = spec.split(":", 1)[1]
    from docker.context import ContextAPI

    try:
        ctx = ContextAPI.get_context(name)
    except docker.errors.DockerException as exc:
        raise DockerUnavailable(f"docker context {name!r} cannot be read: {_short(exc)}",
                                hint="`docker context ls` lists the contexts") from None
    host = getattr(ctx, "Host", None) if ctx is not None else None
    if not host:
        raise DockerUnavailable(f"there is no docker context named {name!r}",
                                hint="`docker context ls` lists the contexts; "
                                "`docker context create NAME --docker host=...` adds one")
    return str(host)


def _short(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
