"""`invoke matrix profile --only VARIANT --suite NAME --cell TEXT --agree`, the engine faked
at its seam: the cell is profiled twice and the two profiles' agreement is printed and filed.

The harness output is real (tests/fixtures/libbench/host-3.0.19-pkey-decode-pem-rsa2048-t1
.txt, whose result line gives its timed window); the samples are the real `perf script`
capture of tests/fixtures/perf, moved onto the window's clock: the first run's from 0.5 s
before the window, the second's from 1.0 s before it, so each keeps a different stretch of
the capture in its window (two profiles taken apart see different samples).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from openssl_matrix.cli.shared import handlers
from openssl_matrix.core.errors import UsageError
from openssl_matrix.images.harness import BINARY
from openssl_matrix.measure import perfrun
from openssl_matrix.measure.profile import parse_script, within
from openssl_matrix.measure.profileagree import AGREE, DISAGREE, MARGINAL

from ..fakes import FakeBackend, engine_of, fake_bench
from .test_profile_cells_fake import SUITES, restamped

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LIB_OUT = (FIXTURES / "libbench" / "host-3.0.19-pkey-decode-pem-rsa2048-t1.txt").read_text()
WINDOW = (1796322540.788351797, 1796322541.793502548)  # the fixture's wall_start, wall_end
STARTS = (WINDOW[0] - 0.5, WINDOW[0] - 1.0)


def _setup(tmp_path: Path, fake_matrix: Path) -> tuple[FakeBackend, Path, Path]:
    runs = iter(STARTS)

    def answer(image: str, command: Sequence[str], env: Mapping[str, str]
               ) -> tuple[int, str, str]:
        assert image.startswith("openssl-matrix/profile-libbench-"), image
        assert command[2] == perfrun.GENERIC_SCRIPT and command[4] == BINARY
        return 0, LIB_OUT + perfrun.SCRIPT_MARKER + "\n" + restamped(next(runs)), ""

    fake_matrix.write_text(fake_matrix.read_text().replace("suites:\n", "suites:\n" + SUITES,
                                                           1))
    _, backend, tree, _ = fake_bench(fake_matrix, tmp_path, answer)
    return backend, fake_matrix, tree.root


def _run(backend: FakeBackend, matrix: Path, root: Path, **flags: object) -> None:
    args: dict[str, object] = {"target": "", "matrix": str(matrix), "results": str(root),
                               "only": "1.1.1w-asm-x86_64", "algorithm": "", "bytes": 0,
                               "suite": "lib", "cell": "pkey-decode-pem-rsa2048:t1",
                               "seconds": 0, "compare": "", "json": True, "agree": True}
    args.update(flags)
    assert handlers(engine_of(lambda: backend))["profile"](**args) == 0


def test_agree_profiles_the_cell_twice_and_files_the_check_beside_them(
        tmp_path: Path, fake_matrix: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend, matrix, root = _setup(tmp_path, fake_matrix)
    _run(backend, matrix, root)
    out = json.loads(capsys.readouterr().out)
    first, second = out["profiles"]
    cell_dir = root / "_profiles" / "1.1.1w-asm-x86_64" / "lib-pkey-decode-pem-rsa2048-t1"
    assert [Path(p["folder"]) for p in out["profiles"]] == [cell_dir / "0001",
                                                           cell_dir / "0002"]
    # each profile kept only its own window's samples: different stretches of the capture
    for meta, start in zip((first, second), STARTS, strict=True):
        assert meta["samples"] == len(within(parse_script(restamped(start)), *WINDOW))
        assert meta["window"] == pytest.approx(list(WINDOW), abs=1e-6)
    folder = Path(out["agree"]["folder"])
    assert folder == cell_dir / "agree" / "0001"
    filed = json.loads((folder / "agree.json").read_text())
    assert filed["verdict"] == out["agree"]["verdict"] in (AGREE, MARGINAL, DISAGREE)
    assert filed["first_profile"] == first["folder"]
    assert filed["second_profile"] == second["folder"]
    assert 0 < len(filed["functions"]) <= 10
    assert all(r["combined_sd_ns_per_op"] > 0 for r in filed["functions"])
    assert filed["beyond"] == sum(not r["within"] for r in filed["functions"])
    assert (folder / "agree.txt").read_text().startswith(
        "1.1.1w-asm-x86_64 lib-pkey-decode-pem-rsa2048-t1: two profiles taken apart")


def test_agree_with_compare_is_refused_before_the_engine(
        tmp_path: Path, fake_matrix: Path) -> None:
    backend, matrix, root = _setup(tmp_path, fake_matrix)
    with pytest.raises(UsageError, match="--agree and --compare"):
        _run(backend, matrix, root, only="",
             compare="1.1.1w-asm-x86_64,3.0.20-asm-x86_64")
    assert all(not img.startswith("openssl-matrix/profile-") for img, _, _ in backend.runs)
    assert not (root / "_profiles").exists()
