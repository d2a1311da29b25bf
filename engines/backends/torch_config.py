"""The PyTorch backend's options and capabilities (torch-free: the console reads them without torch)."""

from __future__ import annotations

from dataclasses import dataclass

from engines.backends.info import BackendInfo
from engines.options import option

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")
SCALINGS = ("strong", "weak")


@dataclass
class TorchOptions:
    channels_last: bool = option(False, flag="--channels-last", label="Channels-last",
                                 help="torch: channels-last memory format (4-D inputs)")
    compile: str | None = option(None, flag="--compile", choices=COMPILE_MODES, metavar="MODE", label="torch.compile",
                                 help="torch: torch.compile mode (default | reduce-overhead | max-autotune); "
                                      "default: eager")
    # Data-parallel training (engines.ddp): None keeps the single-process training loop.
    ranks: int | None = option(None, flag="--ranks", minimum=1, maximum=1024, metavar="N", label="Ranks (DDP)",
                               help="torch training: N data-parallel ranks (DistributedDataParallel; gloo on cpu, "
                                    "nccl on cuda:K with rank r on cuda:K+r); default: one process, no DDP")
    scaling: str = option("strong", flag="--scaling", choices=SCALINGS, label="Scaling",
                          help="torch --ranks: strong (--batch is the global batch of an optimizer step) or weak "
                               "(--batch is each rank's batch)")
    bucket_mb: float = option(25.0, flag="--bucket-mb", metavar="MB", maximum=4096, unit="MB",
                              label="Gradient bucket (MB)", help="torch --ranks: DDP gradient bucket size "
                                                                 "(bucket_cap_mb, default 25)")
    grad_accum: int = option(1, flag="--grad-accum", metavar="N", maximum=1024, label="Gradient accumulation",
                             help="torch --ranks: micro-batches per optimizer step (all but the last under no_sync)")
    inject_straggler_ms: float = option(0.0, flag="--inject-straggler", metavar="MS", minimum=0, maximum=60000,
                                        unit="ms", label="Injected straggler (ms)",
                                        help="torch --ranks: the last rank sleeps MS before each step's forward "
                                             "(a known straggler, to check the analysis names it)")
    ranks_cluster: str | None = None  # the Ray address (set from --cluster); None: ranks are local processes


INFO = BackendInfo(
    name="torch", label="PyTorch", module="engines.backends.torch_backend", options=TorchOptions,
    precisions={"cpu": ("fp32", "bf16", "fp16", "int8"), "cuda": ("fp32", "fp16", "bf16"),
                "mps": ("fp32", "fp16", "bf16")},
    trains=True, file_types=(".pt2", ".pt", ".jit"), distributions=("torch",), install="pip install torch",
    probe="engines.backends.torch_probe:probe", preload=("torch",))
