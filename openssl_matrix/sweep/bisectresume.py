"""Resuming a bisection (issue 33 item 4): what was measured is never measured again.

A bisection is a deterministic walk: given the same ends, releases, rules and rounds, it
asks for the same measurements in the same order. So every measurement it makes is
appended to the range's progress file (``results/bisections.py``) as it is made, and a
later bisection of the same cell, ends, build, CPU profile and engine replays them call by
call — the same rounds, the same skipped releases — and measures only from where the
recording ends: an interrupted bisection resumes where it stopped, a finished one is
reported again without building or measuring anything, and ``--fresh`` sets the
recording aside and measures from the start. Should the walk ask for something else than
was recorded (the rules changed), the recording is kept up to that point and the rest
set aside, never replayed out of order.

Interleaved runs (``bisect.Paired``, one pair's run ``k``) are recorded in the same file,
in the same order, as ``{"pair": [top, bottom], "run": k, "paired": {...}}``: a resumed
bisection replays their ratios (and a pair the harness could not time, with its reason)
instead of running the harness again."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from openssl_matrix.results.bisections import Progress
from openssl_matrix.sweep.bisect import Cell, Measure, Paired, PairMeasure, Round, Unmeasurable


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


def range_name(cell: Cell, good: str, bad: str) -> str:
    """``<cell>--<good>--<bad>``: the folder of one range's bisections under ``_bisect``."""
    return "--".join(slug(x) for x in (cell.text(), good, bad))


def measure_key(build: str, cpu_profile: str, engine: Mapping[str, Any]) -> str:
    """Which measurements may be replayed for one another: the same build options, CPU
    profile and engine (comparisons stay within one engine)."""
    ident = str(engine.get("id") or engine.get("endpoint") or engine.get("name") or "local")
    digest = hashlib.sha256(ident.encode()).hexdigest()[:12]
    return f"{slug(build)}--{slug(cpu_profile)}--{digest}"


class Replaying:
    """A ``bisect.Measure`` that replays ``progress`` in order, then measures with
    ``inner`` and records each new measurement (rounds, or the release it could not
    measure and why)."""

    def __init__(self, inner: Measure, progress: Progress,
                 pairs: PairMeasure | None = None) -> None:
        self.inner = inner
        self.inner_pair = pairs
        self.progress = progress
        self.recorded = progress.entries()
        self.replayed = 0
        self.measured = 0

    def __call__(self, releases: Sequence[str], n: int) -> Sequence[Round]:
        call = {"releases": list(releases), "n": n}
        if self.replayed < len(self.recorded):
            entry = self.recorded[self.replayed]
            if {"releases": entry.get("releases"), "n": entry.get("n")} == call:
                self.replayed += 1
                return self._replay(entry)
            self._diverged()
        try:
            rounds = self.inner(releases, n)
        except Unmeasurable as exc:
            self.progress.append({**call, "unmeasurable": {"release": exc.release,
                                                           "reason": exc.reason}})
            self.measured += 1
            raise
        self.progress.append({**call, "rounds": [dict(r) for r in rounds]})
        self.measured += 1
        return rounds

    def pair(self, top: str, bottom: str, run: int) -> Paired:
        """``bisect.PairMeasure``: replayed when recorded, else measured and recorded."""
        assert self.inner_pair is not None
        call = {"pair": [top, bottom], "run": run}
        if self.replayed < len(self.recorded):
            entry = self.recorded[self.replayed]
            if {"pair": entry.get("pair"), "run": entry.get("run")} == call:
                self.replayed += 1
                failed = entry.get("unmeasurable")
                if isinstance(failed, Mapping):
                    raise Unmeasurable(str(failed.get("release")), str(failed.get("reason")))
                got = entry.get("paired")
                return Paired.from_dict(got if isinstance(got, Mapping) else {})
            self._diverged()
        try:
            paired = self.inner_pair(top, bottom, run)
        except Unmeasurable as exc:
            self.progress.append({**call, "unmeasurable": {"release": exc.release,
                                                           "reason": exc.reason}})
            self.measured += 1
            raise
        self.progress.append({**call, "paired": paired.as_dict()})
        self.measured += 1
        return paired

    @staticmethod
    def _replay(entry: Mapping[str, Any]) -> Sequence[Round]:
        failed = entry.get("unmeasurable")
        if isinstance(failed, Mapping):
            raise Unmeasurable(str(failed.get("release")), str(failed.get("reason")))
        rounds = entry.get("rounds")
        return [{str(k): (float(v) if isinstance(v, (int, float)) else None)
                 for k, v in r.items()} for r in rounds if isinstance(r, Mapping)] \
            if isinstance(rounds, list) else []

    def _diverged(self) -> None:
        """Keep what was replayed; set the rest of the recording aside."""
        kept = self.recorded[:self.replayed]
        self.progress.set_aside()
        for entry in kept:
            self.progress.append(entry)
        self.recorded = kept
