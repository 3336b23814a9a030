"""``invoke matrix bisect --figure CELL --good A --bad B``: which release moved a figure.

The command reads its flags, picks the releases between GOOD and BAD in the catalogue's
order, and hands the work to ``sweep/bisectrun.py`` (build and bench each release a step
needs) and ``sweep/bisect.py`` (the decisions); it prints the summary, or the JSON. The
engine comes in as a seam (``cli/shared.handlers``; the real one by default).
"""

from __future__ import annotations

import json as _json
from collections.abc import Mapping
from pathlib import Path

from openssl_matrix.cli.paths import matrix_path, results_root
from openssl_matrix.cli.shared import EngineFactory, backend_for, docker_engine, git_commit
from openssl_matrix.cli.table import JSON, PLAIN_TCP, WAIT, Command, Flag
from openssl_matrix.core import log
from openssl_matrix.core.errors import BISECT_ABORT, FatalError, UsageError
from openssl_matrix.engine.backend import Backend
from openssl_matrix.images.gitsource import Commit, commits_between, resolve
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.model import Matrix
from openssl_matrix.matrix.releases import load_catalogue
from openssl_matrix.results.tree import ResultsTree
from openssl_matrix.sweep.bisect import (
    INTERLEAVED,
    Bisection,
    Cell,
    exit_code,
    parse_cell,
    ratio_text,
    releases_between,
    summary,
)
from openssl_matrix.sweep.bisectrun import (
    DEFAULT_BUILD,
    GitMeasure,
    cell_suite,
    run_bisection,
    run_step,
)

COMMAND = Command(
    "bisect", "which release between two moved a figure (docs/bisect.md)",
    usage="--figure SUITE:ALGORITHM:BLOCK[:MASK] --good A --bad B", flags=(
        Flag("cpu", "", "CPU profile name from the matrix, or 'auto' for this host "
             "(default); one profile: a bisection's comparisons stay within one engine"),
        Flag("no_ccache", False, "build each release cold, without the shared compiler "
             "cache a bisection uses by default (docs/building.md)"),
        PLAIN_TCP, WAIT,
        Flag("fresh", False, "measure from the start instead of replaying what an earlier "
             "bisection of the same range measured (it is set aside, not deleted)"),
        JSON,
        Flag("figure", "", "the cell to bisect: SUITE:ALGORITHM:BLOCK[:MASK] (e.g. "
             "blog-fast:aes-256-cbc:8192; no MASK: the suite's first mask)"),
        Flag("good", "", "the release whose figure is the old one (a catalogue release)"),
        Flag("bad", "", "the release whose figure moved (a catalogue release, either side "
             "of --good in time)"),
        Flag("git", "", "a local git clone of OpenSSL: --good and --bad are revisions of it "
             "(tags, commits) and the bisection is over the commits of BAD's first-parent "
             "line after GOOD, each built from its `git archive` (docs/bisect.md)"),
        Flag("run", False, "with --git: judge the tree's HEAD (the commit `git bisect run` "
             "checked out) against --good and --bad and exit 0 (like good), 1 (like bad), "
             "125 (skip: it does not build, or the rounds cannot place it) or 128 (stop the "
             "run: like neither, or an error)"),
        Flag("build", "", "how each release is built: the part of its variant id after "
             "the version (default asm-x86_64: 3.0.13-asm-x86_64)"),
    ))

#: ``bisect --run``'s status when it cannot judge the commit: above 127, so that
#: ``git bisect run`` stops instead of marking the commit (core/errors.py's table)
ABORT = BISECT_ABORT


def run(*, target: str, matrix: str, results: str, figure: str, good: str, bad: str,
        build: str, cpu: str, wait: bool, json: bool, allow_plain_tcp: bool = False,
        fresh: bool = False, no_ccache: bool = False, git: str = "",
        run: bool = False, engine: EngineFactory = docker_engine) -> int:
    if not figure or not good or not bad:
        raise UsageError("`invoke matrix bisect` needs --figure CELL --good A --bad B",
                         hint="e.g. --figure blog-fast:aes-256-cbc:8192 --good 3.0.10 "
                         "--bad 3.0.17 (docs/bisect.md)")
    if run and not git:
        raise UsageError("--run judges a commit of a git tree: give --git PATH",
                         hint="git bisect run python3 -m openssl_matrix bisect --run "
                         "--git \"$PWD\" ... (docs/bisect.md)")
    try:
        cell = parse_cell(figure)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if "," in cpu:
        raise UsageError("bisect measures on one engine: give one --cpu profile",
                         hint="comparisons stay within one engine; several at once (k-ary "
                         "search) is not done yet (docs/bisect.md)")
    if run:
        return _git_run(cell, matrix=matrix, results=results, good=good, bad=bad,
                        build=build, cpu=cpu, wait=wait, allow_plain_tcp=allow_plain_tcp,
                        no_ccache=no_ccache, git=git, engine=engine)
    commits: dict[str, Commit] = {}
    if git:
        commits = {c.short: c for c in commits_between(Path(git), good.strip(), bad.strip())}
        releases = list(commits)
    else:
        try:
            releases = releases_between([r.version for r in load_catalogue().releases],
                                        good.strip(), bad.strip())
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    m, profile, backend = _engine(matrix, cell, cpu, allow_plain_tcp, engine)
    tree = ResultsTree(results_root(matrix, results))
    what = "commits" if git else "releases"
    log.info(f"bisect {cell.text()} over {len(releases)} {what}, {releases[0]} (good) → "
             f"{releases[-1]} (bad)")
    measure = GitMeasure(m, backend, tree, cell, git=Path(git), commits=commits,
                         build=build or DEFAULT_BUILD, cpu_profile=profile,
                         engine=backend.engine_info(), git_commit=git_commit(), wait=wait,
                         compiler_cache=not no_ccache) if git else None
    result, out = run_bisection(m, backend, tree, cell, releases,
                                build=build or DEFAULT_BUILD, cpu_profile=profile,
                                engine=backend.engine_info(), git_commit=git_commit(),
                                wait=wait, compiler_cache=not no_ccache, measure=measure,
                                fresh=fresh)
    if json:
        print(_json.dumps({"cell": cell.text(), "out": str(out), **result.as_dict(),
                           **({"commits": {k: vars(c) for k, c in commits.items()}}
                              if commits else {})}, indent=2))
    else:
        print("\n".join(summary(result) + commit_lines(result, commits)))
    log.info(f"written to {out} (bisection.json, summary.txt)")
    return 0


def commit_lines(result: Bisection, commits: Mapping[str, Commit]) -> list[str]:
    """Each move's two commits with their author date and subject line."""
    lines = []
    for m in result.moves:
        for name in (m.before, m.after):
            c = commits.get(name)
            if c is not None:
                lines.append(f"    {c.short}  {c.date}  {c.subject}")
    return (["  the commits of each move:", *lines]) if lines else []


def _engine(matrix: str, cell: Cell, cpu: str, allow_plain_tcp: bool,
            engine: EngineFactory) -> tuple[Matrix, str, Backend]:
    m = load_matrix(matrix_path(matrix), default_urls=default_urls)
    cell_suite(m, cell)  # a suite, algorithm, size or mask it lacks: refused before any engine
    profile = cpu or "auto"
    if profile != "auto":
        m.profile(profile)  # an unknown profile is refused before any engine is reached
    return m, profile, backend_for(m, profile, allow_plain_tcp, engine)


def _git_run(cell: Cell, *, matrix: str, results: str, good: str, bad: str, build: str,
             cpu: str, wait: bool, allow_plain_tcp: bool, no_ccache: bool, git: str,
             engine: EngineFactory) -> int:
    """``bisect --run``: the git tree's HEAD judged against GOOD and BAD; the exit status
    is what ``git bisect run`` reads (0 good, 1 bad, 125 skip). Anything else that goes
    wrong is 128, which stops git's run: never a verdict on the commit."""
    try:
        tree = Path(git)
        ends = {name: resolve(tree, rev) for name, rev in
                (("good", good.strip()), ("bad", bad.strip()), ("head", "HEAD"))}
        commits = {c.short: c for c in ends.values()}
        m, profile, backend = _engine(matrix, cell, cpu, allow_plain_tcp, engine)
        measure = GitMeasure(m, backend, ResultsTree(results_root(matrix, results)), cell,
                             git=tree, commits=commits, build=build or DEFAULT_BUILD,
                             cpu_profile=profile, engine=backend.engine_info(),
                             git_commit=git_commit(), wait=wait, compiler_cache=not no_ccache)
        head, lo, hi = ends["head"].short, ends["good"].short, ends["bad"].short
        if head in (lo, hi):
            decision = "like-good" if head == lo else "like-bad"
            print(f"{head}: {decision} (it is --{'good' if head == lo else 'bad'})")
            return exit_code(decision)
        step = run_step(measure, head, lo, hi)
    except FatalError as exc:
        log.error(f"bisect --run: {exc}")
        print("bisect --run: stopping git's run (exit 128): the commit was not judged")
        return ABORT
    detail = step.reason if step.decision == "skipped" else ", ".join(
        f"vs {end} {ratio_text(e) if e is not None else 'no pairs'}"
        for end, e in (("good " + step.good, step.vs_good), ("bad " + step.bad, step.vs_bad)))
    how = f"{step.pair_runs} interleaved run(s)" if step.basis == INTERLEAVED else \
        f"{step.rounds} rounds"
    print(f"{head} {ends['head'].subject!r}: {step.decision} (basis {step.basis}: {how}; "
          f"{detail}) → exit {exit_code(step.decision)}")
    if step.why_rounds:
        print(f"  decided from rounds: {step.why_rounds}")
    return exit_code(step.decision)
