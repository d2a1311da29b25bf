"""GPU copies timed the way nvbandwidth times them: a batch of asynchronous copies on one stream between two CUDA
events, GB/s = bytes copied ÷ event time; the caller takes the median of repeats (repeat.until_precise).

- host→device / device→host: `Tensor.copy_(non_blocking=True)` between a device buffer and a host buffer that is
  pinned (page-locked, the DMA engine reads it directly) or pageable (the driver stages it through a pinned bounce
  buffer, the cost users meet when they forget pin_memory()). torch runs a host↔device copy on the device's
  current stream, so the events are recorded there. The host buffer is written before timing (an untouched
  pageable buffer would read the kernel's shared zero page, from cache) and allocated by the caller's thread, which
  measure_links pins to the GPU's NUMA node; torch's pinned-memory cache is emptied first so a block allocated for
  an earlier GPU, on its node, is not reused.
- device↔device: only where `torch.cuda.can_device_access_peer(a, b)`: torch copies on the source device's current
  stream, so the events are recorded on the source device. Without peer access a copy stages through host memory
  and is not the link's figure: the entry says so instead.

Only the torch calls named here are used, so tests drive this module with a small fake of them.
"""

from __future__ import annotations

from typing import Any

from engines.machine.errors import Unavailable

MIB = 1024 ** 2


class EventCopy:
    """`dst.copy_(src)` timed with CUDA events on `device`'s current stream; `once()` → GB/s of one batch."""

    def __init__(self, torch: Any, src: Any, dst: Any, size: int, device: int, repeat_s: float):
        self.torch, self.src, self.dst, self.size, self.device = torch, src, dst, size, device
        self.calls = 1
        for _ in range(2):  # warm-up: first copies pay for lazy peer mappings and the staging buffer
            self._batch()
        one = self._batch()
        self.calls = max(1, round(repeat_s / one)) if one > 0 else 100

    def once(self) -> float:
        return self.size * self.calls / self._batch() / 1e9

    def _batch(self) -> float:
        """Seconds of `calls` copies between two events."""
        cuda = self.torch.cuda
        with cuda.device(self.device):
            start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
            start.record()
            for _ in range(self.calls):
                self.dst.copy_(self.src, non_blocking=True)
            end.record()
            end.synchronize()
        return start.elapsed_time(end) / 1e3


def host_device(torch: Any, index: int, size: int, direction: str, pinned: bool, repeat_s: float) -> EventCopy:
    """A host→device ("h2d") or device→host ("d2h") copy of `size` bytes on cuda:`index`."""
    release = getattr(getattr(torch, "_C", None), "_host_emptyCache", None)
    if release is not None:  # a cached pinned block of an earlier GPU would sit on that GPU's NUMA node
        release()
    try:
        host = torch.ones(size, dtype=torch.uint8)  # written, so every page is backed (never the shared zero page)
        if pinned:
            host = host.pin_memory()
        device = torch.empty(size, dtype=torch.uint8, device=f"cuda:{index}")
    except (RuntimeError, MemoryError) as exc:
        raise Unavailable(f"cannot allocate two {size // MIB} MiB buffers for cuda:{index}: "
                          f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc
    src, dst = (host, device) if direction == "h2d" else (device, host)
    return EventCopy(torch, src, dst, size, index, repeat_s)


def peer(torch: Any, a: int, b: int, size: int, repeat_s: float) -> EventCopy:
    """A cuda:`a` → cuda:`b` copy; Unavailable when the two have no peer access."""
    if not torch.cuda.can_device_access_peer(a, b):
        raise Unavailable(f"cuda:{a} has no peer access to cuda:{b} (torch.cuda.can_device_access_peer is False): a "
                          "copy would stage through host memory, which is not this pair's link")
    try:
        src = torch.empty(size, dtype=torch.uint8, device=f"cuda:{a}")
        dst = torch.empty(size, dtype=torch.uint8, device=f"cuda:{b}")
    except (RuntimeError, MemoryError) as exc:
        raise Unavailable(f"cannot allocate {size // MIB} MiB on cuda:{a} and cuda:{b}: {type(exc).__name__}") from exc
    return EventCopy(torch, src, dst, size, a, repeat_s)


def bus_id(torch: Any, index: int) -> str | None:
    """cuda:`index`'s PCI address "dddd:bb:dd.0" from torch's device properties (formatted as torch.numa.binding
    formats it for sysfs); None when torch does not say."""
    props = torch.cuda.get_device_properties(index)
    domain, bus, dev = (getattr(props, name, None) for name in ("pci_domain_id", "pci_bus_id", "pci_device_id"))
    if not all(isinstance(value, int) for value in (domain, bus, dev)):
        return None
    return f"{domain:04x}:{bus:02x}:{dev:02x}.0"
