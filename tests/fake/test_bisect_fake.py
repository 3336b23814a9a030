"""``invoke matrix bisect`` against the fake engine: builds on demand, benches each step
with both ends, files every run in the results tree, writes the bisection.

The releases are stand-in tarballs (tests/conftest.make_tarball, ``official: false``);
the speed output is the fake reproduce test's (the real ``-mr`` format of 1.1.1w, see
tests/fixtures/speed/real-1.1.1w/mr-evp-elapsed.stdout), its figure scaled here per
release: 1.00 up to 3.0.12, 0.70 from 3.0.13, made up for the logic under test, with a
±1 % wobble by call so that intervals have a width.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from openssl_matrix.cli.shared import handlers
from openssl_matrix.core.errors import BuildError, ConfigError, UsageError
from openssl_matrix.images.pairimage import BINARY
from openssl_matrix.results import records
from openssl_matrix.sweep.bisect import INTERLEAVED, LIKE_BAD, LIKE_GOOD, ROUNDS_BASIS, SKIPPED

from ..conftest import make_tarball
from ..fakes import FakeBackend, Responder, engine_of, fake_pairbench
from .test_reproduce_fake import fake_speed, is_speed

RELEASES = ("3.0.10", "3.0.11", "3.0.12", "3.0.13", "3.0.14")
SLOWER_FROM = "3.0.13"
_TAG = re.compile(r"openssl-matrix/(?P<v>[0-9.]+[a-z]*)-")


def scaled_speed(base: Callable[[str], float], *, pairs: bool = True) -> Responder:
    """fake_speed's output with every figure scaled by ``base(image)``, with a ±1 %
    wobble by call so that intervals have a width; the pair harness's (tests/fakes.py,
    fake_pairbench) with each side's rate scaled by ``base`` of its variant's image, or,
    without ``pairs``, a harness that fails (a bisection then decides from rounds)."""
    calls = [0]

    def respond(image: str, command: Sequence[str], env: Mapping[str, str],
                ) -> tuple[int, str, str]:
        if command and command[0] == BINARY:
            if not pairs:
                return 1, "", "pairbench: refused by the test"
            return 0, fake_pairbench(command, lambda v, cap, alg, dec: 1e9 * base(
                f"openssl-matrix/{v}-")), ""
        code, out, err = fake_speed(image, command, env)
        calls[0] += 1
        scale = base(image) * (1 + 0.01 * (calls[0] % 3 - 1))
        lines = []
        for line in out.splitlines():
            if line.startswith("+F:"):  # +F:22:LABEL:FIGURE:FIGURE...
                parts = line.split(":")
                line = ":".join(parts[:3] + [f"{float(x) * scale:.2f}" for x in parts[3:]])
            lines.append(line)
        return code, "\n".join(lines) + "\n", err

    return respond


def release_speed(*, pairs: bool = True) -> Responder:
    """fake_speed's output with every figure scaled by its image's release (and the pair
    harness's, or a harness that fails without ``pairs``)."""

    def base(image: str) -> float:
        m = _TAG.search(image)
        assert m is not None, image
        return 0.70 if RELEASES.index(m["v"]) >= RELEASES.index(SLOWER_FROM) else 1.0

    return scaled_speed(base, pairs=pairs)


class BrokenBuild(FakeBackend):
    """A fake engine on which one release does not build."""

    def __init__(self, broken: str, responder: Responder) -> None:
        super().__init__(responder)
        self.broken = broken

    def build(self, context: Path, tag: str, **kwargs: object) -> str:
        if f"/{self.broken}-" in tag:
            raise BuildError(f"make failed for {self.broken}: error: fake compiler error")
        return super().build(context, tag, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "src"
    src.mkdir()
    lines = []
    for v in RELEASES:
        sha = make_tarball(src / f"openssl-{v}.tar.gz", v)
        lines.append(f"  {v}: {{sha256: {sha}, official: false, "
                     f"urls: [file://{src}/openssl-{v}.tar.gz]}}")
    path = tmp_path / "matrix.yaml"
    path.write_text("versions:\n" + "\n".join(lines) + """
suites:
  fast:
    description: one EVP cipher at 8192-byte blocks, native and with AES-NI masked
    algorithms: [aes-128-cbc, sha256]
    evp: true
    seconds: 1
    bytes: 8192
    masks:
      - {name: native}
      - {name: no-aesni, disable: [aesni, pclmulqdq]}
""")
    return path


def _bisect(matrix: Path, backend: FakeBackend, results: Path, figure: str,
            capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    run = handlers(engine_of(lambda: backend))["bisect"]
    code = run(target="", matrix=str(matrix), results=str(results), figure=figure,
               good="3.0.10", bad="3.0.14", build="", cpu="", wait=False, json=True,
               allow_plain_tcp=False)
    assert code == 0
    out = capsys.readouterr().out
    doc: dict[str, Any] = json.loads(out)
    return doc


def _measuring(command: Sequence[str]) -> bool:
    """A speed run or a pair harness run: what a bisection measures with."""
    return is_speed(command) or (bool(command) and command[0] == BINARY)


def test_bisect_decides_from_interleaved_pairs_and_files_every_run(
        matrix: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend = FakeBackend(release_speed())
    results = tmp_path / "results"
    doc = _bisect(matrix, backend, results, "fast:aes-128-cbc:8192", capsys)
    assert doc["status"] == "moved"
    assert (doc["ends_basis"], doc["ends_why_rounds"]) == (INTERLEAVED, "")
    (move,) = doc["moves"]
    assert (move["before"], move["after"], move["found"]) == ("3.0.12", "3.0.13", True)
    assert move["basis"] == INTERLEAVED and move["ratio"]["basis"] == INTERLEAVED
    assert move["ratio"]["ratio"] == pytest.approx(0.70, rel=0.01)
    assert move["before_rate"] > move["after_rate"] > 0
    steps = doc["steps"]
    assert [s["release"] for s in steps] == ["3.0.12", "3.0.13"]
    assert [s["decision"] for s in steps] == [LIKE_GOOD, LIKE_BAD]
    assert all(s["basis"] == INTERLEAVED and s["pair_runs"] == 1 and s["rounds"] == 0
               and s["why_rounds"] == "" for s in steps)
    # each step: its release over each end of its range (side B over side A)
    pairs = [(p["top"], p["bottom"]) for p in doc["pairs"]]
    assert pairs == [("3.0.14", "3.0.10"), ("3.0.12", "3.0.10"), ("3.0.12", "3.0.14"),
                     ("3.0.13", "3.0.12"), ("3.0.13", "3.0.14")]
    # no speed run was needed; every harness run is filed with its raw output
    assert not [r for r in backend.runs if is_speed(r[1])]
    harness = [r for r in backend.runs if r[1][0] == BINARY]
    assert harness and all("aes-128-cbc" in r[1] and "sha256" not in r[1] for r in harness)
    for p in doc["pairs"]:
        record = results / p["record"]
        assert record.is_file() and (record.parent / "raw.txt").is_file()
        assert json.loads(record.read_text())["kind"] == "bisect"
    # only the releases a step needed were built: 3.0.11 never was
    built = sorted({m["v"] for t in backend.builds if (m := _TAG.search(t))})
    assert built == ["3.0.10", "3.0.12", "3.0.13", "3.0.14"]
    summary = (Path(str(doc["out"])) / "summary.txt").read_text()
    assert "moved between 3.0.12 and 3.0.13" in summary and "interleaved run(s)" in summary


def test_bisect_falls_back_to_rounds_when_the_harness_fails_and_files_every_run(
        matrix: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend = FakeBackend(release_speed(pairs=False))
    results = tmp_path / "results"
    doc = _bisect(matrix, backend, results, "fast:aes-128-cbc:8192", capsys)
    assert doc["status"] == "moved"
    assert doc["ends_basis"] == ROUNDS_BASIS and "refused by the test" in \
        doc["ends_why_rounds"]
    (move,) = doc["moves"]
    assert (move["before"], move["after"], move["found"]) == ("3.0.12", "3.0.13", True)
    assert move["basis"] == ROUNDS_BASIS
    assert move["ratio"]["ci_low"] < 0.70 < move["ratio"]["ci_high"]
    steps = doc["steps"]
    assert [s["release"] for s in steps] == ["3.0.12", "3.0.13"]
    assert [s["decision"] for s in steps] == [LIKE_GOOD, LIKE_BAD]
    assert all(s["basis"] == ROUNDS_BASIS and s["rounds"] > 0
               and "refused by the test" in s["why_rounds"] for s in steps)
    # the narrowed suite: one algorithm, the native mask, -bytes 8192; no sha256, no mask
    speed = [r for r in backend.runs if is_speed(r[1])]
    assert speed and all("aes-128-cbc" in r[1] and "sha256" not in r[1] and not r[2]
                         for r in speed)
    # every run is in the results tree under the narrowed suite's name, with provenance
    runs = [r for r in records.finished_runs(results, suite="fast-bisect", figures=False)]
    assert len(runs) == len(speed)
    assert all(r.meta.session for r in runs)
    assert {r.variant for r in runs} == {f"{v}-asm-x86_64" for v in
                                         ("3.0.10", "3.0.12", "3.0.13", "3.0.14")}
    out = Path(str(doc["out"]))
    assert out == results / "_bisect" / "fast-aes-128-cbc-8192--3.0.10--3.0.14" / "0001"
    assert json.loads((out / "bisection.json").read_text())["moves"][0]["after"] == "3.0.13"
    summary = (out / "summary.txt").read_text()
    assert "moved between 3.0.12 and 3.0.13" in summary and "from rounds:" in summary


def test_a_masked_cell_is_measured_under_its_mask(
        matrix: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend = FakeBackend(release_speed())
    doc = _bisect(matrix, backend, tmp_path / "results", "fast:aes-128-cbc:8192:no-aesni",
                  capsys)
    assert doc["status"] == "moved"
    harness = [r[1] for r in backend.runs if r[1][0] == BINARY]
    assert harness and all("--a-cap" in c and "--b-cap" in c for c in harness)
    backend = FakeBackend(release_speed(pairs=False))
    doc = _bisect(matrix, backend, tmp_path / "rounds", "fast:aes-128-cbc:8192:no-aesni",
                  capsys)
    assert doc["status"] == "moved"
    speed = [r for r in backend.runs if is_speed(r[1])]
    assert speed and all("OPENSSL_ia32cap" in r[2] for r in speed)


def test_a_release_that_does_not_build_is_skipped_with_its_reason(
        matrix: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend = BrokenBuild("3.0.12", release_speed())
    doc = _bisect(matrix, backend, tmp_path / "results", "fast:aes-128-cbc:8192", capsys)
    steps = doc["steps"]
    assert steps[0]["release"] == "3.0.12"
    assert steps[0]["decision"] == SKIPPED
    assert "fake compiler error" in steps[0]["reason"]
    # the move is between 3.0.11 and 3.0.13, with 3.0.12 untestable between them
    (move,) = doc["moves"]
    assert (move["before"], move["after"], move["found"]) == ("3.0.11", "3.0.13", False)
    assert "3.0.12 skipped" in move["why"]
    assert doc["status"] == "incomplete"


def test_a_cell_the_suite_does_not_measure_is_refused_before_building(
        matrix: Path, tmp_path: Path) -> None:
    backend = FakeBackend(release_speed())
    run = handlers(engine_of(lambda: backend))["bisect"]
    with pytest.raises(ConfigError, match="does not measure md5"):
        run(target="", matrix=str(matrix), results=str(tmp_path / "r"),
            figure="fast:md5:8192", good="3.0.10", bad="3.0.14", build="", cpu="",
            wait=False, json=False, allow_plain_tcp=False)
    with pytest.raises(ConfigError, match="8192-byte blocks only"):
        run(target="", matrix=str(matrix), results=str(tmp_path / "r"),
            figure="fast:aes-128-cbc:16", good="3.0.10", bad="3.0.14", build="", cpu="",
            wait=False, json=False, allow_plain_tcp=False)
    assert backend.builds == []


@pytest.mark.parametrize(("flags", "says"), [
    ({"figure": ""}, "needs --figure CELL --good A --bad B"),
    ({"figure": "fast:aes-128-cbc"}, "SUITE:ALGORITHM:BLOCK"),
    ({"bad": "9.9.9"}, "not in the release catalogue"),
    ({"bad": "3.0.10"}, "same release"),
    ({"cpu": "a,b"}, "one engine"),
])
def test_usage_errors_say_what_to_give(matrix: Path, tmp_path: Path, flags: dict[str, str],
                                       says: str) -> None:
    backend = FakeBackend(release_speed())
    run = handlers(engine_of(lambda: backend))["bisect"]
    args: dict[str, Any] = {"target": "", "matrix": str(matrix), "results": str(tmp_path),
                            "figure": "fast:aes-128-cbc:8192", "good": "3.0.10",
                            "bad": "3.0.14", "build": "", "cpu": "", "wait": False,
                            "json": False, "allow_plain_tcp": False, **flags}
    with pytest.raises(UsageError, match=says):
        run(**args)
    assert backend.builds == [] and backend.runs == []


def test_the_report_page_shows_the_bisection_path_and_links_its_record(
        matrix: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    _bisect(matrix, FakeBackend(release_speed()), results, "fast:aes-128-cbc:8192", capsys)
    run = handlers(engine_of(lambda: FakeBackend(release_speed())))["report"]
    out = tmp_path / "page"
    assert run(target="", matrix=str(matrix), results=str(results), output=str(out),
               block_size=0) == 0
    page = (out / "index.html").read_text()
    assert '<h2 id="bisections">Bisections</h2>' in page
    assert '<a href="#bisections">' in page
    assert "moved between 3.0.12 and 3.0.13" in page
    for release in ("3.0.12", "3.0.13"):  # each step of the path, its decision and basis
        assert re.search(rf"<tr><td>{re.escape(release)}</td><td>like-(good|bad)</td>"
                         r"<td>interleaved, 1 run</td>", page)
    doc = json.loads((out / "data" / "report.json").read_text())
    (shown,) = doc["bisections"]
    assert (shown["good"], shown["bad"], shown["status"]) == ("3.0.10", "3.0.14", "moved")
    assert (out / shown["record"]).is_file() and (out / str(shown["summary"])).is_file()
    assert "Bisections" in capsys.readouterr().out


class Interrupting:
    """``release_speed`` that is interrupted (Ctrl-C) at its ``at``-th measuring run
    (speed or pair harness), once."""

    def __init__(self, at: int) -> None:
        self.inner = release_speed()
        self.at = at
        self.speed_runs = 0

    def __call__(self, image: str, command: Sequence[str], env: Mapping[str, str],
                 ) -> tuple[int, str, str]:
        if _measuring(command):
            self.speed_runs += 1
            if self.speed_runs == self.at:
                raise KeyboardInterrupt
        return self.inner(image, command, env)


def _speed_runs(backend: FakeBackend) -> int:
    return sum(1 for r in backend.runs if _measuring(r[1]))


def test_an_interrupted_bisection_resumes_and_a_finished_one_is_replayed(
        matrix: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole = FakeBackend(release_speed())
    expected = _bisect(matrix, whole, tmp_path / "whole", "fast:aes-128-cbc:8192", capsys)
    total = _speed_runs(whole)
    responder = Interrupting(at=total // 2)
    backend = FakeBackend(responder)
    results = tmp_path / "results"
    with pytest.raises(KeyboardInterrupt):
        _bisect(matrix, backend, results, "fast:aes-128-cbc:8192", capsys)
    before = _speed_runs(backend)
    progress = list((results / "_bisect").glob("*/progress-*.jsonl"))
    assert len(progress) == 1 and progress[0].read_text().strip()  # what was measured
    doc = _bisect(matrix, backend, results, "fast:aes-128-cbc:8192", capsys)
    resumed = _speed_runs(backend) - before
    assert 0 < resumed < total  # only what the interruption left was measured
    assert doc["moves"] == expected["moves"] or doc["moves"][0]["after"] == "3.0.13"
    assert doc["status"] == "moved"
    assert len(backend.builds) == len(set(backend.builds))  # nothing built twice
    filed = json.loads((Path(str(doc["out"])) / "bisection.json").read_text())
    assert filed["resumed"]["replayed"] > 0 and filed["resumed"]["measured"] > 0
    # the same bisection again: everything replayed, nothing built or measured
    runs, builds = _speed_runs(backend), len(backend.builds)
    again = _bisect(matrix, backend, results, "fast:aes-128-cbc:8192", capsys)
    assert (_speed_runs(backend), len(backend.builds)) == (runs, builds)
    assert again["moves"] == doc["moves"] and again["steps"] == doc["steps"]
    # --fresh measures from the start and keeps the earlier recording aside
    run = handlers(engine_of(lambda: backend))["bisect"]
    assert run(target="", matrix=str(matrix), results=str(results),
               figure="fast:aes-128-cbc:8192", good="3.0.10", bad="3.0.14", build="",
               cpu="", wait=False, json=True, allow_plain_tcp=False, fresh=True) == 0
    assert _speed_runs(backend) > runs
    assert list((results / "_bisect").glob("*/progress-*.set-aside-1.jsonl"))


def test_a_skipped_release_is_replayed_as_skipped_without_building_it_again(
        matrix: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend = BrokenBuild("3.0.12", release_speed())
    first = _bisect(matrix, backend, tmp_path / "results", "fast:aes-128-cbc:8192", capsys)
    builds = list(backend.builds)
    again = _bisect(matrix, backend, tmp_path / "results", "fast:aes-128-cbc:8192", capsys)
    assert backend.builds == builds
    assert again["steps"] == first["steps"] and again["steps"][0]["decision"] == SKIPPED
