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
        "command": "list | render | build | bench | profiles | export | parse | import | pin | "
        "report | reproduce",
        "target": "FILE for `parse` and `import`, VERSION for `pin`, REPORT (a reports/ id "
        "or a spec file) for `reproduce`",
        "matrix": "matrix file to use (default: matrix.yaml)",
        "results": "results tree folder (default: results)",
        "only": "variants to use: fnmatch pattern(s) over variant ids, comma separated; a "
        "pattern matching no default variant picks opt-in ones (e.g. --only '1.0.1e-*')",
        "all": "list/render/build: every variant the matrix declares, opt-in ones too",
        "jobs": "build: how many variants to build at once (default 1)",
        "force": "build: rebuild even if up to date; bench: run on a CPU the profile "
        "does not describe (results are marked forced); pin: accept a tarball whose hash "
        "differs from the official release's; reproduce: measure again even when "
        "finished runs exist",
        "cpu": "bench/reproduce: CPU profile name from the matrix, or 'auto' for this host; "
        "build/bench: a profile with docker_host uses that machine's Docker engine",
        "repeat": "bench: runs per variant, interleaved across variants (default: the "
        "suite's repeat); median, spread and noisy figures are reported",
        "suite": "bench: suite name(s), comma separated (default: the matrix's default_suite)",
        "wait": "bench: wait for another bench on the same results tree instead of failing",
        "settle": "bench: seconds to wait before each cell for a quiet host (default 20; 0: "
        "do not wait); the wait shows its reason and a countdown",
        "no_wait": "bench: exit instead of queueing when another bench (any results tree) "
        "or a build of this tool holds the Docker engine",
        "fresh": "bench: start a new session instead of resuming an interrupted one "
        "(cells it finished are measured again)",
        "json": "list/parse/reproduce: print JSON",
        "format": "export: csv (default) or jsonl",
        "output": "export/render/report: write to this file/folder instead of "
        "stdout/default (report: <results>/_report)",
        "block_size": "report: block size of the method tables and charts (default 8192)",
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
    settle: str = "",
    no_wait: bool = False,
    fresh: bool = False,
    repeat: int = 0,
    json: bool = False,
    format: str = "",
    output: str = "",
    file: str = "",
    as_: str = "",
    all: bool = False,
    block_size: int = 0,
) -> None:
    """Build and benchmark the OpenSSL matrix (`invoke matrix build`, `bench --cpu=auto`)."""
    flags = {
        "matrix": matrix, "results": results, "only": only, "jobs": jobs, "force": force,
        "cpu": cpu, "suite": suite, "wait": wait, "settle": settle, "no_wait": no_wait,
        "fresh": fresh, "repeat": repeat,
        "json": json, "format": format, "output": output, "file": file, "as_": as_,
        "all": all, "block_size": block_size,
    }
    dispatch(command, target, flags, HANDLERS)
