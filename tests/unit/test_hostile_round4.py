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


# -- 4, 5: byte-order marks and UTF-16 ------------------------------------------------------

PASTE = ("OpenSSL 1.0.1e 11 Feb 2013\n"
         "type 16 bytes 64 bytes 256 bytes 1024 bytes 8192 bytes\n"
         "aes-128-cbc 305049.90k 327331.20k 332573.95k 334071.81k 333987.84k\n")
ENCODED = {
    "utf-8-bom": b"\xef\xbb\xbf" + PASTE.encode(),
    "utf-16-le-bom": b"\xff\xfe" + PASTE.encode("utf-16-le"),
    "utf-16-be-bom": b"\xfe\xff" + PASTE.encode("utf-16-be"),
    "utf-32-bom": PASTE.encode("utf-32"),
    "two-pastes-one-bom-each": (b"\xef\xbb\xbf" + PASTE.encode()) * 2,
}


@pytest.mark.parametrize("raw", ENCODED.values(), ids=ENCODED)
def test_a_paste_with_a_byte_order_mark_keeps_its_version_line(tmp_path: Path,
                                                               raw: bytes) -> None:
    (tmp_path / "p.txt").write_bytes(raw)
    code, out, err = run("parse", str(tmp_path / "p.txt"))
    assert code == 0, err
    assert out.startswith("run 1: OpenSSL 1.0.1e 11 Feb 2013\n"), out
    assert "no version header" not in out and "305,049,900" in out


def test_an_import_of_a_paste_with_a_utf8_bom_is_filed_under_its_version(
        tmp_path: Path) -> None:
    (tmp_path / "p.txt").write_bytes(ENCODED["utf-8-bom"])
    code, _out, err = run("import", str(tmp_path / "p.txt"), as_="bom",
                         results=str(tmp_path / "results"))
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "results" / "ref-bom").iterdir()
                  if p.is_dir()) == ["1.0.1e"]


@pytest.mark.parametrize(("codec", "name"), [("utf-16-le", "UTF-16LE"),
                                            ("utf-16-be", "UTF-16BE")])
def test_utf16_without_a_byte_order_mark_is_refused_by_its_encoding(tmp_path: Path,
                                                                   codec: str,
                                                                   name: str) -> None:
    (tmp_path / "p.txt").write_bytes(PASTE.encode(codec))
    for command, flags in (("parse", {}), ("import", {"as_": "x"})):
        code, _out, err = run(command, str(tmp_path / "p.txt"), **flags,
                             results=str(tmp_path / "results"))
        assert code == 8, (command, err)
        assert f"looks like {name} text without a byte-order mark" in err, err
        assert "iconv -f UTF-16" in err and "no `openssl speed` table" not in err
    assert not (tmp_path / "results").exists()


def test_a_paste_that_is_not_what_its_byte_order_mark_says_is_refused_by_name(
        tmp_path: Path) -> None:
    (tmp_path / "p.txt").write_bytes(b"\xff\xfe" + PASTE.encode("utf-16-le") + b"\x00\xdc")
    code, _out, err = run("parse", str(tmp_path / "p.txt"))
    assert code == 8 and "byte-order mark of UTF-16 (little-endian)" in err, err
