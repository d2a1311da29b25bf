"""Which lever moved E(N): for a scaling sweep with a knob axis (gradient bucket size, gradient accumulation,
precision, loader workers), E at each rank count per knob value, and the value that changed E(N) most against the
reference value (the option's default when it was swept, else the first) — claimed only when the two E intervals
do not overlap. Overlapping intervals (or a missing one) read "within noise": a lever is never named on a difference
the runs cannot tell from their own noise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

KNOB_AXES = ("bucket_mb", "grad_accum", "precision", "loader_workers")
AXIS_NOUNS = {"bucket_mb": "bucket size", "grad_accum": "accumulation count", "precision": "precision",
              "loader_workers": "loader worker count"}
DEFAULTS = {"bucket_mb": 25.0, "grad_accum": 1, "precision": "fp32", "loader_workers": 2}  # the options' defaults
NO_AXIS_TEXT = ("no knob axis: sweep --bucket-mb, --grad-accum, --precision or --loader-workers with --ranks to see "
                "which lever moves E(N)")


# ---- Public API
def value_text(axis: str, value: Any) -> str:
    """'bucket 100 MB', 'grad accumulation 4', 'precision bf16', '4 loader workers'."""
    if axis == "bucket_mb":
        return f"bucket {value:g} MB" if isinstance(value, (int, float)) else f"bucket {value} MB"
    if axis == "grad_accum":
        return f"grad accumulation {value}"
    if axis == "loader_workers":
        return f"{value} loader worker{'' if value == 1 else 's'}"
    return f"{axis.replace('_', ' ')} {value}"


def e_text(e: float | None, interval: Any) -> str:
    """'0.71 [0.68,0.74]' (the interval when known)."""
    if e is None:
        return "not available"
    if isinstance(interval, (list, tuple)) and len(interval) == 2 and None not in interval:
        return f"{e:.2f} [{interval[0]:.2f},{interval[1]:.2f}]"
    return f"{e:.2f} (no interval)"


def overlap(a: Any, b: Any) -> bool | None:
    """Do two [lo, hi] intervals overlap? None when either is missing (nothing can be claimed)."""
    if not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == 2 and len(b) == 2):
        return None
    if None in a or None in b:
        return None
    return a[0] <= b[1] and b[0] <= a[1]


def levers(series: Mapping[str, Any]) -> dict[str, Any]:
    """{"axes": [{"axis", "reference", "values": [{"value", "text", "e": {N: {"e", "interval_95"}}}]}],
    "moves": [...every comparison...], "best": the largest move beyond noise or None, "text"}."""
    curves = [c for c in series.get("curves") or [] if isinstance(c, Mapping)]
    axes = [axis for axis in KNOB_AXES if _varies(curves, axis)]
    if not axes:
        return {"axes": [], "moves": [], "best": None, "text": NO_AXIS_TEXT}
    tables, moves = [], []
    for axis in axes:
        table, axis_moves = _axis(curves, axis)
        tables.append(table)
        moves.extend(axis_moves)
    beyond = [m for m in moves if m["beyond_noise"]]
    best = max(beyond, key=lambda m: abs(m["delta"])) if beyond else None
    if best is not None:
        text = best["text"]
    elif moves:
        largest = max(moves, key=lambda m: abs(m["delta"]))
        text = (f"within noise: no {' or '.join(AXIS_NOUNS[a] for a in axes)} moved E(N) beyond its "
                f"interval (largest: {largest['text']})")
    else:
        text = "within noise: no rank count has E for two values of the same knob (each value needs a 1-rank run)"
    return {"axes": tables, "moves": moves, "best": best, "text": text}


# ---- Private API
def _varies(curves: list[Mapping[str, Any]], axis: str) -> bool:
    return len({json.dumps((c.get("knobs") or {}).get(axis), default=str) for c in curves
                if axis in (c.get("knobs") or {})}) > 1


def _axis(curves: list[Mapping[str, Any]], axis: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Curves that differ only in `axis`, compared at each rank count against the reference value."""
    families: dict[str, dict[Any, Mapping[str, Any]]] = {}
    for curve in curves:
        knobs = dict(curve.get("knobs") or {})
        if axis not in knobs:
            continue
        value = knobs.pop(axis)
        families.setdefault(json.dumps(knobs, sort_keys=True, default=str), {})[_key(value)] = curve
    values = sorted({_key((c.get("knobs") or {}).get(axis)) for c in curves if axis in (c.get("knobs") or {})},
                    key=_order)
    default = _key(DEFAULTS.get(axis))
    reference = default if default in values else values[0]
    table = {"axis": axis, "reference": reference, "values": []}
    for value in values:
        e_by_n: dict[int, dict[str, Any]] = {}
        for family in families.values():
            curve = family.get(value)
            for point in (curve or {}).get("points") or []:
                if point.get("e") is not None and point.get("ranks") not in e_by_n:
                    e_by_n[point["ranks"]] = {"e": point["e"], "interval_95": point.get("interval_95")}
        table["values"].append({"value": value, "text": value_text(axis, value), "e": e_by_n})
    moves = []
    for family in families.values():
        base = family.get(reference)
        if base is None:
            continue
        base_points = {p.get("ranks"): p for p in base.get("points") or [] if p.get("e") is not None}
        for value, curve in family.items():
            if value == reference:
                continue
            for point in curve.get("points") or []:
                ranks, other = point.get("ranks"), base_points.get(point.get("ranks"))
                if ranks in (None, 1) or other is None or point.get("e") is None:
                    continue
                moves.append(_move(axis, reference, value, ranks, other, point))
    return table, moves


def _move(axis: str, reference: Any, value: Any, ranks: int, before: Mapping[str, Any],
          after: Mapping[str, Any]) -> dict[str, Any]:
    delta = after["e"] - before["e"]
    overlapping = overlap(before.get("interval_95"), after.get("interval_95"))
    beyond = overlapping is False
    verb = "raised" if delta > 0 else "lowered"
    text = (f"{value_text(axis, value)} {verb} E({ranks}) from {e_text(before['e'], before.get('interval_95'))} "
            f"to {e_text(after['e'], after.get('interval_95'))}")
    if not beyond:
        text = (f"{value_text(axis, value)}: E({ranks}) {e_text(before['e'], before.get('interval_95'))} → "
                f"{e_text(after['e'], after.get('interval_95'))} against {value_text(axis, reference)}, "
                + ("intervals overlap" if overlapping else "no interval to tell"))
    return {"axis": axis, "ranks": ranks, "from_value": reference, "to_value": value, "e_from": before["e"],
            "interval_from": before.get("interval_95"), "e_to": after["e"], "interval_to": after.get("interval_95"),
            "delta": delta, "beyond_noise": beyond, "text": text}


def _key(value: Any) -> Any:
    """25 and 25.0 are one bucket size."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _order(value: Any) -> tuple[int, Any]:
    return (0, value) if isinstance(value, (int, float)) else (1, str(value))
