"""Sources from a git tree (images/gitsource.py) on real git repositories the tests make:
revisions, the first-parent line, the version a tree says, archives that are the same
bytes for the same commit and hold no .git, the commit's variant."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from openssl_matrix.core.errors import ConfigError, SourceError
from openssl_matrix.images.gitsource import (
    archive,
    commit_variant,
    commits_between,
    left_out,
    missing_files,
    resolve,
    tree_version,
)
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.sweep.bisectrun import base_variant

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.org",
       "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.org",
       "GIT_AUTHOR_DATE": "2026-01-02T03:04:05+00:00",
       "GIT_COMMITTER_DATE": "2026-01-02T03:04:05+00:00"}


def git(tree: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True,
                          text=True, env=ENV).stdout.strip()


def commit(tree: Path, files: dict[str, str], subject: str) -> str:
    for name, text in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", subject)
    return git(tree, "rev-parse", "HEAD")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    t = tmp_path / "openssl"
    t.mkdir()
    git(t, "init", "-q", "-b", "master")
    commit(t, {"VERSION.dat": "MAJOR=3\nMINOR=0\nPATCH=20\nPRE_RELEASE_TAG=\n",
               "Configure": "#!/usr/bin/env perl\n", "crypto/aes/aes_core.c": "int a;\n",
               ".gitattributes": "fuzz/corpora export-ignore\n",
               "fuzz/corpora/x": "seed\n"}, "the release")
    git(t, "tag", "openssl-3.0.20")
    commit(t, {"crypto/aes/aes_core.c": "int a; /* 1 */\n"}, "aes: a first change")
    commit(t, {"crypto/aes/aes_core.c": "int a; /* 2 */\n"}, "aes: a slower loop")
    commit(t, {"VERSION.dat": "MAJOR=3\nMINOR=0\nPATCH=21\nPRE_RELEASE_TAG=dev\n"},
           "Prepare for 3.0.21")
    return t


def test_revisions_and_the_first_parent_line(tree: Path) -> None:
    head = resolve(tree, "HEAD")
    assert len(head.sha) == 40 and head.subject == "Prepare for 3.0.21"
    assert head.date == "2026-01-02T03:04:05+00:00"
    line = commits_between(tree, "openssl-3.0.20", "HEAD")
    assert [c.subject for c in line] == ["the release", "aes: a first change",
                                         "aes: a slower loop", "Prepare for 3.0.21"]
    assert line[0].sha == resolve(tree, "openssl-3.0.20").sha
    with pytest.raises(SourceError, match="first-parent line"):
        commits_between(tree, "HEAD", "openssl-3.0.20")
    with pytest.raises(SourceError, match="failed"):
        resolve(tree, "no-such-tag")
    with pytest.raises(SourceError):
        resolve(tree, "--output=/tmp/x")


def test_the_version_is_the_trees_own_at_that_commit(tree: Path, tmp_path: Path) -> None:
    assert tree_version(tree, resolve(tree, "openssl-3.0.20").sha) == "3.0.20"
    assert tree_version(tree, resolve(tree, "HEAD").sha) == "3.0.21"
    old = tmp_path / "old"
    old.mkdir()
    git(old, "init", "-q")
    sha = commit(old, {"include/openssl/opensslv.h":
                       '# define OPENSSL_VERSION_TEXT "OpenSSL 1.1.1x-dev  xx XXX xxxx"\n'},
                 "1.1.1 dev")
    assert tree_version(old, sha) == "1.1.1x"
    sha = commit(old, {"include/openssl/opensslv.h": "nothing\n"}, "not a tree")
    with pytest.raises(SourceError, match="not an OpenSSL tree"):
        tree_version(old, sha)


def test_masters_version_eras_between_1_1_1_and_3_0(tmp_path: Path) -> None:
    """OpenSSL's master said its version three ways between 1.1.1 and 3.0: opensslv.h's
    literal text (1.1.2-dev, 2018-09), the OPENSSL_VERSION_MAJOR/MINOR/PATCH macros
    with a text made of macros (2018-09 to 2019-10), then a VERSION file (2019-10 until
    its rename to VERSION.dat). Each commit must be read in its own era's place."""
    t = tmp_path / "master"
    t.mkdir()
    git(t, "init", "-q")
    h = "include/openssl/opensslv.h"
    dev = commit(t, {h: '# define OPENSSL_VERSION_NUMBER  0x10102000L\n'
                        '# define OPENSSL_VERSION_TEXT    "OpenSSL 1.1.2-dev  xx XXX xxxx"\n'},
                 "The next version in master is at least 1.1.2")
    macros = commit(t, {h: "# define OPENSSL_VERSION_MAJOR  3\n"
                           "# define OPENSSL_VERSION_MINOR  0\n"
                           "# define OPENSSL_VERSION_PATCH  0\n"
                           '# define OPENSSL_VERSION_PRE_RELEASE "-dev"\n'
                           "# define OPENSSL_VERSION_TEXT                    \\\n"
                           '    "OpenSSL " OPENSSL_VERSION_STR " " OPENSSL_RELEASE_DATE\n'},
                    "Switch to MAJOR.MINOR.PATCH versioning and version 3.0.0-dev")
    (t / h).unlink()
    version_file = commit(t, {"VERSION": "MAJOR=3\nMINOR=0\nPATCH=0\n"
                                         "PRE_RELEASE_TAG=alpha1\nBUILD_METADATA=\n",
                              h + ".in": "# define OPENSSL_VERSION_MAJOR  {- $config{major} -}\n"},
                          "Generate include/openssl/opensslv.h")
    assert [tree_version(t, c) for c in (dev, macros, version_file)] == \
        ["1.1.2", "3.0.0", "3.0.0"]
    not_numbers = commit(t, {"VERSION": "a file about something else\n"}, "a stray VERSION")
    with pytest.raises(SourceError, match="not an OpenSSL tree"):
        tree_version(t, not_numbers)


def test_an_archive_is_the_same_bytes_for_the_same_commit_and_has_no_git(
        tree: Path, tmp_path: Path) -> None:
    c = resolve(tree, "HEAD~1")
    path, sha = archive(tree, c, "3.0.20-gx", tmp_path / "a")
    again, sha2 = archive(tree, c, "3.0.20-gx", tmp_path / "b")
    assert sha == sha2 and path.read_bytes() == again.read_bytes()
    assert path.name == "openssl-3.0.20-gx.tar.gz"
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(path.read_bytes()))) as tar:
        names = tar.getnames()
        body = tar.extractfile("openssl-3.0.20-gx/crypto/aes/aes_core.c")
        assert body is not None and body.read() == b"int a; /* 2 */\n"
    assert all(n.startswith("openssl-3.0.20-gx") for n in names)
    assert not any(".git/" in n or n.endswith("/.git") for n in names)
    assert not any("fuzz/corpora" in n for n in names)  # export-ignore is honoured


def test_a_commit_is_the_matrix_variant_of_its_build_with_the_commits_source(
        tree: Path, tmp_path: Path) -> None:
    m = load_matrix(ROOT / "matrix.yaml")
    [base] = [v for v in m.all_variants if v.id == "3.0.20-asm-x86_64"]
    c = resolve(tree, "HEAD~1")
    v = commit_variant(base, tree, c, tmp_path / "cache")
    assert v.id == f"3.0.20-g{c.sha[:12]}-asm-x86_64"
    assert v.version.version == f"3.0.20-g{c.sha[:12]}" and v.version.series_name == "3.0"
    assert v.version.official is False and v.version.sha256 is not None
    assert v.version.urls[0].startswith("file://") and c.sha in v.version.urls[0]
    assert (v.asm, v.arch, v.base_image) == (base.asm, base.arch, base.base_image)


def _drop_object(tree: Path, sha: str) -> None:
    """Lose a blob as a partial clone (or a mirror without its largest files) has."""
    (tree / ".git" / "objects" / sha[:2] / sha[2:]).unlink()


def test_files_missing_from_the_clone_are_left_out_only_where_the_build_never_reads(
        tree: Path, tmp_path: Path) -> None:
    sha = commit(tree, {"test/drbg_cavs_data.c": "big test vectors\n",
                        "test/build.info": "PROGRAMS=drbgtest\n"}, "test vectors")
    head = resolve(tree, sha)
    _drop_object(tree, git(tree, "rev-parse", f"{sha}:test/drbg_cavs_data.c"))
    assert missing_files(tree, sha) == ["test/drbg_cavs_data.c"]
    path, _ = archive(tree, head, "3.0.21-gx", tmp_path / "a")
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(path.read_bytes()))) as tar:
        names = tar.getnames()
    assert "openssl-3.0.21-gx/test/build.info" in names
    assert not any(n.endswith("drbg_cavs_data.c") for n in names)
    assert left_out(path) == ["test/drbg_cavs_data.c"]
    m = load_matrix(ROOT / "matrix.yaml")
    [base] = [v for v in m.all_variants if v.id == "3.0.20-asm-x86_64"]
    v = commit_variant(base, tree, head, tmp_path / "a")
    assert any("test/drbg_cavs_data.c" in s and "left out" in s for s in v.version.sources)
    # a missing file the build reads: the commit cannot be built, and the reason says which
    sha = commit(tree, {"crypto/aes/aes_core.c": "int a; /* 3 */\n"}, "aes again")
    _drop_object(tree, git(tree, "rev-parse", f"{sha}:crypto/aes/aes_core.c"))
    with pytest.raises(SourceError, match=r"lacks .* crypto/aes/aes_core\.c"):
        archive(tree, resolve(tree, sha), "3.0.21-gy", tmp_path / "b")
    assert not (tmp_path / "b" / "git" / sha).exists()


def test_a_development_series_without_a_release_builds_as_the_release_before_it() -> None:
    m = load_matrix(ROOT / "matrix.yaml")
    assert base_variant(m, "1.1.2", "asm-x86_64").id == "1.1.1w-asm-x86_64"
    assert base_variant(m, "3.0.0", "asm-x86_64").id == "3.0.0-asm-x86_64"
    assert base_variant(m, "1.1.1a", "no-asm-x86_64").id == "1.1.1a-no-asm-x86_64"
    with pytest.raises(ConfigError, match="nor of an older one"):
        base_variant(m, "0.9.1", "asm-x86_64")
