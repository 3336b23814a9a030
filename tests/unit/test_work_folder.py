"""The build contexts' folder beside the matrix (``.work``): the tool removes what a
context no longer needs there, so it writes only into a folder it made (its marker), or
one holding nothing but what it makes (made before the marker) — issue 35's audit: a
user's own ``.work`` lost files."""

from __future__ import annotations

from pathlib import Path

import pytest

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.images.build import WORK_MARKER, work_folder

pytestmark = pytest.mark.hostile


def test_a_new_work_folder_is_made_and_marked(tmp_path: Path) -> None:
    work = work_folder(tmp_path)
    assert work == tmp_path / ".work" and (work / WORK_MARKER).is_file()
    assert work_folder(tmp_path) == work  # again: the same, nothing refused


def test_an_older_work_folder_of_the_tools_own_folders_is_taken(tmp_path: Path) -> None:
    for name in ("contexts/1.1.1w-asm-x86_64", "ccache/x", "engine-a/contexts"):
        (tmp_path / ".work" / name).mkdir(parents=True)
    assert (work_folder(tmp_path) / WORK_MARKER).is_file()


@pytest.mark.parametrize("entry", ["notes.txt", "contexts.bak", "src"])
def test_a_users_own_work_folder_is_left_alone(tmp_path: Path, entry: str) -> None:
    work = tmp_path / ".work"
    (work / "contexts" / "v").mkdir(parents=True)
    (work / "contexts" / "v" / "mine.c").write_text("int main(void){}\n")
    (work / entry).write_text("mine\n")
    before = sorted(p.relative_to(work) for p in work.rglob("*"))
    with pytest.raises(ConfigError, match="not made by openssl-matrix") as err:
        work_folder(tmp_path)
    assert entry in str(err.value) and err.value.hint and "move the folder aside" in err.value.hint
    assert sorted(p.relative_to(work) for p in work.rglob("*")) == before
    assert not (work / WORK_MARKER).exists()


def test_a_marked_folder_may_hold_anything(tmp_path: Path) -> None:
    work = work_folder(tmp_path)
    (work / "leftover.log").write_text("x\n")
    assert work_folder(tmp_path) == work


def test_a_file_named_work_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".work").write_text("not a folder\n")
    with pytest.raises(ConfigError, match="is a file"):
        work_folder(tmp_path)
