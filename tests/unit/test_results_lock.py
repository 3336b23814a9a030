"""The results tree's lock names its holder, even when asked in the moment between the
holder's flock and its writing its name (openssl_matrix/results.py)."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from typing import IO

import pytest

from openssl_matrix.core.errors import ResultsError
from openssl_matrix.results.tree import ResultsTree


def hold(tree: Path, text: str) -> IO[str]:
    """Take the tree's flock through another open file, as another process would, with
    ``text`` in the file."""
    tree.mkdir(parents=True, exist_ok=True)
    fh = (tree / ".lock").open("a+", encoding="utf-8")
    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    fh.seek(0)
    fh.truncate()
    fh.write(text)
    fh.flush()
    return fh


def test_a_holder_that_names_itself_late_is_named(tmp_path: Path) -> None:
    fh = hold(tmp_path, "")
    me = f"pid {os.getpid()} (invoke matrix bench) since now\n"

    def name_it() -> None:
        fh.write(me)
        fh.flush()

    timer = threading.Timer(0.2, name_it)
    timer.start()
    with pytest.raises(ResultsError, match=f"is in use by pid {os.getpid()} "):
        ResultsTree(tmp_path).lock()
    timer.join()
    fh.close()


def test_a_gone_holders_name_is_never_given_and_a_freed_lock_is_taken(
        tmp_path: Path) -> None:
    fh = hold(tmp_path, "pid 999999999 (a bench long gone) since yesterday\n")
    with pytest.raises(ResultsError, match="is in use by another process") as exc:
        ResultsTree(tmp_path, name_pause=0.01).lock()
    assert "999999999" not in str(exc.value)
    # released while the refused lock looks for a name: it is taken after all
    timer = threading.Timer(0.05, lambda: fcntl.flock(fh, fcntl.LOCK_UN))
    timer.start()
    tree = ResultsTree(tmp_path, name_pause=0.01)
    tree.lock()
    timer.join()
    fh.close()
    assert (tmp_path / ".lock").read_text().startswith(f"pid {os.getpid()} ")
    tree.unlock()
