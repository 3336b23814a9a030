"""A suite kind of this test's own, ``kind: digest`` (hashes only, always through EVP), is
this one module and one registry entry (``registered``): a matrix using it loads, its
invocations are planned, the bench runs them on the fake engine (the one seam) and the
report shows its figures, with nothing else in the package changed (issue 34)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from openssl_matrix.core.errors import ConfigError
from openssl_matrix.matrix.check import CheckContext
from openssl_matrix.matrix.kinds import KINDS, kind_of, registered
from openssl_matrix.matrix.kinds.base import (
    FIGURES_BLOCKS,
    RUNNER_SPEED,
    BaseKind,
    KindOptions,
    SuiteKind,
    refuse_keys,
    require_known,
)
from openssl_matrix.measure.speedcmd import speed_invocations, unwrap_speed
from openssl_matrix.report.charts import NO_CHARTS
from openssl_matrix.report.page import build_report

from ..fakes import one_release_bench
from .test_reproduce_fake import SHA256, SIZES, fake_speed

# -- the kind: what a plug-in module holds ---------------------------------------------

DIGESTS = ("md5", "sha1", "sha256", "sha512")


@dataclass(frozen=True)
class DigestKind(BaseKind):
    """Digests through EVP, one invocation each: no low-level path, no -decrypt."""

    def check(self, ctx: CheckContext, entry: Mapping[str, Any],
              algorithms: tuple[str, ...], kp: str) -> KindOptions:
        refuse_keys(ctx, entry, ("evp", "decrypt", "engine"), kp,
                    "not used by a suite with kind: digest (always through EVP)")
        require_known(ctx, algorithms, list(DIGESTS), kp, "a digest")
        return KindOptions()

    def paths(self, evp: bool, legacy: bool) -> tuple[str, ...]:
        return ("evp",)

    def speed_evp(self, path: str, command: Sequence[str]) -> bool:
        return True


KIND: SuiteKind = DigestKind("digest", RUNNER_SPEED, FIGURES_BLOCKS, "a digest figure")

# -- the test ---------------------------------------------------------------------------

SUITES = """  hashes:
    kind: digest
    algorithms: [sha256]
    seconds: 1
"""


def test_a_new_kind_is_one_module_and_one_registry_entry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    for folder in ("before", "bad"):
        (tmp_path / folder).mkdir()
    with pytest.raises(ConfigError, match="'digest' is not a suite kind"):
        one_release_bench(tmp_path / "before", SUITES, fake_speed)
    with registered(KIND):
        assert kind_of("digest") is KIND
        m, backend, tree, bencher = one_release_bench(tmp_path, SUITES, fake_speed)
        suite = m.suite("hashes")
        assert suite.suite_kind is KIND and suite.paths == ("evp",)
        # planned as the kind says: one EVP speed run of the digest
        invocations, notes = speed_invocations("1.1.1w", suite)
        assert notes == []
        assert [unwrap_speed(i.exec_command)[-2:] for i in invocations] == \
            [("-evp", "sha256")]
        # run on the fake engine and filed
        [out] = bencher.bench(list(m.variants), suite, "auto")
        assert out.status == "complete"
        sha = [f for f in out.figures if f["algorithm"] == "sha256"]
        assert {f["block_size"] for f in sha} == set(SIZES)
        assert {f["path"] for f in sha} == {"evp"}
        assert all(f["bytes_per_s"] == SHA256 for f in sha)
        # and reported: a bulk table with the digest's figure at 8192 bytes
        summary = build_report(tree, tmp_path / "report", block_size=8192,
                               charts=NO_CHARTS)
        [group] = summary.groups
        assert group.algorithms == ["sha256"]
        cells = [group.cell(row, "sha256", 8192) for row in group.method_rows()]
        assert [c.median for c in cells if c is not None] == [SHA256]
        # its own check refuses what it does not take, with the key path
        bad = SUITES.replace("[sha256]", "[aes-128-cbc]")
        with pytest.raises(ConfigError, match="'aes-128-cbc' is not a digest"):
            one_release_bench(tmp_path / "bad", bad, fake_speed)
    assert "digest" not in KINDS  # the registry is as it was
    assert backend.runs  # the engine ran the kind's invocations
