"""What a container engine says about itself (:meth:`Backend.engine_info`), typed.

A bench run files it whole as its ``meta.json``'s ``docker`` (``to_json()``: the keys the
engine gave, and any this code does not name, unchanged), the host lock is keyed by its
``id``, a kernel check and the settle wait ask whether its ``endpoint`` is this machine.

It is also a read-only ``Mapping`` of that JSON, so the engine layer's own readers that
take the description as a mapping (ship.py, buildclaims.py, images/build.py) read it as
before.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields

#: JSON keys named by the dataclass, in the order the engine gives them.
_INT_KEYS = ("ncpu", "mem_total")


@dataclass(frozen=True, eq=False)
class EngineInfo(Mapping[str, object]):
    """One engine: where it is (``endpoint``, ``endpoint_spec``, ``transport``,
    ``context``), which it is (``id``, ``name``), what it runs (server and API versions,
    the host's OS, kernel, architecture, CPUs and memory, the storage driver). A field is
    ``None`` where the engine did not say; ``given`` holds the keys it did say (those are
    what ``to_json`` writes, with ``extra``; one made in Python writes its fields that are
    not ``None``)."""

    endpoint: str | None = None
    endpoint_spec: str | None = None
    transport: str | None = None
    context: str | None = None
    id: str | None = None
    name: str | None = None
    root_dir: str | None = None
    server_version: str | None = None
    api_version: str | None = None
    os: str | None = None
    kernel: str | None = None
    arch: str | None = None
    os_type: str | None = None
    ncpu: int | None = None
    mem_total: int | None = None
    storage_driver: str | None = None
    #: keys this code does not name, kept as given
    extra: Mapping[str, object] = field(default_factory=dict)
    #: the named keys the engine gave, null ones too (None: those that are not None)
    given: frozenset[str] | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> EngineInfo:
        """The description in ``data`` (what an engine or a run's ``meta.json`` says);
        a value of another type than its field's is kept in ``extra``, never guessed."""
        names = {f.name for f in fields(cls)} - {"extra", "given"}
        values: dict[str, object] = {}
        extra: dict[str, object] = {}
        for key, value in data.items():
            ok = value is None or (isinstance(value, int) and not isinstance(value, bool)
                                   if key in _INT_KEYS else isinstance(value, str))
            (values if key in names and ok else extra)[key] = value
        return cls(**values, extra=extra, given=frozenset(values))  # type: ignore[arg-type]

    @classmethod
    def of(cls, engine: Mapping[str, object]) -> EngineInfo:
        """``engine`` itself when it is one, else the description it holds."""
        return engine if isinstance(engine, EngineInfo) else cls.from_json(engine)

    def to_json(self) -> dict[str, object]:
        """The description as the engine gave it."""
        out: dict[str, object] = {}
        for f in fields(self):
            if f.name in ("extra", "given"):
                continue
            value = getattr(self, f.name)
            if f.name in self.given if self.given is not None else value is not None:
                out[f.name] = value
        return {**out, **self.extra}

    def __getitem__(self, key: str) -> object:
        return self.to_json()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_json())

    def __len__(self) -> int:
        return len(self.to_json())
