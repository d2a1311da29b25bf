"""The roofline model over a machine card: which roof binds each op, and how close the op gets to it.

Why: an op's achieved FLOP/s means nothing alone; against the measured roofs it says whether the op is limited
by arithmetic (intensity above the ridge) or by memory (below it), and how much headroom is left. The roofs are
the card's *measured* ceilings (large GEMMs, a streaming kernel), never datasheet numbers.

Pure functions over plain dicts (machine card, OP rows: see docs/architecture.md), Qt-free, numpy-free.
"""

from __future__ import annotations

from typing import Any

GB = 1e9
MEMORY_ROOF = "memory"


class RooflineError(ValueError):
    """The card lacks a ceiling the roofline needs."""


# ---- Public API
def roofs(card: dict[str, Any], precision: str = "fp32") -> dict[str, Any]:
    """The compute roof for `precision`, the memory roof, their ridge point and the last-level cache size.

    A precision the card did not measure falls back to fp32, and `precision_used` / `note` say so (an int8 run on a
    card without an int8 GEMM figure is judged against fp32, which is the honest lower bound we have).
    """
    peaks = card.get("peak_flops") or {}
    used = precision if _positive(peaks.get(precision)) else "fp32"
    peak = peaks.get(used)
    if not _positive(peak):
        raise RooflineError(f"the machine card for {card.get('target', '?')} has no peak_flops for {precision} "
                            "or fp32: measure it with `labconsole machine --refresh`")
    bandwidth_gbs = _bandwidth_gbs(card)
    if not _positive(bandwidth_gbs):
        raise RooflineError(f"the machine card for {card.get('target', '?')} has no memory bandwidth: measure it "
                            "with `labconsole machine --refresh`")
    bandwidth = float(bandwidth_gbs) * GB
    out = {"peak_flops": float(peak), "bandwidth_bytes_s": bandwidth, "ridge": float(peak) / bandwidth,
           "llc_bytes": llc_bytes(card), "precision": precision, "precision_used": used}
    if used != precision:
        out["note"] = f"no {precision} peak on the card: the fp32 roof is used"
    return out


def llc_bytes(card: dict[str, Any]) -> int | None:
    """The last-level cache: the card's llc_bytes, else the largest cache it lists, else None (unknown)."""
    if _positive(card.get("llc_bytes")):
        return int(card["llc_bytes"])
    sizes = [v for v in (card.get("caches") or {}).values() if _positive(v)]
    return int(max(sizes)) if sizes else None


def attainable(intensity: float, roof: dict[str, Any]) -> float:
    """FLOP/s the roofline allows at this arithmetic intensity (FLOP/byte): min(peak, bandwidth × intensity)."""
    return min(roof["peak_flops"], roof["bandwidth_bytes_s"] * intensity)


def annotate(ops: list[dict[str, Any]], card: dict[str, Any], precision: str = "fp32") -> list[dict[str, Any]]:
    """Copies of the OP rows with `bound`, `roof` (FLOP/s allowed at the op's intensity) and `efficiency`.

    - FLOPs and bytes known: bound = compute when intensity ≥ ridge, else memory; efficiency = achieved FLOP/s ÷
      roof.
    - Bytes but no FLOPs (copies, most elementwise ops: profilers count FLOPs for GEMMs and convolutions only):
      bound = memory, roof = None (no FLOP/s roof at zero intensity), efficiency = achieved bytes/s ÷ bandwidth.
    - Neither: bound, roof and efficiency None (nothing to hold against a roof).
    An efficiency above 1 is kept, not clipped: bytes served from cache beat the DRAM roof, and that is evidence.
    """
    roof = roofs(card, precision)
    return [_annotated(op, roof) for op in ops]


def run_point(ops: list[dict[str, Any]], op_time_s: float | None = None) -> dict[str, Any] | None:
    """The whole run as one roofline dot: total FLOPs ÷ total bytes, total FLOPs ÷ op time.

    Only ops with both FLOPs and bytes count towards intensity; `op_time_s` defaults to the ops' summed time.
    None when no op carries FLOPs.
    """
    flops = sum(float(op["flops"]) for op in ops if _positive(op.get("flops")))
    moved = sum(float(op["bytes"]) for op in ops if _positive(op.get("bytes")))
    seconds = op_time_s if _positive(op_time_s) else sum(float(op.get("time_s") or 0.0) for op in ops)
    if flops <= 0 or moved <= 0 or seconds <= 0:
        return None
    return {"op": "whole run", "intensity": flops / moved, "achieved_flops_s": flops / seconds,
            "achieved_bytes_s": moved / seconds, "flops": flops, "bytes": moved, "time_s": seconds}


def chart_data(ops: list[dict[str, Any]], card: dict[str, Any], precision: str = "fp32",
               op_time_s: float | None = None) -> dict[str, Any]:
    """Plain data for widgets.roofline_chart: every measured compute roof, the memory roof, a dot per op."""
    roof = roofs(card, precision)
    compute_roofs = [{"name": name, "peak_flops": float(value), "selected": name == roof["precision_used"]}
                     for name, value in sorted((card.get("peak_flops") or {}).items()) if _positive(value)]
    dots = []
    for op in annotate(ops, card, precision):
        if _positive(op.get("intensity")) and _positive(op.get("achieved_flops_s")):
            dots.append({"op": op["op"], "intensity": float(op["intensity"]),
                         "achieved_flops_s": float(op["achieved_flops_s"]), "share": float(op.get("share") or 0.0),
                         "bound": op["bound"], "efficiency": op["efficiency"], "calls": op.get("calls")})
    skipped = [op["op"] for op in ops if not (_positive(op.get("intensity")) and _positive(op.get("achieved_flops_s")))]
    return {"precision": precision, "roofs": compute_roofs, "bandwidth_bytes_s": roof["bandwidth_bytes_s"],
            "ridge": roof["ridge"], "dots": dots, "run": run_point(ops, op_time_s),
            "not_drawn": skipped, "note": roof.get("note")}


# ---- Private API
def _annotated(op: dict[str, Any], roof: dict[str, Any]) -> dict[str, Any]:
    out = dict(op)
    flops, moved = op.get("flops"), op.get("bytes")
    intensity = op.get("intensity")
    if not _positive(intensity) and _positive(flops) and _positive(moved):
        intensity = float(flops) / float(moved)
        out["intensity"] = intensity
    if _positive(intensity):
        out["bound"] = "compute" if intensity >= roof["ridge"] else "memory"
        out["roof"] = attainable(float(intensity), roof)
        achieved = op.get("achieved_flops_s")
        out["efficiency"] = float(achieved) / out["roof"] if _positive(achieved) else None
    elif _positive(moved):
        out["bound"], out["roof"] = "memory", None
        achieved = op.get("achieved_bytes_s")
        if not _positive(achieved) and _positive(op.get("time_s")):
            achieved = float(moved) / float(op["time_s"])
        out["efficiency"] = float(achieved) / roof["bandwidth_bytes_s"] if _positive(achieved) else None
    else:
        out["bound"] = out["roof"] = out["efficiency"] = None
    return out


def _bandwidth_gbs(card: dict[str, Any]) -> float | None:
    """A GPU card's roof is its device memory; a CPU's, its measured DRAM bandwidth."""
    if card.get("target", "cpu") != "cpu" and _positive(card.get("device_memory_bandwidth_gbs")):
        return float(card["device_memory_bandwidth_gbs"])
    return card.get("memory_bandwidth_gbs")


def _positive(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 and x == x and x != float("inf")
