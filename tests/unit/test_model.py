"""Matrix loading: expansion into variants, and errors that name file and key path."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.matrix.load import load_matrix, matrix_from_document
from openssl_matrix.matrix.model import variant_id

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, data: object) -> Path:
    p = tmp_path / "m.yaml"
    p.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return p


def base() -> dict[str, object]:
    return {
        "versions": {"1.1.1w": {"sha256": "a" * 64}},
        "suites": {"s": {"algorithms": ["aes-128-cbc"]}},
    }


def test_default_matrix_expands_to_readable_ids() -> None:
    m = load_matrix(ROOT / "matrix.yaml")
    ids = [v.id for v in m.variants]
    assert ids == ["1.1.1w-asm-x86_64", "1.1.1w-no-asm-x86_64",
                   "3.0.20-asm-x86_64", "3.0.20-no-asm-x86_64"]
    blog = m.suite("blog")
    assert blog.algorithms == ("aes-256-cbc", "idea-cbc", "md5", "sha1", "sha256", "sha512")
    assert [mk.ia32cap for mk in blog.masks] == [None, "~0x200000200000000:~0x0"]


def test_variant_id_with_march_and_options() -> None:
    assert variant_id("1.0.1e", "no-asm", "i386", "c3-2") == "1.0.1e-no-asm-i386-march-c3-2"
    assert variant_id("1.0.1e", "asm", "x86_64", "default", ("no-ssl2",)) == \
        "1.0.1e-asm-x86_64-no-ssl2"


def test_select_patterns(tmp_path: Path) -> None:
    m = load_matrix(ROOT / "matrix.yaml")
    assert [v.id for v in m.select("*-no-asm-*")] == ["1.1.1w-no-asm-x86_64",
                                                       "3.0.20-no-asm-x86_64"]
    assert len(m.select("1.1.1w-*,3.0.20-asm-*")) == 3
    with pytest.raises(ConfigError, match="matches no variant"):
        m.select("2.0.*")


def test_unknown_key_suggests_the_right_one(tmp_path: Path) -> None:
    data = base()
    data["version"] = data.pop("versions")
    with pytest.raises(ConfigError) as exc:
        load_matrix(write(tmp_path, data))
    text = str(exc.value)
    assert "m.yaml: version: unknown key" in text
    assert "perhaps you meant 'versions'?" in text


def test_nested_key_path(tmp_path: Path) -> None:
    data = base()
    data["versions"] = {"1.1.1w": {"sha256": "xyz"}}
    with pytest.raises(ConfigError, match=r"m.yaml: versions.1.1.1w.sha256: 'xyz' is not a valid"):
        load_matrix(write(tmp_path, data))


def test_shell_metacharacters_refused(tmp_path: Path) -> None:
    data = base()
    data["versions"] = {"1.1.1w": {"sha256": "a" * 64, "configure": ["no-asm; rm -rf /"]}}
    with pytest.raises(ConfigError, match=r"versions.1.1.1w.configure\[0\].*not allowed"):
        load_matrix(write(tmp_path, data))


def test_bad_ia32cap(tmp_path: Path) -> None:
    data = base()
    data["suites"] = {"s": {"algorithms": ["md5"], "masks": [{"name": "x", "ia32cap": "zz"}]}}
    with pytest.raises(ConfigError, match=r"suites.s.masks\[0\].ia32cap"):
        load_matrix(write(tmp_path, data))


def test_exclude_that_matches_nothing(tmp_path: Path) -> None:
    data = base()
    data["exclude"] = [{"version": "0.9.8*"}]
    with pytest.raises(ConfigError, match=r"exclude\[0\]: rule .* matches no variant"):
        load_matrix(write(tmp_path, data))


def test_include_adds_a_variant_and_duplicates_are_refused(tmp_path: Path) -> None:
    data = base()
    data["include"] = [{"version": "1.1.1w", "march": "native"}]
    m = load_matrix(write(tmp_path, data))
    assert [v.id for v in m.variants] == ["1.1.1w-asm-x86_64", "1.1.1w-asm-x86_64-march-native"]
    data["include"] = [{"version": "1.1.1w"}]
    with pytest.raises(ConfigError, match="same variant id"):
        load_matrix(write(tmp_path, data))


def test_yaml_syntax_error_has_a_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"YAML syntax error \(line 3"):
        load_matrix(write(tmp_path, "versions:\n  - [unclosed\n"))


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="no such matrix file"):
        load_matrix("/nonexistent/matrix.yaml")


def test_auto_profile_is_reserved(tmp_path: Path) -> None:
    data = base()
    data["profiles"] = {"auto": {}}
    with pytest.raises(ConfigError, match="built in"):
        load_matrix(write(tmp_path, data))


def test_digest_ignores_comments_and_order(tmp_path: Path) -> None:
    a = write(tmp_path, base())
    da = load_matrix(a).digest
    text = "# comment\n" + yaml.safe_dump(dict(reversed(list(base().items()))))
    b = tmp_path / "b.yaml"
    b.write_text(text)
    assert load_matrix(b).digest == da


def test_the_documented_example_expands_as_documented(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "matrix.md").read_text()
    example = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    m = load_matrix(write(tmp_path, example))
    assert [v.id for v in m.variants] == [
        "1.1.1w-asm-x86_64", "1.1.1w-asm-x86_64-march-native", "1.1.1w-no-asm-x86_64",
        "1.1.1w-no-asm-x86_64-march-native", "1.0.1e-asm-x86_64", "1.0.1e-no-asm-x86_64",
        "1.1.1w-asm-x86_64-march-x86-64-v3"]
    assert m.select("1.0.1e-asm-*")[0].configure == ("no-ssl2",)


def test_docs_way_to_declare_a_release_tree_you_have(tmp_path: Path) -> None:
    """docs/matrix.md's local tree recipe: its tar command makes a tarball `pin` takes
    (one top folder, no .git/.pc/debian), and its snippet needs a complete matrix."""
    import shlex
    import subprocess
    import tarfile

    from openssl_matrix.images.sources import pin_source

    text = (ROOT / "docs" / "matrix.md").read_text()
    example = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    section = text.split("**A release tree you have**", 1)[1]
    snippet = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    command = section.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()[0]
    assert command.startswith("tar -czf openssl-1.0.2k.tar.gz ")
    tree = tmp_path / "openssl-1.0.2k"
    for folder in (".git", ".pc", "debian", "crypto"):
        (tree / folder).mkdir(parents=True)
        (tree / folder / "file").write_text("x\n")
    (tree / "Configure").write_text("x\n")
    subprocess.run(shlex.split(command), cwd=tmp_path, check=True, timeout=60)
    tarball = tmp_path / "openssl-1.0.2k.tar.gz"
    with tarfile.open(tarball, "r:gz") as archive:
        names = archive.getnames()
    assert {n.split("/")[0] for n in names} == {"openssl-1.0.2k"}
    assert sorted(n.split("/", 1)[1] for n in names if "/" in n) == \
        ["Configure", "crypto", "crypto/file"]
    # not the release's bytes (the catalogue knows 1.0.2k's): pinned on purpose
    sha = pin_source("1.0.2k", tarball, tmp_path / "pins.lock", cache_dir=tmp_path / "cache",
                     force=True)
    mine = snippet.replace("<sha256sum of the file>", sha).replace(
        "/srv/tarballs/openssl-1.0.2k.tar.gz", str(tarball))
    with pytest.raises(ConfigError, match="suites: no suites declared"):
        load_matrix(write(tmp_path, mine))
    doc = yaml.safe_load(example)   # the lines added to the complete example
    doc["versions"].update(yaml.safe_load(mine)["versions"])
    m = load_matrix(write(tmp_path, doc))
    (mine_first, *_) = m.select("1.0.2k-*")
    assert mine_first.base_image == "debian:bookworm"
    assert mine_first.version.urls == (f"file://{tarball}",)


def test_a_matrix_is_constructible_in_python_as_the_file_would_load(tmp_path: Path) -> None:
    doc = yaml.safe_load((ROOT / "matrix.yaml").read_text())
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))  # versions keep the file's order
    from_file = load_matrix(path)
    built = matrix_from_document(doc, path=path)
    assert [v.id for v in built.all_variants] == [v.id for v in from_file.all_variants]
    assert built.digest == from_file.digest and built.path == path
    with pytest.raises(ConfigError, match=r"<python>: versions"):
        matrix_from_document({**doc, "versions": {"1.1": {}}})


def test_without_a_base_image_every_release_gets_its_archs_default() -> None:
    # the default depends on the arch alone (era_base_image(arch)): 0.9.8 and 3.x alike
    doc = yaml.safe_load((ROOT / "matrix.yaml").read_text())
    del doc["defaults"]["base_image"]
    m = matrix_from_document(doc)
    seen = {(v.version.version.split(".")[0], v.arch, v.base_image) for v in m.all_variants}
    assert seen == {("0", "x86_64", "debian:bookworm"), ("1", "x86_64", "debian:bookworm"),
                    ("3", "x86_64", "debian:bookworm"), ("1", "i386", "i386/debian:bookworm"),
                    ("3", "i386", "i386/debian:bookworm")}
