"""``invoke matrix profiles``: the CPU profiles, and which one describes this machine,
each with the CPU model's numbers for its core."""

from __future__ import annotations

import json as _json
from pathlib import Path

from openssl_matrix.cli.shared import matrix_of
from openssl_matrix.cli.table import JSON, Command
from openssl_matrix.engine.engines import describe_spec
from openssl_matrix.measure.cpumodel import core_of_cpu, core_of_march, summary
from openssl_matrix.measure.hostinfo import parse_cpuinfo, profile_mismatches

COMMAND = Command("profiles", "the CPU profiles, and which one describes this machine",
                  flags=(JSON,))


def run(*, target: str, matrix: str, results: str, json: bool) -> int:
    """The matrix's CPU profiles, and which of them describes the machine this runs on."""
    m = matrix_of(matrix)
    try:
        here = parse_cpuinfo(Path("/proc/cpuinfo").read_text(encoding="utf-8"))
    except OSError:
        here = None
    rows = []
    for p in m.profiles:
        info = p.describe()
        if p.docker_host:
            info["this_machine"] = None
            info["engine"] = describe_spec(p.docker_host)
        elif here is not None:
            info["this_machine"] = profile_mismatches(p, here) or True
        core = core_of_march(p.march)
        info["cpu_model"] = summary(core) if core is not None else None
        rows.append(info)
    if json:
        print(_json.dumps({"this_machine": here.model if here else None, "auto": here.slug()
                           if here else None, "profiles": rows}, indent=2))
        return 0
    if here is not None:
        print(f"this machine: {here.model} ({here.vendor}); --cpu=auto files results "
              f"under {here.slug()}")
        mine = core_of_cpu(here.vendor, here.family, here.model_number, here.model)
        print(f"  CPU model: {summary(mine) if mine else 'this core is not in the model'}")
    for r in rows:
        engine = r.get("engine") or {}
        how = str(engine.get("transport"))
        if how == "tcp (no TLS)":
            how += ": refused without --allow-plain-tcp; for TLS set DOCKER_CERT_PATH or " \
                "use a context (docs/lab.md)"
        elif engine.get("tls_verify") is False:
            how += ", the engine's certificate is not checked"
        where = "local engine" if not r["docker_host"] else \
            f"engine {r['docker_host']} — {engine['problem']}" if engine.get("problem") else \
            f"engine {r['docker_host']} ({how})"
        match = r.get("this_machine")
        verdict = ("matches this machine" if match is True else "remote: checked at bench "
                   "time" if match is None else "not this machine: " + "; ".join(match))
        clock = f"{r['clock_ghz']} GHz" if r["clock_ghz"] else "clock from the host"
        print(f"  {r['name']:<14} {r['description']}\n"
              f"  {'':<14} march={r['march'] or '-'}, {clock}, "
              f"cpuset={r['cpuset'] or '-'}, {where}; {verdict}")
        if r["cpu_model"]:
            print(f"  {'':<14} CPU model: {r['cpu_model']}")
    return 0
