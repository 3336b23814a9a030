"""The command line's settings: its ``--matrix`` and ``--results`` flags resolved once with
the environment and the matrix file's ``settings:`` (core/settings.py has the rule)."""

from __future__ import annotations

from pathlib import Path

from openssl_matrix.core.outputs import refuse_path_through_file
from openssl_matrix.core.settings import Settings, resolve_settings
from openssl_matrix.matrix.check import matrix_settings
from openssl_matrix.results.tree import ResultsTree


def settings_of(matrix: str | None, results: str | None = None) -> Settings:
    """The settings for a command given ``--matrix`` and ``--results`` (empty: unset)."""
    return resolve_settings({"matrix": matrix, "results": results},
                            read_matrix=matrix_settings)


def matrix_path(matrix: str | None) -> Path:
    """The matrix file a command uses (the flag, then the environment: the file itself is
    not read to find it)."""
    return resolve_settings({"matrix": matrix}).matrix


def results_root(matrix: str | None, results: str | None) -> Path:
    """The results tree a command uses."""
    return settings_of(matrix, results).results


def results_tree(results: str, matrix: str | None = None) -> ResultsTree:
    """The results tree a command writes or reads (``--results`` below a file: exit 11)."""
    settings = settings_of(matrix, results)
    origin = settings.origin("results")  # the flag, the variable or the matrix's key
    where = "--results" if origin in ("default", "flag --results") else origin
    refuse_path_through_file(settings.results, where)  # results/ below a file: exit 11
    return ResultsTree(settings.results)
