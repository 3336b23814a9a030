"""What several commands share: the matrix a command reads, the engine factory seam, the
engine of a CPU profile, a lab of several engines, and :func:`handlers`, the table the
fake-engine tests inject their seams through.

The command modules (``cli/commands/*.py``) import this one; it imports none of them (the
registry in cli/table.py does, by name, when a command runs).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openssl_matrix.cli.paths import matrix_path, results_tree
from openssl_matrix.cli.table import REGISTRY, handler, terminate_as_interrupt
from openssl_matrix.core import log
from openssl_matrix.core.errors import UsageError
from openssl_matrix.core.names import clip
from openssl_matrix.engine.backend import Backend, DockerBackend
from openssl_matrix.images.sources import default_urls
from openssl_matrix.lab.run import (
    Launcher,
    close_sessions,
    lab_outcome,
    print_summaries,
    run_lab,
    tree_for_lab,
)
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.model import Matrix, Variant
from openssl_matrix.matrix.patches import endbr32_warning

if TYPE_CHECKING:
    from openssl_matrix.report.charts import Charts


def matrix_of(path: str) -> Matrix:
    """The matrix a command reads (``--matrix``, then the environment, then the default)."""
    return load_matrix(matrix_path(path), default_urls=default_urls)


def bounded(flag: str, value: Any, low: int, high: int) -> int:
    """A whole-number flag within [low, high], else UsageError naming the range."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UsageError(f"{flag} {clip(value, 40)}: expected a whole number from {low} to "
                         f"{high}")
    return value


def git_commit() -> str | None:
    """This tool's own commit, for a run's provenance (None outside a git checkout)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, cwd=Path(__file__).resolve().parents[2])
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def endbr32_of(variant: Variant | None, record: dict[str, Any] | None) -> str | None:
    """"will die with SIGILL" for a variant meant for a CPU without ENDBR32 whose built
    libcrypto has some (from its build record)."""
    if variant is None or not record:
        return None
    count = record.get("endbr32")
    return endbr32_warning(variant.id, variant.sigill_cpus,
                           count if isinstance(count, int) else None)


#: How a command reaches a Docker engine: (``base_url``, ``allow_plain_tcp``) -> the
#: engine. ``base_url`` None is the environment's (DOCKER_HOST, the current context), else
#: a profile's docker_host or a lab peer's; ``allow_plain_tcp`` lets ``tcp://`` without TLS
#: through. The command line's is :func:`docker_engine`; the fake-engine tests hand their
#: own to :func:`handlers`. No command makes an engine any other way.
EngineFactory = Callable[[str | None, bool], Backend]


def docker_engine(base_url: str | None, allow_plain_tcp: bool) -> Backend:
    """The real engine, through the Docker SDK (engine/backend.py)."""
    return DockerBackend(base_url, allow_plain_tcp=allow_plain_tcp)


def backend_for(m: Matrix, cpu: str, allow_plain_tcp: bool, engine: EngineFactory,
                ) -> Backend:
    """The Docker engine of a CPU profile (its docker_host), else the environment's."""
    profile = m.profile(cpu) if cpu and cpu != "auto" else None
    if profile is not None and profile.docker_host:
        log.info(f"profile {profile.name}: Docker engine {profile.docker_host}")
        return engine(profile.docker_host, allow_plain_tcp)
    return engine(None, allow_plain_tcp)


def lab(command: str, m: Matrix, cpus: list[str], flags: dict[str, Any], results: str, *,
        launcher: Launcher | None, wait: bool = False) -> int:
    """``--cpu=a,b,...``: every profile's engine at once (lab/run.py)."""
    for name in cpus:
        if name != "auto":
            m.profile(name)  # an unknown profile is refused before any engine starts
    tree = results_tree(results, str(m.path))
    if command == "bench":
        with terminate_as_interrupt(), tree_for_lab(tree, wait=wait):
            states = run_lab(m, command, cpus, flags, tree, launch=launcher)
            if all(s.code == 0 for s in states):
                close_sessions(tree, m, cpus, flags)
    else:
        with terminate_as_interrupt():
            states = run_lab(m, command, cpus, flags, tree, launch=launcher)
    print_summaries(states)
    lab_outcome(states, cpus)
    return 0


def handlers(engine: EngineFactory = docker_engine, *,
             launcher: Launcher | None = None,
             charts: Charts | None = None,
             mirrors: Callable[[str], list[str]] | None = None,
             claim_poll: float | None = None) -> dict[str, Callable[..., int]]:
    """The command table's handlers: every engine a command reaches comes from ``engine``,
    a lab's engine workers are started by ``launcher`` (None: worker processes, see
    lab/run.py), the report's charts are drawn by ``charts`` (tests pass NO_CHARTS),
    ``reproduce`` downloads a release it has no URL for from ``mirrors`` (the official
    ones; a test offline passes none), a lab's build looks at a peer's claim every
    ``claim_poll`` seconds (None: each command's default). The one place the engine is
    chosen: each command's ``run`` gets the seams it takes (cli/table.py's ``handler``)."""
    given = {"charts": charts, "mirrors": mirrors, "claim_poll": claim_poll}
    seams: dict[str, Any] = {"engine": engine, "launcher": launcher,
                             **{k: v for k, v in given.items() if v is not None}}
    return {name: handler(name, **seams) for name in REGISTRY}
