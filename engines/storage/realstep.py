"""A real model's step in place of the feed benchmark's emulated one (`--model NAME`), to check the emulation.

Why: the emulation sleeps, so it costs no CPU and no memory bandwidth; a real step on this machine does, and
competes with the readers for both. Running the same data set once with the real model and once with the
emulation sleeping the model's own step time (measured alone, before the trials) shows how far the emulated AU is
from the real one on this machine.

The step is a catalog model's forward pass (torch.inference_mode; on the CPU one intra-op thread per accelerator)
on a fixed input batch of the workload's batch size, built from the model's seeded example inputs — the bytes the readers read are not decoded into it (the
feed measures storage, and decoding is not emulated either). torch is imported only when --model is given.
"""

from __future__ import annotations

import importlib
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from engines.storage.errors import StorageError

# Warm-up: the first calls pay for torch's thread pool and first-touch page faults (a 3 ms mlp step measured
# 24 ms over 2 warm-up + 5 calls); then at least MEASURED calls and MIN_SECONDS, at most MAX_CALLS.
WARMUP, MEASURED, MIN_SECONDS, MAX_CALLS = 5, 10, 0.3, 500


# ---- Public API
def model_step(name: str, batch: int, device: str = "cpu") -> tuple[Callable[[], None], dict[str, Any]]:
    """(one real step, its description with the median step time measured alone)."""
    from engines import catalog

    if name not in catalog.names():
        raise StorageError(f"unknown catalog model {name!r} for --model", f"choose one of {', '.join(catalog.names())}")
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise StorageError(f"--device {device}: no CUDA device is available here", "use --device cpu")
    if device == "cpu":
        # one intra-op thread per accelerator (an accelerator is one thread here): with torch's shared pool, steps
        # of several accelerators meet in its barriers, and on a busy 2-core VM one 0.4 ms mlp step took 20 ms
        torch.set_num_threads(1)
    entry, params = catalog.get(name), catalog.params_for(name)
    module = importlib.import_module(entry.module)
    try:
        model = module.build(params).to(device).eval()
        inputs = tuple(t.to(device) for t in module.example_inputs(batch, params))
    except RuntimeError as exc:  # out of memory for this batch
        raise StorageError(f"model {name} with batch {batch} cannot be built on {device} ({exc})",
                           "choose a smaller model, or a workload with a smaller batch (--workload custom --batch N)"
                           ) from None

    local = threading.local()

    def step() -> None:
        if device == "cpu" and not getattr(local, "one_thread", False):
            torch.set_num_threads(1)  # per calling thread: OpenMP's thread count is a per-thread setting
            local.one_thread = True
        with torch.inference_mode():
            model(*inputs)
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    times: list[float] = []
    # measured on a thread of its own, as the accelerators run it
    measuring = threading.Thread(target=_measure, args=(step, times), name="feed-model-alone")
    measuring.start()
    measuring.join()
    if not times:
        raise StorageError(f"model {name} failed its first step on {device}", "see the error above; choose another "
                           "model or a smaller batch")
    return step, {"model": name, "device": device, "batch": batch, "step_ms_alone": statistics.median(times) * 1e3,
                  "how": f"median of {len(times)} forward passes (inference mode) after {WARMUP} untimed, alone, "
                         "on a thread as the accelerators run it"}


# ---- Private API
def _measure(step: Callable[[], None], times: list[float]) -> None:
    for _ in range(WARMUP):
        step()
    began = time.perf_counter()
    while len(times) < MEASURED or (time.perf_counter() - began < MIN_SECONDS and len(times) < MAX_CALLS):
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
