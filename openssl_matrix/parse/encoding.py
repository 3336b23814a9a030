"""The text of a pasted report, from its bytes: what ``parse`` and ``import`` read.

A paste saved by a Windows editor starts with a byte-order mark; one redirected by
PowerShell (``openssl speed > out.txt``) is UTF-16. Neither may change what is parsed:

* a UTF-8 byte-order mark is dropped (at the start, and where two files were pasted
  together), so the version line after it is read as one;
* a UTF-16 or UTF-32 paste with its byte-order mark is decoded as what the mark says; one
  that does not decode as that is refused by name (``ParseError``, exit 8);
* UTF-16 without a mark (a NUL byte beside nearly every ASCII character) is refused by
  name, with the command that converts it: guessing its byte order could misread it;
* any other bytes are read as UTF-8, a byte that is not UTF-8 becoming U+FFFD (a paste
  from a Latin-1 page keeps its figures; only the odd letter is lost).
"""

from __future__ import annotations

import codecs

from openssl_matrix.core.errors import ParseError
from openssl_matrix.core.names import clip

#: Byte-order marks, the longest first (UTF-32 LE starts like UTF-16 LE).
_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32 (little-endian)"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32 (big-endian)"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16 (little-endian)"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16 (big-endian)"),
)
_BOM = "\ufeff"
#: How much of the start is looked at for UTF-16 without a mark.
_SNIFF = 4096


def _convert_hint(source: str, encoding: str) -> str:
    shown = clip(source, 200)
    return (f"convert it to UTF-8 first, e.g. `iconv -f {encoding} -t UTF-8 {shown} > "
            f"{shown}.utf8`, and give that file")


def _unmarked_utf16(raw: bytes) -> str | None:
    """``UTF-16LE``/``UTF-16BE`` when the start of ``raw`` is ASCII text in UTF-16 without
    a mark (NUL bytes at every odd, or every even, offset), else None."""
    head = raw[:_SNIFF]
    if len(head) < 4 or b"\0" not in head:
        return None
    even, odd = head[0::2], head[1::2]
    if odd.count(0) >= 0.9 * len(odd) and even.count(0) <= 0.1 * len(even):
        return "UTF-16LE"
    if even.count(0) >= 0.9 * len(even) and odd.count(0) <= 0.1 * len(odd):
        return "UTF-16BE"
    return None


def paste_text(raw: bytes, source: str) -> str:
    """The text of the paste ``raw`` (the bytes of the file ``source``), as the module
    docstring says; ParseError naming the encoding when it cannot be read."""
    for mark, codec, name in _MARKS:
        if raw.startswith(mark):
            if codec == "utf-8":
                break
            try:
                text = raw[len(mark):].decode(codec)
            except UnicodeDecodeError as exc:
                raise ParseError(
                    f"{clip(source, 200)} starts with the byte-order mark of {name} but is "
                    f"not {name} text (byte {exc.start + len(mark)})",
                    hint=_convert_hint(source, codec.upper())) from None
            return text.replace(_BOM, "")
    unmarked = _unmarked_utf16(raw)
    if unmarked is not None:
        raise ParseError(f"{clip(source, 200)} looks like {unmarked} text without a "
                         "byte-order mark (a NUL byte beside each letter): this tool reads "
                         "UTF-8, or UTF-16/UTF-32 with a byte-order mark",
                         hint=_convert_hint(source, unmarked))
    return raw.decode("utf-8", errors="replace").replace(_BOM, "")
