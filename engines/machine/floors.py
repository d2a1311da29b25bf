"""The per-call floor of each engine: the time one call of an almost empty model takes (x + 1 on one float).

It is what every inference pays whatever the model does — dispatch, argument checks, allocation, and on a GPU
the launch and the synchronisation — so a run whose ops are far below it is host-overhead bound. Timed in blocks
of calls (one call is too short for the timer); each repeat is the fastest block, since a floor is what a call
costs when nothing else runs (a preempted block measures the neighbours, not the engine).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from engines.machine.devices import Device
from engines.machine.errors import Unavailable


# ---- Public API
def torch_call(torch: Any, device: Device) -> Callable[[], object]:
    """One call of a one-op torch module (x + 1) under inference_mode, synchronised on a GPU."""

    class AlmostEmpty(torch.nn.Module):
        def forward(self, x):
            return x + 1

    model = AlmostEmpty().eval()
    x = torch.zeros(1, device=device.torch_device)

    if device.kind == "cuda":
        def call():
            with torch.inference_mode():
                model(x)
            torch.cuda.synchronize(device.index)
    else:
        def call():
            with torch.inference_mode():
                return model(x)
    return call


def onnxruntime_call(device: Device) -> Callable[[], object]:
    """One `InferenceSession.run` of a one-node graph (Add) on the target's execution provider."""
    try:
        import numpy as np
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError as exc:
        raise Unavailable(f"{exc.name} is not installed (pip install onnx onnxruntime)") from exc
    provider = "CUDAExecutionProvider" if device.kind == "cuda" else "CPUExecutionProvider"
    if provider not in ort.get_available_providers():
        from engines.backends.onnxruntime_backend import INSTALL_HINTS  # the two builds' one install advice

        fix = INSTALL_HINTS.get(provider, "reinstall onnxruntime")
        raise Unavailable(f"onnxruntime has no {provider} here ({fix})")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "one"], ["y"])], "almost_empty",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        initializer=[helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = min(model.ir_version, 9)  # readable by every onnxruntime that knows opset 17
    onnx.checker.check_model(model)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # one float: a thread pool would only add wake-ups
    options.inter_op_num_threads = 1
    providers = [(provider, {"device_id": device.index})] if device.kind == "cuda" else [provider]
    session = ort.InferenceSession(model.SerializeToString(), options, providers=providers)
    feed = {"x": np.zeros(1, dtype=np.float32)}
    return lambda: session.run(None, feed)


class CallFloor:
    """`once()`: the fastest of `blocks` blocks of `block_calls` calls, as the mean time per call in µs."""

    def __init__(self, call: Callable[[], object], blocks: int, block_calls: int, warmup: int = 50):
        self.call, self.blocks, self.block_calls = call, blocks, block_calls
        for _ in range(warmup):
            call()

    def once(self) -> float:
        means = []
        for _ in range(self.blocks):
            start = time.perf_counter()
            for _ in range(self.block_calls):
                self.call()
            means.append((time.perf_counter() - start) / self.block_calls * 1e6)
        return min(means)
