"""A bench session's interleaved pairs end to end on the fake engine (measure/pairrun.py):
the harness image is built once, every pair is run and filed, a pair whose side ran
slower than in the session's other pairs is measured again and the run nearer that side's
best is kept, and a resumed session measures nothing again.

The harness's output is synthetic here (rates chosen per side); its real output is read
in tests/unit/test_interleave.py and tests/docker/test_interleave_docker.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from openssl_matrix.engine.backend import RunLimits
from openssl_matrix.images.render import toolchain_tag
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.pairrun import interleave_session
from openssl_matrix.results.interleaved import all_pairs
from openssl_matrix.results.pairrecord import PairRecord
from openssl_matrix.results.tree import ResultsTree

from ..fakes import FakeBackend

ROOT = Path(__file__).resolve().parents[2]
#: operations a 5-ms window, per variant and algorithm (synthetic)
OPS = {("1.1.1w-asm-x86_64", "sha256"): 400, ("1.1.1w-no-asm-x86_64", "sha256"): 100,
       ("1.1.1w-asm-x86_64", "md5"): 150, ("1.1.1w-no-asm-x86_64", "md5"): 140}


def _harness(factor: float, times: int) -> Any:
    """A responder for pairbench command lines: side A and B at their OPS, except that in
    the native asm/no-asm pair the asm side (B) runs at ``factor`` of its rate the first
    ``times`` times (a neighbour that held it down)."""
    seen = [0]

    def respond(image: str, command: Sequence[str], env: Mapping[str, str],
                ) -> tuple[int, str, str]:
        args = list(command)
        libs = [args[args.index(f) + 1].split("/")[3] for f in ("--a", "--b")]
        algorithms = [a for a in args[args.index("--seconds") + 2:] if not a.startswith("--")]
        lines = [f"+PAIR:side:{i}:version=OpenSSL 1.1.1w  11 Sep 2023:ia32cap=" for i in (0, 1)]
        slow = 1.0
        if libs == ["1.1.1w-no-asm-x86_64", "1.1.1w-asm-x86_64"] and "--b-cap" not in args:
            seen[0] += 1
            slow = factor if seen[0] <= times else 1.0
        for alg in algorithms:
            lines.append(f"+PAIR:begin:alg={alg}:bytes=8192:window_ms=5:seconds=1:"
                         "direction=digest")
            w = 0
            for block in range(40):
                for side in (0, 1, 1, 0):
                    ops = OPS[(libs[side], alg)] * (slow if side == 1 else 1.0)
                    ops += block % 3  # a little spread for an interval
                    lines.append(f"+PAIR:w:{w}:{side}:{round(ops)}:5000000:5000000")
                    w += 1
            lines.append(f"+PAIR:end:alg={alg}:windows={w}")
        return 0, "\n".join(lines) + "\n", ""
    return respond


def _session(tmp_path: Path, backend: FakeBackend) -> tuple[Any, list[Any], Any, dict[str, Any]]:
    m = load_matrix(ROOT / "matrix.yaml")
    suite = replace(m.suite("blog-8k"), algorithms=("md5", "sha256"))
    variants = m.select("1.1.1w-*-x86_64")
    backend.images[toolchain_tag(variants[0].base_image)] = "sha256:toolchain"
    images: dict[str, tuple[str, dict[str, Any]]] = {
        v.id: (f"openssl-matrix/{v.id}:x", {}) for v in variants}
    ctx = SimpleNamespace(backend=backend, tree=ResultsTree(tmp_path / "results"),
                          cpu_name="host-x", session="bench-1",
                          limits=lambda timeout, suite: RunLimits(timeout=timeout))
    return ctx, variants, suite, images


def _slowed(records: list[PairRecord]) -> PairRecord:
    [rec] = [r for r in records if r.kind == "asm/no-asm" and r.top.mask == "native"]
    return rec


def test_a_pair_whose_side_sat_low_is_measured_again_and_the_better_run_kept(
        tmp_path: Path) -> None:
    backend = FakeBackend(_harness(0.7, times=1))
    ctx, variants, suite, images = _session(tmp_path, backend)
    records = interleave_session(ctx, variants, images, suite, tmp_path / "work")
    assert len([t for t in backend.builds if "pairbench" in t]) == 1
    # 1.1.1w asm's SHA-256 ran at 0.7 of its rate in the asm/no-asm pair, in full in its
    # mask/native pair: measured again, and the full-rate run kept
    rec = _slowed(records)
    sha = rec.row("sha256")
    assert sha is not None and sha.ratio is not None
    assert rec.regime_checked is True
    [aside] = sha.set_aside
    assert aside.rate_share == pytest.approx(0.7, abs=0.01)  # the slowed run, aside
    assert 3.9 < sha.ratio < 4.1  # 400 / 100 ops a window: the run kept
    assert sha.low is False and sha.rate_share == pytest.approx(1.0, abs=0.01)
    raw = next(f for f in all_pairs(ctx.tree.root) if f.record == rec).folder / "raw.txt"
    assert "# measured again: a side sat low" in raw.read_text()
    # nothing else sat low, so nothing else was measured again
    assert sum(bool(r.regime_checked) for r in records) == 1
    # the session resumed: every pair filed, none measured again
    runs = len(backend.runs)
    again = interleave_session(ctx, variants, images, suite, tmp_path / "work")
    assert len(backend.runs) == runs
    assert sorted(r.kind for r in again) == sorted(r.kind for r in records)


def test_a_side_held_down_in_every_run_of_its_pair_stays_flagged(tmp_path: Path) -> None:
    backend = FakeBackend(_harness(0.7, times=2))
    ctx, variants, suite, images = _session(tmp_path, backend)
    records = interleave_session(ctx, variants, images, suite, tmp_path / "work")
    rec = _slowed(records)
    sha = rec.row("sha256")
    assert sha is not None and sha.ratio is not None
    assert sha.low is True and sha.rate_share == pytest.approx(0.7, abs=0.01)
    assert len(sha.set_aside) == 1
    assert 2.7 < sha.ratio < 2.9  # 280 / 100: what the run said, flagged, not hidden
    others = [r for r in records if r is not rec]
    assert others and all(not row.low for r in others for row in r.algorithms)
