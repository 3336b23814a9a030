"""Results trees of several bench sessions, made by the real Builder and Bencher against
the fake backend (the one seam), answering ``openssl speed -mr`` in the real 1.1.1w format
(``test_reproduce_fake.fake_speed``). So that a session has a spread, the responder gives
each figure's repetitions the factors ``ROUND_FACTORS`` in turn, and a whole session a
level (``Levels``): a documented synthetic load, not a measurement. Used by
``test_report_sessions``, the browser test and ``benchmarks/report_scale.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from openssl_matrix.images.build import Builder
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.session import Bencher
from openssl_matrix.results.tree import ResultsTree

from .fake.test_reproduce_fake import fake_speed
from .fakes import CPUINFO_EPYC, FakeBackend

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "speed"

#: The factors the repetitions of one figure get in turn (a 0.4 % spread: n=3 gives a
#: 95 % interval of about ±1 %).
ROUND_FACTORS = (1.0, 1.004, 0.996)


class Levels:
    """The fake engine's responder: ``fake_speed`` with every figure multiplied by the
    session's level and the repetition's factor."""

    def __init__(self, levels: Sequence[float]) -> None:
        self.levels = levels
        self.level = 1.0
        self.calls: dict[tuple[str, tuple[tuple[str, str], ...], str], int] = {}

    def __call__(self, image: str, command: Sequence[str], env: Mapping[str, str],
                 ) -> tuple[int, str, str]:
        code, out, err = fake_speed(image, command, env)
        key = (image, tuple(sorted(env.items())), " ".join(command))
        n = self.calls[key] = self.calls.get(key, -1) + 1
        factor = self.level * ROUND_FACTORS[n % len(ROUND_FACTORS)]

        def scale(line: str) -> str:
            if not line.startswith("+F:"):
                return line
            parts = line.split(":")  # +F:<n>:<label>:<value per block size>...
            return ":".join([*parts[:3], *(f"{float(v) * factor:.2f}" for v in parts[3:])])

        return code, "\n".join(scale(x) for x in out.splitlines()) + "\n", err

    def begin(self, session: int) -> None:
        self.level = self.levels[session]


def widen(fake_matrix: Path) -> None:
    """The fake matrix with two algorithms at every block size (as ``test_report``'s)."""
    text = fake_matrix.read_text().replace("    bytes: 8192\n", "")
    fake_matrix.write_text(text.replace("algorithms: [aes-128-cbc]",
                                        "algorithms: [aes-128-cbc, sha256]"))


class Replay:
    """A responder that replays real ``openssl speed`` figures (tests/fixtures/speed: the
    1.1.1w and 3.0.20 runs captured on this kind of host, README there): repetitions
    alternate between the two real runs of the version (its ``-mr`` run and its human
    format run), a masked invocation replays the real legacy-path (non-EVP, no AES-NI)
    line. From session ``legacy_from`` on, the EVP AES figures too are replayed from the
    legacy-path line: a stand-in for a change that takes AES-NI away (the sha256 figures
    stay as they were; 3.0.20's runs have no legacy-path line, so its figures stay too)."""

    FILES: ClassVar[Mapping[str, str]] = {"1.1.1w": "real-1.1.1w", "3.0.20": "real-3.0.20"}

    def __init__(self, legacy_from: int) -> None:
        from openssl_matrix.parse import parse_paste

        self.legacy_from = legacy_from
        self.session = 0
        self.calls: dict[tuple[str, tuple[tuple[str, str], ...], str], int] = {}
        #: version -> [(algorithm, legacy path) -> {block size: bytes/s}] per real run
        self.runs: dict[str, list[dict[tuple[str, bool], dict[int, float]]]] = {}
        for version, folder in self.FILES.items():
            for name in ("mr-evp-elapsed.stdout", "evp-elapsed.stdout"):
                [run] = parse_paste((FIXTURES / folder / name).read_text())
                table: dict[tuple[str, bool], dict[int, float]] = {}
                for f in run.figures:
                    if f.bytes_per_s is not None and f.block_size is not None:
                        alg = f.algorithm.lower().replace(" ", "-")
                        key = (alg, alg.startswith("aes") and f.evp is False)
                        table.setdefault(key, {})[f.block_size] = f.bytes_per_s
                self.runs.setdefault(version, []).append(table)

    def begin(self, session: int) -> None:
        self.session = session

    def __call__(self, image: str, command: Sequence[str], env: Mapping[str, str],
                 ) -> tuple[int, str, str]:
        code, out, err = fake_speed(image, command, env)
        version = next(v for v in self.FILES if v in image)
        key = (image, tuple(sorted(env.items())), " ".join(command))
        n = self.calls[key] = self.calls.get(key, -1) + 1
        table = self.runs[version][n % 2]
        legacy = "OPENSSL_ia32cap" in env or self.session >= self.legacy_from

        def replay(line: str) -> str:
            if not line.startswith("+F:"):
                return line
            parts = line.split(":")
            alg = parts[2]
            values = table.get((alg, alg.startswith("aes") and legacy)) or table[(alg, False)]
            return ":".join([*parts[:3], *(f"{values[b]:.2f}" for b in self.sizes(out))])

        return code, "\n".join(replay(x) for x in out.splitlines()) + "\n", err

    @staticmethod
    def sizes(out: str) -> list[int]:
        return [int(b) for b in out.splitlines()[0].removeprefix("+H:").split(":")]


def bench_sessions(fake_matrix: Path, tmp_path: Path, levels: Sequence[float],
                   kernels: Sequence[str] = (), responder: Levels | Replay | None = None,
                   ) -> ResultsTree:
    """One ``bench --repeat 3`` session per level (and kernel, when given); ``responder``
    (default ``Levels``) is told each session's start (``begin``)."""
    m = load_matrix(fake_matrix, default_urls=default_urls)
    responder = responder or Levels(levels)
    backend = FakeBackend(responder)
    tree = ResultsTree(tmp_path / "results")
    Builder(m, backend, tree, workdir=tmp_path / "work").build(list(m.variants))
    bencher = Bencher(m, backend, tree, engine=backend.engine_info(), git_commit="abc")
    for i in range(len(levels)):
        responder.begin(i)
        if kernels:
            backend.cpuinfo = CPUINFO_EPYC.replace("Linux 6.1.0", f"Linux {kernels[i]}")
        outcomes = bencher.bench(list(m.variants), m.suite("quick"), "auto", repeat=3)
        assert {o.status for o in outcomes} == {"complete"}
    return tree
