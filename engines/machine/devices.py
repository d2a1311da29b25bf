"""Which device a card measures: "cpu" or "cuda[:N]", resolved against what torch finds on this machine.

Another kind of target (mps, rocm through a CUDA build aside) is refused with the list of what is supported,
rather than measured on the CPU behind the user's back.
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engines.machine.errors import MachineError

SUPPORTED = "cpu, cuda, cuda:N"


@dataclass(frozen=True)
class Device:
    target: str  # canonical: "cpu" or "cuda:N"
    kind: str  # "cpu" | "cuda"
    index: int | None
    name: str

    @property
    def torch_device(self) -> str:
        return self.target


# ---- Public API
def canonical_target(target: str | None) -> str:
    """"cpu" → "cpu", "cuda" → "cuda:0", "cuda:1" → "cuda:1"; anything else is a MachineError."""
    text = (target or "cpu").strip().lower()
    if text == "cpu":
        return "cpu"
    match = re.fullmatch(r"cuda(?::(\d+))?", text)
    if match:
        return f"cuda:{int(match.group(1) or 0)}"
    raise MachineError(f"no machine card for target {target!r}: supported targets are {SUPPORTED} "
                       "(see `labconsole targets`)")


def resolve(target: str | None, torch: Any) -> Device:
    """The device behind `target`, checked against torch; a target this machine lacks is a MachineError."""
    canonical = canonical_target(target)
    if canonical == "cpu":
        return Device("cpu", "cpu", None, cpu_name())
    index = int(canonical.split(":")[1])
    if not torch.cuda.is_available():
        why = "torch was built without CUDA" if torch.version.cuda is None else "no CUDA device is visible"
        raise MachineError(f"target {canonical} is not available here: {why} (torch {torch.__version__}); "
                           "use --target cpu, or run on a machine with an NVIDIA GPU and a CUDA build of torch")
    count = torch.cuda.device_count()
    if index >= count:
        raise MachineError(f"target {canonical} does not exist: this machine has {count} CUDA device(s), "
                           f"cuda:0 … cuda:{count - 1}")
    return Device(canonical, "cuda", index, str(torch.cuda.get_device_name(index)))


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo, else what the platform module says."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="ignore").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="ignore").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("flags", "Features"):
                return set(value.split())
    except OSError:
        pass
    return set()
