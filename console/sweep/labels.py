"""Points and values as people read them: 'b4 · 2 threads · bf16', '2,700', the impossible points by reason.

One place, because the same label names a point in the CLI's table, the window's table, the charts' series and
the history; a label computed two ways would not match across them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from console.sweep.axes import AXES


def point_label(point: Mapping[str, Any], axes: Sequence[str] | None = None) -> str:
    """'b4 · 2 threads · bf16' — the axes that tell points apart (all of the point's when `axes` is None)."""
    return " · ".join(_AXIS_TEXT.get(axis, str)(point[axis]) for axis in AXES
                      if axis in point and (axes is None or axis in axes))


def _counted(noun: str) -> Callable[[Any], str]:
    """'1 rank', '2 ranks'."""
    return lambda value: f"{value} {noun}{'s' if value != 1 else ''}"


_COUNTED_THREADS = _counted("thread")
_AXIS_TEXT: dict[str, Callable[[Any], str]] = {  # an axis not named here shows its bare value
    "batch": lambda value: f"b{value}",
    "threads": lambda value: "default threads" if value is None else _COUNTED_THREADS(value),
    "qps": lambda value: f"{show_value(value)} qps",
    "on": lambda value: f"on {value}",
    "ranks": _counted("rank"),
    "bucket_mb": lambda value: f"{show_value(value)} MB buckets",
    "grad_accum": lambda value: f"accum {value}",
    "loader_workers": _counted("loader"),
}


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
