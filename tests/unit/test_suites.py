"""Suites and CPU profiles in matrix.yaml, and the speed commands a suite becomes."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.session import interleaved
from openssl_matrix.measure.speedcmd import has_option, speed_invocations

ROOT = Path(__file__).resolve().parents[2]


def matrix_with(tmp_path: Path, suite: dict[str, Any], profiles: dict[str, Any] | None = None,
                ) -> Path:
    data: dict[str, Any] = {"versions": {"1.1.1w": {"sha256": "a" * 64},
                                         "3.0.20": {"sha256": "b" * 64}},
                            "suites": {"s": suite}}
    if profiles is not None:
        data["profiles"] = profiles
    p = tmp_path / "m.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def test_shipped_suites_and_profiles_load() -> None:
    m = load_matrix(ROOT / "matrix.yaml")
    names = {s.name for s in m.suites}
    assert {"blog", "aesni-on-off", "evp-vs-legacy", "engines", "decrypt"} <= names
    assert m.suite("engines").engines == (None, "afalg", "padlock")
    assert m.suite("evp-vs-legacy").paths == ("evp", "legacy")
    assert m.suite("decrypt").directions == ("encrypt", "decrypt")
    assert m.suite("aes8k-repeat").repeat == 5
    profiles = {p.name: p for p in m.profiles}
    assert {"ryzen", "via-luke", "xeon-e3-1220", "ivy-bridge", "westmere", "amd-a10"} <= \
        set(profiles)
    assert profiles["via-luke"].lacks == ("nopl", "sse2")
    assert profiles["ryzen"].clock_ghz == 3.6


def test_new_suite_keys(tmp_path: Path) -> None:
    m = load_matrix(matrix_with(tmp_path, {
        "algorithms": ["aes-128-cbc"], "evp": "both", "decrypt": True, "engine": "afalg",
        "provider": ["default"], "multi": 2, "repeat": 3, "noise_threshold": 0.1,
        "masks": [{"name": "native"}, {"name": "no-sha", "disable": ["sha"]}]}))
    s = m.suite("s")
    assert s.paths == ("evp", "legacy") and s.directions == ("decrypt",)
    assert s.engines == ("afalg",) and s.providers == ("default",)
    assert (s.multi, s.repeat, s.noise_threshold) == ((2,), 3, 0.1)
    assert s.masks[1].disable == ("sha",)


@pytest.mark.parametrize(("suite", "message"), [
    ({"evp": "maybe"}, "suites.s.evp: expected true, false or both"),
    ({"masks": [{"name": "x", "disable": ["aes"]}]},
     "suites.s.masks[0].disable[0]: 'aes' is not a capability"),
    ({"masks": [{"name": "x", "disable": ["aesni"], "ia32cap": "~0x2"}]}, "not both"),
    ({"engine": ["afalg", "afalg"]}, "listed twice"),
    ({"noise_threshold": 5}, "expected a fraction"),
    ({"repeat": 0}, "positive whole number"),
    ({"engnie": "afalg"}, "perhaps you meant 'engine'"),
])
def test_suite_errors_name_the_key(tmp_path: Path, suite: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        load_matrix(matrix_with(tmp_path, {"algorithms": ["aes-128-cbc"], **suite}))
    assert message in str(exc.value)


def test_profile_keys_and_errors(tmp_path: Path) -> None:
    good = {"lab": {"docker_host": "ssh://bench@ryzen.lab", "cpuset": "2-3", "lacks": ["nopl"]},
            "ctx": {"docker_host": "context:ryzen"}}
    m = load_matrix(matrix_with(tmp_path, {"algorithms": ["md5"]}, good))
    lab = m.profile("lab")
    assert (lab.docker_host, lab.cpuset, lab.lacks) == ("ssh://bench@ryzen.lab", "2-3",
                                                        ("nopl",))
    with pytest.raises(ConfigError, match=r"docker_host: 'ryzen\.lab' is not a Docker"):
        load_matrix(matrix_with(tmp_path, {"algorithms": ["md5"]},
                                {"x": {"docker_host": "ryzen.lab"}}))
    with pytest.raises(ConfigError, match=r"profiles\.x\.cpuset"):
        load_matrix(matrix_with(tmp_path, {"algorithms": ["md5"]}, {"x": {"cpuset": "0;1"}}))


def test_options_by_version() -> None:
    assert has_option("-seconds", "1.1.1w") and not has_option("-seconds", "1.1.0l")
    assert has_option("-engine", "3.6.3") and not has_option("-engine", "4.0.0")
    assert has_option("-provider", "3.0.0") and not has_option("-provider", "1.1.1w")
    assert has_option("-multi", "0.9.8s") and has_option("-decrypt", "1.0.1e")


def test_invocations_cover_masks_engines_paths_directions(tmp_path: Path) -> None:
    m = load_matrix(matrix_with(tmp_path, {
        "algorithms": ["aes-128-cbc", "sha256"], "evp": "both", "decrypt": "both",
        "engine": ["none", "afalg"], "seconds": 1, "bytes": 8192, "multi": 2,
        "masks": [{"name": "native"}, {"name": "no-aesni", "disable": ["aesni"]}]}))
    inv, notes = speed_invocations("1.1.1w", m.suite("s"))
    names = [i.name for i in inv]
    # 2 masks x 2 engines x (evp: 2 directions x 2 algs + legacy: 1 group)
    assert len(inv) == 2 * 2 * (2 * 2 + 1)
    assert "native--aes-128-cbc" in names and "no-aesni--afalg--decrypt--sha256" in names
    assert "native--legacy--aes-128-cbc+sha256" in names
    assert any("-decrypt applies to EVP ciphers only" in n for n in notes)
    one = next(i for i in inv if i.name == "no-aesni--afalg--decrypt--aes-128-cbc")
    # with -multi the parent's human table is read (its -mr sums carry no +H of their own)
    assert one.command == ("openssl", "speed", "-elapsed", "-seconds", "1", "-bytes",
                           "8192", "-multi", "2", "-engine", "afalg", "-decrypt", "-evp",
                           "aes-128-cbc")
    assert one.env == {"OPENSSL_ia32cap": "~0x200000000000000:~0x0"}
    assert one.exec_command[:2] == ["/bin/sh", "-c"] and one.exec_command[4:] == \
        list(one.command[1:])
    legacy = next(i for i in inv if i.name == "native--legacy--aes-128-cbc+sha256")
    assert legacy.command[-2:] == ("aes-128-cbc", "sha256") and "-evp" not in legacy.command


def test_invocations_leave_out_what_a_version_lacks(tmp_path: Path) -> None:
    m = load_matrix(matrix_with(tmp_path, {
        "algorithms": ["idea-cbc"], "seconds": 1, "bytes": 8192, "engine": ["none", "afalg"],
        "provider": ["legacy", "default"],
        "masks": [{"name": "native"}, {"name": "no-sha", "disable": ["sha"]}]}))
    inv, notes = speed_invocations("1.0.1e", m.suite("s"))
    assert [i.name for i in inv] == ["native--idea-cbc", "native--afalg--idea-cbc"]
    assert all("-seconds" not in i.command and "-provider" not in i.command for i in inv)
    text = " | ".join(notes)
    assert "-seconds is not in 1.0.1e" in text and "-provider is not in 1.0.1e" in text
    assert "no-sha" in text and "left out" in text
    inv, notes = speed_invocations("4.0.0", m.suite("s"))
    assert all("-engine" not in i.command for i in inv)
    assert any("-engine is not in 4.0.0" in n for n in notes)
    assert inv[0].command[6:12] == ("-bytes", "8192", "-provider", "legacy", "-provider",
                                    "default")


def test_interleaved_rounds_never_repeat_a_variant_back_to_back() -> None:
    order: list[tuple[int, Any]] = interleaved(["a", "b", "c"], 3)  # type: ignore[list-item]
    assert [(r, v) for r, v in order] == [
        (1, "a"), (1, "b"), (1, "c"), (2, "b"), (2, "c"), (2, "a"), (3, "c"), (3, "a"),
        (3, "b")]
    seq = [v for _, v in order]
    assert all(x != y for x, y in itertools.pairwise(seq))
    two: list[Any] = [v for _, v in interleaved(["a", "b"], 3)]  # type: ignore[list-item]
    assert two == ["a", "b", "a", "b", "a", "b"]
    one: list[Any] = [v for _, v in interleaved(["a"], 2)]  # type: ignore[list-item]
    assert one == ["a", "a"]


def test_documented_lab_profiles_load(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "matrix.md").read_text()
    block = next(b.split("```", 1)[0] for b in text.split("```yaml\n")[1:]
                 if b.startswith("profiles:"))
    profiles = yaml.safe_load(block)["profiles"]
    m = load_matrix(matrix_with(tmp_path, {"algorithms": ["md5"]}, profiles))
    assert m.profile("ryzen").docker_host == "ssh://bench@ryzen.lab"
    assert m.profile("xeon-e3-1220").march == "sandybridge"
