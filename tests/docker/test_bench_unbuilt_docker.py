"""`invoke matrix bench` on a results tree that has no build of the variants, as a new
user meets it with a tree of their own: told at once, with a command for that tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..unit.test_cli import invoke

pytestmark = pytest.mark.docker


def test_a_tree_without_builds_is_told_at_once_how_to_fill_it(tmp_path: Path) -> None:
    tree = tmp_path / "mine"
    out = invoke("matrix", "bench", "--cpu=auto", "--suite", "pkey,tls", "--results",
                 str(tree))
    assert out.returncode == 5, out.stderr
    # the hint builds into this tree (reusing images on the engine), not into ./results
    assert f"run `invoke matrix build --only 1.1.1w-asm-x86_64 --results {tree}` first" \
        in out.stderr
    assert f"the results tree {tree} has no build of it" in out.stderr
    assert "nothing was measured" in out.stderr
    # nothing to measure: no queueing behind another engineer's build or bench
    assert "waiting for the host's measurement lock" not in out.stderr
