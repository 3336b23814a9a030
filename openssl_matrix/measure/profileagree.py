"""Two profiles of one variant and cell, taken apart: do they agree?

Issue 32 asks that two profiles of the same cell agree on the top 10 functions' time per
operation within their stated uncertainty. :func:`agreement` is that check, pure: for the
top functions (by the mean of the two profiles' ns per operation) it gives both values,
the difference (second − first), the combined counting uncertainty
``sqrt(sd1² + sd2²)`` (each side's Poisson ±1σ, :func:`profilestore.sampling_sd`) and
whether the difference is within ``k`` (2) of it.

The overall verdict: ``agree`` when every row is within 2σ; ``marginal`` when one or more
is beyond 2σ but none beyond 3σ (with ten rows and counting noise alone, at least one
beyond 2σ happens about one time in three: 1 − 0.954¹⁰); ``disagree`` when a row is
beyond 3σ (by counting alone about one time in 37). The uncertainty is the samples'
own, not the host's: on a busy host two runs differ by more than counting explains, and
a ``disagree`` there says so.

``invoke matrix profile --only VARIANT ... --agree`` profiles the cell twice and files
``agree.json`` and ``agree.txt`` under ``_profiles/<variant>/<cell>/agree/<NNNN>/``,
beside the two profiles' own numbered folders (the readers of profiles take only
numbered folders, so this one is not mistaken for a profile).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from openssl_matrix.core.clock import now as _now
from openssl_matrix.core.files import atomic_write, write_json
from openssl_matrix.measure.perfrun import Cell, ProfileRun
from openssl_matrix.measure.profilestore import functions_per_op, sampling_sd
from openssl_matrix.results.tree import ResultsTree

TOP = 10
#: A row agrees when its difference is within this many combined standard deviations.
K = 2.0
#: Beyond this many, a row disagrees outright (the verdict ``disagree``).
K_OUT = 3.0
AGREE, MARGINAL, DISAGREE = "agree", "marginal", "disagree"


@dataclass(frozen=True)
class AgreeRow:
    """One function in both profiles: ns per operation and its 1σ counting uncertainty."""

    name: str
    first_ns: float
    second_ns: float
    first_sd: float
    second_sd: float

    @property
    def diff_ns(self) -> float:
        return self.second_ns - self.first_ns

    @property
    def sd_ns(self) -> float:
        """The combined 1σ of the difference: sqrt(sd1² + sd2²)."""
        return math.hypot(self.first_sd, self.second_sd)

    @property
    def sigmas(self) -> float:
        """|difference| in combined standard deviations (inf: a difference with none)."""
        if self.sd_ns > 0:
            return abs(self.diff_ns) / self.sd_ns
        return 0.0 if self.diff_ns == 0 else math.inf

    def within(self, k: float = K) -> bool:
        return self.sigmas <= k


@dataclass(frozen=True)
class Agreement:
    rows: list[AgreeRow]
    k: float = K

    @property
    def beyond(self) -> int:
        """How many rows differ by more than ``k`` σ."""
        return sum(not r.within(self.k) for r in self.rows)

    @property
    def verdict(self) -> str:
        if not self.rows:
            return DISAGREE  # nothing sampled to compare: no agreement shown
        if self.beyond == 0:
            return AGREE
        return MARGINAL if all(r.within(K_OUT) for r in self.rows) else DISAGREE


def agreement(first_ns: Mapping[str, float], first_sd: Mapping[str, float],
              second_ns: Mapping[str, float], second_sd: Mapping[str, float], *,
              top: int = TOP, k: float = K) -> Agreement:
    """The top ``top`` functions by the mean of the two profiles' ns per operation (a
    function one profile lacks counts 0 there, with no uncertainty of its own), each with
    both values, their difference and its combined uncertainty."""
    names = set(first_ns) | set(second_ns)
    ranked = sorted(names, key=lambda n: (-(first_ns.get(n, 0.0) + second_ns.get(n, 0.0)),
                                          n))[:top]
    return Agreement([AgreeRow(n, first_ns.get(n, 0.0), second_ns.get(n, 0.0),
                               first_sd.get(n, 0.0), second_sd.get(n, 0.0)) for n in ranked],
                     k)


def agreement_of(first: ProfileRun, second: ProfileRun, *, top: int = TOP,
                 k: float = K) -> Agreement:
    """:func:`agreement` of two profiled runs, per ``function (library)``."""
    return agreement(functions_per_op(first), sampling_sd(first),
                     functions_per_op(second), sampling_sd(second), top=top, k=k)


class AgreeRowRecord(TypedDict):
    """One function of two profiles' agreement as the record files it."""

    name: str
    first_ns_per_op: float
    second_ns_per_op: float
    diff_ns_per_op: float
    first_sd_ns_per_op: float
    second_sd_ns_per_op: float
    combined_sd_ns_per_op: float
    sigmas: float | None
    within: bool


def _row(r: AgreeRow, k: float) -> AgreeRowRecord:
    return {"name": r.name, "first_ns_per_op": round(r.first_ns, 4),
            "second_ns_per_op": round(r.second_ns, 4), "diff_ns_per_op": round(r.diff_ns, 4),
            "first_sd_ns_per_op": round(r.first_sd, 4),
            "second_sd_ns_per_op": round(r.second_sd, 4),
            "combined_sd_ns_per_op": round(r.sd_ns, 4),
            "sigmas": None if math.isinf(r.sigmas) else round(r.sigmas, 3),
            "within": r.within(k)}


def table(ag: Agreement, variant: str, cell: str, first: ProfileRun,
          second: ProfileRun) -> str:
    """The agreement as printed: one row per function, then the verdict."""
    width = max([len("function"), *(len(r.name) for r in ag.rows)])
    out = [f"{variant} {cell}: two profiles taken apart: first {first.ns_per_op:.1f} ns/op "
           f"measured ({len(first.samples)} samples, {first.status}), second "
           f"{second.ns_per_op:.1f} ({len(second.samples)} samples, {second.status})", "",
           f"{'function':<{width}}  {'first':>10}  {'second':>10}  {'2nd − 1st':>10}  "
           f"{'±1σ':>8}  {'σ':>5}  within {ag.k:g}σ"]
    for r in ag.rows:
        sig = "inf" if math.isinf(r.sigmas) else f"{r.sigmas:.2f}"
        out.append(f"{r.name:<{width}}  {r.first_ns:10.2f}  {r.second_ns:10.2f}  "
                   f"{r.diff_ns:+10.2f}  {r.sd_ns:8.2f}  {sig:>5}  "
                   f"{'yes' if r.within(ag.k) else 'NO'}")
    rule = {"agree": f"every row within {ag.k:g}σ",
            "marginal": f"some beyond {ag.k:g}σ, none beyond {K_OUT:g}σ"}.get(
                ag.verdict, f"one or more beyond {K_OUT:g}σ, or nothing sampled")
    out += ["", f"verdict: {ag.verdict} ({len(ag.rows) - ag.beyond} of {len(ag.rows)} "
            f"within {ag.k:g}σ; {ag.verdict}: {rule})",
            "(ns per operation; ±1σ: the two profiles' sample counts' combined uncertainty, "
            "not the host's noise)"]
    return "\n".join(out) + "\n"


def file_agreement(tree: ResultsTree, variant: str, cell: Cell, ag: Agreement, first: ProfileRun,
                   second: ProfileRun, folders: tuple[Path, Path]) -> tuple[Path, str]:
    """Write agree.json and agree.txt beside the cell's profiles; the folder and table."""
    folder = tree.new_profile_dir(variant, cell.name, "agree")
    text = table(ag, variant, cell.name, first, second)
    atomic_write(folder / "agree.txt", text)
    write_json(folder / "agree.json", {
        "kind": "profile-agree", "schema": 1, "variant": variant, "cell": cell.name,
        "first_profile": str(folders[0]), "second_profile": str(folders[1]),
        "first_status": first.status, "second_status": second.status,
        "first_ns_per_op": first.ns_per_op, "second_ns_per_op": second.ns_per_op,
        "first_samples": len(first.samples), "second_samples": len(second.samples),
        "k_sigma": ag.k, "verdict": ag.verdict, "beyond": ag.beyond,
        "functions": [_row(r, ag.k) for r in ag.rows], "recorded": _now()})
    return folder, text
