"""Points and values as people read them: 'b4 · 2 threads · bf16', '2,700', the impossible points by reason.

One place, because the same label names a point in the CLI's table, the window's table, the charts' series and
the history; a label computed two ways would not match across them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from console.sweep.axes import AXES


def point_label(point: Mapping[str, Any], axes: Sequence[str] | None = None) -> str:
    """'b4 · 2 threads · bf16' — the axes that tell points apart (all of the point's when `axes` is None)."""
    parts = []
    for axis in AXES:
        if axis not in point or (axes is not None and axis not in axes):
            continue
        value = point[axis]
        if axis == "batch":
            parts.append(f"b{value}")
        elif axis == "threads":
            parts.append("default threads" if value is None else f"{value} thread{'s' if value != 1 else ''}")
        elif axis == "qps":
            parts.append(f"{show_value(value)} qps")
        elif axis == "on":
            parts.append(f"on {value}")
        elif axis == "ranks":
            parts.append(f"{value} rank{'s' if value != 1 else ''}")
        elif axis == "bucket_mb":
            parts.append(f"{show_value(value)} MB buckets")
        elif axis == "grad_accum":
            parts.append(f"accum {value}")
        elif axis == "loader_workers":
            parts.append(f"{value} loader{'s' if value != 1 else ''}")
        else:
            parts.append(str(value))
    return " · ".join(parts)


def impossible_lines(impossible: Sequence[Mapping[str, Any]]) -> list[str]:
    """'onnxruntime · bf16 · b1, onnxruntime · bf16 · b2 — reason': one line per distinct reason, naming its points."""
    by_reason: dict[str, list[str]] = {}
    for p in impossible:
        reason = f"{p['field']}: {p['reason']}" if p.get("field") else p["reason"]
        by_reason.setdefault(reason, []).append(p["label"] or "the point")
    return [f"{', '.join(labels)} — {reason}" for reason, labels in by_reason.items()]


def impossible_text(impossible: Sequence[Mapping[str, Any]]) -> str:
    """The impossible points on one line (inside an error message)."""
    return " | ".join(impossible_lines(impossible))


def format_rate(value: float | None) -> str:
    """Throughput for people: 3 significant digits below 1000, whole numbers with separators above."""
    if value is None:
        return "—"
    return f"{round(value):,}" if abs(value) >= 1000 else f"{value:.3g}"


def show_value(value: Any) -> str:
    """A value as the user typed it: strings quoted (so an empty or spaced name is visible), numbers bare."""
    return repr(value) if isinstance(value, str) else str(value)
