"""The source-stage probe (dockerfiles/srcfacts.pl) and the compat rewrite scripts.

Each test writes a tiny source tree with the construct in question (no OpenSSL source
is committed) and runs the real script with the host's perl, as the build does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
import yaml

from openssl_matrix.core.resources import dockerfiles, project_patches
from openssl_matrix.engine.backend import RunLimits, RunResult
from openssl_matrix.images.build import Builder
from openssl_matrix.images.render import SRCFACTS, recipe, render
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.patches import PatchError, load_patches
from openssl_matrix.results.tree import ResultsTree

from ..conftest import make_tarball
from ..fakes import FakeBackend

pytestmark = pytest.mark.skipif(shutil.which("perl") is None, reason="needs perl")

SRCFACTS_PL = dockerfiles() / SRCFACTS

#: the shape of a unified-build (1.1.0+) Configure's option list; ``tests`` optional
UNIFIED_CONFIGURE = """#! /usr/bin/env perl
my @disablables = (
    "afalgeng",
    "asm",
    "hw(-.+)?",
    "shared",
{tests}    "zlib",
    );

my %deprecated_disablables = (
    "ssl2" => undef,
    "hw-padlock" => "padlockeng",
    );
                elsif (/^--libdir=(.*)$/)
"""

#: the shape of a legacy (0.9.8-1.0.2) Configure: targets in its own %table, no option list
LEGACY_CONFIGURE = """#!/usr/local/bin/perl
my %table=(
"linux-elf",\t"gcc:-DL_ENDIAN -O3 -fomit-frame-pointer -Wall::-D_REENTRANT",
"linux-x86_64",\t"gcc:-m64 -DL_ENDIAN -O3 -Wall::-D_REENTRANT",
);
"""


def unified_tree(root: Path, *, knows_tests: bool) -> Path:
    root.mkdir(parents=True)
    (root / "Configure").write_text(
        UNIFIED_CONFIGURE.format(tests='    "tests",\n' if knows_tests else ""))
    (root / "build.info").write_text("SUBDIRS=crypto\n")
    (root / "Configurations").mkdir()
    (root / "Configurations" / "10-main.conf").write_text(
        '%targets = (\n    "linux-x86" => {\n        inherit_from => [ "linux-generic32" ],\n'
        '    },\n    "linux-x86_64" => {\n    },\n);\n')
    return root


def legacy_tree(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "Configure").write_text(LEGACY_CONFIGURE)
    (root / "Makefile.org").write_text("depend:\n")
    return root


def srcfacts(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["perl", str(SRCFACTS_PL), *args], cwd=tree, capture_output=True,
                          text=True, timeout=60, check=False)


def knows(tree: Path, option: str) -> bool:
    out = srcfacts(tree, "knows", option)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip() == "yes"


# --- probes ------------------------------------------------------------------------------

def test_probe_no_tests_is_read_from_the_option_list(tmp_path: Path) -> None:
    early = unified_tree(tmp_path / "early", knows_tests=False)  # 1.1.0g, 1.1.0i
    late = unified_tree(tmp_path / "late", knows_tests=True)     # 1.1.1, 3.x
    assert not knows(early, "no-tests") and knows(late, "no-tests")
    # entries are patterns, as Configure matches them; deprecated names count as known
    assert knows(early, "enable-hw-padlock") and knows(early, "no-ssl2")
    assert not knows(early, "no-bogus")
    assert knows(early, "--libdir=lib") and not knows(early, "--bogusdir=x")


def test_probe_legacy_configure_takes_any_no_option(tmp_path: Path) -> None:
    tree = legacy_tree(tmp_path / "legacy")
    assert knows(tree, "no-tests") and knows(tree, "no-ssl2")
    assert not knows(tree, "--libdir=lib")


#: The i386 source check as the recipe renders it: target candidates, unified-only and
#: optional options.
I386_CHECK = ("--target", "linux-x86", "--target", "linux-elf", "--unified-only",
              "--libdir=lib", "--unified-only", "no-tests", "--optional", "no-tests")


@pytest.mark.parametrize(("kind", "facts", "note"), [
    # an early unified tree (1.1.0g): linux-x86, --libdir kept, no-tests unknown
    ("unified", ["build_system=unified", "target=linux-x86", "option.no-tests=unknown",
                 "drop=no-tests"], "this release's Configure does not know 'no-tests'"),
    # no version in sight: a legacy tree (Makefile.org, linux-elf in Configure's table)
    # gets linux-elf and loses the unified-only options
    ("legacy", ["build_system=legacy", "target=linux-elf", "option.--libdir=lib=unified-only",
                "option.no-tests=unified-only", "drop=--libdir=lib,no-tests"],
     "'--libdir=lib' is for the unified build system; this tree has the legacy one"),
])
def test_the_tree_chooses_the_target_and_drops_what_it_does_not_take(
        tmp_path: Path, kind: str, facts: list[str], note: str) -> None:
    tree = legacy_tree(tmp_path / "t") if kind == "legacy" else \
        unified_tree(tmp_path / "t", knows_tests=False)
    path = tmp_path / "facts.txt"
    out = srcfacts(tree, "check", "--facts", str(path), *I386_CHECK)
    assert out.returncode == 0, out.stderr
    assert path.read_text().splitlines() == facts
    assert f"{note}: it will be left out" in out.stdout
    late = unified_tree(tmp_path / "late", knows_tests=True)
    srcfacts(late, "check", "--facts", str(path), *I386_CHECK)
    assert "drop=" in path.read_text().splitlines()
    x86_64 = srcfacts(tree, "check", "--facts", str(path), "--target", "linux-x86_64")
    assert x86_64.returncode == 0 and "target=linux-x86_64" in path.read_text()


def test_check_stops_on_a_tree_with_quilt_patches_applied(tmp_path: Path) -> None:
    tree = legacy_tree(tmp_path / "t")
    (tree / ".pc").mkdir()
    (tree / ".pc" / "applied-patches").write_text("fix-a.patch\nfix-b.patch\n")
    out = srcfacts(tree, "check", "--facts", str(tmp_path / "f"), "--target", "linux-elf")
    assert out.returncode == 1
    assert out.stderr.startswith("openssl-matrix: this tree has 2 quilt patch(es) applied")
    assert "`quilt pop -a`" in out.stderr
    (tree / ".pc" / "applied-patches").write_text("")   # every patch popped: a plain tree
    out = srcfacts(tree, "check", "--facts", str(tmp_path / "f"), "--target", "linux-elf")
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize(("kind", "targets", "message"), [
    ("legacy", ["linux-x86"], "has none of the targets 'linux-x86'"),
    ("unified", ["linux-elf", "linux-x32"], "has none of the targets 'linux-elf', 'linux-x32'"),
    ("neither", ["linux-x86_64"], "neither Makefile.org (the legacy build system"),
])
def test_check_stops_when_the_tree_cannot_be_built(
        tmp_path: Path, kind: str, targets: list[str], message: str) -> None:
    if kind == "neither":
        tree = tmp_path / "t"
        tree.mkdir()
        (tree / "Configure").write_text(LEGACY_CONFIGURE)
    else:
        tree = legacy_tree(tmp_path / "t") if kind == "legacy" else \
            unified_tree(tmp_path / "t", knows_tests=True)
    args = [a for t in targets for a in ("--target", t)]
    out = srcfacts(tree, "check", "--facts", str(tmp_path / "f"), *args)
    assert out.returncode == 1
    assert message in out.stderr and out.stderr.startswith("openssl-matrix: ")


def test_check_stops_on_a_required_option_the_release_lacks(tmp_path: Path) -> None:
    tree = unified_tree(tmp_path / "t", knows_tests=True)
    facts = tmp_path / "facts.txt"
    ok = srcfacts(tree, "check", "--facts", str(facts), "--require", "enable-hw-padlock")
    assert ok.returncode == 0 and "option.enable-hw-padlock=known" in facts.read_text()
    out = srcfacts(tree, "check", "--facts", str(facts), "--require", "enable-padlockeng")
    assert out.returncode == 1
    assert "does not know 'enable-padlockeng'" in out.stderr
    assert "leave it out of the matrix for this version" in out.stderr


def test_configure_puts_in_the_target_and_leaves_out_what_the_check_dropped(
        tmp_path: Path) -> None:
    tree = unified_tree(tmp_path / "t", knows_tests=False)
    facts = tmp_path / "src" / "facts.txt"
    facts.parent.mkdir()
    srcfacts(tree, "check", "--facts", str(facts), "--target", "linux-x86",
             "--optional", "no-tests")
    echo = ["perl", "-e", "print join('|', @ARGV)", "--"]
    out = srcfacts(tree, "configure", "--facts", str(facts), "--", *echo,
                   "@target@", "no-tests", "shared")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "linux-x86|shared"
    assert "leaving out 'no-tests'" in out.stdout
    assert (facts.parent / "configure-line.txt").read_text().strip().endswith(
        "linux-x86 shared")
    missing = srcfacts(tree, "configure", "--facts", str(tmp_path / "none"), "--", "true")
    assert missing.returncode == 1 and "source stage did not run its check" in missing.stderr
    srcfacts(tree, "check", "--facts", str(facts))  # no --target: no target to put in
    untargeted = srcfacts(tree, "configure", "--facts", str(facts), "--", *echo, "@target@")
    assert untargeted.returncode == 1 and "chose no Configure target" in untargeted.stderr


def fake_make(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A ``make`` on PATH that logs its arguments, one call a line."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "make.log"
    (bin_dir / "make").write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    (bin_dir / "make").chmod(0o755)
    import os

    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}, log


@pytest.mark.parametrize(("kind", "jobs", "calls"), [
    ("legacy", "2", ["depend", "-j1"]),
    ("unified", "2", ["-j2"]),
    ("unified", None, ["-j1"]),
])
def test_make_follows_the_trees_build_system(tmp_path: Path, kind: str, jobs: str | None,
                                             calls: list[str]) -> None:
    tree = legacy_tree(tmp_path / "t") if kind == "legacy" else \
        unified_tree(tmp_path / "t", knows_tests=True)
    facts = tmp_path / "facts.txt"
    assert srcfacts(tree, "check", "--facts", str(facts)).returncode == 0
    env, log = fake_make(tmp_path)
    env.pop("MAKE_JOBS", None)
    if jobs is not None:
        env["MAKE_JOBS"] = jobs
    out = subprocess.run(["perl", str(SRCFACTS_PL), "make", "--facts", str(facts)], cwd=tree,
                         capture_output=True, text=True, timeout=60, check=False, env=env)
    assert out.returncode == 0, out.stderr
    assert log.read_text().splitlines() == calls
    assert f"({kind} build system: " in out.stdout
    assert out.stdout.startswith("openssl-matrix runs: make ")


# --- how the recipe uses them ------------------------------------------------------------

def _matrix(tmp_path: Path, versions: list[str]) -> list:  # type: ignore[type-arg]
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump({
        "defaults": {"base_image": "debian:bookworm"},
        "versions": {v: {} for v in versions},
        "axes": {"arch": ["x86_64", "i386"]},
        "suites": {"s": {"algorithms": ["md5"]}}}))
    return list(load_matrix(path).all_variants)


def test_the_source_stage_checks_the_recipe_and_configure_drops_unknown_options(
        tmp_path: Path) -> None:
    by_id = {v.id: v for v in _matrix(tmp_path, ["1.0.2u", "1.1.0g"])}
    new, old = by_id["1.1.0g-asm-i386"], by_id["1.0.2u-asm-i386"]
    text = render(new).dockerfile
    assert ('RUN ["perl", "/src/srcfacts.pl", "check", "--facts", "/src/facts.txt", '
            '"--target", "linux-x86", "--target", "linux-elf", "--unified-only", '
            '"--libdir=lib", "--unified-only", "no-tests", "--optional", "no-tests"]' in text)
    assert 'RUN ["perl", "/src/srcfacts.pl", "configure", "--facts", "/src/facts.txt", ' \
        '"--", "perl", "./Configure", "@target@"' in text
    # the check runs in the source stage, after the patches
    assert text.index("srcfacts.pl\", \"check\"") < text.index("AS build")
    assert text.index("patch-perl-file-glob.pl") < text.index("srcfacts.pl\", \"check\"")
    assert render(new).context_files[SRCFACTS] == SRCFACTS_PL
    # one recipe for both: the versions do not enter it, their trees decide
    assert render(old).dockerfile.split("srcfacts.pl\", \"check\"")[1].split("\n")[0] == \
        text.split("srcfacts.pl\", \"check\"")[1].split("\n")[0]
    assert recipe(old).required == () and "--require" not in render(old).dockerfile


def test_the_rendered_steps_on_a_legacy_and_a_unified_tree(tmp_path: Path) -> None:
    """The Dockerfile's own srcfacts.pl lines, run on trees of each build system (with
    echo for Configure and a logging make): what each tree gets."""
    by_id = {v.id: v for v in _matrix(tmp_path, ["1.0.2u", "1.1.0g"])}
    env, log = fake_make(tmp_path)
    env["MAKE_JOBS"] = "2"
    got = {}
    for kind, variant in (("legacy", by_id["1.0.2u-asm-i386"]),
                          ("unified", by_id["1.1.0g-asm-i386"])):
        tree = legacy_tree(tmp_path / kind) if kind == "legacy" else \
            unified_tree(tmp_path / kind, knows_tests=False)
        runs = [json.loads(m) for m in re.findall(r"^RUN (\[.*\])$", render(variant).dockerfile,
                                                  re.M)]
        facts = str(tmp_path / kind / "facts.txt")
        steps = [[facts if a == "/src/facts.txt" else str(SRCFACTS_PL)
                  if a == "/src/srcfacts.pl" else a for a in r]
                 for r in runs if r[:2] == ["perl", "/src/srcfacts.pl"]]
        check, configure, make = steps
        assert subprocess.run(check, cwd=tree, capture_output=True, check=False).returncode == 0
        dash = configure.index("--")
        # "perl ./Configure" becomes a perl that prints the arguments it was given
        configure[dash + 1:dash + 3] = ["perl", "-e", "print join(' ', @ARGV)", "--"]
        out = subprocess.run(configure, cwd=tree, capture_output=True, text=True, check=False)
        assert out.returncode == 0, out.stderr
        log.write_text("")
        assert subprocess.run(make, cwd=tree, env=env, capture_output=True,
                              check=False).returncode == 0
        got[kind] = (out.stdout.splitlines()[-1], log.read_text().splitlines())
    assert got["legacy"] == ("linux-elf --prefix=/opt/openssl --openssldir=/opt/openssl/ssl "
                             "shared -Wa,--noexecstack -m32", ["depend", "-j1"])
    assert got["unified"] == ("linux-x86 --prefix=/opt/openssl --openssldir=/opt/openssl/ssl "
                              "--libdir=lib shared -Wa,--noexecstack -m32", ["-j2"])


def test_engine_switches_and_matrix_options_are_required_in_the_source(
        tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump({
        "defaults": {"base_image": "debian:bookworm"},
        "versions": {"3.0.20": {"configure": ["no-ssl3", "-DPEDANTIC"]}},
        "include": [{"version": "3.0.20", "engines": ["padlock"]}],
        "suites": {"s": {"algorithms": ["md5"]}}}))
    by_id = {v.id: v for v in load_matrix(path).all_variants}
    r = recipe(by_id["3.0.20-asm-x86_64-engine-padlock"])
    assert r.required == ("enable-padlockeng", "no-ssl3")
    assert '"--require", "enable-padlockeng", "--require", "no-ssl3"]' in \
        render(by_id["3.0.20-asm-x86_64-engine-padlock"]).dockerfile


# --- compat rewrite scripts ----------------------------------------------------------------

FILE_GLOB = project_patches() / "perl-file-glob.pl"


def run_fix(script: Path, tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["perl", str(script)], cwd=tree, capture_output=True, text=True,
                          timeout=60, check=False)


def test_file_glob_fix_makes_the_script_compile_on_this_perl(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    (tree / "util").mkdir(parents=True)
    (tree / "a.txt").write_text("x")
    script = ('use if $^O ne "VMS", \'File::Glob\' => qw/glob/;\n'
              'my @found = glob("a*.txt");\nprint scalar(@found), "\\n";\n')
    (tree / "Configure").write_text(script)
    (tree / "util" / "other.pl").write_text("use File::Glob qw(glob);\nprint 1;\n")
    (tree / "util" / "clean.pl").write_text("use File::Glob qw(:bsd_glob);\n")
    before = subprocess.run(["perl", "Configure"], cwd=tree, capture_output=True, text=True,
                            check=False)
    if before.returncode == 0:
        pytest.skip("this perl still exports File::Glob's glob (< 5.30)")
    assert '"glob" is not exported by the File::Glob module' in before.stderr
    out = run_fix(FILE_GLOB, tree)
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.splitlines()) == ["Configure: 1", "util/other.pl: 1"]
    after = subprocess.run(["perl", "Configure"], cwd=tree, capture_output=True, text=True,
                           check=False)
    assert after.returncode == 0, after.stderr
    assert after.stdout.strip() == "1"
    assert "qw(:bsd_glob)" in (tree / "util" / "other.pl").read_text()
    assert run_fix(FILE_GLOB, tree).stdout == "", "a second run changes nothing"


def test_file_glob_fix_leaves_a_tree_without_the_construct_alone(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "Configure").write_text("use OpenSSL::Glob;\nprint 1;\n")
    out = run_fix(FILE_GLOB, tree)
    assert out.returncode == 0 and out.stdout == ""
    assert (tree / "Configure").read_text() == "use OpenSSL::Glob;\nprint 1;\n"


INC_DOT = project_patches() / "perl-inc-dot.pl"

#: the head of 0.9.8's crypto/des/asm/des-586.pl (its own lines, enough to be the construct)
DES_586 = """#!/usr/local/bin/perl
#
# The inner loop instruction sequence and the IP/FP modifications are from
# Svend Olaf Mikkelsen <svolaf@inet.uni-c.dk>
#

push(@INC,"perlasm","../../perlasm");
require "x86asm.pl";
require "cbc.pl";
require "desboth.pl";

print &both(), "\\n";
"""


def test_inc_dot_fix_lets_the_des_generator_find_desboth_on_this_perl(
        tmp_path: Path) -> None:
    tree = tmp_path / "t"
    asm, perlasm = tree / "crypto" / "des" / "asm", tree / "crypto" / "perlasm"
    asm.mkdir(parents=True)
    perlasm.mkdir()
    (asm / "des-586.pl").write_text(DES_586)
    (asm / "desboth.pl").write_text('sub both { "desboth loaded" }\n1;\n')
    for stub in ("x86asm.pl", "cbc.pl"):
        (perlasm / stub).write_text("1;\n")
    # a generator whose helpers all live in perlasm, and a 1.0.1-style one: left alone
    (tree / "crypto" / "bf" / "asm").mkdir(parents=True)
    bf = 'push(@INC,"perlasm","../../perlasm");\nrequire "cbc.pl";\n'
    (tree / "crypto" / "bf" / "asm" / "bf-586.pl").write_text(bf)
    later = 'push(@INC,"${dir}","${dir}../../perlasm");\nrequire "desboth.pl";\n'
    (asm / "later.pl").write_text(later)
    env = {k: v for k, v in os.environ.items() if k != "PERL_USE_UNSAFE_INC"}

    def generate() -> subprocess.CompletedProcess[str]:
        # as 0.9.8's crypto/des/Makefile runs it: `(cd asm; $(PERL) des-586.pl elf ...)`
        return subprocess.run(["perl", "des-586.pl", "elf"], cwd=asm, capture_output=True,
                              text=True, timeout=60, check=False, env=env)

    before = generate()
    if before.returncode == 0:
        pytest.skip("this perl still has . in @INC (< 5.26)")
    assert "Can't locate desboth.pl in @INC" in before.stderr
    out = run_fix(INC_DOT, tree)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "crypto/des/asm/des-586.pl: 1\n"
    after = generate()
    assert after.returncode == 0, after.stderr
    assert after.stdout == "desboth loaded\n"
    assert 'push(@INC,".","perlasm","../../perlasm");' in (asm / "des-586.pl").read_text()
    assert (tree / "crypto" / "bf" / "asm" / "bf-586.pl").read_text() == bf
    assert (asm / "later.pl").read_text() == later
    assert run_fix(INC_DOT, tree).stdout == "", "a second run changes nothing"


def test_inc_dot_fix_is_an_i386_compat_script_for_releases_before_1_0_1() -> None:
    fix = load_patches([project_patches()])["perl-inc-dot"]
    assert fix.is_script and fix.apply == "auto"
    assert all(fix.applies_to(v, "i386") for v in ("0.9.8a", "0.9.8y", "0.9.8zh", "1.0.0t"))
    assert not fix.applies_to("0.9.8y", "x86_64")
    assert not fix.applies_to("1.0.1k", "i386")   # built here on i386 without it


def test_rewrite_scripts_load_as_patches(tmp_path: Path) -> None:
    index = load_patches([project_patches()])
    fix = index["perl-file-glob"]
    assert fix.is_script and fix.apply == "auto" and fix.context_name == \
        "patch-perl-file-glob.pl"
    assert fix.applies_to("1.1.0g", "x86_64") and not fix.applies_to("1.1.1w", "x86_64")
    d = tmp_path / "p"
    d.mkdir()
    (d / "x.yaml").write_text(yaml.safe_dump({"why": "w", "versions": ["1.*"]}))
    (d / "x.pl").write_text("1;\n")
    (d / "x.patch").write_text("--- a\n")
    with pytest.raises(PatchError, match=r"both x.patch and x.pl exist; keep one"):
        load_patches([d])
    (d / "x.patch").unlink()
    (d / "orphan.pl").write_text("1;\n")
    with pytest.raises(PatchError, match=r"orphan.pl: has no metadata file orphan.yaml"):
        load_patches([d])


class FactsBackend(FakeBackend):
    """Reports what buildinfo.sh records about the source, as a real image does."""

    def run(self, image: str, command: Sequence[str], *, env: Mapping[str, str] | None = None,
            limits: RunLimits | None = None) -> RunResult:
        res = super().run(image, command, env=env, limits=limits)
        if command[:2] == ["/bin/sh", "-c"] and "openssl-matrix" in command[2]:
            out = res.stdout + ("==> source-facts.txt\nbuild_system=unified\n"
                                "option.no-tests=unknown\ndrop=no-tests\n"
                                "==> compat.txt\nperl-file-glob: Configure: 1\n")
            return RunResult(command=res.command, env=res.env, stdout=out, stderr="",
                             exit_code=0, started=res.started, ended=res.ended, seconds=1.0)
        return res


def test_build_record_keeps_the_source_facts_and_compat_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    sha = make_tarball(tmp_path / "openssl-1.1.0g.tar.gz", "1.1.0g")
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump({
        "defaults": {"base_image": "debian:bookworm"},
        "versions": {"1.1.0g": {"sha256": sha,
                                "urls": [f"file://{tmp_path}/openssl-1.1.0g.tar.gz"]}},
        "axes": {"asm": ["asm"]},
        "suites": {"s": {"algorithms": ["md5"]}}}))
    m = load_matrix(path)
    (out,) = Builder(m, FactsBackend(), ResultsTree(tmp_path / "r"),
                     workdir=tmp_path / "w").build(list(m.variants))
    assert out.record["source_facts"] == {"build_system": "unified",
                                          "option.no-tests": "unknown", "drop": "no-tests"}
    assert out.record["compat_changes"] == ["perl-file-glob: Configure: 1"]
