"""``invoke matrix list``: the variants the matrix expands to, with build status."""

from __future__ import annotations

import json as _json

from openssl_matrix.cli.paths import results_tree
from openssl_matrix.cli.shared import endbr32_of, matrix_of
from openssl_matrix.cli.table import EVERY, JSON, ONLY, Command
from openssl_matrix.images.sources import read_pins
from openssl_matrix.sweep.table import build_status, describe_versions, sha256_status

COMMAND = Command("list", "the variants the matrix expands to, with build status",
                  flags=(ONLY, EVERY, JSON))


def run(*, target: str, matrix: str, results: str, json: bool, only: str = "",
        all: bool = False) -> int:
    """The default selection; --all adds the opt-in variants; --only filters."""
    m = matrix_of(matrix)
    tree = results_tree(results, matrix)
    pins = read_pins(m.path.with_suffix(".lock"))
    rows = []
    selected = m.select(only or None, every=all)
    for v in selected:
        info = v.describe()
        info["sha256_status"] = sha256_status(v.version.version, v.version.sha256, pins,
                                              v.version)
        info["builds_here"] = build_status(v.version.version, v.arch, v.asm,
                                           declared_sha256=v.version.sha256)
        info["image"] = None
        info["endbr32"] = None
        info["endbr32_warning"] = None
        latest = tree.read_latest(v.id)
        if latest is not None:
            info["image"] = latest.tag
            record = tree.build_record(v.id, latest.digest)
            if record:
                info["endbr32"] = record.get("endbr32")
                info["endbr32_warning"] = endbr32_of(v, record)
        rows.append(info)
    if json:
        print(_json.dumps(rows, indent=2))
        return 0
    width = max(len(r["id"]) for r in rows)
    pwidth = max(7, *(len(",".join(p["name"] for p in r["patches"])) for r in rows))
    print(f"{'variant':<{width}}  {'version':<8} {'asm':<6} {'arch':<6} {'march':<10} "
          f"{'build':<8} {'patches':<{pwidth}} image")
    for r in rows:
        patches = ",".join(p["name"] for p in r["patches"]) or "-"
        endbr = f"  endbr32={r['endbr32']}" if r["endbr32"] is not None else ""
        print(f"{r['id']:<{width}}  {r['version']:<8} {'asm' if r['asm'] else 'no-asm':<6} "
              f"{r['arch']:<6} {r['march'] or 'default':<10} "
              f"{'default' if r['default'] else 'opt-in':<8} {patches:<{pwidth}} "
              f"{r['image'] or '(not built)'}{endbr}")
        if r["endbr32_warning"]:
            print(f"    ⚠ {r['endbr32_warning']}")
        elif r["sigill_cpus"] and r["endbr32"] is None:
            print(f"    meant for {', '.join(r['sigill_cpus'])} (no ENDBR32 allowed): the count "
                  "is checked when it is built")
    print("\nversions (checksum; known to build on this kind of machine, from the release "
          "sweep in docs/building.md):")
    print("\n".join(describe_versions(selected, pins)))
    n_default = sum(1 for r in rows if r["default"])
    hidden = len(m.all_variants) - len(rows)
    more = f"; {hidden} more not shown: `invoke matrix list --all`" \
        if hidden > 0 and not all else ""
    print(f"\n{len(rows)} variant(s) from {m.path}, {n_default} built by default "
          f"(opt-in ones are built with --only PATTERN){more}; suites: "
          + ", ".join(s.name + (" (default)" if s.name == m.default_suite else "")
                      for s in m.suites))
    return 0
