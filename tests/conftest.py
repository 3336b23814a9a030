from __future__ import annotations

import hashlib
import io
import os
import tarfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from hypothesis import settings

# CI explores a fixed set of examples (a red CI must be reproducible); local runs
# explore new ones each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parent.parent

if TYPE_CHECKING:
    from openssl_matrix.engine.backend import DockerBackend
    from openssl_matrix.matrix.model import Matrix
    from openssl_matrix.results.tree import ResultsTree


def built_matrix(tmp: Path, suites: Any, default_suite: str,
                 variants: str) -> tuple[Path, Matrix, ResultsTree, DockerBackend]:
    """The repository's matrix.yaml with a test file's suites, written under ``tmp``,
    and ``variants`` built into a results tree there through the real Docker engine
    (docker-marked tests only; images already on the engine are reused)."""
    from openssl_matrix.engine.backend import DockerBackend
    from openssl_matrix.images.build import Builder
    from openssl_matrix.images.sources import default_urls
    from openssl_matrix.matrix.load import load_matrix
    from openssl_matrix.results.tree import ResultsTree

    data = yaml.safe_load((ROOT / "matrix.yaml").read_text())
    data["suites"] = suites
    data["default_suite"] = default_suite
    path = tmp / "matrix.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    m = load_matrix(path, default_urls=default_urls)
    tree = ResultsTree(tmp / "results")
    backend = DockerBackend()
    outcomes = Builder(m, backend, tree, workdir=tmp / "work").build(m.select(variants))
    assert [o.status for o in outcomes if o.status == "failed"] == []
    return path, m, tree, backend


def make_tarball(path: Path, version: str) -> str:
    """A tiny stand-in source tarball (for fake-backend tests); returns its sha256."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"fake Configure\n"
        info = tarfile.TarInfo(f"openssl-{version}/Configure")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


def local_versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *versions: str,
                   indent: str = "  ") -> str:
    """A private cache and a stand-in tarball per version; the YAML entries (sha256, file
    URL) that declare them, one per line, indented for a ``versions:`` mapping."""
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    lines = []
    for v in versions:
        sha = make_tarball(src / f"openssl-{v}.tar.gz", v)
        lines.append(f"{indent}{v}: {{sha256: {sha}, urls: [file://{src}/openssl-{v}.tar.gz]}}")
    return "\n".join(lines)


@pytest.fixture
def fake_matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A matrix of two versions whose sources are local files, and a private cache."""
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    return write_fake_matrix(tmp_path)


def write_fake_matrix(tmp_path: Path) -> Path:
    """``fake_matrix``'s file (its caller points ``$OPENSSL_MATRIX_CACHE`` somewhere
    private: ``benchmarks/report_scale.py`` uses it outside pytest)."""
    src = tmp_path / "src"
    src.mkdir()
    sha_a = make_tarball(src / "openssl-1.1.1w.tar.gz", "1.1.1w")
    sha_b = make_tarball(src / "openssl-3.0.20.tar.gz", "3.0.20")
    text = f"""
schema: 1
versions:
  1.1.1w:
    sha256: {sha_a}
    urls: [file://{src}/openssl-1.1.1w.tar.gz]
  3.0.20:
    sha256: {sha_b}
    urls: [file://{src}/openssl-3.0.20.tar.gz]
axes:
  asm: [asm, no-asm]
suites:
  quick:
    algorithms: [aes-128-cbc]
    evp: true
    seconds: 1
    bytes: 8192
    masks:
      - name: native
      - name: no-aesni
        ia32cap: "~0x200000200000000:~0x0"
profiles:
  ryzen:
    description: AMD Ryzen 5 3600
    vendor: AuthenticAMD
    model: "*Ryzen 5 3600*"
    flags: [aes]
"""
    path = tmp_path / "matrix.yaml"
    path.write_text(text)
    return path


def _ensure_docker0() -> None:
    """Recreate the main engine's docker0 bridge if something on the host removed it.

    Seen on this kind of machine: after tests start and stop extra dockerd instances,
    the host's docker0 can vanish, and every later container on the default network
    (the toolchain image's apt step) fails with "could not find bridge docker0".
    """
    import json
    import os
    import shutil
    import subprocess
    import sys

    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("docker") is None:
        return
    if subprocess.run(["ip", "link", "show", "docker0"], capture_output=True).returncode == 0:
        return
    out = subprocess.run(["docker", "network", "inspect", "bridge"], capture_output=True,
                         text=True)
    if out.returncode != 0:
        return
    net = json.loads(out.stdout)[0]
    if net.get("Options", {}).get("com.docker.network.bridge.name") != "docker0":
        return
    config = (net.get("IPAM", {}).get("Config") or [{}])[0]
    subnet = config.get("Subnet")
    if not subnet:
        return
    import ipaddress

    network = ipaddress.ip_network(subnet)
    gateway = config.get("Gateway") or str(next(network.hosts()))
    prefix = network.prefixlen
    print(f"\nconftest: docker0 was missing; recreating it as {gateway}/{prefix}",
          file=sys.stderr)
    subprocess.run(["ip", "link", "add", "docker0", "type", "bridge"], check=False)
    subprocess.run(["ip", "addr", "add", f"{gateway}/{prefix}", "dev", "docker0"], check=False)
    subprocess.run(["ip", "link", "set", "docker0", "up"], check=False)


_ENGINE_PROBLEM: list[str | None] = []


def engine_problem() -> str | None:
    """Why the environment's Docker engine does not answer (None: it does); asked once."""
    if not _ENGINE_PROBLEM:
        from openssl_matrix.core.errors import FatalError
        from openssl_matrix.engine.backend import DockerBackend

        try:
            DockerBackend().engine_info()
            _ENGINE_PROBLEM.append(None)
        except FatalError as exc:
            _ENGINE_PROBLEM.append(exc.message.splitlines()[0][:300])
    return _ENGINE_PROBLEM[0]


def in_ci() -> bool:
    """CI=1 (CI=true): a test that would skip for want of a tool fails instead."""
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A docker-marked test needs an engine: without one it is skipped, all for one reason,
    and under CI=1 it fails instead (CI has an engine: .ci/setup starts dockerd)."""
    if item.get_closest_marker("docker") is None:
        return
    problem = engine_problem()
    if problem is None:
        return
    reason = ("no Docker engine answers, so the docker-marked tests cannot run "
              "(`bash .ci/setup` starts one)")
    if in_ci():
        pytest.fail(f"{reason}; under CI=1 that is a failure: {problem}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def _docker0_for_docker_tests(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("docker") is not None:
        _ensure_docker0()
