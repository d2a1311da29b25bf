"""Peak FLOP/s per precision: large square GEMMs through torch.matmul, 2·n³ FLOPs per call.

The nominal size is used unless a probe GEMM shows that one call would take far too long (NOMINAL_LIMIT_S): that
happens for precisions a CPU only emulates (bf16 without AVX512-BF16/AMX runs ~30× slower than fp32, a 2048² bf16
GEMM takes minutes there). Then n is the largest multiple of 256 whose one call fits the call budget. The limit is
generous on purpose: a busy machine slows the probe a few times, and must not shrink a native precision's GEMM
(small GEMMs reach less of the peak). The method names the n used.
"""

from __future__ import annotations

import time
from typing import Any

from engines.machine.devices import Device, cpu_flags
from engines.machine.errors import Unavailable
from engines.machine.timing import Batch, no_sync

NATIVE_BF16_FLAGS = {"avx512_bf16", "amx_bf16", "bf16"}  # x86 AVX512-BF16 / AMX, ARM's BF16 extension
PROBE_CALLS = 5
NOMINAL_LIMIT_S = 4.0  # the estimated time of one nominal GEMM beyond which the size is reduced


# ---- Public API
def precisions(device: Device, torch: Any) -> dict[str, tuple[Any, str]]:
    """The precisions to measure on this device: {name: (dtype, note)}; the note says when it is emulated."""
    if device.kind == "cpu":
        note = "" if NATIVE_BF16_FLAGS & cpu_flags() else \
            "emulated: this CPU has no AVX512-BF16/AMX/BF16 instructions"
        return {"fp32": (torch.float32, ""), "bf16": (torch.bfloat16, note)}
    found = {"fp32": (torch.float32, "TF32 off"), "fp16": (torch.float16, "")}
    if torch.cuda.is_bf16_supported():
        found["bf16"] = (torch.bfloat16, "")
    return found


def unavailable_precisions(device: Device, torch: Any) -> dict[str, str]:
    """Precisions the target lacks, with why (so the card says it rather than leaving a silent gap)."""
    if device.kind == "cuda" and not torch.cuda.is_bf16_supported():
        return {"bf16": f"{device.name} has no bf16 tensor support (compute capability < 8.0)"}
    return {}


class MatmulCeiling:
    """One precision's GEMM, sized once; `once()` measures one repeat in FLOP/s."""

    def __init__(self, torch: Any, device: Device, dtype: Any, nominal_n: int, probe_n: int,
                 call_budget_s: float, repeat_s: float, best_of: int = 1):
        self.torch, self.device, self.dtype, self.best_of = torch, device, dtype, best_of
        self.sync = (lambda: torch.cuda.synchronize(device.index)) if device.kind == "cuda" else no_sync
        try:
            self.n = self._size(nominal_n, probe_n, call_budget_s)
            a, b = self._operands(self.n)
            out = torch.empty((self.n, self.n), dtype=dtype, device=device.torch_device)
        except (RuntimeError, NotImplementedError) as exc:
            raise Unavailable(f"torch.matmul in {dtype} fails on {device.target}: {type(exc).__name__}: "
                              f"{str(exc).splitlines()[0]}") from exc
        self.batch = Batch.sized(lambda: torch.matmul(a, b, out=out), repeat_s, self.sync)

    def once(self) -> float:
        return 2.0 * self.n ** 3 * self.batch.calls / self.batch.best_seconds(self.best_of)

    # ---- Private API
    def _operands(self, n: int):
        generator = self.torch.Generator(device=self.device.torch_device).manual_seed(0)
        make = lambda: self.torch.randn((n, n), generator=generator, device=self.device.torch_device,  # noqa: E731
                                        dtype=self.torch.float32).to(self.dtype)
        return make(), make()

    def _size(self, nominal_n: int, probe_n: int, call_budget_s: float) -> int:
        if nominal_n <= probe_n:
            return nominal_n
        a, b = self._operands(probe_n)
        self.torch.matmul(a, b)  # first call: library initialisation, packing buffers
        self.sync()
        fastest = float("inf")
        for _ in range(PROBE_CALLS):  # the fastest: a preempted probe must not shrink the GEMM
            start = time.perf_counter()
            self.torch.matmul(a, b)
            self.sync()
            fastest = min(fastest, time.perf_counter() - start)
        rate = 2.0 * probe_n ** 3 / max(fastest, 1e-9)
        if 2.0 * nominal_n ** 3 / rate <= NOMINAL_LIMIT_S:
            return nominal_n
        fitting = int((rate * call_budget_s / 2.0) ** (1 / 3)) // 256 * 256
        return max(probe_n, min(nominal_n, fitting))
