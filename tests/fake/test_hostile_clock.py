"""Issue 35, the hostile class "clock jumps": the wall clock goes back, forward or stands
still while a command times or dates things (bench session ids and ``--since``, the
report's history, an import's ``imported`` time, the measurement lock, durations). The
tool must not crash, hang, duplicate or mis-order.

The clock is injected, never changed: ``core.clock.wall`` is the one reading of the wall
clock (docs/robustness.md), and the ``clock`` fixture sets it (``core.clock.read_from``)
to the real time plus an offset the test moves (or a time that stands still). Durations
and waits read ``time.monotonic``, which a wall-clock jump does not move.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from openssl_matrix.cli.main import main
from openssl_matrix.core import clock as clock_module
from openssl_matrix.engine.hostlock import EngineBusy, HostLock
from openssl_matrix.report.page import build_report
from openssl_matrix.report.sessions import Selection
from openssl_matrix.results import records
from openssl_matrix.results.export import records as export_records
from openssl_matrix.results.tree import CLOCK_FILE, ResultsTree

from ..sessiontrees import Levels, bench_sessions
from .test_report_sessions import ASM

pytestmark = pytest.mark.hostile

DAY = timedelta(days=1)


class Clock:
    """The wall clock the package reads: the real one moved by ``offset``, or ``frozen``."""

    def __init__(self) -> None:
        self.offset = timedelta()
        self.frozen: datetime | None = None

    def __call__(self) -> datetime:
        return self.frozen or datetime.now(timezone.utc) + self.offset

    def jump(self, by: timedelta) -> None:
        self.offset += by


@pytest.fixture
def clock() -> Iterator[Clock]:
    fake = Clock()
    with clock_module.read_from(fake):
        yield fake


def _ms(session: str) -> int:
    return int(session.rsplit("-", 1)[1])


@pytest.mark.parametrize("how", ["back a day", "standing still", "forward a year, then back"])
def test_session_ids_stay_unique_and_in_order(how: str, clock: Clock, tmp_path: Path) -> None:
    tree = ResultsTree(tmp_path / "results")
    if how == "standing still":
        clock.frozen = datetime(2026, 12, 1, tzinfo=timezone.utc)
    ids = []
    for i in range(4):
        journal = tree.journal("bench", {"a": 1})
        assert not journal.resumed
        ids.append(journal.id)
        journal.record("cell", "complete")
        journal.close()
        if how == "back a day":
            clock.jump(-DAY)
        elif how.startswith("forward"):
            clock.jump(365 * DAY if i == 0 else -365 * DAY)
    assert len(set(ids)) == 4
    assert [_ms(i) for i in ids] == sorted(_ms(i) for i in ids)  # begun later, ordered later
    closed = sorted((tree.root / records.JOURNALS / "closed").glob("bench-*.json"))
    assert len(closed) == 4  # no closed journal replaced another's
    assert {json.loads(p.read_text())["id"] for p in closed} == set(ids)


def test_a_damaged_tree_clock_orders_less_and_breaks_nothing(clock: Clock,
                                                            tmp_path: Path) -> None:
    tree = ResultsTree(tmp_path / "results")
    first = tree.journal("bench", {"a": 1})
    first.close()
    (tree.root / records.JOURNALS / CLOCK_FILE).write_text("not a time\n")
    clock.jump(-DAY)
    second = tree.journal("bench", {"a": 1})
    assert second.id != first.id


class _Jumping(Levels):
    """The fake engine's responder, moving the wall clock before each session."""

    def __init__(self, levels: Sequence[float], clock: Clock, jumps: Sequence[timedelta],
                 ) -> None:
        super().__init__(levels)
        self.clock, self.jumps = clock, jumps

    def begin(self, session: int) -> None:
        super().begin(session)
        self.clock.jump(self.jumps[session])


def test_the_report_shows_the_session_begun_last_after_the_clock_went_back(
        fake_matrix: Path, tmp_path: Path, clock: Clock) -> None:
    # the second session's runs read a day older than the first's
    tree = bench_sessions(fake_matrix, tmp_path, [1.0, 0.9],
                          responder=_Jumping([1.0, 0.9], clock, [timedelta(), -DAY]))
    summary = build_report(tree, tmp_path / "report")
    cell = summary.groups[0].cell(ASM, "aes-128-cbc", 8192)
    assert cell is not None and [f.n for f in cell.history] == [3, 3]
    first, latest = cell.history
    assert first.session != latest.session and _ms(first.session) < _ms(latest.session)
    assert latest.when < first.when  # by the wall clock, the later session is older
    assert cell.shown == latest  # ... and still the one shown: the 0.9 level
    assert first.median is not None and latest.median is not None
    assert latest.median < first.median
    # --since the first session's start keeps the session begun after it
    kept = build_report(tree, tmp_path / "r2", selection=Selection.of(since=first.when))
    c2 = kept.groups[0].cell(ASM, "aes-128-cbc", 8192)
    assert c2 is not None and [f.session for f in c2.history] == \
        [first.session, latest.session]
    # every figure once, in its own session
    sessions = [r["session"] for r in export_records(tree)]
    assert sorted(set(sessions)) == sorted({first.session, latest.session})


def test_a_session_dated_in_the_future_is_no_crash(fake_matrix: Path, tmp_path: Path,
                                                   clock: Clock) -> None:
    # forward ten years for the first session, back to now for the second
    tree = bench_sessions(fake_matrix, tmp_path, [1.0, 1.0],
                          responder=_Jumping([1.0, 1.0], clock,
                                             [3650 * DAY, -3650 * DAY]))
    summary = build_report(tree, tmp_path / "report")
    cell = summary.groups[0].cell(ASM, "aes-128-cbc", 8192)
    assert cell is not None and len(cell.history) == 2
    assert cell.shown == cell.history[-1] and _ms(cell.shown.session) == max(
        _ms(f.session) for f in cell.history)


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def _paste(tmp_path: Path, name: str, copies: int) -> Path:
    base = (Path(__file__).resolve().parents[1] / "fixtures" / "speed" / "real-3.0.20"
            / "evp-elapsed.stdout").read_text(encoding="utf-8")
    path = tmp_path / name
    path.write_text("\n".join(base.replace("built on: ", f"built on: ({name} {k}) ", 1)
                              for k in range(copies)), encoding="utf-8")
    return path


def _figures(root: Path) -> list[records.FigureRecord]:
    return [f for run in records.finished_runs(root) for f in run.figures]


def test_an_import_after_the_clock_went_back_adds_nothing_twice(clock: Clock,
                                                                tmp_path: Path) -> None:
    results = str(tmp_path / "results")
    paste = _paste(tmp_path, "a.txt", 3)
    code, _, err = _cli("import", str(paste), "--as", "blog", "--results", results)
    assert code == 0, err
    stored = len(_figures(Path(results)))
    assert stored > 0
    clock.jump(-30 * DAY)
    code, out, err = _cli("import", str(paste), "--as", "blog", "--results", results)
    assert code == 0 and "already imported" in out and "Traceback" not in err
    assert len(_figures(Path(results))) == stored
    # a compact file a killed import left unrenamed (its runs not counted), completed a
    # year later
    held = sorted(Path(results).rglob("runs-*.jsonl"))[-1]
    held.rename(held.with_name(".runs-killed.tmp"))
    clock.jump(395 * DAY)
    code, out, err = _cli("import", str(paste), "--as", "blog", "--results", results)
    assert code == 0 and "Traceback" not in err
    complete = [m for m in (records.read_meta(p) for *_, p in
                            records.run_dirs(Path(results), cpu="ref-blog"))
                if m is not None and m.status == "complete"]
    assert sorted(m.extra["run_in_report"] for m in complete) == [1, 2, 3]  # each once
    assert not list(Path(results).rglob("*.tmp"))
    code, _, err = _cli("report", "--results", results, "--output",
                        str(tmp_path / "report"))
    assert code == 0 and "Traceback" not in err


def test_the_measurement_lock_ignores_the_wall_clock(clock: Clock, tmp_path: Path) -> None:
    held, other = HostLock("engine", tmp_path), HostLock("engine", tmp_path)
    clock.jump(-3650 * DAY)  # the holder names itself "since" ten years ago
    said: list[str] = []
    with held.measuring("first", say=said.append):
        with pytest.raises(EngineBusy, match="first"), \
                other.measuring("second", wait=False, say=said.append):
            pass
        # a waiter while the wall clock leaps forward a day: it waits for the holder,
        # neither giving up nor calling the lock stale (a flock, not a time)
        got = threading.Event()

        def wait() -> None:
            with other.measuring("third", say=said.append):
                got.set()

        waiter = threading.Thread(target=wait)
        waiter.start()
        clock.jump(DAY)
        time.sleep(0.5)
        assert not got.is_set()
    waiter.join(timeout=30)
    assert got.is_set()
    waited = [s for s in said if "got the measurement lock after" in s]
    assert waited and all("-" not in s.split("after", 1)[1] for s in waited)


def test_durations_do_not_read_the_wall_clock(fake_matrix: Path, tmp_path: Path,
                                              clock: Clock) -> None:
    """A bench whose wall clock goes back an hour between every reading still prints
    durations of zero or more and files each figure once."""
    readings = iter(range(10**6))

    def back_an_hour_each_time() -> datetime:
        return datetime(2026, 12, 1, tzinfo=timezone.utc) - timedelta(hours=next(readings))

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), clock_module.read_from(back_an_hour_each_time):
        tree = bench_sessions(fake_matrix, tmp_path, [1.0])
    text = printed.getvalue()
    assert " -" not in text.replace(" -evp", "").replace(" -mr", "")
    figures = list(export_records(tree))
    keys = [(r["variant"], r["mask"], r["algorithm"], r["block_size"], r["run"])
            for r in figures]
    assert figures and len(keys) == len(set(keys))

