"""`invoke matrix profile --suite NAME --cell TEXT` with the engine faked at its seam.

Each kind's container answers with a real output of that kind (speed's -mr output of
rsa2048 from the 3.0.20 image here, tests/fixtures/stime's TLS script output,
tests/fixtures/libbench's harness output), around the real `perf script` capture of
tests/fixtures/perf whose sample times are moved onto the run's own clock: some before
the measured window (a TLS run's key generation, a pkey run's other phase), the rest in
it. The operations must be the kind's own count and only the window's samples count.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from openssl_matrix.cli.shared import handlers
from openssl_matrix.core.errors import UsageError
from openssl_matrix.images.harness import BINARY
from openssl_matrix.measure import perfrun
from openssl_matrix.measure.profile import parse_script, within

from ..fakes import FakeBackend, Responder, engine_of, fake_bench

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SCRIPT = "".join(line for line in (FIXTURES / "perf" / "script-3.0.20-asm-sha256-16.txt")
                 .read_text().splitlines(keepends=True) if not line.startswith("#"))
TLS_OUT = (FIXTURES / "stime" / "1.1.1w--tls--rsa2048--same-core.stdout").read_text()
LIB_OUT = (FIXTURES / "libbench" / "1.1.1w-handshake-tls1.3-rsa2048-t2.txt").read_text()
#: tls1.3 new in TLS_OUT: the script's `date` before and after s_time
TLS_WALL = (1796067507.111422732, 1796067511.007942639)
#: `openssl speed -mr -seconds 1 rsa2048` on openssl-matrix/3.0.20-asm-x86_64 here (its
#: stderr with the times the profile wrapper's loop gives each line)
PKEY_OUT = "+F2:2:2048:1879.797980:31095.555556\n"
PKEY_ERR = ("1796301531.913046665 +DTP:2048:private:rsa:1\n"
            "1796301532.937771513 +R1:1861:2048:0.99\n"
            "1796301532.942190013 +DTP:2048:public:rsa:1\n"
            "1796301533.918109203 +R2:27986:2048:0.90\n")
SUITES = """  pk:
    kind: pkey
    algorithms: [rsa2048, ecdsap256]
    seconds: 1
  hs:
    kind: tls
    algorithms: [rsa2048]
    protocols: [tls1.3]
    modes: [new, reuse]
    pinning: [same-core]
    seconds: 3
  lib:
    kind: library
    algorithms: [handshake-tls1.3-rsa2048, pkey-decode-pem-rsa2048, memory]
    threads: [1, 2]
    seconds: 1
"""


def restamped(start: float, step: float = 0.01) -> str:
    """The perf fixture with its i-th sample at ``start + i * step`` (perf's realtime)."""
    counter = iter(range(10 ** 6))
    return re.sub(r"^(\S.*?\s\d+\s+)\d+\.\d+:",
                  lambda m: f"{m.group(1)}{start + next(counter) * step:.6f}:",
                  SCRIPT, flags=re.M)


HOST = ("+HOSTSTAT 0\ncpu  2000 0 0 2000 0 0 0 0 0 0\ncpu0 1000 0 0 1000 0 0 0 0 0 0\n"
        "cpu1 1000 0 0 1000 0 0 0 0 0 0\nprocs_running 1\ncgroup_ns 5\n"
        "+HOSTSTAT 1\ncpu  2300 0 0 2300 0 0 0 0 0 0\ncpu0 1300 0 0 1000 0 0 0 0 0 0\n"
        "cpu1 1000 0 0 1300 0 0 0 0 0 0\nprocs_running 1\ncgroup_ns 3000000005\n")


def responder(script: str) -> Responder:
    def answer(image: str, command: Sequence[str], env: Mapping[str, str]
               ) -> tuple[int, str, str]:
        assert image.startswith("openssl-matrix/profile-"), image
        marker = perfrun.SCRIPT_MARKER + "\n"
        if command[3] == perfrun.WRAPPER_NAME:  # speed / pkey
            assert tuple(command[4:5]) == ("speed",), command
            return 0, PKEY_OUT + marker + script, (HOST + PKEY_ERR + "+CPUTIMES\n"
                                                   "0m0.01s 0m0.00s\n0m1.98s 0m0.02s\n")
        assert command[2] == perfrun.GENERIC_SCRIPT
        if command[4] == BINARY:
            assert "libbench-" in image
            return 0, LIB_OUT + marker + script, ""
        assert tuple(command[3:6]) == ("openssl-profile-run", "/bin/sh", "-c"), command
        return 0, TLS_OUT + marker + script, ""

    return answer


def setup(tmp_path: Path, fake_matrix: Path, script: str) -> tuple[FakeBackend, Path, Path]:
    text = fake_matrix.read_text().replace("suites:\n", "suites:\n" + SUITES, 1)
    fake_matrix.write_text(text)
    _, backend, tree, _ = fake_bench(fake_matrix, tmp_path, responder(script))
    return backend, fake_matrix, tree.root


def run(backend: FakeBackend, matrix: Path, root: Path, **flags: object) -> dict[str, object]:
    args: dict[str, object] = {"target": "", "matrix": str(matrix), "results": str(root),
                               "only": "1.1.1w-asm-x86_64", "algorithm": "", "bytes": 0,
                               "suite": "", "cell": "", "seconds": 0, "compare": "",
                               "json": True}
    args.update(flags)
    assert handlers(engine_of(lambda: backend))["profile"](**args) == 0
    return {}


def _meta(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    (meta,) = json.loads(capsys.readouterr().out)["profiles"]
    assert isinstance(meta, dict)
    return meta


def test_a_pkey_cell_is_its_phase_of_the_speed_run(
        tmp_path: Path, fake_matrix: Path, capsys: pytest.CaptureFixture[str]) -> None:
    start = 1796301531.5  # half a second before the sign phase's +DTP line
    backend, matrix, root = setup(tmp_path, fake_matrix, restamped(start))
    run(backend, matrix, root, suite="pk", cell="rsa2048:sign")
    meta = _meta(capsys)
    assert meta["cell"] == {"kind": "pkey", "suite": "pk", "cell": "rsa2048:sign",
                            "name": "pk-rsa2048-sign", "algorithm": "rsa2048",
                            "bytes": None, "operation": "sign", "threads": None,
                            "seconds": 1, "unit": "operation",
                            "invocation": meta["cell"]["invocation"]}  # type: ignore[index]
    assert meta["operations"] == 1861 and meta["speed_seconds"] == pytest.approx(0.99)
    assert meta["ns_per_op"] == pytest.approx(0.99e9 / 1861)
    window = (1796301531.913046665, 1796301532.937771513)
    assert meta["window"] == pytest.approx(list(window))
    inside = within(parse_script(restamped(start)), *window)
    assert 0 < len(inside) < len(parse_script(SCRIPT))
    assert meta["samples"] == len(inside)
    assert meta["command"][:2] == ["openssl", "speed"]  # type: ignore[index]
    assert meta["command"][-1] == "rsa2048" and "-mr" in meta["command"]  # type: ignore
    assert (Path(str(meta["folder"])).parent
            == root / "_profiles" / "1.1.1w-asm-x86_64" / "pk-rsa2048-sign")


def test_a_tls_cell_counts_handshakes_in_the_s_time_window(
        tmp_path: Path, fake_matrix: Path, capsys: pytest.CaptureFixture[str]) -> None:
    start = TLS_WALL[0] - 1.0  # a second of samples before s_time: keygen, the check
    backend, matrix, root = setup(tmp_path, fake_matrix, restamped(start))
    run(backend, matrix, root, suite="hs", cell="tls1.3-rsa2048:handshake")
    meta = _meta(capsys)
    assert meta["cell"]["cell"] == "tls1.3-rsa2048:handshake:same-core"  # type: ignore
    assert meta["unit"] == "handshake" and meta["suite"] == "hs"
    assert meta["operations"] == 3082  # s_time's own count of the tls1.3 -new section
    assert meta["ns_per_op"] == pytest.approx((TLS_WALL[1] - TLS_WALL[0]) * 1e9 / 3082)
    inside = within(parse_script(restamped(start)), *TLS_WALL)
    assert meta["samples"] == len(inside) and len(inside) < len(parse_script(SCRIPT))
    # this fixture's script predates the TLS host samples: no accounting, nothing flagged
    assert meta["status"] == "ok" and meta["host"] is None
    # the container ran the TLS suite's own script, narrowed to one protocol and mode
    _, command, _ = backend.runs[-1]
    assert "s_time" in command[6] and "measure tls1.3 new" in command[6]
    assert "measure tls1.3 reuse" not in command[6]


def test_a_library_cell_runs_in_a_profile_image_from_the_harness_image(
        tmp_path: Path, fake_matrix: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend, matrix, root = setup(tmp_path, fake_matrix, restamped(1000.0))
    run(backend, matrix, root, suite="lib", cell="handshake-tls1.3-rsa2048:t2")
    meta = _meta(capsys)
    assert str(meta["image"]).startswith("openssl-matrix/libbench-1.1.1w-asm-x86_64:")
    assert str(meta["profile_image"]).startswith("openssl-matrix/profile-libbench-1.1.1w")
    assert meta["operations"] == 153  # the harness's ops=, both threads
    assert meta["ns_per_op"] == pytest.approx(2 * 0.525808e9 / 153)  # threads × elapsed
    assert meta["samples"] == len(parse_script(SCRIPT))  # no window: the whole process
    assert meta["host"] is not None and meta["cell"]["threads"] == 2  # type: ignore
    _, command, _ = backend.runs[-1]
    assert list(command[4:]) == [BINARY, "--seconds", "1", "--threads", "2",
                                 "handshake-tls1.3-rsa2048"]
    profile_builds = [t for t in backend.builds if "profile-" in t]
    assert len(profile_builds) == 1 and "libbench" in profile_builds[0]


def test_unknown_suites_and_cells_are_refused_with_what_exists(
        tmp_path: Path, fake_matrix: Path) -> None:
    backend, matrix, root = setup(tmp_path, fake_matrix, SCRIPT)
    with pytest.raises(UsageError, match=r"--suite 'nope': .* has no such suite") as usage:
        run(backend, matrix, root, suite="nope", cell="x")
    assert "pk (pkey)" in str(usage.value.hint) and "lib (library)" in str(usage.value.hint)
    with pytest.raises(UsageError,
                       match=r"--cell 'rsa2048:decaps': suite pk .* no such cell") as usage:
        run(backend, matrix, root, suite="pk", cell="rsa2048:decaps")
    assert "rsa2048:sign" in str(usage.value.hint) and "ecdsap256:verify" in str(
        usage.value.hint)
    with pytest.raises(UsageError, match="no such cell") as usage:
        run(backend, matrix, root, suite="lib", cell="memory")
    assert "pkey-decode-pem-rsa2048:t1" in str(usage.value.hint)
    with pytest.raises(UsageError, match="no such cell") as usage:
        run(backend, matrix, root, suite="hs", cell="tls1.2-rsa2048:handshake:sideways")
    assert "tls1.3-rsa2048:resume:same-core" in str(usage.value.hint)
    with pytest.raises(UsageError, match="two ways"):
        run(backend, matrix, root, suite="pk", cell="rsa2048:sign", algorithm="sha256")
    with pytest.raises(UsageError, match="go together"):
        run(backend, matrix, root, suite="pk")
    assert all(not img.startswith("openssl-matrix/profile-") for img, _, _ in backend.runs)
    assert not (root / "_profiles").exists()
