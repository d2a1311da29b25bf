"""`run(options, progress) -> result`: one time-to-train run (kind "time-to-train"), MLPerf Training's way.

The worker checks the options and the task (a target at or below what always answering the most common class
scores means nothing), starts the ranks (engines.ttt.rank, through the data-parallel runs' rank watcher,
engines.collectives.local_ranks.run_local: a rank that dies, raises or goes silent fails the run naming it), reads
the CPU's RAPL energy counters meanwhile (engines.ttt.energy), and returns rank 0's clock: from the first step to
the evaluation that reached the target, or "not reached" at max_steps. Registered with the console's worker
launcher as kind "time-to-train"; runs in that worker, never in the console.

Result: {"kind", "label", "ranks", "backend", "placement", "reached", "time_to_train_s", "ran_s", "steps",
"samples", "quality_curve" [[t_s, step, quality]], "target_quality", "energy_j", "energy_method", "energy_window_s",
"task" {..., "seed"}, "eval_s", "first_loss", "rank_hosts", "rank_pids", "method", and the storage-kind keys
"passed", "status_reason", "cache_state", "figures"}.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from engines.ttt import NAME
from engines.ttt.errors import TimeToTrainError
from engines.ttt.options import TASK, normalize

RAY_TARGET = "engines.ttt.rank:ray_rank"

__all__ = ["run", "plan_for", "method_text", "RAY_TARGET"]


# ---- Public API
def run(options: dict[str, Any], progress: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """Train to the target as `options` ask (engines.ttt.options); the result above."""
    opts = normalize(options)
    progress = progress or (lambda update: None)
    params, majority = _check_task(opts)
    plan = plan_for(opts)
    from engines.collectives.local_ranks import run_local
    from engines.ttt.energy import RaplMeter
    from engines.ttt.rank import rank_main

    def on_message(tag: str, rank: int, payload: Any) -> None:
        if tag == "progress" and rank == 0:
            progress({"text": f"step {payload['step']}: eval accuracy {payload['quality']:.3f} at "
                              f"{payload['t_s']:.2f} s", "fraction": payload["step"] / payload["max_steps"],
                      "quality": payload["quality"]})

    progress({"text": f"starting {opts['ranks']} rank(s)", "fraction": 0.0})
    with RaplMeter() as meter:
        if opts["placement"] == "ray":
            from engines.ddp.ray_launch import run_ranks

            outputs = run_ranks(plan, progress, on_message, target=RAY_TARGET, name="ttt")
        else:
            outputs = run_local(plan, progress, target=rank_main, describe=_describe, on_message=on_message,
                                name="ttt", before_first="before its first step (starting, importing torch, "
                                                         "making the data set, joining the group)")
    return _result(opts, plan, params, majority, outputs, meter)


def plan_for(opts: dict[str, Any]) -> dict[str, Any]:
    """What every rank runs (plain data, for a spawned process): the options plus the rank core sets (the worker's
    cores split evenly, as the timed-step ranks split them) and the threads each rank takes (`threads`, else its
    share of the cores: one rank alone takes them all, which is the fair 1-rank baseline on an idle machine but
    oversubscribes a busy one — on the shared VM 1 rank with 2 threads took 2.5–40 s where 2 ranks took 3.4–3.8 s)."""
    ranks = opts["ranks"]
    cores = _worker_cores()
    rank_cores = None
    if opts["placement"] == "local" and cores and ranks > 1:
        from engines.ddp.plan import split_cores

        try:
            rank_cores = split_cores(cores, ranks)
        except RuntimeError as exc:
            raise TimeToTrainError(str(exc), f"use --ranks {len(cores)} or fewer") from None
    threads = opts.get("threads") or (len(rank_cores[0]) if rank_cores else (len(cores) if cores else 1))
    return {**opts, "task": TASK, "rank_cores": rank_cores, "threads_per_rank": max(1, threads)}


def method_text(opts: dict[str, Any], plan: dict[str, Any], energy_how: str) -> str:
    """How the figures were obtained, in one paragraph stored with the run."""
    ranks = opts["ranks"]
    if ranks == 1 and opts["placement"] == "local":
        where = "1 process (no process group)"
    elif opts["placement"] == "ray":
        where = (f"{ranks} Ray actor(s) placed by the cluster at {opts['cluster']} (a SPREAD placement group, one "
                 f"bundle a rank), torch.distributed {opts['backend']}, DistributedDataParallel")
    else:
        where = f"{ranks} local processes (spawn), torch.distributed {opts['backend']}, DistributedDataParallel"
    return (f"{TASK} (engines.catalog.ttt_task) trained on {where}, {plan['threads_per_rank']} thread(s) per rank; "
            f"global batch {opts['global_batch']} ({opts['global_batch'] // ranks} per rank, each rank its own "
            f"shard of {opts['n_train']} training samples), SGD lr {opts['lr']:g} momentum 0.9, seed {opts['seed']}; "
            f"rank 0 evaluates top-1 accuracy on {opts['n_eval']} held-out samples every {opts['eval_every']} steps "
            f"and broadcasts a stop flag. Time-to-train (MLPerf Training): from just before the first step (after "
            f"a barrier; process group, data generation and model build excluded) to the end of the evaluation "
            f"that reached {opts['target_quality']:g} (evaluation time included), on rank 0's clock; not reached "
            f"after {opts['max_steps']} steps = no time. Energy: {energy_how}")


# ---- Private API
def _check_task(opts: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """The task's parameters and the accuracy of always answering the most common class; a target at or below it
    is refused (reaching it would mean nothing was learnt)."""
    from engines.catalog import params_for, ttt_task

    try:
        params = params_for(TASK, opts["task_params"] or {})
    except KeyError as exc:
        raise TimeToTrainError(str(exc).strip("'\""), "give only the task's own parameters") from None
    if opts["backend"] == "nccl":
        import torch

        found = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if found < opts["ranks"] and opts["placement"] == "local":
            raise TimeToTrainError(f"backend nccl runs one rank per GPU: {opts['ranks']} ranks asked, {found} GPU(s) "
                                   "visible", f"use --ranks {found}" if found else "use --backend gloo")
    majority = ttt_task.dataset(opts["seed"], 1, opts["n_eval"], params)["majority_share"]
    if opts["target_quality"] <= majority:
        raise TimeToTrainError(f"target {opts['target_quality']:g} is no more than the accuracy of always answering "
                               f"the most common class ({majority:.3f}): reaching it says nothing was learnt",
                               f"give a target above {majority:.3f} (e.g. 0.9)")
    return params, majority


def _result(opts: dict[str, Any], plan: dict[str, Any], params: dict[str, Any], majority: float,
            outputs: list[dict[str, Any]], meter: Any) -> dict[str, Any]:
    lead = outputs[0]
    reached = bool(lead["reached"])
    energy_j, energy_how, window = None, "", None
    if not reached:
        energy_how = "not available: the target was not reached, so there is no energy-to-train"
    elif opts["placement"] == "ray":
        energy_how = (f"not available: the ranks ran on the Ray nodes of {', '.join(sorted({o['host'] for o in outputs}))}"
                      ", and the worker reads RAPL on its own machine only (their clocks are not its clock either)")
    else:
        energy_j, info = meter.energy_between(lead["t_start_mono"], lead["t_end_mono"])
        if energy_j is None:
            energy_how = f"not available: {info['why']}"
        else:
            window = info["window_s"]
            energy_how = (f"counter: RAPL energy_uj of {', '.join(info['zones'])}, read by the worker every "
                          f"{meter.period_s:g} s (wraparound handled), from the last read before the first step to "
                          f"the first read after the target was reached ({window:.3f} s against "
                          f"{lead['time_to_train_s']:.3f} s); the whole CPU package(s): every process on them counts")
    steps = int(lead["steps"])
    time_s = lead["time_to_train_s"] if reached else None
    curve = lead["quality_curve"]
    last_quality = curve[-1][2] if curve else None
    status = (f"reached {opts['target_quality']:g} at step {steps} in {time_s:.3f} s" if reached else
              f"not reached: eval accuracy {last_quality if last_quality is not None else 'unknown'} after "
              f"{steps} steps (--max-steps {opts['max_steps']})")
    label = opts["label"] or f"{TASK} · {opts['ranks']} rank{'s' if opts['ranks'] != 1 else ''}"
    return {
        "kind": NAME, "label": label, "ranks": opts["ranks"], "backend": opts["backend"] if opts["ranks"] > 1 else
        "none", "placement": opts["placement"], "reached": reached, "time_to_train_s": time_s,
        "ran_s": lead["ran_s"], "steps": steps, "samples": steps * opts["global_batch"], "quality_curve": curve,
        "target_quality": opts["target_quality"], "energy_j": energy_j,
        "energy_method": energy_how, "energy_window_s": window,
        "task": {"name": TASK, "params": params, "seed": opts["seed"], "n_train": opts["n_train"],
                 "n_eval": opts["n_eval"], "majority_share": majority, "global_batch": opts["global_batch"],
                 "per_rank_batch": opts["global_batch"] // opts["ranks"], "optimizer": "SGD momentum 0.9",
                 "lr": opts["lr"], "eval_every": opts["eval_every"], "max_steps": opts["max_steps"]},
        "eval_s": lead["eval_s"], "first_loss": lead["first_loss"],
        "rank_hosts": [o["host"] for o in outputs], "rank_pids": [o["pid"] for o in outputs],
        "rank_cores": plan["rank_cores"], "threads_per_rank": plan["threads_per_rank"],
        "method": method_text(opts, plan, energy_how),
        "passed": reached, "status_reason": status, "cache_state": "n/a",
        "figures": {"time_to_train_s": time_s, "steps_to_train": steps if reached else None,
                    "energy_to_train_j": energy_j},
    }


def _describe(tag: str, rank: int, payload: Any) -> str | None:
    if tag == "progress":
        return f"after step {payload['step']} (eval accuracy {payload['quality']:.3f}; the last rank 0 reported)"
    return None


def _worker_cores() -> list[int] | None:
    if hasattr(os, "sched_getaffinity"):
        try:
            return sorted(os.sched_getaffinity(0))
        except OSError:
            return None
    return None
