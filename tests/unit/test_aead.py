"""AEAD suites and -multi process counts: the command lines and refusals per version, the
matrix keys, and the real -aead / -multi outputs of the 1.1.1w and 3.0.20 images."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.matrix import aead
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.multiacct import balance, children
from openssl_matrix.measure.speedcmd import speed_invocations
from openssl_matrix.parse import figure_records, parse_speed

from .test_suites import ROOT, matrix_with

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "speed"
TRIO = ["aes-128-gcm", "aes-256-gcm", "chacha20-poly1305"]


def suite(tmp_path: Path, **keys: Any) -> Any:
    body: dict[str, Any] = {"kind": "aead", "algorithms": TRIO, "seconds": 1, **keys}
    return load_matrix(matrix_with(tmp_path, body)).suite("s")


@pytest.mark.parametrize(("version", "method", "refused"), [
    ("1.0.1e", "evp", {"chacha20-poly1305", "aes-128-ccm", "aes-128-ocb"}),
    ("1.1.0l", "evp", {"aes-128-ccm"}),
    ("1.1.1w", "aead", set()),
    ("3.0.20", "aead", set()),
])
def test_plan_per_version(version: str, method: str, refused: set[str]) -> None:
    p = aead.plan(version, [*TRIO, "aes-128-ccm", "aes-128-ocb"])
    assert {r.algorithm for r in p.refused} == refused
    assert {r.method for r in p.runs} == {method}
    for r in p.runs:
        assert r.args == (("-aead", "-evp", r.algorithm) if method == "aead"
                          else ("-evp", r.algorithm))
    assert all("not measured" in r.note() and "from 1." in r.reason for r in p.refused)
    # before 1.1.1 the method is named, up front
    assert any("-aead is not in" in n for n in p.notes) == (method == "evp")


def test_caveats_say_what_each_version_runs() -> None:
    """3.x streams ChaCha20-Poly1305 even with -aead; 1.1.1's CCM loop has no AAD; 1.1.1's
    -aead -decrypt counts failed tags (all read in the release trees, aead.FACTS)."""
    cc = {r.algorithm: r.caveat for r in aead.plan("3.0.20", [*TRIO, "aes-128-ccm"]).runs}
    assert cc["aes-128-gcm"] is None and cc["aes-128-ccm"] is None
    assert "streams ChaCha20-Poly1305" in str(cc["chacha20-poly1305"])
    c1 = {r.algorithm: r.caveat for r in aead.plan("1.1.1w", [*TRIO, "aes-128-ccm"]).runs}
    assert c1["chacha20-poly1305"] is None and "CCM" in str(c1["aes-128-ccm"])
    assert "made-up tag" in str(aead.decrypt_caveat("1.1.1w", "aead"))
    assert aead.decrypt_caveat("3.0.20", "aead") is None
    assert aead.plan("1.1.1w", ["chacha20-poly1305"], ["no-chacha"]).refused[0].reason == \
        "this build was configured with no-chacha"


def test_aead_suite_command_lines(tmp_path: Path) -> None:
    s = suite(tmp_path, decrypt="both", bytes=16384,
              masks=[{"name": "native"}, {"name": "no-aesni",
                                          "disable": ["aesni", "pclmulqdq"]}])
    inv, notes = speed_invocations("1.1.1w", s)
    assert len(inv) == 2 * 2 * 3  # masks x directions x ciphers
    first = inv[0]
    assert first.command == ("openssl", "speed", "-elapsed", "-mr", "-seconds", "1",
                             "-bytes", "16384", "-aead", "-evp", "aes-128-gcm")
    assert first.path == "aead" and first.name == "native--aes-128-gcm"
    masked = [i for i in inv if i.mask.name == "no-aesni"]
    assert all(i.env == {"OPENSSL_ia32cap": "~0x200000200000000:~0x0"} for i in masked)
    dec = [i for i in inv if i.direction == "decrypt"]
    assert dec and all(i.command[-4:-2] == ("-decrypt", "-aead") for i in dec)
    assert any("made-up tag" in n for n in notes)
    old, notes = speed_invocations("1.0.1e", s)
    assert {i.path for i in old} == {"evp"} and len(old) == 2 * 2 * 2  # no ChaCha in 1.0.1
    assert old[0].command == ("openssl", "speed", "-elapsed", "-mr", "-evp", "aes-128-gcm")
    assert any("chacha20-poly1305: not measured" in n for n in notes)
    assert any("-bytes is not in 1.0.1e" in n for n in notes)


def test_multi_counts_per_version_and_cpus(tmp_path: Path) -> None:
    s = suite(tmp_path, multi=[1, "all", 4], bytes=16384, algorithms=["aes-256-gcm"])
    assert s.multi == (1, 0, 4)
    inv, notes = speed_invocations("3.0.20", s, cpus=2)
    assert [(i.multi, i.name) for i in inv] == [(1, "default--multi1--aes-256-gcm"),
                                                (2, "default--multi2--aes-256-gcm")]
    # with -multi the parent's human table is read: no -mr
    assert inv[1].command == ("openssl", "speed", "-elapsed", "-seconds", "1", "-bytes",
                              "16384", "-multi", "2", "-aead", "-evp", "aes-256-gcm")
    assert any(n.startswith("multi 4: not measured: 4 processes on 2 CPU(s)") for n in notes)
    inv, notes = speed_invocations("3.0.20", s, cpus=4)
    assert [i.multi for i in inv] == [1, 4]  # "all" is 4 here, listed once
    inv, notes = speed_invocations("3.0.20", s)
    assert [i.multi for i in inv] == [1, 4]
    assert any("multi: all: the number of CPUs is not known" in n for n in notes)


@pytest.mark.parametrize(("keys", "message"), [
    ({"multi": [1, 1]}, r"suites\.s\.multi\[1\]: 1 is listed twice"),
    ({"multi": "many"}, r"suites\.s\.multi: expected a process count or 'all'"),
    ({"multi": []}, r"suites\.s\.multi: list at least one"),
    ({"algorithms": ["aes-128-gcn"]},
     r"'aes-128-gcn' is not an AEAD cipher\n  hint: perhaps you meant 'aes-128-gcm'"),
    ({"evp": "both"}, r"suites\.s\.evp: not used by a suite with kind: aead"),
])
def test_aead_suite_errors(tmp_path: Path, keys: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        suite(tmp_path, **keys)


def test_shipped_aead_suites() -> None:
    m = load_matrix(ROOT / "matrix.yaml")
    assert m.default_suite == "blog-8k"
    assert m.suite("aead").kind == "aead" and m.suite("aead").repeat == 3
    assert m.suite("aead-multi").multi == (1, 0)
    assert set(m.suite("aead-modes").algorithms) == set(aead.ALGORITHMS)


# --- real outputs of the images --------------------------------------------------------


def load(case: str, version: str) -> tuple[str, Any]:
    out = (FIX / f"{case}.stdout").read_text()
    err = (FIX / f"{case}.stderr").read_text()
    return out, parse_speed(out, err, version=version, evp=True)


def test_real_aead_mr_record_sizes() -> None:
    _, run = load("real-1.1.1w/mr-aead-gcm", "1.1.1w")
    figs = figure_records(run)
    assert [f["block_size"] for f in figs] == [2, 31, 136, 1024, 8192, 16384]
    assert {f["algorithm"] for f in figs} == {"aes-128-gcm"}
    assert all(f["status"] == "ok" for f in figs)


@pytest.mark.parametrize(("case", "version", "sizes"), [
    ("real-1.1.1w/aead-multi2-chacha", "1.1.1w", [2, 31, 136, 1024, 8192, 16384]),
    ("real-1.1.1w/aead-multi2-decrypt-gcm", "1.1.1w", [16384]),
    ("real-1.1.1w/pts-multi2-gcm", "1.1.1w", [16, 64, 256, 1024, 8192, 16384]),
    ("real-3.0.20/aead-multi2-chacha", "3.0.20", [2, 31, 136, 1024, 8192, 16384]),
    ("real-3.0.20/aead-multi2-decrypt-gcm", "3.0.20", [16384]),
])
def test_real_multi_parent_table_is_the_childrens_sum(case: str, version: str,
                                                       sizes: list[int]) -> None:
    """The parent's table (no 'type' header; -aead's sizes only in the children's +H) is
    read at the children's sizes, and each figure is the sum of the children's."""
    out, run = load(case, version)
    figs = [f for f in figure_records(run) if f["block_size"] is not None]
    assert [f["block_size"] for f in figs] == sizes
    kids = children(out)
    assert {k.child for k in kids} == {0, 1} and all(k.sizes == tuple(sizes) for k in kids)
    for i, f in enumerate(figs):
        total = sum(k.values[i] for k in kids)
        assert f["bytes_per_s"] == pytest.approx(total, rel=1e-4)  # the parent's %.2fk
    assert any("-multi" in w for w in run.warnings)


def test_real_multi_children_balance() -> None:
    out, _ = load("real-1.1.1w/aead-multi2-decrypt-gcm", "1.1.1w")
    b = balance(children(out), 2)
    assert b.children_seen == 2 and b.balance is not None and b.balance > 0.99
    assert b.worst == "aes-256-gcm at 16384 bytes"
    out, _ = load("real-1.1.1w/pts-multi2-rsa4096", "1.1.1w")
    kids = children(out)
    assert [k.kind for k in kids] == ["+F2", "+F2"] and kids[0].values == (49.50495, 1756.435644)
