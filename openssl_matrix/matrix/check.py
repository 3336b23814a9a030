"""The checking context shared by the YAML readers (``matrix.yaml`` in :mod:`model`, report
specs in :mod:`reportspec`): ``CheckContext`` carries the file name and turns each malformed value
into a ConfigError naming file and key path; the value patterns it checks against
(``SAFE_TOKEN``, ``SHA256``, ``IA32CAP_VALUE``); and :func:`load_yaml_file`, the limited
YAML loader whose problems name the file.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.core.files import read_bounded
from openssl_matrix.core.names import ALPHABET, clip, name_problem
from openssl_matrix.core.yamlload import MAX_BYTES as MAX_YAML_BYTES
from openssl_matrix.core.yamlload import YamlProblem, load_yaml
from openssl_matrix.matrix.isa import IA32CAP_BITS

IA32CAP_VALUE = re.compile(r"^~?(0x[0-9a-fA-F]+)?(:~?0x[0-9a-fA-F]+)?\Z")
"""An OPENSSL_ia32cap value: one or two words, each optionally inverted with ~."""

# Characters allowed in any value that reaches a Dockerfile RUN line or a container
# command. Everything is passed as exec-form arguments, but a value that needs a shell
# metacharacter is never a legitimate Configure option, -march value or ia32cap mask.
SAFE_TOKEN = re.compile(r"^[A-Za-z0-9_.,:=+/~@%-]+\Z")
SHA256 = re.compile(r"^[0-9a-f]{64}\Z")


def choices_hint(wanted: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(wanted, choices, n=1)
    listing = ", ".join(choices) if choices else "(none defined)"
    if close:
        return f"perhaps you meant {close[0]!r}? Defined: {listing}"
    return f"defined: {listing}"


class CheckContext:
    """Carries the file name for error messages."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, keypath: str, message: str, hint: str | None = None) -> ConfigError:
        keypath = keypath if len(keypath) <= 200 else clip(keypath, 200)
        where = f"{self.path}: {keypath}" if keypath else str(self.path)
        if len(message) > 1000:  # errors never echo unbounded text
            message = f"{message[:1000]}… ({len(message) - 1000} more characters)"
        return ConfigError(f"{where}: {message}", hint=hint)

    def path_name(self, value: Any, keypath: str, *, what: str,
                  pattern: re.Pattern[str] | None = None) -> str:
        """A name that becomes a file or folder name (names.name_problem), and, when
        given, matches ``pattern`` too."""
        problem = name_problem(value)
        if problem is None and pattern is not None and not pattern.match(value):
            problem = f"{clip(value)} is not a valid {what}"
        if problem is not None:
            raise self.fail(keypath, problem, hint=f"{what}s become file and folder names: "
                            f"{ALPHABET}")
        return str(value)

    def mapping(self, value: Any, keypath: str) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(keypath, f"expected a mapping, got {kind_name(value)}")
        for k in value:
            if not isinstance(k, str):
                raise self.fail(keypath, f"key {clip(k)} must be a string (quote it in YAML)")
        return value

    def document(self, data: Any, allowed: Sequence[str], *, schema: int, what: str,
                 doc: str) -> dict[str, Any]:
        """The top mapping of a versioned YAML file: not empty, known keys only, and the
        `schema` this tool reads."""
        top = self.mapping(data, "")
        if not top:
            raise self.fail("", f"the {what} is empty", hint=f"see {doc} for the format")
        self.keys(top, allowed, "")
        found = top.get("schema", schema)
        if found != schema:
            raise self.fail("schema", f"unsupported schema {clip(found)}; this tool reads "
                            f"schema {schema}")
        return top

    def keys(self, value: dict[str, Any], allowed: Sequence[str], keypath: str) -> None:
        for key in value:
            if not isinstance(key, str):
                raise self.fail(keypath, f"key {clip(key)} must be a string (quote it in YAML)")
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"perhaps you meant {close[0]!r}?" if close else None
                allowed_list = ", ".join(allowed)
                raise self.fail(
                    _join(keypath, key),
                    f"unknown key (allowed here: {allowed_list})",
                    hint=hint,
                )

    def string(self, value: Any, keypath: str, *, pattern: re.Pattern[str] | None = None,
               what: str = "") -> str:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.fail(keypath, f"expected a string, got {kind_name(value)}")
        text = str(value)
        if pattern is not None and not pattern.match(text):
            raise self.fail(keypath, f"{clip(text)} is not a valid {what or 'value'}")
        return text

    def token(self, value: Any, keypath: str) -> str:
        text = self.string(value, keypath)
        if not SAFE_TOKEN.match(text):
            raise self.fail(
                keypath,
                f"{clip(text)} contains characters that are not allowed here "
                "(only letters, digits and _.,:=+/~@%- ; no spaces or shell metacharacters)",
                hint="each option is one list item; it is passed to the build as one argument",
            )
        return text

    def tokens(self, value: Any, keypath: str) -> tuple[str, ...]:
        if value is None:
            return ()
        if isinstance(value, str):
            raise self.fail(keypath, "expected a list of strings, got a single string",
                            hint=f"write it as a list: [{value[:60]}"
                            + ("…]" if len(value) > 60 else "]"))
        if not isinstance(value, list):
            raise self.fail(keypath, f"expected a list, got {kind_name(value)}")
        return tuple(self.token(v, f"{keypath}[{i}]") for i, v in enumerate(value))

    def strings(self, value: Any, keypath: str) -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.fail(keypath, f"expected a list, got {kind_name(value)}")
        return tuple(self.string(v, f"{keypath}[{i}]") for i, v in enumerate(value))

    def boolean(self, value: Any, keypath: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(keypath, f"expected true or false, got {kind_name(value)}")
        return value

    def posint(self, value: Any, keypath: str, *, optional: bool = True,
               maximum: int | None = None) -> int | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or \
                (maximum is not None and value > maximum):
            span = f" from 1 to {maximum}" if maximum is not None else ""
            raise self.fail(keypath, f"expected a positive whole number{span}, got "
                            f"{clip(value, 40)}")
        return value

    def source_pin(self, entry: Mapping[str, Any], keypath: str
                   ) -> tuple[str | None, tuple[str, ...]]:
        """A version entry's `sha256` (optional) and `urls` (http(s):// or file://)."""
        sha = entry.get("sha256")
        if sha is not None:
            sha = self.string(sha, f"{keypath}.sha256", pattern=SHA256,
                              what="sha256 (64 lower-case hex digits)")
        urls = self.strings(entry.get("urls"), f"{keypath}.urls")
        for i, u in enumerate(urls):
            if not re.match(r"^(https?|file)://\S+\Z", u):
                raise self.fail(f"{keypath}.urls[{i}]",
                                f"{clip(u)} is not an http(s):// or file:// URL")
        return sha, urls

    def mask_spec(self, entry: Mapping[str, Any], keypath: str
                  ) -> tuple[str | None, tuple[str, ...]]:
        """An entry's CPU mask: a literal `ia32cap` value or `disable` (capability
        names), never both."""
        cap = entry.get("ia32cap")
        if cap is not None:
            cap = self.token(cap, f"{keypath}.ia32cap")
            if not IA32CAP_VALUE.match(cap) or cap in ("", "~"):
                raise self.fail(f"{keypath}.ia32cap", f"{clip(cap)} is not an OPENSSL_ia32cap "
                                "value such as ~0x200000000000000 or :~0x20000000")
        disable = self.tokens(entry.get("disable"), f"{keypath}.disable")
        for j, name in enumerate(disable):
            if name not in IA32CAP_BITS:
                raise self.fail(f"{keypath}.disable[{j}]", f"{clip(name)} is not a capability "
                                f"this tool can mask ({', '.join(IA32CAP_BITS)})",
                                hint=choices_hint(name, list(IA32CAP_BITS)))
        if cap is not None and disable:
            raise self.fail(keypath, "give either 'ia32cap' (a literal value) or 'disable' "
                            "(capability names), not both")
        return cap, disable

    def number(self, value: Any, keypath: str) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not math.isfinite(value) or value <= 0 or value > 1e12:
            raise self.fail(keypath, f"expected a finite positive number, got {clip(value)}")
        return float(value)


def kind_name(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _join(keypath: str, key: str | int) -> str:
    return f"{keypath}.{key}" if keypath else str(key)


def load_yaml_file(ctx: CheckContext, text: str) -> Any:
    """``text`` through the limited loader (yamlload); a problem names the file."""
    try:
        return load_yaml(text)
    except YamlProblem as exc:
        if exc.message.startswith("duplicate key"):
            raise ctx.fail(exc.keypath, exc.message,
                           hint="YAML would silently keep only the last one: merge the two "
                           "entries or rename one") from None
        raise ctx.fail("", exc.message) from None


def matrix_settings(path: Path) -> Any:
    """The ``settings:`` section of the matrix file at ``path`` (None when there is no
    such file, or it cannot be read: the command that loads the matrix says why), for
    :func:`openssl_matrix.core.settings.resolve_settings`. Here, not in matrix/load.py,
    so that a command that only needs its settings (``import``) does not import the
    matrix model and its loader."""
    try:
        if not path.is_file():
            return None
        data = load_yaml_file(CheckContext(path),
                              read_bounded(path, cap=MAX_YAML_BYTES).decode("utf-8"))
    except (OSError, UnicodeDecodeError, ConfigError):
        return None
    return data.get("settings") if isinstance(data, Mapping) else None
