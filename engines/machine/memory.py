"""Memory bandwidth: a STREAM-style add (c = a + b) over float32 arrays each at least 4× the last-level cache,
so every byte comes from memory; and, on GPUs, host→device copies from pinned and pageable memory.

Bytes are counted as STREAM counts them: two arrays read and one written per element (12 bytes); the extra
read a write-allocate cache performs on `c` is not counted, so the figure is the bandwidth a kernel sees, not
the bus traffic. GB/s are 1e9 bytes per second.
"""

from __future__ import annotations

from typing import Any

from engines.host_memory import available_bytes
from engines.machine.devices import Device
from engines.machine.errors import Unavailable
from engines.machine.timing import Batch, no_sync

FLOAT32 = 4
MIB = 1024 ** 2
UNKNOWN_LLC_ARRAY = 256 * MIB  # when the cache size is unknown: larger than any CPU's last level today


# ---- Public API
def stream_array_bytes(llc_bytes: int | None, minimum: int, quick: bool) -> tuple[int, str]:
    """Bytes per array and the sentence saying why that size (the method shows it)."""
    if quick:
        return minimum, f"quick size {minimum // MIB} MiB per array (may be cache-resident: not a ceiling)"
    if llc_bytes is None:
        return UNKNOWN_LLC_ARRAY, f"{UNKNOWN_LLC_ARRAY // MIB} MiB per array (LLC unknown)"
    size = max(minimum, 4 * llc_bytes)
    available = available_bytes() or None  # 0: the OS does not say
    if available is not None and 3 * size > available // 2:
        raise Unavailable(f"three arrays of 4× the LLC ({3 * size // MIB} MiB) do not fit in half the free memory "
                          f"({available // MIB} MiB): free memory and measure again")
    return size, f"{size // MIB} MiB per array (≥ 4× LLC {llc_bytes / MIB:g} MiB)"


class StreamCeiling:
    """c = a + b on `device`; `once()` measures one repeat in GB/s."""

    def __init__(self, torch: Any, device: Device, array_bytes: int, repeat_s: float, best_of: int = 1):
        self.best_of = best_of
        numel = array_bytes // FLOAT32
        sync = (lambda: torch.cuda.synchronize(device.index)) if device.kind == "cuda" else no_sync
        try:
            a = torch.ones(numel, dtype=torch.float32, device=device.torch_device)
            b = torch.ones(numel, dtype=torch.float32, device=device.torch_device)
            c = torch.zeros(numel, dtype=torch.float32, device=device.torch_device)  # pages touched before timing
        except (RuntimeError, MemoryError) as exc:
            raise Unavailable(f"cannot allocate three arrays of {array_bytes // MIB} MiB on {device.target}: "
                              f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from exc
        self.bytes_per_call = 3 * numel * FLOAT32
        self.batch = Batch.sized(lambda: torch.add(a, b, out=c), repeat_s, sync, warmup=2)

    def once(self) -> float:
        return self.bytes_per_call * self.batch.calls / self.batch.best_seconds(self.best_of) / 1e9


class HostToDeviceCeiling:
    """One host→device copy of `size` bytes from pinned or pageable memory; `once()` in GB/s."""

    def __init__(self, torch: Any, device: Device, size: int, pinned: bool, repeat_s: float, best_of: int = 1):
        self.best_of = best_of
        host = torch.ones(size, dtype=torch.uint8)
        if pinned:
            host = host.pin_memory()
        target = torch.empty(size, dtype=torch.uint8, device=device.torch_device)
        self.size = size
        self.batch = Batch.sized(lambda: target.copy_(host), repeat_s,
                                 lambda: torch.cuda.synchronize(device.index), warmup=2)

    def once(self) -> float:
        return self.size * self.batch.calls / self.batch.best_seconds(self.best_of) / 1e9
