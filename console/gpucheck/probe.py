"""The NVIDIA driver and its GPUs as NVML reports them: the independent account the steps are checked against
(the targets must list as many GPUs, the topology must hold each by its PCI address, and NVLink links when NVML
says some are up). NVML only: torch is never imported in the console process (DESIGN section 2).
"""

from __future__ import annotations

import os
from typing import Any

from engines.topology.nvml import normalize_bdf

DRIVER_VERSION_FILE = "/proc/driver/nvidia/version"
NVLINK_MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS (nvml.h): Hopper has 18 links per GPU


# ---- Public API
def nvidia(nvml: Any = None) -> dict[str, Any]:
    """{"driver": bool, "reason": why not ("" when there is one), "driver_version", "cuda_driver_version",
    "gpus": [{"index", "name", "bdf", "memory_total_bytes", "nvlink_active"}], "nvlink_active": total}.

    `nvml` is the pynvml module (tests pass a stand-in); None imports it."""
    out: dict[str, Any] = {"driver": False, "reason": "", "driver_version": None, "cuda_driver_version": None,
                           "gpus": [], "nvlink_active": 0}
    if nvml is None:
        try:
            import pynvml as nvml
        except ImportError:
            out["reason"] = ("the nvidia-ml-py package (pynvml) is not installed, so NVML cannot be asked"
                             + _driver_file_note())
            return out
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 — NVMLError_LibraryNotFound, DriverNotLoaded …
        out["reason"] = f"no NVIDIA driver: NVML did not start ({_text(exc)}){_driver_file_note()}"
        return out
    try:
        out["driver"] = True
        out["driver_version"] = _optional(lambda: _text(nvml.nvmlSystemGetDriverVersion()))
        cuda = _optional(nvml.nvmlSystemGetCudaDriverVersion)
        out["cuda_driver_version"] = f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None
        count = nvml.nvmlDeviceGetCount()
        out["gpus"] = [_gpu(nvml, index) for index in range(count)]
        out["nvlink_active"] = sum(g["nvlink_active"] or 0 for g in out["gpus"])
        if not out["gpus"]:
            out["reason"] = "the NVIDIA driver is loaded but NVML lists no GPU"
    except Exception as exc:  # noqa: BLE001 — a driver that answers init but not the count
        out["reason"] = f"NVML started but could not list the GPUs: {_text(exc)}"
    finally:
        _optional(nvml.nvmlShutdown)
    return out


def short_bdf(bus_id: str | bytes | None) -> str | None:
    """NVML's bus id ("00000000:18:00.0") as sysfs names the device ("0000:18:00.0"): the topology's own reading."""
    return normalize_bdf(bus_id) if bus_id else None


# ---- Private API
def _gpu(nvml: Any, index: int) -> dict[str, Any]:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    pci = _optional(lambda: nvml.nvmlDeviceGetPciInfo(handle))
    memory = _optional(lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
    return {"index": index, "name": _text(nvml.nvmlDeviceGetName(handle)),
            "bdf": short_bdf(_text(getattr(pci, "busId", None) or "")),
            "memory_total_bytes": getattr(memory, "total", None), "nvlink_active": _nvlinks(nvml, handle)}


def _nvlinks(nvml: Any, handle: Any) -> int | None:
    """Links NVML reports active on this GPU; None when the driver cannot say (no NVLink on this board, or an
    old binding): the topology step then does not expect NVLink."""
    get = getattr(nvml, "nvmlDeviceGetNvLinkState", None)
    if get is None:
        return None
    active = 0
    for link in range(NVLINK_MAX_LINKS):
        try:
            active += 1 if get(handle, link) else 0
        except Exception:  # noqa: BLE001 — NotSupported / InvalidArgument past the board's last link
            break
    return active


def _optional(call: Any) -> Any:
    try:
        return call()
    except Exception:  # noqa: BLE001 — an optional reading: None, and the step that needs it says so
        return None


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _driver_file_note() -> str:
    return "" if os.path.exists(DRIVER_VERSION_FILE) else f"; {DRIVER_VERSION_FILE} does not exist either"
