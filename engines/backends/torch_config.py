"""The PyTorch backend's options and capabilities (torch-free: the console reads them without torch)."""

from __future__ import annotations

from dataclasses import dataclass

from engines.backends import BackendInfo
from engines.options import option

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")


@dataclass
class TorchOptions:
    channels_last: bool = option(False, flag="--channels-last", label="Channels-last",
                                 help="torch: channels-last memory format (4-D inputs)")
    compile: str | None = option(None, flag="--compile", choices=COMPILE_MODES, metavar="MODE", label="torch.compile",
                                 help="torch: torch.compile mode (default | reduce-overhead | max-autotune); "
                                      "default: eager")


INFO = BackendInfo(
    name="torch", label="PyTorch", module="engines.backends.torch_backend", options=TorchOptions,
    precisions={"cpu": ("fp32", "bf16", "fp16", "int8"), "cuda": ("fp32", "fp16", "bf16"),
                "mps": ("fp32", "fp16", "bf16")},
    trains=True, file_types=(".pt2", ".pt", ".jit"), distributions=("torch",), install="pip install torch")
