"""Which figure statuses count: the one vocabulary the report, the reproduction judge and
its verdicts share.

A figure's status is written by the parser (``parse/figures.py``: ``ok``, ``imprecise``,
``unparsable`` ...) or by a guard of the bench (``measure/guards.py``: ``noisy``,
``contended``, ``mask-not-applied`` ...). Here is only the rule of which of those words
let a figure into a median; it sits in the bottom layer so that every reader (report,
repro) takes it from below instead of from one another.
"""

from __future__ import annotations

#: Statuses whose figure goes into a median: the parser's ok and imprecise, and guard
#: labels that keep a good value (the low-level path, a noisy spread, a busy host). Other
#: statuses (engine not engaged, mask not applied or overreaching, unreadable output) are
#: counted and shown, never averaged in.
USABLE_STATUSES = ("ok", "imprecise", "legacy-path", "noisy", "time-basis")
