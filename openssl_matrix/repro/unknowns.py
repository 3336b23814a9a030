"""Settings a report does not state (``evp: unknown``): measured both ways, and the
verdict says which way it assumed.

A measurement whose method is unknown keeps ``evp: true`` (the method assumed) and gets
a twin, ``<name>@no-evp``, measured without ``-evp``; every claim that compares it gets
a twin claim, ``<id>@no-evp``, on the twins. Both are planned, measured and judged like
any other (:func:`with_twins`), so ``--check`` shows both plans; :func:`fold` then folds
each twin claim's verdict into its claim's, as a sentence saying whether the verdict
holds either way or rests on the assumption. When both sides of a claim are unknown
they are taken to share their method (one command run on both builds, as reports do).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from openssl_matrix.repro.judge import NOT_TESTABLE, ClaimResult
from openssl_matrix.repro.spec import Claim, ReportSpec

#: The suffix of a twin measurement or claim: the other method.
NO_EVP = "@no-evp"


def unknown_sides(spec: ReportSpec, claim: Claim) -> tuple[str, ...]:
    """The measurements of a claim whose method (``-evp`` or not) the report leaves open."""
    return tuple(n for n in (claim.numerator, claim.denominator)
                 if "evp" in spec.measurements[n].unknown)


def with_twins(spec: ReportSpec) -> tuple[ReportSpec, dict[str, str]]:
    """The spec with a ``@no-evp`` twin of each measurement and claim whose method is
    unknown, and the twin claims' ids mapped to their claims'. A spec without unknowns
    comes back as it is."""
    unknown = [m for m in spec.measurements.values() if "evp" in m.unknown]
    if not unknown:
        return spec, {}
    measurements = dict(spec.measurements)
    for m in unknown:
        measurements[m.name + NO_EVP] = replace(m, name=m.name + NO_EVP, evp=False)
    claims: list[Claim] = list(spec.claims)
    twins: dict[str, str] = {}
    for c in spec.claims:
        sides = unknown_sides(spec, c)
        if not sides:
            continue
        twin = replace(c, id=c.id + NO_EVP,
                       numerator=c.numerator + (NO_EVP if c.numerator in sides else ""),
                       denominator=c.denominator + (NO_EVP if c.denominator in sides else ""))
        claims.append(twin)
        twins[twin.id] = c.id
    rows = tuple(spec.measure.rows) + tuple(
        r + NO_EVP for r in spec.measure.rows if r in measurements and r + NO_EVP in
        measurements)
    return replace(spec, measurements=measurements, claims=tuple(claims),
                   measure=replace(spec.measure, rows=rows)), twins


def assumption_text(spec: ReportSpec, claim: Claim) -> str | None:
    """What ``--check`` says of a claim whose method is unknown (None when it is known)."""
    sides = unknown_sides(spec, claim)
    if not sides:
        return None
    return (f"the report does not say whether {' and '.join(sides)} ran speed with -evp: "
            "both are measured, with and without -evp; the verdict assumes -evp and says "
            "whether it holds without")


def fold(results: Sequence[ClaimResult], twins: Mapping[str, str]) -> list[ClaimResult]:
    """The claims' results with each twin's verdict folded into its claim's ``method``."""
    if not twins:
        return list(results)
    by_id = {r.claim.id: r for r in results}
    out: list[ClaimResult] = []
    for r in results:
        if r.claim.id in twins:
            continue
        twin = next((by_id[t] for t, c in twins.items() if c == r.claim.id), None)
        if twin is not None:
            r.method = _method_sentence(r, twin)
        out.append(r)
    return out


def _ours_text(r: ClaimResult) -> str:
    values = [b.ours for b in r.blocks if b.ours is not None]
    return f" (ours {values[-1]:.2f}× at the last size)" if values else \
        (f" ({r.reason})" if r.reason else "")


def _method_sentence(r: ClaimResult, twin: ClaimResult) -> str:
    """Whether the verdict holds both ways, or what it would be without -evp."""
    head = "the report does not say whether speed ran with -evp; "
    if twin.verdict == r.verdict == NOT_TESTABLE:
        return head + "it is not testable here either way"
    if twin.verdict == r.verdict:
        return (head + f"measured both ways, the claim is {r.verdict} either way "
                f"(with -evp{_ours_text(r)}; without{_ours_text(twin)})")
    return (head + f"this verdict assumes it did: with -evp it is {r.verdict}"
            f"{_ours_text(r)}, without -evp {twin.verdict}{_ours_text(twin)}")
