"""``invoke matrix bisect --figure CELL --good A --bad B``: which release moved a figure.

The command reads its flags, picks the releases between GOOD and BAD in the catalogue's
order, and hands the work to ``sweep/bisectrun.py`` (build and bench each release a step
needs) and ``sweep/bisect.py`` (the decisions); it prints the summary, or the JSON. The
engine and the helpers it shares with the other commands come in as seams from
``commands.handlers`` (this module does not import commands.py: imports go one way).
"""

from __future__ import annotations

import json as _json
from collections.abc import Callable

from openssl_matrix.cli.paths import matrix_path, results_root
from openssl_matrix.core import log
from openssl_matrix.core.errors import UsageError
from openssl_matrix.engine.backend import Backend
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.releases import load_catalogue
from openssl_matrix.results.tree import ResultsTree
from openssl_matrix.sweep.bisect import parse_cell, releases_between, summary
from openssl_matrix.sweep.bisectrun import DEFAULT_BUILD, cell_suite, run_bisection


def cmd_bisect(*, target: str, matrix: str, results: str, figure: str, good: str, bad: str,
               build: str, cpu: str, wait: bool, json: bool, allow_plain_tcp: bool = False,
               fresh: bool = False,
               backend_for: Callable[..., Backend], engine: Callable[..., Backend],
               git_commit: Callable[[], str | None]) -> int:
    if not figure or not good or not bad:
        raise UsageError("`invoke matrix bisect` needs --figure CELL --good A --bad B",
                         hint="e.g. --figure blog-fast:aes-256-cbc:8192 --good 3.0.10 "
                         "--bad 3.0.17 (docs/bisect.md)")
    try:
        cell = parse_cell(figure)
        releases = releases_between([r.version for r in load_catalogue().releases],
                                    good.strip(), bad.strip())
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if "," in cpu:
        raise UsageError("bisect measures on one engine: give one --cpu profile",
                         hint="comparisons stay within one engine; several at once (k-ary "
                         "search) is not done yet (docs/bisect.md)")
    m = load_matrix(matrix_path(matrix), default_urls=default_urls)
    cell_suite(m, cell)  # a suite, algorithm, size or mask it lacks: refused before any engine
    profile = cpu or "auto"
    if profile != "auto":
        m.profile(profile)  # an unknown profile is refused before any engine is reached
    backend = backend_for(m, profile, allow_plain_tcp, engine)
    log.info(f"bisect {cell.text()} over {len(releases)} releases, {releases[0]} (good) → "
             f"{releases[-1]} (bad)")
    result, out = run_bisection(m, backend, ResultsTree(results_root(matrix, results)), cell,
                                releases, build=build or DEFAULT_BUILD, cpu_profile=profile,
                                engine=backend.engine_info(), git_commit=git_commit(),
                                wait=wait, fresh=fresh)
    if json:
        print(_json.dumps({"cell": cell.text(), "out": str(out), **result.as_dict()},
                          indent=2))
    else:
        print("\n".join(summary(result)))
    log.info(f"written to {out} (bisection.json, summary.txt)")
    return 0
