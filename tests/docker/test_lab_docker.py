"""A lab on this machine: `invoke matrix bench --cpu=a,b,c,d` on extra Docker engines at once.

Three extra dockerds stand in for lab hosts, each with its own socket, data root and
bridge (tests/engines_fixture.py): one reached over ssh:// (a local sshd on 127.0.0.1 at
a non-standard port, key login as root), one over tcp:// with TLS (a CA, server and
client certificates made here with the openssl CLI; DOCKER_CERT_PATH), one as a Docker
context with its own TLS material in a temporary DOCKER_CONFIG (made with the docker CLI).
A fourth profile names an ssh:// engine nobody listens on. The OpenSSL image is copied to
the extra engines by `docker save | docker load`, never built there.

The suite is tiny (sha256 at 8192 bytes, 1 s, one round): the figures' status does not
matter here (this host is busy: they may well be `contended`); where the results go, with
which engine's identity, and what happens when an engine is stopped, does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from openssl_matrix.core.errors import LAB_EXIT
from openssl_matrix.images.render import toolchain_tag
from openssl_matrix.measure.hostinfo import parse_cpuinfo

from ..engines_fixture import (
    ExtraEngine,
    LocalSshd,
    can_start_engines,
    copy_image,
    free_port,
    make_tls,
    wait_for,
)

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
VARIANT = "1.1.1w-asm-x86_64"
SUITE = {"description": "a tiny suite for the lab tests", "algorithms": ["sha256"],
         "evp": True, "seconds": 1, "bytes": 8192, "masks": [{"name": "native"}]}
SLOW = {**SUITE, "description": "three 1 s runs: time to stop an engine between them",
        "algorithms": ["sha256", "sha1", "md5"]}


@dataclass
class Lab:
    matrix: Path
    env: dict[str, str]
    engines: dict[str, ExtraEngine]  # by profile
    built: Path  # a results tree holding the variant's build record


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    why = can_start_engines()
    if why:
        pytest.skip(why)
    tmp = tmp_path_factory.mktemp("lab")
    built = tmp / "built"
    res = invoke(["build", "--only", VARIANT, "--results", str(built)], dict(os.environ))
    assert res.returncode == 0, res.stdout + res.stderr
    tag = json.loads((built / "_builds" / VARIANT / "latest.json").read_text())["tag"]

    tls_t, tls_c = make_tls(tmp / "tls-t"), make_tls(tmp / "tls-c")
    engines = {"lab-ssh": ExtraEngine("lssh"), "lab-tls": ExtraEngine("ltls", tls=tls_t),
               "lab-ctx": ExtraEngine("lctx", tls=tls_c)}
    sshd = LocalSshd(tmp / "sshd", engines["lab-ssh"].url)
    config = tmp / "docker-config"
    env = {**os.environ, "PATH": sshd.path_env(), "DOCKER_CONFIG": str(config),
           "DOCKER_CERT_PATH": str(tls_t.client_dir(tmp / "certs-t")),
           "DOCKER_TLS_VERIFY": "1", "OPENSSL_MATRIX_CACHE": str(tmp / "cache")}
    env.pop("DOCKER_HOST", None)
    try:
        for e in engines.values():
            e.start()
            copy_image(tag, e.url)
        sshd.start()
        ctx = subprocess.run(
            ["docker", "context", "create", "lab-ctx", "--docker",
             f"host={engines['lab-ctx'].tcp_url},ca={tls_c.ca},cert={tls_c.cert},"
             f"key={tls_c.key}"], env=env, capture_output=True, text=True)
        assert ctx.returncode == 0, ctx.stderr
        host = parse_cpuinfo(Path("/proc/cpuinfo").read_text())
        data = yaml.safe_load((ROOT / "matrix.yaml").read_text())
        data["suites"].update({"labq": SUITE, "labslow": SLOW})
        where = {"lab-ssh": sshd.url, "lab-tls": str(engines["lab-tls"].tcp_url),
                 "lab-ctx": "context:lab-ctx",
                 "lab-gone": f"ssh://root@127.0.0.1:{free_port()}"}
        for name, docker_host in where.items():
            data["profiles"][name] = {"description": f"this machine's CPU via {name}",
                                      "vendor": host.vendor, "model": host.model,
                                      "docker_host": docker_host}
        matrix = tmp / "matrix.yaml"
        matrix.write_text(yaml.safe_dump(data, sort_keys=False))
        yield Lab(matrix, env, engines, built)
    finally:
        sshd.stop()
        for e in engines.values():
            e.remove()


def invoke(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "invoke", "matrix", *args], cwd=ROOT,
                          env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=900)


def bench_args(lab: Lab, tree: Path, cpus: str, suite: str) -> list[str]:
    return ["bench", f"--cpu={cpus}", "--only", VARIANT, "--suite", suite, "--settle", "0",
            "--matrix", str(lab.matrix), "--results", str(tree)]


def fresh_tree(lab: Lab, tmp_path: Path) -> Path:
    tree = tmp_path / "results"
    (tree / "_builds").mkdir(parents=True)
    src = lab.built / "_builds" / VARIANT
    subprocess.run(["cp", "-a", str(src), str(tree / "_builds")], check=True)
    return tree


def runs(tree: Path, cpu: str, suite: str) -> list[dict[str, Any]]:
    out = []
    for meta in sorted((tree / cpu / VARIANT / suite).glob("[0-9]*/meta.json")):
        data = json.loads(meta.read_text())
        data["_dir"] = meta.parent
        out.append(data)
    return out


def test_four_engines_at_once_one_unreachable(lab: Lab, tmp_path: Path) -> None:
    tree = fresh_tree(lab, tmp_path)
    res = invoke(bench_args(lab, tree, "lab-ssh,lab-tls,lab-ctx,lab-gone", "labq"), lab.env)
    text = res.stdout + res.stderr
    assert res.returncode == LAB_EXIT + 0b1000, text  # only the 4th engine failed
    assert "1 of 4 engine(s) did not finish" in res.stderr, text
    assert "lab-gone on ssh://root@127.0.0.1" in res.stderr and "exit 6" in res.stderr
    assert "Connection refused" in text
    assert "Traceback" not in text

    seen: dict[str, dict[str, Any]] = {}
    for cpu, transport in (("lab-ssh", "ssh"), ("lab-tls", "tcp+tls"), ("lab-ctx", "tcp+tls")):
        got = runs(tree, cpu, "labq")
        assert got and got[0]["status"] == "complete", (cpu, got, text)
        assert all(r["status"] == "complete" for r in got), cpu
        docker = got[0]["docker"]
        assert docker["transport"] == transport, docker
        assert docker["root_dir"] == lab.engines[cpu].data, "measured on that engine"
        assert got[0]["cpu_profile"] == cpu
        figures = json.loads((got[0]["_dir"] / "figures.json").read_text())
        assert figures and all(f["status"] in ("ok", "time-basis", "contended", "shared-core")
                               for f in figures), figures
        seen[cpu] = got[0]
    assert seen["lab-ctx"]["docker"]["context"] == "lab-ctx"
    assert len({s["docker"]["id"] for s in seen.values()}) == 3, "three engines, three IDs"
    # all engines were at work before the first working one ended (the runs themselves are short)
    lines = res.stderr.splitlines()
    started = [i for i, ln in enumerate(lines) if ln.startswith("[lab-") and "] ═ bench" in ln]
    ended = [i for i, ln in enumerate(lines) if ln.startswith("✓ lab-")]
    # (on two loaded cores one worker's Python may start after the first has ended)
    assert len(started) == 4 and len(ended) == 3, text
    assert sum(s < min(ended) for s in started) >= 3, text
    assert not (tree / "lab-gone").exists()
    for cpu in ("lab-ssh", "lab-tls", "lab-ctx"):
        assert f"== {cpu} on " in res.stdout, "each engine's summary is printed"


def test_an_engine_stopped_mid_run_resumes_and_the_other_is_not_measured_again(
        lab: Lab, tmp_path: Path) -> None:
    tree = fresh_tree(lab, tmp_path)
    args = bench_args(lab, tree, "lab-ssh,lab-tls", "labslow")
    proc = subprocess.Popen([sys.executable, "-m", "invoke", "matrix", *args], cwd=ROOT,
                            env={**lab.env, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    first = tree / "lab-tls" / VARIANT / "labslow" / "0001" / "raw"
    wait_for(lambda: list(first.glob("*.stdout")) or proc.poll() is not None, 600,
             "lab-tls's first speed run")
    lab.engines["lab-tls"].stop()  # the host goes away (dockerd stopped, containers too)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == LAB_EXIT + 0b10, out + err  # the 2nd engine
    # a dockerd shutting down answers some requests with a 500 before it stops answering:
    # the cell then failed (exit 5) rather than found the engine gone (exit 6)
    assert "lab-tls on tcp://127.0.0.1" in err and ("exit 6" in err or "exit 5" in err), err
    assert "Traceback" not in err
    ssh_runs = runs(tree, "lab-ssh", "labslow")
    assert ssh_runs and all(r["status"] == "complete" for r in ssh_runs), out + err
    assert [r["status"] for r in runs(tree, "lab-tls", "labslow")] in (["interrupted"],
                                                                      ["failed"])

    lab.engines["lab-tls"].start()
    res = invoke(args, lab.env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert runs(tree, "lab-ssh", "labslow") == ssh_runs, "lab-ssh finished: not measured again"
    tls = runs(tree, "lab-tls", "labslow")
    assert tls[0]["status"] in ("interrupted", "failed") and tls[1]["status"] == "complete"
    assert tls[0]["session"] == tls[1]["session"], "the same session, resumed"
    assert "resuming the interrupted bench session" in (tree / "_lab").joinpath(
        sorted(p.name for p in (tree / "_lab").iterdir())[-1], "lab-tls.log").read_text()
    assert not list((tree / "_journal").glob("bench-*.json")), "sessions closed at the end"


def test_a_lab_build_ships_an_image_from_one_lab_engine_to_another(
        lab: Lab, tmp_path: Path) -> None:
    """`build --cpu=lab-ssh,lab-tls`: lab-tls lacks the image, lab-ssh has it (and the
    toolchain it was planned with, and the base image); the local engine is out of reach
    (DOCKER_HOST names no socket), so the image can only come from the other lab engine:
    saved over ssh, loaded over TLS, its ID checked on arrival."""
    tag = json.loads((lab.built / "_builds" / VARIANT / "latest.json").read_text())["tag"]
    for image in (toolchain_tag("debian:bookworm"), "debian:bookworm"):
        copy_image(image, lab.engines["lab-ssh"].url)
    ssh, tls = lab.engines["lab-ssh"].client(), lab.engines["lab-tls"].client()
    tls.images.remove(tag)
    tree = tmp_path / "results"
    env = {**lab.env, "DOCKER_HOST": f"unix://{tmp_path}/no-engine-here.sock"}
    res = invoke(["build", "--cpu=lab-ssh,lab-tls", "--only", VARIANT, "--matrix",
                  str(lab.matrix), "--results", str(tree)], env)
    text = res.stdout + res.stderr
    assert res.returncode == 0, text
    assert "the local engine is not reachable" in text
    assert f"shipping {tag} from lab-ssh (ssh://" in text, text
    [ship] = [json.loads(p.read_text()) for p in tree.glob(f"_builds/{VARIANT}/*/shipped-*.json")]
    assert ship["method"] == "save-load" and ship["bytes"] > 0
    try:
        assert ship["from_engine"]["id"] == ssh.info()["ID"]
        assert tls.images.get(tag).id == ship["image_id"], "the same image, checked"
    finally:
        ssh.close()
        tls.close()
