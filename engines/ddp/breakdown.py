"""Where a data-parallel step's time goes: one breakdown over every rank's per-step stamps (issue 23, contract §5).

Why this shape: a DDP step ends when the slowest rank's gradients are all-reduced, so the step is read from the
slowest rank's point of view, step by step. For each aligned step, k is the rank with the most compute (data wait +
forward + backward compute) and O the others. The typical rank's compute is the median over O, the straggler part
is how much longer rank k computed than that median, and the exposed communication, the gradient copy-back (DDP
copying the averaged buckets into each .grad after the last all-reduce) and the optimizer are rank k's own (the others' exposed time includes waiting for k, which the straggler part already counts; counting it again
would be the classic double count). Parts are means over steps, so they add; whatever the stamps do not cover is
reported as `unattributed_s` and never folded into a part, and `closure` says how much of the step the parts
explain. Overlap follows Holistic Trace Analysis: communication time overlapped by compute ÷ all communication time.

The straggler is named only when one rank is the slowest in at least 80% of the steps AND its median delay over the
others is beyond their own step-to-step noise (3× the MAD of the others' median compute, and at least 1% of it), so
a noisy but even set of ranks never names one. With two ranks "the others" is the other rank: the delay is the
whole gap, not half of it.

Pure Python (no torch, no numpy): it runs in the DDP driver inside the worker and in tests on plain lists.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from typing import Any

from engines.machine.repeat import median_interval

NEEDED = ("data_wait_s", "forward_s", "backward_compute_s", "comm_busy_s", "exposed_comm_s", "grad_copy_s",
          "optimizer_s", "step_s")
NAME_SHARE = 0.8  # the straggler is the slowest rank in at least this share of steps
NOISE_MADS = 3.0  # ... and its delay exceeds this many MADs of the others' step-to-step compute
NOISE_FLOOR = 0.01  # ... and at least this share of the others' median compute (a perfectly flat fixture has MAD 0)
CLOSES = 0.05  # parts explain the step within 5%
BOOT = 2000
SEED = 23

__all__ = ["NEEDED", "summarize"]


# ---- Public API
def summarize(steps_by_rank: Sequence[dict[str, Sequence[float]]], *, hosts: Sequence[str] | None,
              scaling: str, global_batch: int) -> dict[str, Any]:
    """The BREAKDOWN dict of contract §5 over all aligned measured steps of every rank.

    `steps_by_rank[r]` maps each step key (seconds) to rank r's per-step list. Ranks are aligned by step index
    from the end (each rank keeps its last steps, so the tails line up); steps beyond the shortest rank are left
    out. Raises ValueError naming the rank and key when the stamps cannot be read."""
    steps = _aligned(steps_by_rank)
    n_ranks, n_steps = len(steps), len(steps[0]["step_s"])
    host_of = _hosts(hosts, n_ranks)
    if scaling not in ("strong", "weak"):
        raise ValueError(f"scaling {scaling!r}: 'strong' or 'weak'")
    if not isinstance(global_batch, int) or isinstance(global_batch, bool) or global_batch < 1:
        raise ValueError(f"global batch {global_batch!r}: a whole number of samples ≥ 1")

    compute = [[s["data_wait_s"][i] + s["forward_s"][i] + s["backward_compute_s"][i] for i in range(n_steps)]
               for s in steps]
    global_step = [max(s["step_s"][i] for s in steps) for i in range(n_steps)]
    per_step = {key: [] for key in ("data_wait_s", "forward_s", "backward_compute_s", "straggler_s",
                                    "exposed_comm_s", "grad_copy_s", "optimizer_s")}
    slowest, busy_k, busy_median = [], [], []
    for i in range(n_steps):
        k = max(range(n_ranks), key=lambda r: (compute[r][i], -r))  # ties go to the lowest rank
        others = [r for r in range(n_ranks) if r != k] or [k]
        slowest.append(k)
        for key in ("data_wait_s", "forward_s", "backward_compute_s"):
            per_step[key].append(statistics.median(steps[r][key][i] for r in others))
        per_step["straggler_s"].append(compute[k][i] - statistics.median(compute[r][i] for r in others))
        per_step["exposed_comm_s"].append(steps[k]["exposed_comm_s"][i])
        per_step["grad_copy_s"].append(steps[k]["grad_copy_s"][i])
        per_step["optimizer_s"].append(steps[k]["optimizer_s"][i])
        busy_k.append(steps[k]["comm_busy_s"][i])
        busy_median.append(statistics.median(s["comm_busy_s"][i] for s in steps))

    parts = {key: math.fsum(values) / n_steps for key, values in per_step.items()}
    step_mean = math.fsum(global_step) / n_steps
    sum_s = math.fsum(parts.values())
    closure = sum_s / step_mean if step_mean > 0 else None
    return {
        "steps": n_steps,
        "ranks": n_ranks,
        "step_s": {"mean": step_mean, "median": statistics.median(global_step),
                   "interval_95": _bootstrap_mean(global_step)},
        "samples_per_s": global_batch / step_mean if step_mean > 0 else None,
        "scaling": scaling,
        "global_batch": global_batch,
        "parts": parts,
        "sum_s": sum_s,
        "unattributed_s": step_mean - sum_s,
        "closure": closure,
        "adds_up": closure is not None and abs(1.0 - closure) <= CLOSES,
        "comm": _comm(busy_k, busy_median, per_step["exposed_comm_s"], n_ranks),
        "straggler": _straggler(compute, slowest, host_of),
        "per_rank": [_rank_row(r, host_of[r], steps[r], compute[r]) for r in range(n_ranks)],
        "method": (f"{n_steps} measured steps aligned by index over {n_ranks} rank(s); step = the slowest rank's "
                   "step_s; per step k = the rank with the most compute (data wait + forward + backward up to the "
                   "last bucket's all-reduce launch), data wait/forward/backward = medians over the other ranks, "
                   "straggler = k's compute − the others' median compute, exposed communication, gradient copy-back "
                   "(last all-reduce done → backward's return) and optimizer = rank k's; parts are means over steps, unattributed = step mean − their sum (not folded in); "
                   "overlap = (all-reduce busy − exposed) ÷ busy on rank k (Holistic Trace Analysis); step interval "
                   f"= seeded bootstrap of the mean ({BOOT} resamples)"),
    }


# ---- Private API
def _aligned(steps_by_rank: Sequence[dict[str, Sequence[float]]]) -> list[dict[str, list[float]]]:
    if not steps_by_rank:
        raise ValueError("no ranks' steps to break down: pass one dict of step lists per rank")
    lengths = []
    for r, steps in enumerate(steps_by_rank):
        if not isinstance(steps, dict):
            raise ValueError(f"rank {r}: steps must be a dict of per-step lists, got {type(steps).__name__}")
        missing = [key for key in NEEDED if key not in steps]
        if missing:
            raise ValueError(f"rank {r}: step keys {', '.join(missing)} missing; the rank must stamp "
                             f"{', '.join(NEEDED)}")
        sizes = {len(steps[key]) for key in NEEDED}
        if len(sizes) != 1:
            raise ValueError(f"rank {r}: step lists of different lengths {sorted(sizes)}; every key needs one "
                             "value per step")
        lengths.append(sizes.pop())
    n = min(lengths)
    if n == 0:
        raise ValueError(f"rank {lengths.index(0)} has no measured steps: nothing to break down")
    aligned = []
    for r, steps in enumerate(steps_by_rank):
        rank_steps = {}
        for key in NEEDED:
            values = [float(v) for v in list(steps[key])[-n:]]
            bad = next((v for v in values if not math.isfinite(v) or v < 0), None)
            if bad is not None:
                raise ValueError(f"rank {r}: {key} holds {bad!r}; stamps are finite seconds ≥ 0")
            rank_steps[key] = values
        aligned.append(rank_steps)
    return aligned


def _hosts(hosts: Sequence[str] | None, n_ranks: int) -> list[str | None]:
    if hosts is None:
        return [None] * n_ranks
    if len(hosts) != n_ranks:
        raise ValueError(f"{len(hosts)} host name(s) for {n_ranks} rank(s): give one host per rank, in rank order")
    return list(hosts)


def _bootstrap_mean(values: list[float]) -> list[float]:
    if len(values) < 2:
        return [values[0], values[0]]
    rng = random.Random(SEED)
    n = len(values)
    means = sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(BOOT))
    return [means[int(0.025 * (BOOT - 1))], means[int(math.ceil(0.975 * (BOOT - 1)))]]


def _comm(busy_k: list[float], busy_median: list[float], exposed_k: list[float], n_ranks: int) -> dict[str, Any]:
    n = len(busy_k)
    total_busy_k = math.fsum(busy_k)
    overlap = None
    if n_ranks > 1 and total_busy_k > 0:
        overlap = 100.0 * (total_busy_k - math.fsum(exposed_k)) / total_busy_k
    return {"allreduce_s": total_busy_k / n if n_ranks > 1 else None,
            "allreduce_median_rank_s": math.fsum(busy_median) / n if n_ranks > 1 else None,
            "exposed_s": math.fsum(exposed_k) / n,
            "overlap_pct": overlap,
            "method": "allreduce_s = mean over steps of the slowest rank's all-reduce busy time (union of bucket "
                      "intervals): it arrives last, so its all-reduce is the transfer itself, while the others' "
                      "includes waiting for it (allreduce_median_rank_s keeps the median rank's, waits included); "
                      "overlap_pct = 100·(busy − exposed) ÷ busy on that rank, None without communication"}


def _straggler(compute: list[list[float]], slowest: list[int], hosts: list[str | None]) -> dict[str, Any]:
    n_ranks, n_steps = len(compute), len(slowest)
    if n_ranks == 1:
        return {"rank": None, "host": None, "delay_s": None, "interval_95": None, "slowest_share": None,
                "named": False, "threshold_s": None, "why": "one rank: no other rank to be slower than"}
    counts = [slowest.count(r) for r in range(n_ranks)]
    rank = max(range(n_ranks), key=lambda r: (counts[r], -r))
    share = counts[rank] / n_steps
    others = [r for r in range(n_ranks) if r != rank]
    others_median = [statistics.median(compute[r][i] for r in others) for i in range(n_steps)]
    delays = [compute[rank][i] - others_median[i] for i in range(n_steps)]
    delay = statistics.median(delays)
    centre = statistics.median(others_median)
    mad = statistics.median(abs(v - centre) for v in others_median)
    threshold = max(NOISE_MADS * mad, NOISE_FLOOR * centre)
    low, high, _ = median_interval(delays)
    named = share >= NAME_SHARE and delay > threshold
    if named:
        why = (f"rank {rank} was the slowest in {share:.0%} of {n_steps} steps, {delay * 1e3:.2f} ms behind the "
               f"others' median, beyond their noise ({threshold * 1e3:.2f} ms)")
    elif share < NAME_SHARE:
        why = (f"no rank is consistently the slowest: rank {rank} in only {share:.0%} of steps "
               f"(a straggler is the slowest in ≥ {NAME_SHARE:.0%})")
    else:
        why = (f"rank {rank} is the slowest in {share:.0%} of steps but only {delay * 1e3:.3f} ms behind, within "
               f"the others' noise ({threshold * 1e3:.3f} ms)")
    return {"rank": rank, "host": hosts[rank], "delay_s": delay, "interval_95": [low, high],
            "slowest_share": share, "named": named, "threshold_s": threshold, "why": why}


def _rank_row(rank: int, host: str | None, steps: dict[str, list[float]], compute: list[float]) -> dict[str, Any]:
    n = len(compute)
    return {"rank": rank, "host": host, "compute_s": math.fsum(compute) / n,
            "data_wait_s": math.fsum(steps["data_wait_s"]) / n,
            "exposed_comm_s": math.fsum(steps["exposed_comm_s"]) / n,
            "optimizer_s": math.fsum(steps["optimizer_s"]) / n,
            "step_s": math.fsum(steps["step_s"]) / n}
