"""The TLS suite inside a bench run: one invocation per server key and pinning.

``bench.speed_invocations`` hands a ``kind: tls`` suite to :func:`tls_invocations`, and
``Bencher`` hands the output of such an invocation to :func:`parse_tls`. Everything else
(the run folder, raw output, run metadata, guards, the journal) is the bench's as for speed.
"""

from __future__ import annotations

from dataclasses import dataclass

from openssl_matrix.matrix.model import Mask, Suite
from openssl_matrix.matrix.tlsvocab import TlsOptions
from openssl_matrix.measure.benchfigure import BenchFigure
from openssl_matrix.measure.guards import Finding, marked
from openssl_matrix.measure.invocation import Invocation
from openssl_matrix.measure.tls import TlsPlan, parse_output, plans, script


@dataclass(frozen=True)
class TlsInvocation(Invocation):
    """A container that runs the handshake script of one :class:`TlsPlan`."""

    plan: TlsPlan | None = None

    @property
    def exec_command(self) -> list[str]:
        assert self.plan is not None
        return ["/bin/sh", "-c", script(self.plan), "openssl-matrix-tls"]


def tls_invocations(version: str, suite: Suite, configure: tuple[str, ...] = (),
                    ) -> tuple[list[Invocation], list[str]]:
    options = suite.tls or TlsOptions()
    if suite.seconds:
        options = TlsOptions(options.protocols, options.modes, options.pinning, suite.seconds)
    found, notes = plans(version, suite.algorithms, options, configure)
    mask = suite.masks[0] if suite.masks else Mask("default", None)
    out: list[Invocation] = []
    for p in found:
        command = ("openssl-matrix-tls", f"key={p.key}", f"pinning={p.pinning}",
                   f"protocols={','.join(p.protocols)}", f"modes={','.join(p.modes)}",
                   f"seconds={p.seconds}")
        out.append(TlsInvocation(name=p.name, mask=mask, algorithm=p.key, command=command,
                                 env={}, path="tls", algorithms=(p.key,), plan=p))
    if len(suite.masks) > 1:
        notes.append("a tls suite runs with the CPU as it is: its masks were not used")
    return out, notes


def parse_tls(inv: Invocation, stdout: str,
              ) -> tuple[list[BenchFigure], float | None, list[Finding], list[str]]:
    """Figure records, elapsed seconds, guard findings and warnings of one TLS container
    (each warning names the invocation: the bench files them as they are)."""
    plan = getattr(inv, "plan", None)
    if plan is None:
        return [], None, [], ["not a TLS invocation"]
    records, said, found = parse_output(stdout, plan)
    # each warning names the invocation, a guard's as the speed path's findings do
    # (``code: invocation: …``, which the bench summary recognises)
    warnings = [f"{inv.name}: {w}" for w in said]
    records = [rec.with_(mask=inv.mask.name, ia32cap=None, invocation=inv.name, engine=None,
                         path="tls", direction=None, multi=None) for rec in records]
    elapsed = sum(t for r in records if isinstance(t := r.get("wall_s"), float)) or None
    # Applied here, per operation (a Finding names algorithms only: a resumption that did
    # not resume must not mark the full-handshake figure); the bench lists them as warnings.
    for code, message, alg, operation in found:
        finding = Finding(code, message, inv.name, (alg,))
        records = [marked(r, [finding]) if r.algorithm == alg
                   and (operation is None or r.operation == operation) else r
                   for r in records]
        warnings.append(f"{code}: {inv.name}: {alg}"
                        + (f" {operation}" if operation else "") + f": {message}")
    return records, elapsed, [], warnings
