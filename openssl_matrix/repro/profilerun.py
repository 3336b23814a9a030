"""Reproduce, after measuring: the claims that ask where their ratio comes from
(``profile: true``, ``repro/profileclaim.py``) profiled on both sides and compared, by
the code ``invoke matrix profile --compare`` runs (``measure/profiling.py``).

Each side's cell is resolved in the reproduction's own suite on the variant that measured
it, profiled in that variant's profile image (filed under ``_profiles/<variant>/...``
like any profile), and the two are compared (``_profiles/compare/...``). The record the
verdict carries names the comparison's top rows. A side that was not measured, or a
profile that fails, leaves the claim's verdict as it is, with the reason in the record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from openssl_matrix.core import log
from openssl_matrix.core.errors import FatalError
from openssl_matrix.engine.backend import Backend
from openssl_matrix.engine.engineinfo import EngineInfo
from openssl_matrix.matrix.model import Matrix, Variant
from openssl_matrix.measure.perfrun import Cell
from openssl_matrix.measure.profilecell import resolve
from openssl_matrix.measure.profiling import Compared, Profiled, compare_profiled, profile_variant
from openssl_matrix.repro.plan import PlannedMeasurement
from openssl_matrix.repro.profileclaim import TOP_ROWS, cells, seconds
from openssl_matrix.repro.spec import Claim, ReportSpec
from openssl_matrix.results.tree import ResultsTree


def side(name: str, variant: str, p: Profiled) -> dict[str, Any]:
    return {"measurement": name, "variant": variant, "profile": str(p.folder),
            "status": p.run.status, "ns_per_op": p.run.ns_per_op,
            "samples": len(p.run.samples), "operations": p.run.operations}


def comparison_record(claim: Claim, cell: Cell, a: dict[str, Any], b: dict[str, Any],
                      cmp: Compared) -> dict[str, Any]:
    """What the verdict carries: both sides (A the claim's second measurement, B its first),
    the gap, the explained share and the top rows of the comparison with their share of
    the gap."""
    gap = cmp.diff.gap_ns

    def row(r: Any) -> dict[str, Any]:
        return {"name": r.name, "a_ns_per_op": r.a_ns, "b_ns_per_op": r.b_ns,
                "diff_ns_per_op": r.diff_ns, "diff_sd_ns_per_op": cmp.diff.sd(r.name),
                "share_of_gap": r.diff_ns / gap if gap else None}

    return {"claim": claim.id, "cell": cell.label, "unit": cell.unit, "a": a, "b": b,
            "gap_ns_per_op": gap, "explained_share": cmp.share,
            "top": [row(r) for r in cmp.diff.functions[:TOP_ROWS]],
            "libraries": [row(r) for r in cmp.diff.libraries],
            "folder": str(cmp.folder)}


def _variant(m: Matrix, vid: str | None) -> Variant:
    found = [v for v in m.variants if v.id == vid]
    if not found:
        raise FatalError(f"no variant {vid} in the reproduction's matrix")
    return found[0]


def _cell(m: Matrix, v: Variant, suite: str | None, text: str, secs: int) -> Cell:
    found = [s for s in m.suites if s.name == suite]
    if not found:
        raise FatalError(f"no suite {suite} in the reproduction's matrix")
    return resolve(found[0], text, v.version.version, (*v.version.configure, *v.configure),
                   secs)


def profile_claim(spec: ReportSpec, claim: Claim, m: Matrix, backend: Backend,
                  tree: ResultsTree,
                  planned: Mapping[str, PlannedMeasurement],
                  engine: Mapping[str, Any]) -> dict[str, Any]:
    """Profile both sides of one claim and compare them; the record (or why not)."""
    names = (claim.denominator, claim.numerator)  # A, B
    for n in names:
        if planned[n].variant is None or planned[n].problem or planned[n].skipped:
            return {"claim": claim.id, "error": f"{n} was not measured here"}
    texts = dict(zip((claim.numerator, claim.denominator), cells(spec, claim), strict=True))
    variants = [_variant(m, planned[n].variant) for n in names]
    sides = [_cell(m, v, planned[n].suite, texts[n], seconds(spec))
             for n, v in zip(names, variants, strict=True)]
    done = [profile_variant(tree, backend, v, c, EngineInfo.of(engine))
            for v, c in zip(variants, sides, strict=True)]
    labels = [v.id for v in variants] if variants[0].id != variants[1].id else list(names)
    cell = sides[0] if sides[0].name == sides[1].name else \
        replace(sides[0], name=f"{sides[0].name}-{sides[1].name}")
    cmp = compare_profiled(tree, cell, labels[0], done[0], labels[1], done[1])
    return comparison_record(claim, cell, side(names[0], variants[0].id, done[0]),
                             side(names[1], variants[1].id, done[1]), cmp)


def profile_claims(spec: ReportSpec, m: Matrix, backend: Backend, tree: ResultsTree,
                   planned: Mapping[str, PlannedMeasurement], engine: Mapping[str, Any],
                   warnings: list[str]) -> dict[str, dict[str, Any]]:
    """Every ``profile: true`` claim's record, by claim id; a failure is its record's
    ``error`` and a warning, never the reproduction's end."""
    out: dict[str, dict[str, Any]] = {}
    for claim in spec.claims:
        if not claim.profile:
            continue
        try:
            with log.step(f"profile both sides of claim {claim.id}"):
                out[claim.id] = profile_claim(spec, claim, m, backend, tree, planned, engine)
        except FatalError as exc:
            out[claim.id] = {"claim": claim.id, "error": exc.message}
        if out[claim.id].get("error"):
            warnings.append(f"claim {claim.id}: not profiled: {out[claim.id]['error']}")
    return out
