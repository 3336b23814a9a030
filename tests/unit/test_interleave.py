"""Interleaved comparisons (issue 31): the harness's output read back, the A B B A blocks'
ratio with its interval, the pairs a suite plans, the command line, the filed record.

The outputs are real (tests/fixtures/pairbench/README.md); the windows written out in
the tests below are synthetic and say so."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from openssl_matrix.cli.summary import interleaved_text
from openssl_matrix.core.errors import ConfigError, ResultsError
from openssl_matrix.matrix.load import load_matrix
from openssl_matrix.measure.interleave import AlgorithmRun, Window, estimate, parse_output
from openssl_matrix.measure.pairrun import command, plan_pairs, record_of
from openssl_matrix.results.interleaved import all_pairs, file_pair, filed_pairs
from openssl_matrix.results.pairrecord import PairEstimate, PairRow

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "pairbench"


def test_real_output_of_two_builds_reads_back() -> None:
    out = parse_output((FIX / "pairbench-111w-vs-3020.txt").read_text())
    assert out.versions[0].startswith("OpenSSL 1.1.1w")
    assert out.versions[1].startswith("OpenSSL 3.0.20")
    assert out.masks == {0: "", 1: ""}
    assert [r.algorithm for r in out.runs] == ["md5", "sha256"]
    for run in out.runs:
        assert run.block == 8192 and run.window_ms == 5 and run.direction == "digest"
        assert len(run.windows) % 4 == 0 and len(run.windows) >= 200
        assert {w.side for w in run.windows} == {0, 1}
        est = estimate(run)
        assert est is not None and not est.disturbed
        assert est.blocks + est.preempted + est.slowed == len(run.windows) // 4
        assert est.ci_low is not None and est.ci_high is not None
        assert est.ci_low <= est.ratio <= est.ci_high
        # the same compression functions in both releases at 8 KiB: within 10 %
        assert 0.9 < est.ratio < 1.1, est


def test_real_mask_output_and_errors() -> None:
    out = parse_output((FIX / "pairbench-111w-mask.txt").read_text())
    assert out.masks[1] == "~0x200000200000000:~0x20000000"
    [aes] = out.runs
    est = estimate(aes)
    assert est is not None and est.ratio < 0.5  # AES-NI off: several times slower
    assert est.rate_a > est.rate_b > 0
    assert out.errors == ["nosuchalg (side A): the library has no nosuchalg",
                          "nosuchalg (side B): the library has no nosuchalg"]


def _run(pattern: list[tuple[int, int, int, int]]) -> AlgorithmRun:
    # synthetic windows: (side, ops, elapsed ns, cpu ns)
    return AlgorithmRun("sha256", 8192, "digest", 5, 1,
                        [Window(s, o, e, c) for s, o, e, c in pattern])


def test_a_block_ratio_is_b_over_a_and_a_preempted_block_is_left_out() -> None:
    ms = 5_000_000
    steady = [(0, 100, ms, ms), (1, 200, ms, ms), (1, 200, ms, ms), (0, 100, ms, ms)]
    preempted = [(0, 100, ms, ms), (1, 50, ms, ms // 2), (1, 200, ms, ms), (0, 100, ms, ms)]
    est = estimate(_run(steady * 30 + preempted))
    assert est is not None
    assert est.blocks == 30 and est.preempted == 1 and est.slowed == 0
    assert est.ratio == pytest.approx(2.0) and est.geometric_mean == pytest.approx(2.0)
    assert est.ci_low == pytest.approx(2.0) and est.ci_high == pytest.approx(2.0)
    assert est.rate_a == pytest.approx(100 * 8192 / ms * 1e9)


def test_a_neighbour_that_slows_both_sides_of_a_block_alike_leaves_the_ratio() -> None:
    ms = 5_000_000
    blocks = []
    for slow in (1.0, 0.6, 0.7, 0.75, 1.0, 0.65, 0.8, 0.7) * 4:  # synthetic, per block
        a, b = int(100 * slow), int(150 * slow)
        blocks += [(0, a, ms, ms), (1, b, ms, ms), (1, b, ms, ms), (0, a, ms, ms)]
    est = estimate(_run(blocks))  # fewer than MIN_KEPT unslowed blocks: all are used
    assert est is not None and est.blocks == 32 and est.disturbed
    assert est.ratio == pytest.approx(1.5, rel=0.02)
    assert est.relative_half_width is not None and est.relative_half_width < 0.02


def test_blocks_a_neighbour_slowed_unequally_are_left_out() -> None:
    # synthetic, shaped like a real run here (1.1.1w SHA-1, no-asm A against asm B): the
    # ratio 1.2 for most of the run, 2.0 for the stretch where a neighbour slowed the C
    # code to 0.4 of its rate and the assembler to 0.67
    ms = 5_000_000

    def block(a: int, b: int) -> list[tuple[int, int, int, int]]:
        return [(0, a, ms, ms), (1, b, ms, ms), (1, b, ms, ms), (0, a, ms, ms)]

    quiet = [x for i in range(60) for x in block(100 - i % 3, 120 - i % 3)]
    shared = [x for _ in range(40) for x in block(40, 80)]
    est = estimate(_run(quiet[:120] + shared + quiet[120:]))
    assert est is not None and not est.disturbed
    assert est.slowed == 40 and est.blocks == 60
    assert est.ratio == pytest.approx(1.2, rel=0.01)
    assert est.ci_high is not None and est.ci_high < 1.22


def test_no_block_no_estimate_and_the_summary_says_why() -> None:
    ms = 5_000_000
    assert estimate(_run([(0, 1, ms, 0), (1, 1, ms, 0), (1, 1, ms, 0), (0, 1, ms, 0)])) is None
    assert "preempted" in interleaved_text(_row(None))
    text = interleaved_text(_row(PairEstimate(blocks=90, preempted=3, ratio=1.5, ci_low=1.47,
                                              ci_high=1.53, geometric_mean=1.5, rate_a=1.0,
                                              rate_b=1.5)))
    assert text == "1.500× ±2.0% (90 blocks, 3 preempted)"


def test_the_default_suite_plans_every_comparison_the_paired_tables_make() -> None:
    m = load_matrix(ROOT / "matrix.yaml")
    suite = m.suite("blog-8k")
    assert suite.interleave == 2
    variants = m.select("1.1.1w-*-x86_64") + m.select("3.0.20-*-x86_64")
    pairs, notes = plan_pairs(variants, suite)
    assert notes == []
    kinds = sorted(p.kind for p in pairs)
    assert kinds == ["asm/no-asm"] * 4 + ["mask/native"] * 4 + ["release"] * 4
    release = [p for p in pairs if p.kind == "release"]
    assert all(p.top.variant.version.version == "3.0.20" for p in release)
    assert all(p.top.mask == p.bottom.mask for p in pairs if p.kind != "mask/native")
    mask = next(p for p in pairs if p.kind == "mask/native")
    cmd = command(mask, suite, suite.algorithms)
    assert cmd[cmd.index("--b-cap") + 1] == "~0x200000200000000:~0x20000000"
    assert "--a-cap" not in cmd
    assert cmd[cmd.index("--seconds") + 1] == "2" and cmd[cmd.index("--bytes") + 1] == "8192"
    assert cmd[cmd.index("--a") + 1] == f"/opt/pair/{mask.bottom.variant.id}/lib/libcrypto.so.1.1"


def test_old_and_32_bit_variants_are_not_compared_and_say_why() -> None:
    m = load_matrix(ROOT / "matrix.yaml")
    suite = m.suite("blog-8k")
    variants = m.select("1.0.1e-asm-x86_64") + m.select("1.1.1w-asm-i386")
    pairs, notes = plan_pairs(variants, suite)
    assert pairs == []
    assert any("older than 1.1.0" in n for n in notes)
    assert any("i386" in n for n in notes)


def test_interleave_is_refused_on_a_suite_it_cannot_apply_to(tmp_path: Path) -> None:
    text = (ROOT / "matrix.yaml").read_text().replace(
        "    kind: pkey\n", "    kind: pkey\n    interleave: 2\n", 1)
    (tmp_path / "matrix.yaml").write_text(text)
    with pytest.raises(ConfigError, match="interleave"):
        load_matrix(tmp_path / "matrix.yaml")


def test_a_pair_is_filed_record_last_and_read_back(tmp_path: Path) -> None:
    m = load_matrix(ROOT / "matrix.yaml")
    suite = replace(m.suite("blog-8k"), algorithms=("md5", "sha256"))
    variants = m.select("1.1.1w-asm-x86_64") + m.select("3.0.20-asm-x86_64")
    pair = next(p for p in plan_pairs(variants, suite)[0]
                if p.kind == "release" and p.top.mask == "native")
    raw = (FIX / "pairbench-111w-vs-3020.txt").read_text()
    rec = record_of(pair, command(pair, suite, suite.algorithms), raw, 0, "now", 1.2)
    assert rec.numerator == "3.0.20-asm-x86_64 native"
    assert (rec.bottom.version or "").startswith("OpenSSL 1.1.1w")
    assert [r.algorithm for r in rec.algorithms] == ["md5", "sha256"]
    assert all(r.estimate is not None and r.estimate.ci_method == "t95-batches"
               for r in rec.algorithms)
    folder = file_pair(tmp_path, "host-x", "bench-1", pair.name, rec, raw)
    assert (folder / "raw.txt").read_text() == raw
    assert filed_pairs(tmp_path, "host-x", "bench-1") == {pair.name: rec}
    [filed] = all_pairs(tmp_path)
    assert (filed.cpu, filed.session, filed.record) == ("host-x", "bench-1", rec)
    # an interrupted pair (raw output, no record) is not finished: measured again
    (folder / "record.json").unlink()
    assert filed_pairs(tmp_path, "host-x", "bench-1") == {}
    with pytest.raises(ResultsError):
        file_pair(tmp_path, "host-x", "../up", pair.name, rec, raw)


def _text(alg: str, ratios: list[float], direction: str = "digest") -> str:
    """Synthetic harness output: one block per ratio (A 100 ops a window, B 100·ratio)."""
    ms = 5_000_000
    lines = ["+PAIR:side:0:version=OpenSSL 1.1.1w  11 Sep 2023:ia32cap=",
             "+PAIR:side:1:version=OpenSSL 3.0.20 7 Apr 2026:ia32cap=",
             f"+PAIR:begin:alg={alg}:bytes=8192:window_ms=5:seconds=1:direction={direction}"]
    w = 0
    for r in ratios:
        for side in (0, 1, 1, 0):
            lines.append(f"+PAIR:w:{w}:{side}:{100 if side == 0 else round(100 * r)}:{ms}:{ms}")
            w += 1
    lines.append(f"+PAIR:end:alg={alg}:windows={w}")
    return "\n".join(lines) + "\n"


class _Backend:
    """The engine faked at its seam: each run answers with the next scripted output."""

    def __init__(self, outputs: list[str]) -> None:
        self.outputs, self.commands = outputs, []  # type: list[str], list[list[str]]

    def run(self, image: str, command: list[str], *, env: dict[str, str],
            limits: object) -> object:
        from openssl_matrix.engine.backend import RunResult
        self.commands.append(list(command))
        return RunResult(command=tuple(command), env=env, stdout=self.outputs.pop(0),
                         stderr="", exit_code=0, started="t0", ended="t1", seconds=1.0)


def test_a_wide_algorithm_is_run_again_and_its_runs_pooled() -> None:
    from openssl_matrix.measure.pairrun import measure_pair
    m = load_matrix(ROOT / "matrix.yaml")
    suite = replace(m.suite("blog-8k"), algorithms=("md5", "sha256"))
    variants = m.select("1.1.1w-asm-x86_64") + m.select("3.0.20-asm-x86_64")
    pair = next(p for p in plan_pairs(variants, suite)[0] if p.kind == "release")
    steady = [1.0 + 0.001 * (i % 3) for i in range(30)]  # synthetic: narrow
    spread = [0.9, 1.1, 1.0, 0.85, 1.15, 1.05, 0.95] * 2  # synthetic: ±10 % blocks
    backend = _Backend([_text("md5", steady) + _text("sha256", spread),
                        _text("sha256", steady), _text("sha256", steady)])
    rec, raw = measure_pair(backend, "img", pair, suite, lambda n: None)
    assert backend.commands[0][-2:] == ["md5", "sha256"]
    assert backend.commands[1][-1] == "sha256" and "md5" not in backend.commands[1]
    rows = {r.algorithm: r for r in rec.algorithms}
    assert rows["md5"].runs == 1 and rows["sha256"].runs >= 2
    assert rows["sha256"].windows >= 4 * (len(spread) + len(steady))
    assert raw.count("+PAIR:begin:alg=sha256") == rows["sha256"].runs
    assert rec.exit_code == 0 and rec.errors == ()


def test_a_suite_that_decrypts_runs_its_ciphers_again_with_decrypt() -> None:
    from openssl_matrix.measure.pairrun import measure_pair
    m = load_matrix(ROOT / "matrix.yaml")
    suite = replace(m.suite("blog-8k"), algorithms=("md5", "aes-128-cbc"),
                    directions=("encrypt", "decrypt"))
    variants = m.select("1.1.1w-asm-x86_64") + m.select("3.0.20-asm-x86_64")
    pair = next(p for p in plan_pairs(variants, suite)[0] if p.kind == "release")
    steady = [1.0 + 0.001 * (i % 3) for i in range(30)]  # synthetic: narrow
    backend = _Backend([_text("md5", steady) + _text("aes-128-cbc", steady, "encrypt"),
                        _text("aes-128-cbc", steady, "decrypt")])
    rec, raw = measure_pair(backend, "img", pair, suite, lambda n: None)
    assert "--decrypt" not in backend.commands[0]
    assert backend.commands[1][-2:] == ["--decrypt", "aes-128-cbc"]  # the cipher only
    rows = [(r.algorithm, r.direction) for r in rec.algorithms]
    assert rows == [("md5", "digest"), ("aes-128-cbc", "encrypt"), ("aes-128-cbc", "decrypt")]
    assert all(r.runs == 1 for r in rec.algorithms)
    assert raw.count("+PAIR:begin:alg=aes-128-cbc") == 2


def test_a_pair_filed_from_a_failed_run_is_measured_again() -> None:
    from openssl_matrix.measure.pairrun import to_measure
    m = load_matrix(ROOT / "matrix.yaml")
    suite = m.suite("blog-8k")
    pairs, _ = plan_pairs(m.select("1.1.1w-*-x86_64"), suite)
    a, b, *rest = pairs
    rec = record_of(a, [], "", 0, "now", 1.0)
    done = {a.name: rec, b.name: replace(rec, exit_code=139)}
    assert to_measure(pairs, done) == [b, *rest]


def test_variants_on_another_base_image_are_not_interleaved_with_the_first() -> None:
    from openssl_matrix.measure.pairrun import interleaves_comparisons
    m = load_matrix(ROOT / "matrix.yaml")
    suite = m.suite("blog-8k")
    asm, noasm = m.select("1.1.1w-asm-x86_64") + m.select("1.1.1w-no-asm-x86_64")
    assert interleaves_comparisons([asm, noasm], suite)
    other = replace(noasm, base_image="debian:trixie")
    pairs, notes = plan_pairs([asm, other], suite)
    assert [p.kind for p in pairs] == ["mask/native"]  # asm's own mask only
    assert any("base image debian:trixie" in n for n in notes)
    assert not interleaves_comparisons([asm, other], suite)  # rounds measure asm/no-asm
    i386 = m.select("1.1.1w-asm-i386")
    assert not interleaves_comparisons([asm, noasm, *i386], suite)


def test_the_library_operations_are_the_pair_harness_s_and_the_library_harness_s() -> None:
    import re

    from openssl_matrix.matrix.libvocab import OPERATIONS
    from openssl_matrix.measure.interleave import LIBRARY_OPERATIONS
    harness = ROOT / "openssl_matrix" / "resources" / "harness"
    table = (harness / "pairbench.c").read_text().split("LIBOPS[] = {")[1].split("};")[0]
    assert tuple(re.findall(r'"([a-z0-9-]+)"', table)) == LIBRARY_OPERATIONS
    libbench = (harness / "libbench.c").read_text()
    for op in LIBRARY_OPERATIONS:  # the same names, the library harness's figures
        assert op in OPERATIONS and f'"{op}"' in libbench, op


def test_a_host_that_preempts_every_window_gets_rates_by_thread_cpu_time() -> None:
    # synthetic: every window preempted; A ran 2.5 ms of its 5, B 1.25 ms, both did 100
    # operations: by wall time the same rate, by the time each ran B twice A's
    ms = 5_000_000
    block = [(0, 100, ms, ms // 2), (1, 100, ms, ms // 4), (1, 100, ms, ms // 4),
             (0, 100, ms, ms // 2)]
    est = estimate(_run(block * 40))
    assert est is not None and est.by_cpu_time and est.record().rates_by == "cpu"
    assert est.blocks == 40 and est.preempted == 40
    assert est.ratio == pytest.approx(2.0)
    assert est.rate_a == pytest.approx(100 * 8192 / (ms / 2) * 1e9)
    # more unpreempted blocks than preempted ones: wall time over those, as before (the
    # same code at the same rates: what the preempted windows did in the time they ran)
    quiet = [(0, 200, ms, ms), (1, 400, ms, ms), (1, 400, ms, ms), (0, 200, ms, ms)]
    est = estimate(_run(block * 40 + quiet * 41))
    assert est is not None and not est.by_cpu_time and est.blocks == 41
    assert est.ratio == pytest.approx(2.0) and est.preempted == 40
    # most blocks preempted: the few unpreempted ones are not the run; CPU time over all
    est = estimate(_run(block * 40 + quiet * 39))
    assert est is not None and est.by_cpu_time and est.blocks == 79


def test_runs_of_a_pair_are_pooled_into_one_batch_means_interval() -> None:
    import math
    import statistics

    from openssl_matrix.core.stats import t975
    ms = 5_000_000

    def blocks(ratios: list[float]) -> list[tuple[int, int, int, int]]:
        return [x for r in ratios for x in ((0, 1000, ms, ms), (1, round(1000 * r), ms, ms),
                                            (1, round(1000 * r), ms, ms), (0, 1000, ms, ms))]

    # synthetic: three runs of 20 blocks each, each a little apart from the others
    runs = [_run(blocks([c + 0.002 * (i % 5) for i in range(20)])) for c in (1.5, 1.53, 1.47)]
    pooled = estimate(runs[0], runs[1:])
    assert pooled is not None and pooled.blocks == 60
    logs = [math.log(round(1000 * r) / 1000) for c in (1.5, 1.53, 1.47)
            for r in (c + 0.002 * (i % 5) for i in range(20))]
    batches = [statistics.fmean(logs[i:i + 10]) for i in range(0, 60, 10)]
    half = t975(5) * statistics.stdev(batches) / math.sqrt(6)
    centre = statistics.fmean(batches)
    assert pooled.ratio == pytest.approx(math.exp(centre))
    assert (pooled.ci_low, pooled.ci_high) == pytest.approx(
        (math.exp(centre - half), math.exp(centre + half)))
    # one run alone has 2 batches: no interval; pooled, every block counts
    alone = estimate(runs[0])
    assert alone is not None and alone.ci_low is None


def test_a_pair_near_the_target_runs_longer_one_far_from_it_stops() -> None:
    from openssl_matrix.measure.pairrun import FOLLOW_UPS, MAX_RUNS, again

    def row(half: float | None) -> PairRow:
        if half is None:
            return _row(None)
        return _row(PairEstimate(blocks=40, preempted=0, ratio=1.5, ci_low=1.5 * (1 - half),
                                 ci_high=1.5 * (1 + half), geometric_mean=1.5, rate_a=1.0,
                                 rate_b=1.5))

    assert not again(row(0.015), 1)  # within ±2 %: done
    assert again(row(0.1), 1) and again(row(None), FOLLOW_UPS)  # the first follow-ups
    # after three runs: ±2.7 % should reach ±2 % in 3 × 1.82 = 5.5 runs, ±3.7 % in 10.3,
    # both within 12: again; ±4.5 % would need 15.2: stopped; never beyond MAX_RUNS, nor
    # without an interval
    assert MAX_RUNS == 12
    assert again(row(0.027), 1 + FOLLOW_UPS) and again(row(0.037), 1 + FOLLOW_UPS)
    assert not again(row(0.045), 1 + FOLLOW_UPS)
    assert not again(row(0.021), MAX_RUNS) and not again(row(None), 1 + FOLLOW_UPS)


def _row(estimate: PairEstimate | None) -> PairRow:
    """A synthetic row of sha512 over 4 windows, with ``estimate``."""
    return PairRow(algorithm="sha512", block_size=8192, direction="digest", window_ms=5.0,
                   seconds=1.0, runs=1, windows=4, estimate=estimate)
