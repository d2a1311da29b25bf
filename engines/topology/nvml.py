"""NVIDIA's view of the GPUs through NVML: index ↔ PCI address, NVLink links, and the `nvidia-smi topo -m` matrix.

Optional: without pynvml (or without a driver) the graph still has every GPU from sysfs, the matrix is computed from
the PCIe tree, and not_available says why NVML was not used. Every call that a driver may refuse is guarded.
"""

from __future__ import annotations

from typing import Any

MAX_NVLINKS = 18  # NVML_NVLINK_MAX_LINKS on Hopper; older GPUs answer NotSupported past their last link
# nvmlDeviceGetNvLinkVersion answers an nvmlNvlinkVersion_t code, not the generation: 1 = 1.0, 2 = 2.0, 3 = 2.2,
# 4 = 3.0, 5 = 3.1, 6 = 4.0, 7 = 5.0 (nvml.h). Per link, per direction, NVIDIA's published rates: P100 (1.0) 20 GB/s,
# V100 (2.x) 25, A100 (3.x) 25, H100 (4.0) 25 (900 GB/s over 18 links, both directions), B200 (5.0) 50.
NVLINK_CODES = {1: ("1.0", 20.0), 2: ("2.0", 25.0), 3: ("2.2", 25.0), 4: ("3.0", 25.0), 5: ("3.1", 25.0),
                6: ("4.0", 25.0), 7: ("5.0", 50.0)}
# Some drivers answer 5.0 for Hopper's NVLink 4 (a quirk handled the same way in PyTorch's own NVLink benchmark):
# a Hopper part is 4.0 at 25 GB/s per link whatever the code says.
HOPPER_NAMES = ("H100", "H200", "H800", "H20", "GH200")


def nvlink_rate(code: int | None, gpu_name: str = "") -> tuple[str | None, float | None]:
    """(NVLink generation "4.0", GB/s per link per direction) for NVML's version code; (None, None) when unknown."""
    if code is None or code not in NVLINK_CODES:
        return None, None
    if any(part in gpu_name.upper() for part in HOPPER_NAMES):
        return NVLINK_CODES[6]
    return NVLINK_CODES[code]


# nvmlDeviceGetTopologyCommonAncestor levels → nvidia-smi topo -m names.
LEVELS = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}

_UNSET = object()


def load_pynvml(nvml: Any = _UNSET) -> tuple[Any | None, str | None]:
    """(module, None) or (None, why). `nvml=None` means the caller chose not to use NVML."""
    if nvml is None:
        return None, "NVML not used (discover(nvml=None))"
    if nvml is not _UNSET:
        return nvml, None
    try:
        import pynvml  # noqa: PLC0415 - optional dependency
    except ImportError:
        return None, "pynvml is not installed (pip install nvidia-ml-py): NVLink and the NVML matrix are not read"
    return pynvml, None


def normalize_bdf(bus_id: Any) -> str:
    """NVML's '00000000:07:00.0' (bytes or str) → sysfs' '0000:07:00.0'."""
    text = bus_id.decode() if isinstance(bus_id, bytes) else str(bus_id)
    domain, _, rest = text.strip().lower().partition(":")
    return f"{int(domain, 16):04x}:{rest}"


def read_nvml(nvml: Any) -> tuple[dict[str, Any] | None, str | None]:
    """{"gpus": [{"index", "bdf", "name"}], "nvlinks": {(bdfA, bdfB): {"links", "version" (NVML's code),
    "to_gpu", "gpu_name"}},
    "levels": {(i, j): name}, "notes": [...]}, or (None, why NVML could not start)."""
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError subclasses vary by binding
        return None, f"nvmlInit failed: {exc} (no NVIDIA driver loaded?)"
    notes: list[str] = []
    try:
        count = nvml.nvmlDeviceGetCount()
        gpus, handles = [], []
        for index in range(count):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = nvml.nvmlDeviceGetName(handle)
            name = name.decode() if isinstance(name, bytes) else str(name)
            bdf = normalize_bdf(nvml.nvmlDeviceGetPciInfo(handle).busId)
            gpus.append({"index": index, "bdf": bdf, "name": name})
            handles.append(handle)
        nvlinks: dict[tuple[str, str], dict[str, Any]] = {}
        for gpu, handle in zip(gpus, handles, strict=False):
            for link in range(MAX_NVLINKS):
                try:
                    if not nvml.nvmlDeviceGetNvLinkState(handle, link):
                        continue
                    remote = normalize_bdf(nvml.nvmlDeviceGetNvLinkRemotePciInfo(handle, link).busId)
                except AttributeError:
                    notes.append("this pynvml has no NvLink calls")
                    break
                except Exception:  # noqa: BLE001 - NotSupported past the last link, or no NVLink at all
                    break
                try:
                    version = int(nvml.nvmlDeviceGetNvLinkVersion(handle, link))
                except Exception:  # noqa: BLE001
                    version = None
                to_gpu = remote in {g["bdf"] for g in gpus}
                # GPU↔GPU keys are sorted (both ends report the link; it is counted from the lower address's
                # side); a GPU↔NVSwitch key is (gpu, switch).
                key = tuple(sorted((gpu["bdf"], remote))) if to_gpu else (gpu["bdf"], remote)
                entry = nvlinks.setdefault(key, {"links": 0, "version": version, "to_gpu": to_gpu,
                                                 "gpu_name": gpu["name"]})
                if not to_gpu or gpu["bdf"] == key[0]:
                    entry["links"] += 1
        levels: dict[tuple[int, int], str] = {}
        for i, hi in enumerate(handles):
            for j, hj in enumerate(handles):
                if i >= j:
                    continue
                try:
                    level = int(nvml.nvmlDeviceGetTopologyCommonAncestor(hi, hj))
                except Exception as exc:  # noqa: BLE001
                    notes.append(f"nvmlDeviceGetTopologyCommonAncestor failed ({exc}): PCIe levels from sysfs")
                    levels = {}
                    break
                levels[(i, j)] = levels[(j, i)] = LEVELS.get(level, f"?{level}")
            else:
                continue
            break
        return {"gpus": gpus, "nvlinks": nvlinks, "levels": levels, "notes": notes}, None
    except Exception as exc:  # noqa: BLE001
        return None, f"NVML query failed: {exc}"
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass
