"""The status vocabulary of core/statuses.py: the words that let a figure into a median
are words the parser or a guard writes, and a disturbed figure's word is never one."""

from __future__ import annotations

from openssl_matrix.core.statuses import USABLE_STATUSES
from openssl_matrix.measure import guards
from openssl_matrix.parse import figures


def test_every_usable_status_is_written_by_the_parser_or_a_guard() -> None:
    written = {figures.STATUS_OK, figures.STATUS_IMPRECISE,
               guards.LEGACY_PATH, guards.NOISY, guards.TIME_BASIS}
    assert set(USABLE_STATUSES) == written


def test_disturbed_and_unreadable_figures_stay_out_of_medians() -> None:
    out = (*guards.DISTURBED, guards.ENGINE_NOT_ENGAGED, guards.MASK_NOT_APPLIED,
           guards.MASK_OVERREACH, figures.STATUS_UNPARSABLE, figures.STATUS_IMPOSSIBLE,
           figures.STATUS_SUSPECT_TIME_BASIS)
    assert not set(out) & set(USABLE_STATUSES)
