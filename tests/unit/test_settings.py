"""One settings resolution (core/settings.py, issue 34 item 4): flags, then the
environment, then the matrix's ``settings:``, then the defaults — each source's precedence,
the cache folder's rule, and the command line reading the same settings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openssl_matrix.cli.paths import settings_of
from openssl_matrix.core.errors import ConfigError
from openssl_matrix.core.settings import (
    DEFAULT_MATRIX,
    DEFAULT_RESULTS,
    ENVIRONMENT,
    resolve_settings,
)
from openssl_matrix.matrix.check import matrix_settings
from openssl_matrix.matrix.load import load_matrix

REPO = Path(__file__).resolve().parents[2]
HOME = Path("/home/someone")


def test_defaults_when_nothing_is_set() -> None:
    s = resolve_settings({}, {}, None, home=HOME)
    assert s.matrix == Path(DEFAULT_MATRIX)
    assert s.results == Path(DEFAULT_RESULTS)
    assert s.cache == HOME / ".cache" / "openssl-matrix"
    assert s.lock_dir is None and s.gpg_keyring is None and s.keep_containers is False
    assert s.origin("results") == "default" and s.origin("cache") == "default"


def test_the_matrix_settings_beat_the_defaults_and_are_read_beside_the_matrix() -> None:
    s = resolve_settings({"matrix": "lab/m.yaml"}, {}, {"results": "out"}, home=HOME)
    assert s.matrix == Path("lab/m.yaml")
    assert s.results == Path("lab/out")
    assert s.origin("results") == "matrix settings.results"
    absolute = resolve_settings({}, {}, {"results": "/srv/results"}, home=HOME)
    assert absolute.results == Path("/srv/results")


def test_the_environment_beats_the_matrix() -> None:
    env = {ENVIRONMENT["results"]: "/env/results", ENVIRONMENT["matrix"]: "/env/m.yaml"}
    s = resolve_settings({}, env, {"results": "out"}, home=HOME)
    assert s.results == Path("/env/results")
    assert s.matrix == Path("/env/m.yaml")
    assert s.origin("results") == f"environment {ENVIRONMENT['results']}"


def test_flags_beat_the_environment_and_an_empty_flag_is_unset() -> None:
    env = {ENVIRONMENT["results"]: "/env/results", ENVIRONMENT["matrix"]: "/env/m.yaml"}
    s = resolve_settings({"matrix": "m.yaml", "results": "r"}, env, {"results": "out"},
                         home=HOME)
    assert (s.matrix, s.results) == (Path("m.yaml"), Path("r"))
    assert s.origin("results") == "flag --results" and s.origin("matrix") == "flag --matrix"
    unset = resolve_settings({"matrix": "", "results": None}, env, None, home=HOME)
    assert (unset.matrix, unset.results) == (Path("/env/m.yaml"), Path("/env/results"))


def test_the_matrix_settings_are_read_from_the_file_the_flags_name() -> None:
    seen: list[Path] = []

    def read(path: Path) -> dict[str, str]:
        seen.append(path)
        return {"results": "there"}

    s = resolve_settings({"matrix": "a/b.yaml"}, {}, read_matrix=read, home=HOME)
    assert seen == [Path("a/b.yaml")]
    assert s.results == Path("a/there")


def test_the_cache_folder_rule_in_its_one_place() -> None:
    assert resolve_settings({}, {"XDG_CACHE_HOME": "/xdg"}, None, home=HOME).cache \
        == Path("/xdg/openssl-matrix")
    # a relative XDG_CACHE_HOME is ignored, as the XDG base-directory spec says
    assert resolve_settings({}, {"XDG_CACHE_HOME": "rel"}, None, home=HOME).cache \
        == HOME / ".cache" / "openssl-matrix"
    both = {"XDG_CACHE_HOME": "/xdg", ENVIRONMENT["cache"]: "/explicit"}
    s = resolve_settings({}, both, None, home=HOME)
    assert s.cache == Path("/explicit")
    assert s.origin("cache") == f"environment {ENVIRONMENT['cache']}"


def test_the_host_settings_come_from_the_environment() -> None:
    env = {ENVIRONMENT["lock_dir"]: "/locks", ENVIRONMENT["gpg_keyring"]: "/keys/k.gpg",
           ENVIRONMENT["keep_containers"]: "1"}
    s = resolve_settings({}, env, None, home=HOME)
    assert (s.lock_dir, s.gpg_keyring, s.keep_containers) \
        == (Path("/locks"), Path("/keys/k.gpg"), True)
    for no in ("0", "no", "false", "off", ""):
        assert not resolve_settings({}, {ENVIRONMENT["keep_containers"]: no}, None,
                                    home=HOME).keep_containers


@pytest.mark.parametrize("bad, words", [
    (["results"], "expected a mapping"),
    ({"cache": "/c"}, "not a setting a matrix can hold"),
    ({"results": 3}, "expected a folder path"),
    ({"results": "  "}, "expected a folder path"),
])
def test_a_matrix_settings_section_that_is_wrong_names_the_key(bad: Any, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        resolve_settings({"matrix": "m.yaml"}, {}, bad, home=HOME)


def test_the_matrix_file_carries_settings_and_loading_checks_them(tmp_path: Path) -> None:
    text = (REPO / "matrix.yaml").read_text()
    good = tmp_path / "matrix.yaml"
    good.write_text(text + "\nsettings:\n  results: lab-results\n")
    load_matrix(good)  # the key is part of the matrix's schema
    assert matrix_settings(good) == {"results": "lab-results"}
    assert settings_of(str(good)).results == tmp_path / "lab-results"
    bad = tmp_path / "bad.yaml"
    bad.write_text(text + "\nsettings:\n  reslts: x\n")
    with pytest.raises(ConfigError, match=r"settings\.reslts"):
        load_matrix(bad)
    assert matrix_settings(tmp_path / "absent.yaml") is None


def test_the_command_line_files_into_the_folder_the_environment_names(tmp_path: Path) -> None:
    sample = REPO / "tests" / "fixtures" / "speed" / "published" / "elinux-rpi-0.9.8o-1.0.1c.txt"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO),
           ENVIRONMENT["results"]: str(tmp_path / "from-env")}
    done = subprocess.run([sys.executable, "-m", "openssl_matrix", "import", str(sample),
                           "--as", "envtest", "--matrix", str(REPO / "matrix.yaml")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "from-env" / "ref-envtest").is_dir()
    assert not (tmp_path / "results").exists()


def test_a_results_folder_through_a_file_names_the_variable_that_gave_it(
        tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO),
           ENVIRONMENT["results"]: str(tmp_path / "notes.txt" / "results")}
    done = subprocess.run([sys.executable, "-m", "openssl_matrix", "export", "--matrix",
                           str(REPO / "matrix.yaml")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 11, done.stderr
    assert f"environment {ENVIRONMENT['results']}" in done.stderr
    assert (tmp_path / "notes.txt").read_text() == "mine"
