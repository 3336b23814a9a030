"""``invoke matrix bench --cpu=PROFILE``: run speed suites in each variant's image (on
several profiles' engines at once with ``--cpu=a,b``), then the bench summary."""

from __future__ import annotations

from openssl_matrix.cli.paths import results_tree
from openssl_matrix.cli.shared import (
    EngineFactory,
    backend_for,
    bounded,
    docker_engine,
    git_commit,
    lab,
    matrix_of,
)
from openssl_matrix.cli.summary import SuiteOutcomes, bench_failed, bench_summaries
from openssl_matrix.cli.table import ONLY, PLAIN_TCP, WAIT, Command, Flag, terminate_as_interrupt
from openssl_matrix.core import log
from openssl_matrix.core.errors import DockerUnavailable, FatalError, ProfileMismatch, UsageError
from openssl_matrix.engine.hostlock import EngineBusy
from openssl_matrix.lab.run import Launcher, split_cpus
from openssl_matrix.matrix.model import MAX_REPEAT, Suite, Variant
from openssl_matrix.measure.session import DEFAULT_SETTLE, MAX_ATTEMPTS, Bencher, build_command
from openssl_matrix.results.records import FINISHED
from openssl_matrix.results.tree import ResultsTree

COMMAND = Command("bench", "run speed suites in each variant's image", usage="--cpu=PROFILE",
                  flags=(
    ONLY,
    Flag("force", False, "run on a CPU the profile does not describe (results are marked "
         "forced)"),
    Flag("cpu", "", "CPU profile name from the matrix, or 'auto' for this host (a profile "
         "with docker_host uses that machine's Docker engine); several, comma separated "
         "(--cpu=ryzen,xeon), measure on every profile's engine at once into one results "
         "tree (docs/lab.md)"),
    PLAIN_TCP,
    Flag("suite", "", "suite name(s), comma separated (default: the matrix's "
         "default_suite)"),
    Flag("repeat", 0, "runs per variant, interleaved across variants (default: the "
         "suite's repeat, with extra rounds for figures whose 95 % interval is too wide); "
         "each figure's median, 95 % interval and clean-sample count are reported",
         low=1, unset="the suite's repeat"),
    WAIT,
    Flag("settle", "", "seconds to wait before each cell for a quiet host (default 20; 0: "
         "do not wait); the wait shows its reason and a countdown"),
    Flag("no_wait", False, "exit instead of queueing when another bench (any results "
         "tree) or a build of this tool holds the Docker engine"),
    Flag("fresh", False, "start a new session instead of resuming an interrupted one "
         "(cells it finished are measured again)"),
))


def run(*, target: str, matrix: str, results: str, cpu: str, only: str, suite: str,
        force: bool, wait: bool, repeat: int | None, fresh: bool = False,
        settle: str | float | None = None, no_wait: bool = False,
        allow_plain_tcp: bool = False, engine: EngineFactory = docker_engine,
        launcher: Launcher | None = None) -> int:
    if not split_cpus(cpu):
        raise UsageError("`invoke matrix bench` needs --cpu=PROFILE",
                         hint="--cpu=auto measures this host; named profiles are in the "
                         "matrix's 'profiles'")
    m = matrix_of(matrix)
    variants = m.select(only)
    names = [n.strip() for n in (suite or "").split(",") if n.strip()] or [""]
    suites = [m.suite(n or None) for n in names]
    if repeat:
        bounded("--repeat", repeat, 1, MAX_REPEAT)
    settle_s = _settle_seconds(settle)
    cpus = split_cpus(cpu)
    if len(cpus) > 1:
        return lab("bench", m, cpus, {
            "matrix": matrix, "results": results, "only": only, "suite": suite,
            "force": force, "wait": False, "repeat": repeat, "fresh": fresh,
            "settle": settle, "no_wait": no_wait, "allow_plain_tcp": allow_plain_tcp},
            results, launcher=launcher, wait=wait)
    tree = results_tree(results, matrix)
    backend = backend_for(m, cpu, allow_plain_tcp, engine)
    tree.lock(wait=wait)
    try:
        with terminate_as_interrupt():
            bencher = Bencher(m, backend, tree, engine=backend.engine_info(),
                              git_commit=git_commit(), settle=settle_s,
                              wait_for_host=not no_wait, max_attempts=MAX_ATTEMPTS,
                              suites=[s.name for s in suites])
            per_suite = _bench_suites(bencher, tree, variants, suites, cpu, force=force,
                                      repeat=repeat, fresh=fresh)
            # in a lab, the lab closes the sessions once every engine finished, so a
            # rerun after one engine failed does not measure the others again
            if not tree.shared and all(error is None and all(o.status in FINISHED
                                                             for o in outs)
                                       for _, outs, error in per_suite):
                bencher.close_sessions()
    finally:
        tree.unlock()
    failures, cells, unbuilt = bench_summaries(m, per_suite, len(suites) > 1, repeat,
                                                bencher.interleaved)
    # a variant that is not built: one line, whatever the number of suites
    failures += [f"{vid}: not built on this engine — {'suite' if len(names) == 1 else 'suites'}"
                 f" {', '.join(names)} could not run on it; run "
                 f"`{build_command([vid], tree.root)}` first" for vid, names in unbuilt.items()]
    if failures:
        bench_failed(failures, cells, unbuilt, per_suite, tree.root)
    return 0


def _settle_seconds(settle: str | float | None) -> float:
    """``--settle``: the seconds to wait for a quiet host before each cell (0 to 3600)."""
    try:
        settle_s = DEFAULT_SETTLE if settle in (None, "") else float(str(settle))
    except ValueError:
        settle_s = -1.0
    if not 0 <= settle_s <= 3600:  # also refuses nan and inf
        raise UsageError(f"--settle {settle}: give the seconds to wait for a quiet host "
                         "before each cell, 0 to 3600 (0: do not wait)")
    return settle_s


def _bench_suites(bencher: Bencher, tree: ResultsTree, variants: list[Variant],
                  suites: list[Suite], cpu: str, *, force: bool, repeat: int | None,
                  fresh: bool) -> SuiteOutcomes:
    """Bench every suite in turn; a suite that fails is noted and the next one runs
    (unless the engine is gone, the CPU is the wrong one or the engine is busy)."""
    per_suite: SuiteOutcomes = []
    for the_suite in suites:
        try:
            outcomes = bencher.bench(variants, the_suite, cpu, force=force,
                                     repeat=int(repeat) if repeat else None,
                                     fresh=fresh,
                                     keep_open=len(suites) > 1 or tree.shared)
        except (DockerUnavailable, ProfileMismatch, EngineBusy):
            raise  # the engine is gone, the wrong CPU or busy: no suite can run
        except FatalError as exc:  # one failing suite never stops the others
            log.error(f"suite {the_suite.name}: {exc}")
            per_suite.append((the_suite.name, [], str(exc)))
            continue
        per_suite.append((the_suite.name, outcomes, None))
    return per_suite
