"""The release sweep (openssl_matrix/sweep.py, benchmarks/sweep.py) with the fake backend,
and what `invoke matrix list` says from its recorded table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from openssl_matrix.cli.commands.list import run as cmd_list
from openssl_matrix.core.errors import BuildError
from openssl_matrix.images.sources import KNOWN_SHA256, read_pins
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.sweep import sweep
from openssl_matrix.sweep import table as sweep_table

from ..conftest import make_tarball
from ..fakes import FakeBackend

ROOT = Path(__file__).resolve().parents[2]

SPEED_1_1_1 = """Doing aes-128-cbc for 1s on 8192 size blocks: 145000 aes-128-cbc's in 1.00s
OpenSSL 1.1.1w  11 Sep 2023
built on: Mon Nov 30 19:00:00 2026 UTC
options:bn(64,64) rc4(16x,int) des(int) aes(partial) idea(int) blowfish(ptr)
compiler: gcc -fPIC
The 'numbers' are in 1000s of bytes per second processed.
type           8192 bytes
aes-128-cbc    1187840.00k
"""


def host_samples(name: str) -> str:
    """The wrapper's stderr of a real speed run (tests/fixtures/hostacct), its speed lines
    left out: what the smoke check's wrapper adds around speed's own stderr."""
    text = (ROOT / "tests" / "fixtures" / "hostacct" / f"{name}.stderr").read_text()
    return "".join(line for line in text.splitlines(keepends=True)
                   if not line.startswith(("+DT", "+R")))


def tarballs(tmp_path: Path) -> Path:
    folder = tmp_path / "tarballs"
    folder.mkdir()
    make_tarball(folder / "openssl-1.1.0z.tar.gz", "1.1.0z")   # a name with no official sha256
    make_tarball(folder / "openssl-1.1.1w.tar.gz", "1.1.1w")   # not the official bytes
    make_tarball(folder / "openssl_3.9.9.orig.tar.gz", "3.9.9")
    (folder / "README").write_text("not a tarball")
    (folder / "notes.yaml").write_text(yaml.safe_dump({"1.1.0z": "a copy from somewhere"}))
    return folder


def test_plan_pins_third_party_trees_in_its_own_lock_and_refuses_fake_official_ones(
        tmp_path: Path) -> None:
    assert "1.1.1w" in KNOWN_SHA256 and "1.1.0z" not in KNOWN_SHA256
    folder = tarballs(tmp_path)
    assert list(sweep.find_tarballs(folder)) == ["1.1.0z", "1.1.1w", "3.9.9"]
    plan = sweep.plan_sweep(folder, tmp_path / "work", arches=["x86_64", "i386"],
                            asms=["asm"], cache_dir=tmp_path / "cache")
    assert plan.variants == ["1.1.0z-asm-x86_64", "1.1.0z-asm-i386", "3.9.9-asm-x86_64",
                             "3.9.9-asm-i386"]
    assert [(r.version, r.arch, r.status) for r in plan.skipped] == [
        ("1.1.1w", "x86_64", "not tried"), ("1.1.1w", "i386", "not tried")]
    assert "is not the official tarball" in plan.skipped[0].reason
    assert "--third-party builds it" in plan.skipped[0].reason
    forced = sweep.plan_sweep(folder, tmp_path / "work3", asms=["asm"], only=["1.1.1w"],
                              cache_dir=tmp_path / "cache", third_party=True)
    assert forced.variants == ["1.1.1w-asm-x86_64"] and forced.skipped == []
    assert forced.sources["1.1.1w"] == \
        "third-party tree (not the official tarball's bytes), pinned locally"
    assert "1.1.1w" in read_pins(tmp_path / "work3" / "sweep.lock")
    assert plan.sources["1.1.0z"] == "third-party tree, pinned locally: a copy from somewhere"
    pins = read_pins(tmp_path / "work" / "sweep.lock")
    assert set(pins) == {"1.1.0z", "3.9.9"}
    m = load_matrix(plan.matrix_path)
    assert {v.id for v in m.all_variants} == set(plan.variants)
    assert m.sources_dirs == (folder.resolve(),)
    only = sweep.plan_sweep(folder, tmp_path / "work2", only=["3.*"],
                            cache_dir=tmp_path / "cache", declared=["3.9.9", "3.1.8", "1.0.0"])
    assert only.variants == ["3.9.9-asm-x86_64", "3.9.9-no-asm-x86_64"]
    (absent,) = only.skipped
    assert (absent.version, absent.arch, absent.status, absent.reason) == (
        "3.1.8", "any", "not tried", "no openssl-3.1.8.tar.gz in the tarball folder")
    assert sweep_table.build_status("3.1.8", "i386", False, {"rows": [vars(absent)]}) == \
        "not tried: no openssl-3.1.8.tar.gz in the tarball folder"


class SweepBackend(FakeBackend):
    """Builds succeed except for 1.1.0z no-asm, whose log says what Configure said."""

    def build(self, context: Path, tag: str, *, log_path: Path, network: str | None,
              labels: Mapping[str, str], buildargs: Mapping[str, str] | None = None,
              buildkit: bool = False) -> str:
        if "1.1.0z-no-asm" in tag:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log_path.write_text("#9 0.412 perl ./Configure ...\n"
                                "#9 0.501 ***** Unsupported options: no-bogus\n")
            raise BuildError(f"{tag}: the build failed at step 9")
        return super().build(context, tag, log_path=log_path, network=network,
                             labels=labels, buildargs=buildargs, buildkit=buildkit)


def test_run_sweep_builds_with_the_tool_and_tables_the_outcome(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    folder = tarballs(tmp_path)
    plan = sweep.plan_sweep(folder, tmp_path / "r" / "_sweep", only=["1.1.0z", "1.1.1w"],
                            cache_dir=tmp_path / "cache")
    speed_calls: list[Sequence[str]] = []

    def responder(image: str, command: Sequence[str], env: Mapping[str, str],
                  ) -> tuple[int, str, str]:
        speed_calls.append(command)
        return 0, SPEED_1_1_1, host_samples("busy-saturated")

    rows = sweep.run_sweep(plan, tmp_path / "r", backend=SweepBackend(responder))
    by = {(r.version, r.asm): r for r in rows}
    built = by[("1.1.0z", "asm")]
    assert built.status == "built" and built.speed_bytes_per_s == 1187840000.0
    assert built.source.startswith("third-party tree")
    # the smoke check runs in the bench's wrapper: the tool's host accounting brackets it
    assert len(speed_calls) == sweep.SMOKE_RUNS  # a figure is never one bare run
    call = speed_calls[0]
    assert built.speed_samples == [1187840000.0] * sweep.SMOKE_RUNS
    assert call[:2] == ("/bin/sh", "-c") and "_hs 0; openssl" in call[2]
    assert tuple(call[4:]) == ("speed", "-elapsed", "-evp", "aes-128-cbc")
    assert built.host_own_share == pytest.approx(0.494, abs=0.005)
    assert built.host_foreign_cores == pytest.approx(1.51, abs=0.01)
    assert "other work kept 1.51 core(s) busy" in built.host_contended[1]
    failed = by[("1.1.0z", "no-asm")]
    assert failed.status == "fails"
    assert failed.reason == "***** Unsupported options: no-bogus"
    assert by[("1.1.1w", "asm")].status == "not tried"
    table = sweep_table.format_table(rows)
    assert "- 1.1.0z: third-party tree" in table
    assert "| x86_64 | asm | built (" in table
    assert "1,188 ± 0 MB/s (n=3), contended: own 49%, others 1.51 cores" in table
    assert "fails: ***** Unsupported options: no-bogus" in table
    assert "not tried: openssl-1.1.1w.tar.gz is not the official tarball" in table
    # nothing to build: the table still says what was not tried, and nothing is built
    empty = sweep.plan_sweep(folder, tmp_path / "r2" / "_sweep", only=["1.1.1w"],
                             cache_dir=tmp_path / "cache")
    backend = SweepBackend(responder)
    assert [r.status for r in sweep.run_sweep(empty, tmp_path / "r2", backend=backend)] == \
        ["not tried", "not tried"]
    assert backend.builds == []


def test_not_tried_rows_never_replace_a_tried_cell(tmp_path: Path) -> None:
    folder = tarballs(tmp_path)
    plan = sweep.plan_sweep(folder, tmp_path / "w", arches=["i386"], only=["1.1.0z"],
                            cache_dir=tmp_path / "cache")
    left = sweep.not_tried(plan, "no time left")
    assert [(r.version, r.arch, r.asm, r.status, r.reason) for r in left] == [
        ("1.1.0z", "i386", "asm", "not tried", "no time left"),
        ("1.1.0z", "i386", "no-asm", "not tried", "no time left")]
    built = sweep_table.Row("1.1.0z", "i386", "asm", "built", seconds=300.0)
    merged = sweep_table.merge_rows([built], left, keep_tried=True)
    assert sorted((r.asm, r.status) for r in merged) == [("asm", "built"),
                                                        ("no-asm", "not tried")]
    again = sweep_table.merge_rows(merged, [sweep_table.Row("1.1.0z", "i386", "asm", "fails",
                                                reason="x")])
    assert {r.asm: r.status for r in again} == {"asm": "fails", "no-asm": "not tried"}


def test_host_verdict_says_clean_or_contended_from_the_accounting() -> None:
    from openssl_matrix.measure import hostacct
    from openssl_matrix.measure.invocation import split_times

    with_samples, times = split_times(host_samples("quiet-aes-256-cbc"))
    assert times is not None
    _, acct = hostacct.from_stderr(with_samples, cpu_seconds=times.user + times.system)
    assert acct is not None and hostacct.contention_reasons(acct) == []
    row = sweep_table.Row("3.0.2", "x86_64", "asm", "built", seconds=300.0,
                    speed_bytes_per_s=1.4e9, host_own_share=round(acct.own_share or 0, 3),
                    host_foreign_cores=round(acct.foreign_cores, 3))
    assert sweep_table.host_verdict(row).startswith("clean: own ")
    old = sweep_table.Row("3.0.2", "x86_64", "asm", "built", seconds=300.0,
                    speed_bytes_per_s=1.4e9, load_before=2.0, load_after=2.5)
    assert sweep_table.host_verdict(old) == "no host accounting; load 2.0→2.5"
    assert "1,400 MB/s (one run), no host accounting; load 2.0→2.5 |" in \
        sweep_table.format_table([old])


def test_resume_leaves_out_tried_cells_and_records_each_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    folder = tarballs(tmp_path)
    plan = sweep.plan_sweep(folder, tmp_path / "r" / "_sweep", only=["1.1.0z"],
                            cache_dir=tmp_path / "cache")
    done = [sweep_table.Row("1.1.0z", "x86_64", "asm", "built", seconds=99.0),
            sweep_table.Row("1.1.0z", "x86_64", "no-asm", "not tried", reason="not reached")]
    assert sweep_table.Row.from_dict({"version": "1.1.0z", "arch": "x86_64", "asm": "asm",
                                "status": "built", "added_later": 1}).status == "built"
    assert sweep_table.tried_cells(done) == {"1.1.0z-asm-x86_64"}
    failed = [sweep_table.Row("1.1.0z", "i386", "asm", "fails", reason="x")]
    assert sweep_table.tried_cells(failed) == {"1.1.0z-asm-i386"}
    assert sweep_table.tried_cells(failed, failed=False) == set()
    seen: list[str] = []
    backend = SweepBackend(lambda image, command, env: (0, SPEED_1_1_1, ""))
    rows = sweep.run_sweep(plan, tmp_path / "r", backend=backend,
                           skip=sweep_table.tried_cells(done),
                           on_row=lambda r: seen.append(r.variant))
    assert seen == ["1.1.0z-no-asm-x86_64"] and [r.variant for r in rows] == seen
    assert len(backend.builds) == 1
    # a release that now has rows of its own loses its "no tarball" row
    absent = sweep_table.Row("1.1.0z", "any", "any", "not tried", reason="no tarball")
    merged = sweep_table.merge_rows([absent], rows, keep_tried=True)
    assert [r.variant for r in merged] == ["1.1.0z-no-asm-x86_64"]


def test_failure_reason_picks_the_telling_line() -> None:
    log = ("#8 1.0 gcc -c x.c\n#8 2.0 x.c:3: warning: unused\n"
           '#8 2.1 "glob" is not exported by the File::Glob module\n'
           "#8 2.2 make: *** [Makefile:1: all] Error 2\n")
    assert sweep.failure_reason(log, None) == \
        '"glob" is not exported by the File::Glob module'
    assert sweep.failure_reason("#5 openssl-matrix: patch x does not apply\n", "e") == \
        "openssl-matrix: patch x does not apply"
    assert sweep.failure_reason("", "build failed at step 3\nmore") == "build failed at step 3"
    coloured = "\x1b[0m\x1b[91ms2_srvr.c:566:12: error: invalid storage class for function 'f'\n"
    assert sweep.failure_reason(coloured, None) == \
        "s2_srvr.c:566:12: error: invalid storage class for function 'f'"
    # a copy that lost its executable bits (the 1.0.1u copy swept here): the cause, not
    # srcfacts.pl's line saying what it runs, nor its generic "make depend failed"
    lost_modes = ("openssl-matrix runs: make depend, then make -j1 (legacy build system: "
                  "Makefile.org)\nmaking depend in crypto...\n"
                  "\x1b[91m/bin/sh: 1: ../util/domd: Permission denied\n"
                  "\x1b[0m\x1b[91mmake[1]: *** [Makefile:137: local_depend] Error 126\n"
                  "\x1b[91mopenssl-matrix: \x1b[0m\x1b[91mmake depend failed (exit 2)\n")
    assert sweep.failure_reason(lost_modes, None) == \
        "/bin/sh: 1: ../util/domd: Permission denied"


TABLE: dict[str, Any] = {"rows": [
    {"version": "1.0.2u", "arch": "x86_64", "asm": "asm", "status": "built", "seconds": 212.4,
     "source": "third-party tree, pinned locally"},
    {"version": "1.0.2u", "arch": "x86_64", "asm": "no-asm", "status": "fails",
     "reason": "make: *** [x] Error 1"},
]}


def test_build_status_from_the_recorded_table() -> None:
    assert sweep_table.build_status("1.0.2u", "x86_64", True, TABLE) == \
        "built 212 s (third-party tree)"
    assert sweep_table.build_status("1.0.2u", "x86_64", False, TABLE) == \
        "fails: make: *** [x] Error 1"
    assert sweep_table.build_status("1.0.2u", "i386", True, TABLE) == \
        "not swept this way; built x86_64 asm"
    assert sweep_table.build_status("9.9.9", "x86_64", True, TABLE) == "not swept"


def test_recorded_table_is_readable_and_list_says_sha256_and_build_status(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = sweep_table.read_table()
    assert isinstance(data["rows"], list)
    for row in data["rows"]:
        assert row["status"] in ("built", "fails", "not tried")
        # a built row has its build's seconds, or (an image another results tree had
        # built, not timed again) a smoke figure that shows the image runs
        assert row["status"] != "built" or row["seconds"] or row["speed_bytes_per_s"]
    cmd_list(target="", matrix=str(ROOT / "matrix.yaml"), results=str(tmp_path / "r"),
             json=False, only="0.9.8x-*,3.5.7-asm-x86_64")
    out = capsys.readouterr().out
    assert "0.9.8x   no sha256: pin a tarball you trust with " \
        "`invoke matrix pin 0.9.8x --file PATH`" in out
    assert "3.5.7    official sha256 (matrix, confirmed by the catalogue; " in out
    assert " series 0.9.8 (1 release)" in out and " series 3.5 (1 release)" in out
    assert f"    3.5.7-asm-x86_64: {sweep_table.build_status('3.5.7', 'x86_64', True)}" in out


def test_docs_carry_the_recorded_table_and_the_release_page_names_every_failure() -> None:
    """docs/building.md's table and docs/releases.md's release list are the recorded
    table's (``python3 benchmarks/sweep.py --docs`` writes both): a failure is never left
    out."""
    recorded = sweep_table.read_table()
    rows = [sweep_table.Row.from_dict(r) for r in recorded["rows"]]
    building = (ROOT / "docs" / "building.md").read_text(encoding="utf-8")
    readme = (ROOT / "docs" / "releases.md").read_text(encoding="utf-8")
    table_text = sweep_table.format_table(rows, when=recorded.get("swept_at"))
    assert sweep_table.replace_block(building, "sweep-table", table_text) == building
    summary = sweep_table.release_summary(rows)
    assert sweep_table.replace_block(readme, "sweep-releases", summary) == readme
    for r in rows:
        if r.status == "fails":
            assert f"**fails** {r.arch} {r.asm}: {r.reason}" in readme


def test_release_summary_and_counts() -> None:
    rows = [sweep_table.Row("1.1.0z", "x86_64", "asm", "built", seconds=120.0),
            sweep_table.Row("1.1.0z", "i386", "asm", "fails", reason="Unsupported options: x"),
            sweep_table.Row("1.1.0z", "i386", "no-asm", "not tried", reason="no time"),
            sweep_table.Row("1.0.0", "any", "any", "not tried", reason="no tarball")]
    assert sweep_table.release_summary(rows) == (
        "- 1.0.0: not tried: no tarball\n"
        "- 1.1.0z: builds (x86_64 asm); **fails** i386 asm: Unsupported options: x; "
        "not tried: i386 no-asm (no time)\n")
    assert sweep_table.result_text(sweep_table.Row("3.0.2", "i386", "asm", "built", seconds=284.0,
                                       endbr32=170)) == "built (284 s); 170 ENDBR32"
    assert sweep_table.result_text(sweep_table.Row("1.1.1w", "x86_64", "no-asm", "built")) == \
        "built (image already present: not timed)"
    broken = sweep_table.Row("1.0.2n", "x86_64", "asm", "built", seconds=136.0,
                       speed_note="speed exit 1: Error configuring OpenSSL\n1402:error:a|b")
    assert "| speed exit 1: Error configuring OpenSSL 1402:error:a\\|b |" in \
        sweep_table.format_table([broken])
    c = sweep_table.counts(rows)
    assert (c["built"], c["fails"], c["not tried"], c["build_seconds"], c["releases"]) == \
        (1, 1, 2, 120.0, 2)
    assert "Cells: 1 built (120 s of building in all), 1 fail, 2 not tried" in \
        sweep_table.format_table(rows)
    with pytest.raises(ValueError, match="no <!-- x: "):
        sweep_table.replace_block("text", "x", "body")


def test_resmoke_runs_the_smoke_check_again_on_the_recorded_image(tmp_path: Path) -> None:
    from openssl_matrix.results.records import write_latest

    old = sweep_table.Row("1.0.2u", "x86_64", "asm", "built", seconds=120.0,
                    speed_bytes_per_s=1.0e9, load_before=5.0, load_after=5.0)
    gone = sweep_table.Row("1.0.2u", "i386", "asm", "built", seconds=121.0)
    fresh = sweep_table.Row("3.0.22", "x86_64", "asm", "built", seconds=252.0, host_own_share=0.99,
                      host_foreign_cores=0.05)
    tag = "openssl-matrix/1.0.2u-asm-x86_64:abc"
    write_latest(tmp_path, old.variant, "abc" * 8, tag)
    write_latest(tmp_path, gone.variant, "def" * 8, "openssl-matrix/1.0.2u-asm-i386:def")
    backend = FakeBackend(lambda image, command, env: (0, SPEED_1_1_1,
                                                       host_samples("busy-saturated")))
    backend.images[tag] = "sha256:img"
    seen: list[str] = []
    done = sweep.resmoke([old, gone, fresh], tmp_path, backend=backend,
                         on_row=lambda r: seen.append(r.variant))
    assert [r.variant for r in done] == seen == ["1.0.2u-asm-x86_64"]
    assert [run[0] for run in backend.runs] == [tag] * sweep.SMOKE_RUNS
    assert backend.builds == [] and len(old.speed_samples) == sweep.SMOKE_RUNS
    assert old.host_own_share == pytest.approx(0.494, abs=0.005)
    assert sweep_table.host_verdict(old).startswith("contended: own 49%")
    assert gone.host_own_share is None and fresh.host_own_share == 0.99


def speed_out(kbytes: float) -> str:
    return SPEED_1_1_1.replace("1187840.00k", f"{kbytes:.2f}k")


def test_smoke_is_the_median_of_its_runs_and_as_contended_as_its_worst_run() -> None:
    answers = iter([(0, speed_out(1_000_000), host_samples("quiet-aes-256-cbc")),
                    (0, speed_out(1_100_000), host_samples("busy-saturated")),
                    (0, speed_out(1_050_000), host_samples("quiet-aes-256-cbc"))])
    backend = FakeBackend(lambda image, command, env: next(answers))
    smoke = sweep.smoke_speed(backend, "img", "1.1.1w", runs=3)
    assert smoke.samples == [1.0e9, 1.1e9, 1.05e9] and smoke.bytes_per_s == 1.05e9
    assert smoke.contended and smoke.acct.own_share == pytest.approx(0.494, abs=0.005)
    row = sweep_table.Row("1.1.1w", "x86_64", "asm", "built")
    sweep.fill_smoke(row, smoke)
    # median ± the t-interval's half-width (t(2) = 4.303 · s/√3), the run count, the host
    assert sweep_table.speed_text(row) == \
        "1,050 ± 124 MB/s (n=3), contended: own 49%, others 1.51 cores"
    assert sweep.needs_resmoke(row)
    # a run that fails ends the smoke: no figure, the reason, the runs before it kept
    answers = iter([(0, speed_out(1_000_000), host_samples("quiet-aes-256-cbc")),
                    (1, "", "speed: Illegal instruction")])
    failed = sweep.smoke_speed(FakeBackend(lambda image, command, env: next(answers)),
                               "img", "1.1.1w", runs=3)
    assert failed.bytes_per_s is None and failed.samples == [1.0e9]
    assert failed.note == "speed exit 1: speed: Illegal instruction"


def test_what_needs_the_smoke_again_and_how_old_one_run_rows_print() -> None:
    clean = sweep_table.Row("3.0.22", "x86_64", "asm", "built", speed_bytes_per_s=1.0e9,
                      speed_samples=[1.0e9, 1.0e9, 1.0e9], host_own_share=0.99,
                      host_foreign_cores=0.05)
    assert not sweep.needs_resmoke(clean)
    assert sweep_table.speed_text(clean) == \
        "1,000 ± 0 MB/s (n=3), clean: own 99%, others 0.05 cores"
    one_run = sweep_table.Row("3.0.22", "i386", "asm", "built", speed_bytes_per_s=9.0e8,
                        host_own_share=0.99, host_foreign_cores=0.05)
    assert sweep.needs_resmoke(one_run) and not sweep.needs_resmoke(one_run, runs=1)
    assert sweep_table.speed_text(one_run) == \
        "900 MB/s (one run), clean: own 99%, others 0.05 cores"
    no_acct = sweep_table.Row("1.0.2u", "x86_64", "asm", "built", speed_bytes_per_s=1.0e9,
                        load_before=5.0, load_after=4.0)
    assert sweep.needs_resmoke(no_acct, runs=1)
    assert sweep_table.speed_text(no_acct) == \
        "1,000 MB/s (one run), no host accounting; load 5.0→4.0"
    assert not sweep.needs_resmoke(sweep_table.Row("1.0.0", "any", "any", "not tried"))


def test_list_says_when_a_variant_adds_to_the_plain_build_the_sweep_made() -> None:
    from types import SimpleNamespace

    spec = SimpleNamespace(version="1.0.2u", sha256="ab" * 32)
    plain = SimpleNamespace(id="1.0.2u-asm-x86_64", version=spec, arch="x86_64", asm=True,
                            march=None, patches=(SimpleNamespace(name="glob", apply="auto"),),
                            engines=(), configure=())
    extra = SimpleNamespace(id="1.0.2u-asm-x86_64-march-native", version=spec, arch="x86_64",
                            asm=True, march="native",
                            patches=(SimpleNamespace(name="no-endbr32", apply="on-request"),),
                            engines=("padlock",), configure=("no-ssl2",))
    lines = sweep_table.describe_versions([plain, extra], {}, TABLE)
    assert lines[1] == "    1.0.2u-asm-x86_64: built 212 s (third-party tree)"
    assert lines[2] == (
        "    1.0.2u-asm-x86_64-march-native: built 212 s (third-party tree) (the sweep's plain "
        "asm x86_64 build; not with this variant's -march=native, patch no-endbr32, engine "
        "padlock, no-ssl2)")


def test_list_says_a_third_party_tree_was_swept_when_the_matrix_declares_the_official_one(
        ) -> None:
    official = KNOWN_SHA256["3.0.2"]
    table = {"rows": [
        {"version": "3.0.2", "arch": "x86_64", "asm": "asm", "status": "built",
         "seconds": 297.5, "source": "third-party tree (not the official tarball's bytes)"},
        {"version": "3.0.2", "arch": "x86_64", "asm": "no-asm", "status": "fails",
         "reason": "make: *** [x] Error 1", "source": "third-party tree, pinned locally"}]}
    assert sweep_table.build_status("3.0.2", "x86_64", True, table,
                              declared_sha256=official) == \
        "built 298 s (from a third-party tree, not the official tarball the matrix declares)"
    assert sweep_table.build_status("3.0.2", "x86_64", False, table,
                              declared_sha256=official) == (
        "fails: make: *** [x] Error 1 (from a third-party tree, not the official tarball the "
        "matrix declares)")
    # a matrix that declares some other checksum (or none) built that very tree
    assert sweep_table.build_status("3.0.2", "x86_64", True, table, declared_sha256="ab" * 32) == \
        "built 298 s (third-party tree)"
    assert sweep_table.build_status("3.0.2", "x86_64", True, table) == \
        "built 298 s (third-party tree)"
    from types import SimpleNamespace

    spec = SimpleNamespace(version="3.0.2", sha256=official)
    variant = SimpleNamespace(id="3.0.2-asm-x86_64", version=spec, arch="x86_64", asm=True,
                              march=None, patches=(), engines=(), configure=())
    assert sweep_table.describe_versions([variant], {}, table)[1] == (
        "    3.0.2-asm-x86_64: built 298 s (from a third-party tree, not the official "
        "tarball the matrix declares)")


NOT_REACHED = ("not reached: the session's time ran out (one 2-core host shared with other "
               "engineers' builds and benches); `benchmarks/sweep.py --resume` goes on with it")


def test_cells_the_sweep_did_not_reach_say_how_to_build_them_once_per_version() -> None:
    from types import SimpleNamespace

    rows = [sweep_table.Row("3.0.20", "x86_64", "asm", "built", seconds=250.0),
            sweep_table.Row("3.0.20", "x86_64", "no-asm", "not tried", reason=NOT_REACHED),
            sweep_table.Row("3.0.20", "i386", "asm", "not tried", reason=NOT_REACHED),
            sweep_table.Row("3.0.20", "i386", "no-asm", "not tried", reason="no time")]
    hint = "`benchmarks/sweep.py --tarballs DIR --resume` builds"
    assert sweep_table.result_text(rows[1]) == f"not yet built by the recorded sweep ({hint} it)"
    assert sweep_table.result_text(rows[3]) == "not tried: no time"
    table = sweep_table.format_table(rows)
    assert "the session's time ran out" not in table
    assert f"| x86_64 | no-asm | not yet built by the recorded sweep ({hint} it) |" in table
    assert sweep_table.release_summary(rows) == (
        "- 3.0.20: builds (x86_64 asm); not yet built by the recorded sweep: x86_64 no-asm, "
        f"i386 asm ({hint} them); not tried: i386 no-asm (no time)\n")
    data = {"rows": [vars(r) for r in rows]}
    assert sweep_table.build_status("3.0.20", "i386", True, data) == \
        f"not yet built by the recorded sweep ({hint} it)"
    spec = SimpleNamespace(version="3.0.20", sha256=None)

    def variant(arch: str, asm: bool) -> SimpleNamespace:
        return SimpleNamespace(id=f"3.0.20-{'asm' if asm else 'no-asm'}-{arch}", version=spec,
                               arch=arch, asm=asm, march=None, patches=(), engines=(),
                               configure=())

    lines = sweep_table.describe_versions([variant("x86_64", True), variant("x86_64", False),
                                     variant("i386", True), variant("i386", False)], {}, data)
    assert lines[1:] == [
        "    3.0.20-asm-x86_64: built 250 s",
        "    3.0.20-no-asm-x86_64, 3.0.20-asm-i386: not yet built by the recorded sweep "
        f"({hint} them)",
        "    3.0.20-no-asm-i386: not tried: no time"]


def test_release_summary_names_a_built_cell_whose_speed_check_failed() -> None:
    note = ("speed exit 1: Error configuring OpenSSL\n140307504355008:error:260B806D:engine "
            "routines:ENGINE_TABLE_REGISTER:init failed:eng_table.c:1")
    rows = [sweep_table.Row("1.0.2n", "x86_64", "asm", "built", seconds=136.0, speed_note=note),
            sweep_table.Row("1.0.2n", "i386", "asm", "built", seconds=140.0,
                      speed_bytes_per_s=1.0e8, speed_note="")]
    assert sweep_table.release_summary(rows) == (
        "- 1.0.2n: builds (x86_64 asm, i386 asm); speed check fails (x86_64 asm): speed exit "
        "1: Error configuring OpenSSL 140307504355008:error:260B806D:engine routines:"
        "ENGINE_TABLE_REGISTER:init failed:eng_table.c:1\n")
    assert sweep_table.short_note("a\nb " + "x" * 200, limit=10) == "a b xxxxx…"


def test_the_sweep_script_builds_both_arches_by_default(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ..scripts import load_script

    script = load_script("sweep")
    seen: list[list[str]] = []

    def plan(folder: Path, workdir: Path, *, arches: Any, **kwargs: Any) -> sweep.Plan:
        seen.append(list(arches))
        return sweep.Plan(matrix_path=workdir / "sweep.yaml", variants=[], skipped=[],
                          sources={})

    args = ["--tarballs", str(tmp_path), "--matrix", str(tmp_path / "none.yaml"),
            "--results", str(tmp_path / "r"), "--not-tried", "x"]
    assert script.main(args, plan_sweep=plan) == 0
    assert script.main([*args, "--arch", "i386"], plan_sweep=plan) == 0
    assert seen == [["x86_64", "i386"], ["i386"]]
    assert "0 variant(s) to build" in capsys.readouterr().out


def test_a_row_names_the_compat_diffs_applied_as_well_as_the_scripts_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    folder = tarballs(tmp_path)
    plan = sweep.plan_sweep(folder, tmp_path / "r" / "_sweep", only=["1.1.0z"],
                            asms=["asm"], cache_dir=tmp_path / "cache")
    fixes = tmp_path / "fixes"
    fixes.mkdir()
    (fixes / "fix-a.patch").write_text("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
    (fixes / "fix-a.yaml").write_text(yaml.safe_dump(
        {"why": "w", "versions": ["1.1.0*"], "apply": "auto"}))
    (fixes / "on-ask.patch").write_text("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+c\n")
    (fixes / "on-ask.yaml").write_text(yaml.safe_dump({"why": "w", "versions": ["1.1.0*"]}))
    data = yaml.safe_load(plan.matrix_path.read_text())
    data["patches_dirs"] = [str(fixes)]
    plan.matrix_path.write_text(yaml.safe_dump(data))
    (row,) = sweep.run_sweep(plan, tmp_path / "r", speed=False,
                             backend=SweepBackend(lambda image, command, env: (0, "", "")))
    assert row.status == "built" and row.compat == ["fix-a: diff applied"]
    assert sweep_table.result_text(row).endswith("; compat: fix-a")
    record = {"compat_changes": ["perl-file-glob: Configure: 1"],
              "variant": {"patches": [
                  {"name": "perl-file-glob", "apply": "auto", "file": "/p/perl-file-glob.pl"},
                  {"name": "fix-a", "apply": "auto", "file": "/p/fix-a.patch"},
                  {"name": "no-endbr32", "apply": "on-request", "file": "/p/no-endbr32.patch"}]}}
    assert sweep.compat_applied(record) == ["perl-file-glob: Configure: 1",
                                            "fix-a: diff applied"]
    assert sweep.compat_applied({}) == []
    # a compat script that found nothing to change is not named as a fix the build needed
    idle = sweep_table.Row("1.1.1w", "x86_64", "asm", "built", seconds=1.0, compat=[
        "perl-file-glob: construct not found, nothing changed", "fix-a: diff applied"])
    assert sweep_table.result_text(idle) == "built (1 s); compat: fix-a"
