"""One rank of a collectives run: join the group, then for each op and size warm up and time it as nccl-tests does.

Runs in a rank process (local: a spawn-context child of the bench worker; Ray: an actor on the node its placement
group bundle gave it). Imports torch, so it never enters the console. Timing follows nccl-tests' BenchTime:
a barrier, the timer, `iters` operations back to back, a device synchronize (CUDA), the timer; the time of one
operation is that wall time / iters. Each trial is timed this way; the rank returns every trial's time and the
bench combines ranks (max or average, nccl-tests -a 3 / -a 1) and trials (median).

Buffers are zero-filled for timing (a sum of zeros stays zero: no overflow to inf, no denormals changing the
speed). Before timing each op the rank checks one small result against what the op must give, as nccl-tests'
-c does, so a broken transport does not produce a bandwidth.
"""

from __future__ import annotations

import datetime
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from engines.collectives.formulas import shape

__all__ = ["run_rank", "bench_time", "free_port", "node_address", "rank_device"]


# ---- Public API
def run_rank(rank: int, plan: dict[str, Any], master_addr: str, master_port: int,
             report: Callable[[dict[str, Any]], None] | None = None,
             on_done: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Join the group as `rank`, time every (op, size) of `plan`, leave the group; returns
    {rank, host, device, times: {op: {str(size): [seconds per op, per trial]}}, skipped: {op: {size: why}},
    checked: {op: bool}}. `report(update)` is called after each size (rank 0's updates become the progress);
    `on_done(output)` once every rank has finished timing, before leaving the group (tearing a gloo group down
    takes seconds, and the times are final by then)."""
    import torch
    import torch.distributed as dist

    ranks, backend = int(plan["ranks"]), plan["backend"]
    device = rank_device(torch, backend, rank, plan)
    torch.set_num_threads(max(1, int(plan.get("threads_per_rank") or 1)))
    dist.init_process_group(backend, init_method=f"tcp://{_host_for_url(master_addr)}:{master_port}", rank=rank,
                            world_size=ranks, timeout=datetime.timedelta(seconds=float(plan["stall_timeout_s"])))
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    host = os.environ.get("LABCONSOLE_HOSTNAME") or socket.gethostname()  # a lab node's own name, as the history
    out: dict[str, Any] = {"rank": rank, "host": host, "device": str(device), "torch": str(torch.__version__),
                           "times": {}, "skipped": {}, "checked": {}}
    # plain str: a TorchVersion would import torch wherever the output is unpickled (seconds, and in the watcher)
    try:
        total = len(plan["ops"]) * len(plan["sizes_bytes"])
        step = 0
        for op in plan["ops"]:
            out["checked"][op] = _check(torch, dist, op, rank, ranks, device, sync)
            out["times"][op], out["skipped"][op] = {}, {}
            for size in plan["sizes_bytes"]:
                step += 1
                split = shape(op, size, ranks, plan.get("element_size", 4))
                if split["param_count"] == 0:
                    out["skipped"][op][str(size)] = (f"{size} B split over {ranks} ranks in 16-byte pieces is "
                                                     "empty (nccl-tests runs it as 0 B)")
                    continue
                trials = bench_time(_call(torch, dist, op, split, device), dist.barrier, sync, plan)
                out["times"][op][str(size)] = trials
                if report is not None:
                    report({"op": op, "size_bytes": split["size_bytes"], "step": step, "steps": total,
                            "time_us": sorted(trials)[len(trials) // 2] * 1e6})
        dist.barrier()
        if on_done is not None:
            on_done(out)
    finally:
        dist.destroy_process_group()
    return out


def bench_time(call: Callable[[], Any], barrier: Callable[[], Any], sync: Callable[[], Any],
               counts: dict[str, Any]) -> list[float]:
    """Seconds per `call` in each of `counts["trials"]` trials, as nccl-tests' BenchTime: `counts["warmup"]` calls
    and a sync first; then per trial a barrier, the timer, `counts["iters"]` calls back to back, a sync, the timer."""
    for _ in range(int(counts["warmup"])):
        call()
    sync()
    iters = int(counts["iters"])
    trials = []
    for _ in range(int(counts["trials"])):
        barrier()
        started = time.perf_counter()
        for _ in range(iters):
            call()
        sync()
        trials.append((time.perf_counter() - started) / iters)
    return trials


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now (the OS picks it), for the group's rendezvous on this node."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def node_address() -> str:
    """This node's address as Ray knows it (the rendezvous address when this is rank 0's node)."""
    import ray

    return ray.util.get_node_ip_address()


def rank_device(torch: Any, backend: str, rank: int, plan: dict[str, Any]) -> Any:
    """The device a rank works on: the CPU for gloo; for nccl its GPU (rank modulo the local GPUs when the ranks
    are local processes, GPU 0 of its node when Ray placed it), made current. The time-to-train ranks use it too."""
    if backend != "nccl":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise RuntimeError("backend nccl needs CUDA, and torch sees no CUDA device on this rank's machine")
    index = rank % torch.cuda.device_count() if plan.get("placement") == "local" else 0
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


# ---- Private API
def _host_for_url(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _call(torch: Any, dist: Any, op: str, split: dict[str, int], device: Any) -> Callable[[], Any]:
    """The operation as a closure over its buffers (allocated once per size, outside the timing)."""
    send = torch.zeros(split["send_count"], dtype=torch.float32, device=device)
    if op == "all-reduce":
        return lambda: dist.all_reduce(send)
    if op == "broadcast":
        return lambda: dist.broadcast(send, src=0)
    if op == "reduce":
        return lambda: dist.reduce(send, dst=0)
    recv = torch.zeros(split["recv_count"], dtype=torch.float32, device=device)
    if op == "all-gather":
        gather = _gather(dist)
        return lambda: gather(recv, send)
    if op == "reduce-scatter":
        scatter = _scatter(dist)
        return lambda: scatter(recv, send)
    if op == "all-to-all":
        return lambda: dist.all_to_all_single(recv, send)
    raise ValueError(f"unknown collective {op!r}")


def _gather(dist: Any) -> Callable[..., Any]:
    """all_gather_single where torch has it (2.13 deprecates all_gather_into_tensor), the older name otherwise."""
    return getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


def _scatter(dist: Any) -> Callable[..., Any]:
    return getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


def _check(torch: Any, dist: Any, op: str, rank: int, ranks: int, device: Any, sync: Callable[[], None]) -> bool:
    """One small operation whose result is known (rank r sends r+1): True when every rank got it right,
    RuntimeError naming the op otherwise."""
    per = 4
    value = float(rank + 1)
    total = ranks * (ranks + 1) / 2
    if op in ("all-reduce", "broadcast", "reduce"):
        buf = torch.full((per,), value, device=device)
        getattr(dist, {"all-reduce": "all_reduce", "broadcast": "broadcast", "reduce": "reduce"}[op])(
            buf, **({"src": 0} if op == "broadcast" else {"dst": 0} if op == "reduce" else {}))
        expected = torch.full((per,), {"all-reduce": total, "broadcast": 1.0, "reduce": total}[op], device=device)
        if op == "reduce" and rank != 0:  # only the root's buffer is defined after a reduce (gloo uses the others)
            buf = expected
    elif op == "all-gather":
        buf = torch.empty(per * ranks, device=device)
        _gather(dist)(buf, torch.full((per,), value, device=device))
        expected = torch.arange(1, ranks + 1, dtype=torch.float32, device=device).repeat_interleave(per)
    elif op == "reduce-scatter":
        buf = torch.empty(per, device=device)
        _scatter(dist)(buf, torch.full((per * ranks,), value, device=device))
        expected = torch.full((per,), total, device=device)
    else:  # all-to-all: rank r receives chunk r of every rank, i.e. every sender's value
        buf = torch.empty(per * ranks, device=device)
        dist.all_to_all_single(buf, torch.full((per * ranks,), value, device=device))
        expected = torch.arange(1, ranks + 1, dtype=torch.float32, device=device).repeat_interleave(per)
    sync()
    ok = torch.tensor([1.0 if torch.equal(buf, expected) else 0.0], device=device)
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    if ok.item() != 1.0:
        raise RuntimeError(f"{op} gave wrong results on at least one rank (checked before timing): the transport "
                           "or backend is broken; no bandwidth is reported for it")
    return True


