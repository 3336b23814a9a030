"""openssl-matrix tasks: `invoke matrix <command>` (see README.md and `invoke --help matrix`)."""

from __future__ import annotations

from invoke.context import Context
from invoke.tasks import task

from openssl_matrix.cli import MatrixTask, dispatch
from openssl_matrix.commands import HANDLERS


@task(
    klass=MatrixTask,
    positional=["command", "target"],
    help={
        "command": "list | render | build | bench | export | parse | pin",
        "target": "FILE for `parse`, VERSION for `pin`",
        "matrix": "matrix file to use (default: matrix.yaml)",
        "results": "results tree folder (default: results)",
        "only": "variants to use: fnmatch pattern(s) over variant ids, comma separated",
        "jobs": "build: how many variants to build at once (default 1)",
        "force": "build: rebuild even if up to date; bench: run on a CPU the profile "
        "does not describe (results are marked forced)",
        "cpu": "bench: CPU profile name from the matrix, or 'auto' for this host",
        "suite": "bench: suite name(s), comma separated (default: the matrix's default_suite)",
        "wait": "bench: wait for another bench on the same results tree instead of failing",
        "fresh": "bench: start a new session instead of resuming an interrupted one "
        "(cells it finished are measured again)",
        "json": "list/parse: print JSON",
        "format": "export: csv (default) or jsonl",
        "output": "export/render: write to this file/folder instead of stdout/default",
        "file": "pin: path of a tarball you trust",
    },
)
def matrix(
    c: Context,
    command: str,
    target: str = "",
    matrix: str = "matrix.yaml",
    results: str = "results",
    only: str = "",
    jobs: int = 0,
    force: bool = False,
    cpu: str = "",
    suite: str = "",
    wait: bool = False,
    fresh: bool = False,
    json: bool = False,
    format: str = "",
    output: str = "",
    file: str = "",
) -> None:
    """Build and benchmark the OpenSSL matrix (`invoke matrix build`, `bench --cpu=auto`)."""
    flags = {
        "matrix": matrix, "results": results, "only": only, "jobs": jobs, "force": force,
        "cpu": cpu, "suite": suite, "wait": wait, "fresh": fresh, "json": json, "format": format,
        "output": output, "file": file,
    }
    dispatch(command, target, flags, HANDLERS)
