"""A real model's step in place of the feed benchmark's emulated one (`--model NAME`), to check the emulation.

Why: the emulation sleeps, so it costs no CPU and no memory bandwidth; a real step on this machine does, and
competes with the readers for both. Running the same data set once with the real model and once with the
emulation sleeping the model's own step time (measured alone, before the trials) shows how far the emulated AU is
from the real one on this machine.

The step is a catalog model's forward pass (torch.inference_mode) on a fixed input batch of the workload's batch
size, built from the model's seeded example inputs — the bytes the readers read are not decoded into it (the
feed measures storage, and decoding is not emulated either). torch is imported only when --model is given.
"""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable
from typing import Any

from engines.storage.errors import StorageError

WARMUP, MEASURED = 2, 5


# ---- Public API
def model_step(name: str, batch: int, device: str = "cpu") -> tuple[Callable[[], None], dict[str, Any]]:
    """(one real step, its description with the median step time measured alone)."""
    from engines import catalog

    if name not in catalog.names():
        raise StorageError(f"unknown catalog model {name!r} for --model", f"choose one of {', '.join(catalog.names())}")
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise StorageError(f"--device {device}: no CUDA device is available here", "use --device cpu")
    entry, params = catalog.get(name), catalog.params_for(name)
    module = importlib.import_module(entry.module)
    try:
        model = module.build(params).to(device).eval()
        inputs = tuple(t.to(device) for t in module.example_inputs(batch, params))
    except RuntimeError as exc:  # out of memory for this batch
        raise StorageError(f"model {name} with batch {batch} cannot be built on {device} ({exc})",
                           "choose a smaller model, or a workload with a smaller batch (--workload custom --batch N)"
                           ) from None

    def step() -> None:
        with torch.inference_mode():
            model(*inputs)
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    for _ in range(WARMUP):
        step()
    times = []
    for _ in range(MEASURED):
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    return step, {"model": name, "device": device, "batch": batch, "step_ms_alone": statistics.median(times) * 1e3,
                  "how": f"median of {MEASURED} forward passes (inference mode) after {WARMUP} untimed, alone"}
