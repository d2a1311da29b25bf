"""What each storage kind's chart draws, from the kind's stored result: plain data for the views in widgets/
(au_chart, io_heatmap, stacked_stages), so the views know nothing of the result keys and this mapping is tested
without Qt.

feed → AU % against emulated accelerators with the pass threshold (find-max's series, or the one N measured);
sweep → MB/s heat maps, block size × queue depth, one per (rw, pattern), the knee's cell marked;
checkpoint → save and load seconds per format, side by side, GB/s on each bar;
coldstart → one stacked bar per read mode: read, deserialize, to device, first inference.
A figure the kind could not measure (None) is left out of a bar and named in the chart's note, never drawn as 0.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["chart_data", "feed_chart", "sweep_chart", "checkpoint_chart", "coldstart_chart", "size_text"]

COLDSTART_STAGES = (("read_s", "read"), ("deserialize_s", "deserialize"), ("to_device_s", "to device"),
                    ("first_inference_s", "first inference"))


def chart_data(kind: str, result: dict[str, Any] | None) -> dict[str, Any] | None:
    """The chart data of `kind` for `result`; None when there is nothing to draw."""
    if not isinstance(result, dict):
        return None
    maker = {"feed": feed_chart, "sweep": sweep_chart, "checkpoint": checkpoint_chart,
             "coldstart": coldstart_chart}.get(kind)
    return maker(result) if maker else None


def feed_chart(result: dict[str, Any]) -> dict[str, Any]:
    """{"series": [[n, au %]] by n, "threshold": %, "max_passing": n|None, "per_accelerator": [[n, au %]], "note"}.
    AU is a percentage by the contract; a result whose threshold and AU values are all ≤ 1 gave fractions, and
    they are scaled to percent together (never one value guessed alone)."""
    search = result.get("find_max") or {}
    threshold = search.get("threshold", result.get("threshold"))
    raw = [[n, au] for n, au in (search.get("series") or []) if _finite(n) and _finite(au)]
    figures = result.get("figures") or {}
    accelerators = result.get("accelerators")
    per = [au for au in (result.get("au_per_accelerator") or []) if _finite(au)] \
        if isinstance(result.get("au_per_accelerator"), list) else []
    values = [au for _, au in raw] + per + ([threshold] if _finite(threshold) else [])
    scale = 100.0 if values and _finite(threshold) and max(values) <= 1.0 else 1.0
    series = sorted([[n, au * scale] for n, au in raw], key=lambda pair: pair[0])
    if not series and _finite(accelerators) and _finite(figures.get("au_percent")):
        series = [[accelerators, float(figures["au_percent"])]]
    per_points = [[accelerators, au * scale] for au in per] if _finite(accelerators) else []
    notes = []
    if result.get("limited_by"):
        notes.append(f"limited by: {result['limited_by']}")
    if result.get("cache_state") in ("warm", "mixed"):
        notes.append(f"data set {result['cache_state']}: this result cannot pass")
    return {"series": series, "threshold": threshold * scale if _finite(threshold) else None,
            "max_passing": search.get("max_passing"), "per_accelerator": per_points,
            "workload": _workload_name(result.get("workload")), "note": "; ".join(notes)}


def sweep_chart(result: dict[str, Any]) -> dict[str, Any]:
    """{"maps": {"read/seq": {"x": queue depths, "y": block bytes, "mb_s": [[row per y]]}}, "knees": {key: {"x",
    "y", "text"}}, "y_labels": {bytes: "64 KiB"}}."""
    maps = {}
    for key, block in (result.get("heatmap") or {}).items():
        if isinstance(block, dict) and block.get("x") and block.get("y"):
            maps[str(key)] = {"x": list(block["x"]), "y": list(block["y"]), "mb_s": block.get("mb_s") or []}
    knees = {}
    for key, knee in (result.get("knee") or {}).items():
        if not isinstance(knee, dict):
            continue
        point = knee.get("point") or {}
        knees[str(key)] = {"x": point.get("queue_depth"), "y": point.get("block_bytes"),
                           "text": knee.get("text") or ""}
    labels = {y: size_text(y) for block in maps.values() for y in block["y"]}
    return {"maps": maps, "knees": knees, "y_labels": labels, "engine": result.get("engine")}


def checkpoint_chart(result: dict[str, Any]) -> dict[str, Any]:
    """Grouped bars: {"layout": "grouped", "categories": formats, "segments": [["save", [s]], ["load", [s]]],
    "labels": [[text per category] per segment], "unit": "s", "note"}."""
    formats = result.get("formats") or {}
    names = list(formats)
    save = [_value((formats[name] or {}).get("save_s")) for name in names]
    load = [_value((formats[name] or {}).get("load_s")) for name in names]
    labels = [[_rate((formats[name] or {}).get("save_gb_s")) for name in names],
              [_rate((formats[name] or {}).get("load_gb_s")) for name in names]]
    missing = [f"{name} {what}" for name, s, lo in zip(names, save, load, strict=True)
               for what, v in (("save", s), ("load", lo)) if v is None]
    warm = [name for name in names if (formats[name] or {}).get("cache_state") in ("warm", "mixed")]
    notes = []
    if missing:
        notes.append("not measured: " + ", ".join(missing))
    if warm:
        notes.append("restored warm (page cache): " + ", ".join(warm))
    return {"layout": "grouped", "categories": names, "segments": [["save", save], ["load", load]],
            "labels": labels, "unit": "s", "title": "Checkpoint save and restore (slowest rank)",
            "note": "; ".join(notes)}


def coldstart_chart(result: dict[str, Any]) -> dict[str, Any]:
    """Stacked bars: one per read mode, a segment per stage (seconds)."""
    stages = [stage for stage in (result.get("stages") or []) if isinstance(stage, dict)]
    categories = [str(stage.get("mode")) for stage in stages]
    segments = [[label, [_value(stage.get(key)) for stage in stages]] for key, label in COLDSTART_STAGES]
    totals = [sum(v for _, values in segments for v in [values[i]] if v is not None) for i in range(len(stages))]
    why: dict[str, list[str]] = {}  # the kind's own reason for a stage it did not time, with the modes it covers
    for key, label in COLDSTART_STAGES:
        for i, stage in enumerate(stages):
            if _value(stage.get(key)) is None:
                reason = stage.get(key.removesuffix("_s") + "_note") or "not measured"
                why.setdefault(f"{label}: {reason}", []).append(categories[i])
    warm = [categories[i] for i, stage in enumerate(stages) if stage.get("cache_state") in ("warm", "mixed")]
    notes = []
    if why:
        notes.append("left out (not 0) — " + "; ".join(f"{text} ({', '.join(modes)})" for text, modes in why.items()))
    if warm:
        notes.append("read warm (page cache): " + ", ".join(warm))
    return {"layout": "stacked", "categories": categories, "segments": segments,
            "labels": [[f"{total:.3g} s" for total in totals]], "unit": "s",
            "title": "Cold start by read mode", "note": "; ".join(notes)}


def size_text(value: Any) -> str:
    """Bytes as people name block sizes: 4096 → '4 KiB', 1048576 → '1 MiB'."""
    if not _finite(value):
        return str(value)
    number = float(value)
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if number >= size:
            scaled = number / size
            return f"{scaled:.0f} {unit}" if scaled == int(scaled) else f"{scaled:.3g} {unit}"
    return f"{number:.0f} B"


# ---- Private API
def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _value(value: Any) -> float | None:
    return float(value) if _finite(value) else None


def _workload_name(workload: Any) -> str | None:
    if isinstance(workload, dict):
        name, gpu = workload.get("name"), workload.get("gpu") or workload.get("accelerator")
        return f"{name} ({gpu})" if name and isinstance(gpu, str) else (str(name) if name else None)
    return str(workload) if workload else None


def _rate(value: Any) -> str:
    return f"{value:.3g} GB/s" if _finite(value) else "—"
