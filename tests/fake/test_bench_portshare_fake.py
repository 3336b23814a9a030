"""The port-share probe in a bench, fake engine: a run whose core gave the throughput
kernel less than the session's best is ``shared-core`` — kept, out of medians, measured
again — and every invocation's record carries the readings around it.

The speed output is a real quiet run (tests/fixtures/hostacct/quiet-aes-256-cbc: own share
1.0, no foreign core), so the host accounting finds nothing: only the probe can say it.
The fake engine's host answers the core probe (tests/fakes.py ``run_on_host``) with the
readings the test scripts: 3.0 instructions a cycle, or 2.4 where a sibling competes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from openssl_matrix.core import statuses
from openssl_matrix.measure.session import MAX_ATTEMPTS, Bencher
from openssl_matrix.measure.speedcmd import unwrap_speed

from ..fakes import FakeBackend, fake_bench
from .test_bench_fake import matrix  # noqa: F401  (the fixture)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "hostacct"


@pytest.fixture
def bench(matrix: Path, tmp_path: Path) -> tuple[Bencher, FakeBackend]:  # noqa: F811
    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        assert unwrap_speed(command)[:2] == ("openssl", "speed")
        return 0, (FIX / "quiet-aes-256-cbc.stdout").read_text(), \
            (FIX / "quiet-aes-256-cbc.stderr").read_text()

    _, backend, _, bencher = fake_bench(matrix, tmp_path, responder,
                                        max_attempts=MAX_ATTEMPTS)
    backend.info["endpoint"] = "unix:///var/run/docker.sock"  # its host is this one
    bencher.engine = backend.engine_info()
    return bencher, backend


def test_a_run_the_probe_saw_share_its_core_is_shared_core_and_measured_again(
        bench: tuple[Bencher, FakeBackend]) -> None:
    bencher, backend = bench
    # the reading before the run, three to start the session's best, then the one after
    # the run: 20 % below the best. Every later reading: the best.
    backend.port_readings = [3.0, 3.0, 3.0, 3.0, 2.4]
    m = bencher.matrix
    outs = bencher.bench(m.select("1.1.1w-asm-x86_64"), m.suite("rep"), "auto", repeat=1)
    assert len(outs) >= 2
    first, *later = outs
    assert {f["status"] for f in first.figures} == {statuses.SHARED_CORE}
    meta = json.loads((Path(str(first.run_dir)) / "meta.json").read_text())
    [entry] = meta["invocations"]
    assert entry["port_share"]["before"] == {"ports_per_cycle": 3.0, "share_of_usual": 1.0}
    assert entry["port_share"]["after"] == {"ports_per_cycle": 2.4, "share_of_usual": 0.8}
    assert any(w.startswith("shared-core: ") and "80%" in w for w in meta["warnings"])
    assert meta["host"]["core_clock"]["after"]["ports_per_cycle"] == 2.4
    # measured again, and the later attempt (the core the probe's best again) is ok
    assert all(f["status"] != statuses.SHARED_CORE for o in later for f in o.figures)
    again = json.loads((Path(str(later[0].run_dir)) / "meta.json").read_text())
    assert again["subset"]["invocations"] == [entry["name"]]
    # every probe went through the engine's seam, with the throughput kernel asked for
    assert backend.probes and all("ports" in p for p in backend.probes)


def test_a_steady_core_flags_nothing(bench: tuple[Bencher, FakeBackend]) -> None:
    bencher, _ = bench
    m = bencher.matrix
    outs = bencher.bench(m.select("1.1.1w-asm-x86_64"), m.suite("rep"), "auto", repeat=1)
    assert len(outs) == 1
    assert all(f["status"] not in statuses.DISTURBED for f in outs[0].figures)
    meta = json.loads((Path(str(outs[0].run_dir)) / "meta.json").read_text())
    assert meta["invocations"][0]["port_share"]["after"]["share_of_usual"] == 1.0
