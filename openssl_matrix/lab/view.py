"""The lab's live display: one line per engine.

On a terminal the block of lines is redrawn in place (status, cell N/M, elapsed time,
the engine's latest output line). Elsewhere (a log file, CI) it prints plain lines, each
prefixed with the engine's name: when an engine starts a profile or a cell, warns, fails,
and when it ends.
"""

from __future__ import annotations

import shutil
import threading
from typing import Any, TextIO

from openssl_matrix.core.errors import EXIT_CODES

#: Exit statuses an engine worker reports, in words: the one table's (core/errors.py) and
#: the signals that end a worker.
REASONS = {**{code: words for code, words in EXIT_CODES.items() if code},
           -9: "killed (SIGKILL)", -15: "terminated"}

MARK = {"starting": "…", "running": "▸", "finished": "✓", "failed": "✕"}


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else \
        f"{s // 60}:{s % 60:02d}"


def status_line(state: Any, width: int, name_width: int = 12) -> str:
    """``✓ xeon     ssh://bench@xeon.lab  3/12  4:05  <latest line>`` cut to ``width``."""
    job = state.job
    head = (f"{MARK.get(state.status, '?')} {job.name:<{name_width}} {state.status:<9}"
            f"{state.progress:>7}  {_clock(state.elapsed):>6}  ")
    if state.status == "failed":
        tail = f"exit {state.code} ({REASONS.get(state.code, 'failed')}) — {state.last}"
    elif state.status == "finished":
        tail = f"done — {job.engine}"
    else:
        tail = f"{job.engine}: {state.last}" if state.last else job.engine
    text = head + tail
    return text if len(text) <= width else text[:max(0, width - 1)] + "…"


def _interesting(line: str) -> bool:
    text = line.strip()
    return text.startswith(("▸", "═", "error", "warning", "✕", "waiting for",
                            "got the measurement lock")) or "FAILED" in text


class Display:
    def __init__(self, states: list[Any], stream: TextIO) -> None:
        self.states = states
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.drawn = 0
        self.lock = threading.Lock()
        self.name_width = max([len(s.job.name) for s in states] + [4])

    def _width(self) -> int:
        return shutil.get_terminal_size((120, 24)).columns - 1

    def line(self, state: Any, text: str | None) -> None:
        """An output line of ``state``'s worker (None: it ended)."""
        if self.tty:
            return  # the next refresh shows it
        with self.lock:
            if text is None:
                self.stream.write(status_line(state, 10_000, self.name_width) + "\n")
            elif _interesting(text):
                self.stream.write(f"[{state.job.name}] {text.strip()}\n")
            self.stream.flush()

    def refresh(self) -> None:
        if not self.tty:
            return
        with self.lock:
            width = self._width()
            up = f"\033[{self.drawn}F" if self.drawn else ""
            body = "".join(status_line(s, width, self.name_width) + "\033[K\n"
                           for s in self.states)
            self.stream.write(up + body)
            self.stream.flush()
            self.drawn = len(self.states)

    def finish(self) -> None:
        self.refresh()
