"""An import's faster paths give what the general ones give (issue 35): figures.json by
``write_figure_rows`` has ``write_figures``' bytes and checks, a spooled run comes back
as its compact line, runs sharing their figures are encoded as each alone, a new file is
never written over an old one."""

from __future__ import annotations

import io
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from openssl_matrix.core.errors import ParseError, ResultsError
from openssl_matrix.core.files import new_file_mode, write_new
from openssl_matrix.parse import FIGURE_FIELDS, figure_rows, parse_paste
from openssl_matrix.results import imports
from openssl_matrix.results import records as rec
from openssl_matrix.results.figurerows import figure_key, write_figure_rows
from openssl_matrix.results.imports import PastedRun, spool, unspool

from ..scripts import load_script

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
pastes = load_script("pastes")


def _pastes() -> list[Path]:
    return sorted(p for p in (FIXTURES / "speed").rglob("*.stdout")) + \
        sorted((FIXTURES / "reports").iterdir())


def _both(tmp_path: Path, keys: tuple[str, ...], rows: list[tuple[object, ...]],
          ) -> tuple[bytes, bytes]:
    general, fast = tmp_path / "general", tmp_path / "fast"
    general.mkdir()
    fast.mkdir()
    rec.write_figures(general, [dict(zip(keys, r, strict=True)) for r in rows])
    assert write_figure_rows(fast, keys, rows, mode=new_file_mode()) == len(rows)
    return (general / rec.FIGURES).read_bytes(), (fast / rec.FIGURES).read_bytes()


def test_figure_rows_are_written_as_the_general_writer_writes_them(tmp_path: Path) -> None:
    compared = 0
    for k, path in enumerate(_pastes()):
        try:
            runs = parse_paste(path.read_text(encoding="utf-8", errors="replace"))
        except ParseError:  # a fixture that is no paste (stderr alone): nothing to compare
            continue
        for j, run in enumerate(runs):
            here = tmp_path / f"{k}-{j}"
            here.mkdir()
            general, fast = _both(here, FIGURE_FIELDS, list(figure_rows(run)))
            assert general == fast, (path, j)
            compared += 1
    assert compared > 50


def test_no_figures_and_odd_keys_are_written_as_before(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    assert _both(tmp_path / "a", FIGURE_FIELDS, [])[0] == b"[]\n"
    (tmp_path / "b").mkdir()
    general, fast = _both(tmp_path / "b", ("algorithm", "zeta", "bytes_per_s"),
                          [("aes", [1, "x"], 1.5), ("sha", None, None)])
    assert general == fast  # a list value: the general writer's text


def test_a_wrong_figure_is_refused_as_before(tmp_path: Path) -> None:
    for row in (("aes", "1.5"), ("aes", float("nan")), (3, 1.0)):
        with pytest.raises(ResultsError, match="refusing to write a malformed figure"):
            write_figure_rows(tmp_path, ("algorithm", "bytes_per_s"), [row],
                                  mode=new_file_mode())
        assert not (tmp_path / rec.FIGURES).exists()


def test_a_spooled_run_comes_back_as_its_compact_line() -> None:
    runs = [PastedRun.of(r) for p in _pastes()[:12] for r in
            parse_paste(p.read_text(encoding="utf-8", errors="replace"))]
    assert runs
    buffer = io.BytesIO()
    for i, run in enumerate(runs, 1):
        spool(run, i, buffer)
    back = list(unspool(buffer, len(runs)))
    assert [b[:4] for b in back] == [(i, r.version, r.digest, r.figures)
                                     for i, r in enumerate(runs, 1)]
    for run, (i, *_, line, odd) in zip(runs, back, strict=True):
        meta, figures = json.loads(line)
        assert meta == {"run_in_report": i, "run_digest": run.digest, "header": run.header,
                        "warnings": list(run.warnings), "variant": {"version": run.version}}
        assert figures == json.loads(run.figures_json) and not odd


def test_runs_sharing_their_figures_are_encoded_as_each_alone() -> None:
    """The figures of a run the parser gave the same figure objects as an earlier run
    (a paste's copies) are read, checked and encoded once: the same text as a run alone,
    whatever the batch, the cache's bound, a NaN or a value of the wrong type."""
    parsed = parse_paste(pastes.paste(40)) + parse_paste(pastes.paste_unique(30))
    for path in _pastes():
        try:
            parsed += parse_paste(path.read_text(encoding="utf-8", errors="replace"))
        except ParseError:  # no paste (stderr alone)
            continue
    keys = [figure_key(r) for r in parsed]  # (the parser shares some runs' figures)
    assert None not in keys and len(set(keys)) < len(parsed)
    fig = parsed[0].figures[0]

    class Name(str):
        """A string of a subclass: valid, but not of the fast path's exact types."""

    odd = replace(parsed[0], figures=(replace(fig, algorithm=Name(fig.algorithm)),))
    runs = [*parsed, odd, *parsed]
    alone = [PastedRun.of(r) for r in runs]
    assert json.loads(alone[len(parsed)].figures_json) == [  # as whole objects
        {**dict(zip(FIGURE_FIELDS, next(figure_rows(odd)), strict=True)),
         "schema": rec.SCHEMA}]
    assert json.loads(alone[0].figures_json)[0] == list(next(figure_rows(parsed[0])))
    for batch, cached in ((256, 1024), (7, 5), (1, 1)):
        together = list(imports.pasted_runs(runs, batch=batch, cached=cached))
        assert [(r.figures_json, r.digest, r.figures) for r in together] == \
            [(r.figures_json, r.digest, r.figures) for r in alone]


def test_a_new_file_is_never_written_over_another(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    write_new(path, "one", mode=0o640)
    assert path.read_text() == "one" and (os.stat(path).st_mode & 0o777) == 0o640 & \
        ~os.umask(os.umask(0))
    with pytest.raises(FileExistsError):
        write_new(path, "two", mode=0o644)
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        write_new(tmp_path / "link", "three", mode=0o644)
    assert not (tmp_path / "elsewhere").exists() and path.read_text() == "one"


def test_a_figure_the_checks_refuse_is_named_in_a_batch_too() -> None:
    run = parse_paste(pastes.paste(1))[0]
    fig = run.figures[0]
    for bad in (replace(fig, bytes_per_s=float("nan")), replace(fig, bytes_per_s=float("inf")),
                replace(fig, block_size="16")):  # type: ignore[arg-type]
        odd = replace(run, figures=(*run.figures, bad))
        for runs in ([odd], [run] * 3 + [odd]):
            with pytest.raises(ResultsError, match="refusing to write a malformed figure"):
                list(imports.pasted_runs(runs))
