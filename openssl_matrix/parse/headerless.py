"""Rows pasted without speed's ``type 16 bytes ...`` header: placed under the block sizes
their version line implies (or ``--block-sizes``), the assumption stated; the entry point
is :func:`openssl_matrix.parse.read_paste`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# Many reports paste the rows of a table and leave out its header line. Such rows are
# placed only when their column count is that of the block sizes the version's speed
# prints (the version line above them says which), or of the sizes given by the caller
# (``--block-sizes``); the header is then written in for them, and the assumption is
# stated. Rows that cannot be placed are left as they are (and so stay unread).

#: The block sizes ``openssl speed`` prints without ``-bytes``: up to 1.0.2, and from
#: 1.1.0 (``+H:16:64:256:1024:8192``, plus 16384 from 1.1.0: OPENSSL-FACTS.md).
SIZES_UP_TO_102 = (16, 64, 256, 1024, 8192)
SIZES_FROM_110 = (16, 64, 256, 1024, 8192, 16384)

_H_ROW = re.compile(
    r"^[ \t>]*(?P<name>[A-Za-z][\w()/.+-]*(?: (?:cbc|ige|ede3|cfb|ofb|ecb|ctr))?)"
    r"(?P<figures>(?:[ \t]+\d+\.\d+k?){2,})[ \t]*$"
)
_H_HEADER = re.compile(r"type(?:\s+\d+ bytes)+|\+H:")
#: A line of more words than this is prose: a table above it has ended.
_H_PROSE_WORDS = 12
_H_VERSION = re.compile(r"OpenSSL (\d+)\.(\d+)\.(\d+)([a-z]*)|version: (\d+)\.(\d+)\.(\d+)"
                        # a line that is only a release's name, as a report labels a
                        # table it pasted: "1.1.1t:", "OpenSSL 3.1.0", "3.1.0"
                        r"|^[ \t>*#]*(?:OpenSSL )?(\d+)\.(\d+)\.(\d+)([a-z]?)[ \t*]*:?[ \t]*$")


def _version_parts(match: re.Match[str]) -> tuple[int, int, int, str]:
    """(major, minor, patch, letter) of an ``_H_VERSION`` match, whichever form it is."""
    for first in (1, 5, 8):
        if match.group(first) is not None:
            letter = match.group(first + 3) if first != 5 else ""
            return (int(match.group(first)), int(match.group(first + 1)),
                    int(match.group(first + 2)), letter or "")
    raise AssertionError("a version match without a version")


@dataclass(frozen=True)
class AssumedHeader:
    """A header written in for rows pasted without one."""

    line: int  # 1-based line of the first row, in the pasted text
    sizes: tuple[int, ...]
    why: str  # "the block sizes of OpenSSL 1.1.1w's speed" or "the --block-sizes given"
    first_row: str  # the first row's name and first figure, to find its run again

    def text(self) -> str:
        return (f"rows pasted without speed's `type 16 bytes ...` header (from line "
                f"{self.line}): block sizes {', '.join(map(str, self.sizes))} assumed, "
                f"{self.why}")


def _sizes_of_version(match: re.Match[str]) -> tuple[int, ...]:
    major, minor, _patch, _letter = _version_parts(match)
    return SIZES_FROM_110 if (major, minor) >= (1, 1) else SIZES_UP_TO_102


def assume_headers(
    text: str, block_sizes: Sequence[int] | None = None
) -> tuple[str, list[AssumedHeader], list[str]]:
    """``text`` with a ``type ...`` header written above each group of rows that has none
    and can be placed, the headers assumed, and why each other group was not placed."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[str] = []
    assumed: list[AssumedHeader] = []
    refused: list[str] = []
    version: re.Match[str] | None = None
    headed = False  # the rows since the last header or version line are a headed table
    in_group = False
    for number, line in enumerate(lines, 1):
        row = _H_ROW.match(line)
        if row is None:
            if _H_HEADER.search(line):
                headed = True
            found = _H_VERSION.search(line)
            if found:
                version, headed = found, False
            elif len(line.split()) > _H_PROSE_WORDS:
                headed = False
            if line.strip():
                in_group = False
            out.append(line)
            continue
        if not in_group and not headed:
            columns = len(row.group("figures").split())
            where = f"line {number} ({row.group('name')}, {columns} figures)"
            if block_sizes:
                sizes, why = tuple(block_sizes), "the --block-sizes given"
            elif version is not None:
                sizes = _sizes_of_version(version)
                major, minor, patch, letter = _version_parts(version)
                why = f"those of OpenSSL {major}.{minor}.{patch}{letter}'s speed"
            else:
                sizes, why = (), ""
            if not sizes:
                refused.append(f"rows without a header at {where}: no version line above "
                               "them says which block sizes they are (give --block-sizes "
                               "16,64,256,1024,8192,16384)")
            elif len(sizes) != columns:
                refused.append(f"rows without a header at {where}: {len(sizes)} block sizes "
                               f"({why}) do not match their {columns} figures")
            else:
                out.append("type " + " ".join(f"{s} bytes" for s in sizes))
                first = row.group("figures").split()[0]
                assumed.append(AssumedHeader(number, sizes, why,
                                             f"{row.group('name')} {first}"))
                headed = True
        in_group = True
        out.append(line)
    return "\n".join(out), assumed, refused
