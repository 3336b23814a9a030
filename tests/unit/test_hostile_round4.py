"""Issue 35, "hostile inputs, round four": each numbered defect found by the probe, tried
the way the probe tried it (through the command line), with the behaviour the docs
promise (docs/exit-codes.md, docs/robustness.md, docs/matrix.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .test_hostile import ROOT, run


def cli(*args: str, cwd: Path, timeout: float = 15) -> subprocess.CompletedProcess[str]:
    """``python -m openssl_matrix ARGS`` in its own process (a hang ends at ``timeout``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DOCKER_HOST": "unix:///nonexistent.sock",
           "OPENSSL_MATRIX_CACHE": str(cwd / ".cache")}
    return subprocess.run([sys.executable, "-m", "openssl_matrix", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


# -- 1: an alias inside the value it names ------------------------------------------------

SELF_ALIASES = {
    "sequence": "versions: &v [*v]\n",
    "mapping": "versions: &v {a: *v}\n",
    "merge-key": "versions: &v {<<: *v}\n",
    "deep": "versions: &v {a: [{b: [*v]}]}\n",
}


@pytest.mark.parametrize("text", SELF_ALIASES.values(), ids=SELF_ALIASES)
def test_a_matrix_whose_alias_refers_to_itself_is_refused_at_once(tmp_path: Path,
                                                                    text: str) -> None:
    (tmp_path / "m.yaml").write_text(text)
    done = cli("list", "--matrix", "m.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "m.yaml" in done.stderr and "refers to the value that holds it" in done.stderr


def test_a_report_spec_whose_alias_refers_to_itself_is_refused_at_once(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text("id: r\ntitle: &t [x, *t]\n")
    done = cli("reproduce", "r.yaml", "--check", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "r.yaml" in done.stderr and "refers to the value that holds it" in done.stderr


def test_a_lock_file_whose_alias_refers_to_itself_is_refused(tmp_path: Path) -> None:
    from openssl_matrix.build.sources import read_pins
    from openssl_matrix.core.errors import SourceError

    lock = tmp_path / "m.lock"
    lock.write_text("sources: &s {x: *s}\n")
    with pytest.raises(SourceError, match="refers to the value that holds it"):
        read_pins(lock)


def test_shared_aliases_are_not_taken_for_a_cycle() -> None:
    from openssl_matrix.core.yamlload import load_yaml

    doc = load_yaml("a: &a [1, 2]\nb: [*a, *a, {c: *a}]\nd: &d {e: 1}\nf: {<<: *d, g: 2}\n")
    assert doc["b"] == [[1, 2], [1, 2], {"c": [1, 2]}] and doc["f"] == {"e": 1, "g": 2}
