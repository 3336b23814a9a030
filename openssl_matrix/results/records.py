"""The records of the results tree: the one owner of its file names and their shapes.

A results tree holds four kinds of JSON record, each written by exactly one function
here and read back by exactly one validating reader:

=================================================  =================  ========================
file                                               record             written by
=================================================  =================  ========================
``<cpu>/<variant>/<suite>/<run>/meta.json``        :class:`RunMeta`   :func:`write_meta`
``<cpu>/<variant>/<suite>/<run>/figures.json``     :class:`FigureRecord` :func:`write_figures`
``<cpu>/<version>/import/runs-<first>-<last>.jsonl``  both, per run (an import's: compact.py)
``<cpu>/<variant>/<suite>/series-<id>.json``       :class:`Series`    :func:`write_series`
``_builds/<variant>/<digest>/build.json``          :class:`BuildRecord` :func:`write_build`
``_builds/<variant>/latest.json``                  :class:`Latest`    :func:`write_latest`
``_builds/<variant>/<digest>/shipped-<engine>.json``  :class:`ShipRecord` :func:`write_ship`
=================================================  =================  ========================

Each record carries a ``schema`` version (:data:`SCHEMA`). Files written before records
were versioned have none and read as schema 0: their keys are the same. A file of a newer
schema than this code knows is refused with a hint to upgrade.

The JSON keys on disk are the record's field names; keys a record does not name are kept
in ``extra`` and written back unchanged. **Adding a field**: add it to the dataclass (with
a default), name its JSON type in ``_TYPES`` (the reader checks it), write it; that is all.

A damaged file (not UTF-8 or JSON, the wrong shape, a missing key, a number not finite)
is never a traceback nor a dropped run: a ResultsError (exit 9) names it and what to do.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

from openssl_matrix.core import jsonread
from openssl_matrix.core.errors import ResultsError
from openssl_matrix.core.files import read_bounded, write_json
from openssl_matrix.core.names import fold, inside, safe_name
from openssl_matrix.results import compact

#: The schema version this code writes. Bump it when a field changes meaning (not when
#: one is added: readers keep unknown keys and new fields have defaults).
SCHEMA = 1

META = "meta.json"
FIGURES = "figures.json"
BUILD = "build.json"
LATEST = "latest.json"
SERIES_PREFIX = "series-"
SHIP_PREFIX = "shipped-"
#: The folder of ship records of base and toolchain images (under ``_builds``).
IMAGES = "_images"
#: The folder of build records, beside the CPU folders (profile names cannot start with _).
BUILDS = "_builds"
#: Folders of a results tree that are not CPU folders.
JOURNALS = "_journal"
#: The folder of reproductions of published reports (``<id>/<NNNN>/``, repro/run.py).
REPRO_DIR = "_reproduce"
#: The folder of sampled profiles (``<variant>/<cell>/<NNNN>/``, measure/profilestore.py).
PROFILES_DIR = "_profiles"
#: Release and commit bisections: ``_bisect/<cell>--<good>--<bad>/<NNNN>/`` (sweep writes
#: them, the report reads them back through results/bisections.py).
BISECT_DIR = "_bisect"

#: meta.json statuses of a run that finished (its figures count). Every other status
#: (running, interrupted, failed) means the run's figures are never exported or reported.
FINISHED = ("complete", "partial")

# -- JSON types the readers check ------------------------------------------------------

STR = "a string"
OPT_STR = "a string or null"
INT = "an integer"
OPT_INT = "an integer or null"
NUM = "a finite number or null"
BOOL = "true or false"
OPT_BOOL = "true, false or null"
OBJ = "an object"
OPT_OBJ = "an object or null"
LIST = "a list"
STR_LIST = "a list of strings"
NUM_LIST = "a list of finite numbers, or null"
ANY = "any JSON value"


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


_CHECKS: dict[str, Callable[[Any], bool]] = {
    STR: lambda v: isinstance(v, str),
    OPT_STR: lambda v: v is None or isinstance(v, str),
    INT: lambda v: isinstance(v, int) and not isinstance(v, bool),
    OPT_INT: lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),
    NUM: lambda v: v is None or _finite(v),
    BOOL: lambda v: isinstance(v, bool),
    OPT_BOOL: lambda v: v is None or isinstance(v, bool),
    OBJ: lambda v: isinstance(v, dict),
    OPT_OBJ: lambda v: v is None or isinstance(v, dict),
    LIST: lambda v: isinstance(v, list),
    STR_LIST: lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    NUM_LIST: lambda v: v is None or (isinstance(v, list) and all(_finite(x) for x in v)),
    ANY: lambda v: True,
}


class RecordError(ValueError):
    """What is wrong with one record (turned into a ResultsError naming the file)."""


R = TypeVar("R", bound="_Record")


@dataclass(frozen=True)
class _Record:
    """A JSON object with typed, checked fields; unknown keys kept in ``extra``."""

    _TYPES: ClassVar[Mapping[str, str]] = MappingProxyType({})
    _REQUIRED: ClassVar[tuple[str, ...]] = ()

    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    """Keys this code does not name, kept as read and written back unchanged."""
    schema: int = SCHEMA
    """The record schema the file was written with (0: before records were versioned)."""

    @classmethod
    def from_json(cls: type[R], data: Any, where: str = "") -> R:
        """The record in ``data`` (a parsed JSON object); RecordError if it is not one."""
        at = f"{where}: " if where else ""
        if not isinstance(data, dict):
            raise RecordError(f"{at}expected a JSON object, found {type(data).__name__}")
        schema = data.get("schema", 0)
        if not isinstance(schema, int) or isinstance(schema, bool) or schema < 0:
            raise RecordError(f"{at}'schema' is {schema!r}, not a version number")
        if schema > SCHEMA:
            raise RecordError(f"{at}written with record schema {schema}; this openssl-matrix "
                              f"reads up to {SCHEMA} (upgrade it to read this tree)")
        for key in cls._REQUIRED:
            if key not in data:
                raise RecordError(f"{at}the key '{key}' is missing")
        names = _field_names(cls)
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        types = cls._TYPES
        for key, value in data.items():  # one pass over what the file holds
            if key in names:
                kind = types.get(key, ANY)
                if not _CHECKS[kind](value):
                    raise RecordError(f"{at}'{key}' is {_show(value)}, expected {kind}")
                values[key] = value
            elif key != "schema":
                extra[key] = value
        # built as __init__ would (every field its default, then the values read), without
        # its per-field frozen setattr: a report reads 100,000s of figures
        record = cls.__new__(cls)
        record.__dict__.update(_field_defaults(cls), **values, schema=schema,
                               extra=MappingProxyType(extra), _given=frozenset(values))
        return record

    def to_json(self) -> dict[str, Any]:
        """The record as it is written: the keys it was given (or that differ from their
        defaults), the keys it does not name, and ``schema``."""
        out: dict[str, Any] = dict(self.extra)
        given: frozenset[str] = getattr(self, "_given", frozenset())
        required = self._REQUIRED
        for name, default in _field_defaults(type(self)).items():  # fields' order, cached
            if name == "schema":
                continue
            value = getattr(self, name)
            if name in given or name in required or value != default:
                out[name] = value
        out["schema"] = SCHEMA
        return out

    def __getitem__(self, key: str) -> Any:
        """A key as written on disk (KeyError when the file has no such key)."""
        data = self.to_json()
        if key == "schema" and "schema" not in data:
            raise KeyError(key)
        return data[key]

    def __contains__(self, key: object) -> bool:
        return key in self.to_json()

    def get(self, key: str, default: Any = None) -> Any:
        """A key as written on disk (a field or an extra key), for generic consumers such
        as the flat export; typed code uses the attributes."""
        if key not in ("extra",) and key in self.__dataclass_fields__:
            value = getattr(self, key)
            return default if value is None else value
        return self.extra.get(key, default)


_NAMES: dict[type, frozenset[str]] = {}
_DEFAULTS: dict[type, dict[str, Any]] = {}


def _field_defaults(cls: type) -> dict[str, Any]:
    """Every field's default (``extra`` aside: each record gets its own)."""
    found = _DEFAULTS.get(cls)
    if found is None:
        found = _DEFAULTS[cls] = {f.name: _default(f) for f in dataclasses.fields(cls)
                                  if f.name != "extra"}
    return found


def _field_names(cls: type) -> frozenset[str]:
    """The JSON keys a record class names (found once per class: a report reads every
    figure of a tree of thousands of runs through ``from_json``)."""
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = frozenset(f.name for f in dataclasses.fields(cls)) - {
            "extra", "schema"}
    return names


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


# -- the records -------------------------------------------------------------------------


@dataclass(frozen=True)
class FigureRecord(_Record):
    """One parsed figure of a run (one algorithm × block size or operation)."""

    algorithm: str = ""
    status: str = ""
    label: str | None = None
    evp: bool | None = None
    block_size: int | None = None
    bytes_per_s: float | None = None
    ops_per_s: float | None = None
    operation: str | None = None
    detail: str | None = None
    invocation: str | None = None
    mask: str | None = None
    ia32cap: str | None = None
    engine: str | None = None
    path: str | None = None
    direction: str | None = None
    multi: int | None = None
    guards: tuple[str, ...] | list[str] = ()
    clock_hz: float | None = None
    cycles_per_byte: float | None = None
    cycles_per_op: float | None = None
    # the host around the speed run (hostacct.HostAccounting, on every figure it measured)
    own_share: float | None = None
    foreign_cores: float | None = None
    steal_cores: float | None = None

    _REQUIRED = ("algorithm",)
    _TYPES = MappingProxyType({"algorithm": STR, "status": STR, "label": OPT_STR, "evp": OPT_BOOL,
              "block_size": OPT_INT, "bytes_per_s": NUM, "ops_per_s": NUM,
              "operation": OPT_STR, "detail": OPT_STR, "invocation": OPT_STR,
              "mask": OPT_STR, "ia32cap": OPT_STR, "engine": OPT_STR, "path": OPT_STR,
              "direction": OPT_STR, "multi": OPT_INT, "guards": STR_LIST, "clock_hz": NUM,
              "cycles_per_byte": NUM, "cycles_per_op": NUM, "bits": OPT_INT,
              "own_share": NUM, "foreign_cores": NUM, "steal_cores": NUM,
              "seconds_per_op": NUM})

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        if "guards" in out:
            out["guards"] = list(self.guards)
        return out


# extra keys of a FigureRecord that are numbers: checked as such though they live in extra
_FIGURE_EXTRA_NUMBERS = ("bits", "seconds_per_op")


@dataclass(frozen=True)
class RunMeta(_Record):
    """A run's provenance and status (``meta.json``): what ran, on what, and how it ended."""

    status: str = ""
    kind: str | None = None  # "reference" for imported published figures, else a bench run
    variant: Mapping[str, Any] | None = None
    suite: Mapping[str, Any] | None = None
    host: Mapping[str, Any] | None = None
    series: Mapping[str, Any] | None = None
    started: str | None = None
    ended: str | None = None
    forced: bool | None = None
    round: int | None = None
    session: str | None = None
    image_tag: str | None = None
    image_id: str | None = None
    tarball_sha256: str | None = None
    clock_hz: float | None = None
    clock_source: str | None = None
    pinning: Mapping[str, Any] | None = None
    docker: Mapping[str, Any] | None = None
    invocations: list[Any] | None = None
    warnings: list[str] | None = None
    findings: list[Any] | None = None

    _REQUIRED = ("status",)
    _TYPES = MappingProxyType({"status": STR, "kind": OPT_STR, "variant": OPT_OBJ, "suite": OPT_OBJ,
              "host": OPT_OBJ, "series": OPT_OBJ, "started": OPT_STR, "ended": OPT_STR,
              "forced": OPT_BOOL, "round": OPT_INT, "session": OPT_STR,
              "image_tag": OPT_STR, "image_id": OPT_STR, "tarball_sha256": OPT_STR,
              "clock_hz": NUM, "clock_source": OPT_STR, "pinning": OPT_OBJ,
              "docker": OPT_OBJ, "invocations": LIST, "warnings": STR_LIST,
              "findings": LIST})

    @property
    def finished(self) -> bool:
        """The run finished (complete or partial): its figures count."""
        return self.status in FINISHED

    @property
    def version(self) -> str | None:
        v = (self.variant or {}).get("version")
        return None if v is None else str(v)

    @property
    def round_no(self) -> int:
        return self.round or 1

    @property
    def series_id(self) -> str | None:
        sid = (self.series or {}).get("id")
        return None if sid is None else str(sid)


@dataclass(frozen=True)
class BuildRecord(_Record):
    """A built variant (``build.json``): its image and everything that went into it."""

    tag: str = ""
    digest: str = ""
    image_id: str | None = None
    variant: Mapping[str, Any] | None = None
    tarball_sha256: str | None = None
    configure_line: str | None = None
    endbr32: int | None = None
    endbr32_warning: str | None = None
    started: str | None = None
    ended: str | None = None
    seconds: float | None = None
    #: the shared compiler cache the build used (its id, ccache's hits and misses), or None
    compiler_cache: Mapping[str, Any] | None = None

    _REQUIRED = ("tag", "digest")
    _TYPES = MappingProxyType({"tag": STR, "digest": STR, "image_id": OPT_STR, "variant": OPT_OBJ,
              "tarball_sha256": OPT_STR, "configure_line": OPT_STR, "endbr32": OPT_INT,
              "endbr32_warning": OPT_STR, "started": OPT_STR, "ended": OPT_STR,
              "seconds": NUM, "compiler_cache": OPT_OBJ})


@dataclass(frozen=True)
class ShipRecord(_Record):
    """An image that reached an engine by shipping, not by building there
    (``shipped-<engine>.json`` beside the build record): from which engine, how, what it
    cost, why it was chosen, and the image ID checked on arrival."""

    tag: str = ""
    image_id: str = ""
    method: str = ""  # "save-load" | "registry"
    to_engine: Mapping[str, Any] | None = None
    from_engine: Mapping[str, Any] | None = None
    bytes: int | None = None
    seconds: float | None = None
    bytes_per_s: float | None = None
    checked: str | None = None
    why: str | None = None
    build_seconds: float | None = None
    started: str | None = None
    ended: str | None = None

    _REQUIRED = ("tag", "image_id", "method")
    _TYPES = MappingProxyType({"tag": STR, "image_id": STR, "method": STR,
              "to_engine": OPT_OBJ, "from_engine": OPT_OBJ, "bytes": OPT_INT,
              "seconds": NUM, "bytes_per_s": NUM, "checked": OPT_STR, "why": OPT_STR,
              "build_seconds": NUM, "started": OPT_STR, "ended": OPT_STR})


@dataclass(frozen=True)
class Latest(_Record):
    """``_builds/<variant>/latest.json``: which build of a variant is the newest."""

    digest: str = ""
    tag: str = ""

    _REQUIRED = ("digest", "tag")
    _TYPES = MappingProxyType({"digest": STR, "tag": STR})


@dataclass(frozen=True)
class Series(_Record):
    """``series-<id>.json``: one variant's figures summarised over repeated rounds."""

    id: str = ""
    rounds: int | None = None
    variant: str | None = None
    suite: str | None = None
    noise_threshold: float | None = None
    runs: list[Any] | None = None
    statuses: list[str] | None = None
    figures: list[Any] | None = None

    _REQUIRED = ("id",)
    _TYPES = MappingProxyType({"id": STR, "rounds": OPT_INT, "variant": OPT_STR, "suite": OPT_STR,
              "noise_threshold": NUM, "runs": LIST, "statuses": STR_LIST, "figures": LIST})


# -- reading -----------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise RecordError(f"holds {name}, which is not a number JSON allows")


def read_json(path: Path) -> Any:
    """Any JSON file of the tool (journals, verdicts, records); None when it is missing.

    Not UTF-8, not JSON, or NaN/Infinity anywhere: a ResultsError naming the file.
    """
    try:
        text = read_bounded(path, "results").decode("utf-8")
        return jsonread.loads(text, parse_constant=_reject_constant)
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise _damaged(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise _damaged(path, f"not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecordError as exc:
        raise _damaged(path, str(exc)) from None
    except OSError as exc:
        raise _damaged(path, f"unreadable ({exc.strerror or exc})") from None


def _damaged(path: Path, what: str) -> ResultsError:
    folder = _set_aside_folder(path)
    return ResultsError(
        f"{path}: damaged: {what}",
        hint=f"set it aside: move {folder} out of the results tree (for example "
        f"`mv {folder} /tmp/`) and rerun; nothing else in the tree is affected")


def _set_aside_folder(path: Path) -> Path:
    """The folder to move away when ``path`` is damaged: the run or build folder."""
    if path.name in (META, FIGURES, BUILD):
        return path.parent
    return path


def _read(cls: type[R], path: Path) -> R | None:
    data = read_json(path)
    if data is None:
        return None
    try:
        return cls.from_json(data)
    except RecordError as exc:
        raise _damaged(path, str(exc)) from None


def read_meta(run_dir: Path) -> RunMeta | None:
    """The run's meta.json (or its line in an import's compact file), validated; None
    when the run has none (yet)."""
    meta = _read(RunMeta, run_dir / META)
    entry = compact.run_entry(run_dir) if meta is None else None
    if entry is None:
        return meta
    try:
        return RunMeta.from_json(entry.meta, f"run {run_dir.name}")
    except RecordError as exc:
        raise compact.damaged(entry.file, str(exc)) from None


def read_figures(run_dir: Path) -> list[FigureRecord]:
    """The run's figures.json, validated; [] when the run has none (yet)."""
    path = run_dir / FIGURES
    data = read_json(path)
    entry = compact.run_entry(run_dir) if data is None else None
    if entry is not None:  # an imported run, filed compactly
        path, data = entry.file, entry.figures
    if data is None:
        return []
    if not isinstance(data, list):
        raise _damaged(path, f"expected a JSON list of figures, found {type(data).__name__}")
    out = []
    for i, item in enumerate(data):
        try:
            fig = FigureRecord.from_json(item, f"figure {i + 1}")
            for key in _FIGURE_EXTRA_NUMBERS:
                if key in fig.extra and not _CHECKS[NUM](fig.extra[key]):
                    raise RecordError(f"figure {i + 1}: '{key}' is {_show(fig.extra[key])}, "
                                      f"expected {NUM}")
        except RecordError as exc:
            raise _damaged(path, str(exc)) from None
        out.append(fig)
    return out


def read_build(build_dir: Path) -> BuildRecord | None:
    return _read(BuildRecord, build_dir / BUILD)


def read_series(path: Path) -> Series | None:
    return _read(Series, path)


def builds_dir(root: Path, variant: str) -> Path:
    """``_builds/<variant>/``: every build record of a variant lives below it (the variant
    id checked as a name that becomes a path, the folder checked to stay in the tree)."""
    safe_name(variant, "variant", error=ResultsError)
    return inside(root, root / BUILDS / variant, error=ResultsError)


def profile_dir(root: Path, variant: str, cell: str) -> Path:
    """``_profiles/<variant>/<cell>``: the profiles of one cell of a variant."""
    for key, name in (("variant", variant), ("cell", cell)):
        safe_name(name, key, error=ResultsError)
    return inside(root, root / PROFILES_DIR / variant / cell, error=ResultsError)


def build_dir(root: Path, variant: str, digest: str) -> Path:
    return builds_dir(root, variant) / digest[:16]


def latest_path(root: Path, variant: str) -> Path:
    return builds_dir(root, variant) / LATEST


def read_latest(root: Path, variant: str) -> Latest | None:
    """The newest build of a variant as latest.json names it; None if never built."""
    return _read(Latest, latest_path(root, variant))


def build_records(root: Path, variant: str) -> list[BuildRecord]:
    """Every recorded build of a variant (any digest), in folder order."""
    base = builds_dir(root, variant)
    if not base.is_dir():
        return []
    found = (read_build(p) for p in sorted(base.iterdir()) if (p / BUILD).is_file())
    return [r for r in found if r is not None]


def ship_path(folder: Path, engine_key: str) -> Path:
    """Where the arrival of an image on one engine is recorded (``folder``: its build
    record's folder, or ``_builds/_images/<name>`` for base and toolchain images)."""
    safe_name(engine_key, "engine key", error=ResultsError)
    return folder / f"{SHIP_PREFIX}{engine_key}.json"


def images_dir(root: Path, tag: str) -> Path:
    """``_builds/_images/<tag as a name>/``: ship records of a base or toolchain image."""
    return inside(root, root / BUILDS / IMAGES / fold(tag), error=ResultsError)


def read_ship(path: Path) -> ShipRecord | None:
    return _read(ShipRecord, path)


def read_ships(root: Path) -> list[ShipRecord]:
    """Every ship record in the tree (variants', base and toolchain images')."""
    base = root / BUILDS
    if not base.is_dir():
        return []
    found = (read_ship(p) for p in sorted(base.glob(f"*/*/{SHIP_PREFIX}*.json")))
    return [r for r in found if r is not None]


def series_path(suite_dir: Path, series_id: str) -> Path:
    return suite_dir / f"{SERIES_PREFIX}{series_id}.json"


def series_files(suite_dir: Path) -> list[Path]:
    return sorted(suite_dir.glob(f"{SERIES_PREFIX}*.json"))


def has_meta(run_dir: Path) -> bool:
    return (run_dir / META).is_file()


# -- writing -----------------------------------------------------------------------------


def _as(cls: type[R], record: R | Mapping[str, Any], what: str) -> R:
    if isinstance(record, _Record):
        if not isinstance(record, cls):
            raise TypeError(f"{what}: a {type(record).__name__} is not a {cls.__name__}")
        # Checked like one read back: a record built in code (an ``inf`` rate, say) must
        # never reach the disk in a form its own reader refuses.
        record = record.to_json()
    try:
        return cls.from_json(dict(record), what)
    except RecordError as exc:
        raise ResultsError(f"refusing to write a malformed {what}: {exc}",
                           hint="this is a bug in openssl-matrix; please report it") from None


def write_meta(run_dir: Path, meta: RunMeta | Mapping[str, Any], *,
               durable: bool = True, mode: int | None = None) -> RunMeta:
    """Write (or rewrite) the run's meta.json; the record is checked first (``mode``: a
    new file's, as :func:`~openssl_matrix.core.files.atomic_write`'s)."""
    record = _as(RunMeta, meta, META)
    write_json(run_dir / META, record.to_json(), durable=durable, mode=mode)
    return record


def write_figures(run_dir: Path, figures: Iterable[FigureRecord | Mapping[str, Any]], *,
                  durable: bool = True, mode: int | None = None) -> None:
    """Write the run's figures.json; each figure is checked first (``mode``: as
    :func:`write_meta`'s)."""
    write_json(run_dir / FIGURES, [_checked_json(f) for f in figures], durable=durable, mode=mode)


def _checked_json(figure: FigureRecord | Mapping[str, Any]) -> dict[str, Any]:
    """A figure as written, checked as it will be read back. A mapping is written as given
    (with ``schema``): what its record's ``to_json`` gives, key for key (the file's keys
    are sorted), without building that second dict for each of an import's 440,000."""
    if isinstance(figure, _Record):
        return _as(FigureRecord, figure, "figure").to_json()
    _as(FigureRecord, figure, "figure")
    return {**figure, "schema": SCHEMA}


def write_build(build_dir: Path, record: BuildRecord | Mapping[str, Any]) -> BuildRecord:
    rec = _as(BuildRecord, record, BUILD)
    write_json(build_dir / BUILD, rec.to_json())
    return rec


def write_ship(folder: Path, engine_key: str, record: ShipRecord | Mapping[str, Any],
               ) -> ShipRecord:
    rec = _as(ShipRecord, record, "ship record")
    write_json(ship_path(folder, engine_key), rec.to_json())
    return rec


def write_latest(root: Path, variant: str, digest: str, tag: str) -> None:
    write_json(latest_path(root, variant), Latest(digest=digest, tag=tag).to_json())


def write_series(suite_dir: Path, series: Series | Mapping[str, Any]) -> Path:
    rec = _as(Series, series, "series record")
    path = series_path(suite_dir, rec.id)
    write_json(path, rec.to_json())
    return path


# -- runs: meta + figures, joined once ----------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One run folder read back: where it is, its meta and its figures."""

    cpu: str
    variant: str
    suite: str
    run: str
    path: Path
    meta: RunMeta
    figures: tuple[FigureRecord, ...]

    @property
    def finished(self) -> bool:
        return self.meta.finished


def read_run(cpu: str, variant: str, suite: str, run: str, path: Path, *,
             figures: bool = True) -> Run | None:
    """A run folder read and validated; None when it has no meta.json (being created)."""
    meta = read_meta(path)
    if meta is None:
        return None
    figs = tuple(read_figures(path)) if figures and meta.finished else ()
    return Run(cpu, variant, suite, run, path, meta, figs)


def run_dirs(root: Path, *, cpu: str | None = None, variant: str | None = None,
             suite: str | None = None) -> Iterator[tuple[str, str, str, str, Path]]:
    """Every numbered run folder of a tree as (cpu, variant, suite, run, path), in a
    stable order; the ``_builds``/``_journal`` folders and hidden ones are skipped.
    ``cpu``/``variant``/``suite`` narrow the walk to those folders."""

    def subdirs(base: Path, only: str | None) -> list[Path]:
        if only is not None:
            return [base / only] if (base / only).is_dir() else []
        return sorted(p for p in base.iterdir() if p.is_dir())

    if not root.is_dir():
        return
    for c in subdirs(root, cpu):
        if c.name.startswith((".", "_")):
            continue
        for v in subdirs(c, variant):
            for s in subdirs(v, suite):
                for name, run in compact.run_paths(s):  # folders, and compact files' runs
                    yield c.name, v.name, s.name, name, run


def finished_runs(root: Path, *, cpu: str | None = None, variant: str | None = None,
                  suite: str | None = None, figures: bool = True) -> Iterator[Run]:
    """Every finished run (complete or partial) with its figures, validated.

    Running, interrupted and failed runs are skipped: their figures never count. A damaged
    meta.json or figures.json raises ResultsError naming it (never silently dropped).
    ``figures=False`` reads only the meta records (their ``figures`` are then empty).
    """
    for c, v, s, r, path in run_dirs(root, cpu=cpu, variant=variant, suite=suite):
        run = read_run(c, v, s, r, path, figures=figures)
        if run is not None and run.finished:
            yield run


# -- sessions: the bench session a run belongs to ------------------------------------------

#: Prefixes of a derived session id (a run that recorded none), by where it came from.
FROM_JOURNAL = "journal:"
FROM_SERIES = "series:"
FROM_START = "run:"
FROM_IMPORT = "import:"


def journal_runs(root: Path) -> dict[str, str]:
    """Run folder (``cpu/variant/suite/run``) -> the id of the bench journal (open or
    closed, ``_journal/``) that names it: where a run without a session id came from."""
    found: dict[str, str] = {}
    base = root / JOURNALS
    for path in sorted(base.glob("bench-*.json")) + sorted(base.glob("closed/bench-*.json")):
        data = read_json(path)
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            continue
        cells = data.get("cells")
        for entry in cells.values() if isinstance(cells, dict) else ():
            run_dir = entry.get("run_dir") if isinstance(entry, dict) else None
            if isinstance(run_dir, str):
                found.setdefault(run_dir, data["id"])
    return found


def run_session(run: Run, journals: Mapping[str, str]) -> tuple[str, bool]:
    """(session id, derived) of a run: ``meta.session`` (its bench journal's id), else one
    derived deterministically: the bench journal naming its folder (``journals``, from
    :func:`journal_runs`), its repeated series (``series.id``), else the run alone, by
    its start (else its folder). An ``import``'s runs are one session, named by its
    ``--as`` name and the file's digest (a stopped import completed later is the same)."""
    meta = run.meta
    if meta.session:
        return meta.session, False
    rel = f"{run.cpu}/{run.variant}/{run.suite}/{run.run}"
    if meta.kind == "reference":
        return f"{FROM_IMPORT}{run.cpu}/{str(meta.extra.get('source_sha256'))[:16]}", True
    journal = journals.get(rel)
    if journal is not None:
        return FROM_JOURNAL + journal, True
    if meta.series_id:
        return f"{FROM_SERIES}{run.cpu}/{run.variant}/{run.suite}/{meta.series_id}", True
    return FROM_START + (meta.started or rel), True


def require_tree(root: Path) -> None:
    """Refuse a folder that is not a results tree (for export and report)."""
    if not root.is_dir():
        raise ResultsError(f"{root}: no results tree here",
                           hint="run `invoke matrix bench --cpu=auto` first, or pass "
                           "--results DIR")
    if (root / BUILDS).is_dir() or (root / JOURNALS).is_dir() or (root / ".lock").exists():
        return
    try:
        if any(has_meta(path) for *_, path in run_dirs(root)):
            return
        if not any(root.iterdir()):
            return  # an empty tree: nothing measured yet, nothing wrong
    except OSError as exc:
        raise ResultsError(f"{root}: cannot be read as a results tree ({exc})",
                           hint="pass the folder `invoke matrix bench` writes to with "
                           "--results DIR") from None
    raise ResultsError(
        f"{root} is not a results tree (no {BUILDS}/, {JOURNALS}/ or "
        f"<cpu>/<variant>/<suite>/<run>/{META} in it)",
        hint="pass the folder `invoke matrix bench` writes to with --results DIR")


def figures_as_dicts(figures: Sequence[FigureRecord]) -> list[dict[str, Any]]:
    """Figures as the plain dicts bench's in-memory outcomes carry."""
    return [f.to_json() for f in figures]
