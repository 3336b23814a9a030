"""The status vocabulary of core/statuses.py: the words that let a figure into a median
are words the parser or a guard writes, a disturbed figure's word is never one, the guards
rank every word they write, and no other module defines a status word again."""

from __future__ import annotations

import ast
from pathlib import Path

from openssl_matrix.core import statuses
from openssl_matrix.core.statuses import USABLE_STATUSES
from openssl_matrix.measure import guards
from openssl_matrix.parse import figures

PACKAGE = Path(__file__).resolve().parents[2] / "openssl_matrix"

#: The guards' words (measure/guards.py writes them as ``Finding.code``).
GUARD_WORDS = (statuses.ENGINE_NOT_ENGAGED, statuses.ENGINE_UNVERIFIED, statuses.TIME_BASIS,
               statuses.LEGACY_PATH, statuses.MASK_NOT_APPLIED, statuses.MASK_OVERREACH,
               statuses.CANNOT_RUN, statuses.NOISY, statuses.CONTENDED, statuses.SHARED_CORE)


def _words() -> dict[str, str]:
    """Every status word core/statuses.py spells, by value: its constant's name."""
    return {value: name for name, value in vars(statuses).items()
            if name.isupper() and isinstance(value, str)}


def test_every_usable_status_is_written_by_the_parser_or_a_guard() -> None:
    written = {figures.STATUS_OK, figures.STATUS_IMPRECISE,
               statuses.LEGACY_PATH, statuses.NOISY, statuses.TIME_BASIS}
    assert set(USABLE_STATUSES) == written


def test_disturbed_and_unreadable_figures_stay_out_of_medians() -> None:
    out = (*statuses.DISTURBED, statuses.ENGINE_NOT_ENGAGED, statuses.MASK_NOT_APPLIED,
           statuses.MASK_OVERREACH, figures.STATUS_UNPARSABLE, figures.STATUS_IMPOSSIBLE,
           figures.STATUS_SUSPECT_TIME_BASIS)
    assert not set(out) & set(USABLE_STATUSES)


def test_the_guards_rank_every_word_they_write() -> None:
    assert set(guards.PRIORITY) == set(GUARD_WORDS)
    assert len(set(GUARD_WORDS)) == len(GUARD_WORDS)
    assert set(statuses.DISTURBED) <= set(GUARD_WORDS)


def test_no_other_module_defines_a_status_word() -> None:
    """A module-level constant whose value is a status word, outside core/statuses.py, is
    a second spelling: the readers would take it from there again."""
    words = _words()
    assert len(words) == 13  # the guards' ten and the TLS suite's three
    again = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "core" / "statuses.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) \
                    and isinstance(node.value, ast.Constant) and node.value.value in words:
                again.append(f"{path.relative_to(PACKAGE)}:{node.lineno} "
                             f"{node.value.value!r} (core.statuses.{words[node.value.value]})")
    assert again == []
