"""``invoke matrix reproduce --draft PASTE --as ID``: a spec drafted from a paste (issue 36,
item 1) loads, passes ``--check``, and carries the parse's figures, never retyped ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from openssl_matrix.cli.commands.reproduce import run as cmd_reproduce
from openssl_matrix.cli.shared import handlers
from openssl_matrix.cli.table import dispatch
from openssl_matrix.core.errors import UsageError
from openssl_matrix.matrix.pkey import ALGORITHMS as PK_ALGORITHMS
from openssl_matrix.parse import read_paste
from openssl_matrix.repro.spec import OP_BLOCK, ReportSpec
from openssl_matrix.repro.specload import load_spec

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
#: The two tables of the Ivy Bridge AES-NI blog post (tests/fixtures/reports/README.md):
#: `speed -evp aes-128-cbc` with AES-NI on, then masked off, both OpenSSL 1.0.1e.
IVY = FIXTURES / "reports" / "ivy-bridge-aesni-blog.txt"
VIA = (FIXTURES / "reports" / "via-luke-ryzen-blog.txt").read_text().splitlines()
#: Rows pasted without speed's `type ...` header, as issue 36's report pasted them: the
#: figures are lines 91 and 95 (an OpenSSL 1.1.0l run) and 107 (a 3.0.2 run) of
#: tests/fixtures/reports/via-luke-ryzen-blog.txt (the VIA Luke / Ryzen blog post); the
#: prose, naming another letter release than the version line, is this test's own.
HEADERLESS = "\n".join([
    "Both builds, OpenSSL 1.1.0k and 3.0.2, on one machine:", "",
    "OpenSSL 1.1.0l 10 Sep 2019", VIA[90], VIA[94], "", "and with 3.0:", "",
    "version: 3.0.2", VIA[106], ""])


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A matrix file of our own in tmp_path (drafts go to reports/ beside it)."""
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    shutil.copy(ROOT / "matrix.yaml", tmp_path / "matrix.yaml")
    return tmp_path


def draft(here: Path, paste: str | Path, spec_id: str, *, force: bool = False,
          check: bool = False, json_: bool = False, block_sizes: str = "") -> int:
    if isinstance(paste, str):
        (here / "paste.txt").write_text(paste)
        paste = here / "paste.txt"
    return cmd_reproduce(target="", matrix=str(here / "matrix.yaml"),
                                  results=str(here / "results"), cpu="", force=force,
                                  wait=False, json=json_, check=check, draft=str(paste),
                                  as_=spec_id, block_sizes=block_sizes)


def parsed_figures(text: str) -> list[dict[int, float]]:
    """Every row's figures as the parser reads them, keyed as a spec keys them."""
    out: list[dict[int, float]] = []
    for run in read_paste(text).runs:
        rows: dict[tuple[str, str | None, int | None], dict[int, float]] = {}
        for f in run.figures:
            row = rows.setdefault((f.label, f.operation, f.bits), {})
            if f.operation is None and f.block_size and f.bytes_per_s:
                row[f.block_size] = f.bytes_per_s
            elif f.operation is not None and f.ops_per_s:
                row[OP_BLOCK] = f.ops_per_s
        out += [r for r in rows.values() if r]
    return out


def test_draft_of_a_report_paste_loads_with_the_parse_figures(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert draft(here, IVY, "ivy-draft") == 0
    out = capsys.readouterr().out
    path = here / "reports" / "ivy-draft.yaml"
    assert f"wrote {path}: 2 measurement(s) from 2 run(s), 1 claim stub(s)" in out
    assert "`invoke matrix reproduce ivy-draft --check`" in out
    spec = load_spec(path)
    assert spec.id == "ivy-draft"
    assert set(spec.versions) == {"1.0.1e"}
    assert spec.versions["1.0.1e"].as_reported == "OpenSSL 1.0.1e 11 Feb 2013"
    assert [b.version for b in spec.builds.values()] == ["1.0.1e"]
    on, masked = spec.measurements["r1-aes-128-cbc"], spec.measurements["r2-aes-128-cbc"]
    assert on.evp and masked.evp and not on.unknown  # EVP names: `aes-128-cbc`
    # identical to the parse's reading, not approximately: nothing was retyped
    assert [dict(m.reference) for m in spec.measurements.values()] == \
        parsed_figures(IVY.read_text())
    assert on.reference[16] == 305_049_900.0
    assert "16: 305049.90k" in path.read_text()  # written as printed


def test_the_draft_passes_check(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert draft(here, IVY, "ivy-draft", check=True, json_=True) == 0
    out = capsys.readouterr().out
    report = json.loads(out[out.index("{"):])
    assert report["spec"] == "ivy-draft" and report["problems"] == []
    assert "the report's figures meet every claim as transcribed" in report["text"]
    assert "8192 bytes: 0.51× meets the claim" in report["text"]


def test_headerless_rows_and_a_version_the_text_names_otherwise(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert draft(here, HEADERLESS, "issue-like") == 0
    path = here / "reports" / "issue-like.yaml"
    text = path.read_text()
    spec = load_spec(path)
    assert set(spec.versions) == {"1.1.0l", "3.0.2"}
    # the text says 1.1.0k, the version line 1.1.0l: kept, never silently dropped
    assert spec.versions["1.1.0l"].as_reported == \
        "OpenSSL 1.1.0l 10 Sep 2019 (the text names 1.1.0k)"
    assert "block sizes 16, 64, 256, 1024, 8192, 16384 assumed" in text
    old, new = spec.measurements["r1-md5"], spec.measurements["r2-md5"]
    assert old.reference[16384] == 793_946_790.0 and new.reference[16] == 75_762_360.0
    # 1.x prints md5 the same way with and without -evp; 3.x runs everything through EVP
    assert old.unknown == ("evp",) and "evp: unknown" in text
    assert new.evp and not new.unknown
    assert [dict(m.reference) for m in spec.measurements.values()] == \
        parsed_figures(HEADERLESS)


def stub_claims(spec: ReportSpec) -> dict[str, tuple[str, str, float | None]]:
    return {c.id: (c.numerator, c.denominator, c.ratio) for c in spec.claims}


def test_two_runs_give_claim_stubs_with_the_pastes_ratios(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    draft(here, HEADERLESS, "issue-like", check=True)
    out = capsys.readouterr().out
    path = here / "reports" / "issue-like.yaml"
    text = path.read_text()
    spec = load_spec(path)
    claims = stub_claims(spec)
    # one per pair of runs; no trend stub: the ratio changes 1.5 % from 16 to 16384 bytes
    assert set(claims) == {"stub-r2-md5-vs-r1-md5"}
    assert all(c.says.startswith("STUB") for c in spec.claims)
    assert "# STUBS drafted from the paste's own ratios" in text
    per_size = next(c for c in spec.claims if c.trend is None)
    assert (per_size.numerator, per_size.denominator) == ("r2-md5", "r1-md5")
    assert per_size.expect == "ratio" and per_size.ratio is None  # the paste's own ratios
    assert spec.claim_blocks(per_size) == (16, 64, 256, 1024, 8192, 16384)
    assert spec.reference_ratio(per_size, 16) == pytest.approx(75762.36 / 81752.49)
    assert "16: 0.927×" in text  # the paste's ratio per size, in the comment above the stub
    assert "the report's figures meet every claim as transcribed" in out


def test_an_existing_spec_is_refused_unless_forced(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    draft(here, IVY, "mine")
    path = here / "reports" / "mine.yaml"
    path.write_text(path.read_text() + "# my own edit\n")
    with pytest.raises(UsageError) as err:
        draft(here, IVY, "mine")
    assert f"{path} exists: the draft is not written over it" in str(err.value)
    assert "--force" in (err.value.hint or "")
    assert path.read_text().endswith("# my own edit\n")
    draft(here, IVY, "mine", force=True)
    assert not path.read_text().endswith("# my own edit\n")


def test_machine_readable_output_with_its_release_named_in_the_text(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`-mr` prints no version line: the release the text names above it is taken. The
    records are tests/fixtures/speed/real-1.1.1w/mr-evp-elapsed.stdout (the legacy and
    the EVP aes-128-cbc in one table); the sentence above them is this test's own."""
    records = (FIXTURES / "speed" / "real-1.1.1w" / "mr-evp-elapsed.stdout").read_text()
    paste = "Measured with OpenSSL 1.1.1w:\n" + records
    draft(here, paste, "mr-draft")
    spec = load_spec(here / "reports" / "mr-draft.yaml")
    assert spec.versions["1.1.1w"].as_reported == \
        "no version line; the text above its table names 1.1.1w"
    legacy, evp = spec.measurements["r1-aes-128-cbc"], spec.measurements["r1-aes-128-cbc-2"]
    assert (legacy.evp, evp.evp) == (False, True)
    assert legacy.reference[16] == 220_218_352.0  # -mr prints bytes per second
    assert "16: '220218352.00 B/s'" in (here / "reports" / "mr-draft.yaml").read_text()
    ed = spec.measurements["r1-ed25519-sign"]
    assert (ed.algorithm, ed.operation, ed.reference[OP_BLOCK]) == ("ed25519", "sign",
                                                                    25532.673267)
    assert PK_ALGORITHMS[ed.algorithm].figure == "ed25519"
    # one run: the stub compares its two aes-128-cbc rows (legacy against EVP)
    assert stub_claims(spec) == {"stub-r1-aes-128-cbc-2-vs-r1-aes-128-cbc":
                                 ("r1-aes-128-cbc-2", "r1-aes-128-cbc", None)}


def test_a_run_without_its_release_is_left_out_with_what_to_do(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tests/fixtures/speed/published/openssl-16858-1.1.0k-3.0-blocks.md names
    "OpenSSL 1.1.0k" above its first two tables and only "OpenSSL 3.0" above the rest."""
    paste = FIXTURES / "speed" / "published" / "openssl-16858-1.1.0k-3.0-blocks.md"
    draft(here, paste, "i16858", check=True)
    out = capsys.readouterr().out
    spec = load_spec(here / "reports" / "i16858.yaml")
    assert set(spec.versions) == {"1.1.0k"} and len(spec.measurements) == 2
    # its non-EVP and EVP tables: the EVP path's lead grows from 5.49× at 16 bytes to
    # 6.16× at 16384, so a trend stub is drafted besides the per-size one
    legacy, evp = spec.measurements["r1-aes-128-cbc"], spec.measurements["r2-aes-128-cbc"]
    assert (legacy.evp, evp.evp) == (False, True)
    trend = next(c for c in spec.claims if c.trend is not None)
    assert (trend.id, trend.trend) == ("stub-r2-aes-128-cbc-vs-r1-aes-128-cbc-trend",
                                       (16, 16384))
    paste_trend = (648134.66 / 105294.51) / (496224.87 / 90320.55)
    assert trend.ratio == pytest.approx(paste_trend, rel=1e-3)
    assert "trend 16 → 16384 bytes: 1.12× (the ratio at 16384 over the ratio at 16) meets " \
        "the claim" in out
    assert "left out: run 3: no version line, and the text above it names OpenSSL 3.0, a " \
        "series, not a release" in out
    assert "add the version line speed printed" in out


def test_draft_needs_an_id_and_no_report(here: Path) -> None:
    with pytest.raises(UsageError, match="needs --as ID"):
        draft(here, IVY, "")
    for bad in ("Not An Id", "../x", "a..b", ".x"):
        with pytest.raises(UsageError, match="needs --as ID"):
            draft(here, IVY, bad)
    with pytest.raises(UsageError, match="give --draft PASTE too"):
        cmd_reproduce(target="", matrix=str(here / "matrix.yaml"), results="",
                               cpu="", force=False, wait=False, json=False, as_="x")
    assert not (here / "reports").exists()


def test_the_command_line_takes_draft_without_a_report(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`invoke matrix reproduce --draft PASTE --as ID` needs no REPORT argument."""
    dispatch("reproduce", "", {"draft": str(IVY), "as_": "cli-draft",
                               "matrix": str(here / "matrix.yaml")}, handlers())
    assert (here / "reports" / "cli-draft.yaml").is_file()


def test_a_printed_figure_loads_exactly_as_the_parser_reads_it(tmp_path: Path) -> None:
    """'8365.14k' (tests/fixtures/reports/via-luke-ryzen-blog.txt, line 16) was read as
    8365139.999999999 by the spec loader and 8365140.0 by the parser."""
    spec = (ROOT / "openssl_matrix" / "resources" / "reports" / "ivy-bridge-aesni-blog.yaml")
    text = spec.read_text().replace("16: 305049.90k", "16: 8365.14k", 1)
    (tmp_path / "ivy.yaml").write_text(text)
    loaded = load_spec(tmp_path / "ivy.yaml")
    assert loaded.measurements["evp-aesni"].reference[16] == 8_365_140.0
    (fig,) = [f for run in read_paste("\n".join(VIA[9:11] + VIA[15:16])).runs
              for f in run.figures if f.raw == "8365.14k"]
    assert fig.bytes_per_s == 8_365_140.0


def test_stubs_pair_runs_of_the_same_method(here: Path) -> None:
    """openssl-16858-1.1.0k-3.0-blocks.md with `version: 3.0.0` written above its first 3.0
    table (this test's edit, as docs/reports.md tells a user to do): the 3.0 EVP tables
    are compared with 1.1.0k's EVP table, not with its legacy one."""
    paste = (FIXTURES / "speed" / "published" / "openssl-16858-1.1.0k-3.0-blocks.md"
             ).read_text().replace("With OpenSSL 3.0, things are getting weird:",
                                   "With OpenSSL 3.0, things are getting weird:\n\n"
                                   "version: 3.0.0", 1)
    draft(here, paste, "i16858")
    spec = load_spec(here / "reports" / "i16858.yaml")
    assert set(spec.versions) == {"1.1.0k", "3.0.0"} and len(spec.measurements) == 5
    pairs = {(c.numerator, c.denominator) for c in spec.claims}
    assert pairs == {("r2-aes-128-cbc", "r1-aes-128-cbc"), ("r3-aes-128-cbc", "r2-aes-128-cbc"),
                     ("r4-aes-128-cbc", "r2-aes-128-cbc"), ("r5-aes-128-cbc", "r2-aes-128-cbc")}
    assert spec.measurements["r4-aes-128-cbc"].evp  # `AES-128-CBC`: 3.x's EVP name


#: Issue 10415's two `speed -evp aes-128-gcm` runs: 1.1.1d and a 3.0.0-dev master build
#: (tests/fixtures/speed/published/openssl-10415-1.1.1d-3.0.0-dev-gcm.md), the first
#: report transcribed in docs/reports.md's "Tried as a newcomer".
GCM_10415 = FIXTURES / "speed" / "published" / "openssl-10415-1.1.1d-3.0.0-dev-gcm.md"


def test_a_development_snapshot_is_drafted_as_no_release_with_a_stand_in_to_uncomment(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`version: 3.0.0-dev` was drafted as a release: --check then said to pin a tarball
    of 3.0.0-dev, which never existed. The draft now says `release: false`, and offers
    the matrix's release of each version's series as a stand-in, commented out (the
    reason is the user's to write)."""
    draft(here, GCM_10415, "i10415", check=True)
    out = capsys.readouterr().out
    text = (here / "reports" / "i10415.yaml").read_text()
    assert "pin it with" not in out and "[no-sha256]" not in out
    spec = load_spec(here / "reports" / "i10415.yaml")
    assert spec.versions["3.0.0-dev"].release is False
    assert spec.versions["1.1.1d"].release is True
    assert "    # stand_in: 3.0.20   # this matrix builds 3.0.20" in text
    assert "    # stand_in: 1.1.1w   # this matrix builds 1.1.1w" in text
    # uncommented, with a reason, they load and --check resolves them (this test's cache
    # is empty: "not usable either" names them; on a machine with the tarballs both
    # claims are judged with them, docs/reports.md "Tried as a newcomer")
    edited = text.replace("    # stand_in: ", "    stand_in: ").replace(
        "    # stand_in_why: say why", "    stand_in_why: a test says why")
    (here / "reports" / "i10415.yaml").write_text(edited)
    cmd_reproduce(target="i10415", matrix=str(here / "matrix.yaml"),
                           results=str(here / "results"), cpu="", force=False, wait=False,
                           json=False, check=True)
    out = capsys.readouterr().out
    spec = load_spec(here / "reports" / "i10415.yaml")
    assert (spec.versions["3.0.0-dev"].stand_in, spec.versions["1.1.1d"].stand_in) == (
        "3.0.20", "1.1.1w")
    assert "its stand-in 3.0.20 is not usable either" in out
    assert "its stand-in 1.1.1w is not usable either" in out


def test_the_cpuinfo_line_is_kept_in_the_machines_notes(here: Path) -> None:
    """The 3.0.0-dev run printed `CPUINFO: OPENSSL_ia32cap=…`: what the report shows of a
    CPU it does not name goes into machines.reporter.notes, not away."""
    draft(here, GCM_10415, "i10415")
    spec = load_spec(here / "reports" / "i10415.yaml")
    assert spec.machines["reporter"].notes == (
        "speed's CPUINFO line in the paste: OPENSSL_ia32cap=0x7ffaf3bfffebffff:"
        "0x40405f5ef2bf27ef")


def test_a_snapshot_without_release_false_is_told_what_to_write(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A hand-written `3.0.0-dev:` entry without `release: false` was told to pin a
    tarball that cannot exist; with `release: false` and no stand-in it was told nothing
    to do. Both now name the keys to write."""
    draft(here, GCM_10415, "i10415")
    path = here / "reports" / "i10415.yaml"
    text = path.read_text()
    path.write_text(text.replace("    release: false   #", "    #", 1))
    check = dict(target="i10415", matrix=str(here / "matrix.yaml"),
                 results=str(here / "results"), cpu="", force=False, wait=False, json=False,
                 check=True)
    cmd_reproduce(**check)  # type: ignore[arg-type]
    out = capsys.readouterr().out
    assert "pin it with `invoke matrix pin 3.0.0-dev" not in out
    assert "[no-release] r2-aes-128-gcm needs OpenSSL 3.0.0-dev: OpenSSL 3.0.0-dev names a " \
        "development snapshot, never released, so no tarball of it can be pinned: write " \
        "`release: false` under versions.3.0.0-dev, and a stand_in release (with " \
        "stand_in_why) to judge its claims here" in out
    path.write_text(text)
    cmd_reproduce(**check)  # type: ignore[arg-type]
    out = capsys.readouterr().out
    assert "no release tarball of it exists; to judge its claims here, name a release " \
        "that behaves the same for them as versions.3.0.0-dev.stand_in, with " \
        "stand_in_why" in out


#: Pull 32760's two encryption tables: a baseline (master) and a patched build of one
#: development snapshot, no version line (tests/fixtures/speed/published/
#: openssl-32760-master-vs-patch-gcm.md), the second report of "Tried as a newcomer".
PATCH_32760 = FIXTURES / "speed" / "published" / "openssl-32760-master-vs-patch-gcm.md"


def test_a_report_that_printed_no_version_is_told_what_it_can_write(here: Path) -> None:
    """The advice was to add "the version line speed printed": this report printed none
    (it names `master`), so it could not be followed honestly."""
    with pytest.raises(UsageError) as err:
        draft(here, PATCH_32760, "p32760")
    assert "no version line, and the text names no release above it" in err.value.message
    assert "where the report printed none and names a branch or a commit (`master`), " \
        "write the development version it was then (`version: 3.6.0-dev`: drafted as " \
        "`release: false`)" in (err.value.hint or "")


def test_a_claim_comparing_a_build_with_itself_is_warned_about(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With `version: 4.1.0-dev` above both tables (as the advice says), both runs were
    drafted as one build and the stubs compared it with itself: --check said nothing,
    and a reproduction would measure one thing twice."""
    paste = PATCH_32760.read_text().replace("```\ntype", "```\nversion: 4.1.0-dev\ntype")
    draft(here, paste, "p32760", check=True)
    out = capsys.readouterr().out
    text = (here / "reports" / "p32760.yaml").read_text()
    assert "  # runs 1 and 2 printed the same build: if they were two builds (a patch, " \
        "another commit), give run 2's measurements a build of their own" in text
    assert "; 3 claim(s) comparing a build with itself" in out
    assert "warning: claims[0] (stub-r2-aes-128-gcm-vs-r1-aes-128-gcm) compares " \
        "r2-aes-128-gcm with r1-aes-128-gcm: the same build (v4.1.0-dev) measured the " \
        "same way" in out
    # a second build of the same snapshot, built alike here, is no better: said so
    path = here / "reports" / "p32760.yaml"
    path.write_text(text.replace("builds:\n", "builds:\n  patched: {version: 4.1.0-dev}\n")
                    .replace("  r2-aes-128-gcm:\n    build: v4.1.0-dev",
                             "  r2-aes-128-gcm:\n    build: patched"))
    cmd_reproduce(target="p32760", matrix=str(here / "matrix.yaml"),
                           results=str(here / "results"), cpu="", force=False, wait=False,
                           json=False, check=True)
    out = capsys.readouterr().out
    assert "compares r2-aes-128-gcm with r1-aes-128-gcm: builds.patched and builds." \
        "v4.1.0-dev are built alike here (version 4.1.0-dev, the same asm, arch and " \
        "configure)" in out
    assert "a difference a build cannot express here (a patch) leaves the claim for the " \
        "report's own figures only" in out


def test_both_sides_lacking_one_version_are_named_in_one_reason(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each claim repeated the same long version problem once per side."""
    paste = PATCH_32760.read_text().replace("```\ntype", "```\nversion: 4.1.0-dev\ntype")
    draft(here, paste, "p32760", check=True)
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines()
                if x.startswith("  stub-r2-aes-128-gcm-vs-r1-aes-128-gcm: cannot be judged"))
    assert "[no-release] r2-aes-128-gcm and r1-aes-128-gcm need OpenSSL 4.1.0-dev: " in line
    assert line.count("development snapshot") == 1


def test_the_shipped_spec_of_issue_10415_holds_the_parse_figures_exactly() -> None:
    """openssl_matrix/resources/reports/openssl-issue-10415-aes-gcm.yaml was drafted from
    its fixture and edited by hand (source, stand-ins, claims): every reference figure is
    still the parser's reading of the issue's tables, none retyped."""
    shipped = load_spec(ROOT / "openssl_matrix" / "resources" / "reports"
                        / "openssl-issue-10415-aes-gcm.yaml")
    assert [dict(m.reference) for m in shipped.measurements.values()] == \
        parsed_figures(GCM_10415.read_text())
    assert shipped.source.url == "https://github.com/openssl/openssl/issues/10415"


def test_the_command_line_above_a_table_is_kept_as_the_measurements_command(
        here: Path) -> None:
    """Issue 10415 printed `$ ./openssl speed -evp aes-128-gcm` above each table: the
    draft dropped it (and said the method came from the rows' names)."""
    draft(here, GCM_10415, "i10415")
    spec = load_spec(here / "reports" / "i10415.yaml")
    assert {m.command for m in spec.measurements.values()} == {
        "./openssl speed -evp aes-128-gcm"}
    assert "    evp: true   # as the command line above it shows" in \
        (here / "reports" / "i10415.yaml").read_text()


def test_a_cpu_the_prose_names_is_drafted_as_the_machines_cpu(here: Path) -> None:
    """Pull 32760 names its CPU above the tables; the draft said "not named in the paste".
    The sentences here are this test's own; the tables are the fixture's."""
    tables = PATCH_32760.read_text().replace("```\ntype", "```\nversion: 4.1.0-dev\ntype")
    draft(here, "Measured on an Intel Xeon Platinum 8380 (2 sockets).\n" + tables, "p32760")
    spec = load_spec(here / "reports" / "p32760.yaml")
    assert spec.machines["reporter"].cpu == "Intel Xeon Platinum 8380"
    # two CPUs named: none is chosen, both are listed for the user
    draft(here, "Tried on an Intel Xeon E5-2680 v4 and on an AMD EPYC 7763.\n" + tables,
          "p32760", force=True)
    text = (here / "reports" / "p32760.yaml").read_text()
    assert "    cpu: not named in the paste   # the CPU as the report names it (the text " \
        "names Intel Xeon E5-2680 v4; AMD EPYC 7763)" in text
