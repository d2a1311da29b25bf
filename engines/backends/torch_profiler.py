"""The PyTorch backend's profiler hook: kineto over marked calls, to the op table and a Chrome trace."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from engines import profiling

WARMUP_MARK = "labconsole profiled warm-up"  # a record_function around the warm-up call; its ops are left out
ITERATION_MARK = "labconsole profiled iteration "  # + the 0-based index: the call each op ran in


def profiler(torch, device, infer: Callable[[], Any]) -> Callable[[int, str | None], dict[str, Any]]:
    """The PyTorch profiler (kineto, with shapes and FLOPs) over `iterations` calls of `infer`, after one profiled
    warm-up call left out of the table; the op table from engines.profiling, the Chrome trace at `trace_path`.

    torch.autograd.profiler.profile is what torch.profiler.profile drives; called directly because the latter's
    start imports torch._inductor (about 4 s here) for a CUDA-graphs flag that eager inference does not use.
    """

    def profile(iterations: int, trace_path: str | None) -> dict[str, Any]:
        from torch.autograd import profiler as autograd_profiler

        with autograd_profiler.profile(use_kineto=True, record_shapes=True, with_flops=True,
                                       use_device="cuda" if device.type == "cuda" else None) as prof:
            with autograd_profiler.record_function(WARMUP_MARK):
                infer()
            walls = []
            started = time.perf_counter()
            for i in range(iterations):  # each call marked, so its ops can be told apart (resampled for stability)
                began = time.perf_counter()
                with autograd_profiler.record_function(f"{ITERATION_MARK}{i}"):
                    infer()
                walls.append(time.perf_counter() - began)
            wall_s = time.perf_counter() - started
        calls = profiling.torch_calls(_plain_events(torch, prof.function_events, device))
        if trace_path:
            prof.export_chrome_trace(trace_path)
        ops = profiling.aggregate(calls, profiling.TORCH_METHOD)
        per_iteration = profiling.iteration_table(calls, walls)
        where = ("the device time of each op's kernels" if device.type == "cuda" else
                 "host (CPU) time of each outermost operator, children included")
        notes = [f"op times are {where}; the profiler adds its own cost to every op (about a microsecond), so "
                 "short ops weigh more here than in the timed measurement, which stays the reference for latency",
                 "wall_s minus op_time_s is time spent outside operators (Python, dispatch, the profiler)",
                 f"the first profiled call (marked '{WARMUP_MARK}' in the trace) is left out of the table"]
        return profiling.profile_event("torch", iterations, wall_s, ops, trace_path, notes,
                                       per_iteration=per_iteration)

    return profile


def _plain_events(torch, events, device) -> list[dict[str, Any]]:
    """torch.profiler's CPU-side events as the plain dicts engines.profiling.torch_calls reads."""
    on_device = device.type == "cuda"
    plain = []
    for event in events:
        if event.device_type != torch.autograd.DeviceType.CPU or _under_warmup(event):
            continue
        device_us = getattr(event, "device_time_total", None)
        if device_us is None:
            device_us = getattr(event, "cuda_time_total", 0)
        parent = event.cpu_parent
        plain.append({
            "id": event.id, "parent": parent.id if parent is not None else None, "name": str(event.name),
            "iteration": _iteration_of(event),
            "time_s": (device_us if on_device else event.cpu_time_total) / 1e6, "flops": int(event.flops or 0),
            "shapes": [list(map(int, shape)) if isinstance(shape, (list, tuple)) and all(
                isinstance(d, int) for d in shape) else [] for shape in (event.input_shapes or [])],
            "dtypes": [str(d) for d in (getattr(event, "input_dtypes", None) or [])],
            "concrete": [_concrete(v) for v in (getattr(event, "concrete_inputs", None) or [])],
        })
    return plain


def _iteration_of(event) -> int | None:
    """The profiled iteration an event ran in (the index of its enclosing ITERATION_MARK), None outside one."""
    while event is not None:
        name = str(event.name)
        if name.startswith(ITERATION_MARK):
            try:
                return int(name[len(ITERATION_MARK):])
            except ValueError:
                return None
        event = event.cpu_parent
    return None


def _under_warmup(event) -> bool:
    while event is not None:
        if event.name == WARMUP_MARK:
            return True
        event = event.cpu_parent
    return False


def _concrete(value: Any) -> Any:
    """A recorded scalar/list argument as plain data (kernel sizes, strides); anything else None."""
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, float)) for v in value):
        return list(value)
    return None
