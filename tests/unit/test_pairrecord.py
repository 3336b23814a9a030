"""The typed interleaved comparison record (results/pairrecord.py): every record on file
reads back and writes the very JSON it was read from (tests/fixtures/interleaved/README.md
says where each comes from), keys it does not know survive, a wrong type is refused."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from openssl_matrix.core.errors import ResultsError
from openssl_matrix.core.files import write_json
from openssl_matrix.results.interleaved import RECORD, all_pairs, filed_pairs, rewrite_record
from openssl_matrix.results.pairrecord import PairRecord
from openssl_matrix.results.records import RecordError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "interleaved"
RECORDS = sorted(FIX.glob("*.json"))


def test_there_are_records_of_every_shape() -> None:
    assert len(RECORDS) == 6


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.stem)
def test_a_record_on_file_writes_back_byte_for_byte(path: Path, tmp_path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    rec = PairRecord.from_json(data, path.name)
    assert rec.to_json() == data
    # through the tree: filed with the writer, read back, the same bytes
    folder = tmp_path / "_interleaved" / "host-x" / "bench-1" / "pair"
    folder.mkdir(parents=True)
    rewrite_record(tmp_path, "host-x", "bench-1", "pair", rec)
    written = tmp_path / "_interleaved" / "host-x" / "bench-1" / "pair" / RECORD
    expected = tmp_path / "expected.json"
    write_json(expected, data)
    assert written.read_bytes() == expected.read_bytes()
    assert filed_pairs(tmp_path, "host-x", "bench-1") == {"pair": rec}


def test_the_shapes_read_as_typed_fields() -> None:
    read = {p.stem: PairRecord.from_json(json.loads(p.read_text()), p.name) for p in RECORDS}
    repro = read["repro-operation-no-estimate"]
    assert repro.reproduction and repro.claims and repro.block_size == 0
    assert any(r.estimate is None for r in repro.algorithms)
    old = read["bench-release-before-rates-by"]
    assert all(r.estimate is not None and r.estimate.rates_by is None for r in old.algorithms)
    regime = read["fake-regime-set-aside"]
    assert regime.regime_checked is True and any(r.set_aside for r in regime.algorithms)
    bisect = read["fake-bisect"]
    assert bisect.bisection_run is not None and bisect.pooled_runs and bisect.pair_image
    units = read["synthetic-runs-as-units"].algorithms[0].estimate
    assert units is not None and units.runs_disagree is True and units.log_se is not None
    assert len(units.run_ratios) == 3 and units.pooled is not None
    mask = read["bench-mask-native"]
    assert all(r.low is not None for r in mask.algorithms) and mask.top.mask != "native"


def test_keys_it_does_not_name_are_kept() -> None:
    data = json.loads((FIX / "bench-mask-native.json").read_text())
    data["from_a_newer_writer"] = {"x": 1}
    data["algorithms"][0]["runs_disagree"] = True
    data["algorithms"][0]["per_run"] = [{"ratio": 1.0}]
    rec = PairRecord.from_json(data)
    assert rec.to_json() == data
    assert replace(rec, seconds=1.5).to_json()["from_a_newer_writer"] == {"x": 1}


@pytest.mark.parametrize("bad", [
    {"exit_code": "0"},
    {"top": {"variant": "a"}},
    {"algorithms": [{"algorithm": "md5"}]},
    {"algorithms": "md5"},
    {"errors": [1]},
])
def test_a_record_of_the_wrong_shape_is_refused(bad: dict[str, object],
                                                tmp_path: Path) -> None:
    data = {**json.loads((FIX / "fake-bisect.json").read_text()), **bad}
    with pytest.raises(RecordError):
        PairRecord.from_json(data)
    folder = tmp_path / "_interleaved" / "host-x" / "bench-1" / "pair"
    folder.mkdir(parents=True)
    (folder / RECORD).write_text(json.dumps(data))
    with pytest.raises(ResultsError, match="not a comparison record"):
        all_pairs(tmp_path)
