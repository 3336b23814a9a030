"""Replaying a bisection's recorded measurements (sweep/bisectresume.py): in order, a
skipped release as skipped, a torn last line ignored, a walk that asks for something else
than was recorded keeps the recorded prefix and sets the rest aside."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from openssl_matrix.results.bisections import Progress
from openssl_matrix.sweep.bisect import Round, Unmeasurable, parse_cell
from openssl_matrix.sweep.bisectresume import Replaying, measure_key, range_name


class Inner:
    """A measure that returns one round per release (values made up for the logic) and
    cannot measure ``broken``."""

    def __init__(self, broken: str = "") -> None:
        self.calls: list[list[str]] = []
        self.broken = broken

    def __call__(self, releases: Sequence[str], n: int) -> Sequence[Round]:
        self.calls.append(list(releases))
        if self.broken in releases:
            raise Unmeasurable(self.broken, "the build failed: error: no")
        return [{r: 100.0 + i for i, r in enumerate(releases)} for _ in range(n)]


def test_measurements_are_recorded_then_replayed_in_order(tmp_path: Path) -> None:
    progress = Progress(tmp_path / "progress-k.jsonl")
    first = Replaying(Inner(broken="b"), progress)
    got = first(["a", "c"], 2)
    with pytest.raises(Unmeasurable):
        first(["a", "b", "c"], 2)
    inner = Inner()
    again = Replaying(inner, progress)
    assert again(["a", "c"], 2) == got
    with pytest.raises(Unmeasurable, match="the build failed"):
        again(["a", "b", "c"], 2)
    assert inner.calls == [] and again.replayed == 2
    again(["a", "c"], 2)  # past the recording: measured, and recorded
    assert inner.calls == [["a", "c"]] and len(progress.entries()) == 3


def test_a_torn_last_line_is_ignored(tmp_path: Path) -> None:
    progress = Progress(tmp_path / "progress-k.jsonl")
    Replaying(Inner(), progress)(["a", "c"], 1)
    with open(progress.path, "a") as fh:
        fh.write('{"releases": ["a", "c"], "n": 1, "rou')
    assert len(progress.entries()) == 1


def test_a_walk_that_diverges_keeps_the_prefix_and_sets_the_rest_aside(
        tmp_path: Path) -> None:
    progress = Progress(tmp_path / "progress-k.jsonl")
    rec = Replaying(Inner(), progress)
    for releases in (["a", "c"], ["a", "b", "c"], ["b", "c"]):
        rec(releases, 1)
    inner = Inner()
    other = Replaying(inner, progress)
    other(["a", "c"], 1)  # replayed
    other(["a", "x", "c"], 1)  # not what was recorded next: measured
    assert inner.calls == [["a", "x", "c"]]
    assert [e["releases"] for e in progress.entries()] == [["a", "c"], ["a", "x", "c"]]
    assert (tmp_path / "progress-k.set-aside-1.jsonl").is_file()


def test_the_range_and_key_are_names_that_become_paths() -> None:
    cell = parse_cell("fast:aes-128-cbc:8192:no-aesni")
    assert range_name(cell, "3.0.10", "3.0.14") == "fast-aes-128-cbc-8192-no-aesni--3.0.10--3.0.14"
    key = measure_key("asm-x86_64", "auto", {"id": "ABCD:EF"})
    assert key.startswith("asm-x86-64--auto--") and "/" not in key
    assert measure_key("asm-x86_64", "auto", {"id": "other"}) != key
