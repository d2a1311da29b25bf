"""Hardware target discovery: what this machine can run, on which engine, in which precision — and why not.

Runs in a worker process (the backends' probes import their engines), so the console itself never does. Every
target is listed, usable or not; what is not usable carries the reason and, where there is one, the fix.
"""

from __future__ import annotations

import os
import platform
from typing import Any

from engines import backends
from engines.backends.probe import Machine, Probe, family, run_probe, unusable

# The ISA features that decide AI throughput on a CPU, as /proc/cpuinfo names them.
CPU_FEATURES = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "avx512_fp16",
                "amx_tile", "amx_bf16", "amx_int8", "asimd", "sve", "sve2", "bf16", "i8mm")


# ---- Public API
def discover() -> list[dict[str, Any]]:
    """Every target this machine could run on, usable or not, with the reason when not.

    The targets and each engine's word on them come from the registered backends' probes (engines.backends.probe);
    discovery adds what no engine owns: the CPU's facts and NVML's boards."""
    info = _cpuinfo()
    nvml = _nvml_state()
    machine = Machine(cpu_flags=frozenset(info["flags"]), system=platform.system(),
                      boards=tuple(nvml.get("devices", [])))
    probes = {backend.name: run_probe(backend, machine) for backend in backends.infos()}
    targets = [_cpu(info, probes)]
    for target_id in _device_ids(probes, nvml):
        targets.append(_device(target_id, probes, nvml))
    return targets


# ---- CPU
def _cpu(info: dict[str, Any], probes: dict[str, Probe]) -> dict[str, Any]:
    engines = _engines_on("cpu", probes)
    return {"id": "cpu", "name": info["name"], "kind": "cpu", "available": True, "reason": "",
            "engines": [name for name, e in engines.items() if e["available"]], "engine_details": engines,
            "cores": info["cores"], "threads": os.cpu_count(), "isa": [f for f in CPU_FEATURES if f in info["flags"]],
            "memory_bytes": _memory_bytes(), "arch": platform.machine()}


def _cpuinfo() -> dict[str, Any]:
    name, flags, cores = "", set(), set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            physical = core = None
            for line in handle:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "model name" and not name:
                    name = value
                elif key in ("flags", "Features") and not flags:
                    flags = set(value.split())
                elif key == "physical id":
                    physical = value
                elif key == "core id":
                    core = value
                    cores.add((physical, core))
    except OSError:
        pass
    return {"name": name or platform.processor() or platform.machine() or "CPU", "flags": flags,
            "cores": len(cores) or os.cpu_count()}


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


# ---- GPUs and other devices
def _device_ids(probes: dict[str, Probe], nvml: dict[str, Any]) -> list[str]:
    """NVML's boards and every device a probe sees, then the placeholders of families nobody sees, grouped by family
    in order of first mention (cuda:0, cuda:1, mps)."""
    seen = [f"cuda:{i}" for i in range(len(nvml.get("devices", [])))]
    seen += [t for p in probes.values() for t in p.devices if t != "cpu"]
    seen = list(dict.fromkeys(seen))
    absent = [t for p in probes.values() for t in p.absent if family(t) not in {family(s) for s in seen}]
    found = list(dict.fromkeys(seen + absent))
    order = list(dict.fromkeys(family(t) for t in found))
    return sorted(found, key=lambda t: (order.index(family(t)), _index(t)))


def _device(target_id: str, probes: dict[str, Probe], nvml: dict[str, Any]) -> dict[str, Any]:
    facts = next((p.devices[target_id] for p in probes.values() if target_id in p.devices), None)
    board = _board(target_id, nvml)
    if facts is None and not board:
        return _missing(target_id, probes, nvml)
    facts = facts or {}
    engines = _engines_on(target_id, probes)
    target = {"id": target_id, "name": facts.get("name") or board.get("name") or f"{family(target_id).upper()} GPU",
              "kind": facts.get("kind", "gpu"), "engine_details": engines,
              "engines": [name for name, e in engines.items() if e["available"]]}
    if board or family(target_id) == "cuda":
        target.update({"memory_bytes": facts.get("memory_bytes") or board.get("memory_bytes"),
                       "compute_capability": facts.get("compute_capability"), "driver": nvml.get("driver"),
                       "power_limit_w": board.get("power_limit_w")})
    target["available"] = bool(target["engines"])
    target["reason"] = "" if target["available"] else "; ".join(e["reason"] for e in engines.values())
    return target


def _missing(target_id: str, probes: dict[str, Probe], nvml: dict[str, Any]) -> dict[str, Any]:
    reasons = [p.absent[target_id] for p in probes.values() if target_id in p.absent]
    reason = "; ".join(dict.fromkeys(reasons)) or f"no {family(target_id)} device found"
    if family(target_id) == "cuda" and nvml.get("reason"):
        reason += f"; NVML: {nvml['reason']}"
    name = "CUDA GPU" if family(target_id) == "cuda" else "Apple GPU (MPS)" if target_id == "mps" else target_id
    return {"id": target_id, "name": name, "kind": "gpu", "available": False, "reason": reason, "engines": [],
            "engine_details": {}}


def _board(target_id: str, nvml: dict[str, Any]) -> dict[str, Any]:
    boards = nvml.get("devices", [])
    index = _index(target_id)
    return boards[index] if family(target_id) == "cuda" and 0 <= index < len(boards) else {}


def _index(target_id: str) -> int:
    tail = target_id.partition(":")[2]
    return int(tail) if tail.isdigit() else 0


# ---- Engines
def _engines_on(target_id: str, probes: dict[str, Probe]) -> dict[str, dict[str, Any]]:
    """Each backend's entry for a target: its probe's own, or why it said nothing."""
    return {name: p.entry(target_id) or unusable(f"{backends.info(name).label} does not run on {target_id}")
            for name, p in probes.items()}


def _nvml_state() -> dict[str, Any]:
    """Driver and board facts from NVML where present; its absence is a reason, not an error."""
    try:
        import pynvml
    except Exception as exc:  # noqa: BLE001
        return {"reason": f"pynvml not importable ({exc}); pip install nvidia-ml-py", "devices": []}
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 — NVMLError_LibraryNotFound and friends
        return {"reason": f"NVML not available: {exc}", "devices": []}
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        devices = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            board: dict[str, Any] = {"name": _text(pynvml.nvmlDeviceGetName(handle))}
            try:
                board["memory_bytes"] = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
            except Exception:  # noqa: BLE001
                pass
            try:
                board["power_limit_w"] = pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0
            except Exception:  # noqa: BLE001 — not supported on every board
                board["power_limit_w"] = None
            devices.append(board)
        return {"driver": _text(driver), "devices": devices, "reason": ""}
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
