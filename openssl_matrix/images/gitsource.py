"""Sources from a git tree: one commit of a local OpenSSL clone as a build's source tarball.

A commit is archived with ``git archive`` (the tracked files at that commit, no ``.git``,
``export-ignore`` paths left out, submodules not included) into
``<cache>/git/<commit>/openssl-<version>.tar.gz``, gzip without a name or time stamp so
that the same commit always gives the same bytes: its sha256, and so the image's content
hash, names the commit, and a commit built once is never built again. The archive goes
into the build context like a release tarball; nothing of ``.git`` reaches the image.

The version is the tree's own, read at that commit (``VERSION.dat`` from 3.0,
``VERSION`` or the ``OPENSSL_VERSION_MAJOR`` macros on master before it,
``include/openssl/opensslv.h`` 1.1.0-1.1.1, ``crypto/opensslv.h`` before), with the
commit appended as a suffix: ``3.2.0-g1a2b3c4d5e6f``. The variant is the matrix's variant
of the build asked for (``asm-x86_64`` ...), with that source: the same recipe, decided
by the tree as for a release (docs/building.md, "Building from a git tree").
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from openssl_matrix.core.errors import SourceError
from openssl_matrix.core.files import file_sha256
from openssl_matrix.core.version import Version
from openssl_matrix.matrix.model import Variant

#: the commit's part of the version suffix (hex digits)
SHORT = 12
_HEX = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    date: str  # author date, ISO 8601

    @property
    def short(self) -> str:
        return self.sha[:SHORT]


def _git(tree: Path, *args: str, binary: bool = False) -> str | bytes:
    try:
        done = subprocess.run(["git", "-C", str(tree), *args], capture_output=True,
                              timeout=300, check=False)
    except FileNotFoundError:
        raise SourceError("building from a git tree needs the git program",
                          hint="install git (apt-get install git)") from None
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SourceError(f"git {' '.join(args[:2])} in {tree} failed: "
                          f"{err[-1] if err else 'exit ' + str(done.returncode)}",
                          hint="--git names a local clone of OpenSSL (a path), and the "
                          "revisions must exist in it")
    return done.stdout if binary else done.stdout.decode("utf-8", "replace")


def resolve(tree: Path, rev: str) -> Commit:
    """The commit ``rev`` names in ``tree`` (a tag, branch, HEAD, a hash)."""
    if rev.startswith("-"):
        raise SourceError(f"{rev!r} is not a revision")
    sha = str(_git(tree, "rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}"))
    sha = sha.strip()
    if not _HEX.match(sha):
        raise SourceError(f"git named {rev!r} as {sha!r}, not a commit")
    text = str(_git(tree, "log", "-1", "--format=%s%x00%aI", sha))
    subject, _, date = text.rstrip("\n").partition("\0")
    return Commit(sha, subject, date)


def commits_between(tree: Path, good: str, bad: str) -> list[Commit]:
    """GOOD, then every commit on BAD's first-parent line after it, BAD last: the order a
    bisection searches (a merge counts as one step, as ``git bisect --first-parent``)."""
    lo, hi = resolve(tree, good), resolve(tree, bad)
    shas = str(_git(tree, "rev-list", "--first-parent", "--reverse",
                    f"{lo.sha}..{hi.sha}")).split()
    first_parent = str(_git(tree, "rev-parse", f"{shas[0]}^1")).strip() \
        if shas and shas[0] != lo.sha else ""
    if not shas or first_parent != lo.sha:
        raise SourceError(f"{good} is not on the first-parent line of {bad}",
                          hint="give GOOD as the older revision, an ancestor of BAD on "
                          "its first-parent line (`git log --first-parent BAD`)")
    return [lo, *(resolve(tree, s) for s in shas)]


def tree_version(tree: Path, sha: str) -> str:
    """The release number the tree says it is at ``sha`` (``3.2.0``, ``1.1.1x``), in each
    era's own place: ``VERSION.dat`` (3.0 from 2021), ``VERSION`` (master from 2019-10
    until its rename), ``OPENSSL_VERSION_MAJOR/MINOR/PATCH`` in ``opensslv.h`` (master
    2018-09 to 2019-10, whose ``OPENSSL_VERSION_TEXT`` is made of macros), else the
    literal ``OPENSSL_VERSION_TEXT`` (``include/openssl/opensslv.h`` in 1.1.x,
    ``crypto/opensslv.h`` before)."""
    for path in ("VERSION.dat", "VERSION"):
        found = _numbers(_show(tree, sha, path), r"^(MAJOR|MINOR|PATCH)=(\d+)\s*$")
        if found is not None:
            return found
    for path in ("include/openssl/opensslv.h", "crypto/opensslv.h"):
        text = _show(tree, sha, path)
        if text is None:
            continue
        found = _numbers(text, r"^#\s*define\s+OPENSSL_VERSION_(MAJOR|MINOR|PATCH)\s+"
                         r"(\d+)\s*$")
        if found is not None:
            return found
        m = re.search(r'OPENSSL_VERSION_TEXT\s+"OpenSSL\s+(\S+)', text)
        literal = Version.find(m.group(1)) if m else None
        if literal is not None:
            return literal.release
    raise SourceError(f"commit {sha[:SHORT]} of {tree} is not an OpenSSL tree: it has no "
                      "VERSION.dat, VERSION nor opensslv.h saying its version")


def _numbers(text: str | None, pattern: str) -> str | None:
    """``MAJOR.MINOR.PATCH`` from the three ``(name, number)`` matches of ``pattern``."""
    if text is None:
        return None
    fields = dict(re.findall(pattern, text, re.M))
    if len(fields) != 3:
        return None
    return f"{fields['MAJOR']}.{fields['MINOR']}.{fields['PATCH']}"


def _show(tree: Path, sha: str, path: str) -> str | None:
    try:
        return str(_git(tree, "show", f"{sha}:{path}"))
    except SourceError:
        return None


#: where a file missing from the clone may be left out of a commit's archive: the
#: builds use ``no-tests`` and no fuzzer, so nothing under these is read
UNREAD = ("test/", "fuzz/")
#: the file beside an archive naming what was left out of it
LEFT_OUT = "left-out.txt"


def missing_files(tree: Path, sha: str) -> list[str]:
    """The files of commit ``sha`` whose contents the clone does not have (a partial
    clone, ``--filter=blob:limit``; a mirror kept without its largest files)."""
    listing = _git(tree, "ls-tree", "-r", "-z", sha, binary=True)
    assert isinstance(listing, bytes)
    blobs: dict[str, list[str]] = {}
    for entry in listing.decode("utf-8", "surrogateescape").split("\0"):
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[1] == "blob":
            blobs.setdefault(fields[2], []).append(path)
    if not blobs:
        return []
    try:
        done = subprocess.run(["git", "-C", str(tree), "cat-file", "--batch-check"],
                              input="\n".join(blobs).encode() + b"\n", capture_output=True,
                              timeout=300, check=False,
                              env={**os.environ, "GIT_NO_LAZY_FETCH": "1"})
    except FileNotFoundError:
        raise SourceError("building from a git tree needs the git program") from None
    gone = [line.split()[0] for line in done.stdout.decode("ascii", "replace").splitlines()
            if line.endswith(" missing")]
    return sorted(p for blob in gone for p in blobs.get(blob, []))


def archive(tree: Path, commit: Commit, version: str, cache: Path) -> tuple[Path, str]:
    """``git archive`` of the commit as ``openssl-<version>.tar.gz`` in the cache (made
    once per commit: the same bytes every time), and its sha256. Files the clone lacks
    are left out when the build never reads them (:data:`UNREAD`), and named in
    ``left-out.txt`` beside the archive (:func:`left_out`); a missing file elsewhere
    is a SourceError naming it."""
    folder = cache / "git" / commit.sha
    dest = folder / f"openssl-{version}.tar.gz"
    if dest.is_file():
        return dest, file_sha256(dest)
    missing = missing_files(tree, commit.sha)
    needed = [p for p in missing if not p.startswith(UNREAD)]
    if needed:
        raise SourceError(f"the clone {tree} lacks the contents of {len(needed)} file(s) of "
                          f"commit {commit.short} that a build reads: "
                          f"{', '.join(needed[:3])}{' ...' if len(needed) > 3 else ''}",
                          hint="fetch them (`git fetch --refetch`, or a clone without "
                          "--filter)")
    folder.mkdir(parents=True, exist_ok=True)
    data = _git(tree, "archive", "--format=tar", f"--prefix=openssl-{version}/", commit.sha,
                "--", ".", *(f":(exclude,literal){p}" for p in missing), binary=True)
    assert isinstance(data, bytes)
    part = folder / (dest.name + ".part")
    with part.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                               compresslevel=6, mtime=0) as gz:
        gz.write(data)
    (folder / LEFT_OUT).write_text("".join(f"{p}\n" for p in missing))
    part.replace(dest)
    return dest, hashlib.sha256(dest.read_bytes()).hexdigest()


def left_out(archive_path: Path) -> list[str]:
    """The files left out of an archive :func:`archive` made (missing from the clone)."""
    note = archive_path.parent / LEFT_OUT
    return note.read_text().split("\n")[:-1] if note.is_file() else []


def commit_variant(base: Variant, tree: Path, commit: Commit, cache: Path) -> Variant:
    """``base`` (the matrix's variant of a build) with the commit's tree as its source."""
    release = tree_version(tree, commit.sha)
    version = f"{release}-g{commit.short}"
    path, sha = archive(tree, commit, version, cache)
    gone = left_out(path)
    note = (f"left out, missing from the clone and not read by the build: "
            f"{', '.join(gone)}",) if gone else ()
    spec = replace(base.version, version=version, sha256=sha, urls=(path.as_uri(),),
                   official=False, sources=(f"git: {tree} {commit.sha}", *note),
                   single_source=False, from_catalogue=False)
    rest = base.id[len(base.version.version):]
    return replace(base, id=f"{version}{rest}", version=spec, default=False)


def clear(cache: Path, commit: Commit) -> None:
    """Forget a commit's archive (a damaged one)."""
    shutil.rmtree(cache / "git" / commit.sha, ignore_errors=True)
