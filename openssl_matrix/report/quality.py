"""The report's measurement-quality panel: what the figures behind every table say about
themselves, for every kind of figure in the tree.

Three kinds of figure, each in its own unit: bulk ciphers and hashes (bytes/s, shown in
MB/s; imported reports' transcribed figures included), public-key operations (``kind:
pkey`` suites, ops/s) and TLS handshakes (``kind: tls``, connections/s). Only counts are
added up across kinds, never values. Per kind the panel says:

* the figures: ok, flagged but kept in the medians (the statuses of
  ``core.statuses.USABLE_STATUSES``: noisy, legacy-path ...), flagged and kept out (contended,
  engine-not-engaged, mask-not-applied ..., and ``impossible``: also those at a block
  size no table can show), and how many of those were contended;
* the cells of its tables (every block size of a bulk table, every row and version of a
  public-key or handshake table): how many rest on two or more usable samples and carry
  a 95 % interval, how many on one sample (no interval can be given; a published
  report's transcribed figures count here too), and how many have no usable figure (the
  page shows those grey, never as a median).

Per status, the figures of each kind and the runs they came from, each linked to the
run's figures file. The page (``templates/report.html.j2``), the terminal
(``Quality.lines``) and ``data/report.json`` (``Quality.to_json``) show the same counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openssl_matrix.core.stats import estimate
from openssl_matrix.core.statuses import CONTENDED, USABLE_STATUSES
from openssl_matrix.matrix.kinds import KINDS as SUITE_KINDS
from openssl_matrix.report.ops import ops_tables
from openssl_matrix.report.types import group_observations
from openssl_matrix.report.view import RunLike, href, run_folder
from openssl_matrix.results import records

if TYPE_CHECKING:
    from openssl_matrix.report.ops import OpsObservation
    from openssl_matrix.report.types import LeftOut, Observation

#: The panel's kind of the bulk figures (bytes per second), named with its unit.
BULK = {"bulk": "bulk ciphers and hashes (MB/s)"}


def panel_kinds() -> dict[str, str]:
    """The kinds in the order the panel lists them, each named with its unit: the bulk
    figures, then each suite kind with a label of its own (its table of operations)."""
    return {**BULK, **{k.name: k.panel_label for k in SUITE_KINDS.values()
                       if k.panel_label is not None}}


@dataclass
class KindCounts:
    """The figures and table cells of one kind."""

    kind: str
    figures: int = 0
    ok: int = 0
    flagged_in_medians: int = 0
    flagged_out: int = 0
    contended: int = 0
    cells: int = 0
    with_interval: int = 0
    one_sample: int = 0
    no_usable: int = 0
    #: usable samples left out of their cell's median: more than 5 % below its best
    below_best: int = 0

    @property
    def label(self) -> str:
        return panel_kinds()[self.kind]

    def line(self) -> str:
        """``bulk ciphers and hashes (MB/s): 48 figure(s): 47 ok, 1 flagged ...``."""
        flagged = self.flagged_in_medians + self.flagged_out
        return (f"{self.label}: {self.figures} figure(s): {self.ok} ok, {flagged} flagged"
                + (f" ({self.flagged_in_medians} kept in the medians, {self.flagged_out} "
                   f"kept out, {self.contended} of them contended)" if flagged else "")
                + f"; {self.cells} table cell(s): {self.with_interval} with a 95 % interval "
                f"(n ≥ 2), {self.one_sample} on one sample (no interval), {self.no_usable} "
                "with no usable figure"
                + (f"; {self.below_best} sample(s) more than 5 % below their cell's best "
                   "left out of the medians (shared-core by value, docs/noise.md)"
                   if self.below_best else ""))

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "label": self.label, "figures": self.figures,
                "ok": self.ok, "flagged_in_medians": self.flagged_in_medians,
                "flagged_out_of_medians": self.flagged_out, "contended": self.contended,
                "cells": self.cells, "cells_with_interval": self.with_interval,
                "cells_one_sample": self.one_sample, "cells_no_usable_figure": self.no_usable,
                "below_best_out_of_medians": self.below_best}


@dataclass
class StatusRow:
    """The flagged figures of one status: how many of each kind, and their runs."""

    status: str
    in_medians: bool
    by_kind: dict[str, int] = field(default_factory=dict)
    runs: dict[str, dict[str, tuple[str, int]]] = field(default_factory=dict)
    """``variant/suite`` -> run -> (link to its figures file, figures of this status)."""

    @property
    def count(self) -> int:
        return sum(self.by_kind.values())

    @property
    def kinds_text(self) -> str:
        """``2 bulk, 4 tls``."""
        return ", ".join(f"{self.by_kind[k]} {k}" for k in panel_kinds()
                         if self.by_kind.get(k))


@dataclass
class Quality:
    kinds: list[KindCounts]
    statuses: list[StatusRow]

    @property
    def total(self) -> int:
        return sum(k.figures for k in self.kinds)

    @property
    def flagged(self) -> int:
        return sum(r.count for r in self.statuses)

    @property
    def out_of_medians(self) -> int:
        return sum(r.count for r in self.statuses if not r.in_medians)

    def lines(self) -> list[str]:
        """The terminal's panel (``invoke matrix report``)."""
        if not self.total:
            return []
        out = [f"Measurement quality: {self.total} figure(s), {self.flagged} flagged, "
               f"{self.out_of_medians} of them kept out of the medians; per kind (each in "
               "its own unit):"]
        out += [f"  {k.line()}" for k in self.kinds]
        out += [f"  flagged {r.status}: {r.count} figure(s) ({r.kinds_text}), "
                + ("kept in the medians" if r.in_medians else "kept out of the medians")
                for r in self.statuses]
        return [*out, ""]

    def to_json(self) -> dict[str, Any]:
        return {"figures": self.total, "flagged": self.flagged,
                "out_of_medians": self.out_of_medians,
                "kinds": [k.to_json() for k in self.kinds],
                "statuses": [{"status": r.status, "figures": r.count, "by_kind": r.by_kind,
                              "in_medians": r.in_medians,
                              "runs": sorted(f"{cell}/{run}" for cell, runs in r.runs.items()
                                             for run in runs)}
                             for r in self.statuses]}

    def view(self) -> dict[str, Any]:
        """What the page's panel lays out."""
        return {"total": self.total, "flagged": self.flagged,
                "ok": sum(k.ok for k in self.kinds), "out_of_medians": self.out_of_medians,
                "kinds": self.kinds,
                "rows": [{"status": r.status, "count": r.count, "by_kind": r.kinds_text,
                          "in_medians": r.in_medians,
                          "cells": [{"name": name,
                                     "runs": [{"name": run, "href": link, "count": n}
                                              for run, (link, n) in sorted(runs.items())]}
                                    for name, runs in sorted(r.runs.items())]}
                         for r in self.statuses]}


def _figure(counts: KindCounts, rows: dict[str, StatusRow], o: RunLike, status: str,
            usable_statuses: Sequence[str]) -> None:
    counts.figures += 1
    if status == "ok":
        counts.ok += 1
        return
    in_medians = status in usable_statuses
    if in_medians:
        counts.flagged_in_medians += 1
    else:
        counts.flagged_out += 1
    counts.contended += status == CONTENDED
    row = rows.setdefault(status, StatusRow(status, in_medians))
    row.by_kind[counts.kind] = row.by_kind.get(counts.kind, 0) + 1
    runs = row.runs.setdefault(f"{o.variant}/{o.suite}", {})
    link, n = runs.get(o.run, (href(f"{run_folder(o)}/{records.FIGURES}"), 0))
    runs[o.run] = (link, n + 1)


def _cell(counts: KindCounts, usable: int, interval: bool) -> None:
    counts.cells += 1
    if interval:
        counts.with_interval += 1
    elif usable:
        counts.one_sample += 1
    else:
        counts.no_usable += 1


def quality(obs: Sequence[Observation], ops: Sequence[OpsObservation],
            left_out: Sequence[LeftOut] = ()) -> Quality:
    """The panel over the bulk figures ``obs`` and the public-key and handshake figures
    ``ops`` (pure: the tables' cells are grouped here as the tables group them), and the
    bulk figures ``left_out`` of every table for an impossible block size (counted, as
    flagged and kept out of the medians: never silently missing from the count)."""
    kinds = {k: KindCounts(k) for k in panel_kinds()}
    rows: dict[str, StatusRow] = {}
    for o in obs:
        _figure(kinds["bulk"], rows, o, o.status, USABLE_STATUSES)
    for x in left_out:
        _figure(kinds["bulk"], rows, x, x.status, USABLE_STATUSES)
    for p in ops:
        _figure(kinds[p.kind], rows, p, p.status, USABLE_STATUSES)
    for g in group_observations(obs):
        for cell in g.cells.values():
            e = cell.estimate
            _cell(kinds["bulk"], len(cell.ok_values), e is not None and e.half_width is not None)
            kinds["bulk"].below_best += cell.below_best_values
    for t in ops_tables(ops):
        for (row, column) in t.cells:
            e = estimate(t.values(row, column))
            _cell(kinds[t.kind], len(t.values(row, column)),
                  e is not None and e.half_width is not None)
    return Quality([k for k in kinds.values() if k.figures],
                   sorted(rows.values(), key=lambda r: (-r.count, r.status)))
