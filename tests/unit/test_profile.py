"""Profiles from real `perf script` output captured here (source: the fixture's header)."""
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

from openssl_matrix.measure.flamesvg import flame_svg
from openssl_matrix.measure.profile import (
    compare,
    fold,
    library_of,
    parse_script,
    per_operation,
    self_time_ns,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "perf" / "script-3.0.20-asm-sha256-16.txt"


def test_parses_real_perf_script() -> None:
    samples = parse_script(FIX.read_text())
    assert samples
    assert all(s.period_ns > 0 and s.frames for s in samples)
    libs = self_time_ns(samples, by_library=True)
    assert libs.most_common(1)[0][0] == "libcrypto"
    assert "kernel" in libs and "libc" in libs


def test_fold_is_root_first() -> None:
    folded = fold(parse_script(FIX.read_text()))
    assert any(k.startswith("_dl_start_user;") and k.endswith("finish_fault") for k in folded)
    assert sum(folded.values()) == len(parse_script(FIX.read_text()))


def test_per_operation_and_compare() -> None:
    a = per_operation(Counter({"f": 1000, "g": 500}), 10)
    assert a == {"f": 100.0, "g": 50.0}
    rows, share = compare(a, {"f": 300.0, "g": 40.0, "h": 10.0}, 400.0)
    assert [r.name for r in rows] == ["f", "h", "g"]
    assert share == (200 + 10 - 10) / 400


def test_library_names() -> None:
    assert library_of("/opt/openssl/lib/libssl.so.3") == "libssl"
    assert library_of("/usr/lib/x86_64-linux-gnu/libc.so.6") == "libc"
    assert library_of("[kernel.kallsyms]") == "kernel"


def test_flame_svg_is_valid_xml() -> None:
    folded = fold(parse_script(FIX.read_text()))
    for svg in (flame_svg(folded, "t"), flame_svg(folded, "d", diff=folded)):
        root = ElementTree.fromstring(svg)
        assert root.tag.endswith("svg") and len(root) > 2


def test_differential_colours_against_the_baseline() -> None:
    after = Counter({"main;work": 10, "main;new": 10})
    svg = ElementTree.fromstring(flame_svg(after, "d", baseline=Counter({"main;work": 20})))
    ns = "{http://www.w3.org/2000/svg}"
    fills = {g.find(f"{ns}title").text.split(" ")[0]: g.find(f"{ns}rect").get("fill")  # type: ignore[union-attr]
             for g in svg.iter(f"{ns}g")}
    assert fills["new"] == "rgb(255,55,55)"  # only in the second profile: full red
    assert fills["work"] == "rgb(155,155,255)"  # half the baseline's time: blue
    assert fills["main"] == "rgb(255,255,255)"  # the same total: no colour


def test_callers_in_no_mapped_file_are_dropped() -> None:
    text = ("openssl 8 61328.673243:    1001001 cpu-clock: \n"
            "\t          211d8b ossl_lh_strcasehash+0x6b (/opt/openssl/lib/libcrypto.so.3)\n"
            "\t3635322d61696c6c [unknown] ([unknown])\n\n"
            "openssl 8 61328.674244:    1001001 cpu-clock: \n"
            "\tffffffff82255fb6 [unknown] ([unknown])\n"
            "\t            e2bc _dl_relocate_object+0x69c "
            "(/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)\n")
    first, second = parse_script(text)
    assert first.frames == (("ossl_lh_strcasehash", "libcrypto"),)
    assert second.frames == (("[kernel]", "kernel"), ("_dl_relocate_object", "ld-linux"))


def test_a_speed_phase_is_the_window_from_its_dt_line_to_its_result() -> None:
    """`openssl speed -mr rsa2048` stderr (3.0.20 image here) as the profile wrapper
    stamps it; a line without a stamp (perf's own warning) keeps no time."""
    from openssl_matrix.measure.perfrun import phase_windows, unstamp
    from openssl_matrix.measure.profile import Sample, within

    text, lines = unstamp("Couldn't record kernel reference relocation symbol\n"
                          "1796301531.913046665 +DTP:2048:private:rsa:1\n"
                          "1796301532.937771513 +R1:1861:2048:0.99\n"
                          "1796301532.942190013 +DTP:2048:public:rsa:1\n"
                          "1796301533.918109203 +R2:27986:2048:0.90\n")
    assert text.splitlines()[1:] == ["+DTP:2048:private:rsa:1", "+R1:1861:2048:0.99",
                                     "+DTP:2048:public:rsa:1", "+R2:27986:2048:0.90"]
    assert lines[0][0] is None
    assert phase_windows(lines) == [(1796301531.913046665, 1796301532.937771513),
                                    (1796301532.942190013, 1796301533.918109203)]
    frames = (("f", "libcrypto"),)
    samples = [Sample(frames, 1, t) for t in (1796301531.5, 1796301532.0, 1796301533.0)]
    assert within(samples, *phase_windows(lines)[0]) == [samples[1]]
