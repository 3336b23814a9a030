"""The bench's plan for comparisons: how narrow a paired ratio is measured, and how many
attempts a side may take for it.

The rules themselves (a sample below its cell's best is ``shared-core``, a cell's figure,
a comparison's Hodges–Lehmann ratio and its interval) are pure statistics that the report,
a reproduction and the sweep share with the bench: they live in ``core/stats.py``.
"""

from __future__ import annotations

#: The half-width (relative) a paired ratio's interval is measured down to: a comparison
#: wider than this gets further rounds of both sides, up to the attempt limit.
PAIRED_TARGET = 0.02
#: Attempts each side of a comparison may take to narrow it to :data:`PAIRED_TARGET`
#: (the command line's bench; the Python API's planned rounds only). The interval needs
#: some eight kept samples a side for ±2 % when the kept ones spread by ±1.5 %; 12
#: attempts were tried on an Intel Xeon VM with steal (2026-12-03: the bench took 1,125 s
#: against 471 s, and still left 1-5 kept samples a side, two thirds of all samples more
#: than 5 % below their best), so the limit stays at the other figures' 6.
PAIRED_ATTEMPTS = 6
