"""The line reader behind :func:`openssl_matrix.parse.parse_speed` and the report reader:
one ``Builder`` fed line by line (headers, symmetric and public-key tables, human and
``-mr`` progress, ``-mr`` records with speed.c's curve tables) and finished into one
:class:`~openssl_matrix.parse.figures.SpeedRun`. The formats are described in
:mod:`openssl_matrix.parse`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from openssl_matrix.parse.fastpaths import FAST
from openssl_matrix.parse.figures import (
    STATUS_UNIDENTIFIED,
    STATUS_UNKNOWN_UNIT,
    STATUS_UNPARSABLE,
    Figure,
    FigureRow,
    FigureTable,
    Progress,
    SpeedHeader,
    SpeedRun,
    canonical_algorithm,
    common_cell,
    compact_row,
    expand_rows,
    rate_from_tokens,
    sane,
    sym_value,
    version_tuple,
    with_evp,
)
from openssl_matrix.parse.grammar import (
    AMBIGUOUS_LEGACY_NAMES,
    EVP_ROW_INDEX,
    FAMILY_OPERATIONS,
    MR_DT_RE,
    MR_DTP_RE,
    MR_F_RE,
    MR_FN_RE,
    MR_H_RE,
    MR_R_RE,
    PK_GENERIC_RE,
    PROGRESS_KS_RE,
    PROGRESS_PK_RE,
    PROGRESS_SYM_COUNT_RE,
    PROGRESS_SYM_RE,
    float_or_none,
    int_or_none,
    mr_pk_identity,
    pk_progress_kind,
)
from openssl_matrix.parse.shapes import (
    ELAPSED_TEXT,
    HEADER,
    PKHEADER,
    PKROW,
    ROW,
    SHAPES,
    SYMHEADER,
    has_shape,
    remembered,
    shape_of,
)
from openssl_matrix.parse.timebasis import check_time_basis

# --------------------------------------------------------------------------------------
# The line parser


@dataclass
class Builder:
    version_hint: str | None
    evp_hint: bool | None
    evp_names: frozenset[str] | None = None
    """Algorithms named after -evp on the command lines seen (reports only)."""
    header: dict[str, object] = field(default_factory=dict)
    figures: list[Figure | FigureRow] = field(default_factory=list)
    """The run's figures, a common row as one :class:`FigureRow` (pk_keys, mr_indexes:
    one entry per item)."""
    pk_keys: list[tuple[str, int | None, str] | None] = field(default_factory=list)
    rows: bool = False
    """Whether ``figures`` holds a row."""
    mr_indexes: list[int | None] = field(default_factory=list)
    progress: list[Progress] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    machine_readable: bool = False
    saw_progress_stream: bool = False
    sym_sizes: list[int] | None = None
    pk_table: str | None = None
    mr_sizes: list[int] | None = None
    mr_pending: tuple[str, float | None, int | None, int | None, str | None, str | None] | None = (
        None
    )
    kem_names: list[str] = field(default_factory=list)
    sig_names: list[str] = field(default_factory=list)
    multi: bool = False
    multi_sizes: list[int] | None = None

    # -- helpers -----------------------------------------------------------------------

    @property
    def version(self) -> tuple[int, int, int] | None:
        text = self.header.get("version")
        found = version_tuple(text if isinstance(text, str) else None)
        return found or version_tuple(self.version_hint)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def add(
        self,
        fig: Figure,
        pk_key: tuple[str, int | None, str] | None = None,
        mr_index: int | None = None,
    ) -> None:
        self.figures.append(sane(fig))
        self.pk_keys.append(pk_key)
        self.mr_indexes.append(mr_index)

    # -- lines -------------------------------------------------------------------------

    def feed(self, line: str) -> None:
        stripped = line.strip()
        if not stripped:
            return
        # the shape of a line seen before is one look-up (parse/shapes.py): its patterns
        # are tried once per distinct line, not once per line
        shape = SHAPES.get(stripped) if FAST.on else None
        if shape is None:
            if not has_shape(stripped):
                self._feed_special(stripped)
                return
            shape = remembered(stripped)
        self._apply(stripped, shape)

    def _feed_special(self, stripped: str) -> None:
        """A line read before its shape is asked: -multi echoes, progress, -mr records and
        the elapsed-time notice (whose line goes on to be read as any other)."""
        if stripped.startswith("Got: ") or stripped.startswith("Forked child"):
            # -multi: the parent echoes each child's -mr records; its own table follows,
            # without a "type" header in 3.x, so the children's +H gives the sizes.
            self.multi = True
            match = MR_H_RE.match(stripped[5:].split(" from ")[0])
            if match and self.sym_sizes is None:
                self.multi_sizes = [int(n) for n in match.group(1).split(":")[1:]]
            return
        if ELAPSED_TEXT in stripped:  # ELAPSED_RE is a plain phrase: a substring test
            self.header["elapsed"] = True
            self.saw_progress_stream = True
        if stripped.startswith("Doing "):
            self.saw_progress_stream = True
            self._human_progress(stripped)
            return
        if stripped.startswith("+"):
            self._machine_line(stripped)
            return
        self._apply(stripped, shape_of(stripped))  # (not remembered: the notice is read)

    def _apply(self, stripped: str, shape: tuple[Any, ...]) -> None:
        """Read a line of this shape (parse/shapes.py), as the reader's questions, asked
        in turn, would."""
        kind = shape[0]
        if kind == ROW:
            if self.pk_table in ("kem", "sig") and self._pk_generic(stripped):
                return
            if self.sym_sizes is None and self.multi_sizes is not None:
                self.sym_sizes = self.multi_sizes
                self.multi_sizes = None
            if self.sym_sizes is not None and shape[1] is not None:
                self._sym_row(shape[1], shape[2], shape[3], shape[4])
                return
            # Anything else ends a symmetric table (prose, error messages).
            self.sym_sizes = None
        elif kind == PKROW:
            self._pk_row(shape)
        elif kind == HEADER:
            for name, value in shape[1]:
                self.header[name] = value
        elif kind == SYMHEADER:
            self.sym_sizes = list(shape[1])
            self.pk_table = None
        else:
            assert kind == PKHEADER
            self.pk_table = shape[1]
            self.sym_sizes = None

    # -- symmetric rows ----------------------------------------------------------------

    def _sym_row(self, label: str, values: list[str], memo: dict[Any, list[Any]],
                 common: bool) -> None:
        sizes = self.sym_sizes
        assert sizes is not None
        if len(values) != len(sizes):
            self.warn(
                f"row {label!r} has {len(values)} figures under a header of {len(sizes)} "
                "block sizes; its figures are marked unparsable"
            )
            self._sym_figures(label, sizes, [None] * len(sizes), human=True)
            return
        evp = self._evp_for(label, None)
        key = (*sizes, evp)
        figures = memo.get(key)
        if figures is None:  # the row's figures for these sizes and EVP-ness, kept
            start = len(self.figures)
            self._sym_figures(label, sizes, values, human=True, evp=evp, common=common)
            figures = memo[key] = self.figures[start:]
        else:
            self.rows = self.rows or type(figures[0]) is FigureRow
            self.figures += figures
            self.pk_keys += [None] * len(figures)
            self.mr_indexes += [None] * len(figures)

    def _sym_figures(
        self, label: str, sizes: Sequence[int], tokens: Sequence[str | None], *, human: bool,
        index: int | None = None, evp: bool | str | None = "ask", common: bool = False,
    ) -> None:
        """One figure per size of a row: its name, id and EVP-ness decided once for the row
        (they depend on the row and the header read so far, never on the cell)."""
        algorithm = canonical_algorithm(label)
        if evp == "ask":
            evp = self._evp_for(label, index)
        assert not isinstance(evp, str)
        figures, pk_keys, mr_indexes = self.figures, self.pk_keys, self.mr_indexes
        row = compact_row(
            algorithm, label, evp, sizes, tokens,  # type: ignore[arg-type]
            checked=common) if human and FAST.on and None not in tokens else None
        if row is not None:  # every cell common: the loop's figures, kept as one row
            self.rows = True
            figures.append(row)
            pk_keys.append(None)
            mr_indexes.append(index)
            return
        for size, token in zip(sizes, tokens, strict=True):
            # the common cell without sym_value's and sane's calls; every other one with them
            fig = common_cell(algorithm, label, evp, size, token) if human else None
            if fig is None:
                value, status, detail = (
                    (None, STATUS_UNPARSABLE, "column count does not match") if token is None
                    else sym_value(token, thousands_suffix=human))
                fig = sane(Figure(
                    algorithm, label, evp, size, value,
                    value / size if value is not None and size else None,
                    None, status, detail, None, None, token or "",
                ))  # fmt: skip
            figures.append(fig)
            pk_keys.append(None)
            mr_indexes.append(index)

    def _evp_for(self, label: str, index: int | None) -> bool | None:
        version = self.version
        if version is not None and version >= (3, 0, 0):
            return True
        name = label.strip()
        if name.lower() == "evp":
            return True
        if " " in name:
            return False
        if name.lower() not in AMBIGUOUS_LEGACY_NAMES:
            return True
        if index is not None and version is not None and (1, 0, 0) <= version < (3, 0, 0):
            return index == EVP_ROW_INDEX
        if self.evp_names is not None:
            return canonical_algorithm(name) in {canonical_algorithm(n) for n in self.evp_names}
        if self.evp_hint is False:
            return False
        return None  # decided once the whole table is known, see _settle_evp

    # -- public-key rows ---------------------------------------------------------------

    def _pk_row(self, shape: tuple[Any, ...]) -> None:
        """A classic public-key row of this shape (parse/shapes.py): its figures, kept in
        the shape's memo by EVP-ness when its columns are right (no warning to repeat)."""
        _, family, bits, algorithm, label, tokens, columns_ok, memo = shape
        if not columns_ok:
            self._pk_values(family, bits, algorithm, label, tokens)
            return
        evp = self._pk_evp(family)
        kept = memo.get(evp)
        if kept is None:
            start = len(self.figures)
            self._pk_values(family, bits, algorithm, label, tokens)
            memo[evp] = (self.figures[start:], self.pk_keys[start:])
            return
        self.figures += kept[0]
        self.pk_keys += kept[1]
        self.mr_indexes += [None] * len(kept[0])

    def _pk_generic(self, line: str) -> bool:
        """A row of 3.2+'s KEM or signature table (the one in force)."""
        match = PK_GENERIC_RE.match(line)
        if match is None:
            return False
        name = match.group("name")
        family = self.pk_table
        assert family is not None
        self._pk_values(
            family, None, f"{family}-{name.lower()}", name, match.group("vals").split()
        )
        return True

    def _pk_values(
        self, family: str, bits: int | None, algorithm: str, label: str, tokens: list[str]
    ) -> None:
        count = len(tokens) // 2
        ops_key = "rsa4" if family == "rsa" and count == 4 else family
        operations = FAMILY_OPERATIONS.get(ops_key, ())
        seconds = tokens[:count]
        rates = tokens[count:]
        ok_shape = (
            len(tokens) % 2 == 0
            and count == len(operations)
            and all(tok.endswith("s") for tok in seconds)
        )
        if not ok_shape:
            self.warn(f"public-key row {label!r} does not have the expected columns")
            for operation in operations or ("op",):
                self.add(
                    self._pk_figure(
                        family, bits, algorithm, label, operation,
                        None, None, STATUS_UNPARSABLE, "columns do not match", " ".join(tokens),
                    ),
                    (family, bits, operation),
                )  # fmt: skip
            return
        for operation, sec_token, rate_token in zip(operations, seconds, rates, strict=True):
            ops, sec, status, detail = rate_from_tokens(rate_token, sec_token)
            self.add(
                self._pk_figure(
                    family, bits, algorithm, label, operation, ops, sec, status, detail,
                    f"{sec_token} {rate_token}",
                ),
                (family, bits, operation),
            )  # fmt: skip

    def _pk_figure(
        self,
        family: str,
        bits: int | None,
        algorithm: str,
        label: str,
        operation: str,
        ops: float | None,
        seconds: float | None,
        status: str,
        detail: str,
        raw: str,
    ) -> Figure:
        return Figure(
            algorithm=algorithm,
            label=label,
            evp=self._pk_evp(family),
            block_size=None,
            bytes_per_s=None,
            ops_per_s=ops,
            operation=operation,
            status=status,
            detail=detail,
            bits=bits,
            seconds_per_op=seconds,
            raw=raw,
        )

    def _pk_evp(self, family: str) -> bool | None:
        version = self.version
        if version is None:
            return None
        if version >= (3, 0, 0):
            return True
        if family in ("rsa", "dsa", "ecdsa"):
            return False  # RSA_sign, DSA_sign, ECDSA_sign up to 1.1.1
        if family == "ecdh":
            if version >= (1, 1, 1):
                return True  # EVP_PKEY_derive
            if version < (1, 1, 0):
                return False  # ECDH_compute_key
            return None
        if family == "eddsa":
            return True  # EVP_DigestSign, 1.1.1
        return None

    # -- progress ------------------------------------------------------------------------

    def _human_progress(self, line: str) -> None:
        for match in PROGRESS_SYM_RE.finditer(line):
            self.progress.append(
                Progress(
                    label=match.group("label"),
                    seconds_requested=float(match.group("secs")),
                    block_size=int(match.group("size")),
                    count=int(match.group("count")),
                    seconds_reported=float(match.group("time")),
                )
            )
        for match in PROGRESS_SYM_COUNT_RE.finditer(line):
            self.progress.append(
                Progress(
                    label=match.group("label"),
                    seconds_requested=None,
                    block_size=int(match.group("size")),
                    count=int(match.group("count")),
                    seconds_reported=float(match.group("time")),
                )
            )
        for match in PROGRESS_PK_RE.finditer(line):
            family, operation = pk_progress_kind(match.group("what"))
            self.progress.append(
                Progress(
                    label=f"{match.group('bits')} bits {match.group('what').strip()}",
                    seconds_requested=float(match.group("secs")),
                    block_size=None,
                    count=int(match.group("count")),
                    seconds_reported=float(match.group("time")),
                    operation=operation,
                    bits=int(match.group("bits")),
                    family=family,
                )
            )
        for match in PROGRESS_KS_RE.finditer(line):
            family = "kem" if match.group("kind") == "KEM" else "sig"
            op = match.group("op")
            self.progress.append(
                Progress(
                    label=f"{match.group('name')} {op}",
                    seconds_requested=float(match.group("secs")),
                    block_size=None,
                    count=int(match.group("count")),
                    seconds_reported=float(match.group("time")),
                    operation="sign" if op == "signs" else op,
                    family=family,
                )
            )

    # -- -mr -------------------------------------------------------------------------------

    def _machine_line(self, line: str) -> None:
        match = MR_H_RE.match(line)
        if match:
            self.machine_readable = True
            self.mr_sizes = [int(n) for n in match.group(1).split(":")[1:]]
            return
        match = MR_F_RE.match(line)
        if match:
            self.machine_readable = True
            self._mr_symmetric(int(match.group("idx")), match.group("name"), match.group("vals"))
            return
        match = MR_FN_RE.match(line)
        if match:
            self.machine_readable = True
            self._mr_public_key(int(match.group("kind")), match.group("rest").split(":"), line)
            return
        match = MR_DT_RE.match(line)
        if match:
            self.saw_progress_stream = True
            self.mr_pending = (
                match.group("label"),
                # +DT:<alg>:<seconds>:<size>; +DN (no SIGALRM) gives a count instead
                float(match.group("secs")) if line.lstrip().startswith("+DT") else None,
                int(match.group("size")),
                None,
                None,
                None,
            )
            return
        match = MR_DTP_RE.match(line)
        if match:
            self.saw_progress_stream = True
            self._mr_dtp(match.group("rest").split(":"), line)
            return
        match = MR_R_RE.match(line)
        if match:
            self._mr_result(match.group("kind"), match.group("rest").split(":"))
            return

    def _mr_symmetric(self, index: int, name: str, values: str) -> None:
        tokens = values.split(":")[1:]
        sizes = self.mr_sizes
        if sizes is None:
            self.warn(f"+F record for {name!r} before any +H header; sizes unknown")
            sizes = []
        if len(tokens) != len(sizes):
            self.warn(
                f"+F record for {name!r} has {len(tokens)} figures for {len(sizes)} sizes; "
                "its figures are marked unparsable"
            )
            self._sym_figures(name, sizes, [None] * len(sizes), human=False, index=index)
            return
        self._sym_figures(name, sizes, tokens, human=False, index=index)

    def _mr_public_key(self, kind: int, parts: list[str], line: str) -> None:
        label = line.strip()
        version = self.version
        rates_era: bool | None
        if kind >= 6:
            rates_era = True  # +F6 (EdDSA) and later exist only from 1.1.1
        elif version is None:
            rates_era = None
        else:
            rates_era = version >= (1, 1, 1)
        try:
            index = int(parts[0])
        except (ValueError, IndexError):
            self.warn(f"cannot read -mr record {label!r}")
            return
        identity = mr_pk_identity(kind, index, parts, version)
        if identity is None:
            self.warn(f"unknown -mr record {label!r}")
            return
        kind, family, bits, algorithm, values = identity
        ops_key = "rsa4" if family == "rsa" and len(values) == 4 else family
        operations = FAMILY_OPERATIONS[ops_key]
        pending_name = f"{family}-#{index}"
        if rates_era is None and values:
            rates_era = self._unit_from_progress(family, bits, operations[0], values[0])
        if len(values) < len(operations):
            self.warn(f"-mr record {label!r} has too few values")
            for operation in operations:
                self.add(
                    self._pk_figure(
                        family, bits, algorithm or pending_name, label, operation,
                        None, None, STATUS_UNPARSABLE, "too few values", line.strip(),
                    ),
                    (family, bits, operation), index,
                )  # fmt: skip
            return
        results: list[tuple[float | None, float | None, str, str]]
        if len(operations) == 1:
            # +F5/+F8: two values, seconds and rate in the order of the era.
            first, second = values[0], values[1] if len(values) > 1 else None
            if rates_era is None:
                results = [(None, None, STATUS_UNKNOWN_UNIT, "")]
            elif rates_era:
                results = [rate_from_tokens(first, second + "s" if second else None)]
            else:
                results = [rate_from_tokens(second, first + "s")]
        elif rates_era is None:
            results = [(None, None, STATUS_UNKNOWN_UNIT, "")] * len(operations)
        elif rates_era:
            results = [rate_from_tokens(v, None) for v in values[: len(operations)]]
        else:
            results = [rate_from_tokens(None, v + "s") for v in values[: len(operations)]]
        for operation, (ops, sec, status, detail) in zip(operations, results, strict=True):
            if status == STATUS_UNKNOWN_UNIT:
                detail = (
                    "-mr public-key values are seconds per operation before 1.1.1 and "
                    "operations per second after; pass version= to decide"
                )
                self.warn(
                    "-mr public-key records without a known version: their figures are "
                    "unknown-unit (pass version=)"
                )
            if algorithm is None and kind in (4, 5):
                ops, status = None, STATUS_UNIDENTIFIED
                detail = (
                    f"index {index} with {bits} bits matches no curve table of "
                    f"{'this version' if version else 'any known version'}"
                )
            self.add(
                self._pk_figure(
                    family, bits, algorithm or pending_name, label, operation,
                    ops, sec, status, detail, ":".join(values),
                ),
                (family, bits, operation), index,
            )  # fmt: skip

    def _unit_from_progress(
        self, family: str, bits: int | None, operation: str, token: str
    ) -> bool | None:
        """Whether a -mr value is a rate, judged against its progress line (count / time).

        Used only when the version is unknown. The -mr stderr of the same run says how
        many operations ran in how many seconds; the printed value is either that rate
        or its inverse, and the two differ by orders of magnitude except near 1 op/s.
        """
        value = float_or_none(token)
        if value is None or not math.isfinite(value) or value <= 0:
            return None
        for p in self.progress:
            if (p.family, p.bits, p.operation) != (family, bits, operation):
                continue
            if p.count <= 0 or p.seconds_reported <= 0:
                continue
            rate = p.count / p.seconds_reported
            as_rate = abs(math.log(value / rate))
            as_seconds = abs(math.log(1 / value / rate))
            if min(as_rate, as_seconds) > math.log(1.5) or abs(as_rate - as_seconds) < 1:
                return None  # neither reading matches, or both do (about 1 op/s)
            self.warn(
                "-mr public-key unit taken from the progress lines (no version given): "
                + ("operations per second" if as_rate < as_seconds else "seconds per operation")
            )
            return as_rate < as_seconds
        return None

    def _mr_dtp(self, parts: list[str], line: str) -> None:
        # +DTP:<bits>:<op>:<alg>:<secs> (all) or +DTP:<name>:<op>:<secs> (3.2+ KEM/sig)
        if len(parts) >= 4 and parts[0].isdigit():
            bits = int(parts[0])
            family, operation = pk_progress_kind(f"{parts[1]} {parts[2]}")
            self.mr_pending = (
                f"{bits} bits {parts[1]} {parts[2]}".replace("  ", " "),
                float_or_none(parts[3]),
                None,
                bits,
                family,
                operation,
            )
        elif len(parts) >= 3:
            name, op = parts[0], parts[1]
            self.mr_pending = (
                f"{name} {op}",
                float_or_none(parts[2]),
                None,
                None,
                None,
                "sign" if op == "signs" else op,
            )
        else:
            self.warn(f"cannot read -mr progress {line.strip()!r}")

    def _mr_result(self, kind: str, parts: list[str]) -> None:
        pending, self.mr_pending = self.mr_pending, None
        if pending is None or not parts:
            return
        label, secs, size, bits, family, operation = pending
        count = int_or_none(parts[0])
        reported = float_or_none(parts[-1])
        if count is None or reported is None:
            return
        if family is None and operation is not None:
            # 3.2+ KEM (+R15..+R17) and signature (+R18..+R20) runs, named by +DTP.
            number = int_or_none(kind) or 0
            family = "kem" if 15 <= number <= 17 else "sig"
            names = self.kem_names if family == "kem" else self.sig_names
            name = label.rsplit(" ", 1)[0]
            if name not in names:
                names.append(name)
        self.progress.append(
            Progress(
                label=label,
                seconds_requested=secs,
                block_size=size,
                count=count,
                seconds_reported=reported,
                operation=operation,
                bits=bits,
                family=family,
            )
        )

    # -- end ----------------------------------------------------------------------------

    def finish(self) -> SpeedRun:
        if self.progress and self.rows:  # figures marked one by one: no rows
            self.rows = False
            self.figures, self.pk_keys, self.mr_indexes = expand_rows(
                self.figures, self.pk_keys, self.mr_indexes)
        self._settle_mr_names()
        self._settle_evp()
        self._check_time_basis()
        header = self._header()
        if self.multi:
            self.warn(
                "-multi output: the per-child 'Got:' records were skipped; the table is "
                "the parent's sum over children"
            )
        version_hint = version_tuple(self.version_hint)
        printed = version_tuple(header.version)
        if version_hint and printed and version_hint != printed:
            self.warn(
                f"version {self.version_hint!r} was given but the output says "
                f"{header.version!r}; the output's version was used"
            )
        return SpeedRun(
            header=header,
            figures=FigureTable(tuple(self.figures)) if self.rows
            else tuple(self.figures),  # type: ignore[arg-type]  # (no rows: figures alone)
            progress=tuple(self.progress),
            warnings=tuple(self.warnings),
            machine_readable=self.machine_readable,
        )

    def _header(self) -> SpeedHeader:
        values = dict(self.header)
        if self.multi:
            values["elapsed"] = True  # do_multi() sets usertime = 0 in every child
        elif "elapsed" not in values and self.saw_progress_stream and not self.machine_readable:
            values["elapsed"] = False
        if "version" not in values and self.version_hint:
            values["version"] = self.version_hint
        return SpeedHeader(**values)  # type: ignore[arg-type]

    def _settle_mr_names(self) -> None:
        counters = {"kem": 0, "sig": 0}
        seen: dict[tuple[str, int | None], str] = {}
        for i, fig in enumerate(self.figures):
            if "-#" not in fig.algorithm or not isinstance(fig, Figure):
                continue
            family = fig.algorithm.split("-#", 1)[0]
            index = self.mr_indexes[i]
            if family not in counters:
                continue
            key = (family, index)
            if key not in seen:
                names = self.kem_names if family == "kem" else self.sig_names
                position = counters[family]
                counters[family] += 1
                seen[key] = names[position] if position < len(names) else ""
            name = seen[key]
            if name:
                self.figures[i] = replace(fig, algorithm=f"{family}-{name.lower()}", label=name)
            else:
                self.figures[i] = replace(
                    fig,
                    bytes_per_s=None,
                    ops_per_s=None,
                    status=STATUS_UNIDENTIFIED,
                    detail=(
                        f"+F{9 if family == 'kem' else 10} index {index} has no name; the "
                        "names come from the +DTP lines on stderr"
                    ),
                )

    def _settle_evp(self) -> None:
        """Decide the EVP-ness of 1.x rows whose name is the same on both paths.

        Up to 1.1.1 speed has a single EVP row (names[D_EVP], the one -evp algorithm). So
        when the version is known to be 1.x and another row already is that EVP row, the
        undecided rows are legacy; when -evp was passed and exactly one row is undecided
        and no other row is EVP, that row is the EVP one.
        """
        if not any(f.evp is None for f in self.figures):
            return
        marks = [(f.label, f.evp, type(f) is FigureRow or f.block_size is not None)  # type: ignore[union-attr]
                 for f in self.figures]
        undecided = {label for label, evp, sym in marks if sym and evp is None}
        if not undecided:
            return
        evp_rows = {label for label, evp, sym in marks if sym and evp is True}
        has_evp_row = bool(evp_rows)
        version = self.version
        decided: dict[str, bool] = {}
        # (several EVP rows: tables of several runs pasted as one; the rule does not hold)
        if len(evp_rows) == 1 and version is not None and version < (3, 0, 0) and not self.multi:
            decided = dict.fromkeys(undecided, False)
        elif self.evp_hint and len(undecided) == 1 and not has_evp_row:
            decided = dict.fromkeys(undecided, True)
        if decided:
            self.figures = [
                with_evp(f, decided[label]) if sym and evp is None and label in decided else f
                for f, (label, evp, sym) in zip(self.figures, marks, strict=True)
            ]

    def _check_time_basis(self) -> None:
        warning = check_time_basis(self.figures, self.progress,  # type: ignore[arg-type]
                                   self.pk_keys)  # (rows expanded where there is progress)
        if warning:
            self.warn(warning)


def parse_lines(
    lines: Sequence[str],
    *,
    version: str | None = None,
    evp: bool | None = None,
    evp_names: frozenset[str] | None = None,
) -> SpeedRun:
    """Parse already split lines (stdout and stderr interleaved) into one run."""
    builder = Builder(version_hint=version, evp_hint=evp, evp_names=evp_names)
    for line in lines:
        builder.feed(line)
    return builder.finish()
