"""What CPU and system a measurement ran on, and whether a CPU profile fits it.

``parse_cpuinfo`` / ``parse_system_state``: the host as a container on the engine sees it.
The instruction-set tables these read are :mod:`openssl_matrix.matrix.isa`.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field

from openssl_matrix.matrix.model import Profile


@dataclass(frozen=True)
class CpuInfo:
    vendor: str
    model: str
    flags: tuple[str, ...]
    mhz: float | None
    logical_cpus: int
    family: int | None = None  # CPUID family and model ("cpu family", "model"): the core
    model_number: int | None = None
    microcode: str | None = None  # the "microcode" line (a revision, 0xd0003e7); None in a VM

    def slug(self) -> str:
        """``host-amd-epyc``: the results folder name for ``--cpu=auto``."""
        text = re.sub(r"\((r|tm)\)", "", self.model.lower())
        text = re.sub(r"\bcpu\b|\bprocessor\b|@.*$", "", text)
        text = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
        return f"host-{text or 'unknown'}"

    @property
    def nominal_ghz(self) -> float | None:
        """The clock printed in the model name (``... CPU @ 3.10GHz``), if any."""
        m = re.search(r"@\s*(\d+(?:\.\d+)?)\s*GHz", self.model, re.IGNORECASE)
        return float(m.group(1)) if m else None


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
        family=_int(fields.get("cpu family")),
        model_number=_int(fields.get("model")),
        microcode=fields.get("microcode") or None,
    )


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


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
    present = [f for f in getattr(profile, "lacks", ()) if f in cpu.flags]
    if present:
        reasons.append(f"CPU has {', '.join(present)}, which the profile's CPU lacks")
    return reasons


# ----------------------------------------------------------------------------------
# The system state around one run (load, frequency policy)


@dataclass(frozen=True)
class SystemState:
    """What a container saw just before a run: load, frequency policy, clock."""

    loadavg: str | None
    governor: str | None
    boost: str | None
    mhz: float | None
    kernel: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


#: The shell script a container runs to describe its host. The markers split the output.
SYSTEM_SCRIPT = (
    "cat /proc/cpuinfo; echo '==> uname'; uname -srm; echo '==> loadavg'; "
    "cat /proc/loadavg; echo '==> governor'; "
    "cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || "
    "echo unknown; echo '==> boost'; "
    "cat /sys/devices/system/cpu/cpufreq/boost 2>/dev/null || "
    "{ t=$(cat /sys/devices/system/cpu/intel_pstate/no_turbo 2>/dev/null) && "
    "echo \"no_turbo=$t\"; } || echo unknown"
)


def parse_system_state(text: str) -> tuple[CpuInfo, SystemState]:
    """Split the output of ``SYSTEM_SCRIPT`` into the CPU and the system state."""
    cpuinfo, _, rest = text.partition("==> uname")
    extra: dict[str, str] = {}
    key = "uname"
    for line in rest.splitlines():
        if line.startswith("==> "):
            key = line[4:].strip()
            continue
        if line.strip():
            extra[key] = (extra.get(key, "") + " " + line.strip()).strip()
    cpu = parse_cpuinfo(cpuinfo)

    def known(name: str) -> str | None:
        value = extra.get(name)
        return None if value in (None, "", "unknown") else value

    state = SystemState(loadavg=known("loadavg"), governor=known("governor"),
                        boost=known("boost"), mhz=cpu.mhz, kernel=known("uname"), extra=extra)
    return cpu, state


def clock_hz(profile: Profile | None, cpu: CpuInfo, *, forced: bool,
             ) -> tuple[float | None, str | None]:
    """The clock to turn figures into cycles: (Hz, where it came from).

    A matched profile's nominal clock wins; on a forced run (the host is not the profile's
    CPU) or with ``--cpu=auto`` the host's own figure is used: the clock in its model
    name, else ``cpu MHz`` as /proc/cpuinfo reported it just before the run.
    """
    if profile is not None and profile.clock_ghz and not forced:
        return profile.clock_ghz * 1e9, f"profile {profile.name}: clock_ghz {profile.clock_ghz}"
    if cpu.nominal_ghz:
        return cpu.nominal_ghz * 1e9, f"host model name: {cpu.model}"
    if cpu.mhz:
        return cpu.mhz * 1e6, "host /proc/cpuinfo 'cpu MHz' before the run"
    return None, None
