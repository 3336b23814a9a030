"""A library-harness profile keeps only the samples of the harness's timed window.

The harness output is real (tests/fixtures/libbench/README.md: the harness of this branch,
run on this host, prints its window as ``wall_start``/``wall_end`` on the realtime clock);
the samples are the real `perf script` capture of tests/fixtures/perf with their times
moved onto that clock, one every 10 ms from half a second before the window on: some
before it (the harness's set-up), some in it, some after (its tear-down). No docker.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from openssl_matrix.core.errors import BenchError
from openssl_matrix.engine.backend import RunResult
from openssl_matrix.matrix.libvocab import LibraryOptions
from openssl_matrix.matrix.model import Suite
from openssl_matrix.measure.library import read_output
from openssl_matrix.measure.perfrun import SCRIPT_MARKER, Cell
from openssl_matrix.measure.profile import parse_script
from openssl_matrix.measure.profilecell import read_cell, resolve, timed_window

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LIB_NEW = (FIXTURES / "libbench" / "host-3.0.19-pkey-decode-pem-rsa2048-t1.txt").read_text()
LIB_OLD = (FIXTURES / "libbench" / "1.1.1w-fetch-digest-t1.txt").read_text()
SCRIPT = "".join(line for line in (FIXTURES / "perf" / "script-3.0.20-asm-sha256-16.txt")
                 .read_text().splitlines(keepends=True) if not line.startswith("#"))
#: the fixture's own window (its result line)
WINDOW = (1796322540.788351797, 1796322541.793502548)


def restamped(start: float, step: float = 0.01) -> str:
    counter = iter(range(10 ** 6))
    return re.sub(r"^(\S.*?\s\d+\s+)\d+\.\d+:",
                  lambda m: f"{m.group(1)}{start + next(counter) * step:.6f}:",
                  SCRIPT, flags=re.M)


def _cell(op: str) -> Cell:
    suite = Suite(name="lib", description="", algorithms=(op,), evp=True, seconds=1,
                  bytes=None, masks=(), kind="library", library=LibraryOptions(threads=(1,)))
    return resolve(suite, f"{op}:t1", "3.0.19", (), None)


def _result(stdout: str) -> RunResult:
    return RunResult(command=(), env={}, stdout=stdout, stderr="", exit_code=0,
                     started="", ended="", seconds=1.0)


def test_the_harness_prints_its_timed_window_on_the_realtime_clock() -> None:
    (line,) = [t for t in LIB_NEW.splitlines() if t.startswith("+LIB:result:")]
    (res,) = read_output(LIB_NEW).results
    assert timed_window(res.fields, "x") == pytest.approx(WINDOW, abs=1e-6)
    # the window is at least the harness's own elapsed time (a monotonic clock)
    assert WINDOW[1] - WINDOW[0] >= float(res.fields["elapsed_s"]) - 1e-6
    assert res.fields["what"].startswith("PEM_read_bio_PrivateKey")  # free text still whole
    assert "wall_start=" in line


def test_only_the_samples_of_the_timed_window_are_kept() -> None:
    script = restamped(WINDOW[0] - 0.5)
    every = parse_script(script)
    assert every[0].time_s < WINDOW[0] and every[-1].time_s > WINDOW[1]  # both sides
    run = read_cell(_result(LIB_NEW + SCRIPT_MARKER + "\n" + script),
                    _cell("pkey-decode-pem-rsa2048"))
    inside = [s for s in every if WINDOW[0] <= s.time_s <= WINDOW[1]]
    assert run.samples == inside
    assert 0 < len(run.samples) < len(every)
    assert run.extra["window"] == pytest.approx(WINDOW, abs=1e-6)
    assert run.operations == 2168 and run.seconds == pytest.approx(1.000151)


def test_an_older_harness_without_a_window_keeps_every_sample() -> None:
    script = restamped(1000.0)
    run = read_cell(_result(LIB_OLD + SCRIPT_MARKER + "\n" + script),
                    _cell("fetch-digest"))
    assert run.extra["window"] is None
    assert len(run.samples) == len(parse_script(script))


def test_a_damaged_window_is_refused() -> None:
    assert timed_window({}, "x") is None
    for fields in ({"wall_start": "5.0"}, {"wall_end": "5.0"},
                   {"wall_start": "6.0", "wall_end": "5.0"},
                   {"wall_start": "x", "wall_end": "5.0"},
                   {"wall_start": "inf", "wall_end": "inf"}):
        with pytest.raises(BenchError, match="timed window is damaged"):
            timed_window(fields, "x")


def test_a_window_with_no_samples_in_it_is_refused() -> None:
    script = restamped(WINDOW[1] + 1.0)  # every sample after the window
    with pytest.raises(BenchError, match="no samples in the measured window"):
        read_cell(_result(LIB_NEW + SCRIPT_MARKER + "\n" + script),
                  _cell("pkey-decode-pem-rsa2048"))
