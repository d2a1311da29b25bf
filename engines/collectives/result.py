"""Turn every rank's trial times into the contract's result: one time per trial (max or average over ranks),
the median over trials with its spread, algbw and busbw from that median exactly as nccl-tests computes them,
and the headline figures (each op's peak busbw and its latency at the smallest size). Pure Python: no torch."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from engines.collectives.formulas import FACTOR_TEXT, bandwidths, shape
from engines.collectives.options import format_size

__all__ = ["build_result", "label_for", "figures_for"]


# ---- Public API
def build_result(options: Mapping[str, Any], rank_outputs: Sequence[Mapping[str, Any]], method: str) -> dict[str, Any]:
    """The collectives result (contract section 3) from `options` (normalized) and each rank's run_rank output."""
    ranks, element = int(options["ranks"]), 4
    outputs = sorted(rank_outputs, key=lambda o: o["rank"])
    if len(outputs) != ranks:
        raise RuntimeError(f"{len(outputs)} of {ranks} ranks returned times: the run is incomplete")
    ops: dict[str, list[dict[str, Any]]] = {}
    skipped: dict[str, dict[str, str]] = {}
    for op in options["ops"]:
        rows = []
        for size in options["sizes_bytes"]:
            per_rank = [o["times"].get(op, {}).get(str(size)) for o in outputs]
            if any(t is None for t in per_rank):
                why = outputs[0].get("skipped", {}).get(op, {}).get(str(size)) or "not timed on every rank"
                skipped.setdefault(op, {})[format_size(size)] = why
                continue
            rows.append(_row(op, size, ranks, element, per_rank, options["rank_time"]))
        ops[op] = rows
    result = {
        "kind": "collectives", "label": label_for(options), "backend": options["backend"], "ranks": ranks,
        "placement": options["placement"], "dtype": "float32", "ops": ops,
        "busbw_factor": {op: FACTOR_TEXT[op] for op in options["ops"]},
        "figures": figures_for(ops), "passed": None, "status_reason": "", "cache_state": "n/a", "method": method,
        "sizes": options["sizes"], "iters": options["iters"], "warmup": options["warmup"],
        "trials": options["trials"], "rank_time": options["rank_time"], "skipped": skipped,
        "rank_hosts": [o.get("host") for o in outputs], "rank_devices": [o.get("device") for o in outputs],
        "checked": {op: all(o.get("checked", {}).get(op) for o in outputs) for op in options["ops"]},
        "torch": outputs[0].get("torch"),
    }
    return result


def label_for(options: Mapping[str, Any]) -> str:
    """'all-reduce, all-gather · gloo · 2 ranks' (six ops: 'all 6 ops'), plus '· ray' across a cluster."""
    names = options["ops"]
    ops_text = ", ".join(names) if len(names) <= 3 else f"{len(names)} ops"
    parts = [ops_text, options["backend"], f"{options['ranks']} ranks"]
    if options.get("placement") == "ray":
        parts.append("ray")
    return " · ".join(parts)


def figures_for(ops: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, float | None]:
    """Per op: <op>_peak_busbw_gbs (the highest busbw over sizes) and <op>_small_latency_us (the time at the
    smallest size that ran: the latency nccl-tests reads at small sizes). None where the op has no row."""
    figures: dict[str, float | None] = {}
    for op, rows in ops.items():
        key = op.replace("-", "_")
        figures[f"{key}_peak_busbw_gbs"] = max((r["busbw_gbs"] for r in rows), default=None)
        figures[f"{key}_small_latency_us"] = rows[0]["time_us"] if rows else None
    return figures


# ---- Private API
def _row(op: str, size: int, ranks: int, element: int, per_rank: Sequence[Sequence[float]],
         rank_time: str) -> dict[str, Any]:
    trials = min(len(t) for t in per_rank)
    combine = max if rank_time == "max" else statistics.fmean
    per_trial = [combine([times[i] for times in per_rank]) for i in range(trials)]
    seconds = statistics.median(per_trial)
    split = shape(op, size, ranks, element)
    algbw, busbw = bandwidths(op, split["param_count"], element, seconds, ranks)
    us = [t * 1e6 for t in per_trial]
    mean = statistics.fmean(us)
    rank_medians = [statistics.median(t) * 1e6 for t in per_rank]
    return {"size_bytes": split["size_bytes"], "requested_bytes": size, "count": split["count"],
            "time_us": seconds * 1e6,
            "time_us_spread": {"trials": trials, "min": min(us), "max": max(us),
                               "cv": statistics.stdev(us) / mean if trials > 1 and mean > 0 else None,
                               "rank_median_us": rank_medians},
            "algbw_gbs": algbw, "busbw_gbs": busbw, "trials": trials}
