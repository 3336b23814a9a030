"""``invoke matrix bisect --git`` on a real engine: a git repository the test makes from
the real 1.1.1w release tree, one commit per change, one of which encrypts every AES
block twice (a real code path, measurably slower: no-asm builds, whose EVP AES-CBC calls
``AES_encrypt`` of ``crypto/aes/aes_core.c``) and one, earlier, that does not build.

The bisection builds each commit it needs from its ``git archive`` through the shared
compiler cache and decides each step from interleaved pairs (the pair harness running
both builds' EVP AES-CBC loop alternately in one process, docs/bisect.md), which keep
their interval on a busy 2-vCPU host where separate rounds lost every pair. The commits
are laid out so that the walk is fixed by the truth: the commit that does not build is
the first step (the middle of the range), so it is always tried and skipped with the
compiler's error; then one step like GOOD and one like BAD narrow the move to the slow
commit. Asserted is what holds under a busy host: the move names the slow commit and its
subject, its ratio is well below 1 (each block encrypted twice), no step is judged
against the truth, and every decided step says its basis (and why, if rounds).
"""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from openssl_matrix.cli.shared import handlers
from openssl_matrix.images.sources import default_urls, fetch_source_info
from openssl_matrix.matrix.load import load_matrix

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.org",
       "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.org"}
ONCE = "static void om_aes_encrypt_once(const unsigned char *in, unsigned char *out,"
TWICE = """
#ifndef AES_ASM
/* openssl-matrix docker test: every block encrypted twice, a measurable slowdown (the
 * scratch block has external linkage, so the first encryption cannot be optimised out) */
unsigned char openssl_matrix_scratch[16];
void AES_encrypt(const unsigned char *in, unsigned char *out, const AES_KEY *key)
{
    om_aes_encrypt_once(in, openssl_matrix_scratch, key);
    om_aes_encrypt_once(in, out, key);
}
#endif
"""


def git(tree: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True,
                          text=True, env=ENV).stdout.strip()


def edit(tree: Path, name: str, subject: str, change: Callable[[str], str]) -> str:
    path = tree / name
    path.write_text(change(path.read_text()))
    git(tree, "commit", "-q", "-a", "-m", subject)
    return git(tree, "rev-parse", "HEAD")[:12]


def release_tree(tmp: Path) -> Path:
    m = load_matrix(ROOT / "matrix.yaml", default_urls=default_urls)
    spec = next(v for v in m.versions if v.version == "1.1.1w")
    src = fetch_source_info(spec.version, spec.sha256, spec.urls, local_dirs=m.sources_dirs,
                            lock_file=m.path.with_suffix(".lock"))
    with tarfile.open(src.path) as tar:
        tar.extractall(tmp, filter="tar")
    tree = tmp / "openssl-1.1.1w"
    git(tree, "init", "-q", "-b", "master")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "OpenSSL 1.1.1w, the release tree")
    return tree


def test_a_commit_bisection_names_the_slow_commit_and_skips_the_broken_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = release_tree(tmp_path)
    evp = "crypto/evp/evp_lib.c"
    aes = "crypto/aes/aes_core.c"
    c = [git(tree, "rev-parse", "HEAD")[:12]]
    c.append(edit(tree, evp, "evp: a comment", lambda t: t + "\n/* a comment */\n"))
    c.append(edit(tree, evp, "evp: a line that does not compile",
                  lambda t: t + "#error openssl-matrix test: this commit does not build\n"))
    broken = c[-1]
    c.append(edit(tree, evp, "evp: compile again",
                  lambda t: t.replace("#error openssl-matrix test: this commit does not "
                                      "build\n", "")))
    c.append(edit(tree, aes, "aes: encrypt every block twice", lambda t: t.replace(
        "void AES_encrypt(const unsigned char *in, unsigned char *out,", ONCE) + TWICE))
    slow = c[-1]
    c.append(edit(tree, evp, "evp: another comment", lambda t: t + "/* another */\n"))

    data = yaml.safe_load((ROOT / "matrix.yaml").read_text())
    data["suites"] = {"aes": {"algorithms": ["aes-128-cbc"], "evp": True, "seconds": 1,
                              "bytes": 8192, "masks": [{"name": "native"}]}}
    data["default_suite"] = "aes"
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(yaml.safe_dump(data, sort_keys=False))
    capsys.readouterr()
    code = handlers()["bisect"](target="", matrix=str(matrix), results=str(tmp_path / "r"),
                                figure="aes:aes-128-cbc:8192", good=c[0], bad=c[-1],
                                build="no-asm-x86_64", cpu="", wait=True, json=True,
                                allow_plain_tcp=False, git=str(tree))
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    decided = [st for st in doc["steps"] if st["decision"] != "skipped"]
    for step in decided:  # each says what decided it, and why rounds if it was rounds
        assert step["basis"] in ("interleaved", "rounds"), step
        assert step["basis"] == "interleaved" or step["why_rounds"], step
        at = c.index(step["release"])
        if step["decision"] == "like-bad":
            assert at >= c.index(slow), step
        if step["decision"] == "like-good":
            assert at < c.index(slow), step
    # the commit that does not build is the middle of the range: always tried, skipped
    first = doc["steps"][0]
    assert first["release"] == broken and first["decision"] == "skipped", first
    assert "failed" in first["reason"], first
    # the slow commit is the one large move; a comment-only commit can still move a no-asm
    # build by a per cent or two (code layout), which the harness may resolve as a small
    # move of its own: allowed, as long as it stays small
    large = [mv for mv in doc["moves"] if mv["ratio"] and mv["ratio"]["ratio"] < 0.9]
    (move,) = large
    assert move["found"], doc["moves"]
    assert (move["before"], move["after"]) == (c[c.index(slow) - 1], slow)
    assert doc["commits"][slow]["subject"] == "aes: encrypt every block twice"
    assert move["ratio"]["ci_high"] < 0.95
    for small in doc["moves"]:  # anything else: small, or a range left undecided
        if small is not move and small["ratio"]:
            assert 0.95 < small["ratio"]["ratio"] < 1.05, small
    if len(doc["moves"]) == 1:
        assert doc["status"] == "moved", doc["moves"]
