"""Reading JSON that someone else may have written: ``json.loads`` whose only new failure
is a ``json.JSONDecodeError`` (a ValueError) for nesting deeper than Python's recursion
allows — ``json.loads('[' * 100_000 + ']' * 100_000)`` raises RecursionError, which no
caller expects from a parser and which would end a command with a traceback."""

from __future__ import annotations

import json
from typing import Any

#: What the message says of a file nested too deeply.
TOO_DEEP = "nested deeper than this tool reads"


def loads(text: str | bytes, **kwargs: Any) -> Any:
    """``json.loads(text, **kwargs)``; too deep a nesting is a ``JSONDecodeError``."""
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        doc = text if isinstance(text, str) else text.decode("utf-8", "replace")
        raise json.JSONDecodeError(TOO_DEEP, doc[:200], 0) from None
