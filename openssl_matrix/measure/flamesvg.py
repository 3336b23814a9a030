"""A flame graph of folded stacks as plain SVG (our own drawing; opens from disk)."""
from __future__ import annotations

from collections import Counter
from html import escape

_ROW = 16
_WIDTH = 1200.0


def _tree(folded: Counter[str]) -> dict[str, tuple[int, dict]]:  # type: ignore[type-arg]
    root: dict[str, tuple[int, dict]] = {}  # type: ignore[type-arg]
    for stack, n in folded.items():
        level = root
        for frame in stack.split(";"):
            count, kids = level.get(frame, (0, {}))
            level[frame] = (count + n, kids)
            level = kids
    return root


def flame_svg(folded: Counter[str], title: str, diff: Counter[str] | None = None, *,
              baseline: Counter[str] | None = None) -> str:
    """The flame graph; with `diff` (folded counts of a second profile, scaled to the same
    total) frames are red where the second takes more, blue where it takes less. With
    `baseline` instead (an earlier profile, scaled to the same work) `folded` is the second
    profile: its frames are red where it takes more than the baseline (new ones too)."""
    total = sum(folded.values()) or 1
    against = diff if baseline is None else baseline
    other = _tree(against) if against is not None else None
    rects: list[str] = []
    depth_max = 0

    def walk(level: dict, other_level: dict | None, x: float, depth: int) -> None:  # type: ignore[type-arg]
        nonlocal depth_max
        depth_max = max(depth_max, depth)
        for name in sorted(level):
            count, kids = level[name]
            w = count / total * _WIDTH
            o_count, o_kids = (other_level or {}).get(name, (0, {}))
            if other_level is None:
                fill = f"rgb(230,{120 + sum(map(ord, name)) % 100},60)"
            else:
                d = ((o_count - count) / max(count, 1) if baseline is None
                     else (count - o_count) / max(o_count, 1))
                c = int(min(1.0, abs(d)) * 200)
                fill = f"rgb(255,{255 - c},{255 - c})" if d > 0 else f"rgb({255 - c},{255 - c},255)"
            if w >= 0.5:
                y = -(depth + 1) * _ROW
                label = escape(name) if w > 40 else ""
                rect = (f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{_ROW - 1}" '
                        f'fill="{fill}"/>')
                text = (f'<text x="{x + 2:.1f}" y="{y + 12}" font-size="11">'
                        f'{label[:int(w / 7)]}</text>')
                shown = f"{count:.1f}" if isinstance(count, float) else str(count)
                rects.append(f'<g><title>{escape(name)} ({shown} samples)</title>{rect}{text}</g>')
            walk(kids, o_kids if other_level is not None else None, x, depth + 1)
            x += w

    walk(_tree(folded), other, 0.0, 0)
    height = (depth_max + 3) * _ROW
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH:.0f}" height="{height}" '
            f'viewBox="0 {-height + _ROW} {_WIDTH:.0f} {height}" font-family="monospace">'
            f'<text x="4" y="{-height + 2 * _ROW}" font-size="13">{escape(title)}</text>'
            + "".join(rects) + "</svg>\n")
