"""``reproduce --check`` judges its own plan: per claim whether it can get a verdict here
(or on the profiles given with --cpu) and if not exactly what is missing, one line per
claim, "N of M claims can be judged", and nothing planned for the others. One spec with
a claim per reason; each reason is checked on its own line."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest
import yaml

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.measure.hostinfo import CpuInfo
from openssl_matrix.repro.canjudge import judgeable
from openssl_matrix.repro.check import check
from openssl_matrix.repro.resolve import Environment, HostFacts, resolve_versions
from openssl_matrix.repro.specload import load_spec

ROOT = Path(__file__).resolve().parents[2]

#: A CPU the model knows nothing about (no CPUID match, no known name), with AES-NI.
UNKNOWN_CPU = CpuInfo("GenuineIntel", "Some Future Processor", ("aes", "pclmulqdq", "avx"),
                      2000.0, 2, 6, 250)
#: An Ivy Bridge, as the ivy-bridge profile's core.
IVY = CpuInfo("GenuineIntel", "Intel(R) Core(TM) i5-3317U CPU @ 1.70GHz",
              ("aes", "pclmulqdq", "avx"), 1700.0, 4, 6, 58)


def facts(cpu: CpuInfo) -> HostFacts:
    return HostFacts(cpu, {"uname": "Linux test"}, (False, "no AF_ALG in this test"),
                     (False, "no /dev/crypto"))


def fake_tarball(folder: Path, version: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"x\n"
        info = tarfile.TarInfo(f"openssl-{version}/Configure")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    (folder / f"openssl-{version}.tar.gz").write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


def measurement(build: str, machine: str = "lab", **extra: object) -> dict[str, object]:
    return {"machine": machine, "build": build, "algorithm": "aes-128-cbc", "evp": True,
            "reference": {8192: "300000.00k"}, **extra}


def spec_doc(sha_here: str) -> dict[str, object]:
    return {
        "schema": 1, "title": "one claim per reason",
        "source": {"kind": "blog", "where": "a test"},
        "machines": {
            "lab": {"cpu": "Intel Core i5-3317U (Ivy Bridge)", "core": "ivybridge",
                    "flags": ["aes"], "profile": "ivy-bridge"},
            "other": {"cpu": "Intel Xeon 5670 (Westmere)", "flags": ["aes"],
                      "profile": "westmeer"},   # misspelled: the matrix has westmere
            "old": {"cpu": "Intel Xeon 5670 (Westmere)", "flags": ["aes"],
                    "profile": "westmere"},
            "mystery": {"cpu": "Some Vendor's Chip", "flags": ["aes"]},
        },
        "versions": {
            "9.9.9": {"sha256": sha_here},       # its tarball is in sources_dirs
            "0.9.8x": {},                        # no sha256 anywhere
            "1.0.2u": {},                        # official sha256, no tarball here
            "1.0.1e": {"stand_in": "9.9.9", "stand_in_why": "a test"},
        },
        "builds": {"here": {"version": "9.9.9"}, "nosha": {"version": "0.9.8x"},
                   "notar": {"version": "1.0.2u"}, "standin": {"version": "1.0.1e"}},
        "measurements": {
            "a": measurement("here"), "b": measurement("here", ia32cap="~0x200000200000000"),
            "c": measurement("nosha"), "d": measurement("notar"),
            "e": measurement("standin", stand_in=False),
            "f": measurement("here", machine="other"),
            "g": measurement("here", machine="old"),
            "h": measurement("here", needs=["af_alg"]),
            "k": measurement("here", machine="mystery"),
            "l": measurement("here", machine="mystery", ia32cap="~0x200000200000000"),
        },
        "claims": [
            {"id": "judged", "says": "s", "compare": ["a", "b"], "expect": "faster"},
            {"id": "no-sha", "says": "s", "compare": ["c", "a"], "expect": "faster"},
            {"id": "no-tarball", "says": "s", "compare": ["d", "a"], "expect": "faster"},
            {"id": "refused-stand-in", "says": "s", "compare": ["e", "a"], "expect": "faster"},
            {"id": "misspelled-profile", "says": "s", "compare": ["f", "a"],
             "expect": "faster"},
            {"id": "two-machines", "says": "s", "compare": ["g", "a"], "expect": "faster"},
            {"id": "cpu-beyond-model", "says": "s", "compare": ["k", "l"], "expect": "ratio",
             "ratio": 2.0, "depends_on": "cpu"},
            {"id": "cpu-model-here", "says": "s", "compare": ["a", "b"], "expect": "ratio",
             "ratio": 2.0, "depends_on": "cpu"},
            {"id": "no-af-alg", "says": "s", "compare": ["h", "a"], "expect": "faster"},
        ],
    }


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Environment]:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    sha = fake_tarball(tmp_path / "tarballs", "9.9.9")
    spec_path = tmp_path / "reasons.yaml"
    spec_path.write_text(yaml.safe_dump(spec_doc(sha), sort_keys=False), encoding="utf-8")
    matrix = yaml.safe_load((ROOT / "matrix.yaml").read_text(encoding="utf-8"))
    matrix["sources_dirs"] = [str(tmp_path / "tarballs")]
    mpath = tmp_path / "matrix.yaml"
    mpath.write_text(yaml.safe_dump(matrix, sort_keys=False), encoding="utf-8")
    return spec_path, Environment.from_matrix(mpath)


def lines_by_claim(text: str) -> dict[str, str]:
    section = text.split("Claims that can be judged", 1)[1].split("\n\n", 1)[0]
    return {line.split(":", 1)[0].strip(): line for line in section.splitlines()[1:]
            if line.startswith("  ") and not line.startswith("   ") and ": " in line}


def test_each_reason_a_claim_cannot_be_judged_is_one_line(
        setup: tuple[Path, Environment], tmp_path: Path) -> None:
    spec_path, env = setup
    spec = load_spec(spec_path)
    text = check(spec, env, tmp_path / "results", facts(UNKNOWN_CPU)).text()
    got = lines_by_claim(text)
    assert got["judged"] == "  judged: can be judged (this machine)"
    assert "[no-sha256] c needs OpenSSL 0.9.8x: no sha256 is known" in got["no-sha"]
    assert "invoke matrix pin 0.9.8x --file PATH" in got["no-sha"]
    assert "[no-tarball] d needs OpenSSL 1.0.2u: openssl-1.0.2u.tar.gz is not in the cache " \
        "or a sources_dirs folder" in got["no-tarball"]
    assert "[stand-in] e refuses stand-ins (stand_in: false)" in got["refused-stand-in"]
    assert "[no-profile] profile 'westmeer' of machines.other is not in the matrix " \
        "(closest: westmere)" in got["misspelled-profile"]
    assert "[no-profile] it compares westmere with ivy-bridge: run with " \
        "--cpu=westmere,ivy-bridge" in got["two-machines"]
    assert "[cpu] its size depends on the CPU (ours differs from \"Some Vendor's Chip\"), " \
        "and the CPU model does not know the core of the CPU \"Some Vendor's Chip\" " \
        "(machines.mystery), so it cannot carry this claim to another CPU. If that CPU has " \
        "one of the cores westmere, sandybridge" in got["cpu-beyond-model"]
    # our core unknown to the model: judged on the model's word on their CPU (Ivy Bridge)
    assert got["cpu-model-here"] == "  cpu-model-here: can be judged (this machine)"
    assert "[needs] h needs the kernel crypto API (AF_ALG)" in got["no-af-alg"]
    assert "  2 of 9 claims can be judged here" in text
    assert "Summary: 2 of 9 claims can be judged here" in text
    # the misspelled profile is a problem of the spec, said in the summary too
    assert "warning: claim misspelled-profile: profile 'westmeer'" in text
    # nothing is planned for the claims that cannot be judged: only a and b are measured
    plan = text.split("Plan on this machine", 1)[1]
    runs = [line for line in plan.splitlines() if line.startswith("  run ")]
    assert len(runs) == 1 and runs[0].endswith(": a, b")
    for name in "cdefghkl":
        assert f"  not measured: {name}: " in plan


def test_the_profiles_given_with_cpu_are_honoured_in_the_preview(
        setup: tuple[Path, Environment], tmp_path: Path) -> None:
    spec_path, env = setup
    spec = load_spec(spec_path)
    text = check(spec, env, tmp_path / "results", facts(UNKNOWN_CPU),
                 profiles=("westmere", "ivy-bridge")).text()
    got = lines_by_claim(text)
    assert got["two-machines"] == "  two-machines: can be judged (westmere and ivy-bridge)"
    # on the ivy-bridge profile the core is the report's own: judged as measured
    assert got["cpu-model-here"] == \
        "  cpu-model-here: can be judged (westmere and ivy-bridge)"
    assert "Plan on profile westmere (" in text and "Plan on profile ivy-bridge (" in text
    assert "claims can be judged on westmere and ivy-bridge" in text
    with pytest.raises(ConfigError, match=r"--cpu=ivy-brigde: no CPU profile.*closest: "
                                          r"ivy-bridge"):
        check(spec, env, tmp_path / "results", facts(UNKNOWN_CPU), profiles=("ivy-brigde",))


def test_the_same_core_or_a_known_one_is_judgeable(setup: tuple[Path, Environment]) -> None:
    spec_path, env = setup
    spec = load_spec(spec_path)
    resolved = resolve_versions(spec, env, offline=True)
    by_id = {p.claim: p for p in judgeable(spec, resolved, env, facts(IVY))}
    assert by_id["cpu-model-here"].judgeable   # the report's own core
    assert [m.kind for m in by_id["cpu-beyond-model"].missing] == ["cpu"]
    assert [m.kind for m in by_id["no-sha"].missing] == ["no-sha256"]
    assert [m.kind for m in by_id["no-tarball"].missing] == ["no-tarball"]


def test_no_fetch_is_printed_where_nothing_is_downloaded(
        setup: tuple[Path, Environment], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    spec_path, env = setup
    check(load_spec(spec_path), env, tmp_path / "results", facts(UNKNOWN_CPU))
    err = capsys.readouterr().err
    assert "▸ fetch" not in err and "failed ✕" not in err


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["measurements"]["a"].update(reference={8192: float("nan")}),
     "is not a finite figure"),
    (lambda d: d["measurements"]["a"].update(reference={8192: float("inf")}),
     "is not a finite figure"),
    (lambda d: d["measurements"]["a"].update(reference={8192: 0}), "cannot be compared"),
    (lambda d: d["measurements"]["a"].update(reference={8192: "5000000000000.00k"}),
     "no openssl speed run gives more than"),
    (lambda d: d["claims"][6].update(ratio=float("nan")), "finite positive number"),
    (lambda d: d["claims"][6].update(ratio=float("inf")), "finite positive number"),
    (lambda d: d["claims"][6].update(ratio=0), "positive number"),
    (lambda d: d["claims"][6].update(ratio=1e6), "is not a ratio a report claims"),
    (lambda d: d["claims"][5].update(depends_on="code-path"),
     "compares figures of two machines, so its size depends on their CPUs"),
])
def test_impossible_figures_and_a_code_path_claim_between_machines_are_refused(
        tmp_path: Path, change: object, message: str) -> None:
    doc = spec_doc("a" * 64)
    assert callable(change)
    change(doc)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_spec(path)


def test_a_claim_between_two_machines_depends_on_their_cpus_by_default(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(yaml.safe_dump(spec_doc("a" * 64), sort_keys=False), encoding="utf-8")
    spec = load_spec(path)
    claims = {c.id: c for c in spec.claims}
    assert claims["two-machines"].depends_on == "cpu"
    assert claims["judged"].depends_on == "code-path"
    assert spec.measurements["e"].stand_in is False and spec.measurements["a"].stand_in


def test_docs_way_to_describe_an_unnamed_cpu_as_a_profile(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/reports.md's profile for a CPU a report does not name loads in the matrix,
    and a claim between it and a named machine can then be judged on the two profiles."""
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    text = (ROOT / "docs" / "reports.md").read_text(encoding="utf-8")
    section = text.split("#### A CPU the report does not name", 1)[1]
    snippet = yaml.safe_load(section.split("```yaml\n", 1)[1].split("```", 1)[0])
    matrix = yaml.safe_load((ROOT / "matrix.yaml").read_text(encoding="utf-8"))
    matrix["profiles"].update(snippet["profiles"])
    sha = fake_tarball(tmp_path / "tarballs", "9.9.9")
    matrix["sources_dirs"] = [str(tmp_path / "tarballs")]
    mpath = tmp_path / "matrix.yaml"
    mpath.write_text(yaml.safe_dump(matrix, sort_keys=False), encoding="utf-8")
    env = Environment.from_matrix(mpath)
    doc = spec_doc(sha)
    doc["machines"]["old"]["profile"] = "report-old-xeon"  # type: ignore[index]
    spec_path = tmp_path / "unnamed.yaml"
    spec_path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    out = check(load_spec(spec_path), env, tmp_path / "results", facts(UNKNOWN_CPU),
                profiles=("report-old-xeon", "ivy-bridge")).text()
    assert lines_by_claim(out)["two-machines"] == \
        "  two-machines: can be judged (report-old-xeon and ivy-bridge)"
    assert "Plan on profile report-old-xeon (CPU as the profile describes it" in out


def test_a_cpu_claim_on_a_report_that_names_no_cpu_reads_as_a_sentence(
        setup: tuple[Path, Environment], tmp_path: Path) -> None:
    """Issue 36: the report's words for an unnamed CPU were pasted in as if they were a
    CPU ("the CPU model does not know not named in the report"), with advice (name one of
    its cores) that cannot be followed honestly when the report names none."""
    spec_path, env = setup
    doc = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    doc["machines"]["mystery"]["cpu"] = "not named in the report"
    spec_path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    spec = load_spec(spec_path)
    assert not spec.machines["mystery"].cpu_named and spec.machines["lab"].cpu_named
    text = check(spec, env, tmp_path / "results", facts(UNKNOWN_CPU)).text()
    line = lines_by_claim(text)["cpu-beyond-model"]
    assert line == (
        "  cpu-beyond-model: cannot be judged here: [cpu] its size depends on the CPU, and "
        "the report names no CPU for machines.mystery (its cpu reads 'not named in the "
        "report'), so the CPU model cannot say how large the ratio was there. What can still be "
        "judged: a claim that holds on any CPU (depends_on: code-path) is judged as "
        "measured; if the report names the CPU or its core elsewhere (a later comment, a "
        "linked log), write it in machines.mystery.cpu or machines.mystery.core")
    assert "does not know not named" not in text and "differs from not named" not in text
