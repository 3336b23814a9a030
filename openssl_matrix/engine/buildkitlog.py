"""A BuildKit build's progress, read from the engine's API stream as plain log text.

Through the Engine API (``POST /build?version=2``), dockerd's BuildKit reports progress as
``{"id": "moby.buildkit.trace", "aux": "<base64>"}`` messages, each a protobuf
``StatusResponse`` (moby/buildkit ``api/services/control/control.proto``):
``repeated Vertex vertexes = 1; repeated VertexStatus statuses = 2; repeated VertexLog
logs = 3``, with ``Vertex {string digest = 1; repeated string inputs = 2; string name = 3;
bool cached = 4; Timestamp started = 5; Timestamp completed = 6; string error = 7}`` and
``VertexLog {string vertex = 1; Timestamp timestamp = 2; int64 stream = 3; bytes msg =
4}``. Only those fields are read; the wire format is decoded here (varints and
length-delimited fields), so no protobuf library is needed. Pure: no engine, no I/O.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from dataclasses import dataclass, field

TRACE_ID = "moby.buildkit.trace"


class ProtobufError(ValueError):
    """Bytes that are not the protobuf message they were said to be."""


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ProtobufError("truncated varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def fields(buf: bytes) -> Iterator[tuple[int, int | bytes]]:
    """The (field number, value) pairs of one protobuf message: varints as int,
    length-delimited and fixed-width fields as bytes."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
            yield number, value
        elif wire == 2:
            length, i = _varint(buf, i)
            if i + length > len(buf):
                raise ProtobufError("truncated field")
            yield number, buf[i:i + length]
            i += length
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            yield number, buf[i:i + width]
            i += width
        else:
            raise ProtobufError(f"wire type {wire} is not read here")


@dataclass
class Progress:
    """What a build's trace said so far: the steps seen, in the order they started."""

    names: dict[str, str] = field(default_factory=dict)  # vertex digest -> name
    started: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    current: str = ""

    def read(self, aux: str) -> str:
        """One trace message (the base64 ``aux``): the log text it adds. A step that
        starts adds ``#N NAME`` (``CACHED`` when its result was reused); the steps' own
        output is added as it came."""
        try:
            message = base64.b64decode(aux, validate=True)
        except (binascii.Error, ValueError):
            return ""
        out: list[str] = []
        try:
            for number, value in fields(message):
                if not isinstance(value, bytes):
                    continue
                if number == 1:
                    out.append(self._vertex(value))
                elif number == 3:
                    out.append(self._log(value))
        except ProtobufError as exc:
            out.append(f"(an unreadable progress message: {exc})\n")
        return "".join(out)

    def _vertex(self, value: bytes) -> str:
        digest = name = error = ""
        cached = started = False
        for number, item in fields(value):
            if number == 1 and isinstance(item, bytes):
                digest = item.decode("utf-8", "replace")
            elif number == 3 and isinstance(item, bytes):
                name = item.decode("utf-8", "replace")
            elif number == 4:
                cached = bool(item)
            elif number == 5:
                started = True
            elif number == 7 and isinstance(item, bytes):
                error = item.decode("utf-8", "replace")
        if name:
            self.names[digest] = name
        text = ""
        if (started or cached) and digest not in self.started:
            self.started.append(digest)
            self.current = self.names.get(digest, digest)
            text = f"#{len(self.started)} {self.current}" + (" CACHED" if cached else "") + "\n"
        if error and error not in self.errors:
            self.errors.append(error)
            text += f"#{self._number(digest)} ERROR: {error}\n"
        return text

    def _log(self, value: bytes) -> str:
        chunk = b""
        for number, item in fields(value):
            if number == 4 and isinstance(item, bytes):
                chunk += item
        return chunk.decode("utf-8", "replace")

    def _number(self, digest: str) -> int:
        return self.started.index(digest) + 1 if digest in self.started else 0
