"""`heatmap` in the terminal: one character per cell of FlameScope's subsecond heatmap,
darker = more non-idle samples."""

from __future__ import annotations

from typing import Any

from corescope.timeparse import iso

_SHADES = " .:-=+*#%@"


def render_heatmap(data: dict[str, Any]) -> str:
    """`data`: the heatmap's JSON form (`heatmap --json`)."""
    vals: list[list[int]] = data["values"]
    top = data["max"] or 1
    rows = data.get("rows") or (len(vals[0]) if vals else 0)
    where = f"cpu {data['cpu']}" if data.get("cpu") is not None else "all CPUs"
    start = data["start"]
    head = (f"subsecond heatmap, {where}, {data['columns']} s from "
            f"{iso(start) if data.get('clock') == 'wall' and start is not None else start}; "
            f"rows {data['rows_ms']} ms, max {data['max']} samples/cell")
    out = [head]
    for r in range(rows):
        line = "".join(
            _SHADES[min(len(_SHADES) - 1, (c[r] * (len(_SHADES) - 1) + top - 1) // top)]
            for c in vals)
        out.append(f"{r * data['rows_ms']:4d}ms |{line}|")
    return "\n".join(out)
