"""The ONNX Runtime backend's options and capabilities (torch- and onnxruntime-free)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engines.backends.info import BackendInfo
from engines.options import SpecError, option

GRAPH_OPTIMIZATION = ("disabled", "basic", "extended", "all")
EXECUTION_MODES = ("sequential", "parallel")


@dataclass
class OrtOptions:
    provider: str | None = option(None, flag="--provider", label="Execution provider", kind="str",
                                  help="onnxruntime: execution provider, e.g. CUDAExecutionProvider "
                                       "(default: the target's natural one)")
    provider_options: dict[str, Any] = option(flag="--provider-option", metavar="KEY=VALUE", kind="pairs",
                                              label="Provider options", default_factory=dict,
                                              help="onnxruntime: an execution provider option (repeatable)")
    graph_optimization: str = option("all", flag="--graph-opt", choices=GRAPH_OPTIMIZATION, label="Graph optimization",
                                     help="onnxruntime: graph optimization level")
    inter_op_threads: int | None = option(None, flag="--inter-threads", maximum=4096, label="Inter-op threads",
                                          help="onnxruntime: inter-op threads")
    execution_mode: str = option("sequential", flag="--execution-mode", choices=EXECUTION_MODES,
                                 label="Execution mode", help="onnxruntime: sequential | parallel")
    allow_fallback: bool = option(False, flag="--allow-fallback", label="Allow CPU fall-back",
                                  help="onnxruntime: accept a fall-back to another provider instead of failing")
    opset: int = option(18, flag="--opset", maximum=30, label="ONNX opset",
                        help="ONNX opset for exported catalog models")

    def check(self, prefix: str) -> None:
        if self.provider is not None and not str(self.provider).endswith("ExecutionProvider"):
            raise SpecError(f"{prefix}provider", f"{self.provider!r} is not an execution provider name "
                                                 "(e.g. CPUExecutionProvider, CUDAExecutionProvider)")


INFO = BackendInfo(
    name="onnxruntime", label="ONNX Runtime", module="engines.backends.onnxruntime_backend", options=OrtOptions,
    precisions={"cpu": ("fp32", "int8"), "cuda": ("fp32", "fp16", "int8"), "mps": ("fp32",)},
    file_types=(".onnx",), distributions=("onnxruntime", "onnxruntime-gpu"),
    install="pip install 'lab-console[cpu]' (onnxruntime), or 'lab-console[gpu]' on a CUDA machine (onnxruntime-gpu); "
            "never both",
    probe="engines.backends.onnxruntime_probe:probe", preload=("onnxruntime", "onnx"))
