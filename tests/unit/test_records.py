"""The results tree's records: one writer, one validating reader (pure unit tests)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from openssl_matrix.core.errors import ResultsError
from openssl_matrix.report.page import build_report
from openssl_matrix.results import records
from openssl_matrix.results.export import records as export_rows
from openssl_matrix.results.tree import ResultsTree

from .test_cli import invoke

FIGURE = {"algorithm": "aes-128-cbc", "label": "aes-128 cbc", "evp": True, "block_size": 16,
          "bytes_per_s": 1.5e9, "ops_per_s": None, "operation": None, "status": "ok",
          "detail": "", "bits": None, "seconds_per_op": None, "raw": "1500000.00k",
          "mask": "native", "invocation": "native--aes-128-cbc", "guards": []}


def _run(root: Path, meta: object, figures: object, *, raw: bool = False) -> Path:
    run = root / "host-x" / "1.1.1w-asm-x86_64" / "quick" / "0001"
    run.mkdir(parents=True)
    for name, data in ((records.META, meta), (records.FIGURES, figures)):
        if isinstance(data, bytes):
            (run / name).write_bytes(data)
        else:
            (run / name).write_text(data if raw and isinstance(data, str)
                                    else json.dumps(data))
    return run


def test_round_trip_keeps_every_key_and_adds_the_schema(tmp_path: Path) -> None:
    meta = {"status": "complete", "variant": {"version": "1.1.1w"}, "a_new_field": [1, 2],
            "round": 2, "series": {"id": "s1", "rounds": 3}}
    run = tmp_path / "run"
    records.write_meta(run, meta)
    records.write_figures(run, [FIGURE])
    on_disk = json.loads((run / records.META).read_text())
    assert on_disk == {**meta, "schema": records.SCHEMA}
    assert json.loads((run / records.FIGURES).read_text()) == [{**FIGURE,
                                                                 "schema": records.SCHEMA}]
    back = records.read_meta(run)
    assert back is not None and back.version == "1.1.1w" and back.round_no == 2
    assert back.series_id == "s1" and back.extra["a_new_field"] == [1, 2] and back.finished
    fig = records.read_figures(run)[0]
    assert fig.bytes_per_s == 1.5e9 and fig.block_size == 16 and fig.extra["raw"] == "1500000.00k"


def test_old_files_without_a_schema_still_read(tmp_path: Path) -> None:
    run = _run(tmp_path, {"status": "partial", "forced": True}, [FIGURE])
    meta = records.read_meta(run)
    assert meta is not None and meta.schema == 0 and meta.finished and meta.forced
    assert records.read_figures(run)[0].schema == 0


@pytest.mark.parametrize(("meta", "figures", "what"), [
    (b"\xff\xfe{}", [FIGURE], "not UTF-8"),
    ('{"status": "comp', [FIGURE], "not JSON"),
    ([1, 2], [FIGURE], "expected a JSON object"),
    ({"forced": True}, [FIGURE], "the key 'status' is missing"),
    ({"status": 3}, [FIGURE], "'status' is 3, expected a string"),
    ({"status": "complete"}, {"algorithm": "x"}, "expected a JSON list of figures"),
    ({"status": "complete"}, [{**FIGURE, "bytes_per_s": "fast"}], "'bytes_per_s'"),
    ({"status": "complete"}, '[{"algorithm": "a", "bytes_per_s": NaN}]', "NaN"),
    ({"status": "complete"}, '[{"algorithm": "a", "bytes_per_s": Infinity}]', "Infinity"),
    ({"status": "complete"}, [{**FIGURE, "seconds_per_op": 1e999}], "Infinity"),
    ({"status": "complete"}, [{"status": "ok"}], "the key 'algorithm' is missing"),
    ({"status": "complete", "schema": 99}, [FIGURE], "schema 99"),
])
def test_a_damaged_run_is_an_error_naming_the_file_and_the_way_out(
        tmp_path: Path, meta: object, figures: object, what: str) -> None:
    run = _run(tmp_path, meta, figures, raw=True)
    tree = ResultsTree(tmp_path)
    with pytest.raises(ResultsError) as err:
        list(export_rows(tree))
    assert err.value.exit_code == 9
    assert what in err.value.message and str(run) in err.value.message
    assert err.value.hint and f"mv {run} " in err.value.hint
    with pytest.raises(ResultsError):
        build_report(tree, tmp_path / "report")


def test_the_cli_reports_a_damaged_run_with_exit_9_and_no_traceback(tmp_path: Path) -> None:
    run = _run(tmp_path, {"status": "complete"}, '[{"algorithm": "a", "block_size": 1.5}]',
               raw=True)
    for command in ("export", "report"):
        out = invoke("matrix", command, "--results", str(tmp_path))
        assert out.returncode == 9, out.stderr
        assert "Traceback" not in out.stderr
        assert f"{run / records.FIGURES}: damaged" in out.stderr and "'block_size'" in out.stderr


def test_export_and_report_refuse_a_folder_that_is_not_a_results_tree(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("x")
    tree = ResultsTree(tmp_path)
    for act in (lambda: list(export_rows(tree)),
                lambda: build_report(tree, tmp_path / "report")):
        with pytest.raises(ResultsError, match="is not a results tree"):
            act()


def test_unfinished_runs_are_skipped_but_still_validated(tmp_path: Path) -> None:
    run = _run(tmp_path, {"status": "interrupted"}, "not json at all", raw=True)
    assert list(records.finished_runs(tmp_path)) == []
    (run / records.META).write_text(json.dumps({"status": "complete"}))
    with pytest.raises(ResultsError, match="not JSON"):
        list(records.finished_runs(tmp_path))


def test_build_records_and_latest(tmp_path: Path) -> None:
    bdir = records.build_dir(tmp_path, "v1", "0123456789abcdef0123")
    records.write_build(bdir, {"tag": "t:1", "digest": "0123456789abcdef0123",
                               "image_id": "sha256:x", "endbr32": 0, "extra_key": True})
    records.write_latest(tmp_path, "v1", "0123456789abcdef0123", "t:1")
    latest = records.read_latest(tmp_path, "v1")
    assert latest is not None and latest.tag == "t:1"
    [rec] = records.build_records(tmp_path, "v1")
    assert rec.image_id == "sha256:x" and rec.extra["extra_key"] is True
    assert ResultsTree(tmp_path).build_record("v1", latest.digest) == rec.to_json()
    (bdir / records.BUILD).write_text(json.dumps({"tag": "t:1"}))
    with pytest.raises(ResultsError, match="'digest' is missing"):
        records.build_records(tmp_path, "v1")


def test_the_writer_refuses_a_malformed_record(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="malformed"):
        records.write_figures(tmp_path, [{"algorithm": "a", "bytes_per_s": float("nan")}])
    with pytest.raises(ResultsError, match="malformed"):
        records.write_meta(tmp_path, {"status": None})
    assert not (tmp_path / records.FIGURES).exists()


def test_the_writer_checks_a_record_built_in_code_as_its_reader_would(tmp_path: Path) -> None:
    """An ``inf`` rate (1.0.2u's s_time prints one) in a FigureRecord made in code is refused
    before it is written, never written as JSON its own reader rejects."""
    fig = records.FigureRecord.from_json({"algorithm": "a", "bytes_per_s": 1.0}, "figure")
    bad = dataclasses.replace(fig, ops_per_s=float("inf"))
    with pytest.raises(ResultsError, match="malformed"):
        records.write_figures(tmp_path, [bad])
    assert not (tmp_path / records.FIGURES).exists()
    records.write_figures(tmp_path, [fig])
    assert records.read_figures(tmp_path)[0].bytes_per_s == 1.0


def test_series_record(tmp_path: Path) -> None:
    path = records.write_series(tmp_path, {"id": "2026", "rounds": 3, "variant": "v",
                                           "suite": "s", "figures": []})
    assert path == records.series_path(tmp_path, "2026") and records.series_files(tmp_path)
    series = records.read_series(path)
    assert series is not None and series.rounds == 3


def test_a_list_of_numbers_type_for_new_fields() -> None:
    check = records._CHECKS[records.NUM_LIST]
    assert check([1, 2.5]) and check(None) and check([])
    assert not check([1, float("inf")]) and not check([True]) and not check("1")


def test_the_reproductions_folder_is_never_walked_as_a_cpu(tmp_path: Path) -> None:
    # REPRO_DIR is one of the tree's layout names (records owns them): a folder of it
    # shaped like <cpu>/<variant>/<suite>/<run> must not read as a CPU's run
    run = _run(tmp_path, {"status": "complete"}, [FIGURE])
    (tmp_path / records.REPRO_DIR / "made-up" / "work" / "0001").mkdir(parents=True)
    assert records.REPRO_DIR.startswith("_")
    assert [p for *_, p in records.run_dirs(tmp_path)] == [run]
