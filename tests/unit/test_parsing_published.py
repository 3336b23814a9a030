"""Published reports that are not fixtures of the parser's own making (the issue's check).

Each file under ``fixtures/speed/published/`` is a verbatim excerpt of a real report (see
the README there). Every form of it, as published, with its line breaks flattened into
spaces (as web archives do) and quoted with ``> `` (as a reply quotes it), goes through
``parse_paste``; an independent reader below, which knows nothing of the parser, lists
every figure printed in a table row, and the two must agree exactly:

* every printed figure comes back, once, under the right name, block size or operation,
  and the right version header; ``k`` figures times 1000 to the printed decimals,
  operations per second as printed (or 1 / the printed seconds per operation, which
  the parser may prefer when it is the more precise of the two printed forms);
* nothing else comes back: no value without a printed token behind it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest

from openssl_matrix.parse import parse_paste
from openssl_matrix.parse.figures import (
    STATUS_INFINITE,
    STATUS_OK,
    STATUS_UNPARSABLE,
    STATUS_ZERO,
    SpeedRun,
)

PUBLISHED = Path(__file__).resolve().parents[1] / "fixtures" / "speed" / "published"

# --------------------------------------------------------------------------------------
# The independent reader: a token walk over the text, written from the printf formats
# and the published pages, not from parsing.py.

_NUM = re.compile(r"-?(?:\d+\.\d+|inf|nan)k?")
_SEC = re.compile(r"(?:\d+(?:\.\d+)?|inf|-?nan)s")
_RATE = re.compile(r"\d+(?:\.\d+)?|inf|-?nan")
_VERSION = re.compile(r"OpenSSL (\d+\.\d+\.\d+[a-z]*(?:-[\w.+-]*)?) (?:\d{1,2} \w{3} \d{4}|xx XXX)")
_PK_HEADS = {
    "sign verify sign/s verify/s": ("sign", "verify"),
    "op op/s": ("op",),
    "sign verify encrypt decrypt sign/s verify/s encr./s decr./s": (
        "sign", "verify", "encrypt", "decrypt",
    ),
    "keygen encaps decaps keygens/s encaps/s decaps/s": ("keygen", "encaps", "decaps"),
    "keygen signs verify keygens/s sign/s verify/s": ("keygen", "sign", "verify"),
}  # fmt: skip


@dataclass(frozen=True)
class Printed:
    """One figure as printed: where it sits and the token(s) it was printed as."""

    version: str | None
    label: str  # the row name as printed (blanks squeezed)
    key: int | str  # block size, or operation
    value: str  # the printed token: "1841.78k", "0.00", "infs", "1070.3"
    seconds: str | None = None  # public key: the printed seconds per operation
    bits: int | None = None


def _tokens(text: str) -> tuple[list[str], list[bool]]:
    """The words of the text, and whether each one starts a line (after the quoting)."""
    words: list[str] = []
    starts: list[bool] = []
    lined = text.count("\n") > 2  # a flattened page has no line to start a row
    for line in re.sub(r"(?m)^[ \t]*(?:>[ \t]?)+", "", text).splitlines():
        kept = [t for t in line.split() if not re.fullmatch(r">+|```\w*|%%", t)]
        words += kept
        starts += [not lined or n == 0 for n in range(len(kept))]
    return words, starts


def printed_figures(text: str) -> tuple[list[Printed], int]:
    """Every figure printed in a table row, and how many per-child -multi records."""
    t, starts = _tokens(text)
    out: list[Printed] = []
    version: str | None = None
    sizes: list[int] | None = None
    multi_sizes: list[int] | None = None
    mr_sizes: list[int] | None = None
    pk_ops: tuple[str, ...] | None = None
    children = 0
    i = 0
    while i < len(t):
        joined = " ".join(t[i : i + 12])
        m = _VERSION.match(joined)
        if m:
            version, i = m.group(1), i + 1
            continue
        if t[i] == "version:" and i + 1 < len(t):
            version, i = t[i + 1], i + 2
            continue
        if t[i] == "type" and i + 2 < len(t) and t[i + 2] == "bytes":
            sizes, j = [], i + 1
            while j + 1 < len(t) and t[j].isdigit() and t[j + 1] == "bytes":
                sizes.append(int(t[j]))
                j += 2
            pk_ops, i = None, j
            continue
        head = next((h for h in _PK_HEADS if joined.startswith(h + " ") or joined == h), None)
        if head:
            pk_ops, sizes, i = _PK_HEADS[head], None, i + len(head.split())
            continue
        if t[i] == "Got:":  # a -multi child's record, echoed by the parent
            if t[i + 1].startswith("+H:"):
                multi_sizes = [int(n) for n in t[i + 1].split(":")[1:]]
            else:
                children += 1
            i += 4
            continue
        if t[i].startswith("+H:"):
            mr_sizes, i = [int(n) for n in t[i].split(":")[1:]], i + 1
            continue
        if t[i].startswith("+F:") and mr_sizes:
            _, _idx, name, *vals = t[i].split(":")
            for size, val in zip(mr_sizes, vals, strict=True):
                out.append(Printed(version, name, size, val))
            i += 1
            continue
        row = _pk_row(t, i, pk_ops) if starts[i] else None
        if row:
            label, bits, secs, rates, i = row
            assert pk_ops is not None
            for op, sec, rate in zip(pk_ops, secs, rates, strict=True):
                out.append(Printed(version, label, op, rate, sec, bits))
            continue
        columns = sizes or multi_sizes
        if columns and starts[i]:
            found = _sym_row(t, i, len(columns), starts)
            if found:
                label, vals, i = found
                for size, val in zip(columns, vals, strict=True):
                    out.append(Printed(version, label, size, val))
                continue
        i += 1
    return out, children


def _sym_row(t: list[str], i: int, n: int, starts: list[bool]) -> tuple[str, list[str], int] | None:
    for words in range(1, 5):
        if i + words + n > len(t) or any(_NUM.fullmatch(w) for w in t[i : i + words]):
            return None
        if words > 1 and starts[i + words - 1] and not all(starts):
            return None  # a name does not run over two lines
        vals = t[i + words : i + words + n]
        after = t[i + words + n] if i + words + n < len(t) else ""
        if len(vals) == n and all(_NUM.fullmatch(v) for v in vals) and not _NUM.fullmatch(after):
            return " ".join(t[i : i + words]), vals, i + words + n
    return None


def _pk_row(
    t: list[str], i: int, ops: tuple[str, ...] | None
) -> tuple[str, int | None, list[str], list[str], int] | None:
    if ops is None:
        return None
    n = len(ops)
    bits: int | None = None
    if t[i] in ("rsa", "dsa") and t[i + 1 : i + 2] != [] and t[i + 1].isdigit():
        if t[i + 2 : i + 3] not in (["bit"], ["bits"]):
            return None
        label_end, bits = i + 3, int(t[i + 1])
    elif t[i].isdigit() and i + 2 < len(t) and t[i + 1] in ("bit", "bits"):
        bits = int(t[i])
        label_end = i + 3 if t[i + 2] == "ffdh" else i + 4
    elif n == 3:  # KEM / signature tables: one name
        label_end = i + 1
    else:
        return None
    secs = t[label_end : label_end + n]
    rates = t[label_end + n : label_end + 2 * n]
    if len(rates) != n or not all(_SEC.fullmatch(s) for s in secs):
        return None
    if not all(_RATE.fullmatch(r) for r in rates):
        return None
    return " ".join(t[i:label_end]), bits, secs, rates, label_end + 2 * n


# --------------------------------------------------------------------------------------
# Comparison


def _bytes(token: str) -> float | None:
    if token.endswith("k"):
        return float(Decimal(token[:-1]) * 1000)
    return float(Decimal(token))


def compare(text: str, source: str | None = None) -> list[str]:
    """Disagreements between parse_paste(text) and the figures printed in ``source``.

    ``source`` is the report as published (default: ``text``): its line breaks tell where
    a row starts, which a flattened copy no longer does.
    """
    expected, _children = printed_figures(source if source is not None else text)
    runs: list[SpeedRun] = parse_paste(text)
    problems: list[str] = []
    remaining = list(expected)
    for run in runs:
        keys = [(f.algorithm, f.evp, f.block_size, f.operation, f.bits) for f in run.figures]
        problems += [
            f"one run holds {key} twice (two measurements merged)"
            for key in sorted({k for k in keys if keys.count(k) > 1}, key=str)
        ]
        for fig in run.figures:
            match = _find(fig, run, remaining)
            if match is None:
                value = fig.bytes_per_s if fig.bytes_per_s is not None else fig.ops_per_s
                problems.append(
                    f"not printed: {fig.algorithm} {fig.block_size or fig.operation} = {value} "
                    f"({fig.status}, label {fig.label!r}, version {run.header.version})"
                )
            else:
                remaining.remove(match)
    problems += [f"lost: {p}" for p in remaining]
    return problems


def _find(fig: object, run: SpeedRun, candidates: list[Printed]) -> Printed | None:
    from openssl_matrix.parse.figures import Figure

    assert isinstance(fig, Figure)
    for p in candidates:
        if p.version != run.header.version:
            continue
        if fig.label.startswith("+"):  # -mr: "+F:22:aes-128-cbc:..."
            if p.label not in fig.label.split(":"):
                continue
        elif " ".join(fig.label.split()) != p.label:
            continue
        if fig.block_size is not None:
            if p.key != fig.block_size or p.seconds is not None:
                continue
            printed = _bytes(p.value)
            if printed is not None and printed < 0:  # no measurement gives that
                ok = fig.status == STATUS_UNPARSABLE and fig.bytes_per_s is None
            elif printed == 0:
                ok = fig.status == STATUS_ZERO and fig.bytes_per_s is None
            else:
                ok = fig.status == STATUS_OK and fig.bytes_per_s == printed
        else:
            if p.key != fig.operation or p.seconds is None or fig.bits != p.bits:
                continue
            rate = float(p.value)
            sec = p.seconds[:-1]
            if sec.startswith("inf") or (rate == 0 and float(sec) == 0):
                ok = fig.status == STATUS_ZERO and fig.ops_per_s is None
            elif rate == 0:  # "0.0" printed for 73.9 s per operation: 1 / seconds
                ok = fig.ops_per_s == 1.0 / float(sec) and fig.seconds_per_op == float(sec)
            elif float(sec) == 0 and p.value in ("inf", "nan"):
                ok = fig.status == STATUS_INFINITE
            else:
                allowed = {rate} | ({1.0 / float(sec)} if float(sec) > 0 else set())
                ok = fig.ops_per_s in allowed and fig.seconds_per_op == float(sec)
        if ok:
            return p
    return None


def flattened(text: str) -> str:
    return text.replace("\n", " ")


def quoted(text: str) -> str:
    return "".join(f"> {line}\n" for line in text.splitlines())


FORMS: dict[str, Callable[[str], str]] = {
    "as-published": lambda text: text,
    "flattened": flattened,
    "quoted": quoted,
}

FILES = sorted(p.name for p in PUBLISHED.iterdir() if p.name != "README.md")


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", FILES)
def test_every_printed_figure_comes_back_exact(name: str, form: str) -> None:
    source = (PUBLISHED / name).read_text()
    expected, _ = printed_figures(source)
    assert expected, "the independent reader found no figure"
    assert compare(FORMS[form](source), source) == []


# --------------------------------------------------------------------------------------
# Pins: a few exact figures of each report, read by hand off the published text.


def runs_of(name: str, form: str = "as-published") -> list[SpeedRun]:
    return parse_paste(FORMS[form]((PUBLISHED / name).read_text()))


def value(run: SpeedRun, algorithm: str, key: int | str) -> float | None:
    fig = (
        run.figure(algorithm, block_size=key)
        if isinstance(key, int)
        else run.figure(algorithm, operation=key)
    )
    assert fig is not None, (algorithm, key)
    return fig.bytes_per_s if isinstance(key, int) else fig.ops_per_s


# (file, [(version, figure count)], [(run index, algorithm, block size or operation, value)])
PINS = [
    (
        "tomeshnet-1.0.1k-0.9.8zc.md",
        [("1.0.1k", 14), ("0.9.8zc", 14)],
        [
            (0, "sha256", 16, 4881480.0),
            (0, "sha512", 8192, 13041660.0),
            (0, "rsa-2048", "verify", 710.4),
            (0, "rsa-1024", "sign", 1 / 0.006892),  # 0.006892s is finer than "145.1"
            (1, "sha256", 8192, 168763260.0),
            (1, "rsa-2048", "sign", 340.0),
        ],
    ),
    (
        "finnie-1.0.1e-rpi-1.0.1f-i5.txt",
        [("1.0.1e", 207), ("1.0.1f", 207)],
        [
            (0, "md4", 16, 2111920.0),
            (0, "camellia-128-cbc", 8192, 10792070.0),
            (0, "ghash", 16, 15969050.0),
            (0, "ecdsa-b571", "verify", 1 / 0.3290),  # 0.3290s is finer than "3.0"
            (0, "ecdh-p256", "op", 91.0),
            (1, "ghash", 16, 1555713020.0),
            (1, "ecdsa-secp160r1", "sign", 20603.9),  # printed 0.0000s: the rate is all
            (1, "dsa-2048", "verify", 2984.4),
        ],
    ),
    (
        "elinux-rpi-0.9.8o-1.0.1c.txt",
        [("0.9.8o", 149), ("1.0.1c", 159)],
        [
            (0, "md2", 16, 148810.0),
            (0, "aes-256-ige", 8192, 2687740.0),
            (0, "rsa-4096", "sign", 1 / 1.805),
            (1, "rc5-cbc", 16, 16204470.0),
            (1, "camellia-256-cbc", 16, 7513970.0),
            (1, "dsa-512", "verify", 442.0),
        ],
    ),
    (
        "apache-security-ch4-openssl-speed.flat.txt",
        [(None, 75)],
        [(0, "md2", 16, 1841780.0), (0, "bf-cbc", 1024, 84815870.0)],
    ),
    (
        "linux-crypto-afalg-quoted.txt",
        [(None, 6), (None, 6)],
        [(0, "aes-128-cbc", 8192, 29221690.0), (1, "aes-128-ecb", 16384, 5409910.0)],
    ),
    (
        "linux-crypto-afalg-quoted2.txt",
        [(None, 6)],
        [(0, "aes-128-cbc", 8192, 25753930.0), (0, "aes-128-cbc", 16384, 31167080.0)],
    ),
    (
        "lkml-3.0.11-riscv-quoted.txt",
        [("3.0.11", 2)],
        [(0, "rsa-2048", "sign", 1 / 0.26), (0, "rsa-2048", "verify", 1 / 0.006398)],
    ),
    (
        "erlang-otp-mr-1.x.txt",
        [(None, 5)],
        [(0, "aes-128-cbc", 16, 728616225.5), (0, "aes-128-cbc", 1024, 806762338.46)],
    ),
    (
        "openssl-25751-3.5.0-dev-rsa4.md",
        [("3.5.0-dev", 20)],
        [(0, "rsa-512", "encrypt", 247227.1), (0, "rsa-3072", "decrypt", 348.2)],
    ),
    (
        "openssl-21257-kem-sig-macos.md",
        [(None, 39)],
        [
            (0, "kem-rsa15360", "keygen", 1 / 73.9),  # printed "0.0" ops/s
            (0, "kem-ecp-256", "keygen", 63252.9),
            (0, "sig-rsa512", "verify", 402499.9),
        ],
    ),
    (
        "openssl-6808-rsa-primes.md",
        [(None, 2), (None, 2), (None, 4), (None, 4)],
        [
            (0, "rsa-2048", "sign", 1070.3),
            (1, "rsa-2048", "sign", 1231.1),
            (2, "rsa-2048", "sign", 1132.7),
            (2, "rsa-4096", "sign", 1 / 0.005973),
            (3, "rsa-2048", "sign", 860.6),
            (3, "rsa-4096", "verify", 7702.1),
        ],
    ),
    (
        "erlang-otp-372-prose-between-rows.md",
        [(None, 20)],
        [
            (0, "aes-128-cbc", 16, 105336340.0),  # "aes-128 cbc", the legacy row
            (0, "rc4", 8192, 788460890.0),
            (0, "aes-128-gcm", 256, 1156720810.0),
        ],
    ),
    (
        "openssl-11900-groups-one-header.md",
        [(None, 48), (None, 18)],
        [(0, "md5", 16, 43573940.0), (0, "rand", 16384, 936656900.0), (1, "md5", 16, 19422700.0)],
    ),
    (
        "openssl-11903-multi1-negative.md",
        [("3.0.0-alpha3-dev", 6), ("3.0.0-alpha3-dev", 6)],
        [(0, "evp", 256, 49380.0), (0, "evp", 16384, 456.77), (1, "evp", 1024, 5402.66)],
    ),
    (
        "openssl-16858-1.1.0k-3.0-blocks.md",
        [(None, 6)] * 5,
        [(0, "aes-128-cbc", 16, 90320550.0), (4, "aes-128-cbc", 1024, 203026430.0)],
    ),
    ("tongsuo-127-multi2-sm2.txt", [("1.1.1h-dev", 2)], []),
    (
        "openssl-10415-1.1.1d-3.0.0-dev-gcm.md",
        [("1.1.1d", 6), ("3.0.0-dev", 6)],
        [(0, "aes-128-gcm", 16, 690985950.0), (1, "aes-128-gcm", 16384, 5711025490.0)],
    ),
    (
        "openssl-32760-master-vs-patch-gcm.md",
        [(None, 18), (None, 18)],
        [(0, "aes-128-gcm", 16, 87073190.0), (1, "aes-256-gcm", 16384, 10349531710.0)],
    ),
]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(("name", "shape", "figures"), PINS, ids=[p[0] for p in PINS])
def test_published_pins(
    name: str,
    shape: list[tuple[str | None, int]],
    figures: list[tuple[int, str, int | str, float]],
    form: str,
) -> None:
    runs = runs_of(name, form)
    assert [(r.header.version, len(r.figures)) for r in runs] == shape
    for index, algorithm, key, expected in figures:
        assert value(runs[index], algorithm, key) == expected


def test_pins_cover_every_published_file() -> None:
    assert sorted(p[0] for p in PINS) == FILES


def test_negative_figures_are_not_measurements() -> None:
    """3.0.0-alpha3's wrap ciphers printed -124.63: the cell is kept, unusable, and said."""
    run = runs_of("openssl-11903-multi1-negative.md")[0]
    fig = run.figure("evp", block_size=16)
    assert fig is not None
    assert (fig.status, fig.bytes_per_s, fig.raw) == (STATUS_UNPARSABLE, None, "-124.63")
    assert "negative" in fig.detail


def test_multi_children_records_are_not_results() -> None:
    """Tongsuo's -multi 2: each child's Got: +F6 line is skipped; the parent printed infs."""
    (run,) = runs_of("tongsuo-127-multi2-sm2.txt")
    assert [(f.algorithm, f.operation, f.status) for f in run.figures] == [
        ("sm2", "sign", STATUS_ZERO),
        ("sm2", "verify", STATUS_ZERO),
    ]
    assert any("-multi" in w for w in run.warnings)
