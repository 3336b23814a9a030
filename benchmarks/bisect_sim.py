"""How often release bisection's decisions (openssl_matrix/sweep/bisect.py) name the right
pair, and what they cost, on simulated figures: no Docker, no OpenSSL.

Eight releases (3.0.10 … 3.0.17 from the catalogue), each round's sample its release's
true figure times a uniform factor within ±3 % from a seeded generator (the bench's
measured repeatability here is a median CV of 1.7 %, docs/performance.md row 5: ±3 %
uniform, CV 1.7 %, is on its scale). Per scenario and seed, the step sits at each of
the seven possible pairs in turn. Prints per scenario: how often the outcome is exactly
the truth (the true moves, or "no step larger than the interval"), how often the true
moves are among those found, the outcomes, the mean number of steps and of samples (one
sample: one release measured in one round).

    PYTHONPATH=$PWD python3 benchmarks/bisect_sim.py [--seeds 700]
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Sequence

from openssl_matrix.matrix.releases import load_catalogue
from openssl_matrix.sweep.bisect import MOVED, NO_MOVE, bisect, releases_between

RANGE = releases_between([r.version for r in load_catalogue().releases], "3.0.10", "3.0.17")
NOISE = 0.03

Truth = Callable[[str], float]


def scripted(truth: Truth, seed: int, count: dict[str, int],
             ) -> Callable[[Sequence[str], int], list[dict[str, float | None]]]:
    rng = random.Random(seed)

    def measure(releases: Sequence[str], rounds: int) -> list[dict[str, float | None]]:
        out: list[dict[str, float | None]] = []
        for _ in range(rounds):
            out.append({r: truth(r) * (1 + rng.uniform(-NOISE, NOISE)) for r in releases})
            for r in releases:
                count[r] = count.get(r, 0) + 1
        return out

    return measure


def step(first_bad: int, after: float) -> Truth:
    return lambda r: after if RANGE.index(r) >= first_bad else 1.0


def scenario(label: str, seeds: int,
             make: Callable[[int], tuple[list[tuple[str, str]], Truth]]) -> str:
    exact = among = samples = steps = 0
    outcomes: dict[str, int] = {}
    for seed in range(seeds):
        want, truth = make(seed)
        count: dict[str, int] = {}
        b = bisect(RANGE, scripted(truth, seed, count))
        outcomes[b.status] = outcomes.get(b.status, 0) + 1
        found = [(m.before, m.after) for m in b.moves if m.found]
        exact += found == want and b.status == (MOVED if want else NO_MOVE)
        among += bool(want) and set(want) <= set(found)
        samples += sum(count.values())
        steps += len(b.steps)
    return (f"{label}: exactly the true move(s) {exact}/{seeds}, true move(s) among those "
            f"found {among}/{seeds}; outcomes {outcomes}; mean steps {steps / seeds:.2f}, "
            f"mean samples {samples / seeds:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=700)
    n = ap.parse_args().seeds

    def one(after: float) -> Callable[[int], tuple[list[tuple[str, str]], Truth]]:
        def make(seed: int) -> tuple[list[tuple[str, str]], Truth]:
            i = 1 + seed % 7
            return [(RANGE[i - 1], RANGE[i])], step(i, after)
        return make

    def two(seed: int) -> tuple[list[tuple[str, str]], Truth]:
        return ([("3.0.12", "3.0.13"), ("3.0.15", "3.0.16")],
                lambda r: 1.0 if RANGE.index(r) < 3 else 0.85 if RANGE.index(r) < 6 else 0.70)

    for after in (0.70, 0.95, 0.98):
        print(scenario(f"one step 1.00 → {after:.2f}", n, one(after)))
    print(scenario("no move", n, lambda seed: ([], lambda r: 1.0)))
    print(scenario("two steps 1.00 → 0.85 → 0.70", n, two))


if __name__ == "__main__":
    main()
