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

from openssl_matrix.bench import Bencher
from openssl_matrix.build import Builder
from openssl_matrix.model import load_matrix
from openssl_matrix.results import ResultsTree
from openssl_matrix.sources import default_urls

from .fakes import CPUINFO_EPYC, FakeBackend
from .test_reproduce_fake import fake_speed

#: The factors the repetitions of one figure get in turn (a 0.4 % spread: n=3 gives a
#: 95 % interval of about ±1 %).
ROUND_FACTORS = (1.0, 1.004, 0.996)


class Levels:
    """The fake engine's responder: ``fake_speed`` with every figure multiplied by the
    session's level and the repetition's factor."""

    def __init__(self) -> None:
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


def widen(fake_matrix: Path) -> None:
    """The fake matrix with two algorithms at every block size (as ``test_report``'s)."""
    text = fake_matrix.read_text().replace("    bytes: 8192\n", "")
    fake_matrix.write_text(text.replace("algorithms: [aes-128-cbc]",
                                        "algorithms: [aes-128-cbc, sha256]"))


def bench_sessions(fake_matrix: Path, tmp_path: Path, levels: Sequence[float],
                   kernels: Sequence[str] = ()) -> ResultsTree:
    """One ``bench --repeat 3`` session per level (and kernel, when given)."""
    m = load_matrix(fake_matrix, default_urls=default_urls)
    responder = Levels()
    backend = FakeBackend(responder)
    tree = ResultsTree(tmp_path / "results")
    Builder(m, backend, tree, workdir=tmp_path / "work").build(list(m.variants))
    bencher = Bencher(m, backend, tree, engine=backend.engine_info(), git_commit="abc")
    for i, level in enumerate(levels):
        responder.level = level
        if kernels:
            backend.cpuinfo = CPUINFO_EPYC.replace("Linux 6.1.0", f"Linux {kernels[i]}")
        outcomes = bencher.bench(list(m.variants), m.suite("quick"), "auto", repeat=3)
        assert {o.status for o in outcomes} == {"complete"}
    return tree
