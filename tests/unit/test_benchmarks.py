"""benchmarks/run.py: its arithmetic and parsing without Docker, and one quick real run."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from openssl_matrix.images.render import render
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.speedcmd import speed_invocations

from ..scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


run = load_script("run")


def test_median_and_cv() -> None:
    assert run.median([3.0, 1.0, 2.0]) == 2.0
    assert run.median([1.0, 2.0, 3.0, 10.0]) == 2.5
    # sample standard deviation of 9, 10, 11 is 1 → 10 %
    assert math.isclose(run.cv_percent([9.0, 10.0, 11.0]), 10.0)
    assert run.cv_percent([5.0, 5.0, 5.0]) == 0.0
    with pytest.raises(ValueError):
        run.cv_percent([1.0])
    with pytest.raises(ValueError):
        run.median([])


def test_cpu_busy_share_from_proc_stat() -> None:
    a = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\n"
    b = "cpu  160 0 70 900 70 0 0 0 0 0\ncpu0 80 0 35 450 35 0 0 0 0 0\n"
    before, after = run.cpu_times(a), run.cpu_times(b)
    assert before == (150, 1000)
    # 80 busy jiffies out of 200: 40 %
    assert math.isclose(run.busy_share(before, after), 0.4)
    assert run.cpu_times(Path("/proc/stat").read_text())[1] > 0
    quiet = run.Load((0.1, 0.2, 0.3), 0.02)
    busy = run.Load((4.0, 3.0, 2.0), 0.9)
    assert quiet.quiet and "NOT QUIET" not in quiet.text()
    assert not busy.quiet and "NOT QUIET" in busy.text()


def test_host_figure_reads_the_named_row_at_8192_bytes() -> None:
    out = (FIXTURES / "speed/real-1.1.1w/mr-evp-elapsed.stdout").read_text()
    # the +F:16 row is the legacy 'aes-128 cbc', +F:22 the EVP 'aes-128-cbc'
    assert run.host_figure(out, "aes-128-cbc") == 984391680.00
    assert run.host_figure(out, "aes-128 cbc") == 230424576.00
    assert run.host_figure(out, "sha256", 16) == 190459936.00
    assert run.host_figure("+H:8192\n+F:22:aes-128-cbc:1426407424.00\n",
                           "aes-128-cbc") == 1426407424.00
    with pytest.raises(ValueError):
        run.host_figure(out, "md5")
    out3 = (FIXTURES / "speed/real-3.0.20/mr-evp-elapsed.stdout").read_text()
    assert run.host_figure(out3, "aes-128-cbc") == 1423826944.00


def test_noop_matrix_has_20_variants_sharing_the_default_images(tmp_path: Path) -> None:
    default = load_matrix(ROOT / "matrix.yaml", default_urls=default_urls)
    versions = run.default_versions(default)
    path = tmp_path / "noop.yaml"
    path.write_text(run.noop_matrix_yaml(versions, run.NOOP_MARCHES, "1.1.1w"))
    m = load_matrix(path, default_urls=default_urls)
    assert len(m.variants) >= 20
    ids = [v.id for v in m.variants]
    assert len(set(ids)) == len(ids)
    assert "1.1.1w-no-asm-x86_64-march-znver2" in ids
    # the default matrix's variants are in it with identical Dockerfiles: same images
    by_id = {v.id: v for v in m.variants}
    for v in default.variants:
        assert render(by_id[v.id]).dockerfile == render(v).dockerfile


def test_usable_marches_follow_the_cpu_flags() -> None:
    assert run.usable_marches(["sse4_2", "popcnt", "ssse3"]) == ["x86-64-v2"]
    everything = {f for needs in run.MARCH_NEEDS.values() for f in needs}
    assert run.usable_marches(everything) == list(run.NOOP_MARCHES)


def test_cold_matrix_adds_one_variant_differing_only_in_a_harmless_flag(tmp_path: Path) -> None:
    path = tmp_path / "cold.yaml"
    sha = "cf3098950cb4d853ad95c0841f1f9c6d3dc102dccfcacd521d93925208b76ac8"
    path.write_text(run.cold_matrix_yaml("1.1.1w", sha, "ab12cd34"))
    m = load_matrix(path, default_urls=default_urls)
    cold = m.select("*frandom-seed-ab12cd34")
    assert [v.id for v in cold] == ["1.1.1w-asm-x86_64-frandom-seed-ab12cd34"]
    # a docker repository name must be lower case
    assert cold[0].id == cold[0].id.lower()
    plain, extra = (render(v) for v in (m.select("1.1.1w-asm-x86_64")[0], cold[0]))
    assert extra.recipe.configure == (*plain.recipe.configure[:-1], "-frandom-seed=ab12cd34",
                                      plain.recipe.configure[-1])
    # the unpacked-source stage is the same text, so it is shared from the layer cache
    head = plain.dockerfile.split("# --- stage 2")[0].split("# --- stage 1")[1]
    assert head in extra.dockerfile


def test_plain_dockerfile_reuses_the_tools_unpack_step() -> None:
    m = load_matrix(ROOT / "matrix.yaml", default_urls=default_urls)
    v = m.select("1.1.1w-asm-x86_64")[0]
    r = render(v)
    text = run.plain_dockerfile(r.toolchain_tag, "openssl-1.1.1w.tar.gz", r.recipe.configure,
                                2, r.recipe.install)
    lines = text.splitlines()
    assert lines[0] == f"FROM {r.toolchain_tag}"
    # COPY and the unpack RUN are the tool's lines, so both builds find them cached
    for line in lines[1:5]:
        assert line in r.dockerfile
    assert f"RUN {json.dumps(list(r.recipe.configure))}" in lines
    assert "RUN make -j2" in lines


def test_build_log_steps_and_stage_cache() -> None:
    text = (FIXTURES / "buildlog/3.0.20-no-asm-x86_64.build.log").read_text()
    steps = run.build_log_steps(text)
    # step 9 (make install_sw) sits in the part trimmed from the fixture
    assert [s.number for s in steps] == [n for n in range(1, 19) if n != 9]
    assert all(s.total == 18 for s in steps)
    source = run.stage_steps(steps, "source")
    assert [s.number for s in source] == [2, 3]
    assert all(s.cached for s in source)
    build = run.stage_steps(steps, "build")
    assert [s.number for s in build] == [5, 6, 7, 8, 10, 11]
    assert [s.cached for s in build] == [True, True, True, False, False, False]


def test_shared_stage_savings_count_one_build_per_base_and_version(tmp_path: Path) -> None:
    default = load_matrix(ROOT / "matrix.yaml", default_urls=default_urls)
    versions = run.default_versions(default)
    path = tmp_path / "noop.yaml"
    path.write_text(run.noop_matrix_yaml(versions, run.NOOP_MARCHES, "1.1.1w"))
    variants = load_matrix(path, default_urls=default_urls).variants
    saved = run.shared_stage_savings(variants, 60.0, {"1.1.1w": 3.0, "3.0.20": 4.0})
    # 20 variants on one base image: 19 toolchain builds saved; 18 of 1.1.1w, 2 of 3.0.20
    assert saved["toolchain_s"] == 19 * 60.0
    assert saved["source_s"] == 17 * 3.0 + 1 * 4.0
    assert saved["total_s"] == saved["toolchain_s"] + saved["source_s"]


def test_method_table_arranges_records_like_the_blog() -> None:
    def rec(variant: str, mask: str, alg: str, value: float | None, status: str = "ok",
            engine: str | None = None) -> dict[str, object]:
        return {"variant": variant, "version": "1.1.1w", "mask": mask, "algorithm": alg,
                "block_size": 8192, "bytes_per_s": value, "status": status, "engine": engine}

    rows = [rec("1.1.1w-no-asm-x86_64", "native", "md5", 1000.0),
            rec("1.1.1w-no-asm-x86_64", "native", "md5", 3000.0),
            rec("1.1.1w-no-asm-x86_64", "no-aesni-sha", "md5", 99.0),
            rec("1.1.1w-no-asm-x86_64", "native", "md5", 55.0, engine="afalg"),
            rec("1.1.1w-asm-x86_64", "no-aesni-sha", "sha256", 2.0),
            rec("1.1.1w-asm-x86_64", "native", "sha256", 5.0),
            rec("1.1.1w-asm-x86_64", "native", "sha1", None, "unparsable"),
            rec("1.1.1w-asm-x86_64", "native", "aes-256-cbc", 7e8, "engine-not-engaged",
                engine="afalg"),
            {**rec("3.0.20-asm-x86_64", "native", "sha256", 7.0), "version": "3.0.20"}]
    table = run.method_table(rows, "1.1.1w")
    assert table == {
        "no-asm": {"md5": {"values": [1000.0, 3000.0], "statuses": ["ok"]}},
        "asm": {"sha256": {"values": [2.0], "statuses": ["ok"]}},
        "AES-NI & SHA Ext.": {"sha256": {"values": [5.0], "statuses": ["ok"]}},
        "Kernel (afalg)": {"aes-256-cbc": {"values": [7e8],
                                           "statuses": ["engine-not-engaged"]}}}
    assert [round(c, 1) for c in run.table_cvs(table)] == [70.7]
    text = run.blog_table_text({"1.1.1w": table})
    assert "| no-asm " in text and "2.00k (70.7%)" in text
    assert "700,000.00k [engine-not-engaged]" in text


def test_overhead_split() -> None:
    split = run.overhead_split(total_s=10.0, fixed_s=1.0, container_s=[2.3, 2.5],
                               speed_s=[2.0, 2.0])
    assert math.isclose(split["per_cell_s"], 2.5)
    assert math.isclose(split["container_s"], 0.4)
    assert math.isclose(split["parse_write_s"], 2.1)
    with pytest.raises(ValueError):
        run.overhead_split(1.0, 0.0, [1.0], [])


def test_blog_fast_suite_is_one_size_one_second_on_1_1_1_and_3_0() -> None:
    m = load_matrix(ROOT / "matrix.yaml", default_urls=default_urls)
    suite = m.suite("blog-fast")
    assert suite.algorithms == run.BLOG_ALGORITHMS
    assert {mask.name for mask in suite.masks} == {m[2] for m in run.BLOG_METHODS}
    for version in ("1.1.1w", "3.0.20"):
        invocations, notes = speed_invocations(version, suite)
        assert notes == []
        # 6 algorithms x 2 masks x (built-in code, afalg engine)
        assert len(invocations) == 24
        for inv in invocations:
            assert inv.command[:8] == ("openssl", "speed", "-elapsed", "-mr", "-seconds", "1",
                                       "-bytes", "8192")
        masked = {inv.env.get("OPENSSL_ia32cap") for inv in invocations} - {None}
        # AES-NI, PCLMULQDQ off in the first word, the SHA extensions in the second
        assert masked == {"~0x200000200000000:~0x20000000"}
        assert {inv.engine for inv in invocations} == {None, "afalg"}
    idea = [i for i in speed_invocations("3.0.20", suite)[0] if i.algorithm == "idea-cbc"]
    assert all("legacy" in i.command for i in idea)


def test_markdown_table_aligns() -> None:
    text = run.markdown_table(["a", "bb"], [["1", "2"], ["333", "4"]])
    lines = text.splitlines()
    assert lines[0] == "| a   | bb |"
    assert lines[1] == "|-----|----|"
    assert lines[3] == "| 333 | 4  |"


def test_step_durations_and_groups() -> None:
    marks = [(0.0, "(command started)"),
             (1.0, "Step 1/6 : FROM openssl-matrix/toolchain:x AS source"),
             (1.5, 'Step 2/6 : RUN ["perl", "./Configure", "linux-x86_64"]'),
             (4.0, 'Step 3/6 : RUN ["/bin/sh", "-c", "make -j\\"${MAKE_JOBS}\\""]'),
             (64.0, 'Step 4/6 : RUN ["make", "install_sw"]'),
             (70.0, "Step 5/6 : LABEL a=b"),
             (70.5, "Step 6/6 : LABEL c=d"),
             (71.0, "Successfully tagged x:y")]
    d = run.step_durations(marks, end=72.5)
    assert [x["step"] for x in d] == [None, 1, 2, 3, 4, 5, 6, None]
    assert [x["seconds"] for x in d] == [1.0, 0.5, 2.5, 60.0, 6.0, 0.5, 0.5, 1.5]
    g = run.group_steps(d)
    assert g == {"before the build": 1.0, "other steps": 0.5, "Configure": 2.5, "make": 60.0,
                 "make install_sw": 6.0, "labels": 1.0, "after the build": 1.5}
    # the buildinfo step names the Configure line too: it counts as buildinfo
    info = {"instruction": 'RUN ["/bin/sh", "/src/buildinfo.sh", "/opt/openssl", '
            '"perl ./Configure linux-x86_64"]', "seconds": 1.2}
    assert run.group_steps([info]) == {"buildinfo": 1.2}
    assert run.is_mark("Successfully tagged a:b\n") and run.is_mark(" Step 3/9 : WORKDIR /x")
    assert not run.is_mark(" ---> Using cache")


def test_step_tail_timestamps_a_growing_log(tmp_path: Path) -> None:
    log = tmp_path / "v" / "abc" / "build.log"
    with run.StepTail(tmp_path / "v", "*/build.log") as tail:
        log.parent.mkdir(parents=True)
        with log.open("w") as fh:
            fh.write("Step 1/2 : FROM x\n ---> 123\n")
            fh.flush()
            time.sleep(0.3)
            fh.write("Step 2/2 : RUN make\nlots of output\nSuccessfully tagged x:y\n")
    assert [m[1] for m in tail.marks] == ["Step 1/2 : FROM x", "Step 2/2 : RUN make",
                                          "Successfully tagged x:y"]
    assert tail.marks[1][0] - tail.marks[0][0] >= 0.2


def test_default_versions_are_the_default_variants_versions() -> None:
    m = load_matrix(ROOT / "matrix.yaml", default_urls=default_urls)
    versions = run.default_versions(m)
    assert set(versions) == {v.version.version for v in m.variants}
    # each with its checksum: a version without one is never in a generated matrix
    assert all(len(sha) == 64 for sha in versions.values())


def test_lab_rows_come_from_ship_records_and_the_lab_matrix_names_each_engine() -> None:
    ships = [{"bytes": 217_000_000, "seconds": s, "bytes_per_s": 217_000_000 / s}
             for s in (2.0, 4.0, 3.0)]
    toolchain = {"bytes": 690_000_000, "seconds": 10.0, "bytes_per_s": 69_000_000.0}
    rows = run.ship_rows(ships, 240.0, toolchain)
    assert rows[0][1] == "217 MB in 3.0 s [2.0–4.0], 72.3 MB/s (median of 3)"
    assert rows[1][1] == "690 MB in 10.0 s, 69.0 MB/s"
    assert rows[2][1] == "240 s"
    assert run.ship_rows([], None, None) == []
    doc = run.lab_matrix_doc({"schema": 1, "profiles": {"ryzen": {}}},
                             {"lab0": "unix:///run/a.sock"}, "AuthenticAMD")
    assert doc["profiles"] == {"ryzen": {}, "lab0": {
        "description": "this host's CPU through engine lab0", "vendor": "AuthenticAMD",
        "model": "*", "flags": [], "docker_host": "unix:///run/a.sock"}}
    out = ("  2 figure(s) from 6 measurement(s): 0 ok, 2 flagged (2 contended); 6 ...\n"
           "  2 figure(s) from 2 measurement(s): 1 ok, 1 flagged (1 noisy); 0 ...\n")
    assert run.figure_counts(out) == (4, 1)
    assert run.figure_counts("no summary") == (0, 0)


def test_report_scale_replicates_a_session_into_distinct_sessions(
        fake_matrix: Path, tmp_path: Path) -> None:
    """benchmarks/report_scale.py on a small tree: a fake-engine session copied into
    distinct sessions with the documented synthetic load, then measured as the benchmark
    measures its 500/2,500/10,000-run trees."""
    from openssl_matrix.results.records import finished_runs, journal_runs, run_session

    from ..sessiontrees import bench_sessions, widen

    scale = load_script("report_scale")
    widen(fake_matrix)
    seed = scale.seed_runs(bench_sessions(fake_matrix, tmp_path / "seed", [1.0]))
    assert len(seed) == 12  # four variants, three rounds
    row = scale.measure(seed, tmp_path, 40)
    assert (row.runs, row.sessions) == (48, 4)
    tree = tmp_path / "tree-40"
    sessions = {run_session(r, journal_runs(tree))[0] for r in finished_runs(tree)}
    assert sessions == {f"bench-synthetic-{k:05d}" for k in range(4)}
    assert row.cell_pages == 96 and row.report_bytes > 0 and row.tree_bytes > 0
    assert row.page_bytes == (tree / "_report" / "index.html").stat().st_size
    assert row.host.startswith(("ok", "contended"))
    # the synthetic step (0.92 from 70 % of the sessions on: the fourth here) moves every
    # cell beyond its interval: all 96 are in the changed list
    assert row.changed == 96
