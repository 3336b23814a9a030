"""``invoke matrix profile --only VARIANT --algorithm ALG --bytes N`` (or ``--suite NAME
--cell TEXT``): where a cell's time goes.

Runs one cell (an ``openssl speed`` algorithm at a block size, or any cell of a matrix
suite: a public-key operation, a TLS handshake, a library-harness operation at a thread
count; ``measure/profilecell.py``) under ``perf`` in the variant's profile image
(``measure/perfrun.py``; for a library suite it is built FROM the variant's harness
image, the image the bench runs that suite in), files the profile under
``<results>/_profiles/<variant>/<cell>/``
(``measure/profilestore.py``) and prints its top functions per operation; ``--compare A,B``
profiles both builds and prints (and files) the function-by-function difference with the
share of the measured gap it explains; ``--agree`` profiles one build's cell twice and
prints (and files) whether the two agree on the top functions within their counting
uncertainty (``measure/profileagree.py``); ``--overhead`` runs the cell unprofiled right
before and after the profiled run and records the profiler's cost on the figure
(``measure/profileoverhead.py``). Each variant is profiled and filed by
``measure/profiling.py``, the code a reproduction's profiled claim runs too. The engine
comes in as a seam (``cli/shared.handlers``; the real one by default).
"""

from __future__ import annotations

import json as _json
from typing import Any

from openssl_matrix.cli.paths import matrix_path, results_root
from openssl_matrix.cli.shared import EngineFactory, docker_engine
from openssl_matrix.cli.table import JSON, Command, Flag
from openssl_matrix.core.errors import ConfigError, UsageError
from openssl_matrix.core.names import ALPHABET, clip, name_problem
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.matrix.model import MAX_BYTES, MAX_SECONDS, Matrix, Suite, Variant
from openssl_matrix.measure.perfrun import Cell, SpeedCell
from openssl_matrix.measure.profileagree import agreement_of, file_agreement
from openssl_matrix.measure.profilecell import resolve
from openssl_matrix.measure.profiling import compare_profiled, profile_variant, summary
from openssl_matrix.results.tree import ResultsTree

COMMAND = Command(
    "profile", "where a cell's time goes: perf in the variant's image, flame graphs, two "
    "builds compared (docs/profile.md)",
    usage="--only VARIANT (or --compare A,B) --algorithm ALG --bytes N (or --suite NAME "
    "--cell TEXT)", flags=(
        Flag("only", "", "the variant to profile: one variant id (e.g. 3.0.20-asm-x86_64)"),
        Flag("suite", "", "the suite whose cell to profile (with --cell; any kind the bench "
             "runs: speed, pkey, tls, library)"),
        Flag("cell", "", "the cell of --suite to profile, named as its figures are: "
             "ALG:BYTES (speed), ALG:OP (pkey: rsa2048:sign), PROTOCOL-KEY:OP[:PINNING] "
             "(tls: tls1.3-rsa2048:handshake), OP[:tTHREADS] (library: "
             "pkey-decode-pem-rsa2048:t1)"),
        JSON,
        Flag("algorithm", "", "the speed algorithm to profile (e.g. sha256, aes-128-cbc: as "
             "`openssl speed -evp` takes it)"),
        Flag("bytes", 0, "the block size to profile, in bytes (speed's -bytes)", low=1,
             unset="none: required"),
        Flag("seconds", 0, "how long the profiled run lasts (default 3; with --suite: the "
             "suite's seconds)", low=1, unset="3 seconds"),
        Flag("compare", "", "two variants, comma separated (A,B): profile both on the same "
             "cell and print the difference per function and library against the measured "
             "gap"),
        Flag("agree", False, "profile the cell twice, one run after the other (--only's "
             "variant), and print whether the two agree on the top 10 functions' time per "
             "operation within 2σ of their sample counts' combined uncertainty"),
        Flag("overhead", False, "also run the cell unprofiled right before and after the "
             "profiled run (same image and limits) and record both rates, their ratio and "
             "each run's host accounting: the profiler's cost on the figure"),
    ))
DEFAULT_SECONDS = 3


#: the longest --cell text taken (the longest cell name is far shorter)
MAX_CELL = 300


def _name(flag: str, value: str, what: str, hint: str, *, given: str | None = None) -> str:
    """A flag's name value (a variant id, suite or algorithm), stripped: refused, naming
    the flag and what was given (``given``: the whole flag, when ``value`` is a part of
    it; quoted, cut short), when it is empty or not a safe name."""
    name = value.strip()
    problem = "it is empty" if not name else name_problem(name)
    if problem is not None:
        part = "" if given is None else f"{clip(value)} "
        problem = problem.removeprefix(clip(name)).strip()
        raise UsageError(f"{flag} {clip(value if given is None else given)}: {part}is not "
                         f"{what}: {problem}", hint=f"{hint}; names are {ALPHABET}")
    return name


def _cell_text(text: str) -> str:
    """--cell's text: printable, not blank, not over :data:`MAX_CELL` characters."""
    bad = sorted({c for c in text if not c.isprintable()})
    problem = ("blank" if not text.strip() else f"longer than {MAX_CELL} characters"
               if len(text) > MAX_CELL else f"contains {', '.join(clip(c) for c in bad[:5])}"
               if bad else None)
    if problem is not None:
        raise UsageError(f"--cell {clip(text)}: {problem}",
                         hint="name one cell of --suite as its figures are named, e.g. "
                         "--suite pkey --cell rsa2048:sign (docs/profile.md)")
    return text


def _bounded(flag: str, value: int, high: int, what: str, example: str) -> int:
    if not 1 <= value <= high:
        raise UsageError(f"{flag}={clip(value)}: expected a whole number from 1 to {high} "
                         f"({what})", hint=f"e.g. {example}")
    return value


def _names(only: str, compare: str) -> list[str]:
    """The variant ids to profile: --only's one, or --compare's two different ones."""
    hint = "`invoke matrix list --all` lists the variant ids"
    if only and compare:
        raise UsageError(f"--only {clip(only)} and --compare {clip(compare)}: give one",
                         hint="--only VARIANT profiles one build, --compare A,B two")
    if not compare:
        if not only.strip():
            raise UsageError("`invoke matrix profile` needs --only VARIANT (one variant) or "
                             "--compare A,B", hint="e.g. --only 3.0.20-asm-x86_64 "
                             "--algorithm sha256 --bytes 16 (docs/profile.md)")
        return [_name("--only", only, "one variant id",
                      hint + " (one id, no pattern; two builds: --compare A,B)")]
    parts = compare.split(",")
    if len(parts) != 2:
        raise UsageError(f"--compare {clip(compare)}: takes two variants, A,B "
                         f"(got {len(parts)} part{'s' if len(parts) != 1 else ''})",
                         hint="e.g. --compare 3.0.20-asm-x86_64,3.0.20-no-asm-x86_64; one "
                         "build: --only VARIANT")
    a, b = (_name("--compare", p, "a variant id", hint + "; --compare takes A,B",
                  given=compare) for p in parts)
    if a == b:
        raise UsageError(f"--compare {clip(compare)}: names {a} twice",
                         hint="compare two different builds, e.g. --compare "
                         "3.0.20-asm-x86_64,3.0.20-no-asm-x86_64; one build: --only VARIANT")
    return [a, b]


def _variant(m: Matrix, vid: str, flag: str) -> Variant:
    try:
        found = [v for v in m.select(vid, every=True) if v.id == vid]
    except ConfigError:
        found = []
    if not found:
        raise UsageError(f"{flag} {clip(vid)}: the matrix {m.path} declares no such variant",
                         hint="`invoke matrix list --all` lists them; give one id, no pattern")
    return found[0]


def _cell(v: Variant, suite: Suite | None, text: str, speed: SpeedCell | None,
          seconds: int) -> Cell:
    """The variant's cell: the bench's own invocation of it on that version."""
    version = v.version.version
    if suite is None:
        assert speed is not None
        return speed.cell(version)
    return resolve(suite, text, version, (*v.version.configure, *v.configure),
                   seconds or None)


def _suite(m: Matrix, name: str) -> Suite:
    found = [s for s in m.suites if s.name == name]
    if not found:
        raise UsageError(f"--suite {clip(name)}: the matrix {m.path} has no such suite",
                         hint="give one of its suites: " + ", ".join(
                             f"{s.name} ({s.kind or 'speed'})" for s in m.suites))
    return found[0]


def _form(algorithm: str, bytes: int, suite: str, cell: str) -> None:
    """One of the two ways to name the cell, whole."""
    if suite or cell:
        if algorithm or bytes:
            raise UsageError("--suite/--cell and --algorithm/--bytes name the cell two ways: "
                             "give one", hint="--suite pkey --cell rsa2048:sign, or "
                             "--algorithm sha256 --bytes 16")
        if not (suite and cell):
            raise UsageError("--suite NAME and --cell TEXT go together",
                             hint="e.g. --suite library-quick --cell "
                             "pkey-decode-pem-rsa2048:t1 (docs/profile.md)")
    elif not algorithm or not bytes:
        raise UsageError("`invoke matrix profile` needs --algorithm ALG --bytes N, or "
                         "--suite NAME --cell TEXT",
                         hint="e.g. --algorithm sha256 --bytes 16, or --suite pkey --cell "
                         "rsa2048:sign (docs/profile.md)")


def run(*, target: str, matrix: str, results: str, only: str, algorithm: str,
        bytes: int, suite: str, cell: str, seconds: int, compare: str, json: bool,
        agree: bool = False, overhead: bool = False,
        engine: EngineFactory = docker_engine) -> int:
    if agree and compare:
        raise UsageError(f"--agree and --compare {clip(compare)}: give one",
                         hint="--agree profiles one build's cell twice (--only VARIANT) and "
                         "checks the two agree; --compare A,B profiles two builds")
    names = _names(only, compare)
    _form(algorithm, bytes, suite, cell)
    flag = "--compare" if compare else "--only"
    if seconds:
        _bounded("--seconds", seconds, MAX_SECONDS, "the matrix's bound on a suite's "
                 "seconds", "--seconds=3, or leave --seconds out for the default")
    m = load_matrix(matrix_path(matrix), default_urls=default_urls)
    root = results_root(matrix, results)
    picked = _suite(m, _name("--suite", suite, "a suite name", "give a suite of the "
                             "matrix by name")) if suite else None
    speed = None
    if picked is None:
        speed = SpeedCell(_name("--algorithm", algorithm, "a speed algorithm",
                                "give one as `openssl speed -evp` takes it, e.g. sha256"),
                          _bounded("--bytes", bytes, MAX_BYTES,
                                   "the matrix's bound on a suite's block size",
                                   "--bytes=16"),
                          seconds or DEFAULT_SECONDS)
    else:
        _cell_text(cell)
    # an unknown variant, suite or cell is refused before the engine is reached
    cells = [_cell(_variant(m, vid, flag), picked, cell, speed, seconds) for vid in names]
    backend = engine(None, False)
    info = backend.engine_info()
    if agree:  # the same cell twice, one run after the other
        names, cells = names * 2, cells * 2
    variants = {vid: _variant(m, vid, flag) for vid in names}
    tree = ResultsTree(root)
    done = [profile_variant(tree, backend, variants[vid], c, info, overhead=overhead)
            for vid, c in zip(names, cells, strict=True)]
    out: dict[str, Any] = {"profiles": [{"folder": str(p.folder), **p.meta} for p in done]}
    text = [summary(p.meta, p.folder) for p in done]
    if compare:
        cmp = compare_profiled(tree, cells[0], names[0], done[0], names[1], done[1])
        out["compare"] = {"folder": str(cmp.folder), "gap_ns_per_op": cmp.diff.gap_ns,
                          "explained_share": cmp.share}
        text += ["", cmp.table.rstrip("\n"), f"→ {cmp.folder}"]
    if agree:
        first, second = done
        ag = agreement_of(first.run, second.run)
        folder, table = file_agreement(tree, names[0], cells[0], ag, first.run, second.run,
                                       (first.folder, second.folder))
        out["agree"] = {"folder": str(folder), "verdict": ag.verdict, "beyond": ag.beyond,
                        "rows": len(ag.rows), "k_sigma": ag.k}
        text += ["", table.rstrip("\n"), f"→ {folder}"]
    print(_json.dumps(out, indent=2, default=str) if json else "\n".join(text))
    return 0
