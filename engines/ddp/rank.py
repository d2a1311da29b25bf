"""One rank of a data-parallel training run: join the group, train under DDP, time every part of every step.

Runs in a rank process (a spawn-context child of the worker, or a Ray actor). Each step is timed where it
happens (contract section 3): data wait, forward (the injected straggler sleep inside it), backward, the part of
backward before the last gradient bucket was handed to the all-reduce (compute), every bucket's all-reduce from
launch to done (a comm hook around DDP's default allreduce_hook, stamped with perf_counter at launch and in
fut.then), the gradient copy-back (from the last all-reduce's completion to backward's return: DDP copying the
averaged buckets into each parameter's .grad), and the optimizer (zero_grad included) up to a device synchronize.
Exposed communication is the part of the buckets' busy time after compute ended, while backward waited for it
(HTA's "not overlapped by compute").

Step counts are agreed before timing: PROBE_STEPS steps on every rank, then rank 0 turns --warmup/--duration (or
--iterations) into step counts from its probe and broadcasts them, so every rank runs the same steps and no rank
waits in a collective the others never enter. After measuring, an all-reduce probe at each distinct bucket size
(a barrier, warm-up, trials of back-to-back operations as nccl-tests times them) gives the bandwidth the
prediction uses. Messages go through `send`: ("ready", rank, facts), ("phase", 0, {...}), ("progress", rank,
{...}), ("steps", rank, batch) about every 100 ms, ("result", rank, out) once; the launcher sends ("error", rank,
text) when this raises.

Test-only: LABCONSOLE_TEST_DDP_DIE="RANK:STEP" makes that rank os._exit(9) at that measured step (1-based), to
test that a dead rank fails the run with its number and step.
"""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import socket
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from engines.collectives.rank import bench_time
from engines.ddp.plan import STEP_KEYS
from engines.protocol import plain

FLUSH_S = 0.1
KEEP_STEPS = 256  # the last steps of each key kept in the result (all of them are streamed)
DIE_VARIABLE = "LABCONSOLE_TEST_DDP_DIE"
PR_SET_PDEATHSIG = 1

__all__ = ["rank_main", "interval_union", "overlap"]


# ---- Public API
def rank_main(rank: int, plan: dict[str, Any], addr: str, port: int, send: Callable[[tuple], None]) -> dict[str, Any]:
    """Run rank `rank` of `plan` to the end; returns (and sends) its output. Raises on failure."""
    started = time.perf_counter()
    _die_with_parent()
    cores = (plan.get("rank_cores") or [None] * (rank + 1))[rank]
    if cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cores)  # before torch starts its threads: they inherit this mask
    import torch
    import torch.distributed as dist

    from engines.backends.torch_backend import prepare_training, resolve_device
    from engines.ddp.data import source_for
    from engines.spec import RunSpec

    if plan.get("threads_per_rank"):
        torch.set_num_threads(int(plan["threads_per_rank"]))
    world = int(plan["ranks"])
    device = resolve_device(torch, plan["rank_devices"][rank] if plan["placement"] == "local" else
                            _ray_device(torch, plan))
    if device.type == "cuda":
        torch.cuda.set_device(device)
    grouped = world > 1
    if grouped:
        dist.init_process_group(plan["backend"], init_method=f"tcp://{_url_host(addr)}:{port}", rank=rank,
                                world_size=world, timeout=datetime.timedelta(seconds=float(plan["stall_timeout_s"])))
    try:
        spec = RunSpec.from_dict({**plan["spec"], "batch": int(plan["micro_batch"])})
        training = prepare_training(spec, device)
        model = training.module
        stamps: list[tuple[int, int, float, float]] = []  # (bucket index, bytes, launched, done) of this backward
        if grouped:
            from torch.nn.parallel import DistributedDataParallel

            model = DistributedDataParallel(model, bucket_cap_mb=float(plan["bucket_mb"]),
                                            device_ids=[device.index] if device.type == "cuda" else None)
            model.register_comm_hook(None, _stamped_allreduce(stamps))
        source = source_for(spec, rank, world, training)
        grad_bytes = sum(p.numel() * p.element_size() for p in training.module.parameters() if p.requires_grad)
        host = os.environ.get("LABCONSOLE_HOSTNAME") or socket.gethostname()
        send(("ready", rank, {"host": host, "device": str(device), "pid": os.getpid(), "cores": list(cores or []),
                              "threads": torch.get_num_threads(), "load_s": time.perf_counter() - started,
                              "params": sum(p.numel() for p in training.module.parameters()),
                              "model_bytes": sum(t.numel() * t.element_size() for t in
                                                 training.module.state_dict().values()),
                              "grad_bytes": grad_bytes, "details": plain({
                                  **training.details, "precision": spec.precision, "mode": "training",
                                  "inputs": [{"name": name, "shape": list(t.shape), "dtype": str(t.dtype)[6:]}
                                             for name, t in zip(training.prepared.input_names, training.inputs,
                                                                strict=True)]}),
                              "data_method": source.method, "torch": str(torch.__version__)}))
        loop = _Loop(torch, plan, rank, model, training, source, stamps, device, send, grouped)
        try:
            out = loop.run(dist if grouped else None)
        finally:
            source.close()
        out.update({"rank": rank, "host": host, "device": str(device), "pid": os.getpid(),
                    "cores": list(cores or []), "grad_bytes": grad_bytes})
        out["probe_times"] = _probe(torch, dist, sorted(set(out["bucket_bytes"])), plan, device) if grouped else {}
        send(("result", rank, out))
        return out
    finally:
        if grouped:
            with contextlib.suppress(Exception):
                dist.destroy_process_group()


def interval_union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Overlapping (start, end) intervals merged, sorted."""
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def overlap(union: list[tuple[float, float]], start: float, end: float) -> float:
    """Length of `union` (merged intervals) inside [start, end]."""
    return sum(max(0.0, min(b, end) - max(a, start)) for a, b in union)


# ---- Private API
class _Loop:
    """The timed step loop of one rank: probe steps, the agreed warm-up and measured steps, streamed."""

    def __init__(self, torch: Any, plan: dict[str, Any], rank: int, model: Any, training: Any, source: Any,
                 stamps: list, device: Any, send: Callable[[tuple], None], grouped: bool):
        self.torch, self.plan, self.rank, self.model, self.training = torch, plan, rank, model, training
        self.source, self.stamps, self.send, self.grouped = source, stamps, send, grouped
        self.sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
        inject = plan.get("inject")
        self.sleep_s = inject["ms"] / 1e3 if inject and inject["rank"] == rank else 0.0
        self.micro = int(plan["micro_batches"])
        self.die_at = _die_step(rank)
        self.device = device
        self.bucket_bytes: list[int] = []

    def run(self, dist: Any) -> dict[str, Any]:
        probe = [self.step()["step_s"] for _ in range(int(self.plan["probe_steps"]))]
        counts = self._agree(dist, probe)
        warmup, measured = counts
        if self.rank == 0:
            self.send(("phase", 0, {"phase": "warmup", "warmup_steps": warmup, "measured_steps": measured,
                                    "first_step_ms": probe[0] * 1e3}))
        last = time.perf_counter()
        for index in range(warmup):
            self.step()
            if time.perf_counter() - last >= FLUSH_S:
                last = time.perf_counter()
                self.send(("progress", self.rank, {"stage": "warm-up", "step": index + 1, "of": warmup}))
        if self.rank == 0:
            self.send(("phase", 0, {"phase": "measuring", "t_ns": time.perf_counter_ns()}))
        kept: dict[str, list[float]] = {key: [] for key in STEP_KEYS}
        batch = _empty_batch(0)
        begin = time.perf_counter()
        last = begin
        for index in range(measured):
            if self.die_at == index + 1:
                self._flush(batch)
                os._exit(9)
            t0_ns = time.perf_counter_ns()
            record = self.step()
            batch["t0_ns"].append(t0_ns)
            for key in STEP_KEYS:
                batch[key].append(record[key])
                kept[key].append(record[key])
                if len(kept[key]) > 2 * KEEP_STEPS:
                    del kept[key][:-KEEP_STEPS]
            if time.perf_counter() - last >= FLUSH_S or index == measured - 1:
                last = time.perf_counter()
                self._flush(batch)
                batch = _empty_batch(index + 1)
        measured_s = time.perf_counter() - begin
        profiled = int(self.plan.get("profile_iterations") or 0)
        profile = self._profile(profiled) if profiled else None
        return {"steps_total": int(self.plan["probe_steps"]) + warmup + measured + (profiled + 1 if profiled else 0),
                "profile": profile, "warmup_steps": warmup,
                "measured_steps": measured, "probe_step_s": probe, "measured_s": measured_s,
                "first_step_ms": probe[0] * 1e3, "bucket_bytes": list(self.bucket_bytes),
                "steps": {key: values[-KEEP_STEPS:] for key, values in kept.items()}}

    def step(self) -> dict[str, float]:
        """One optimizer step over `micro` micro-batches, each part timed (contract section 3)."""
        clock, training = time.perf_counter, self.training
        record = dict.fromkeys(STEP_KEYS, 0.0)
        t0 = clock()
        training.optimizer.zero_grad(set_to_none=True)
        zeroed = clock() - t0
        union: list[tuple[float, float]] = []
        for micro in range(self.micro):
            last = micro == self.micro - 1
            quiet = self.model.no_sync() if self.grouped and not last else contextlib.nullcontext()
            with quiet:
                inputs, wait_s = self.source.next()
                record["data_wait_s"] += wait_s
                began = clock()
                if self.sleep_s and micro == 0:  # once per optimizer step, before its first forward
                    time.sleep(self.sleep_s)
                    record["injected_s"] += clock() - began
                with training.autocast():
                    loss = training.loss_fn(self.model(*inputs))
                if self.micro > 1:
                    loss = loss / self.micro  # accumulated gradients average over the step's micro-batches
                self.sync()
                forward_end = clock()
                record["forward_s"] += forward_end - began
                self.stamps.clear()
                (training.scaler.scale(loss) if training.scaler is not None else loss).backward()
                self.sync()
                backward_end = clock()
            record["backward_s"] += backward_end - forward_end
            if last and self.stamps:
                compute_end = max(s[2] for s in self.stamps)  # the last bucket handed to the all-reduce
                record["backward_compute_s"] += compute_end - forward_end
                union = interval_union([(s[2], s[3]) for s in self.stamps])
                record["comm_s"] = sum(s[3] - s[2] for s in self.stamps)
                record["comm_busy_s"] = sum(b - a for a, b in union)
                record["exposed_comm_s"] = overlap(union, compute_end, backward_end)
                # after the last all-reduce: DDP copies the averaged buckets into each parameter's .grad
                record["grad_copy_s"] = max(0.0, backward_end - max(s[3] for s in self.stamps))
                self.bucket_bytes = [s[1] for s in sorted(self.stamps, key=lambda s: s[2])]
            else:
                record["backward_compute_s"] += backward_end - forward_end
        optimizer_start = clock()
        if training.scaler is not None:
            training.scaler.step(training.optimizer)
            training.scaler.update()
        else:
            training.optimizer.step()
        self.sync()
        end = clock()
        record["optimizer_s"] = zeroed + (end - optimizer_start)
        record["step_s"] = end - t0
        return record

    def _profile(self, iterations: int) -> dict[str, Any] | None:
        """After measuring (analyze's --profile-iterations): rank 0 runs one warm-up and `iterations` steps under
        the PyTorch profiler (engines.backends.torch_profiler: op table and Chrome trace); every other rank runs as
        many steps unprofiled, so every collective is met. Rank 0 returns the profile event's fields."""
        if self.rank != 0:
            for _ in range(iterations + 1):
                self.step()
            return None
        from engines.backends.torch_profiler import profiler

        self.send(("phase", 0, {"phase": "profiling", "t_ns": time.perf_counter_ns()}))
        event = profiler(self.torch, self.device, self.step)(iterations, self.plan.get("trace_path"))
        event["notes"] = [*event.get("notes", []), f"rank 0 of {self.plan['ranks']} profiled (its all-reduce waits "
                          "for the other ranks, which run the same steps unprofiled)"]
        return event

    def _agree(self, dist: Any, probe: list[float]) -> tuple[int, int]:
        """[warm-up steps, measured steps] from rank 0's probe, the same on every rank."""
        plan = self.plan
        step_s = max(statistics.median(probe), 1e-6)
        warmup = math.ceil(float(plan["warmup_s"]) / step_s) if plan["warmup_s"] > 0 else 0
        measured = int(plan["iterations"]) if plan.get("iterations") else max(1, math.ceil(plan["duration_s"] / step_s))
        if dist is None:
            return warmup, measured
        counts = self.torch.tensor([warmup, measured], dtype=self.torch.int64,
                                   device="cuda" if plan["backend"] == "nccl" else "cpu")
        dist.broadcast(counts, src=0)
        return int(counts[0].item()), int(counts[1].item())

    def _flush(self, batch: dict[str, Any]) -> None:
        if batch["t0_ns"]:
            self.send(("steps", self.rank, batch))


def _empty_batch(first: int) -> dict[str, Any]:
    return {"first": first, "t0_ns": [], **{key: [] for key in STEP_KEYS}}


def _stamped_allreduce(stamps: list) -> Callable[[Any, Any], Any]:
    """DDP's default all-reduce hook (default_hooks.allreduce_hook: divide by the world size, then all-reduce),
    with each bucket's all-reduce stamped (perf_counter) from its launch to its completion. The division is
    element-wise compute over the bucket (an aten op, not a collective, as HTA counts it), so the launch stamp
    follows it: the stamped interval is the collective alone, which is what the probe times and the prediction
    models (stamping before the division read 0.3-0.6 ms more per 10.5 MB bucket here)."""
    import torch.distributed as dist

    def hook(state, bucket):  # noqa: ANN001,ANN202 — DDP refuses a hook whose bucket is annotated otherwise
        group = state if state is not None else dist.group.WORLD
        buffer = bucket.buffer()
        nbytes = buffer.numel() * buffer.element_size()
        index = bucket.index()
        buffer.div_(group.size())  # first, as the default hook does, so fp16 sums cannot overflow
        launched = time.perf_counter()
        future = dist.all_reduce(buffer, group=group, async_op=True).get_future()

        def done(fut: Any) -> Any:
            stamps.append((index, nbytes, launched, time.perf_counter()))
            return fut.value()[0]

        return future.then(done)

    return hook


def _probe(torch: Any, dist: Any, sizes: list[int], plan: dict[str, Any], device: Any) -> dict[str, list[float]]:
    """Seconds per all-reduce at each bucket size, per trial (barrier, `iters` back to back, sync)."""
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    probe = plan["probe"]
    times: dict[str, list[float]] = {}
    dist.barrier()
    for size in sizes:
        buffer = torch.zeros(max(1, size // 4), dtype=torch.float32, device=device)
        times[str(size)] = bench_time(lambda buffer=buffer: dist.all_reduce(buffer), dist.barrier, sync, probe)
    dist.barrier()
    return times


def _die_with_parent() -> None:
    """Linux: this process gets SIGKILL when its parent ends (a killed worker leaves no rank behind)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def _die_step(rank: int) -> int | None:
    text = os.environ.get(DIE_VARIABLE, "")
    who, _, step = text.partition(":")
    if who.strip().isdigit() and step.strip().isdigit() and int(who) == rank:
        return int(step)
    return None


def _ray_device(torch: Any, plan: dict[str, Any]) -> str:
    return "cuda:0" if plan["backend"] == "nccl" else "cpu"  # Ray gives an actor its GPU as cuda:0


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
