"""The status vocabulary: every word the bench's guards write as a figure's status, and
the rule of which statuses count in a median. The report, the reproduction judge and its
verdicts, the release sweep and the bench itself share it.

A figure's status is written by the parser (``parse/figures.py``: ``ok``, ``imprecise``,
``unparsable`` ...: the parser's own words, kept beside the parser, which every reader
already sits above) or by a guard of the bench (``measure/guards.py``, ``measure/tls.py``:
the words below, what each means in ``measure/guards.py``'s docstring). The words and the
rule sit in the bottom layer so that every reader (report, repro, sweep) takes them from
below instead of from the bench or from one another.
"""

from __future__ import annotations

# ----------------------------------------------------------------------------------
# the guards' statuses (measure/guards.py)

ENGINE_NOT_ENGAGED = "engine-not-engaged"
ENGINE_UNVERIFIED = "engine-unverified"
TIME_BASIS = "time-basis"
LEGACY_PATH = "legacy-path"
MASK_NOT_APPLIED = "mask-not-applied"
MASK_OVERREACH = "mask-overreach"
CANNOT_RUN = "cannot-run-on-cpu"
NOISY = "noisy"
CONTENDED = "contended"
#: A run the core's other thread (or a slice of its time) slowed while the host accounting
#: saw nothing: the port-share probe (measure/portshare.py) or the value rule
#: (core/stats.py's ``below_best``) says so.
SHARED_CORE = "shared-core"
#: Statuses of figures the host disturbed: kept, out of medians, measured again.
DISTURBED = (CONTENDED, SHARED_CORE)

# ----------------------------------------------------------------------------------
# the TLS suite's statuses (measure/tls.py)

#: Fewer than 90 % of a ``-reuse`` run's connections resumed: it measured full handshakes.
NOT_RESUMED = "not-resumed"
#: The check handshake saw another protocol, cipher or group than the run asked for.
NEGOTIATION = "negotiation-differs"
#: The server had died, or did not end as told.
SERVER_EXIT = "server-exit"

# ----------------------------------------------------------------------------------
# which count

#: Statuses whose figure goes into a median: the parser's ok and imprecise, and guard
#: labels that keep a good value (the low-level path, a noisy spread, a busy host). Other
#: statuses (engine not engaged, mask not applied or overreaching, unreadable output) are
#: counted and shown, never averaged in.
USABLE_STATUSES = ("ok", "imprecise", LEGACY_PATH, NOISY, TIME_BASIS)
