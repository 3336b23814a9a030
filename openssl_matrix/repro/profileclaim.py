"""A claim that asks *where* its ratio comes from: ``profile: true`` (issue 32, item 5).

After measuring, ``reproduce`` profiles the cell of both sides of such a claim (the same
code as ``invoke matrix profile --compare``: ``measure/profiling.py``) and the verdict
names the top functions behind the ratio. This module is the part that needs no Docker:
which claims can be profiled (a refusal says why, at load), the cell each side is
profiled as (named as ``profile --suite/--cell`` names it), the lines ``--check`` prints
and the verdict's lines from a filed comparison's record (``repro/profilerun.py`` runs
the profiles and builds that record).

The comparison's A is the claim's *second* measurement (the denominator) and B its
first, so the gap (B − A, ns per operation) is the extra time per operation the first
side spends: a claim "3.0 decodes 30× slower than 1.1.1" compares [v30, v111] and its
profile says which functions 3.0 spends the extra time in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openssl_matrix.matrix.kinds.base import (
    FIGURES_BLOCKS,
    FIGURES_HANDSHAKES,
    FIGURES_OPERATIONS,
    FIGURES_THREADS,
)
from openssl_matrix.parse.algorithms import speed_argument
from openssl_matrix.repro.spec import UNKNOWN, Claim, Measurement, ReportSpec

#: How long each side's profiled run lasts, at least (``measure.seconds`` if longer): at
#: 999 Hz, 3 s give about 3,000 samples (a function with n samples: about 1/√n).
PROFILE_SECONDS = 3
#: Rows of the differential table the verdict names.
TOP_ROWS = 5
#: Where the format is documented (refusals point there).
DOC = "docs/reports.md#claims-that-ask-where-profile"


def profile_problem(num: Measurement, den: Measurement, blocks: tuple[int, ...] | None,
                    trend: bool) -> str | None:
    """Why a claim's two sides cannot be profiled and compared function by function, or
    None when they can."""
    if num.machine != den.machine:
        return ("the claim compares two machines: profiles are taken here, of both sides "
                "on one host, and two CPUs' profiles do not compare function by function")
    if trend:
        return "a trend claim is judged at two points, and a profile is of one cell"
    if num.kind != den.kind:
        return (f"its sides are a {num.kind} and a {den.kind} measurement: their times per "
                "operation are of different operations")
    for side in (num, den):
        why = _side_problem(side)
        if why:
            return f"{side.name}: {why}"
    if num.suite_kind.figures == FIGURES_BLOCKS and (blocks is None or len(blocks) != 1):
        return ("a speed side is profiled at one block size, and the claim is judged at "
                + ("every size both sides have" if blocks is None else
                   ", ".join(map(str, blocks))) + ": give block_sizes: [N]")
    return None


def _side_problem(m: Measurement) -> str | None:
    if m.masked:
        return "it masks capabilities (ia32cap or disable), and a profile runs unmasked"
    if m.engine or m.decrypt:
        return "it runs speed with -engine or -decrypt, which a profile does not"
    if m.suite_kind.figures == FIGURES_BLOCKS and (not m.evp or "evp" in m.unknown):
        return ("a speed cell is profiled through EVP (-evp), and this measurement runs "
                + ("without it" if not m.evp else "a method the report leaves "
                   f"{UNKNOWN}"))
    if m.thread_counts:
        return (f"it has figures at several thread counts ({', '.join(map(str, m.thread_counts))}"
                "), and a profile is of one")
    return None


def cell_text(m: Measurement, block: int) -> str:
    """The side's cell as ``profile --cell`` names it in the reproduction's suite."""
    figures = m.suite_kind.figures
    if figures == FIGURES_HANDSHAKES:
        return f"{m.protocol}-{m.algorithm}:{m.operation}:{m.pinning}"
    if figures == FIGURES_THREADS:
        return f"{m.algorithm}:t{m.threads}"
    if figures == FIGURES_OPERATIONS:
        return f"{m.algorithm}:{m.operation}"
    return f"{speed_argument(m.algorithm, True)}:{block}"


def cells(spec: ReportSpec, claim: Claim) -> tuple[str, str]:
    """The cells of the claim's two sides: (first measurement's, second's)."""
    block = spec.claim_blocks(claim)[0]
    return (cell_text(spec.measurements[claim.numerator], block),
            cell_text(spec.measurements[claim.denominator], block))


def seconds(spec: ReportSpec) -> int:
    return max(PROFILE_SECONDS, spec.measure.seconds)


def check_line(spec: ReportSpec, claim: Claim) -> str:
    """What ``reproduce --check`` says of a claim that asks to be profiled."""
    first, second = cells(spec, claim)
    kind = spec.measurements[claim.numerator].kind
    what = (f"{kind} cell {first}" if first == second else
            f"{kind} cells {first} ({claim.numerator}) and {second} ({claim.denominator})")
    return (f"      profile: after measuring, both sides are profiled ({what}, "
            f"{seconds(spec)} s each under perf in the variant's profile image, as "
            "`invoke matrix profile --compare`) and the verdict names the top functions "
            "behind the ratio")


def _n(value: Any, digits: int = 1) -> str:
    return f"{value:,.{digits}f}" if isinstance(value, (int, float)) else "—"


def where_lines(record: Mapping[str, Any] | None) -> list[str]:
    """The verdict's lines from a profile comparison's record (``profilerun``)."""
    if not record:
        return []
    if record.get("error"):
        return [f"      where: not profiled: {record['error']}"]
    a, b = record["a"], record["b"]
    share = record.get("explained_share")
    unit = record.get("unit") or "operation"
    lines = [f"      where (profiles of both sides, {record.get('cell')}; ns per {unit}): "
             f"{b['measurement']} {_n(b['ns_per_op'])} ({b['status']}) against "
             f"{a['measurement']} {_n(a['ns_per_op'])} ({a['status']}): gap "
             f"{record['gap_ns_per_op']:+,.1f}; the profiles' differences explain "
             + (f"{share:.0%}" if isinstance(share, (int, float)) else "—") + " of it"]
    width = max([len(r["name"]) for r in record["top"]] + [8])
    for r in record["top"]:
        part = r.get("share_of_gap")
        lines.append(f"        {r['name']:<{width}}  {_n(r['a_ns_per_op']):>12} → "
                     f"{_n(r['b_ns_per_op']):>12}  {r['diff_ns_per_op']:+14,.1f} "
                     f"±{_n(r['diff_sd_ns_per_op'])}"
                     + (f"  ({part:.0%} of the gap)" if isinstance(part, (int, float))
                        else ""))
    if a["status"] != "ok" or b["status"] != "ok":
        lines.append("        (a profile is contended: the host disturbed it; on a busy "
                     "host the measured gap holds time spent waiting for a CPU, which no "
                     "function holds)")
    lines.append(f"        → {record.get('folder')}")
    return lines
