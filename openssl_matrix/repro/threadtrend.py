"""Trends across thread counts (issue 36): "3.0's gap widens from 1 to 4 threads", a claim
on the ratio of two library-harness measurements at one thread count against the same
ratio at another.

A library measurement with figures per thread count writes ``threads: [1, 4]`` and, when
the report prints them, ``reference: {1: 120000, 4: 300000}`` (operations per second, all
threads together). A claim on them writes ``trend: {threads: [1, 4]}``. Such a measurement
keeps its figures keyed by thread count, where a speed measurement keys them by block
size, so the block-size trend's code (``judge.paired_trends``, ``judge._trend_judgement``,
``ReportSpec.reference_trend``) judges it unchanged: per round, the ratio at the ``to``
count over the ratio at the ``from`` count, with a 95 % interval.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openssl_matrix.matrix.check import CheckContext
from openssl_matrix.matrix.kinds.base import FIGURES_THREADS
from openssl_matrix.repro.spec import Measurement

#: What a trend runs across: block sizes (``trend: [16, 16384]``) or thread counts.
BYTES = "bytes"
THREADS = "threads"
#: The most threads a library measurement may name.
MAX_THREADS = 1024


def thread_counts(ctx: CheckContext, value: Any, keypath: str) -> tuple[int, ...]:
    """``threads:`` of a library measurement: one count (``4``) or a list of counts
    (``[1, 4]``) at which it has a figure each. Sorted, without repeats."""
    if not isinstance(value, list):
        count = ctx.posint(value, keypath, optional=False, maximum=MAX_THREADS)
        assert count is not None
        return (count,)
    if not value:
        raise ctx.fail(keypath, "expected a thread count, or a list of them, e.g. [1, 4]")
    counts = [ctx.posint(v, f"{keypath}[{i}]", optional=False, maximum=MAX_THREADS)
              for i, v in enumerate(value)]
    if len(set(counts)) != len(counts):
        raise ctx.fail(keypath, "names a thread count twice")
    return tuple(sorted(c for c in counts if c is not None))


def keyed_reference(ctx: CheckContext, value: Any, keypath: str, counts: tuple[int, ...],
                    figure: Any) -> dict[int, float]:
    """The ``reference`` of a library measurement with several thread counts: a mapping of
    thread count to operations per second (``figure`` reads one), every key a count of
    ``threads``."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ctx.fail(keypath, f"with threads: {list(counts)}, reference gives a figure per "
                       "thread count", hint="e.g. reference: {"
                       + ", ".join(f"{c}: 120000" if i == 0 else f"{c}: ..."
                                   for i, c in enumerate(counts)) + "} (operations per "
                       "second, all threads together)")
    out: dict[int, float] = {}
    for key, fig in value.items():
        if isinstance(key, bool) or not isinstance(key, int) or key not in counts:
            raise ctx.fail(f"{keypath}.{key}", f"{key!r} is not one of this measurement's "
                           f"thread counts ({', '.join(map(str, counts))})",
                           hint="add it to threads, or key the figure by a count listed "
                           "there")
        out[key] = figure(fig, f"{keypath}.{key}")
    return out


def thread_trend(ctx: CheckContext, value: Any, keypath: str, names: tuple[str, str],
                 sides: tuple[Measurement, Measurement]) -> tuple[int, int]:
    """``trend: {threads: [FROM, TO]}``: both measurements library figures with a figure at
    both counts; else an error naming the field and what to write."""
    kp = f"{keypath}.trend"
    if set(value) != {THREADS}:
        raise ctx.fail(kp, f"expected {{threads: [from, to]}}, got keys "
                       f"{', '.join(map(str, value)) or 'none'}",
                       hint="a trend across block sizes is a list: trend: [16, 16384]; "
                       "across thread counts: trend: {threads: [1, 4]}")
    pair = value[THREADS]
    if not isinstance(pair, list) or len(pair) != 2:
        raise ctx.fail(f"{kp}.threads", "expected [from, to]: two thread counts, e.g. [1, 4]",
                       hint="the claim is then on the ratio at 'to' threads divided by the "
                       "ratio at 'from' (docs/reports.md#trend-claims)")
    first, last = (ctx.posint(v, f"{kp}.threads[{i}]", optional=False, maximum=MAX_THREADS)
                   for i, v in enumerate(pair))
    assert first is not None and last is not None
    if first == last:
        raise ctx.fail(f"{kp}.threads", f"compares the ratio at {first} threads with itself",
                       hint="give two different thread counts, e.g. [1, 4]")
    for name, m in zip(names, sides, strict=True):
        if m.suite_kind.figures != FIGURES_THREADS:
            raise ctx.fail(f"{kp}.threads", f"{name} is not a library figure (operation "
                           "library): only the library harness runs at several thread counts",
                           hint="a trend across block sizes of speed figures is written "
                           "trend: [16, 16384]")
        counts = m.thread_counts or (m.threads,)
        lacking = [c for c in (first, last) if c not in counts]
        if lacking:
            want = sorted(set(counts) | {first, last})
            raise ctx.fail(f"{kp}.threads", f"{name} has no figure at "
                           f"{' and '.join(map(str, lacking))} thread(s): its threads are "
                           f"{', '.join(map(str, counts))}",
                           hint=f"write threads: {want} in measurements.{name} (with "
                           "reference: {COUNT: FIGURE, ...} for the figures the report "
                           "prints, or no reference)")
    return first, last


def refuse_untrended(ctx: CheckContext, keypath: str, names: tuple[str, str],
                     sides: tuple[Measurement, Measurement]) -> None:
    """A claim that is not a trend across thread counts compares one figure a side: a
    measurement with several thread counts has one per count, so it is refused there."""
    for name, m in zip(names, sides, strict=True):
        if len(m.thread_counts) > 1:
            raise ctx.fail(f"{keypath}.compare", f"{name} has figures at "
                           f"{', '.join(map(str, m.thread_counts))} threads, and this claim "
                           "compares one figure a side",
                           hint="make it a trend across them (trend: {threads: [FROM, TO]}), "
                           "or compare measurements at one thread count each (threads: N)")
