"""The release catalogue (openssl_matrix/releases.yaml): its declarations checked
against each other, its merge into the matrix, and what list and build say of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from openssl_matrix.cli.commands.list import run as cmd_list
from openssl_matrix.core.errors import ConfigError
from openssl_matrix.images import sources
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.releases import (
    CATALOGUE_FILE,
    catalogue_problems,
    load_catalogue,
    parse_catalogue,
)

ROOT = Path(__file__).resolve().parents[2]
SERIES = ["0.9.8", "1.0.0", "1.0.1", "1.0.2", "1.1.0", "1.1.1",
          "3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6"]


def test_the_catalogue_is_consistent_and_covers_every_series() -> None:
    cat = load_catalogue()
    assert catalogue_problems(cat) == []
    assert len(cat.releases) >= 150
    assert all(r.official for r in cat.releases)
    by_series = cat.by_series()
    assert sorted(by_series, key=SERIES.index) == SERIES
    for r in cat.releases:
        assert r.sources, r.version
        # every source names its project and a place in it (repository path @commit, or URL)
        assert all(s.where.startswith(("github:", "http://", "build/", "Homebrew"))
                   for s in r.sources), r.version
        assert r.single_source == (len(r.projects) == 1), r.version
    two = [r for r in cat.releases if not r.single_source]
    assert len(two) >= 120   # most have two independent projects behind them
    # the file names the releases the seeds care about, each with its sources
    assert cat.sha256("1.1.1w") == \
        "cf3098950cb4d853ad95c0841f1f9c6d3dc102dccfcacd521d93925208b76ac8"
    w = cat.get("1.1.1w")
    assert w is not None and {"Buildroot", "Conan Center", "Debian"} <= set(w.projects)


def test_a_release_the_sources_disagree_on_is_not_declared() -> None:
    cat = load_catalogue()
    disputed = cat.disputed_versions()
    # OpenEmbedded's 0.9.8t recipe carries 0.9.8s's digest; Gentoo's Manifest another
    assert "0.9.8t" in disputed and cat.get("0.9.8t") is None
    digests = {d.sha256 for d in disputed["0.9.8t"]}
    assert len(digests) == 2 and cat.sha256("0.9.8s") in digests


def test_known_sha256_is_the_catalogue() -> None:
    cat = load_catalogue()
    assert {r.version: r.sha256 for r in cat.releases} == sources.KNOWN_SHA256


def _doc(**releases: dict[str, object]) -> str:
    return yaml.safe_dump({"schema": 1, "releases": releases})


def _src(project: str, where: str = "github:x/y path @abc") -> dict[str, str]:
    return {"project": project, "where": f"{where} ({project})"}


GOOD = "a" * 64


def test_problems_name_each_kind_of_bad_declaration(tmp_path: Path) -> None:
    two = [_src("A"), _src("B")]
    cases: dict[str, dict[str, dict[str, object]]] = {
        "not 64 lowercase hex": {"1.1.1w": {"sha256": "ABC", "official": True,
                                            "sources": two}},
        "not marked single_source": {"1.1.1w": {"sha256": GOOD, "official": True,
                                                "sources": [_src("A")]}},
        "marked single_source but 2 projects": {"1.1.1w": {
            "sha256": GOOD, "official": True, "single_source": True, "sources": two}},
        "one tarball cannot be two releases": {
            "1.1.1v": {"sha256": GOOD, "official": True, "sources": two},
            "1.1.1w": {"sha256": GOOD, "official": True, "sources": two}},
        "not a public release number": {"1.1.1-pre9": {"sha256": GOOD, "official": True,
                                                       "sources": two}},
        "only official digests": {"1.1.1w": {"sha256": GOOD, "sources": two}},
    }
    for needle, releases in cases.items():
        cat = parse_catalogue(_doc(**releases), tmp_path / "c.yaml")
        problems = catalogue_problems(cat)
        assert any(needle in p for p in problems), (needle, problems)
    # the same source twice (two Gentoo trees are one project: still one source)
    cat = parse_catalogue(_doc(**{"1.1.1w": {"sha256": GOOD, "official": True, "sources": [
        _src("Gentoo", "github:a/b"), _src("Gentoo", "github:c/d")]}}), tmp_path / "c.yaml")
    assert any("one source (Gentoo)" in p for p in catalogue_problems(cat))


def test_a_release_twice_or_declared_and_disputed_is_refused(tmp_path: Path) -> None:
    entry = f"  1.1.1w: {{sha256: {GOOD}, official: true, single_source: true, sources: " \
            "[{project: A, where: x}]}\n"
    with pytest.raises(ConfigError, match=r"1\.1\.1w"):
        parse_catalogue("schema: 1\nreleases:\n" + entry + entry, tmp_path / "c.yaml")
    text = yaml.safe_dump({"schema": 1, "releases": {"1.1.1w": {
        "sha256": GOOD, "official": True, "single_source": True,
        "sources": [_src("A")]}}, "disputed": {"1.1.1w": [
            {"sha256": GOOD, "sources": [_src("A")]},
            {"sha256": "b" * 64, "sources": [_src("B")]}]}})
    problems = catalogue_problems(parse_catalogue(text, tmp_path / "c.yaml"))
    assert any("also declared under releases" in p for p in problems)


def test_the_shipped_file_is_the_one_read() -> None:
    assert CATALOGUE_FILE.name == "releases.yaml" and CATALOGUE_FILE.is_file()
    raw = yaml.safe_load(CATALOGUE_FILE.read_text(encoding="utf-8"))
    assert len(raw["releases"]) == len(load_catalogue().releases)


MATRIX = {
    "schema": 1, "catalogue": True,
    "versions": {"1.1.1w": {}},
    "suites": {"s": {"algorithms": ["aes-128-cbc"]}},
    "default_variants": ["1.1.1w-*"],
}


def _write(tmp_path: Path, doc: dict[str, object]) -> Path:
    p = tmp_path / "m.yaml"
    p.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return p


def test_the_matrix_adds_every_release_opt_in_and_checks_its_own(tmp_path: Path) -> None:
    m = load_matrix(_write(tmp_path, MATRIX), default_urls=sources.default_urls)
    cat = load_catalogue()
    assert {v.version for v in m.versions} == {r.version for r in cat.releases}
    assert [v.id for v in m.variants] == ["1.1.1w-asm-x86_64"]   # nothing else by default
    own = next(v for v in m.versions if v.version == "1.1.1w")
    assert own.sha256 == cat.sha256("1.1.1w") and own.official and not own.from_catalogue
    added = next(v for v in m.versions if v.version == "1.0.2u")
    assert added.from_catalogue and added.sources and added.sha256 == cat.sha256("1.0.2u")
    assert added.urls and "openssl.org" in added.urls[0]
    wrong = dict(MATRIX, versions={"1.1.1w": {"sha256": "b" * 64}})
    with pytest.raises(ConfigError, match=r"versions\.1\.1\.1w\.sha256.*not the official"):
        load_matrix(_write(tmp_path, wrong))
    theirs = dict(MATRIX, versions={"1.1.1w": {"sha256": "b" * 64, "official": False}})
    mine = next(v for v in load_matrix(_write(tmp_path, theirs)).versions
                if v.version == "1.1.1w")
    assert mine.sha256 == "b" * 64 and mine.official is False
    with pytest.raises(ConfigError, match="official"):
        load_matrix(_write(tmp_path, dict(MATRIX, versions={"1.1.1w": {"official": True}})))
    without = dict(MATRIX, catalogue=False)
    assert [v.version for v in load_matrix(_write(tmp_path, without)).versions] == ["1.1.1w"]


def test_list_all_json_has_every_release_with_its_sources(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cmd_list(target="", matrix=str(ROOT / "matrix.yaml"), results=str(tmp_path / "r"),
             json=True, all=True)
    rows = json.loads(capsys.readouterr().out)
    official = {r["version"]: r for r in rows if r["official"] and r["sha256"]}
    assert len(official) >= 150
    assert sorted({r["series"] for r in official.values()}, key=SERIES.index) == SERIES
    for r in official.values():
        assert r["sha256_sources"]
        assert r["sha256_status"].startswith("official sha256 (")
    assert official["1.0.2u"]["default"] is False
    cmd_list(target="", matrix=str(ROOT / "matrix.yaml"), results=str(tmp_path / "r"),
             json=False, all=True, only="1.0.2*-asm-x86_64")
    out = capsys.readouterr().out
    assert " series 1.0.2 (" in out
    assert "1.0.2u   official sha256 (catalogue; " in out


def test_a_release_with_no_reachable_tarball_names_the_file_and_where_to_put_it(
        tmp_path: Path) -> None:
    sha = load_catalogue().sha256("1.0.2u")
    assert sha is not None
    err = sources._all_failed("1.0.2u", sha, [("https://x/openssl-1.0.2u.tar.gz", "DNS")],
                              [tmp_path / "tarballs"], tmp_path / "cache")
    hint = err.hint or ""
    assert "bring openssl-1.0.2u.tar.gz (from https://www.openssl.org/source/old/1.0.2/" \
        "openssl-1.0.2u.tar.gz" in hint
    assert f"put it into {tmp_path / 'tarballs'} (the matrix's sources_dirs)" in hint
    assert sha in hint
    bare = sources._all_failed("1.0.2u", sha, [], [], tmp_path / "cache").hint or ""
    assert f"into {tmp_path / 'cache'} (the source cache)" in bare and "sources_dirs" in bare
