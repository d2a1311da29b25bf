"""The all-reduce time a DDP step's gradient buckets should take, from measured bus bandwidth (contract §6).

Why per bucket: DDP all-reduces its gradients bucket by bucket (bucket_cap_mb), and a collective's bus bandwidth
depends strongly on the message size (small messages are latency-bound), so t = Σ_b 2(n−1)/n · B_b / busbw(B_b)
with busbw read at each bucket's own size is the honest prediction; one busbw for the whole gradient would be too
optimistic for small buckets. busbw(B) is interpolated log-log between the measured rows (nccl-tests style rows:
size_bytes, busbw_gbs), the shape bandwidth-versus-size curves have; a bucket outside the rows' range takes the
nearest row and a note says so, since extrapolating a bandwidth curve invents a measurement.

The prediction is a model, the measured all-reduce time (the breakdown's comm.allreduce_s) is a measurement:
both are returned side by side with their ratio, never one in place of the other. Pure Python, no torch.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Sequence
from typing import Any

from engines.collectives.formulas import FACTOR_TEXT, busbw_factor

__all__ = ["allreduce", "busbw_at"]


# ---- Public API
def allreduce(bucket_bytes: Sequence[int], ranks: int, rows: Sequence[dict[str, Any]] | None, *, source: str,
              measured_s: float | None = None) -> dict[str, Any]:
    """The PREDICTION dict of contract §6 for one step's buckets (launch order) on `ranks` ranks.

    `rows` are all-reduce rows measured at `ranks` ranks (size_bytes, busbw_gbs); `source` names where they came
    from ("probe in this run" or "collectives run <id>"); `measured_s` is the breakdown's comm.allreduce_s when
    known. Without rows (or with one rank) predicted_s is None and `notes` says why, never a made-up zero.
    Raises ValueError for buckets or rows that are not sizes."""
    buckets = _buckets(bucket_bytes)
    if not isinstance(ranks, int) or isinstance(ranks, bool) or ranks < 1:
        raise ValueError(f"{ranks!r} ranks: a whole number ≥ 1")
    measured = float(measured_s) if measured_s is not None else None
    result = {"predicted_s": None, "measured_s": measured, "ratio": None, "busbw_source": source,
              "ranks": ranks, "per_bucket": [], "notes": [],
              "formula": f"t = Σ_b {FACTOR_TEXT['all-reduce']} · B_b / busbw(B_b), n = {ranks}",
              "method": ("per gradient bucket in launch order, busbw interpolated log-log in message size over "
                         f"the all-reduce rows of {source} (nearest row outside their range); measured = the "
                         "slowest rank's all-reduce busy time per step (the breakdown's comm.allreduce_s)")}
    if ranks == 1:
        result["notes"].append("one rank: there is no all-reduce to predict")
        return result
    table = _table(rows)
    if not table:
        result["notes"].append(f"not available: {source} has no all-reduce rows with a bus bandwidth")
        return result
    factor = busbw_factor("all-reduce", ranks)
    total = 0.0
    for size in buckets:
        busbw, note = busbw_at(table, size)
        seconds = factor * size / (busbw * 1e9)
        total += seconds
        result["per_bucket"].append({"bytes": size, "busbw_gbs": busbw, "predicted_s": seconds})
        if note and note not in result["notes"]:
            result["notes"].append(note)
    result["predicted_s"] = total
    if measured is not None and total > 0:
        result["ratio"] = measured / total
    return result


def busbw_at(table: Sequence[tuple[int, float]], size: int) -> tuple[float, str | None]:
    """busbw (GB/s) at `size` bytes from sorted (size_bytes, busbw_gbs) pairs: log-log interpolation inside
    their range, the nearest pair outside it, with the note that says so (None inside)."""
    sizes = [s for s, _ in table]
    if size <= sizes[0] or size >= sizes[-1]:
        s, bw = table[0] if size <= sizes[0] else table[-1]
        if size == s:
            return bw, None
        side = "below" if size < s else "above"
        return bw, (f"a {size} B bucket is {side} the measured sizes ({sizes[0]}–{sizes[-1]} B): the busbw of the "
                    f"nearest row ({s} B, {bw:.3g} GB/s) is used, not extrapolated")
    j = bisect.bisect_left(sizes, size)
    if sizes[j] == size:
        return table[j][1], None
    (s0, b0), (s1, b1) = table[j - 1], table[j]
    w = (math.log(size) - math.log(s0)) / (math.log(s1) - math.log(s0))
    return math.exp(math.log(b0) + w * (math.log(b1) - math.log(b0))), None


# ---- Private API
def _buckets(bucket_bytes: Sequence[int]) -> list[int]:
    if not bucket_bytes:
        raise ValueError("no gradient buckets: DDP's bucket sizes (bucket_bytes) are needed to predict the "
                         "all-reduce")
    out = []
    for i, size in enumerate(bucket_bytes):
        if isinstance(size, bool) or not isinstance(size, (int, float)) or not size > 0 or size != int(size):
            raise ValueError(f"bucket {i}: {size!r} is not a size in bytes (a whole number > 0)")
        out.append(int(size))
    return out


def _table(rows: Sequence[dict[str, Any]] | None) -> list[tuple[int, float]]:
    """Sorted (size_bytes, busbw_gbs); repeated sizes keep their median; rows without a positive busbw are
    skipped (a failed size carries no bandwidth)."""
    by_size: dict[int, list[float]] = {}
    for i, row in enumerate(rows or ()):
        if not isinstance(row, dict) or "size_bytes" not in row:
            raise ValueError(f"row {i}: a collectives row needs size_bytes and busbw_gbs, got {row!r}")
        size, busbw = row["size_bytes"], row.get("busbw_gbs")
        if isinstance(size, bool) or not isinstance(size, (int, float)) or not size > 0:
            raise ValueError(f"row {i}: size_bytes {size!r} is not a size in bytes")
        if busbw is None or isinstance(busbw, bool) or not isinstance(busbw, (int, float)) \
                or not math.isfinite(busbw) or busbw <= 0:
            continue
        by_size.setdefault(int(size), []).append(float(busbw))
    return [(size, statistics.median(values)) for size, values in sorted(by_size.items())]
