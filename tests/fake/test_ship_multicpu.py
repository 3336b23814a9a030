"""One results tree written by several engines under several CPU profiles (the fake
backend standing in for two machines): the report puts each build's method tables side
by side per CPU, and reproduce judges a claim comparing two machines from the two
profiles' results."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from openssl_matrix.cli.shared import handlers
from openssl_matrix.engine.ship import Peer, Shipper
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.session import Bencher
from openssl_matrix.report.page import build_report
from openssl_matrix.repro.judge import REPRODUCED
from openssl_matrix.repro.resolve import Environment
from openssl_matrix.repro.run import reproduce
from openssl_matrix.repro.specload import load_spec
from openssl_matrix.results.tree import ResultsTree

from ..conftest import make_tarball
from ..fakes import CPUINFO_EPYC, FakeBackend, engine_of
from .test_pipeline_fake import speed_responder
from .test_reproduce_fake import EVP_AES, fake_speed

CPUINFO_RYZEN = CPUINFO_EPYC.replace("AMD EPYC 7B13", "AMD Ryzen 5 3600 6-Core Processor")
EPYC = {"description": "the first fake engine's CPU", "vendor": "AuthenticAMD",
        "model": "*EPYC*", "flags": ["aes"]}
RYZEN = {"description": "the second fake engine's CPU", "vendor": "AuthenticAMD",
         "model": "*Ryzen*", "flags": ["aes"]}


def engines(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[FakeBackend, FakeBackend]:
    """Two fake engines on two machines: an EPYC and a Ryzen at half its speed."""
    monkeypatch.setenv("OPENSSL_MATRIX_LOCK_DIR", str(tmp_path / "locks"))
    a, b = FakeBackend(), FakeBackend()
    a.info.update(id="ENGINE-A", name="epyc-host")
    b.info.update(id="ENGINE-B", name="ryzen-host")
    b.cpuinfo = CPUINFO_RYZEN
    return a, b


def halved(respond: object) -> object:
    def run(image: str, command: Sequence[str], env: Mapping[str, str],
            ) -> tuple[int, str, str]:
        code, out, err = respond(image, command, env)  # type: ignore[operator]
        return code, out.replace("1426407424.00", "713203712.00").replace(
            f"{EVP_AES:.2f}", f"{EVP_AES / 2:.2f}"), err
    return run


def test_the_report_puts_two_cpus_method_tables_side_by_side(
        fake_matrix: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = fake_matrix.read_text() + "\n".join([
        "  epyc:", "    description: the first fake engine's CPU", "    vendor: AuthenticAMD",
        "    model: \"*EPYC*\"", "    flags: [aes]", ""])
    fake_matrix.write_text(text)
    m = load_matrix(fake_matrix, default_urls=default_urls)
    a, b = engines(monkeypatch, tmp_path)
    a.responder, b.responder = speed_responder, halved(speed_responder)  # type: ignore[assignment]
    tree = ResultsTree(tmp_path / "results")
    variants = m.select("1.1.1w-asm-x86_64")
    Builder(m, a, tree, workdir=tmp_path / "w").build(variants)
    shipper = Shipper(b, b.engine_info(), "ship", lambda: [Peer("epyc-host", a, a.info)],
                      tree.ships)
    assert [o.status for o in Builder(m, b, tree, workdir=tmp_path / "w",
                                      images=shipper).build(variants)] == ["shipped"]
    for backend, cpu in ((a, "epyc"), (b, "ryzen")):
        [cell] = Bencher(m, backend, tree, engine=backend.engine_info(),
                         git_commit=None).bench(variants, m.suite("quick"), cpu)
        assert cell.status == "complete"
    summary = build_report(tree, tmp_path / "report")
    # each CPU keeps its own method table, and the build gets one table of both
    assert sorted(g.key.cpu for g in summary.groups) == ["epyc", "ryzen"]
    [side] = summary.side_by_side
    assert side.cpus == ["epyc", "ryzen"]
    assert side.title == "OpenSSL 1.1.1w · x86_64 on epyc, ryzen"
    out = summary.text()
    assert "CPUs side by side: OpenSSL 1.1.1w · x86_64 on epyc, ryzen" in out
    assert "aes-128-cbc @ epyc" in out and "aes-128-cbc @ ryzen" in out
    row = next(line for line in out.splitlines()
               if line.strip().startswith("asm + AES-NI & SHA ext.") and "@" not in line
               and "1,426.4" in line and "713.2" in line)
    assert row.index("1,426.4") < row.index("713.2"), "EPYC's column before Ryzen's"
    data = json.loads((tmp_path / "report/data/report.json").read_text())
    [table] = data["cpus_side_by_side"]
    cells = table["cells"]["asm + AES-NI & SHA ext."]["aes-128-cbc"]
    assert cells == {"epyc": 1426407424.0, "ryzen": 713203712.0}
    chart = tmp_path / "report/charts/cpus-1.1.1w-x86-64-8192.png"
    assert chart.is_file() and f"charts/{chart.name}" in data["charts"]
    html = (tmp_path / "report/index.html").read_text()
    assert '<h2 id="cpus">CPUs side by side' in html and '<a href="#cpus">' in html
    assert "<th>epyc</th><th>ryzen</th>" in html
    # the runs say which engine measured them, and that the image came by ship to B
    metas = [json.loads(p.read_text()) for p in sorted(tree.root.glob("*/*/quick/*/meta.json"))]
    assert [(mm["cpu_dir"], mm["docker"]["id"]) for mm in metas] == [
        ("epyc", "ENGINE-A"), ("ryzen", "ENGINE-B")]
    assert metas[0]["build"]["shipped"] is None, "built on A itself"
    assert metas[1]["build"]["shipped"]["from_engine"]["id"] == "ENGINE-A"
    # a second session on the first engine (issue 28): its side-by-side cell is that
    # session's figure alone, the first kept in the cell's history, one link to its page
    [again] = Bencher(m, a, tree, engine=a.engine_info(), git_commit=None).bench(
        variants, m.suite("quick"), "epyc")
    assert again.status == "complete"
    summary = build_report(tree, tmp_path / "report2")
    [side] = summary.side_by_side
    both = side.cell("asm + AES-NI & SHA ext.", "aes-128-cbc", 0, 8192)
    assert both is not None and len(both.history) == 2 and len(both.ok_values) == 1
    html = (tmp_path / "report2/index.html").read_text()
    section = html.split('id="cpus"')[1].split('id="sizes"')[0]
    assert f'<a class="cell" href="{both.page}"' in section and ">2 sessions</a>" in section


SPEC = """
schema: 1
title: Two machines, one claim (made up for the tests)
source: {{kind: blog, where: nowhere, date: 2020}}
machines:
  fast: {{cpu: An EPYC, profile: epyc}}
  slow: {{cpu: A Ryzen, profile: ryzen}}
versions:
  1.1.1w:
    sha256: {sha}
    urls: [file://{src}/openssl-1.1.1w.tar.gz]
builds:
  new: {{version: 1.1.1w}}
measurements:
  on-fast: {{machine: fast, build: new, algorithm: aes-128-cbc,
             reference: {{8192: 200000.00k}}}}
  on-slow: {{machine: slow, build: new, algorithm: aes-128-cbc,
             reference: {{8192: 100000.00k}}}}
claims:
  - {{id: twice, says: the EPYC is twice the Ryzen, compare: [on-fast, on-slow],
      expect: ratio}}
measure: {{seconds: 1, repeat: 1}}
"""


def test_a_two_machine_claim_is_judged_from_one_tree_written_by_two_engines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "src"
    src.mkdir()
    spec_path = tmp_path / "two-machines.yaml"
    spec_path.write_text(SPEC.format(sha=make_tarball(src / "openssl-1.1.1w.tar.gz", "1.1.1w"),
                                     src=src))
    spec = load_spec(spec_path)
    env = Environment(None, {}, {}, {"epyc": EPYC, "ryzen": RYZEN}, (), None,
                      mirrors=lambda v: [])
    a, b = engines(monkeypatch, tmp_path)
    a.responder, b.responder = fake_speed, halved(fake_speed)  # type: ignore[assignment]
    tree = ResultsTree(tmp_path / "results")
    first = reproduce(spec, env, a, tree, cpu_profile="epyc", engine=a.engine_info())
    assert first.results[0].basis == "two machines"
    assert "needs epyc and ryzen" in (first.results[0].reason or "")
    rep = reproduce(spec, env, b, tree, cpu_profile="ryzen", engine=b.engine_info())
    [twice] = rep.results
    assert twice.basis == "two machines" and twice.verdict == REPRODUCED, twice.reason
    assert twice.blocks[0].ours == pytest.approx(2.0)
    assert twice.blocks[0].reference == pytest.approx(2.0)
    assert "on-fast from epyc" in (twice.model or "") and "on-slow from ryzen" in (
        twice.model or "")
    # one tree, each profile's runs from its own engine
    engines_by_cpu = {p.parts[-5]: json.loads(p.read_text())["docker"]["id"]
                      for p in tree.root.glob("*/*/*/*/meta.json")}
    assert engines_by_cpu == {"epyc": "ENGINE-A", "ryzen": "ENGINE-B"}


LAB_PROFILES = """  epyc-lab:
    description: the first fake engine's CPU, behind ssh
    vendor: AuthenticAMD
    model: "*EPYC*"
    flags: [aes]
    docker_host: ssh://bench@epyc.lab
  ryzen-lab:
    description: the second fake engine's CPU, behind TLS
    vendor: AuthenticAMD
    model: "*Ryzen*"
    flags: [aes]
    docker_host: tcp://ryzen.lab:2376
"""


def test_reproduce_runs_each_profile_on_its_docker_host_and_judges_from_both(
        fake_matrix: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`invoke matrix reproduce SPEC --cpu=a,b`: each profile on its own engine (its
    docker_host, never the local one), one after the other; a two-machine claim is judged
    from both; an unreachable engine fails alone with a lab's exit status."""
    import hashlib

    from invoke.exceptions import Exit

    from openssl_matrix.cli.table import dispatch
    from openssl_matrix.core.errors import LAB_EXIT, DockerUnavailable

    fake_matrix.write_text(fake_matrix.read_text() + LAB_PROFILES)
    src = tmp_path / "src"
    sha = hashlib.sha256((src / "openssl-1.1.1w.tar.gz").read_bytes()).hexdigest()
    spec_path = tmp_path / "two-machines.yaml"
    spec_path.write_text(SPEC.format(sha=sha, src=src).replace("profile: epyc}", "profile: "
                         "epyc-lab}").replace("profile: ryzen}", "profile: ryzen-lab}"))
    a, b = engines(monkeypatch, tmp_path)
    a.responder, b.responder = fake_speed, halved(fake_speed)  # type: ignore[assignment]
    by_host = {"ssh://bench@epyc.lab": a, "tcp://ryzen.lab:2376": b}

    def backend(base_url: str | None = None, **_: object) -> FakeBackend:
        assert base_url is not None, "reproduce --cpu=PROFILE uses the profile's engine"
        if base_url not in by_host:
            raise DockerUnavailable(f"cannot reach the Docker engine at {base_url}")
        return by_host[base_url]

    table = handlers(engine_of(backend), mirrors=lambda v: [])  # offline: no mirror
    flags = {"matrix": str(fake_matrix), "results": str(tmp_path / "results"),
             "cpu": "epyc-lab,ryzen-lab", "force": False, "wait": False, "json": True}
    dispatch("reproduce", str(spec_path), flags, table)
    out = json.loads(capsys.readouterr().out)
    [claim] = out["claims"]
    assert claim["verdict"] == REPRODUCED, claim
    engines_by_cpu = {p.parts[-5]: json.loads(p.read_text())["docker"]["id"]
                      for p in (tmp_path / "results").glob("*/*/*/*/meta.json")}
    assert engines_by_cpu == {"epyc-lab": "ENGINE-A", "ryzen-lab": "ENGINE-B"}

    # the second machine's engine is gone: the first still runs; exit 32 + bit 1
    del by_host["tcp://ryzen.lab:2376"]
    with pytest.raises(Exit) as exc:
        dispatch("reproduce", str(spec_path), {**flags, "json": False}, table)
    assert exc.value.code == LAB_EXIT + 0b10
    err = capsys.readouterr().err
    assert "1 of 2 profile(s) did not reproduce: ryzen-lab (exit 6: cannot reach" in err
