"""What a sweep's points say: a heat map per (rw, pattern), the knee (the smallest configuration that reaches
KNEE_SHARE of the best throughput) and, when both engines ran the same points, how well they agree. Pure.

"Smallest" orders configurations by what they cost the reader: fewest outstanding requests first (queue depth ×
readers: threads, memory in flight), then the smallest block, then the fewest readers. A loader that needs a
larger configuration than the knee gains under 10%; one that uses less leaves throughput on the table.
"""

from __future__ import annotations

import statistics
from typing import Any

KNEE_SHARE = 0.90


# ---- Public API
def size_text(size: int) -> str:
    """4096 → "4 KiB", 1048576 → "1 MiB"."""
    for unit, name in ((1024 ** 3, "GiB"), (1024 ** 2, "MiB"), (1024, "KiB")):
        if size >= unit and size % unit == 0:
            return f"{size // unit} {name}"
    return f"{size} B"


def config_text(point: dict[str, Any]) -> str:
    """"64 KiB at QD 4" (× 2 readers when more than one)."""
    readers = point["readers"]
    tail = f" × {readers} readers" if readers > 1 else ""
    return f"{size_text(point['block_bytes'])} at QD {point['queue_depth']}{tail}"


def heatmaps(points: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{"read/seq": {"x": queue depths, "y": block sizes, "mb_s": [[...] per block size], "readers": [[...]]}}:
    each cell is the best MB/s over the reader counts measured there, and "readers" says which count gave it."""
    maps: dict[str, dict[str, Any]] = {}
    for key, group in _groups(points).items():
        xs = sorted({p["queue_depth"] for p in group})
        ys = sorted({p["block_bytes"] for p in group})
        best: dict[tuple[int, int], dict[str, Any]] = {}
        for point in group:
            cell = (point["block_bytes"], point["queue_depth"])
            if point["mb_s"] is not None and (cell not in best or point["mb_s"] > best[cell]["mb_s"]):
                best[cell] = point
        maps[key] = {"x": xs, "y": ys,
                     "mb_s": [[_round(best[(y, x)]["mb_s"]) if (y, x) in best else None for x in xs] for y in ys],
                     "readers": [[best[(y, x)]["readers"] if (y, x) in best else None for x in xs] for y in ys]}
    return maps


def knees(points: list[dict[str, Any]], share: float = KNEE_SHARE) -> dict[str, dict[str, Any]]:
    """Per (rw, pattern): {"point": the knee's point, "best": the best point, "share": its fraction of the best,
    "text": "64 KiB at QD 4 gives 92% of the best (1.21 GB/s at 1 MiB at QD 16)"}."""
    found = {}
    for key, group in _groups(points).items():
        measured = [p for p in group if p["mb_s"]]
        if not measured:
            continue
        best = max(measured, key=lambda p: p["mb_s"])
        reaching = [p for p in measured if p["mb_s"] >= share * best["mb_s"]]
        knee = min(reaching, key=_cost)
        fraction = knee["mb_s"] / best["mb_s"]
        if knee is best:
            text = f"{config_text(knee)} gives the best ({_rate(best['mb_s'])}); nothing smaller reaches " \
                   f"{share * 100:.0f}% of it"
        else:
            text = (f"{config_text(knee)} gives {fraction * 100:.0f}% of the best ({_rate(best['mb_s'])} at "
                    f"{config_text(best)})")
        found[key] = {"point": knee, "best": best, "share": round(fraction, 4), "text": text}
    return found


def agreement(points: list[dict[str, Any]]) -> dict[str, Any]:
    """Built-in MB/s ÷ fio MB/s per point both engines ran: {"ratios": [{point fields, "ratio", "comparable"}],
    "median", "min", "max", "within_10_percent" (every comparable ratio within 0.9–1.1)}; empty ratios when they
    share no point. Buffered writes are not comparable: fio leaves its closing fsync out of its bandwidth (it
    reports page-cache speed), the built-in counts it; their ratios are listed, with that reason, but not judged."""
    def key(p: dict[str, Any]) -> tuple:
        return (p["rw"], p["pattern"], p["block_bytes"], p["queue_depth"], p["readers"])

    fio = {key(p): p for p in points if p["engine"] == "fio"}
    ratios = []
    for point in points:
        other = fio.get(key(point))
        if point["engine"] == "built-in" and other and point["mb_s"] and other["mb_s"]:
            comparable = point["rw"] == "read" or bool(point["direct"])
            ratios.append({"rw": point["rw"], "pattern": point["pattern"], "block_bytes": point["block_bytes"],
                           "queue_depth": point["queue_depth"], "readers": point["readers"],
                           "ratio": round(point["mb_s"] / other["mb_s"], 4), "comparable": comparable,
                           "why_not": "" if comparable else "buffered write: fio's bandwidth leaves out the "
                                                             "closing fsync, the built-in's includes it"})
    values = [r["ratio"] for r in ratios if r["comparable"]]
    return {"ratios": ratios, "median": statistics.median(values) if values else None,
            "min": min(values, default=None), "max": max(values, default=None),
            "within_10_percent": bool(values) and all(0.9 <= v <= 1.1 for v in values)}


# ---- Private API
def _groups(points: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for point in points:
        groups.setdefault(f"{point['rw']}/{point['pattern']}", []).append(point)
    return groups


def _cost(point: dict[str, Any]) -> tuple[int, int, int]:
    return (point["queue_depth"] * point["readers"], point["block_bytes"], point["readers"])


def _rate(mb_s: float) -> str:
    return f"{mb_s / 1000:.3g} GB/s" if mb_s >= 1000 else f"{mb_s:.3g} MB/s"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)
