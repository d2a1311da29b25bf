"""What-if for ranks: project a data-parallel run's step onto another rank count (and another card) from its parts.

Why from the parts: a step at N' ranks is not the step at N times N/N'. Each part of the measured breakdown
(engines.ddp.breakdown) moves its own way:
- compute (forward, backward) and data wait follow the per-rank batch: under strong scaling the global batch is
  split over N' ranks, so they scale by N/N'; under weak scaling each rank keeps its batch and they stay. A
  second card (`compute_ratio`, the ratio of the roofs from console.analysis.whatif) scales the compute too;
- the optimizer (the whole model's parameters on every rank) and the straggler's delay stay as measured;
- the all-reduce follows its formula, t = Σ_b 2(n−1)/n · B_b / busbw(B_b): with busbw rows measured at N' (a
  collectives run at those ranks) when there are some, else with the busbw this run's own all-reduce reached;
- only the part of it backward cannot hide is exposed: exposed(N') = max(0, comm(N') − hidden), hidden = the
  all-reduce time the run overlapped (busy − exposed). Under strong scaling backward itself shrinks by N/N', and
  the overlap window with it, so hidden is scaled by that factor when it is below 1 (it cannot hide more
  communication than there is backward to hide it behind);
- unattributed time is kept, and said.
A projection, never a measurement: `method` and `notes` say what was assumed. Pure, Qt-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from engines.collectives.formulas import busbw_factor
from engines.ddp.predict import allreduce

__all__ = ["project_ranks"]


# ---- Public API
def project_ranks(ddp: dict[str, Any], to_ranks: int, *, busbw_rows: Sequence[dict[str, Any]] | None = None,
                  compute_ratio: float = 1.0, rows_source: str = "a collectives run") -> dict[str, Any]:
    """{ranks_from, ranks_to, step_s, samples_per_s, parts {name: {from_s, to_s, how}}, method, notes}.

    `ddp` is the run's DDP block (summary.scenario.ddp, with its breakdown); `busbw_rows` are all-reduce rows
    measured at `to_ranks` (source named by `rows_source`); `compute_ratio` is target time ÷ source time for
    compute (1.0: the same card). Raises ValueError naming what is missing and how to get it."""
    bd, n_from = _checked(ddp)
    if isinstance(to_ranks, bool) or not isinstance(to_ranks, int) or to_ranks < 1:
        raise ValueError(f"--ranks {to_ranks!r}: a whole number of ranks ≥ 1")
    if not (isinstance(compute_ratio, (int, float)) and math.isfinite(compute_ratio) and compute_ratio > 0):
        raise ValueError(f"compute ratio {compute_ratio!r}: a positive number (target time ÷ source time)")
    scaling = str(ddp.get("scaling") or "strong")
    global_batch = int(ddp.get("global_batch") or 0)
    per_rank = int(ddp.get("per_rank_batch") or 0)
    accum = int(ddp.get("grad_accum") or 1)
    notes: list[str] = []
    if scaling == "strong":
        if global_batch % (to_ranks * accum):
            raise ValueError(f"--batch {global_batch} does not split over {to_ranks} ranks × {accum} micro-batch(es): "
                             f"project onto a rank count that divides {global_batch // accum}, or measure with "
                             "--scaling weak")
        batch_scale = n_from / to_ranks
        to_global = global_batch
    elif scaling == "weak":
        batch_scale = 1.0
        to_global = per_rank * to_ranks if per_rank else global_batch // n_from * to_ranks
    else:
        raise ValueError(f"the DDP block's scaling {scaling!r} is neither 'strong' nor 'weak'")
    parts = bd["parts"]
    compute_scale = batch_scale * compute_ratio
    out: dict[str, dict[str, Any]] = {}

    def put(name: str, from_s: float, to_s: float, how: str) -> None:
        out[name] = {"from_s": from_s, "to_s": to_s, "how": how}

    batch_how = (f"× {batch_scale:.3g} (per-rank batch {global_batch // n_from} → {global_batch // to_ranks})"
                 if scaling == "strong" else "kept (weak scaling: each rank keeps its batch)")
    ratio_how = f", × {compute_ratio:.3g} for the other card" if compute_ratio != 1.0 else ""
    put("data_wait_s", parts["data_wait_s"], parts["data_wait_s"] * batch_scale,
        f"{batch_how}; the data path is not scaled by a card's roofs")
    for key in ("forward_s", "backward_compute_s"):
        put(key, parts[key], parts[key] * compute_scale, batch_how + ratio_how)
    put("optimizer_s", parts["optimizer_s"], parts["optimizer_s"], "kept: every rank steps the whole model")
    copy = _num(parts.get("grad_copy_s")) or 0.0  # absent from breakdowns stamped before it: inside unattributed
    if n_from == 1 and to_ranks > 1:
        notes.append("a 1-rank run has no DDP, so the gradient copy-back DDP adds after the all-reduce (about one "
                     "copy of the gradients in memory) is not in this projection: project from a run of 2 or more "
                     "ranks to include it")
    put("grad_copy_s", copy, copy if to_ranks > 1 else 0.0,
        "kept: every rank copies the whole model's averaged gradients" if to_ranks > 1 else "one rank: no DDP")
    straggle = parts["straggler_s"] if to_ranks > 1 else 0.0
    put("straggler_s", parts["straggler_s"], straggle,
        "kept as measured (the same machines)" if to_ranks > 1 else "one rank: no straggler")
    comm_n, comm_how = _comm_at(ddp, bd, n_from, to_ranks, busbw_rows, rows_source, notes)
    busy = _num((bd.get("comm") or {}).get("allreduce_s")) or 0.0
    exposed = parts["exposed_comm_s"]
    hidden = max(0.0, busy - exposed) * min(1.0, compute_scale)
    exposed_to = max(0.0, comm_n - hidden) if to_ranks > 1 else 0.0
    put("exposed_comm_s", exposed, exposed_to,
        f"max(0, all-reduce at {to_ranks} ranks {comm_n * 1e3:.3g} ms ({comm_how}) − hidden {hidden * 1e3:.3g} ms)"
        if to_ranks > 1 else "one rank: no all-reduce")
    unattributed = _num(bd.get("unattributed_s")) or 0.0
    put("unattributed_s", unattributed, unattributed, "kept as measured")
    if unattributed and abs(unattributed) > 0.05 * bd["step_s"]["mean"]:
        notes.append(f"{abs(unattributed) * 1e3:.3g} ms of the measured step was not attributed to a part; it is "
                     "carried over unchanged")
    step = math.fsum(p["to_s"] for p in out.values())
    method = ("a projection, not a measurement: from the measured breakdown at "
              f"{n_from} rank(s), {scaling} scaling; compute and data wait {batch_how}"
              f"{ratio_how}; optimizer, straggler and gradient copy-back kept; all-reduce by t = Σ 2(n−1)/n · B / busbw(B) "
              f"({comm_how}); exposed = all-reduce − the overlap the run achieved"
              + (", shrunk with backward" if compute_scale < 1 else "") + "; unattributed kept")
    return {"ranks_from": n_from, "ranks_to": to_ranks, "scaling": scaling, "global_batch": to_global,
            "step_s": step, "samples_per_s": to_global / step if step > 0 else None,
            "measured_step_s": bd["step_s"]["mean"], "compute_ratio": compute_ratio, "parts": out,
            "method": method, "notes": notes}


# ---- Private API
def _checked(ddp: dict[str, Any]) -> tuple[dict[str, Any], int]:
    if not isinstance(ddp, dict) or not isinstance(ddp.get("breakdown"), dict):
        raise ValueError("the run has no DDP breakdown (summary.scenario.ddp): project a run measured with --ranks N")
    bd = ddp["breakdown"]
    parts = bd.get("parts") or {}
    needed = ("data_wait_s", "forward_s", "backward_compute_s", "straggler_s", "exposed_comm_s", "optimizer_s")
    missing = [k for k in needed if _num(parts.get(k)) is None]
    if missing or not _num((bd.get("step_s") or {}).get("mean")):
        raise ValueError(f"the run's DDP breakdown lacks {', '.join(missing) or 'its step mean'}: measure it again "
                         "with this version")
    ranks = ddp.get("ranks")
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise ValueError(f"the DDP block's ranks {ranks!r} is not a rank count")
    return bd, ranks


def _comm_at(ddp: dict[str, Any], bd: dict[str, Any], n_from: int, to_ranks: int,
             rows: Sequence[dict[str, Any]] | None, source: str, notes: list[str]) -> tuple[float, str]:
    """The all-reduce time per step at `to_ranks` and how it was obtained."""
    if to_ranks == 1:
        return 0.0, "one rank"
    buckets = ddp.get("bucket_bytes") or []
    if rows:
        if not buckets:
            raise ValueError("the DDP block records no gradient buckets (bucket_bytes): measure it again with this "
                             "version")
        predicted = allreduce(buckets, to_ranks, rows, source=source)
        notes.extend(predicted["notes"])
        if predicted["predicted_s"] is not None:
            return predicted["predicted_s"], f"busbw of {source} at {to_ranks} ranks"
    measured = _num((bd.get("comm") or {}).get("allreduce_s"))
    if n_from < 2 or not measured:
        raise ValueError(f"a {n_from}-rank run measured no all-reduce, and no busbw rows at {to_ranks} ranks were "
                         f"found: run `labconsole collectives --ranks {to_ranks}` with the same backend first")
    grad = sum(int(b) for b in buckets) or _num(ddp.get("grad_bytes"))
    if grad:
        busbw = busbw_factor("all-reduce", n_from) * grad / measured / 1e9
        notes.append(f"no collectives run at {to_ranks} ranks: the busbw this run's all-reduce reached "
                     f"({busbw:.3g} GB/s at {n_from} ranks) is assumed to hold at {to_ranks}")
        how = f"the busbw this run reached, {busbw:.3g} GB/s at {n_from} ranks"
    else:
        notes.append(f"no gradient size recorded: the measured all-reduce is scaled by 2(n−1)/n from {n_from} to "
                     f"{to_ranks} ranks")
        how = f"the measured all-reduce × the 2(n−1)/n ratio from {n_from} ranks"
    scale = busbw_factor("all-reduce", to_ranks) / busbw_factor("all-reduce", n_from)
    return measured * scale, how


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)
