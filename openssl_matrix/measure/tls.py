"""TLS handshake suites: ``openssl s_server`` and ``openssl s_time`` in one container.

A ``kind: tls`` suite measures full handshakes (``s_time -new``) and resumed sessions
(``s_time -reuse``) per second over loopback, in a container with no network. For each
server key (``algorithms``: ``rsa2048``, ``ecdsap256``) and CPU pinning (``same-core``:
server and client on one CPU; ``cross-core``: on two) one container runs a script that

1. makes a key and a self-signed certificate for the run (printed into the raw output);
2. per protocol, starts ``s_server`` pinned with ``taskset``, waits until it prints
   ``ACCEPT`` (polling its log, with a deadline; never a fixed sleep), checks with one
   ``s_client`` handshake which protocol, cipher and group were negotiated, then runs
   ``s_time`` pinned, reading the server's CPU time from ``/proc/<pid>/stat`` and the
   client's from the shell's ``times`` before and after;
3. stops the server and checks that it was alive until then and ended by that signal.

What each version can do is data (:data:`PROTOCOLS`, :func:`server_options`): TLS 1.3
from 1.1.1, TLS 1.2 from 1.0.1, TLS 1.0 (labelled; the newest protocol 0.9.8 has);
the cipher suite and the key-exchange group are named on the server (which decides) and,
where the version's ``s_time`` takes it, on the client too, so two versions do the same
work. :func:`parse_output` turns the script's output into figure records (operation
``handshake`` or ``resume``, connections per second over the wall time the script
measured, with the CPU time of server and client and which side was the bottleneck).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from openssl_matrix.core.statuses import NEGOTIATION, NOT_RESUMED, SERVER_EXIT, TIME_BASIS
from openssl_matrix.core.version import series
from openssl_matrix.matrix.pkey import Series, dotted
from openssl_matrix.matrix.tlsvocab import OPERATION, PROTOCOLS, Protocol, TlsOptions
from openssl_matrix.measure import hostacct
from openssl_matrix.measure.benchfigure import BenchFigure, host_fields
from openssl_matrix.measure.guards import contended_findings
from openssl_matrix.measure.hostacct import SAMPLE_FUNCTION
from openssl_matrix.measure.invocation import times_line
from openssl_matrix.parse.stime import STimeRun, parse_stime

PORT = 4433
#: How long the script waits for ``s_server`` to print ACCEPT.
READY_DEADLINE_S = 20


def group_server_args(protocol: Protocol, v: Series) -> list[str]:
    """How ``s_server`` of version ``v`` is told the one group to use."""
    if protocol.group == "X25519":
        return ["-groups", "X25519"]  # TLS 1.3 only, 1.1.1+
    if v >= (1, 1, 1):
        return ["-groups", "P-256"]
    if v >= (1, 0, 2):
        return ["-curves", "P-256"]
    return ["-named_curve", "prime256v1"]  # 0.9.8-1.0.1: the server's one ECDH curve


def cipher_string(protocol: Protocol, key: str, v: Series) -> str:
    """The one cipher (suite), as ``-cipher``/``-ciphersuites`` of version ``v`` take it.

    From 3.0 the default security level 1 refuses TLS 1.0's MD5+SHA-1 handshake
    signature ("no suitable signature algorithm", seen on the 3.0.20 image here): TLS 1.0
    there runs at ``@SECLEVEL=0``, on both sides.
    """
    cipher = protocol.cipher[key]
    if protocol.name == "tls1.0" and v >= (3, 0, 0):
        cipher += ":@SECLEVEL=0"
    return cipher


def cipher_args(protocol: Protocol, key: str, v: Series) -> list[str]:
    """The server's one cipher: ``-ciphersuites`` for TLS 1.3 (1.1.1+), else ``-cipher``."""
    return ["-ciphersuites" if protocol.tls13 else "-cipher", cipher_string(protocol, key, v)]


def protocol_server_args(protocol: Protocol, v: Series) -> list[str]:
    """How ``s_server`` of version ``v`` is held to the one protocol.

    0.9.8's ``s_time`` (SSLv23 method, no protocol options) sends its hello in the SSLv2
    format, which a ``-tls1`` server (TLSv1 method) refuses ("wrong version number", seen
    on the 0.9.8y image here); its server keeps the SSLv23 method and turns SSLv2 and
    SSLv3 off instead, which leaves TLS 1.0, the newest it has.
    """
    if protocol.name == "tls1.0" and v < (1, 0, 0):
        return ["-no_ssl2", "-no_ssl3"]
    return [protocol.server_flag]


def server_options(protocol: Protocol, key: str, v: Series) -> list[str]:
    """Everything ``s_server`` gets besides key, certificate and port."""
    return [*protocol_server_args(protocol, v), *cipher_args(protocol, key, v),
            *group_server_args(protocol, v), "-www"]


def client_options(protocol: Protocol, key: str, v: Series) -> list[str]:
    """What ``s_time`` of version ``v`` takes to ask for the same protocol and cipher.

    ``s_time`` has no protocol flags for TLS before 1.1.0 (only -ssl2/-ssl3) and no
    -ciphersuites before 1.1.1: there the server alone decides (it accepts one protocol
    and one cipher), which is the same work.
    """
    out: list[str] = []
    if v >= (1, 1, 1):
        out += ["-cipher" if not protocol.tls13 else "-ciphersuites",
                cipher_string(protocol, key, v)]
    elif not protocol.tls13:
        out += ["-cipher", protocol.cipher[key]]
    return out


def config_text(protocol: Protocol, v: Series) -> str:
    """An OPENSSL_CONF for client and server: a ``req`` section for the certificate and,
    from 1.1.1 (``system_default`` and its ``Groups`` command), the one group also for the
    client: its TLS 1.3 key share (3.5+ would otherwise also send an ML-KEM share). Before
    1.1.1 the config has no ssl part: the server's one curve decides the TLS 1.2 group."""
    lines: list[str] = []
    if v >= (1, 1, 1):
        lines += ["openssl_conf = om_init", "", "[om_init]", "ssl_conf = om_ssl", "",
                  "[om_ssl]", "system_default = om_sys", "", "[om_sys]",
                  f"Groups = {protocol.group}", ""]
    lines += ["[req]", "distinguished_name = om_dn", "prompt = no", "", "[om_dn]",
              "CN = openssl-matrix.invalid", ""]
    return "\n".join(lines)


def key_commands(key: str) -> list[list[str]]:
    """Commands that write key.pem (every era: genrsa / ecparam -genkey)."""
    if key == "rsa2048":
        return [["openssl", "genrsa", "-out", "key.pem", "2048"]]
    return [["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout",
             "-out", "key.pem"]]


@dataclass(frozen=True)
class Step:
    protocol: str
    mode: str


@dataclass(frozen=True)
class TlsPlan:
    """One container's work: one server key and one pinning, every protocol and mode."""

    version: str
    key: str
    pinning: str
    seconds: int
    protocols: tuple[str, ...]
    modes: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"tls--{self.key}--{self.pinning}"


#: What each protocol is called in the configure option that leaves it out.
_NO_OPTION = {"tls1.3": "no-tls1_3", "tls1.2": "no-tls1_2", "tls1.0": "no-tls1"}


def newest_protocol(v: Series, configure: tuple[str, ...] = ()) -> str | None:
    """The newest protocol of :data:`PROTOCOLS` version ``v`` has and the build kept."""
    have = [p for p in PROTOCOLS.values()
            if v >= p.since and _NO_OPTION[p.name] not in configure]
    return max(have, key=lambda p: p.since).name if have else None


def plans(version: str, keys: tuple[str, ...], options: TlsOptions,
          configure: tuple[str, ...] = ()) -> tuple[list[TlsPlan], list[str]]:
    """The containers a TLS suite needs on ``version``, and the notes of what was refused."""
    v = series(version)
    notes: list[str] = []
    protocols: list[str] = []
    for name in options.protocols:
        p = PROTOCOLS[name]
        if v < p.since:
            notes.append(f"{p.label}: not measured: OpenSSL {version} has no {p.label} "
                         f"(from {dotted(p.since)})")
            continue
        off = _NO_OPTION[name]
        if off in configure:
            notes.append(f"{p.label}: not measured: this build was configured with {off}")
            continue
        protocols.append(name)
    if options.protocols and all(v < PROTOCOLS[n].since for n in options.protocols):
        newest = newest_protocol(v, configure)
        if newest is not None:
            protocols.append(newest)
            notes.append(f"{PROTOCOLS[newest].label}: measured instead of the suite's "
                         f"{', '.join(options.protocols)}: the newest protocol OpenSSL "
                         f"{version} has (labelled so on its figures)")
    out: list[TlsPlan] = []
    for key in keys:
        if key == "ecdsap256" and any(o in configure for o in ("no-ec", "no-ecdsa")):
            notes.append(f"{key}: not measured: this build has no ECDSA")
            continue
        for pin in options.pinning:
            out.append(TlsPlan(version, key, pin, options.seconds, tuple(protocols),
                               options.modes))
    if not protocols:
        notes.append("no protocol of the suite exists in this version: nothing measured")
        return [], notes
    return out, notes


# ----------------------------------------------------------------------------------
# the script

_SCRIPT_HEAD = r"""set -u
W=$(mktemp -d /tmp/tls.XXXXXX) || exit 90
cd "$W" || exit 90
ok=1
CLK=$(getconf CLK_TCK 2>/dev/null || echo 100)
CPUS=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
expand() { echo "$1" | tr ',' '\n' | while IFS=- read a b; do
  [ -z "$a" ] && continue; i=$a; while [ "$i" -le "${b:-$a}" ]; do echo "$i"; i=$((i+1)); done
done; }
FIRST=$(expand "$CPUS" | sed -n 1p)
SECOND=$(expand "$CPUS" | sed -n 2p)
echo "+TLS:cpus:$CPUS:clk_tck:$CLK"
now() { date +%s.%N; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo -1; }
listening() {  # a LISTEN socket on port $1 (hex): 0.9.8y's s_server logged no ACCEPT here
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v p=":$1" \
    'substr($2, length($2) - 4) == p && $4 == "0A" {f=1} END {exit !f}'
}
"""

_SERVER_FN = r"""start_server() {  # $1 protocol; the rest: s_server options
  p=$1; shift
  : > "server-$p.log"
  taskset -c "$SCPU" openssl s_server -accept PORT -cert cert.pem -key key.pem "$@" \
    > "server-$p.log" 2>&1 < /dev/null &
  SPID=$!
  t0=$(now); waited=0
  while ! grep -q '^ACCEPT' "server-$p.log" && ! listening HEXPORT; do
    if ! kill -0 "$SPID" 2>/dev/null; then
      wait "$SPID"; echo "+TLS:server-died:$p:rc=$?"; sed 's/^/+TLS:server-log: /' "server-$p.log"
      return 1
    fi
    if [ "$(awk -v a="$t0" -v b="$(now)" 'BEGIN {print (b - a > DEADLINE)}')" = 1 ]; then
      echo "+TLS:server-not-ready:$p"; kill "$SPID"; wait "$SPID"; return 1
    fi
    sleep 0.02
  done
  after=$(awk -v a="$t0" -v b="$(now)" 'BEGIN {printf "%.3f", b - a}')
  echo "+TLS:server-ready:$p:pid=$SPID:cpu=$SCPU:after=$after"
  return 0
}
stop_server() {  # $1 protocol
  if kill -0 "$SPID" 2>/dev/null; then alive=1; else alive=0; fi
  kill -TERM "$SPID" 2>/dev/null; wait "$SPID"; rc=$?
  echo "+TLS:server-stop:$1:alive=$alive:rc=$rc"
  sed 's/^/+TLS:server-log: /' "server-$1.log" | grep -v '^+TLS:server-log: ACCEPT$' | head -20
}
measure() {  # $1 protocol, $2 mode; the rest: s_time options
  p=$1; m=$2; shift 2
  _hs 0 2> host0.txt
  s0=$(ticks "$SPID"); w0=$(now); times > times0.txt
  taskset -c "$CCPU" openssl s_time -connect 127.0.0.1:PORT -$m -time SECONDS -www / "$@" \
    > "stime-$p-$m.out" 2> "stime-$p-$m.err"
  rc=$?
  times > times1.txt; w1=$(now); s1=$(ticks "$SPID")
  _hs 1 2> host1.txt
  c0=$(awk 'NR==2 {print $1, $2}' times0.txt); c1=$(awk 'NR==2 {print $1, $2}' times1.txt)
  echo "+TLS:run-begin:$p:$m"
  cat "stime-$p-$m.out"
  echo "+TLS:run-end:$p:$m:rc=$rc:wall0=$w0:wall1=$w1:client0=$c0:client1=$c1:\
server0=$s0:server1=$s1"
  sed "s/^/+TLS:stderr:$p:$m: /" "stime-$p-$m.err" | head -20
  echo "+TLS:host-begin:$p:$m"; cat host0.txt host1.txt; echo "+TLS:host-end:$p:$m"
}
"""


def _q(args: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in args)


def script(plan: TlsPlan) -> str:
    """The POSIX sh script one container runs for ``plan``."""
    v = series(plan.version)
    lines = [_SCRIPT_HEAD, SAMPLE_FUNCTION,
             _SERVER_FN.replace("HEXPORT", f"{PORT:04X}").replace("PORT", str(PORT))
             .replace("DEADLINE", str(READY_DEADLINE_S))
             .replace("SECONDS", str(plan.seconds))]
    lines.append('SCPU="$FIRST"')
    if plan.pinning == "same-core":
        lines.append('CCPU="$FIRST"')
    else:
        lines.append('if [ -z "$SECOND" ]; then echo "+TLS:no-second-cpu:$CPUS"; exit 91; fi')
        lines.append('CCPU="$SECOND"')
    lines.append(f'echo "+TLS:pinning:{plan.pinning}:server=$SCPU:client=$CCPU"')
    first = PROTOCOLS[plan.protocols[0]] if plan.protocols else PROTOCOLS["tls1.2"]
    lines.append(f"cat > req.cnf <<'EOF'\n{config_text(first, v)}EOF")
    for cmd in key_commands(plan.key):
        lines.append(_q(cmd) + ' > keygen.log 2>&1 || { echo "+TLS:keygen-failed"; '
                     'cat keygen.log; exit 92; }')
    lines.append(_q(["openssl", "req", "-new", "-x509", "-config", "req.cnf", "-key",
                     "key.pem", "-out", "cert.pem", "-days", "2", "-sha256"])
                 + ' > req.log 2>&1 || { echo "+TLS:cert-failed"; cat req.log; exit 93; }')
    lines.append('echo "+TLS:key-begin"; cat key.pem; echo "+TLS:key-end"')
    lines.append('echo "+TLS:cert-begin"; cat cert.pem; echo "+TLS:cert-end"')
    for pname in plan.protocols:
        p = PROTOCOLS[pname]
        lines.append(f"cat > {pname}.cnf <<'EOF'\n{config_text(p, v)}EOF")
        lines.append(f"export OPENSSL_CONF=\"$W/{pname}.cnf\"")
        lines.append(f"if start_server {pname} {_q(server_options(p, plan.key, v))}; then")
        check = ["openssl", "s_client", "-connect", f"127.0.0.1:{PORT}",
                 *client_options(p, plan.key, v)]
        lines.append(f'  echo "+TLS:check-begin:{pname}"')
        lines.append(f"  {_q(check)} < /dev/null 2>&1 | grep -E "
                     "'Protocol|Cipher|Temp Key|group|Verification|SSL handshake has' | head -12")
        lines.append(f'  echo "+TLS:check-end:{pname}"')
        for mode in plan.modes:
            lines.append(f"  measure {pname} {mode} {_q(client_options(p, plan.key, v))}")
        lines.append(f"  stop_server {pname}")
        lines.append("else ok=0; fi")
        lines.append("unset OPENSSL_CONF")
    lines.append('echo "+TLS:done:ok=$ok"')
    lines.append('[ "$ok" = 1 ] || exit 94')
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------
# reading the output

_KV = re.compile(r"(\w+)=([^:]*)")


@dataclass
class _Section:
    protocol: str
    mode: str
    lines: list[str] = field(default_factory=list)
    end: dict[str, str] = field(default_factory=dict)
    stderr: list[str] = field(default_factory=list)
    host: list[str] = field(default_factory=list)
    """The host samples (``hostacct``) taken just before and after ``s_time``."""


@dataclass
class TlsOutput:
    """The script's output, read back."""

    cpus: str | None = None
    clk_tck: int = 100
    pinning: dict[str, str] = field(default_factory=dict)
    key_pem: str = ""
    cert_pem: str = ""
    ready: dict[str, float] = field(default_factory=dict)
    stops: dict[str, dict[str, str]] = field(default_factory=dict)
    checks: dict[str, list[str]] = field(default_factory=dict)
    sections: list[_Section] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    server_log: list[str] = field(default_factory=list)
    done: bool = False


@dataclass
class _Reader:
    """Where ``read_output`` is in the script's output: the section, PEM block, host
    samples or s_client check its plain lines belong to."""

    out: TlsOutput = field(default_factory=TlsOutput)
    current: _Section | None = None
    block: list[str] | None = None
    host: list[str] | None = None
    check: str | None = None

    def line(self, line: str) -> None:
        if line.startswith("+TLS:"):
            tag, _, rest = line[5:].partition(":")
            if not self._setup_tag(tag, rest):
                self._run_tag(tag, rest)
        elif self.host is not None:
            self.host.append(line)
        elif self.block is not None:
            self.block.append(line)
        elif self.current is not None:
            self.current.lines.append(line)
        elif self.check is not None:
            self.out.checks[self.check].append(line.strip())

    def _setup_tag(self, tag: str, rest: str) -> bool:
        """The container's CPUs, key, certificate and server; False for any other tag."""
        out = self.out
        if tag == "cpus":
            parts = rest.split(":")
            out.cpus = parts[0]
            if len(parts) > 2 and parts[2].isdigit():
                out.clk_tck = int(parts[2])
        elif tag == "pinning":
            out.pinning = dict(_KV.findall(rest))
            out.pinning["name"] = rest.split(":")[0]
        elif tag in ("key-begin", "cert-begin"):
            self.block = []
        elif tag in ("key-end", "cert-end"):
            text = "\n".join(self.block or []) + "\n"
            if tag == "key-end":
                out.key_pem = text
            else:
                out.cert_pem = text
            self.block = None
        elif tag == "server-ready":
            kv = dict(_KV.findall(rest))
            try:
                out.ready[rest.split(":")[0]] = float(kv.get("after", "nan"))
            except ValueError:
                out.ready[rest.split(":")[0]] = float("nan")
        elif tag == "server-stop":
            out.stops[rest.split(":")[0]] = dict(_KV.findall(rest))
        elif tag in ("server-died", "server-not-ready", "no-second-cpu", "keygen-failed",
                     "cert-failed"):
            out.problems.append(f"{tag}: {rest}".strip(": "))
        elif tag == "server-log":
            out.server_log.append(rest.strip())
        else:
            return False
        return True

    def _run_tag(self, tag: str, rest: str) -> None:
        """The s_client checks, the s_time runs, their stderr and host samples, the end."""
        out = self.out
        if tag == "check-begin":
            self.check = rest
            out.checks[rest] = []
        elif tag == "check-end":
            self.check = None
        elif tag == "run-begin":
            proto, _, mode = rest.partition(":")
            self.current = _Section(proto, mode)
            out.sections.append(self.current)
        elif tag == "run-end" and self.current is not None:
            self.current.end = dict(_KV.findall(rest))
            self.current = None
        elif tag == "stderr":
            proto, _, tail = rest.partition(":")
            mode, _, text = tail.partition(":")
            for s in out.sections:
                if s.protocol == proto and s.mode == mode:
                    s.stderr.append(text.strip())
        elif tag == "host-begin":
            proto, _, mode = rest.partition(":")
            mine = [s for s in out.sections if s.protocol == proto and s.mode == mode]
            self.host = mine[-1].host if mine else None
        elif tag == "host-end":
            self.host = None
        elif tag == "done":
            out.done = True


def read_output(stdout: str) -> TlsOutput:
    reader = _Reader()
    for line in stdout.splitlines():
        reader.line(line)
    return reader.out


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def _cpu_pair(text: str | None) -> float | None:
    """``0m1.230s 0m0.120s`` (the shell's ``times`` for its children) -> seconds."""
    times = times_line(text)
    return None if times is None else times.user + times.system


@dataclass(frozen=True)
class Accounting:
    wall_s: float | None
    client_cpu_s: float | None
    server_cpu_s: float | None

    @property
    def client_busy(self) -> float | None:
        return None if not self.wall_s or self.client_cpu_s is None else \
            self.client_cpu_s / self.wall_s

    @property
    def server_busy(self) -> float | None:
        return None if not self.wall_s or self.server_cpu_s is None else \
            self.server_cpu_s / self.wall_s

    def bottleneck(self, pinning: str) -> str | None:
        """Which side used more CPU time: on one core they share it, on two the busier
        one limits the rate."""
        s, c = self.server_cpu_s, self.client_cpu_s
        if s is None or c is None:
            return None
        if abs(s - c) <= 0.1 * max(s, c, 1e-9):
            return "both (within 10 %)"
        return "server" if s > c else "client"


def accounting(section: _Section, clk_tck: int) -> Accounting:
    e = section.end
    w0, w1 = _float(e.get("wall0")), _float(e.get("wall1"))
    wall = w1 - w0 if w0 is not None and w1 is not None else None
    c0, c1 = _cpu_pair(e.get("client0")), _cpu_pair(e.get("client1"))
    client = c1 - c0 if c0 is not None and c1 is not None else None
    s0, s1 = _float(e.get("server0")), _float(e.get("server1"))
    server = (s1 - s0) / clk_tck if s0 is not None and s1 is not None and s0 >= 0 \
        and s1 >= 0 else None
    return Accounting(wall, client, server)


#: Below this share of the wall time, the CPU-bound side waited for a CPU: a busy host.
BUSY_RATIO = 0.5
#: A resumption run in which fewer connections than this share were resumed measured
#: full handshakes.
RESUMED_RATIO = 0.9


def _check_problem(lines: list[str], protocol: Protocol, key: str) -> str | None:
    """Whether the s_client check saw the protocol and cipher the run asked for."""
    text = "\n".join(lines)
    if not text.strip():
        return "the s_client check printed nothing"
    proto_word = {"tls1.3": "TLSv1.3", "tls1.2": "TLSv1.2", "tls1.0": "TLSv1"}[protocol.name]
    protos = re.findall(r"Protocol\s*:\s*(\S+)|New, (TLSv[\d.]+|SSLv3)", text)
    seen = {a or b for a, b in protos}
    if seen and proto_word not in seen and not any(s.startswith(proto_word) for s in seen):
        return f"negotiated {', '.join(sorted(seen))}, not {proto_word}"
    cipher = protocol.cipher[key]
    if cipher not in text:
        return f"cipher {cipher} not seen in the check handshake"
    temp = re.search(r"(?:Server|Peer) Temp Key: (?:ECDH, )?([^,\s]+)", text)
    names = {"X25519": ("X25519",), "P-256": ("P-256", "prime256v1")}[protocol.group]
    if protocol.cipher[key].startswith(("ECDHE", "TLS_")) and temp and \
            temp.group(1) not in names:
        return f"key exchange group {temp.group(1)}, not {protocol.group}"
    return None


def host_accounting(section: _Section) -> hostacct.HostAccounting | None:
    """The host around one ``s_time`` run, from the samples the script took around it.

    Judged as one process (:data:`hostacct.HANDSHAKE_PROCESSES`): the container's CPU is
    the server's and the client's; everything else busy on the host is foreign work.
    """
    _, acct = hostacct.from_stderr("\n".join(section.host) + "\n",
                                   processes=hostacct.HANDSHAKE_PROCESSES)
    return acct


def _time_basis(acct: Accounting, host: hostacct.HostAccounting | None,
                conns: int | None) -> str | None:
    """Server and client together were on a CPU for less than :data:`BUSY_RATIO` of the
    wall time (s_time makes one connection at a time: they take turns, so on an idle host
    their shares add up to about 1, on one core or on two)."""
    if not acct.wall_s or acct.server_busy is None or acct.client_busy is None:
        return None
    busy = acct.server_busy + acct.client_busy
    if busy >= BUSY_RATIO:
        return None
    text = (f"server and client were on a CPU for {busy:.0%} of the {acct.wall_s:.2f} s "
            f"wall time (server {acct.server_cpu_s:.2f} s, client {acct.client_cpu_s:.2f} s)")
    if host is None:
        return text + ": they waited for a CPU (busy host, CPU quota) or on the connection"
    per = f", {1000 * acct.wall_s / conns:.0f} ms per connection" if conns else ""
    return (text + f" while {host.idle_cores:.2f} core(s) of the host were idle: the "
            f"connections waited on the network path, not on a CPU{per} (a latency figure: "
            "e.g. a server flight written in small segments meets Nagle's algorithm and "
            "the client's delayed ACK)")


#: A finding of one container: (code, message, algorithm, operation or None for both).
Finding = tuple[str, str, str, str | None]


def _run_status(section: _Section, parsed: STimeRun,
                acct: Accounting) -> tuple[str, str, float | None]:
    """One s_time run's status, its detail and its rate (connections/s when ok)."""
    rc = section.end.get("rc")
    conns = parsed.connections
    # s_time -new exits 1 after a good run: its exit status is set to 0 only at the
    # end of the reuse phase (apps/s_time.c, 0.9.8 to 3.x); the summary lines decide
    if rc != "0" and (conns is None or section.mode != "new"):
        return "failed", f"s_time exited {rc}: " + "; ".join(section.stderr[-3:]), None
    if conns is None:
        return "unparsable", "; ".join(parsed.warnings) or "no connection count", None
    if conns == 0:
        return "zero", "s_time made no connection", None
    if not acct.wall_s or acct.wall_s <= 0:
        return "unparsable", "no wall time measured", None
    return "ok", "", conns / acct.wall_s


def _run_record(section: _Section, protocol: Protocol, plan: TlsPlan, out: TlsOutput,
                parsed: STimeRun, acct: Accounting,
                host: hostacct.HostAccounting | None) -> BenchFigure:
    """The figure record of one s_time run."""
    status, detail, rate = _run_status(section, parsed, acct)
    return BenchFigure.of(
        algorithm=f"{protocol.name}-{plan.key}", label=f"{protocol.label} {plan.key}",
        evp=None, block_size=None, bytes_per_s=None, ops_per_s=rate,
        operation=OPERATION.get(section.mode, section.mode), status=status,
        detail=detail, unit="connections/s", protocol=protocol.name,
        protocol_label=protocol.label, key=plan.key,
        cipher=protocol.cipher[plan.key], group=protocol.group,
        tls_pinning=plan.pinning, server_cpu=out.pinning.get("server"),
        client_cpu=out.pinning.get("client"), connections=parsed.connections,
        wall_s=acct.wall_s, server_cpu_s=acct.server_cpu_s,
        client_cpu_s=acct.client_cpu_s, server_busy=acct.server_busy,
        client_busy=acct.client_busy, bottleneck=acct.bottleneck(plan.pinning),
        stime_real_seconds=parsed.real_seconds, stime_user_rate=parsed.user_rate,
        resumed=parsed.resumed, full=parsed.full, stime_exit=section.end.get("rc"),
        bytes_per_connection=parsed.bytes_per_connection,
        raw="\n".join(x for x in section.lines if "connections" in x),
    ).with_(**host_fields(host))


def _run_findings(section: _Section, rec: BenchFigure, parsed: STimeRun,
                  acct: Accounting, host: hostacct.HostAccounting | None) -> list[Finding]:
    """What one good s_time run says beyond its figure: a resumption that did not
    resume, a contended host, or connections that waited on something else."""
    algorithm, conns = str(rec.algorithm), parsed.connections
    findings: list[Finding] = []
    if section.mode == "reuse" and conns and (parsed.resumed or 0) < RESUMED_RATIO * conns:
        findings.append((NOT_RESUMED, f"only {parsed.resumed or 0} of {conns} connections "
                         "resumed their session: this measured full handshakes",
                         algorithm, "resume"))
    contended = contended_findings(section.protocol, host)
    findings.extend((c.code, c.message, algorithm, rec.operation) for c in contended)
    if not contended:  # a run that waited for a CPU is contention, not latency
        tb = _time_basis(acct, host, conns)
        if tb:
            findings.append((TIME_BASIS, tb, algorithm, rec.operation))
    return findings


def _container_findings(out: TlsOutput, plan: TlsPlan) -> list[Finding]:
    """The s_client checks that negotiated otherwise and servers that did not stop as
    told."""
    findings: list[Finding] = []
    for proto, lines in out.checks.items():
        p = PROTOCOLS.get(proto)
        problem = _check_problem(lines, p, plan.key) if p else None
        if problem:
            findings.append((NEGOTIATION, f"{proto}: {problem}", f"{proto}-{plan.key}", None))
    for proto, stop in out.stops.items():
        if stop.get("alive") != "1" or stop.get("rc") not in ("143", "0"):
            findings.append((SERVER_EXIT, f"{proto}: s_server was "
                             + ("alive" if stop.get("alive") == "1" else "no longer running")
                             + f" when stopped and exited {stop.get('rc')} (expected the "
                             "TERM signal's 143)", f"{proto}-{plan.key}", None))
    return findings


def parse_output(stdout: str, plan: TlsPlan) -> tuple[list[BenchFigure], list[str],
                                                        list[Finding]]:
    """Figure records, warnings, and the findings of one container: (code, message,
    algorithm, operation or None for both)."""
    out = read_output(stdout)
    records: list[BenchFigure] = []
    warnings = list(dict.fromkeys(out.problems))
    findings: list[Finding] = []
    if not out.key_pem.strip() or not out.cert_pem.strip():
        warnings.append("the run's key or certificate is missing from the output")
    for section in out.sections:
        protocol = PROTOCOLS.get(section.protocol)
        if protocol is None:
            continue
        parsed: STimeRun = parse_stime("\n".join(section.lines))
        acct = accounting(section, out.clk_tck)
        host = host_accounting(section)
        rec = _run_record(section, protocol, plan, out, parsed, acct, host)
        records.append(rec)
        warnings.extend(f"{rec.algorithm} {section.mode}: {w}" for w in parsed.warnings)
        if rec.status == "ok":
            findings.extend(_run_findings(section, rec, parsed, acct, host))
    findings.extend(_container_findings(out, plan))
    if out.problems and out.server_log:
        warnings.append("s_server said: " + " | ".join(out.server_log[:8]))
    return records, warnings, findings
