"""An import's faster paths give what the general ones give (issue 35): figures.json by
``write_figure_rows`` has ``write_figures``' bytes and checks, a spooled run comes back
as it was, a new file is never written over an old one."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from openssl_matrix.core.errors import ParseError, ResultsError
from openssl_matrix.core.files import new_file_mode, write_new
from openssl_matrix.parse import FIGURE_FIELDS, figure_rows, parse_paste
from openssl_matrix.results import records as rec
from openssl_matrix.results.figurerows import write_figure_rows
from openssl_matrix.results.imports import PastedRun, spool, unspool

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


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


def test_a_spooled_run_comes_back_as_it_was() -> None:
    runs = [PastedRun.of(r) for p in _pastes()[:12] for r in
            parse_paste(p.read_text(encoding="utf-8", errors="replace"))]
    assert runs
    buffer = io.BytesIO()
    for run in runs:
        spool(run, buffer)
    back = list(unspool(buffer, len(runs)))
    assert back == runs
    assert [type(v) for r in back for row in r.rows for v in row] == \
        [type(v) for r in runs for row in r.rows for v in row]


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
