"""Public-key suites: per-version spelling of speed's algorithms and up-front refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.core.resources import project_reports
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.model import Matrix
from openssl_matrix.matrix.pkey import ALGORITHMS, plan
from openssl_matrix.measure.benchfigure import BenchFigure
from openssl_matrix.measure.speedcmd import speed_invocations

ROOT = Path(__file__).resolve().parents[2]
SUITE = ["rsa2048", "rsa3072", "rsa4096", "ecdsap256", "ecdsap384", "ecdhp256", "ecdhx25519",
         "ed25519", "ml-kem-768", "ml-dsa-65"]


def _load(text: str, tmp_path: Path) -> Matrix:
    path = tmp_path / "matrix.yaml"
    path.write_text(text, encoding="utf-8")
    return load_matrix(path)


def _measured(version: str, configure: tuple[str, ...] = ()) -> list[str]:
    return [name for name, _, _ in plan(version, SUITE, configure).runs]


def _refused(version: str, configure: tuple[str, ...] = ()) -> dict[str, str]:
    return {r.algorithm: r.reason for r in plan(version, SUITE, configure).refused}


def test_each_era_measures_what_its_speed_has_and_refuses_the_rest_with_the_reason() -> None:
    assert _measured("0.9.8y") == ["rsa2048", "rsa4096", "ecdsap256", "ecdsap384", "ecdhp256"]
    assert _measured("1.0.2u") == _measured("0.9.8y")
    assert _measured("1.1.0l") == ["rsa2048", "rsa3072", "rsa4096", "ecdsap256", "ecdsap384",
                                   "ecdhp256", "ecdhx25519"]
    assert _measured("1.1.1w") == [*_measured("1.1.0l"), "ed25519"]
    assert _measured("3.0.20") == _measured("1.1.1w")
    assert _measured("3.4.1") == _measured("1.1.1w")
    assert _measured("3.5.7") == SUITE
    assert _measured("3.6.3") == SUITE
    refused = _refused("1.0.2u")
    assert set(refused) == {"rsa3072", "ecdhx25519", "ed25519", "ml-kem-768", "ml-dsa-65"}
    assert "exists from 1.1.0" in refused["rsa3072"]
    assert "exists from 1.1.1" in refused["ed25519"]
    assert "OpenSSL 3.0.20's speed has no such test (it exists from 3.5.0" in \
        _refused("3.0.20")["ml-kem-768"]


def test_a_build_configured_without_an_algorithm_refuses_it() -> None:
    refused = _refused("3.0.20", ("no-ec",))
    assert refused["ecdsap256"] == "this build was configured with no-ec"
    assert "ecdhx25519" in refused and "ed25519" in refused
    assert "rsa2048" not in refused


def test_spelling_and_figure_ids_are_the_parsers() -> None:
    runs = {name: (arg, fig) for name, arg, fig in plan("3.5.7", SUITE).runs}
    assert runs["ml-kem-768"] == ("ML-KEM-768", "kem-ml-kem-768")
    assert runs["ml-dsa-65"] == ("ML-DSA-65", "sig-ml-dsa-65")
    assert runs["ecdhx25519"] == ("ecdhx25519", "ecdh-x25519")
    assert runs["rsa2048"] == ("rsa2048", "rsa-2048")
    assert all(a.since <= (3, 5, 0) for a in ALGORITHMS.values())


def test_pkey_suite_runs_one_speed_per_algorithm_and_notes_refusals() -> None:
    m = load_matrix(ROOT / "matrix.yaml")
    suite = m.suite("pkey")
    assert suite.kind == "pkey" and suite.paths == ("pkey",)
    inv, notes = speed_invocations("1.1.1w", suite)
    assert [i.command for i in inv][:2] == [
        ("openssl", "speed", "-elapsed", "-mr", "-seconds", "1", "rsa2048"),
        ("openssl", "speed", "-elapsed", "-mr", "-seconds", "1", "rsa3072")]
    assert [i.name for i in inv][-1] == "default--ed25519"
    assert all(i.path == "pkey" for i in inv)
    assert sum("not measured" in n for n in notes) == 2
    inv, notes = speed_invocations("3.5.7", suite)
    assert inv[-2].command[-1] == "ML-KEM-768" and inv[-2].name == "default--ml-kem-768"
    assert not [n for n in notes if "not measured" in n]
    inv, notes = speed_invocations("1.0.2u", suite)
    assert "-seconds" not in inv[0].command  # 1.0.2's speed has no -seconds
    assert any("speed's default 10 s per operation was used" in n for n in notes)
    assert any(n.startswith("ed25519: not measured") for n in notes)


def test_a_version_with_none_of_the_algorithms_runs_nothing(tmp_path: Path) -> None:
    text = (ROOT / "matrix.yaml").read_text().replace(
        "algorithms: [rsa2048, rsa3072, rsa4096, ecdsap256, ecdsap384, ecdhp256, ecdhx25519,\n"
        "                 ed25519, ml-kem-768, ml-dsa-65]", "algorithms: [ml-kem-768]")
    m = _load(text, tmp_path)
    inv, notes = speed_invocations("3.0.20", m.suite("pkey"))
    assert inv == [] and notes[0].startswith("ml-kem-768: not measured")


def test_matrix_refuses_unknown_public_key_names_and_speed_only_keys(tmp_path: Path) -> None:
    base = (ROOT / "matrix.yaml").read_text()
    bad = base.replace("ecdhx25519,\n", "ecdhx2559,\n", 1)
    with pytest.raises(ConfigError, match=r"suites.pkey.algorithms\[6\].*not a public-key"):
        _load(bad, tmp_path)
    bad = base.replace("    kind: pkey\n", "    kind: pkey\n    evp: true\n", 1)
    with pytest.raises(ConfigError, match=r"suites.pkey.evp: not used by a suite with kind"):
        _load(bad, tmp_path)
    bad = base.replace("    kind: pkey\n", "    kind: pkey\n    protocols: [tls1.2]\n", 1)
    with pytest.raises(ConfigError, match=r"only a suite with kind: tls"):
        _load(bad, tmp_path)


def test_issue_16221_spec_plans_pkey_suites_and_collects_ops_figures(tmp_path: Path) -> None:
    """The public-key spec: loading, a pkey suite per variant, figures read by operation."""
    import json

    from openssl_matrix.measure.hostinfo import parse_cpuinfo
    from openssl_matrix.repro.judge import collect
    from openssl_matrix.repro.plan import plan
    from openssl_matrix.repro.resolve import HostFacts, ResolvedVersion
    from openssl_matrix.repro.spec import OP_BLOCK
    from openssl_matrix.repro.specload import load_spec

    from ..fakes import CPUINFO_EPYC

    spec = load_spec(project_reports() / "openssl-issue-16221-p521.yaml")
    sign = spec.measurements["v111-ecdsa-sign"]
    assert sign.operation == "sign" and sign.reference == {OP_BLOCK: 1936.3}
    claim = next(c for c in spec.claims if c.id == "p521-sign-much-slower")
    assert spec.claim_blocks(claim) == (OP_BLOCK,)
    resolved = {
        "1.1.1k": ResolvedVersion("1.1.1k", "1.1.1w", True, "0" * 64, (), None, None),
        "3.0.0-beta2": ResolvedVersion("3.0.0-beta2", "3.0.20", True, "1" * 64, (), None,
                                       None)}
    cpu = parse_cpuinfo(CPUINFO_EPYC.split("==> uname")[0])
    planned, groups, _ = plan(spec, resolved, HostFacts(cpu, {}, (False, ""), (False, "")))
    defs = {g.variant: g.definition for g in groups.values()}
    assert set(defs) == {"1.1.1w-asm-x86_64", "3.0.20-asm-x86_64"}
    assert defs["1.1.1w-asm-x86_64"]["kind"] == "pkey"
    assert defs["1.1.1w-asm-x86_64"]["algorithms"] == ["ecdsap521", "ecdhp521"]
    assert "bytes" not in defs["1.1.1w-asm-x86_64"] and "masks" not in defs["1.1.1w-asm-x86_64"]
    run = tmp_path / "0001"
    run.mkdir()
    (run / "meta.json").write_text(json.dumps({"status": "complete", "host": {}}))
    (run / "figures.json").write_text(json.dumps([
        {"algorithm": "ecdsa-p521", "operation": "sign", "ops_per_s": 2500.0, "mask": "default",
         "status": "ok", "block_size": None},
        {"algorithm": "ecdsa-p521", "operation": "verify", "ops_per_s": 1200.0,
         "mask": "default", "status": "ok", "block_size": None}]))
    ours = collect(sign, planned["v111-ecdsa-sign"], [run])
    assert ours.values(OP_BLOCK) == [2500.0]


def test_a_progress_line_names_what_the_guards_flagged() -> None:
    """A public-key speed run that exited 0 on a busy host reads "ok, flagged: contended",
    not a plain ok (its findings flag all its figures); a clean one adds nothing."""
    from openssl_matrix.core.statuses import CONTENDED
    from openssl_matrix.measure.cell import flagged_note
    from openssl_matrix.measure.guards import Finding

    recs = [BenchFigure.of(algorithm="rsa-2048", operation=op, status="ok")
            for op in ("sign", "verify")]
    assert flagged_note(recs, []) == ""
    busy = Finding(CONTENDED, "host not quiet", "default--rsa2048", ())
    assert flagged_note(recs, [busy]) == ", flagged: contended"
    recs[1] = recs[1].with_(status=CONTENDED)  # a TLS run's figures carry their own status
    assert flagged_note(recs, []) == ", flagged: 1 contended of 2 figure(s)"
