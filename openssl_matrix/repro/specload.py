"""Loading a published-report spec (``reports/<id>.yaml``; the types are
:mod:`openssl_matrix.repro.spec`).

Loading validates everything and reports errors the way the matrix loader does: the
file, the key path and, for unknown keys, a suggestion. The format reference for people
who transcribe reports is ``docs/reports.md``.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.core.files import read_bounded
from openssl_matrix.core.yamlload import MAX_BYTES as MAX_YAML_BYTES
from openssl_matrix.core.yamlload import TOO_LARGE
from openssl_matrix.matrix.check import CheckContext, choices_hint, load_yaml_file
from openssl_matrix.matrix.kinds.base import FIGURES_BLOCKS, FIGURES_THREADS
from openssl_matrix.matrix.libvocab import OPERATIONS as LIB_OPS
from openssl_matrix.matrix.model import ARCHES, MAX_SECONDS, NAME, VERSION
from openssl_matrix.matrix.pkey import ALGORITHMS
from openssl_matrix.matrix.tlsvocab import KEYS, PINNINGS, PROTOCOLS
from openssl_matrix.measure.cpumodel import CORES
from openssl_matrix.parse.algorithms import closest, has_legacy_path, resolve
from openssl_matrix.repro.profileclaim import DOC, profile_problem
from openssl_matrix.repro.sizes import refuse_unshared
from openssl_matrix.repro.spec import (
    DEFAULT_TOLERANCE,
    DEPENDS_ON,
    EXPECTATIONS,
    LIBRARY_OPERATION,
    OP_BLOCK,
    OPERATIONS,
    REQUIREMENTS,
    SOURCE_KINDS,
    SPEC_SCHEMA,
    TLS_OPERATIONS,
    UNKNOWN,
    BuildSpec,
    Claim,
    Machine,
    Measurement,
    MeasureSettings,
    ReportSpec,
    SourceInfo,
    VersionRef,
)
from openssl_matrix.repro.specfields import (
    MAX_OPS_PER_S,
    opt_text,
    parse_block,
    parse_figure,
    plain_text,
    possible_figure,
    ratio_number,
    required,
    sizes_mapping,
    split_figure,
)
from openssl_matrix.repro.threadtrend import (
    BYTES,
    THREADS,
    keyed_reference,
    refuse_untrended,
    thread_counts,
    thread_trend,
)

#: The keys each part of a spec may have.
TOP_KEYS = ("schema", "id", "title", "source", "machines", "versions", "builds",
            "measurements", "claims", "measure", "notes")
SOURCE_KEYS = ("kind", "where", "url", "author", "date", "seed", "notes")
MACHINE_KEYS = ("cpu", "clock_ghz", "flags", "arch", "os", "compiler", "notes", "core",
                "profile")
VERSION_KEYS = ("as_reported", "sha256", "urls", "release", "stand_in", "stand_in_why")
BUILD_KEYS = ("version", "asm", "arch", "configure", "as_reported")
MEASUREMENT_KEYS = ("machine", "build", "command", "algorithm", "algorithms", "block_size",
                    "evp", "disable", "ia32cap", "engine", "decrypt", "elapsed", "needs",
                    "reference", "notes", "operation", "protocol", "pinning", "stand_in",
                    "threads")
CLAIM_KEYS = ("id", "says", "where", "compare", "expect", "ratio", "tolerance", "block_sizes",
              "stand_in", "depends_on", "notes", "trend", "profile")
MEASURE_KEYS = ("seconds", "repeat", "rows")


def load_spec(path: str | Path) -> ReportSpec:
    """Read and validate a report spec; raise ConfigError naming file and key path."""
    p = Path(path)
    try:
        text = read_bounded(p, cap=MAX_YAML_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such report spec",
                          hint="give a path, or the id of a spec in reports/ "
                          "(`invoke matrix reproduce ivy-bridge-aesni-blog`)") from None
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            raise ConfigError(f"{p}: {TOO_LARGE}") from None
        raise ConfigError(f"{p}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: is not UTF-8 text") from None
    return build_spec(load_yaml_file(CheckContext(p), text), p)


def find_spec(name: str, reports_dirs: Sequence[Path]) -> Path:
    """A spec given as a path, or as an id looked up in ``reports_dirs`` (first wins)."""
    direct = Path(name)
    if direct.suffix in (".yaml", ".yml") or "/" in name:
        return direct
    for d in reports_dirs:
        candidate = d / f"{name}.yaml"
        if candidate.is_file():
            return candidate
    known = sorted({q.stem for d in reports_dirs if d.is_dir() for q in d.glob("*.yaml")})
    where = " or ".join(str(d) for d in reports_dirs)
    raise ConfigError(f"no report spec {name!r} in {where}",
                      hint=choices_hint(name, known) if known else
                      f"{where} holds no *.yaml specs; give a path to one")


def build_spec(data: Any, path: Path) -> ReportSpec:
    ctx = CheckContext(path)
    top = ctx.document(data, TOP_KEYS, schema=SPEC_SCHEMA, what="report spec",
                       doc="docs/reports.md")
    spec_id = ctx.string(top.get("id", path.stem), "id", pattern=NAME,
                         what="id (lower-case letters, digits, '-', '.', '_')")
    if "id" in top and spec_id != path.stem:
        raise ctx.fail("id", f"{spec_id!r} differs from the file name {path.name!r}",
                       hint=f"rename the file to {spec_id}.yaml or drop the 'id' key")
    title = ctx.string(required(ctx, top, "title", ""), "title")
    source = _source(ctx, required(ctx, top, "source", ""))
    machines = _machines(ctx, required(ctx, top, "machines", ""))
    versions = _versions(ctx, required(ctx, top, "versions", ""))
    builds = _builds(ctx, required(ctx, top, "builds", ""), versions)
    measurements = _measurements(ctx, required(ctx, top, "measurements", ""), machines,
                                 builds)
    claims = _claims(ctx, required(ctx, top, "claims", ""), measurements)
    measure = _measure(ctx, top.get("measure"), measurements)
    return ReportSpec(path=path, id=spec_id, title=title, source=source, machines=machines,
                      versions=versions, builds=builds, measurements=measurements,
                      claims=claims, measure=measure,
                      notes=plain_text(ctx, top.get("notes"), "notes"), raw=top)


def _source(ctx: CheckContext, value: Any) -> SourceInfo:
    s = ctx.mapping(value, "source")
    ctx.keys(s, SOURCE_KEYS, "source")
    kind = ctx.string(required(ctx, s, "kind", "source"), "source.kind")
    if kind not in SOURCE_KINDS:
        raise ctx.fail("source.kind", f"{kind!r} is not one of {', '.join(SOURCE_KINDS)}",
                       hint=choices_hint(kind, SOURCE_KINDS))
    url = opt_text(ctx, s.get("url"), "source.url")
    if url is not None and not re.match(r"^(https?|ftp|news|mailto):\S+\Z", url):
        raise ctx.fail("source.url", f"{url!r} is not a URL")
    date = opt_text(ctx, s.get("date"), "source.date")
    if date is not None and not re.match(r"^\d{4}(-\d{2}(-\d{2})?)?\Z", date):
        raise ctx.fail("source.date", f"{date!r} is not a date such as 2013-08-27, 2013-08 "
                       "or 2013")
    return SourceInfo(kind=kind, where=ctx.string(required(ctx, s, "where", "source"),
                                                   "source.where"),
                      url=url, author=opt_text(ctx, s.get("author"), "source.author"),
                      date=date, seed=opt_text(ctx, s.get("seed"), "source.seed"),
                      notes=plain_text(ctx, s.get("notes"), "source.notes"))


def _named(ctx: CheckContext, value: Any, keypath: str) -> dict[str, Any]:
    entries = ctx.mapping(value, keypath)
    if not entries:
        raise ctx.fail(keypath, "declare at least one entry")
    for name in entries:
        if not NAME.match(name):
            raise ctx.fail(f"{keypath}.{name}", f"{name!r}: names are lower-case letters, "
                           "digits, '-', '.', '_'")
    return entries


def _machines(ctx: CheckContext, value: Any) -> dict[str, Machine]:
    out: dict[str, Machine] = {}
    for name, body in _named(ctx, value, "machines").items():
        kp = f"machines.{name}"
        m = ctx.mapping(body, kp)
        ctx.keys(m, MACHINE_KEYS, kp)
        arch = ctx.string(m.get("arch", "x86_64"), f"{kp}.arch")
        if arch not in ARCHES:
            raise ctx.fail(f"{kp}.arch", f"{arch!r} is not one of {', '.join(ARCHES)}",
                           hint=choices_hint(arch, ARCHES))
        out[name] = Machine(
            name=name, cpu=ctx.string(required(ctx, m, "cpu", kp), f"{kp}.cpu"),
            clock_ghz=ctx.number(m.get("clock_ghz"), f"{kp}.clock_ghz"),
            flags=ctx.tokens(m.get("flags"), f"{kp}.flags"), arch=arch,
            os=opt_text(ctx, m.get("os"), f"{kp}.os"),
            compiler=opt_text(ctx, m.get("compiler"), f"{kp}.compiler"),
            notes=plain_text(ctx, m.get("notes"), f"{kp}.notes"),
            core=_core(ctx, m.get("core"), f"{kp}.core"),
            profile=None if m.get("profile") is None else
            ctx.string(m["profile"], f"{kp}.profile", pattern=NAME, what="CPU profile name"))
    return out


def _core(ctx: CheckContext, value: Any, keypath: str) -> str | None:
    if value is None:
        return None
    core = ctx.string(value, keypath)
    if core not in CORES:
        raise ctx.fail(keypath, f"{core!r} is not a core the CPU model knows "
                       f"({', '.join(CORES)})", hint=choices_hint(core, list(CORES)))
    return core


def _algorithm(ctx: CheckContext, value: Any, keypath: str) -> str:
    """An algorithm in any spelling speed has printed or taken; its canonical id."""
    name = ctx.string(value, keypath).strip()
    found = resolve(name)
    if found is not None:
        return found
    if _PUBLIC_KEY.match(name.lower()):
        return name.lower()
    near = closest(name)
    raise ctx.fail(keypath, f"{name!r} is not an algorithm `openssl speed` knows",
                   hint=("the closest known names: " + ", ".join(near)) if near else
                   "write it as speed prints it (`aes-128 cbc`, `blowfish cbc`) or as its "
                   "EVP name (`aes-128-cbc`)")


#: Public-key algorithm names (speed's rsa2048, ecdsap256, ed25519 ...): passed through.
_PUBLIC_KEY = re.compile(r"^(rsa|dsa|ecdsa|ecdh|ffdhe|eddsa)[a-z0-9]*$|^(ed|x)(25519|448)$|"
                         r"^sm2$")


def _versions(ctx: CheckContext, value: Any) -> dict[str, VersionRef]:
    entries = ctx.mapping(value, "versions")
    if not entries:
        raise ctx.fail("versions", "declare at least one version")
    out: dict[str, VersionRef] = {}
    for name, body in entries.items():
        kp = f"versions.{name}"
        if not VERSION.match(name):
            raise ctx.fail(kp, f"{name!r} is not an OpenSSL version such as 1.0.1e or 3.0.2",
                           hint="a development snapshot is written like 1.1.0-dev with "
                           "'release: false'")
        v = ctx.mapping(body, kp)
        ctx.keys(v, VERSION_KEYS, kp)
        sha, urls = ctx.source_pin(v, kp)
        stand_in = v.get("stand_in")
        if stand_in is not None:
            stand_in = ctx.string(stand_in, f"{kp}.stand_in", pattern=VERSION,
                                  what="OpenSSL version")
            if stand_in == name:
                raise ctx.fail(f"{kp}.stand_in", "a version cannot stand in for itself")
        why = opt_text(ctx, v.get("stand_in_why"), f"{kp}.stand_in_why")
        if stand_in is not None and not why:
            raise ctx.fail(f"{kp}.stand_in_why", f"say why {stand_in} may stand in for {name}",
                           hint="a stand-in is only honest when the reason is written down")
        release = ctx.boolean(v.get("release", True), f"{kp}.release")
        out[name] = VersionRef(name=name, as_reported=opt_text(ctx, v.get("as_reported"),
                                                                f"{kp}.as_reported"),
                               sha256=sha, urls=urls, release=release, stand_in=stand_in,
                               stand_in_why=why)
    return out


def _builds(ctx: CheckContext, value: Any, versions: Mapping[str, VersionRef],
            ) -> dict[str, BuildSpec]:
    out: dict[str, BuildSpec] = {}
    for name, body in _named(ctx, value, "builds").items():
        kp = f"builds.{name}"
        b = ctx.mapping(body, kp)
        ctx.keys(b, BUILD_KEYS, kp)
        version = ctx.string(required(ctx, b, "version", kp), f"{kp}.version")
        if version not in versions:
            raise ctx.fail(f"{kp}.version", f"{version!r} is not declared under 'versions'",
                           hint=choices_hint(version, list(versions)))
        arch = ctx.string(b.get("arch", "x86_64"), f"{kp}.arch")
        if arch not in ARCHES:
            raise ctx.fail(f"{kp}.arch", f"{arch!r} is not one of {', '.join(ARCHES)}",
                           hint=choices_hint(arch, ARCHES))
        configure = ctx.tokens(b.get("configure"), f"{kp}.configure")
        if "no-asm" in configure:
            raise ctx.fail(f"{kp}.configure", "write 'asm: false' instead of no-asm here")
        out[name] = BuildSpec(name=name, version=version,
                              asm=ctx.boolean(b.get("asm", True), f"{kp}.asm"), arch=arch,
                              configure=configure,
                              as_reported=opt_text(ctx, b.get("as_reported"),
                                                   f"{kp}.as_reported"))
    return out


def _measurements(ctx: CheckContext, value: Any, machines: Mapping[str, Machine],
                  builds: Mapping[str, BuildSpec]) -> dict[str, Measurement]:
    out: dict[str, Measurement] = {}
    for name, body in _named(ctx, value, "measurements").items():
        kp = f"measurements.{name}"
        m = ctx.mapping(body, kp)
        ctx.keys(m, MEASUREMENT_KEYS, kp)
        proto = _measurement_proto(ctx, m, name, kp, machines, builds)
        if "algorithms" in m:
            _table_row(ctx, m, proto, kp, out)
            continue
        if "operation" in m and m["operation"] in TLS_OPERATIONS:
            out[name] = _tls_measurement(ctx, m, proto, kp)
            continue
        if m.get("operation") == LIBRARY_OPERATION:
            out[name] = _library_measurement(ctx, m, proto, kp)
            continue
        if "threads" in m:
            raise ctx.fail(f"{kp}.threads", "only used with 'operation: library' (a figure "
                           "of the library harness)")
        for key in ("protocol", "pinning"):
            if key in m:
                raise ctx.fail(f"{kp}.{key}", "only used with 'operation: handshake' or "
                               "'operation: resume' (a TLS figure)")
        if "operation" in m:
            out[name] = _pk_measurement(ctx, m, proto, kp)
            continue
        speed = _speed_measurement(ctx, m, proto, kp)
        if name in out:
            raise ctx.fail(kp, f"{name!r} is declared twice (once by a table row)")
        out[name] = speed
    return out


def _measurement_proto(ctx: CheckContext, m: Mapping[str, Any], name: str, kp: str,
                       machines: Mapping[str, Machine],
                       builds: Mapping[str, BuildSpec]) -> Measurement:
    """What every kind of measurement has: machine, build, mask, engine, needs and the
    settings ``openssl speed`` is run with (no algorithm, no reference figures yet)."""
    if "machine" in m:
        machine = ctx.string(m["machine"], f"{kp}.machine")
    elif len(machines) == 1:
        machine = next(iter(machines))
    else:
        raise ctx.fail(f"{kp}.machine", "is required when the spec has several machines",
                       hint="one of: " + ", ".join(machines))
    if machine not in machines:
        raise ctx.fail(f"{kp}.machine", f"{machine!r} is not declared under 'machines'",
                       hint=choices_hint(machine, list(machines)))
    build = ctx.string(required(ctx, m, "build", kp), f"{kp}.build")
    if build not in builds:
        raise ctx.fail(f"{kp}.build", f"{build!r} is not declared under 'builds'",
                       hint=choices_hint(build, list(builds)))
    cap, disable = ctx.mask_spec(m, kp)
    engine = m.get("engine")
    if engine is not None:
        engine = ctx.token(engine, f"{kp}.engine")
    needs = ctx.tokens(m.get("needs"), f"{kp}.needs")
    for i, need in enumerate(needs):
        if need not in REQUIREMENTS:
            raise ctx.fail(f"{kp}.needs[{i}]", f"{need!r} is not a known requirement "
                           f"({', '.join(REQUIREMENTS)})",
                           hint=choices_hint(need, REQUIREMENTS))
    elapsed = m.get("elapsed")
    evp = m.get("evp", True)
    return Measurement(
        name=name, machine=machine, build=build,
        command=opt_text(ctx, m.get("command"), f"{kp}.command"), algorithm="",
        evp=evp == UNKNOWN or _known(ctx, evp, f"{kp}.evp"), ia32cap=cap,
        engine=engine, decrypt=ctx.boolean(m.get("decrypt", False), f"{kp}.decrypt"),
        elapsed=None if elapsed in (None, UNKNOWN) else
        _known(ctx, elapsed, f"{kp}.elapsed"),
        needs=needs, reference={}, notes=plain_text(ctx, m.get("notes"), f"{kp}.notes"),
        disable=disable, stand_in=ctx.boolean(m.get("stand_in", True), f"{kp}.stand_in"),
        unknown=("evp",) if evp == UNKNOWN else ())


def _table_row(ctx: CheckContext, m: Mapping[str, Any], proto: Measurement, kp: str,
               out: dict[str, Measurement]) -> None:
    """A table row (``algorithms:``): one measurement per algorithm, named
    ``ROW.ALGORITHM``, each with its figure at the row's block size, added to ``out``."""
    name = proto.name
    for key in ("algorithm", "reference"):
        if key in m:
            raise ctx.fail(f"{kp}.{key}", "a table row ('algorithms:') gives its "
                           "figures per algorithm; drop this key",
                           hint="use either algorithm + reference, or algorithms + "
                           "block_size")
    block = parse_block(ctx, m.get("block_size", 8192), f"{kp}.block_size")
    algs = m["algorithms"]
    row: dict[str, Any]
    if isinstance(algs, list):
        row = dict.fromkeys((ctx.string(a, f"{kp}.algorithms[{i}]")
                             for i, a in enumerate(algs)))
    else:
        if isinstance(algs, dict) and any(split_figure(a) for a in algs):
            raise ctx.fail(f"{kp}.algorithms", "an algorithm name looks like part of "
                           "a figure: a figure with thousands separators was split "
                           "at a comma in a {flow: mapping}",
                           hint="quote such figures: {aes-256-cbc: '1,086,559.57k'}")
        row = ctx.mapping(algs, f"{kp}.algorithms")
    if not row:
        raise ctx.fail(f"{kp}.algorithms", "list at least one algorithm")
    for alg, fig in row.items():
        alg = _algorithm(ctx, alg, f"{kp}.algorithms.{alg}")
        ref = {} if fig is None else \
            {block: parse_figure(ctx, fig, f"{kp}.algorithms.{alg}")}
        full = f"{name}.{alg}"
        if full in out:
            raise ctx.fail(f"{kp}.algorithms.{alg}", f"{full!r} is declared twice")
        out[full] = _method_known(replace(proto, name=full, algorithm=alg,
                                          reference=ref, table=name))


def _speed_measurement(ctx: CheckContext, m: Mapping[str, Any], proto: Measurement,
                       kp: str) -> Measurement:
    """A speed measurement: one algorithm and its figures per block size."""
    if "block_size" in m:
        raise ctx.fail(f"{kp}.block_size", "only used with 'algorithms:' (a table row); "
                       "'reference' gives figures per block size")
    algorithm = _algorithm(ctx, required(ctx, m, "algorithm", kp), f"{kp}.algorithm")
    ref_raw = sizes_mapping(ctx, m.get("reference"), f"{kp}.reference")
    reference: dict[int, float] = {}
    for key, fig in ref_raw.items():
        size = parse_block(ctx, key, f"{kp}.reference")
        reference[size] = parse_figure(ctx, fig, f"{kp}.reference.{key}")
    return _method_known(replace(proto, algorithm=algorithm, reference=reference))


def _known(ctx: CheckContext, value: Any, keypath: str) -> bool:
    """A setting the report states (true or false), or ``unknown`` (handled by the caller)."""
    if not isinstance(value, bool):
        then = "the reproduction then measures both ways" if keypath.endswith(".evp") else \
            "runs here always use -elapsed"
        raise ctx.fail(keypath, f"expected true, false or {UNKNOWN}, got {value!r}",
                       hint=f"write {UNKNOWN} when the report does not say; {then} "
                       "(docs/reports.md#unknown-settings)")
    return value


def _method_known(m: Measurement) -> Measurement:
    """``evp: unknown`` for an algorithm speed reaches only through ``-evp`` (GCM,
    ChaCha20, SHA-3 ...) is known after all: the report can only have run it that way."""
    if "evp" in m.unknown and not has_legacy_path(m.algorithm):
        return replace(m, evp=True, unknown=tuple(u for u in m.unknown if u != "evp"))
    return m


def _pk_measurement(ctx: CheckContext, m: Mapping[str, Any], proto: Measurement,
                    kp: str) -> Measurement:
    """A public-key measurement: a pkey suite algorithm, one operation, one figure."""
    for key in ("algorithms", "block_size", "evp", "disable", "ia32cap", "engine", "decrypt"):
        if key in m:
            raise ctx.fail(f"{kp}.{key}", "not used with 'operation' (a public-key figure)")
    operation = ctx.string(m["operation"], f"{kp}.operation")
    if operation not in OPERATIONS:
        every = OPERATIONS + TLS_OPERATIONS
        raise ctx.fail(f"{kp}.operation", f"{operation!r} is not one of " + ", ".join(every),
                       hint=choices_hint(operation, every))
    algorithm = ctx.token(required(ctx, m, "algorithm", kp), f"{kp}.algorithm")
    if algorithm not in ALGORITHMS:
        raise ctx.fail(f"{kp}.algorithm", f"{algorithm!r} is not a public-key test",
                       hint=choices_hint(algorithm, list(ALGORITHMS)))
    if operation not in ALGORITHMS[algorithm].operations:
        raise ctx.fail(f"{kp}.operation", f"{algorithm} has no {operation!r} figure (it has "
                       + ", ".join(ALGORITHMS[algorithm].operations) + ")")
    reference = _one_figure(ctx, m, kp, "a public-key figure is one number, operations per "
                            "second as printed (e.g. 1936.3)")
    return replace(proto, algorithm=algorithm, reference=reference, operation=operation,
                   evp=False)


def _one_figure(ctx: CheckContext, m: Mapping[str, Any], kp: str, what: str) -> dict[int, float]:
    """The one ``reference`` figure of a pkey or tls measurement, under ``OP_BLOCK``."""
    ref = m.get("reference")
    if ref is None:
        return {}
    return {OP_BLOCK: _ops_figure(ctx, ref, f"{kp}.reference", what)}


def _ops_figure(ctx: CheckContext, ref: Any, keypath: str, what: str) -> float:
    """One figure in operations (or connections) per second, as the spec writes it."""
    if isinstance(ref, bool) or not isinstance(ref, (int, float)) or not ref > 0:
        raise ctx.fail(keypath, f"{what}, got {ref!r}")
    return possible_figure(ctx, float(ref), keypath, ref, MAX_OPS_PER_S, "operations/s")


def _tls_measurement(ctx: CheckContext, m: Mapping[str, Any], proto: Measurement,
                     kp: str) -> Measurement:
    """A TLS measurement: server key, protocol, handshake or resume, one figure."""
    for key in ("algorithms", "block_size", "evp", "disable", "ia32cap", "engine", "decrypt"):
        if key in m:
            raise ctx.fail(f"{kp}.{key}", "not used with a TLS figure (operation "
                           f"{m['operation']})")
    algorithm = ctx.token(required(ctx, m, "algorithm", kp), f"{kp}.algorithm")
    if algorithm not in KEYS:
        raise ctx.fail(f"{kp}.algorithm", f"{algorithm!r} is not a server key of the TLS "
                       f"suite ({', '.join(KEYS)})", hint=choices_hint(algorithm, KEYS))
    protocol = ctx.token(required(ctx, m, "protocol", kp), f"{kp}.protocol")
    if protocol not in PROTOCOLS:
        raise ctx.fail(f"{kp}.protocol", f"{protocol!r} is not one of "
                       + ", ".join(PROTOCOLS), hint=choices_hint(protocol, list(PROTOCOLS)))
    pinning = ctx.token(m.get("pinning", "cross-core"), f"{kp}.pinning")
    if pinning not in PINNINGS:
        raise ctx.fail(f"{kp}.pinning", f"{pinning!r} is not one of " + ", ".join(PINNINGS),
                       hint=choices_hint(pinning, PINNINGS))
    reference = _one_figure(ctx, m, kp, "a TLS figure is one number, connections per "
                            "second (e.g. 22600)")
    return replace(proto, algorithm=algorithm, reference=reference,
                   operation=str(m["operation"]), evp=False, protocol=protocol,
                   pinning=pinning)


def _library_measurement(ctx: CheckContext, m: Mapping[str, Any], proto: Measurement,
                         kp: str) -> Measurement:
    """A figure of the library harness: its operation, a thread count, one figure."""
    for key in ("algorithms", "block_size", "evp", "disable", "ia32cap", "engine", "decrypt",
                "protocol", "pinning"):
        if key in m:
            raise ctx.fail(f"{kp}.{key}", "not used with a library figure (operation library)")
    algorithm = ctx.token(required(ctx, m, "algorithm", kp), f"{kp}.algorithm")
    timed = [o for o in LIB_OPS if o != "memory"]
    if algorithm not in timed:
        raise ctx.fail(f"{kp}.algorithm", f"{algorithm!r} is not a timed operation of the "
                       "library harness", hint=choices_hint(algorithm, timed))
    counts = thread_counts(ctx, m.get("threads", 1), f"{kp}.threads")
    what = "a library figure is one number, operations per second"
    if len(counts) > 1:  # a figure per thread count, keyed like a speed row's block sizes
        reference = keyed_reference(ctx, m.get("reference"), f"{kp}.reference", counts,
                                    lambda fig, key: _ops_figure(ctx, fig, key, what))
    elif isinstance(m.get("reference"), dict):
        raise ctx.fail(f"{kp}.reference", f"a figure per thread count needs several counts in "
                       f"threads (it names {counts[0]})", hint="write threads: [1, 4] with "
                       "reference: {1: FIGURE, 4: FIGURE}, or one figure for one count")
    else:
        reference = _one_figure(ctx, m, kp, what)
    return replace(proto, algorithm=algorithm, reference=reference,
                   operation=LIBRARY_OPERATION, evp=False, threads=counts[-1],
                   thread_counts=counts if len(counts) > 1 else ())


def _claims(ctx: CheckContext, value: Any, measurements: Mapping[str, Measurement]
            ) -> tuple[Claim, ...]:
    if not isinstance(value, list) or not value:
        raise ctx.fail("claims", "expected a non-empty list of claims")
    out: list[Claim] = []
    seen: set[str] = set()
    for i, body in enumerate(value):
        kp = f"claims[{i}]"
        c = ctx.mapping(body, kp)
        ctx.keys(c, CLAIM_KEYS, kp)
        cid = ctx.string(required(ctx, c, "id", kp), f"{kp}.id", pattern=NAME,
                         what="claim id (lower-case letters, digits, '-', '.', '_')")
        kp = f"claims[{i}] ({cid})"
        if cid in seen:
            raise ctx.fail(f"{kp}.id", f"claim id {cid!r} is used twice")
        seen.add(cid)
        out.append(_claim(ctx, c, kp, cid, measurements))
    return tuple(out)


def _claim(ctx: CheckContext, c: Mapping[str, Any], kp: str, cid: str,
           measurements: Mapping[str, Measurement]) -> Claim:
    """One claim (its id checked): what it compares, what it expects, where it is judged."""
    names = _compared(ctx, c, kp, measurements)
    expect, ratio, tolerance = _expectation(ctx, c, kp)
    blocks_raw = c.get("block_sizes", [8192])
    blocks: tuple[int, ...] | None
    if blocks_raw == "all":
        blocks = None
    elif isinstance(blocks_raw, list) and blocks_raw:
        blocks = tuple(parse_block(ctx, b, f"{kp}.block_sizes") for b in blocks_raw)
    else:
        raise ctx.fail(f"{kp}.block_sizes", "expected a list of block sizes, or 'all'")
    num, den = (measurements[n] for n in names)
    depends_on = _depends_on(ctx, c.get("depends_on"), f"{kp}.depends_on",
                             two_machines=num.machine != den.machine)
    if num.operation is not None:  # one figure per operation (pkey, tls)
        blocks = (OP_BLOCK,)
    if blocks is None and not (set(num.reference) & set(den.reference)):
        raise ctx.fail(f"{kp}.block_sizes", "'all' needs reference figures on both sides",
                       hint="list the block sizes instead, e.g. [8192]")
    trend = _trend(ctx, c, f"{kp}", num, den, depends_on)
    trend_of = THREADS if isinstance(c.get("trend"), dict) else BYTES
    if trend_of != THREADS:
        refuse_untrended(ctx, kp, (names[0], names[1]), (num, den))
    if trend is not None:
        blocks = trend
    if blocks is not None:  # a side with figures has them where the claim is judged
        refuse_unshared(ctx, kp, cid, (names[0], names[1]), (num, den), blocks,
                        trend=trend is not None, threads=trend_of == THREADS)
    if expect == "ratio" and ratio is None:
        sizes = blocks or tuple(sorted(set(num.reference) & set(den.reference)))
        if any(b not in num.reference or b not in den.reference for b in sizes):
            raise ctx.fail(f"{kp}.ratio", "give the ratio the report claims, or reference "
                           "figures for both measurements at every block size judged")
    profile = ctx.boolean(c.get("profile", False), f"{kp}.profile")
    why = profile_problem(num, den, blocks, trend is not None) if profile else None
    if why:
        raise ctx.fail(f"{kp}.profile", f"this claim's sides cannot be profiled: {why}",
                       hint=f"leave profile out, or profile the cells by hand with "
                       f"`invoke matrix profile --compare A,B` ({DOC})")
    return Claim(
        id=cid, says=ctx.string(required(ctx, c, "says", kp), f"{kp}.says").strip(),
        where=opt_text(ctx, c.get("where"), f"{kp}.where"), numerator=names[0],
        denominator=names[1], expect=expect, ratio=ratio, tolerance=tolerance,
        block_sizes=blocks, stand_in=ctx.boolean(c.get("stand_in", True),
                                                 f"{kp}.stand_in"),
        notes=plain_text(ctx, c.get("notes"), f"{kp}.notes"),
        depends_on=depends_on, trend=trend, trend_of=trend_of, profile=profile)


def _compared(ctx: CheckContext, c: Mapping[str, Any], kp: str,
              measurements: Mapping[str, Measurement]) -> list[str]:
    """A claim's ``compare``: two different declared measurements, numerator first."""
    compare = c.get("compare")
    if not isinstance(compare, list) or len(compare) != 2:
        raise ctx.fail(f"{kp}.compare", "expected [numerator, denominator]: two "
                       "measurement names")
    names = [ctx.string(x, f"{kp}.compare[{j}]") for j, x in enumerate(compare)]
    for j, n in enumerate(names):
        if n not in measurements:
            raise ctx.fail(f"{kp}.compare[{j}]", f"{n!r} is not declared under "
                           "'measurements'", hint=choices_hint(n, list(measurements)))
    if names[0] == names[1]:
        raise ctx.fail(f"{kp}.compare", "compares a measurement with itself")
    return names


def _expectation(ctx: CheckContext, c: Mapping[str, Any], kp: str
                 ) -> tuple[str, float | None, float]:
    """A claim's ``expect``, its ``ratio`` (only for ``expect: ratio``) and its
    ``tolerance`` (the expectation's default if none is given)."""
    expect = ctx.string(required(ctx, c, "expect", kp), f"{kp}.expect")
    if expect not in EXPECTATIONS:
        raise ctx.fail(f"{kp}.expect", f"{expect!r} is not one of "
                       f"{', '.join(EXPECTATIONS)}", hint=choices_hint(expect, EXPECTATIONS))
    ratio = ratio_number(ctx, c.get("ratio"), f"{kp}.ratio")
    if ratio is not None and expect != "ratio":
        raise ctx.fail(f"{kp}.ratio", f"only used with 'expect: ratio' (this claim "
                       f"expects {expect!r})")
    tol_raw = c.get("tolerance")
    tolerance = DEFAULT_TOLERANCE[expect] if tol_raw is None else \
        ratio_number(ctx, tol_raw, f"{kp}.tolerance")
    assert tolerance is not None
    if tolerance >= 1 and expect in ("same", "ratio"):
        raise ctx.fail(f"{kp}.tolerance", f"{tolerance} is a relative tolerance and must "
                       "be below 1 here (0.25 means ±25 %)")
    return expect, ratio, tolerance


def _trend(ctx: CheckContext, c: Mapping[str, Any], kp: str, num: Measurement,
           den: Measurement, depends_on: str) -> tuple[int, int] | None:
    """``trend: [FROM, TO]``: a claim on the ratio at TO over the ratio at FROM (the two
    measurements' ratio changes with the block size); ``trend: {threads: [FROM, TO]}``:
    the same across thread counts of library figures (``repro.threadtrend``); or None."""
    value = c.get("trend")
    if value is None:
        return None
    points = "sizes"
    if isinstance(value, dict):
        first, last = thread_trend(ctx, value, kp, (num.name, den.name), (num, den))
        points = "thread counts"
    elif FIGURES_THREADS in (num.suite_kind.figures, den.suite_kind.figures):
        raise ctx.fail(f"{kp}.trend", "a library figure has no block sizes: a trend across "
                       "its thread counts is written trend: {threads: [FROM, TO]}",
                       hint="e.g. trend: {threads: [1, 4]}, with threads: [1, 4] in both "
                       "measurements (docs/reports.md#trend-claims)")
    elif not isinstance(value, list) or len(value) != 2:
        raise ctx.fail(f"{kp}.trend", "expected [from, to]: two block sizes, e.g. [16, 16384]",
                       hint="the claim is then on the ratio at 'to' divided by the ratio at "
                       "'from' (docs/reports.md#trend-claims)")
    else:
        first, last = (parse_block(ctx, b, f"{kp}.trend") for b in value)
        if first == last:
            raise ctx.fail(f"{kp}.trend", f"compares the ratio at {first} bytes with itself",
                           hint="give two different block sizes, e.g. [16, 16384]")
    if "block_sizes" in c:
        raise ctx.fail(f"{kp}.block_sizes", f"a trend claim is judged at its two 'trend' "
                       f"{points}: drop block_sizes")
    if points == "sizes" and any(m.suite_kind.figures != FIGURES_BLOCKS for m in (num, den)):
        raise ctx.fail(f"{kp}.trend", "a trend over block sizes needs two speed measurements "
                       "(a public-key, TLS or library figure has no block sizes)")
    if depends_on == "cpu" or num.machine != den.machine:
        raise ctx.fail(f"{kp}.trend", "a trend claim is judged as measured on one machine: "
                       "the CPU model does not size trends, and two machines' figures are "
                       "never paired", hint="leave depends_on out (code-path) and compare "
                       "two measurements of one machine")
    return first, last


def _depends_on(ctx: CheckContext, value: Any, keypath: str, *, two_machines: bool = False) -> str:
    """``code-path`` unless said otherwise; a claim between two machines compares two CPUs,
    so it depends on them: ``cpu`` (left out, or written), never ``code-path``."""
    if value is None:
        return "cpu" if two_machines else "code-path"
    text = ctx.string(value, keypath)
    if text not in DEPENDS_ON:
        raise ctx.fail(keypath, f"{text!r} is not one of {', '.join(DEPENDS_ON)}",
                       hint=choices_hint(text, DEPENDS_ON))
    if two_machines and text != "cpu":
        raise ctx.fail(keypath, "this claim compares figures of two machines, so its size "
                       "depends on their CPUs: depends_on is cpu",
                       hint="leave depends_on out (cpu is the default for such a claim), or "
                       "write depends_on: cpu; docs/reports.md#claims-between-two-machines")
    return text


def _measure(ctx: CheckContext, value: Any, measurements: Mapping[str, Measurement]
             ) -> MeasureSettings:
    m = ctx.mapping(value, "measure")
    ctx.keys(m, MEASURE_KEYS, "measure")
    rows = ctx.strings(m.get("rows"), "measure.rows")
    names = set(measurements) | {x.table for x in measurements.values() if x.table}
    for i, row in enumerate(rows):
        if row not in names:
            raise ctx.fail(f"measure.rows[{i}]", f"{row!r} is neither a measurement nor a "
                           "table row", hint=choices_hint(row, sorted(names)))
    seconds = ctx.posint(m.get("seconds", 1), "measure.seconds", maximum=MAX_SECONDS)
    repeat = ctx.posint(m.get("repeat", 3), "measure.repeat")
    assert seconds is not None and repeat is not None
    if repeat > 50:
        raise ctx.fail("measure.repeat", f"{repeat} repetitions is more than this tool runs "
                       "(at most 50)")
    return MeasureSettings(seconds=seconds, repeat=repeat, rows=rows)
