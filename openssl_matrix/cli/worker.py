"""An engine worker of a lab: ``python -m openssl_matrix --lab-worker JOB`` (cli/main.py).

The lab (:mod:`openssl_matrix.lab.run`) starts one such process per engine; here, at the
top of the package, the worker is handed its :data:`~openssl_matrix.lab.run.Runner`: the
command line's dispatcher over the command table. :func:`thread_lab` runs the same in
threads of this process (the lab tests, with the fake engine).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from invoke.exceptions import Exit

from openssl_matrix.cli.shared import EngineFactory, handlers
from openssl_matrix.cli.table import dispatch
from openssl_matrix.engine.buildclaims import POLL
from openssl_matrix.lab.run import EngineJob, Runner, ThreadWorker, worker_main


def runner(table: Mapping[str, Callable[..., int]]) -> Runner:
    """Runs one command of ``table`` as ``invoke matrix COMMAND`` would: its exit status."""
    def run(command: str, flags: Mapping[str, Any]) -> int:
        try:
            dispatch(command, "", flags, table)
        except Exit as exc:
            return int(exc.code or 0)
        return 0

    return run


def thread_lab(engine: EngineFactory, *,
               claim_poll: float = POLL) -> dict[str, Callable[..., int]]:
    """The command table of a lab whose engine workers are threads of this process, every
    one reaching its engines through ``engine`` (the fake-engine tests); a build looks at
    a peer's claim every ``claim_poll`` seconds."""
    table: dict[str, Callable[..., int]] = {}

    def launch(job: EngineJob, tree_root: Path) -> ThreadWorker:
        return ThreadWorker(job, tree_root, runner(table))

    table.update(handlers(engine, launcher=launch, claim_poll=claim_poll))
    return table


def worker(job_json: str) -> int:
    """The worker process's body over the command table: its exit status."""
    return worker_main(job_json, runner(handlers()))
