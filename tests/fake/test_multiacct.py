"""Per-child accounting of -multi runs: the rule on real outputs, and a bench on a fake
engine replaying real 2-process runs (tests/fixtures/hostacct/multi2-*)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from openssl_matrix.core import statuses
from openssl_matrix.measure import hostacct, invocation
from openssl_matrix.measure.multiacct import CHILD_BALANCE_MIN, multi_findings
from openssl_matrix.measure.session import Bencher
from openssl_matrix.measure.speedcmd import unwrap_speed

from ..fakes import FakeBackend, one_release_bench

HOST = Path(__file__).resolve().parents[1] / "fixtures" / "hostacct"
SPEED = Path(__file__).resolve().parents[1] / "fixtures" / "speed"


def accounting(name: str, processes: int) -> hostacct.HostAccounting | None:
    rest, times = invocation.split_times((HOST / f"{name}.stderr").read_text())
    _, acct = hostacct.from_stderr(rest, processes=processes,
                                   cpu_seconds=None if times is None else
                                   times.user + times.system)
    return acct


def test_child_that_lost_its_cpu_is_contended() -> None:
    """Real: a busy loop pinned to one of the two CPUs at the speed container's weight;
    child 1 measured 62 % of child 0."""
    out = (HOST / "multi2-aead-gcm256-busy-cpu1.stdout").read_text()
    acct = accounting("multi2-aead-gcm256-busy-cpu1", 2)
    found, bal = multi_findings("native--aes-256-gcm", 2, out, acct)
    assert bal.balance is not None and bal.balance < CHILD_BALANCE_MIN
    assert [f.code for f in found] == [statuses.CONTENDED]
    assert "child 0 62%, child 1 38%" in found[0].message
    # the container's CPU over elapsed x 2 says the same, on its own
    assert acct is not None and acct.processes == 2 and acct.own_share is not None
    assert hostacct.contention_reasons(acct)


def test_even_children_pass_the_child_rule() -> None:
    out = (SPEED / "real-1.1.1w" / "aead-multi2-decrypt-gcm.stdout").read_text()
    found, bal = multi_findings("x", 2, out, None)
    assert found == [] and bal.balance is not None and bal.balance > 0.99


def test_missing_child_is_contended() -> None:
    out = (HOST / "multi2-aead-gcm256-busy-host.stdout").read_text()
    one = "\n".join(line for line in out.splitlines() if not line.endswith(" from 1"))
    found, bal = multi_findings("x", 2, one, None)
    assert bal.children_seen == 1
    assert found and "only 1 of 2 -multi children" in found[0].message


@pytest.fixture
def bencher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Bencher, FakeBackend]:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))

    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        cmd = unwrap_speed(command)
        assert cmd[:2] == ("openssl", "speed") and "-multi" in cmd and "-aead" in cmd
        name = "multi2-aead-gcm256-busy-cpu1"
        return 0, (HOST / f"{name}.stdout").read_text(), (HOST / f"{name}.stderr").read_text()

    _, backend, _, bencher = one_release_bench(tmp_path, """\
  gcm-multi:
    kind: aead
    algorithms: [aes-256-gcm]
    seconds: 2
    bytes: 16384
    multi: [2]
""", responder)
    return bencher, backend


def test_bench_files_a_starved_child_as_contended(bencher: tuple[Bencher, FakeBackend]) -> None:
    b, _ = bencher
    m = b.matrix
    outs = b.bench(m.select("1.1.1w-asm-x86_64"), m.suite("gcm-multi"), "auto", repeat=1)
    [o] = outs
    [fig] = o.figures
    assert fig["multi"] == 2 and fig["path"] == "aead" and fig["algorithm"] == "aes-256-gcm"
    assert fig["status"] == statuses.CONTENDED and fig["block_size"] == 16384
    meta = json.loads((Path(str(o.run_dir)) / "meta.json").read_text())
    [entry] = meta["invocations"]
    assert entry["command"][-5:] == ["-multi", "2", "-aead", "-evp", "aes-256-gcm"]
    assert entry["host_accounting"]["processes"] == 2
    assert entry["children"]["balance"] < CHILD_BALANCE_MIN
    assert entry["children"]["per_child_share"][1][0] == 1
    assert any(w.startswith("contended: ") for w in meta["warnings"])
