"""An engine worker of a lab: ``python -m openssl_matrix.cli.worker JOB``.

The lab (:mod:`openssl_matrix.lab.run`) starts one such process per engine; here, at the
top of the package, the worker is handed its :data:`~openssl_matrix.lab.run.Runner`: the
command line's dispatcher over the command table. ``thread_worker`` runs the same in a
thread of this process (the lab tests, with the fake engine).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from invoke.exceptions import Exit

from openssl_matrix.cli.commands import HANDLERS
from openssl_matrix.cli.table import dispatch
from openssl_matrix.lab.run import EngineJob, ThreadWorker, worker_main


def run_command(command: str, flags: Mapping[str, Any]) -> int:
    """Run one command as ``invoke matrix COMMAND`` would; its exit status."""
    try:
        dispatch(command, "", flags, HANDLERS)
    except Exit as exc:
        return int(exc.code or 0)
    return 0


def thread_worker(job: EngineJob, tree_root: Path) -> ThreadWorker:
    """A lab launcher that runs each engine's worker in a thread of this process."""
    return ThreadWorker(job, tree_root, run_command)


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1], run_command))
