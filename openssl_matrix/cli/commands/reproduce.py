"""``invoke matrix reproduce REPORT``: reproduce a published report from
reports/REPORT.yaml (on each ``--cpu`` profile in turn), ``--check`` it without Docker, or
``--draft PASTE --as ID``: draft such a spec from a paste."""

from __future__ import annotations

import json as _json
from collections.abc import Callable
from pathlib import Path

from openssl_matrix.cli.commands.parse import MAX_REPORT_BYTES, block_sizes_flag
from openssl_matrix.cli.paths import matrix_path, results_root, results_tree
from openssl_matrix.cli.shared import (
    EngineFactory,
    backend_for,
    docker_engine,
    git_commit,
    matrix_of,
)
from openssl_matrix.cli.table import BLOCK_SIZES, JSON, PLAIN_TCP, WAIT, Command, Flag
from openssl_matrix.core import log
from openssl_matrix.core.errors import FatalError, LabError, UsageError
from openssl_matrix.core.files import read_bounded
from openssl_matrix.core.names import clip, name_problem
from openssl_matrix.core.resources import USER_REPORTS, project_reports, user_folder
from openssl_matrix.core.version import sort_key
from openssl_matrix.images.sources import default_urls
from openssl_matrix.lab.run import split_cpus
from openssl_matrix.matrix.model import NAME
from openssl_matrix.measure.session import MAX_ATTEMPTS
from openssl_matrix.parse.encoding import paste_text
from openssl_matrix.repro.check import check as check_spec
from openssl_matrix.repro.draft import check_draft, draft_spec, refuse_existing, write_draft
from openssl_matrix.repro.draft import summary as draft_summary
from openssl_matrix.repro.resolve import Environment
from openssl_matrix.repro.run import reproduce
from openssl_matrix.repro.specload import find_spec, load_spec
from openssl_matrix.repro.verdicts import as_json, render_text

COMMAND = Command(
    "reproduce", "reproduce a published report from reports/REPORT.yaml; --draft drafts "
    "such a spec from a paste", "REPORT", "(or --draft PASTE --as ID)",
    target_unless="draft", flags=(
        Flag("force", False, "measure again even when finished runs exist; with --draft, "
             "replace an existing spec file of that id"),
        Flag("cpu", "", "CPU profile name from the matrix, or 'auto' for this host (a "
             "profile with docker_host uses that machine's Docker engine); several, comma "
             "separated (--cpu=ryzen,via), reproduce on each in turn, so that claims "
             "comparing two machines are judged from both"),
        PLAIN_TCP, WAIT, JSON,
        Flag("check", False, "check the spec without Docker: validate it, check the "
             "report's own figures against its claims, resolve versions and stand-ins "
             "offline and print the plan (what would be built and measured, about how "
             "long)"),
        BLOCK_SIZES,
        Flag("draft", "", "draft a spec from a paste (PASTE: a file with the report's text "
             "and its `openssl speed` tables) and write it to reports/ID.yaml beside the "
             "matrix (with --as ID): versions, builds, one measurement per run and row with "
             "the parsed figures, and claim stubs to edit; an existing file is kept unless "
             "--force"),
        Flag("as_", "", "with --draft: the id of the spec drafted (reports/ID.yaml)"),
    ))


def run(*, target: str, matrix: str, results: str, cpu: str, force: bool,
        wait: bool, json: bool, check: bool = False,
        allow_plain_tcp: bool = False, draft: str = "", as_: str = "",
        block_sizes: str = "", engine: EngineFactory = docker_engine,
        mirrors: Callable[[str], list[str]] = default_urls) -> int:
    if draft or as_:
        target = _draft(target, matrix, draft, as_, force, block_sizes)
        if not check:  # a draft is checked on request, never measured
            return 0
    elif block_sizes:
        raise UsageError("--block-sizes is read with --draft PASTE only",
                         hint="a spec's block sizes are the keys of its reference figures")
    spec = load_spec(find_spec(target, _reports_dirs(matrix)))
    env = Environment.from_matrix(matrix_path(matrix), mirrors)
    if check:
        report = check_spec(spec, env, results_root(matrix, results),
                            profiles=tuple(split_cpus(cpu)))
        if json:
            print(_json.dumps({"spec": spec.id, "path": str(spec.path),
                               "problems": report.problems, "warnings": report.warnings,
                               "text": report.text()},
                              indent=2))
        else:
            print(report.text(), end="")
        return 0
    m = matrix_of(matrix)
    profiles = split_cpus(cpu) or ["auto"]
    for name in profiles:
        if name != "auto":
            m.profile(name)  # an unknown profile is refused before any engine is reached
    rep = None
    failed: list[tuple[int, str, FatalError]] = []
    for i, profile in enumerate(profiles):
        # one profile after the other, each on its own engine (its docker_host): they
        # write the same reproduction folder; the last one judges from all of them
        if len(profiles) > 1:
            log.info(f"═ reproduce {spec.id} --cpu={profile} ({i + 1} of {len(profiles)})")
        try:
            backend = backend_for(m, profile, allow_plain_tcp, engine)
            rep = reproduce(spec, env, backend, results_tree(results, matrix), cpu_profile=profile,
                            force=force, wait=wait, engine=backend.engine_info(),
                            git_commit=git_commit(), max_attempts=MAX_ATTEMPTS)
        except FatalError as exc:
            if len(profiles) == 1:
                raise
            log.error(f"reproduce --cpu={profile}: {exc}")
            failed.append((i, profile, exc))
    if rep is not None:
        if json:
            print(_json.dumps(as_json(rep), indent=2, default=str))
        else:
            print(render_text(rep), end="")
        log.info(f"written to {rep.out_dir} (verdicts.json, side-by-side.txt)")
    if failed:
        mask = 0
        for i, _, _ in failed:
            mask |= 1 << min(i, 4)
        raise LabError(f"{len(failed)} of {len(profiles)} profile(s) did not reproduce: "
                       + "; ".join(f"{p} (exit {e.exit_code}: {e.message.splitlines()[0]})"
                                   for _, p, e in failed), mask=mask,
                       hint="the verdicts above use the profiles that ran (and any earlier "
                       "results of the others); fix the cause and rerun the same command")
    return 0


def _reports_dirs(matrix: str) -> list[Path]:
    """Where a spec id is looked up: reports/ beside the matrix file first (a user's spec
    of a shipped id takes precedence), then the reports the project ships."""
    beside = user_folder(matrix_path(matrix), USER_REPORTS)
    return [*([beside] if beside else []), project_reports()]


def _default_releases(matrix: str) -> list[str]:
    """The releases a plain `build` of the user's matrix makes, oldest first (none without
    a matrix file): a draft offers them as stand-ins."""
    path = Path(matrix or "matrix.yaml")
    if not path.is_file():
        return []
    return sorted({v.version.version for v in matrix_of(str(path)).variants}, key=sort_key)


def _draft(target: str, matrix: str, paste: str, spec_id: str, force: bool,
           block_sizes: str) -> str:
    """``reproduce --draft PASTE --as ID``: the spec drafted (repro/draft.py) and written to
    reports/ID.yaml beside the matrix; its id."""
    if not paste:
        raise UsageError("--as names the spec that --draft writes: give --draft PASTE too",
                         hint="invoke matrix reproduce --draft paste.txt --as my-report")
    if target:
        raise UsageError(f"`reproduce --draft` writes a new spec: give its id with --as, not "
                         f"as REPORT ({clip(target)})", hint=f"--draft {clip(paste)} --as ID")
    if not spec_id or not NAME.match(spec_id) or name_problem(spec_id):
        got = f"; got {clip(spec_id)}" if spec_id else ""
        raise UsageError("`invoke matrix reproduce --draft PASTE` needs --as ID (lower-case "
                         f"letters, digits, '.', '_', '-'{got})", hint="e.g. --as openssl-1234")
    sizes = block_sizes_flag(block_sizes)
    path = matrix_path(matrix).parent / USER_REPORTS / f"{spec_id}.yaml"
    refuse_existing(path, force=force)  # before reading the paste; write_draft checks again
    try:
        raw = read_bounded(Path(paste), cap=MAX_REPORT_BYTES)
    except OSError as exc:
        raise UsageError(f"cannot read {clip(paste, 200)}: {exc.strerror}") from None
    text = paste_text(raw, paste)  # a BOM, UTF-16 with one, or refused by its encoding
    drafted = draft_spec(text, spec_id, source=paste, block_sizes=sizes,
                         here=_default_releases(matrix))
    check_draft(drafted, path, text, sizes)
    write_draft(drafted, path, force=force)
    print(draft_summary(drafted, path, spec_id, (p.stem for p in
                                                 project_reports().glob("*.yaml"))), end="")
    return spec_id
