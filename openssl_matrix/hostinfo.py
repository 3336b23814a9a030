"""What CPU and system a measurement ran on, and whether a CPU profile fits it."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from .model import Profile


@dataclass(frozen=True)
class CpuInfo:
    vendor: str
    model: str
    flags: tuple[str, ...]
    mhz: float | None
    logical_cpus: int

    def slug(self) -> str:
        """``host-amd-epyc``: the results folder name for ``--cpu=auto``."""
        text = re.sub(r"\((r|tm)\)", "", self.model.lower())
        text = re.sub(r"\bcpu\b|\bprocessor\b|@.*$", "", text)
        text = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
        return f"host-{text or 'unknown'}"


def parse_cpuinfo(text: str) -> CpuInfo:
    """Read ``/proc/cpuinfo`` text (x86 layout)."""
    fields: dict[str, str] = {}
    count = 0
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip()
        if key == "processor":
            count += 1
        fields.setdefault(key, value.strip())
    mhz: float | None
    try:
        mhz = float(fields["cpu MHz"])
    except (KeyError, ValueError):
        mhz = None
    return CpuInfo(
        vendor=fields.get("vendor_id", "unknown"),
        model=fields.get("model name", "unknown"),
        flags=tuple(fields.get("flags", "").split()),
        mhz=mhz,
        logical_cpus=count,
    )


def profile_mismatches(profile: Profile, cpu: CpuInfo) -> list[str]:
    """Reasons why ``cpu`` is not the CPU ``profile`` describes; empty if it is."""
    reasons: list[str] = []
    if profile.vendor and cpu.vendor != profile.vendor:
        reasons.append(f"vendor is {cpu.vendor}, the profile wants {profile.vendor}")
    if profile.model and not fnmatch.fnmatch(cpu.model.lower(), profile.model.lower()):
        reasons.append(f"model is {cpu.model!r}, the profile wants {profile.model!r}")
    missing = [f for f in profile.flags if f not in cpu.flags]
    if missing:
        reasons.append(f"CPU flags missing: {', '.join(missing)}")
    return reasons
