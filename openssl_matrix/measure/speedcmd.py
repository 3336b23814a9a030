"""The ``openssl speed`` command lines of a suite on one OpenSSL version.

Which options each version has (``SPEED_OPTIONS``), how a capability mask is written for
it, and the wrapper every speed invocation runs in: it samples the host before and after
speed (``hostacct``) and prints the shell's ``times`` (the time-basis guard).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from openssl_matrix.core.version import series
from openssl_matrix.matrix.aead import AEAD_METHOD
from openssl_matrix.matrix.isa import render_ia32cap
from openssl_matrix.matrix.kinds.base import RUNNER_PTS, RUNNER_S_TIME
from openssl_matrix.matrix.model import Mask, Suite
from openssl_matrix.matrix.pts import PROFILE
from openssl_matrix.matrix.pts import plan as pts_plan
from openssl_matrix.measure.invocation import SPEED_WRAPPER, WRAPPER_NAME, Invocation
from openssl_matrix.measure.tlsbench import tls_invocations

# Ciphers and digests that OpenSSL 3.x moved to the legacy provider.
LEGACY_PROVIDER_ALGS = ("idea", "des-", "des3", "desx", "rc2", "rc4", "rc5", "bf-", "blowfish",
                        "cast", "seed", "md4", "mdc2", "whirlpool", "rmd160", "ripemd")

#: ``openssl speed`` options: (first version that has it, first version without it).
#: From apps/speed.c of each series; engines are gone in 4.0.
SPEED_OPTIONS: dict[str, tuple[tuple[int, int, int], tuple[int, int, int] | None]] = {
    "-elapsed": ((0, 9, 8), None), "-evp": ((0, 9, 8), None), "-decrypt": ((0, 9, 8), None),
    "-engine": ((0, 9, 8), (4, 0, 0)), "-multi": ((0, 9, 8), None), "-mr": ((0, 9, 8), None),
    "-mb": ((1, 0, 2), None), "-misalign": ((1, 0, 2), None),
    "-async_jobs": ((1, 1, 0), None),
    "-seconds": ((1, 1, 1), None), "-bytes": ((1, 1, 1), None), "-primes": ((1, 1, 1), None),
    "-aead": ((1, 1, 1), None),
    "-hmac": ((3, 0, 0), None), "-cmac": ((3, 0, 0), None), "-provider": ((3, 0, 0), None),
    "-provider-path": ((3, 0, 0), None), "-propquery": ((3, 0, 0), None),
    "-config": ((3, 1, 0), None), "-mlock": ((3, 1, 0), None),
    "-kem-algorithms": ((3, 2, 0), None), "-signature-algorithms": ((3, 2, 0), None),
    "-testmode": ((3, 4, 0), None),
}

def has_option(option: str, version: str) -> bool:
    """Whether ``openssl speed`` of ``version`` has ``option``."""
    first, gone = SPEED_OPTIONS[option]
    v = series(version)
    return v >= first and (gone is None or v < gone)


def _since(option: str) -> str:
    first, gone = SPEED_OPTIONS[option]
    text = "from " + ".".join(map(str, first))
    return text + (f", gone in {'.'.join(map(str, gone))}" if gone else "")


def unwrap_speed(command: Sequence[str]) -> tuple[str, ...]:
    """The ``openssl ...`` command inside ``Invocation.exec_command`` (else as given)."""
    cmd = tuple(command)
    if cmd[:3] == ("/bin/sh", "-c", SPEED_WRAPPER) and len(cmd) > 3 and cmd[3] == WRAPPER_NAME:
        return ("openssl", *cmd[4:])
    return cmd

def mask_value(mask: Mask, version: str) -> tuple[str | None, list[str]]:
    """OPENSSL_ia32cap for ``mask`` on ``version`` (None: unmasked or not expressible)."""
    if mask.disable:
        return render_ia32cap(mask.disable, version)
    return mask.ia32cap, []


def speed_invocations(version: str, suite: Suite, configure: Sequence[str] = (), *,
                      cpus: int | None = None) -> tuple[list[Invocation], list[str]]:
    """The ``openssl speed`` commands a suite needs on a given OpenSSL version.

    One invocation per process count x mask x engine x path x direction x algorithm (the
    low-level path runs all algorithms in one invocation). Options a version does not
    have are left out and reported in the notes, as are settings that cannot apply
    (``-decrypt`` on the low-level path, a mask the version cannot express, more
    processes than ``cpus``). A ``pkey`` suite spells each algorithm for the version
    (pkey.py) and an ``aead`` suite picks -aead or plain EVP (aead.py), refusing in the
    notes what the version lacks; a ``tls`` suite is planned by tlsbench.py.
    ``configure``: the variant's options; ``cpus``: how many CPUs the bench may use (the
    profile's cpuset, else the engine's), which ``multi: all`` means.
    """
    notes: list[str] = []
    kind = suite.suite_kind
    if kind.runner == RUNNER_S_TIME:
        return tls_invocations(version, suite, tuple(configure))
    if kind.runner == RUNNER_PTS:
        return _pts_invocations(version, suite, tuple(configure), cpus)
    method: str | None = None
    planned = kind.speed_plan(version, suite.algorithms, tuple(configure))
    if planned is not None:  # the kind spells its algorithms (and method) per version
        notes += planned.notes
        suite = replace(suite, algorithms=planned.algorithms)
        if not suite.algorithms:
            return [], notes
        method = planned.method
        if planned.decrypt_note and "decrypt" in suite.directions:
            notes.append(f"decrypt: {planned.decrypt_note}")
    out: list[Invocation] = []
    for multi in _process_counts(version, suite, cpus, notes):
        out += _speed_runs(version, suite, multi, method, notes)
    return out, notes


def _process_counts(version: str, suite: Suite, cpus: int | None,
                    notes: list[str]) -> list[int | None]:
    """The suite's ``-multi`` values on this version (None: one process, no -multi)."""
    if not suite.multi:
        return [None]
    if not has_option("-multi", version):
        notes.append(f"-multi is not in {version} ({_since('-multi')}); one process was run")
        return [None]
    counts: list[int | None] = []
    for n in suite.multi:
        if n == 0:
            if cpus is None:
                notes.append("multi: all: the number of CPUs is not known; not measured")
                continue
            n = cpus
        if cpus is not None and n > cpus:
            notes.append(f"multi {n}: not measured: {n} processes on {cpus} CPU(s) would "
                         "take turns on a CPU (every figure contended)")
            continue
        if n not in counts:
            counts.append(n)
    return counts


def _pts_invocations(version: str, suite: Suite, configure: tuple[str, ...],
                     cpus: int | None) -> tuple[list[Invocation], list[str]]:
    """pts/openssl's command lines (pts.py): ``openssl speed -multi N -seconds S ARGS``
    exactly, without -elapsed (the children time with the wall clock anyway) or -mr (the
    parent's table is what PTS reads)."""
    planned = pts_plan(version, suite.algorithms, configure)
    notes = list(planned.refused)
    seconds: list[str] = []
    if suite.seconds is not None:
        if has_option("-seconds", version):
            seconds = ["-seconds", str(suite.seconds)]
        else:
            notes.append(f"-seconds is not in {version} ({_since('-seconds')}); speed's "
                         f"default times were used, not {PROFILE}'s")
    out: list[Invocation] = []
    for multi in _process_counts(version, suite, cpus, notes):
        for mask in suite.masks:
            ia32cap, mask_notes = mask_value(mask, version)
            notes += [f"mask {mask.name}: {n}" for n in mask_notes
                      if f"mask {mask.name}: {n}" not in notes]
            if ia32cap is None and (mask.disable or mask.ia32cap):
                continue
            for option in planned.options:
                command = ["openssl", "speed"] + (["-multi", str(multi)] if multi else []) \
                    + seconds + list(option.args)
                parts = [mask.name, *([f"multi{multi or 1}"] if len(suite.multi) > 1
                                      else []), option.name]
                out.append(Invocation(
                    name="--".join(parts), mask=mask, algorithm=option.name,
                    command=tuple(command),
                    env={} if ia32cap is None else {"OPENSSL_ia32cap": ia32cap},
                    path=suite.paths[0], ia32cap=ia32cap, multi=multi,
                    algorithms=(option.results[0].figure,)))
    return out, notes


def _speed_runs(version: str, suite: Suite, multi: int | None, method: str | None,
                notes: list[str]) -> list[Invocation]:
    v = series(version)
    # With -multi and -mr the parent prints its sums without a +H of its own; its human
    # table is read instead (the parser takes the sizes from the children's +H records).
    base = ["openssl", "speed", "-elapsed"] + ([] if multi else ["-mr"])
    for opt, value in (("-seconds", suite.seconds), ("-bytes", suite.bytes)):
        if value is None:
            continue
        if has_option(opt, version):
            base += [opt, str(value)]
        else:
            text = (f"{opt} is not in {version} ({_since(opt)}); "
                    + (suite.suite_kind.default_seconds_note if opt == "-seconds"
                       else "every block size was run"))
            if text not in notes:
                notes.append(text)
    if multi is not None:
        base += ["-multi", str(multi)]
    if suite.providers is not None and not has_option("-provider", version):
        text = (f"-provider is not in {version} ({_since('-provider')}); the suite's "
                "providers were not passed")
        if text not in notes:
            notes.append(text)
    out: list[Invocation] = []

    def note_once(text: str) -> None:
        if text not in notes:
            notes.append(text)

    paths = (method,) if method is not None else suite.paths
    for mask in suite.masks:
        ia32cap, mask_notes = mask_value(mask, version)
        for n in mask_notes:
            note_once(f"mask {mask.name}: {n}")
        if ia32cap is None and (mask.disable or mask.ia32cap):
            continue
        env = {} if ia32cap is None else {"OPENSSL_ia32cap": ia32cap}
        for engine in suite.engines:
            if engine is not None and not has_option("-engine", version):
                note_once(f"-engine is not in {version} ({_since('-engine')}); the {engine} "
                          "engine was not measured")
                continue
            for path in paths:
                for direction in suite.directions:
                    if direction == "decrypt" and path == "legacy":
                        note_once("-decrypt applies to EVP ciphers only: the low-level path "
                                  "was measured encrypting")
                        continue
                    out.extend(_invocations_for(v, suite, mask, ia32cap, env, engine, path,
                                                direction, multi, base))
    return out


def _invocations_for(v: tuple[int, int, int], suite: Suite, mask: Mask,
                     ia32cap: str | None, env: dict[str, str], engine: str | None, path: str,
                     direction: str, multi: int | None, base: list[str]) -> list[Invocation]:
    groups: list[tuple[str, list[str], tuple[str, ...]]]
    if path == "evp":
        groups = [(alg, ["-evp", alg], (alg,)) for alg in suite.algorithms]
    elif path == AEAD_METHOD:  # speed -aead (aead.py): TLS-like records
        groups = [(alg, ["-aead", "-evp", alg], (alg,)) for alg in suite.algorithms]
    elif suite.suite_kind.one_run_per_algorithm:  # each spelled for the version
        groups = [(alg.lower(), [alg], (alg,)) for alg in suite.algorithms]
    else:
        groups = [("+".join(suite.algorithms), list(suite.algorithms), suite.algorithms)]
    out = []
    for alg_name, args, algs in groups:
        opts: list[str] = []
        if engine is not None:
            opts += ["-engine", engine]
        if v[0] >= 3:
            if suite.providers is not None:
                for p in suite.providers:
                    opts += ["-provider", p]
            elif any(a.startswith(LEGACY_PROVIDER_ALGS) for a in algs):
                opts += ["-provider", "legacy", "-provider", "default"]
        if direction == "decrypt":
            opts.append("-decrypt")
        parts = [mask.name]
        if engine is not None:
            parts.append(engine)
        if path == "legacy" and suite.evp:
            parts.append("legacy")
        if direction == "decrypt":
            parts.append("decrypt")
        if len(suite.multi) > 1:  # one figure set per process count: named apart
            parts.append(f"multi{multi or 1}")
        parts.append(alg_name)
        out.append(Invocation(
            name="--".join(parts), mask=mask, algorithm=alg_name,
            command=tuple(base + opts + args), env=dict(env), engine=engine, path=path,
            direction=direction, ia32cap=ia32cap, multi=multi, algorithms=algs,
        ))
    return out

