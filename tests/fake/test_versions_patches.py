"""Versions, base images, -march, engines and patches in the matrix model (pure)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from openssl_matrix.cli.commands.list import run as cmd_list
from openssl_matrix.core.errors import ConfigError
from openssl_matrix.core.resources import project_patches
from openssl_matrix.engine.backend import RunLimits, RunResult
from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.model import variant_id
from openssl_matrix.matrix.patches import (
    PatchError,
    endbr32_warning,
    load_patches,
    select_patches,
    version_key,
    version_matches,
)
from openssl_matrix.results.tree import ResultsTree

from ..conftest import make_tarball
from ..fakes import FakeBackend

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, data: dict[str, Any]) -> Path:
    data.setdefault("suites", {"s": {"algorithms": ["md5"]}})
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


VIA = {"via-luke": {"description": "VIA C3-2", "vendor": "CentaurHauls", "march": "c3-2"}}


# --- the default selection ------------------------------------------------------------

def test_default_build_is_four_variants_the_rest_opt_in() -> None:
    m = load_matrix(ROOT / "matrix.yaml")
    assert [v.id for v in m.variants] == ["1.1.1w-asm-x86_64", "1.1.1w-no-asm-x86_64",
                                          "3.0.20-asm-x86_64", "3.0.20-no-asm-x86_64"]
    assert m.select(None) == list(m.variants)
    assert len(m.all_variants) > 30
    opt_in = m.select("0.9.8y-*")
    assert [v.id for v in opt_in] == ["0.9.8y-asm-x86_64", "0.9.8y-no-asm-x86_64"]
    assert not any(v.default for v in opt_in)


def test_default_variants_pattern_must_match(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"default_variants\[0\]: '9\.9\.9-\*' matches no"):
        load_matrix(write(tmp_path, {"versions": {"1.1.1w": {}},
                                     "default_variants": ["9.9.9-*"]}))


# --- base images ------------------------------------------------------------------------

def test_base_image_precedence_and_i386_twin(tmp_path: Path) -> None:
    m = load_matrix(write(tmp_path, {
        "defaults": {"base_image": "debian:bullseye"},
        "versions": {"1.1.1w": {}, "3.0.20": {"base_image": {"i386": "my/i386-image:1"}}},
        "axes": {"arch": ["x86_64", "i386"]},
        "include": [{"version": "1.1.1w", "march": "native", "base_image": "local/x:1"}],
    }))
    images = {v.id: v.base_image for v in m.all_variants}
    assert images == {
        "1.1.1w-asm-x86_64": "debian:bullseye", "1.1.1w-asm-i386": "i386/debian:bullseye",
        "3.0.20-asm-x86_64": "debian:bullseye", "3.0.20-asm-i386": "my/i386-image:1",
        "1.1.1w-asm-x86_64-march-native": "local/x:1"}


def test_every_release_builds_on_bookworm_unless_the_matrix_says_otherwise(
        tmp_path: Path) -> None:
    m = load_matrix(write(tmp_path, {"versions": {"0.9.8y": {}},
                                     "axes": {"arch": ["x86_64", "i386"]}}))
    got = {v.id: v.base_image for v in m.all_variants}
    assert got == {"0.9.8y-asm-x86_64": "debian:bookworm",
                   "0.9.8y-asm-i386": "i386/debian:bookworm"}
    # the era's own Debian release is opt-in, named in the matrix
    era = load_matrix(write(tmp_path, {"versions": {"1.0.1e": {
        "base_image": "debian/eol:wheezy"}}}))
    assert [v.base_image for v in era.all_variants] == ["debian/eol:wheezy"]


def test_non_library_image_has_no_derived_i386_twin(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"give both: base_image: \{x86_64: debian/eol:wheezy"):
        load_matrix(write(tmp_path, {"defaults": {"base_image": "debian/eol:wheezy"},
                                     "versions": {"1.0.1e": {}},
                                     "axes": {"arch": ["i386"]}}))


# --- -march, engines, cpu -------------------------------------------------------------

@pytest.mark.parametrize(("arch", "march", "message"), [
    ("x86_64", "c3-2", "-march=c3-2 is a 32-bit CPU"),
    ("i386", "x86-64-v3", "-march=x86-64-v3 is an x86-64 level"),
])
def test_march_that_cannot_build_the_arch(tmp_path: Path, arch: str, march: str,
                                          message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_matrix(write(tmp_path, {"defaults": {"base_image": "debian:bookworm"},
                                     "versions": {"3.0.20": {}},
                                     "axes": {"arch": [arch], "march": [march]}}))


def test_engines_are_checked_per_version(tmp_path: Path) -> None:
    with pytest.raises(ConfigError,
                       match=re.escape("afalg engine exists from OpenSSL 1.1.0, not in 1.0.1e")):
        load_matrix(write(tmp_path, {"versions": {"1.0.1e": {"engines": ["afalg"]}}}))
    with pytest.raises(ConfigError, match="perhaps you meant 'padlock'"):
        load_matrix(write(tmp_path, {"versions": {"1.1.1w": {"engines": ["padlok"]}}}))


def test_cpu_profile_sets_march_and_marks_sigill_risk(tmp_path: Path) -> None:
    m = load_matrix(write(tmp_path, {
        "defaults": {"base_image": "debian:bookworm"},
        "versions": {"1.1.0l": {}, "3.0.20": {}},
        "profiles": VIA,
        "include": [{"version": "1.1.0l", "arch": "i386", "cpu": "via-luke"},
                    {"version": "3.0.20", "arch": "i386", "march": "i586"}],
    }))
    by_id = {v.id: v for v in m.all_variants}
    c3 = by_id["1.1.0l-asm-i386-march-c3-2"]
    assert c3.march == "c3-2" and c3.sigill_cpus == ("via-luke",)
    assert by_id["3.0.20-asm-i386-march-i586"].sigill_cpus == ("-march=i586",)
    assert by_id["3.0.20-asm-x86_64"].sigill_cpus == ()
    assert c3.describe()["sigill_cpus"] == ["via-luke"]


def test_variant_id_is_a_valid_docker_name_part() -> None:
    assert variant_id("3.0.20", "asm", "i386", "default", ("-D__CET__",)) == \
        "3.0.20-asm-i386-d-cet"
    assert variant_id("3.0.2", "asm", "i386", "c3-2", (), ("no-endbr32",), ("padlock",)) == \
        "3.0.2-asm-i386-march-c3-2-patch-no-endbr32-engine-padlock"


# --- patches ------------------------------------------------------------------------

def test_version_order_and_specs() -> None:
    order = ["0.9.8n", "0.9.8y", "0.9.8z", "0.9.8za", "1.0.0", "1.0.1", "1.0.1c", "1.0.1e",
             "1.0.2", "1.1.0l", "1.1.1w", "3.0.2", "3.0.20"]
    assert sorted(order, key=version_key) == order
    assert version_matches("3.0.3", ">=3.0.0,<3.0.4")
    assert not version_matches("3.0.20", ">=3.0.0,<3.0.4")
    assert version_matches("0.9.8y", "0.9.8*") and not version_matches("1.0.0", "0.9.8*")


def test_project_patches_load_and_each_says_why() -> None:
    index = load_patches([project_patches()])
    assert "no-endbr32" in index
    for p in index.values():
        assert p.why and p.versions and p.path.is_file() and len(p.sha256) == 64
    endbr = index["no-endbr32"]
    assert endbr.apply == "on-request" and endbr.arches == ("i386",)
    assert endbr.applies_to("3.0.2", "i386") and endbr.applies_to("3.0.20", "i386")
    assert not endbr.applies_to("1.1.1w", "i386") and not endbr.applies_to("3.0.20", "x86_64")


def test_requested_patch_must_fit(tmp_path: Path) -> None:
    base: dict[str, Any] = {"defaults": {"base_image": "debian:bookworm"},
                            "versions": {"1.1.1w": {}, "3.0.20": {}}}
    with pytest.raises(ConfigError, match=r"include\[0\]: 3.0.20-asm-x86_64-patch-no-endbr32: "
                       r"patch 'no-endbr32' does not apply to OpenSSL 3.0.20 on x86_64"):
        load_matrix(write(tmp_path, {**base, "include": [
            {"version": "3.0.20", "patches": ["no-endbr32"]}]}))
    with pytest.raises(ConfigError,
                       match=re.escape("no patch named 'endbr32' (perhaps 'no-endbr32'?)")):
        load_matrix(write(tmp_path, {**base, "include": [
            {"version": "3.0.20", "arch": "i386", "patches": ["endbr32"]}]}))


def _patch_dir(tmp_path: Path, name: str, meta: dict[str, Any], diff: str = "--- a\n") -> Path:
    d = tmp_path / "mypatches"
    d.mkdir(exist_ok=True)
    (d / f"{name}.yaml").write_text(yaml.safe_dump(meta))
    (d / f"{name}.patch").write_text(diff)
    return d


def test_auto_patches_apply_where_they_match_and_bad_metadata_is_named(tmp_path: Path) -> None:
    d = _patch_dir(tmp_path, "perl-inc", {"why": "perl 5.26 dropped . from @INC",
                                          "versions": ["0.9.8*"], "apply": "auto"})
    m = load_matrix(write(tmp_path, {"versions": {"0.9.8y": {}, "1.0.1e": {}},
                                     "defaults": {"base_image": "debian:bookworm"},
                                     "patches_dirs": ["mypatches"]}))
    got = {v.id: [p.name for p in v.patches] for v in m.all_variants}
    assert got["0.9.8y-asm-x86_64"][-1] == "perl-inc"
    assert "perl-inc" not in got["1.0.1e-asm-x86_64"]
    (d / "nometa.patch").write_text("x")
    with pytest.raises(PatchError,
                       match=re.escape("nometa.patch: has no metadata file nometa.yaml")):
        load_patches([d])
    (d / "nometa.patch").unlink()
    (d / "bad.yaml").write_text(yaml.safe_dump({"versions": ["1.*"]}))
    (d / "bad.patch").write_text("x")
    with pytest.raises(PatchError, match=re.escape("bad.yaml: why: say what goes wrong")):
        load_patches([d])


def test_two_patches_for_one_version_are_ambiguous(tmp_path: Path) -> None:
    _patch_dir(tmp_path, "a", {"provides": "fix", "why": "w", "versions": [">=1.0.0"]})
    d = _patch_dir(tmp_path, "b", {"provides": "fix", "why": "w", "versions": ["1.0.1*"]})
    index = load_patches([d])
    assert [p.name for p in select_patches(index, "1.0.0", "x86_64", ["fix"])] == ["a"]
    with pytest.raises(ValueError, match=re.escape("ambiguous for 1.0.1e on x86_64: a, b")):
        select_patches(index, "1.0.1e", "x86_64", ["fix"])


# --- the ENDBR32 flag in build record, build summary and list --------------------------

class Endbr32Backend(FakeBackend):
    """Reports an ENDBR32 count for the built image, as buildinfo.sh does."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.images["i386/debian:bookworm"] = "sha256:base386"
        self.count = count

    def run(self, image: str, command: Sequence[str], *, env: Mapping[str, str] | None = None,
            limits: RunLimits | None = None) -> RunResult:
        res = super().run(image, command, env=env, limits=limits)
        if command[:2] == ["/bin/sh", "-c"] and "openssl-matrix" in command[2]:
            out = res.stdout.replace("==> endbr32.txt\n0\n", f"==> endbr32.txt\n{self.count}\n")
            out += "==> patches.txt\nno-endbr32:0123\n"
            return RunResult(command=res.command, env=res.env, stdout=out, stderr="",
                             exit_code=0, started=res.started, ended=res.ended, seconds=1.0)
        return res


@pytest.mark.parametrize("count", [170, 0])
def test_endbr32_flag_for_a_c3_variant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str], count: int) -> None:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    sha = make_tarball(tmp_path / "openssl-3.0.20.tar.gz", "3.0.20")
    path = write(tmp_path, {
        "defaults": {"base_image": "debian:bookworm"},
        "versions": {"3.0.20": {"sha256": sha, "urls": [f"file://{tmp_path}/openssl-3.0.20.tar.gz"]}},
        "profiles": VIA,
        "include": [{"version": "3.0.20", "arch": "i386", "cpu": "via-luke"}],
    })
    m = load_matrix(path, default_urls=default_urls)
    variant = m.select("*-c3-2")
    tree = ResultsTree(tmp_path / "results")
    out = Builder(m, Endbr32Backend(count), tree, workdir=tmp_path / "work").build(variant)
    record = out[0].record
    assert record["endbr32"] == count
    assert record["patches_in_image"] == ["no-endbr32:0123"]
    warning = record["endbr32_warning"]
    if count:
        assert warning == ("3.0.20-asm-i386-march-c3-2: libcrypto has 170 ENDBR32 "
                           "instruction(s): will die with SIGILL on that CPU (via-luke); add "
                           "'no-endbr32' to the variant's patches and rebuild")
    else:
        assert warning is None
    saved = json.loads(next((tmp_path / "results/_builds").glob("*/*/build.json")).read_text())
    assert saved["endbr32_warning"] == warning
    assert saved["variant"]["sigill_cpus"] == ["via-luke"]
    cmd_list(target="", matrix=str(path), results=str(tmp_path / "results"), json=False)
    listing = capsys.readouterr().out
    assert ("will die with SIGILL on that CPU (via-luke)" in listing) is bool(count)
    assert f"endbr32={count}" in listing


def test_endbr32_warning_only_for_cpus_without_it() -> None:
    assert endbr32_warning("x", (), 170) is None
    assert endbr32_warning("x", ("via-luke",), 0) is None
    assert endbr32_warning("x", ("via-luke",), None) is None


def test_missing_era_image_says_how_to_build_without_a_registry(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = load_matrix(write(tmp_path, {"versions": {"1.0.1e": {
        "sha256": "a" * 64, "base_image": "debian/eol:wheezy"}}}))
    assert m.variants[0].base_image == "debian/eol:wheezy"
    builder = Builder(m, FakeBackend(), ResultsTree(tmp_path / "r"), workdir=tmp_path / "w")
    (outcome,) = builder.build(list(m.variants))
    assert outcome.status == "failed"
    assert "base image debian/eol:wheezy is not present" in str(outcome.error)
    assert "set base_image: debian:bookworm for the version" in capsys.readouterr().err


def test_project_compat_patch_for_0_9_8_on_i386(tmp_path: Path) -> None:
    m = load_matrix(write(tmp_path, {"defaults": {"base_image": "debian:bookworm"},
                                     "versions": {"0.9.8y": {}, "1.0.1e": {}},
                                     "axes": {"arch": ["x86_64", "i386"]}}))
    got = {v.id: [p.name for p in v.patches] for v in m.all_variants}
    assert got == {"0.9.8y-asm-x86_64": [], "0.9.8y-asm-i386": ["perl-inc-dot"],
                   "1.0.1e-asm-x86_64": [], "1.0.1e-asm-i386": []}
