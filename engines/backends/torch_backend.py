"""PyTorch backend: builds a catalog model in eager mode and runs it under inference_mode."""

from __future__ import annotations

import importlib
import time

from engines import catalog
from engines.backends.base import LoadedModel
from engines.spec import RunSpec


def load(spec: RunSpec) -> LoadedModel:
    started = time.perf_counter()
    import torch

    if spec.threads:
        torch.set_num_threads(spec.threads)
    entry = catalog.get(spec.model)
    builder = importlib.import_module(entry.module)
    device = torch.device(spec.target)
    model = builder.build(entry.params).to(device)
    example = builder.example_input(spec.batch, entry.params).to(device)
    synchronize = _synchronizer(torch, device)
    synchronize()
    load_s = time.perf_counter() - started

    params = sum(p.numel() for p in model.parameters())
    model_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    model_bytes += sum(b.numel() * b.element_size() for b in model.buffers())

    def infer():
        with torch.inference_mode():
            out = model(example)
        synchronize()
        return out

    return LoadedModel(
        infer=infer,
        load_s=load_s,
        params=params,
        model_bytes=model_bytes,
        versions={"torch": str(torch.__version__)},
        details={"threads": torch.get_num_threads(), "device": str(device),
                 "input_shape": list(example.shape), "dtype": str(example.dtype).replace("torch.", "")},
    )


def _synchronizer(torch, device):
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    if device.type == "mps":
        return torch.mps.synchronize
    return lambda: None
