"""The tool's settings, resolved once: flags, then the environment, then the matrix's
``settings:`` section, then the defaults.

Every setting a command reads from outside its own flags lives here: where the matrix
file and the results tree are, the cache folder (source tarballs, the compiled clock
probe, crash logs, engine locks when the machine-wide folder cannot be written), the
lock folder, the GnuPG keyring that checks release signatures and whether containers are
kept after a run for debugging. The command line resolves them once
(:func:`resolve_settings`) and passes the result down; code that runs without a command
line (a test, a library caller) gets the same rule from :func:`environment_settings`.
This module is the only one in the package that reads the process environment for a
setting (engine names keep Docker's own variables: ``DOCKER_HOST``, ``DOCKER_CONTEXT``).

Which source gave each value is kept (:attr:`Settings.origins`), so a message can say
why a folder was used.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.core.names import clip

#: The cache folder's name under ``$XDG_CACHE_HOME`` or ``~/.cache``.
CACHE_NAME = "openssl-matrix"

#: The environment variable of each setting (``XDG_CACHE_HOME`` is read for the cache
#: folder after ``OPENSSL_MATRIX_CACHE``, as the XDG base-directory spec says).
ENVIRONMENT: Mapping[str, str] = {
    "matrix": "OPENSSL_MATRIX_FILE",
    "results": "OPENSSL_MATRIX_RESULTS",
    "cache": "OPENSSL_MATRIX_CACHE",
    "lock_dir": "OPENSSL_MATRIX_LOCK_DIR",
    "gpg_keyring": "OPENSSL_MATRIX_GPG_KEYRING",
    "keep_containers": "OPENSSL_MATRIX_KEEP_CONTAINERS",
}
XDG_CACHE = "XDG_CACHE_HOME"

#: What a matrix file's ``settings:`` may set (a path relative to the matrix's folder).
#: The cache, lock folder, keyring and container keeping belong to the host and its user,
#: not to a matrix: they come from the environment only.
MATRIX_KEYS = ("results",)

#: The defaults of the paths a command takes as flags.
DEFAULT_MATRIX = "matrix.yaml"
DEFAULT_RESULTS = "results"

#: Values of a yes/no variable that mean no (anything else set means yes).
_NO = ("", "0", "no", "false", "off")


@dataclass(frozen=True)
class Settings:
    """Every setting, resolved; ``origins`` names the source of each (``flag --results``,
    ``environment OPENSSL_MATRIX_RESULTS``, ``matrix settings.results``, ``default``)."""

    matrix: Path
    results: Path
    cache: Path
    lock_dir: Path | None = None
    gpg_keyring: Path | None = None
    keep_containers: bool = False
    origins: Mapping[str, str] = field(default_factory=dict, compare=False)

    def origin(self, name: str) -> str:
        return self.origins.get(name, "default")


def check_matrix_settings(value: Any, where: str = DEFAULT_MATRIX) -> dict[str, str]:
    """A matrix file's ``settings:`` section as a mapping of its keys to their text, or
    ConfigError naming the key path."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: settings: expected a mapping such as "
                          "{results: lab-results}, got "
                          f"{clip(repr(value), 60)}", hint="see docs/matrix.md, 'Settings'")
    out: dict[str, str] = {}
    for key, item in value.items():
        if key not in MATRIX_KEYS:
            shown = key if isinstance(key, str) and key.isidentifier() and len(key) <= 40 \
                else clip(repr(key), 40)
            raise ConfigError(f"{where}: settings.{shown}: not a setting a "
                              "matrix can hold", hint="it may hold: " + ", ".join(MATRIX_KEYS)
                              + " (see docs/matrix.md, 'Settings')")
        if not isinstance(item, str) or not item.strip() or "\x00" in item:
            raise ConfigError(f"{where}: settings.{key}: expected a folder path, got "
                              f"{clip(repr(item), 60)}")
        out[str(key)] = item
    return out


def resolve_settings(flags: Mapping[str, Any] | None = None,
                     environ: Mapping[str, str] | None = None,
                     matrix_settings: Mapping[str, Any] | None = None, *,
                     read_matrix: Callable[[Path], Any] | None = None,
                     home: Path | None = None) -> Settings:
    """The settings from ``flags`` (``matrix``, ``results``; an empty or missing flag is
    unset), then ``environ`` (the process environment when None), then the matrix's
    ``settings:`` (a relative path is taken from the matrix file's folder), then the
    defaults. ``read_matrix``, given the matrix file's path once it is known, returns its
    ``settings:`` section (for a command that reads no other part of the matrix); ``home``
    stands for the user's home folder (a test names one)."""
    given = flags or {}
    env = os.environ if environ is None else environ
    origins: dict[str, str] = {}

    def pick(name: str, default: str) -> str:
        value = given.get(name)
        if value not in (None, ""):
            origins[name] = f"flag --{name}"
            return str(value)
        if env.get(ENVIRONMENT[name]):
            origins[name] = f"environment {ENVIRONMENT[name]}"
            return env[ENVIRONMENT[name]]
        return default

    matrix = Path(pick("matrix", DEFAULT_MATRIX))
    if matrix_settings is None and read_matrix is not None:
        matrix_settings = read_matrix(matrix)
    from_matrix = check_matrix_settings(matrix_settings, str(matrix))

    def beside_matrix(name: str, fallback: Path) -> Path:
        if name in origins:
            return fallback
        if name in from_matrix:
            origins[name] = f"matrix settings.{name}"
            path = Path(from_matrix[name]).expanduser()
            return path if path.is_absolute() else matrix.parent / path
        return fallback

    results = beside_matrix("results", Path(pick("results", DEFAULT_RESULTS)))
    explicit_cache = env.get(ENVIRONMENT["cache"])
    if explicit_cache:
        origins["cache"] = f"environment {ENVIRONMENT['cache']}"
    cache = (Path(explicit_cache).expanduser() if explicit_cache
             else _default_cache(env, home))
    lock = env.get(ENVIRONMENT["lock_dir"])
    keyring = env.get(ENVIRONMENT["gpg_keyring"])
    for name, value in (("lock_dir", lock), ("gpg_keyring", keyring)):
        if value:
            origins[name] = f"environment {ENVIRONMENT[name]}"
    keep = env.get(ENVIRONMENT["keep_containers"], "").strip().lower() not in _NO
    if keep:
        origins["keep_containers"] = f"environment {ENVIRONMENT['keep_containers']}"
    return Settings(matrix=matrix, results=results, cache=cache,
                    lock_dir=Path(lock) if lock else None,
                    gpg_keyring=Path(keyring).resolve() if keyring else None,
                    keep_containers=keep, origins=origins)


def _default_cache(env: Mapping[str, str], home: Path | None) -> Path:
    """``$XDG_CACHE_HOME/openssl-matrix`` (an absolute one: a relative value is ignored,
    as the XDG base-directory spec says), else ``~/.cache/openssl-matrix``."""
    xdg = env.get(XDG_CACHE)
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / CACHE_NAME
    return (home if home is not None else Path.home()) / ".cache" / CACHE_NAME


def environment_settings() -> Settings:
    """The settings without flags or a matrix: the environment, then the defaults (what
    code called outside a command uses, e.g. the cache folder of a library caller)."""
    return resolve_settings()
