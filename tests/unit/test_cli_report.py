"""`invoke matrix report` and `invoke matrix reproduce` as a user types them (no Docker)."""

from __future__ import annotations

import json
from pathlib import Path

from openssl_matrix.core.resources import project_reports

from ..fake.test_report import make_tree
from .test_cli import invoke


def test_report_command_writes_the_folder(fake_matrix: Path, tmp_path: Path) -> None:
    tree = make_tree(fake_matrix, tmp_path, rounds=1)
    out = invoke("matrix", "report", "--results", str(tree.root), "--block-size", "1024",
                 "--output", str(tmp_path / "rep"))
    assert out.returncode == 0, out.stderr
    assert "OpenSSL 1.1.1w · x86_64 — 1024 bytes" in out.stdout
    assert "asm + AES-NI & SHA ext." in out.stdout
    assert (tmp_path / "rep" / "index.html").is_file()
    assert (tmp_path / "rep" / "data" / "method-table-1024.csv").is_file()
    data = json.loads((tmp_path / "rep" / "data" / "report.json").read_text())
    assert data["block_size"] == 1024


def test_report_default_folder_is_inside_the_results_tree(fake_matrix: Path,
                                                         tmp_path: Path) -> None:
    tree = make_tree(fake_matrix, tmp_path, rounds=1)
    out = invoke("matrix", "report", "--results", str(tree.root))
    assert out.returncode == 0, out.stderr
    assert (tree.root / "_report" / "index.html").is_file()
    # the report is not mistaken for results on the next run: same tables, same counts
    again = invoke("matrix", "report", "--results", str(tree.root))
    assert again.returncode == 0 and again.stdout == out.stdout


def test_report_session_since_and_export_per_session_as_typed(fake_matrix: Path,
                                                               tmp_path: Path) -> None:
    """The session flags (issue 28) through the command line: --session picks the
    figures' session, --since that names no date is refused, --per-session exports one
    row per session and figure."""
    tree = make_tree(fake_matrix, tmp_path, rounds=2)
    first = invoke("matrix", "report", "--results", str(tree.root), "--output",
                   str(tmp_path / "rep"))
    assert first.returncode == 0, first.stderr
    assert "2 session(s); 0 cell(s) changed" in first.stdout
    data = json.loads((tmp_path / "rep" / "data" / "report.json").read_text())
    oldest = data["sessions"][0]["session"]
    picked = invoke("matrix", "report", "--results", str(tree.root), "--session", oldest,
                    "--output", str(tmp_path / "rep1"))
    assert picked.returncode == 0, picked.stderr
    chosen = json.loads((tmp_path / "rep1" / "data" / "report.json").read_text())
    assert chosen["selection"]["session"] == oldest
    assert {c["session"] for c in chosen["cells"]} == {oldest}
    bad = invoke("matrix", "report", "--results", str(tree.root), "--since", "last week")
    assert bad.returncode == 10 and "is not a date" in bad.stderr
    rows = invoke("matrix", "export", "--results", str(tree.root), "--per-session",
                  "--format", "jsonl")
    assert rows.returncode == 0, rows.stderr
    medians = [json.loads(line) for line in rows.stdout.splitlines()]
    assert {m["session"] for m in medians} == {s["session"] for s in data["sessions"]}
    assert all(m["samples"] == 1 and m["runs"] == 1 for m in medians)


def test_report_without_results_says_what_to_do(tmp_path: Path) -> None:
    out = invoke("matrix", "report", "--results", str(tmp_path / "none"))
    assert out.returncode == 9
    assert "invoke matrix bench --cpu=auto" in out.stderr


def test_reproduce_unknown_spec_suggests_one() -> None:
    out = invoke("matrix", "reproduce", "ivy-bridge-aesni")
    assert out.returncode == 2
    assert "perhaps you meant 'ivy-bridge-aesni-blog'" in out.stderr


def test_reproduce_bad_spec_names_file_and_key(tmp_path: Path) -> None:
    spec = tmp_path / "broken.yaml"
    spec.write_text((project_reports() /
                     "ivy-bridge-aesni-blog.yaml").read_text().replace("expect: faster",
                                                                       "expect: quicker"))
    out = invoke("matrix", "reproduce", str(spec))
    assert out.returncode == 2
    assert "broken.yaml: claims[1] (evp-aesni-faster).expect: 'quicker'" in out.stderr
    assert "Traceback" not in out.stderr


def test_flags_that_do_not_apply_are_refused() -> None:
    out = invoke("matrix", "reproduce", "ivy-bridge-aesni-blog", "--block-size", "16")
    assert out.returncode == 10 and "does not take --block-size" in out.stderr
    out = invoke("matrix", "report", "--cpu", "auto")
    assert out.returncode == 10 and "does not take --cpu" in out.stderr
