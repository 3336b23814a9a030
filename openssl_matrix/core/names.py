"""Names that become paths, and paths that must stay inside their root.

Every name the tool turns into a file or folder name — variant ids, versions read from
pasted reports, ``import --as`` names, suite, mask, algorithm and CPU (profile) names —
goes through :func:`name_problem`/:func:`safe_name`. The safe alphabet (documented in
docs/matrix.md, "Names that become paths"):

* letters, digits, ``.``, ``_``, ``+`` and ``-``;
* the first character a letter or a digit (so never ``.``, ``..`` or a hidden name, never
  something that reads as a command-line flag);
* no ``..`` anywhere; at most ``MAX_NAME`` characters.

``/``, ``\\``, blanks, control characters and everything else are refused, with the key
that held the name. Writers then check with :func:`inside` that the path they are about
to write is below the root they were given, whatever the name looked like.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from openssl_matrix.core.errors import FatalError, UsageError

MAX_NAME = 120
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*\Z")
ALPHABET = ("letters, digits, '.', '_', '+' and '-', starting with a letter or digit, "
            f"no '..', at most {MAX_NAME} characters")


def clip(value: object, limit: int = 80) -> str:
    """``repr`` of a value, cut to ``limit`` characters: errors never echo unbounded text."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def name_problem(value: object) -> str | None:
    """Why ``value`` cannot be a file or folder name (None when it can)."""
    if not isinstance(value, str):
        return f"{clip(value)} is not a name (expected text)"
    if not value:
        return "an empty name"
    if len(value) > MAX_NAME:
        return f"{clip(value)} is longer than {MAX_NAME} characters"
    if ".." in value:
        return f"{clip(value)} contains '..'"
    if not _SAFE.match(value):
        bad = sorted({c for c in value if not re.match(r"[A-Za-z0-9._+-]", c)})
        if bad:
            return (f"{clip(value)} contains {', '.join(repr(c) for c in bad[:5])}, not "
                    "allowed in a name that becomes a file or folder")
        return f"{clip(value)} must start with a letter or a digit"
    return None


def safe_name(value: object, key: str, *, error: type[FatalError] = UsageError) -> str:
    """``value`` if it may become a path component; else ``error`` naming ``key``."""
    problem = name_problem(value)
    if problem is not None:
        raise error(f"{key}: {problem}", hint=f"names that become paths are {ALPHABET}")
    assert isinstance(value, str)
    return value


def inside(root: Path, path: Path, *, error: type[FatalError] = UsageError) -> Path:
    """``path`` after checking it stays below ``root`` once ``..`` and symbolic links of
    the existing part are resolved; raise ``error`` when it does not."""
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))
    if real != real_root and real_root not in real.parents:
        raise error(f"{clip(str(path), 200)} would be written outside {root}",
                    hint="a name in it leads out of the folder; this is refused")
    return path


def fold(text: str) -> str:
    """A label turned into a file-name part: lower case, runs of anything else than
    ``a-z0-9._+`` become one dash (``../../x`` → ``x``), never empty."""
    out = re.sub(r"[^a-z0-9_+]+", "-", text.lower().replace("..", "-")).strip("-.")
    return out[:MAX_NAME] or "x"
