"""Reproduce: our own cycles per byte in a verdict's words - the constants a CPU
model's verdict calibrates from our runs, and an AES-NI figure against the latency bound
measured on our core (judge.py's model verdicts use them)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Protocol

from openssl_matrix.matrix.isa import IA32CAP_BITS, capabilities_of, ia32cap_expected_clear
from openssl_matrix.measure.cpumodel import RatioModel, cbc_floor
from openssl_matrix.repro.spec import Claim, Measurement, ReportSpec

_AES_CBC_NAME = re.compile(r"^aes-(128|192|256)-cbc$")


class Ours(Protocol):
    """What is read here of a measurement's figures (judge.Ours)."""

    clock_ghz: float | None
    clock_source: str | None
    nominal_ghz: float | None
    aesenc_latency: float | None

    def median(self, block: int) -> float | None: ...


def masked_capabilities(m: Measurement) -> set[str]:
    """The capabilities a measurement clears through OPENSSL_ia32cap."""
    if m.disable:
        return set(m.disable)
    if m.ia32cap:
        words = ia32cap_expected_clear(m.ia32cap)
        if words is not None:
            return capabilities_of(words)
        # a whole replacement vector: nothing can be said about it without the CPU
        return set(IA32CAP_BITS)
    return set()


def calibration_text(spec: ReportSpec, claim: Claim, ours: Mapping[str, Ours],
                     block: int) -> str:
    """The per-core constants our runs measure (cycles per byte of each side's path at
    ``block``, from the cores' measured clock), worded as calibrated values."""
    parts = []
    for name in (claim.numerator, claim.denominator):
        o = ours.get(name)
        value = o.median(block) if o is not None else None
        if o is None or value is None or not o.clock_ghz or o.clock_source != "measured":
            continue
        m = spec.measurements[name]
        masked = masked_capabilities(m)
        path = (("vpaes" if "aesni" in masked else "AES-NI") + " CBC encrypt"
                if _AES_CBC_NAME.match(m.algorithm) and m.evp and not m.decrypt
                else m.algorithm)
        cpb = o.clock_ghz * 1e9 / value
        parts.append(f"{path} {cpb:.2f} c/B ({name}, calibrated)"
                     + (floor_text(m.algorithm, cpb, o.aesenc_latency)
                        if path.startswith("AES-NI") else ""))
    return ", ".join(parts)


def floor_text(algorithm: str, cpb: float, latency: float | None) -> str:
    """Our AES-NI CBC cycles per byte against the latency bound of our own core, its
    AESENC latency measured there (coreclock.py); empty without that measurement."""
    floor = cbc_floor(algorithm, latency) if latency else None
    if floor is None or latency is None:
        return ""
    side = "at or above it" if cpb >= floor * 0.97 else \
        "under it: the clock read around the runs is not the clock they ran at"
    return (f" [the bound on our core: {round(floor * 16 / latency)} rounds × {latency:g} "
            f"cycles AESENC latency measured here / 16 = {floor:.2f} c/B; {side}]")


def measured_cpb(spec: ReportSpec, model: RatioModel, ours: Mapping[str, Ours],
                  claim: Claim, block: int) -> str:
    """Our cycles per byte beside the model's, where our clock is known."""
    parts = []
    for name, cost in ((claim.numerator, model.first), (claim.denominator, model.second)):
        o = ours.get(name)
        value = o.median(block) if o is not None else None
        if o is None or value is None or not o.clock_ghz:
            continue
        measured = o.clock_ghz * 1e9 / value
        clock = (f"the cores' measured clock {o.clock_ghz:.2f} GHz"
                 + (f", nominal {o.nominal_ghz:.2f}" if o.nominal_ghz else "")
                 if o.clock_source == "measured" else f"{o.clock_ghz:.2f} GHz (nominal)")
        parts.append(f"{cost.path} {measured:.2f} c/B at {clock}, "
                     f"{cost.cpb:.2f} modelled"
                     + (floor_text(spec.measurements[name].algorithm, measured,
                                   o.aesenc_latency)
                        if cost.path.startswith("AES-NI") else "")
                     + (" (under the latency bound: the core runs faster than the clock "
                        "reported, e.g. boost)" if cost.path.startswith("AES-NI")
                        and measured < cost.cpb * 0.97 else ""))
    return ("; " + "; ".join(parts)) if parts else ""
