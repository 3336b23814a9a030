"""A typed figure's value in a test: ``BenchFigure``'s numbers may be None (a figure the
run could not measure); a test that compares one first says it is a number."""

from __future__ import annotations


def num(value: object) -> float:
    """``value`` as a float; fails the test when it is None or not a number."""
    assert isinstance(value, (int, float)) and not isinstance(value, bool), value
    return float(value)
