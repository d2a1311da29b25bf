"""One rank of a time-to-train run: DDP training of the ttt-mlp task on this rank's shard until rank 0's evaluation
reaches the target quality, or max_steps.

What the clock covers, as MLPerf Training's rules say: the process group, the data set and the model are made
before it starts (initialisation and data generation are excluded); it starts after a barrier, just before the
first step, and stops when the evaluation that reached the target has finished (evaluation time is included).
Rank 0 evaluates every `eval_every` steps on the whole held-out set, with the same weights every rank holds (DDP
keeps them equal), then broadcasts a stop flag, so every rank leaves the loop at the same step and no rank is left
waiting in an all-reduce.

Each rank trains on its own shard of the training set (sample i belongs to rank i mod N) in an order shuffled per
epoch from (seed, rank, epoch): a different seed changes the initial weights, the training samples and their
order. Runs in a rank process (spawned by the launcher), imports torch; never in the console.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from engines.collectives.rank import rank_device

MOMENTUM = 0.9
DIE_ENV = "LABCONSOLE_TEST_DDP_DIE"  # test-only: "RANK:STEP" makes that rank exit(9) at that step

__all__ = ["rank_main", "ray_rank", "train"]


# ---- Public API
def rank_main(rank: int, plan: dict[str, Any], addr: str, port: int, conn: Any) -> None:
    """The launcher's rank entry (engines.collectives.local_ranks.run_local's `target`): train, then send
    ("result", rank, out) once, or ("error", rank, text) on failure (as text: a torch exception may not unpickle
    in the watcher). `conn` is the rank's pipe end, or any callable taking the message."""
    send = getattr(conn, "send", conn)
    _die_with_parent()
    try:
        out = train(rank, plan, addr, port, report=lambda update: send(("progress", rank, update)))
    except BaseException as exc:  # noqa: BLE001 — everything crosses back as text
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        with contextlib.suppress(OSError, ValueError):
            send(("error", rank, f"{type(exc).__name__}: {text}"))
        return
    send(("result", rank, out))


def ray_rank(rank: int, plan: dict[str, Any], addr: str, port: int, send: Callable[[tuple], None]) -> dict[str, Any]:
    """The Ray launcher's rank entry (engines.ddp.ray_launch.run_ranks' `target`): train, streaming progress
    through `send`; returns the output and raises on failure (the launcher names the rank and its host)."""
    return train(rank, plan, addr, port, report=lambda update: send(("progress", rank, update)))


def train(rank: int, plan: dict[str, Any], addr: str, port: int,
          report: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Train as `rank` of plan["ranks"]; {rank, host, device, pid, reached, time_to_train_s, ran_s, steps,
    quality_curve [[t_s, step, quality]], t_start_mono, t_end_mono, eval_s, first_loss, majority_share}."""
    world, seed = int(plan["ranks"]), int(plan["seed"])
    cores = (plan.get("rank_cores") or [None] * world)[rank]
    if cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cores)  # before torch starts its threads: they inherit this mask
    import torch
    import torch.distributed as dist
    from torch.nn import functional as F

    from engines.catalog import params_for, ttt_task

    torch.set_num_threads(max(1, int(plan.get("threads_per_rank") or 1)))
    device = rank_device(torch, plan["backend"], rank, plan)
    grouped = world > 1
    if grouped:
        host = f"[{addr}]" if ":" in addr and not addr.startswith("[") else addr
        dist.init_process_group(plan["backend"], init_method=f"tcp://{host}:{port}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=float(plan["stall_timeout_s"])))
    try:
        params = params_for(plan["task"], plan.get("task_params") or {})
        data = ttt_task.dataset(seed, int(plan["n_train"]), int(plan["n_eval"]), params)
        x_all, y_all = data["train"]
        x_train, y_train = x_all[rank::world].to(device), y_all[rank::world].to(device)
        eval_set = tuple(t.to(device) for t in data["eval"])
        model = ttt_task.build(params, seed=seed).to(device).train()
        net = model
        if grouped:
            from torch.nn.parallel import DistributedDataParallel

            net = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
        optimizer = torch.optim.SGD(net.parameters(), lr=float(plan["lr"]), momentum=MOMENTUM)
        per_rank = int(plan["global_batch"]) // world
        batches = _batches(torch, len(x_train), per_rank, seed, rank)
        sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
        flag = torch.zeros(1, device=device)
        die_at = _die_step(rank)
        target, eval_every, max_steps = float(plan["target_quality"]), int(plan["eval_every"]), int(plan["max_steps"])
        curve: list[list[float]] = []
        reached, first_loss, eval_s, step = False, None, 0.0, 0
        if grouped:
            dist.barrier()
        started, started_mono = time.perf_counter(), time.monotonic()
        while step < max_steps:
            index = next(batches)
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(net(x_train[index]), y_train[index])
            loss.backward()
            optimizer.step()
            step += 1
            if first_loss is None:
                first_loss = float(loss.detach())
            if step == die_at:
                os._exit(9)
            if step % eval_every and step != max_steps:
                continue
            if rank == 0:
                sync()
                before = time.perf_counter()
                quality = ttt_task.quality(model, eval_set)
                now = time.perf_counter()
                eval_s += now - before
                curve.append([round(now - started, 6), step, round(quality, 6)])
                flag.fill_(1.0 if quality >= target else 0.0)
                if report is not None:
                    report({"step": step, "quality": quality, "t_s": now - started, "max_steps": max_steps})
            if grouped:
                dist.broadcast(flag, src=0)
            if flag.item() >= 1.0:
                reached = True
                break
        sync()
        ended, ended_mono = time.perf_counter(), time.monotonic()
        out = {"rank": rank, "host": os.environ.get("LABCONSOLE_HOSTNAME") or socket.gethostname(),
               "device": str(device), "pid": os.getpid(), "reached": reached,
               "time_to_train_s": (ended - started) if reached else None, "ran_s": ended - started,
               "steps": step, "quality_curve": curve, "t_start_mono": started_mono, "t_end_mono": ended_mono,
               "eval_s": eval_s, "first_loss": first_loss, "majority_share": data["majority_share"],
               "per_rank_batch": per_rank, "shard_samples": len(x_train), "torch": str(torch.__version__)}
        if grouped:
            dist.barrier()
        return out
    finally:
        if grouped:
            with contextlib.suppress(Exception):
                dist.destroy_process_group()


# ---- Private API
def _batches(torch: Any, count: int, size: int, seed: int, rank: int):
    """Index tensors of `size` from a fresh permutation of the shard each epoch (a partial last batch is dropped,
    so every step has the same size on every rank)."""
    epoch = 0
    while True:
        generator = torch.Generator().manual_seed(seed * 1_000_003 + rank * 7919 + epoch)
        order = torch.randperm(count, generator=generator)
        for start in range(0, count - size + 1, size):
            yield order[start:start + size]
        epoch += 1


def _die_step(rank: int) -> int | None:
    value = os.environ.get(DIE_ENV, "")
    who, _, step = value.partition(":")
    return int(step) if who.strip() == str(rank) and step.strip().isdigit() else None


def _die_with_parent() -> None:
    """PR_SET_PDEATHSIG(SIGKILL): a rank never outlives the worker that started it (Linux; elsewhere a no-op)."""
    with contextlib.suppress(Exception):
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGKILL))
