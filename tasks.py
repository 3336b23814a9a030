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
        "command": "list | render | build | bench | profiles | export | parse | import | pin",
        "target": "FILE for `parse` and `import`, VERSION for `pin`",
        "matrix": "matrix file to use (default: matrix.yaml)",
        "results": "results tree folder (default: results)",
        "only": "variants to use: fnmatch pattern(s) over variant ids, comma separated; a "
        "pattern matching no default variant picks opt-in ones (e.g. --only '1.0.1e-*')",
        "all": "list/render/build: every variant the matrix declares, opt-in ones too",
        "jobs": "build: how many variants to build at once (default 1)",
        "force": "build: rebuild even if up to date; bench: run on a CPU the profile "
        "does not describe (results are marked forced); pin: accept a tarball whose hash "
        "differs from the official release's",
        "cpu": "bench: CPU profile name from the matrix, or 'auto' for this host; "
        "build/bench: a profile with docker_host uses that machine's Docker engine",
        "repeat": "bench: runs per variant, interleaved across variants (default: the "
        "suite's repeat); median, spread and noisy figures are reported",
        "suite": "bench: suite name(s), comma separated (default: the matrix's default_suite)",
        "wait": "bench: wait for another bench on the same results tree instead of failing",
        "fresh": "bench: start a new session instead of resuming an interrupted one "
        "(cells it finished are measured again)",
        "json": "list/parse: print JSON",
        "format": "export: csv (default) or jsonl",
        "output": "export/render: write to this file/folder instead of stdout/default",
        "file": "pin: path of a tarball you trust",
        "as_": "import: name for the imported report (results go under results/ref-NAME)",
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
    repeat: int = 0,
    json: bool = False,
    format: str = "",
    output: str = "",
    file: str = "",
    as_: str = "",
    all: bool = False,
) -> None:
    """Build and benchmark the OpenSSL matrix (`invoke matrix build`, `bench --cpu=auto`)."""
    flags = {
        "matrix": matrix, "results": results, "only": only, "jobs": jobs, "force": force,
        "cpu": cpu, "suite": suite, "wait": wait, "fresh": fresh, "repeat": repeat,
        "json": json, "format": format, "output": output, "file": file, "as_": as_,
        "all": all,
    }
    dispatch(command, target, flags, HANDLERS)
