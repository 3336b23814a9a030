"""A user's bad day, with the real engine and real OpenSSL: a bench killed with SIGKILL
and resumed, the Docker engine stopped mid-run and restarted, a bench container looked
at with `docker inspect`, a hung command killed at its time limit, a build whose client
dies.

The variants are the default matrix's 1.1.1w asm and no-asm builds (built here if the
engine does not have them yet). The engine that is stopped is a second dockerd this
module starts on its own socket, never the one other work uses.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from openssl_matrix.core.errors import DockerUnavailable
from openssl_matrix.engine.backend import KEEP_ENV, NOBODY, TIMEOUT_EXIT, DockerBackend, RunLimits
from openssl_matrix.measure.cell import TREE_LABEL

from ..engines_fixture import ExtraEngine, extra_engine, wait_for

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = "1.1.1w-*"
# A short suite: three EVP algorithms at 8192-byte blocks for 1 s each, AES-NI on and off.
SUITE = """  resume:
    description: short suite for the resume tests
    algorithms: [aes-128-cbc, sha256, md5]
    evp: true
    seconds: 1
    bytes: 8192
    masks:
      - name: native
      - name: no-aesni
        ia32cap: "~0x200000200000000"
"""


def invoke(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT,
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "invoke", "matrix", *args], cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                          capture_output=True, text=True, timeout=1800)


def popen(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "invoke", "matrix", *args], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def engine() -> Iterator[docker.DockerClient]:
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as exc:
        pytest.fail(f"no Docker engine reachable ({exc}): `bash .ci/setup` starts one, or "
                    "deselect these tests with -m 'not docker'")
    yield client
    client.close()


@pytest.fixture(scope="module")
def built(engine: docker.DockerClient, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results tree holding build records of the 1.1.1w variants (built if needed)."""
    tree = tmp_path_factory.mktemp("built") / "results"
    res = invoke("build", "--only", VARIANTS, "--results", str(tree))
    assert res.returncode == 0, res.stdout + res.stderr
    return tree


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    """The default matrix plus the short suite (same variants, so the same images)."""
    text = (ROOT / "matrix.yaml").read_text().replace("\nsuites:\n", "\nsuites:\n" + SUITE, 1)
    path = tmp_path / "matrix.yaml"
    path.write_text(text)
    return path


def fresh_tree(built: Path, tmp_path: Path) -> Path:
    tree = tmp_path / "results"
    shutil.copytree(built / "_builds", tree / "_builds")
    return tree


def runs(tree: Path) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for meta in sorted(tree.glob("host-*/*/*/[0-9][0-9][0-9][0-9]/meta.json")):
        data = json.loads(meta.read_text())
        data["_dir"] = meta.parent
        out.setdefault(f"{meta.parent.parent.name}/{meta.parent.parent.parent.name}",
                       []).append(data)
    return out


def exported(tree: Path) -> list[dict[str, str]]:
    res = invoke("export", "--results", str(tree))
    assert res.returncode == 0, res.stderr
    return list(csv.DictReader(io.StringIO(res.stdout)))


def labelled(engine: docker.DockerClient, tree: Path) -> list[Any]:
    return list(engine.containers.list(all=True, filters={
        "label": [f"{TREE_LABEL}={tree.resolve()}"]}))


def test_bench_sigkilled_mid_run_resumes_and_completes_the_tree(
        engine: docker.DockerClient, built: Path, matrix: Path, tmp_path: Path) -> None:
    tree = fresh_tree(built, tmp_path)
    args = ("bench", "--cpu=auto", "--only", VARIANTS, "--suite", "resume", "--matrix",
            str(matrix), "--results", str(tree))
    proc = popen(*args)
    second = "1.1.1w-no-asm-x86_64/resume/0001/raw/native--aes-128-cbc.stdout"
    wait_for(lambda: list(tree.glob(f"host-*/{second}")) or proc.poll() is not None, 300,
             "the second cell's first speed run")
    proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate()
    assert proc.returncode == -signal.SIGKILL, out + err
    first_cell = runs(tree)["resume/1.1.1w-asm-x86_64"]
    assert [r["status"] for r in first_cell] == ["complete"]
    figures_before = (first_cell[0]["_dir"] / "figures.json").read_bytes()
    assert [r["status"] for r in runs(tree)["resume/1.1.1w-no-asm-x86_64"]] == ["running"]

    res = invoke(*args)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "marked 'interrupted'" in res.stderr
    assert "resuming the interrupted bench session" in res.stderr
    assert "1.1.1w-asm-x86_64: finished earlier in this session" in res.stderr
    assert "▸ [1/2] 1.1.1w-asm-x86_64" not in res.stderr, "the finished cell was redone"

    # a busy host (CI's has steal) makes figures `contended`: the bench measures those
    # again after the cells, in runs of their own, each `complete`
    after = runs(tree)
    assert {r["status"] for r in after["resume/1.1.1w-asm-x86_64"]} == {"complete"}
    assert (first_cell[0]["_dir"] / "figures.json").read_bytes() == figures_before
    second_cell = after["resume/1.1.1w-no-asm-x86_64"]
    assert [r["status"] for r in second_cell[:2]] == ["interrupted", "complete"]
    assert {r["status"] for r in second_cell[2:]} <= {"complete"}
    assert (second_cell[0]["_dir"] / "raw/native--aes-128-cbc.stdout").read_text() \
        .startswith("+H:8192"), "the interrupted run's raw output is kept"
    assert {r["session"] for r in second_cell + after["resume/1.1.1w-asm-x86_64"]} == \
        {first_cell[0]["session"]}
    assert not labelled(engine, tree), "no container of the killed bench is left"
    assert not list((tree / "_journal").glob("bench-*.json")), "the session is closed"

    rows = exported(tree)
    keys = [(r["variant"], r["mask"], r["algorithm"], r["run"]) for r in rows]
    assert len(keys) == len(set(keys)), "no figure counted twice"
    assert len({k[:3] for k in keys}) == 2 * 2 * 3, "2 cells × 2 masks × 3 algorithms"
    no_asm = {r["run"] for r in rows if r["variant"] == "1.1.1w-no-asm-x86_64"}
    assert "0001" not in no_asm and "0002" in no_asm, "the interrupted run is not counted"
    speed: dict[tuple[str, str, str], float] = {}
    for r in rows:  # each cell's best run: a follow-up or contended one may sit low
        key = (r["variant"], r["mask"], r["algorithm"])
        speed[key] = max(speed.get(key, 0.0), float(r["bytes_per_s"]))
    assert all(v > 1e6 for v in speed.values()), speed
    # real figures: AES-NI makes the asm build's EVP AES-128-CBC faster (about 3.4x on a
    # quiet machine here; the margin allows for builds running beside the test)
    asm = "1.1.1w-asm-x86_64"
    assert speed[(asm, "native", "aes-128-cbc")] > 1.3 * speed[(asm, "no-aesni", "aes-128-cbc")]


@pytest.fixture(scope="module")
def second_engine(engine: docker.DockerClient, built: Path) -> Iterator[ExtraEngine]:
    """A second dockerd on its own socket, holding the 1.1.1w asm image."""
    tag = json.loads((built / "_builds/1.1.1w-asm-x86_64/latest.json").read_text())["tag"]
    with extra_engine("i7", images=(tag,)) as second:
        yield second


def test_engine_stopped_mid_run_keeps_results_and_resumes(
        second_engine: ExtraEngine, built: Path, matrix: Path, tmp_path: Path) -> None:
    tree = fresh_tree(built, tmp_path)
    url = second_engine.url
    env = {"DOCKER_HOST": url}
    args = ("bench", "--cpu=auto", "--only", "1.1.1w-asm-x86_64", "--suite", "aes8k,resume",
            "--matrix", str(matrix), "--results", str(tree))
    proc = popen(*args, env=env)
    wait_for(lambda: list(tree.glob("host-*/1.1.1w-asm-x86_64/resume/0001/raw/*.stdout"))
             or proc.poll() is not None, 300, "the second suite's first speed run")
    second_engine.stop()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == DockerUnavailable.exit_code, out + err
    assert "the Docker engine stopped answering" in err or \
        f"cannot reach the Docker engine at {url}" in err, err
    assert "rerun the same command" in err and "Traceback" not in err
    before = runs(tree)
    # more than one complete run when the busy host made figures `contended` (re-measured)
    finished = [r["status"] for r in before["aes8k/1.1.1w-asm-x86_64"]]
    assert finished and set(finished) == {"complete"}
    assert [r["status"] for r in before["resume/1.1.1w-asm-x86_64"]] == ["interrupted"]

    # while the engine is down, the same command says so and changes nothing
    res = invoke(*args, env=env)
    assert res.returncode == DockerUnavailable.exit_code
    assert f"cannot reach the Docker engine at {url}" in res.stderr
    assert "Traceback" not in res.stderr

    second_engine.start()
    res = invoke(*args, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    after = runs(tree)
    assert [r["status"] for r in after["aes8k/1.1.1w-asm-x86_64"]] == finished, \
        "the suite finished before the engine stopped is not measured again"
    resumed = [r["status"] for r in after["resume/1.1.1w-asm-x86_64"]]
    assert resumed[0] == "interrupted" and resumed[1:] and set(resumed[1:]) == {"complete"}
    meta = after["resume/1.1.1w-asm-x86_64"][1]
    assert meta["docker"]["endpoint"] == url
    assert not list((tree / "_journal").glob("bench-*.json")), "both sessions closed"


def test_bench_container_isolation_seen_by_docker_inspect(engine: docker.DockerClient,
                                                          built: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          ) -> None:
    tag = json.loads((built / "_builds/1.1.1w-asm-x86_64/latest.json").read_text())["tag"]
    monkeypatch.setenv(KEEP_ENV, "1")
    label = ("openssl-matrix.test", f"isolation-{os.getpid()}")
    backend = DockerBackend()
    script = ("id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; "
              "cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory.max "
              "/sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/pids.max 2>/dev/null; "
              "tail -n +3 /proc/net/dev | cut -d: -f1; touch /x 2>&1; ls /dev; "
              "openssl speed -elapsed -mr -seconds 1 -bytes 8192 -evp aes-128-cbc")
    try:
        res = backend.run(tag, ["/bin/sh", "-c", script], limits=RunLimits(labels=(label,)))
        with_dev = backend.run(tag, ["ls", "-l", "/dev/zero-test"], limits=RunLimits(
            labels=(label,), devices=("/dev/zero:/dev/zero-test",)))
        kept = {c.attrs["Config"]["Cmd"][0]: c for c in engine.containers.list(
            all=True, filters={"label": [f"{label[0]}={label[1]}"]})}
        host = kept["/bin/sh"].attrs["HostConfig"]
        assert host["NetworkMode"] == "none"
        assert host["CapDrop"] == ["ALL"] and not host["CapAdd"]
        assert host["SecurityOpt"] == ["no-new-privileges"]
        assert host["ReadonlyRootfs"] is True and host["Privileged"] is False
        assert host["Memory"] == 1 << 30 and host["PidsLimit"] == 256
        assert not host["Devices"]
        assert kept["/bin/sh"].attrs["Config"]["User"] == NOBODY
        assert [d["PathOnHost"] for d in kept["ls"].attrs["HostConfig"]["Devices"]] == \
            ["/dev/zero"]
    finally:
        for c in engine.containers.list(all=True, filters={
                "label": [f"{label[0]}={label[1]}"]}):
            c.remove(force=True)
    lines = res.stdout.splitlines()
    assert res.exit_code == 0, res.stderr
    assert lines[0] == "65534"
    assert "CapEff:\t0000000000000000" in lines and "NoNewPrivs:\t1" in lines
    assert "1073741824" in lines and "256" in lines
    assert [ln.strip() for ln in lines if ln.strip() in ("lo", "eth0")] == ["lo"]
    assert any("Read-only file system" in ln for ln in lines)
    assert "crypto" not in lines, "no device unless a suite asks for it"
    assert res.stdout.rstrip().splitlines()[-1].startswith("+F:")
    assert with_dev.exit_code == 0 and with_dev.stdout.startswith("c"), with_dev.stderr


def test_a_hung_command_is_killed_at_its_time_limit(engine: docker.DockerClient) -> None:
    backend = DockerBackend()
    label = ("openssl-matrix.test", f"timeout-{os.getpid()}")
    t0 = time.monotonic()
    res = backend.run("debian:bookworm", ["sleep", "300"],
                      limits=RunLimits(timeout=2, labels=(label,)))
    assert res.exit_code == TIMEOUT_EXIT
    assert "killed after the time limit of 2s" in res.stderr
    assert time.monotonic() - t0 < 30
    assert not engine.containers.list(all=True, filters={"label": [f"{label[0]}={label[1]}"]})


def test_a_build_whose_client_dies_is_cancelled_by_the_engine(
        engine: docker.DockerClient, tmp_path: Path) -> None:
    """What build resume relies on: a killed client leaves no half-built image behind."""
    context = tmp_path / "ctx"
    context.mkdir()
    marker = f"openssl-matrix-cancel-{os.getpid()}"
    (context / "Dockerfile").write_text(
        f"FROM debian:bookworm\nRUN echo {marker} && sleep 60 && touch /done\n")
    tag = f"openssl-matrix-test/cancel:{os.getpid()}"
    log = tmp_path / "build.log"
    pid = os.fork()
    if pid == 0:
        try:
            DockerBackend().build(context, tag, log_path=log, network="none", labels={})
        finally:
            os._exit(0)
    wait_for(lambda: log.exists() and marker in log.read_text(), 120, "the RUN step")
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    # the engine notices the closed connection on its own time: on two loaded cores that
    # can take longer than a fixed sleep (up to the RUN step's 60 s, which would end it too)
    def running() -> list[Any]:
        return [c for c in engine.containers.list()
                if marker in " ".join(c.attrs["Config"]["Cmd"] or [])]
    wait_for(lambda: not running(), 45,
             "the engine to cancel a build whose client went away (before its 60 s step ends)")
    with pytest.raises(docker.errors.ImageNotFound):
        engine.images.get(tag)
