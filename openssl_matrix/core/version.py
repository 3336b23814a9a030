"""OpenSSL release numbers: the one parser, comparison, series and era of the package.

An OpenSSL release number is ``MAJOR.MINOR.PATCH`` with up to two letters for the old
letter releases (``0.9.8za``, ``1.0.1e``, ``1.1.1w``) and an optional ``-suffix`` for
pre-releases and dev trees (``3.0.0-beta1``, ``1.0.0f-dev``). Letters sort as releases:
``1.0.1 < 1.0.1c < 1.0.1t < 1.0.2`` and a two-letter suffix after every one-letter one
(``0.9.8z < 0.9.8za``).

Bad input is answered one way everywhere: :meth:`Version.parse` raises
:class:`VersionError` (a ``ValueError``) for text that is not a release number; callers
that read versions out of free text (a pasted report's header) use :meth:`Version.find`,
which returns ``None`` when there is none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import total_ordering

_RELEASE = r"(\d+)\.(\d+)\.(\d+)([a-z]{0,2})(-[0-9A-Za-z.]+)?"
_EXACT = re.compile(rf"^{_RELEASE}$")
#: The release numbers a matrix or report spec may declare: a stricter form of the above
#: (lower-case suffix only), since the name becomes part of Docker tags and folder names.
DECLARABLE = re.compile(r"^\d+\.\d+\.\d+[a-z]{0,2}(-[a-z0-9]+)?$")
_IN_TEXT = re.compile(rf"^\s*(?:OpenSSL\s+)?{_RELEASE}(?![0-9A-Za-z.])")


class VersionError(ValueError):
    """Text that is not an OpenSSL release number."""


@total_ordering
@dataclass(frozen=True)
class Version:
    """One OpenSSL release number, e.g. ``Version.parse("1.1.1w")``."""

    major: int
    minor: int
    patch: int
    letters: str = ""
    suffix: str = ""  # "-dev", "-beta1" ...: kept, ignored by comparisons
    text: str = field(default="", compare=False)

    @classmethod
    def parse(cls, text: str) -> Version:
        """The release number ``text`` is; VersionError if it is not one."""
        m = _EXACT.match(text.strip()) if isinstance(text, str) else None
        if m is None:
            raise VersionError(f"{text!r} is not an OpenSSL release number (such as 1.1.1w "
                               "or 3.0.20)")
        return cls._of(m, text.strip())

    @classmethod
    def find(cls, text: str | None) -> Version | None:
        """The release number at the start of ``text`` (``"OpenSSL 1.1.1w  11 Sep 2023"``
        gives 1.1.1w); None when there is none."""
        if not text:
            return None
        m = _IN_TEXT.match(text)
        return None if m is None else cls._of(m, m.group(0).split()[-1])

    @classmethod
    def _of(cls, m: re.Match[str], text: str) -> Version:
        return cls(int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4),
                   m.group(5) or "", text)

    @property
    def series(self) -> tuple[int, int, int]:
        """(major, minor, patch): ``(1, 1, 1)`` for 1.1.1w. Compare it with tuples:
        ``v.series >= (1, 0, 2)``."""
        return self.major, self.minor, self.patch

    @property
    def key(self) -> tuple[int, int, int, str]:
        """Sort key: the series, then the letters (two letters after every single one)."""
        return self.major, self.minor, self.patch, f"{len(self.letters)}{self.letters}"

    @property
    def era(self) -> str:
        """``0.9.8``, ``1.0.1``, ``1.1.1``, ``3.x``: how the docs name an era."""
        return "3.x" if self.major >= 3 else ".".join(map(str, self.series))

    @property
    def release(self) -> str:
        """The number without a pre-release suffix: ``3.0.0`` for ``3.0.0-beta1``."""
        return f"{self.major}.{self.minor}.{self.patch}{self.letters}"

    def __str__(self) -> str:
        return self.text or f"{self.release}{self.suffix}"

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self.key < other.key

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


def series(version: str) -> tuple[int, int, int]:
    """``series("1.1.1w") == (1, 1, 1)``; VersionError if ``version`` is not a release."""
    return Version.parse(version).series


def series_or_none(version: str | None) -> tuple[int, int, int] | None:
    """:func:`series`, or None for text that is not a release (``?``, empty, None)."""
    if not version:
        return None
    try:
        return series(version)
    except VersionError:
        return None


def sort_key(text: str) -> tuple[int, tuple[object, ...]]:
    """Sort key for any version text: release numbers in release order, after text that
    is not one (``?``, ``unknown``), which sorts by itself."""
    v = Version.find(text)
    return (1, v.key) if v is not None else (0, (text,))
