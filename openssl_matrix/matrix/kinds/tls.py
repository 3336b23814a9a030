"""``kind: tls``: TLS handshakes between ``s_server`` and ``s_time`` (measure/tls.py),
connections per second per protocol, key, mode and pinning."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openssl_matrix.matrix.check import CheckContext, choices_hint
from openssl_matrix.matrix.kinds.base import (
    FIGURES_HANDSHAKES,
    RUNNER_S_TIME,
    BaseKind,
    KindOptions,
    refuse_keys,
    require_known,
)
from openssl_matrix.matrix.tlsvocab import KEYS, MODES, PINNINGS, PROTOCOLS, TlsOptions


@dataclass(frozen=True)
class TlsKind(BaseKind):
    def check(self, ctx: CheckContext, entry: Mapping[str, Any],
              algorithms: tuple[str, ...], kp: str) -> KindOptions:
        refuse_keys(ctx, entry, ("evp", "decrypt", "engine", "bytes", "multi"), kp,
                    f"not used by a suite with kind: {self.name}")
        require_known(ctx, algorithms, list(KEYS), kp, "a server key type of a tls suite")

        def listed(key: str, allowed: Sequence[str], default: tuple[str, ...]) -> tuple[str, ...]:
            if key not in entry:
                return default
            items = ctx.tokens(entry.get(key), f"{kp}.{key}")
            if not items:
                raise ctx.fail(f"{kp}.{key}", "list at least one")
            for i, item in enumerate(items):
                if item not in allowed:
                    raise ctx.fail(f"{kp}.{key}[{i}]", f"{item!r} is not one of "
                                   + ", ".join(allowed), hint=choices_hint(item, allowed))
            return items

        defaults = TlsOptions()
        return KindOptions(tls=TlsOptions(
            protocols=listed("protocols", list(PROTOCOLS), defaults.protocols),
            modes=listed("modes", MODES, defaults.modes),
            pinning=listed("pinning", PINNINGS, defaults.pinning),
            seconds=ctx.posint(entry.get("seconds"), f"{kp}.seconds") or defaults.seconds))

    def row_label(self, fig: Mapping[str, Any]) -> str:
        op = "full handshake" if fig.get("operation") == "handshake" else "resumption"
        return (f"{fig.get('protocol_label') or fig.get('protocol')} · {fig.get('key')} · "
                f"{fig.get('cipher')} · {fig.get('group')} · {op} · {fig.get('tls_pinning')}")

    def short_label(self, fig: Mapping[str, Any]) -> str:
        op = "full" if fig.get("operation") == "handshake" else "resumed"
        return f"{fig.get('protocol')} {fig.get('key')} {op} {fig.get('tls_pinning')}"

    def run_line(self, d: Mapping[str, Any]) -> tuple[str, int]:
        runs = len(d["algorithms"]) * len(d["pinning"]) * len(d["protocols"]) * \
            len(d["modes"])  # s_time runs: protocol x mode per key and pinning
        return (f"s_server/s_time {' '.join(d['protocols'])} -{' -'.join(d['modes'])} "
                f"with {' '.join(d['algorithms'])} keys ({', '.join(d['pinning'])})", runs)


KIND = TlsKind("tls", RUNNER_S_TIME, FIGURES_HANDSHAKES, "a TLS handshake figure",
               exclusive_keys=("protocols", "modes", "pinning"),
               accounting_fields=("protocol", "operation"), warnings_named=True,
               figure_unit="conn/s", log_scale=False,
               table_title="TLS handshakes (connections per second, higher is better)",
               panel_label="TLS handshakes (connections/s)", run_noun="handshake",
               profile_cell="PROTOCOL-KEY:OPERATION[:PINNING]")
