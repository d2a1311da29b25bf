"""NVIDIA GPUs through NVML (the ``pynvml`` module of nvidia-ml-py): power, energy, utilisation, memory,
temperature, clocks, clock-event (throttle) reasons, PCIe traffic, the worker's GPU memory.

Honesty rules this source keeps:
- ``nvmlDeviceGetPowerUsage`` is, on many boards (Ampere and newer data-centre parts in particular), a moving
  average over about one second, not an instantaneous reading. It is reported as ``gpuN.power.avg`` and its
  description says so; the instantaneous reading comes from the field value ``NVML_FI_DEV_POWER_INSTANT``
  (``gpuN.power.instant``) where the driver and board have it, and is simply absent (with the reason) elsewhere.
- ``gpuN.energy`` is NVML's total-energy counter (mJ since the driver loaded, Volta and newer), reported in J:
  the basis of the ``counter`` energy method.
- A function missing from an older binding (AttributeError) or driver (NVMLError_FunctionNotFound), or answered
  NotSupported / NoPermission, is probed once at ``open()`` and then skipped, named with the reason in
  ``unavailable_metrics()``; never fatal, never reported as 0.
- No NVML library (no driver) or no GPU: the whole source is unavailable with the reason.

Rates: power, energy, utilisation and memory at the sampler rate; temperature, clocks, clock-event reasons,
PCIe throughput and per-process memory once a second (``SLOW_PERIOD_S``): they change slowly, and
``nvmlDeviceGetPcieThroughput`` blocks ~20 ms per call while NVML samples the link.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .base import Every, MetricInfo, Sample, Source
from .metadata import Energy, MetricSpec

GIB = float(1 << 30)
MEASURED = "measured"
SLOW_PERIOD_S = 1.0

# NVML error codes (nvml.h), used when an exception carries only ``.value`` (older bindings, fakes).
_NOT_SUPPORTED, _NO_PERMISSION, _FUNCTION_NOT_FOUND, _GPU_IS_LOST = 3, 4, 13, 15
_LIBRARY_NOT_FOUND, _DRIVER_NOT_LOADED = 12, 9

# Clock-event ("throttle") reason bits, nvmlClocksEventReason* in nvml.h (stable across driver versions).
THROTTLE_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def decode_throttle(mask: int | float) -> list[str]:
    """Names of the clock-event reasons set in ``mask`` (unknown bits as ``bit_0x...``)."""
    mask = int(mask)
    names = [name for bit, name in THROTTLE_BITS.items() if mask & bit]
    rest = mask & ~sum(THROTTLE_BITS)
    bit = 1
    while rest:
        if rest & bit:
            names.append(f"bit_{bit:#x}")
            rest &= ~bit
        bit <<= 1
    return names


_THROTTLE_DOC = ", ".join(f"{bit:#x} {name}" for bit, name in THROTTLE_BITS.items())


class _Absent(Exception):
    """A reading that is not there on this machine: its text says why."""


@dataclass
class _Reader:
    """One NVML call for one GPU and the metrics it yields."""

    infos: list[MetricInfo]
    read: Callable[[], list[float | None]]  # one value per info; None = nothing this time
    slow: bool = False


class NvmlSource(Source):
    """Per-GPU metrics named ``gpu{index}.*`` (NVML device index, which follows PCI bus order, not
    necessarily ``CUDA_VISIBLE_DEVICES`` order)."""

    name = "nvml"
    metric_specs = (
        MetricSpec(r"(gpu\d+)\.util", "%", "util", "{0}"),
        MetricSpec(r"(gpu\d+)\.memctl\.util", "%"),
        MetricSpec(r"(gpu\d+)\.mem\.used", "GiB", "memory", "{0} used"),
        MetricSpec(r"(gpu\d+)\.mem\.total", "GiB"),
        MetricSpec(r"(gpu\d+)\.power\.instant", "W", "power", "{0} instant", energy=Energy("{0}")),
        MetricSpec(r"(gpu\d+)\.power\.avg", "W", "power", "{0} 1-s average", energy=Energy(
            "{0}", preference=1, note="{metric} is a ~1 s moving average on many boards: energy integrated from "
            "it lags the load by up to ~1 s (small for windows much longer than that)")),
        MetricSpec(r"(gpu\d+)\.energy", "J", energy=Energy("{0}")),
        MetricSpec(r"(gpu\d+)\.temp", "°C", "temperature", "{0}"),
        MetricSpec(r"(gpu\d+)\.clock\.(sm|mem)", "MHz", "clocks", "{0} {1}"),
        MetricSpec(r"(gpu\d+)\.throttle", "bitmask"),
        MetricSpec(r"(gpu\d+)\.pcie\.(tx|rx)", "MB/s", "io", "{0} PCIe {1}"),
        MetricSpec(r"(gpu\d+)\.worker\.mem", "GiB"),
    )

    def __init__(self) -> None:
        self._nvml: Any = None
        self._why = "not opened"
        self._readers: list[_Reader] = []
        self._proc_readers: list[tuple[str, Callable[[], Any]]] = []
        self._unavailable: dict[str, str] = {}
        self._devices: list[str] = []
        self._slow: Every | None = None
        self._pid: int | None = None
        self._initialised = False

    # ---- Public API

    def open(self) -> None:
        try:
            import pynvml as nvml
        except ImportError as exc:
            self._why = f"pynvml is not importable ({exc}): pip install nvidia-ml-py"
            return
        try:
            nvml.nvmlInit()
        except Exception as exc:
            self._why = _init_reason(exc)
            return
        self._nvml, self._initialised = nvml, True
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except Exception as exc:
            self._why = f"nvmlDeviceGetCount failed: {_err(exc)}"
            return
        if count == 0:
            self._why = "NVML is loaded but sees no NVIDIA GPU"
            return
        self._slow = Every(SLOW_PERIOD_S, self.tick_ns)
        for index in range(count):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
            except Exception as exc:
                self._unavailable[f"gpu{index}.*"] = f"nvmlDeviceGetHandleByIndex failed: {_err(exc)}"
                continue
            try:
                name = nvml.nvmlDeviceGetName(handle)
                name = name.decode() if isinstance(name, bytes) else str(name)
            except Exception:
                name = "NVIDIA GPU"
            self._devices.append(f"gpu{index}: {name}")
            self._add_device(nvml, index, handle, name)
        if not self._readers and not self._proc_readers:
            self._why = "no NVML reading works on any GPU (see unavailable_metrics)"
            return
        self._why = ""

    def available(self) -> tuple[bool, str]:
        return (self._why == ""), self._why

    def metrics(self) -> list[MetricInfo]:
        out = [info for reader in self._readers for info in reader.infos]
        out += [MetricInfo(metric, "GiB", "GPU memory used by the watched worker pid (NVML compute processes; "
                           "absent in a container that hides host pids)", MEASURED, SLOW_PERIOD_S)
                for metric, _ in self._proc_readers]
        return out

    def unavailable_metrics(self) -> dict[str, str]:
        return dict(self._unavailable)

    @property
    def devices(self) -> list[str]:
        return list(self._devices)

    def watch_pid(self, pid: int | None) -> None:
        self._pid = pid

    def sample(self, t_ns: int) -> list[Sample]:
        name = self.name
        slow_due = self._slow is not None and self._slow.due(t_ns)
        rows: list[Sample] = []
        dead: list[_Reader] = []
        for reader in self._readers:
            if reader.slow and not slow_due:
                continue
            try:
                values = reader.read()
            except Exception as exc:
                why = _absent_reason(exc)
                if why is not None:  # went away at run time (e.g. NotSupported after a driver change)
                    dead.append(reader)
                    for info in reader.infos:
                        self._unavailable[info.name] = why
                elif _code(exc) == _GPU_IS_LOST:
                    raise
                continue  # a transient error: nothing this tick
            for info, value in zip(reader.infos, values, strict=True):
                if value is not None:
                    rows.append((t_ns, name, info.name, float(value), info.unit, info.method))
        for reader in dead:
            self._readers.remove(reader)
        if slow_due and self._pid is not None:
            for metric, list_processes in self._proc_readers:
                try:
                    procs = list_processes()
                except Exception:
                    continue
                for p in procs:
                    used = getattr(p, "usedGpuMemory", None)
                    if getattr(p, "pid", None) == self._pid and used is not None:
                        rows.append((t_ns, name, metric, used / GIB, "GiB", MEASURED))
                        break
        return rows

    def close(self) -> None:
        if self._initialised:
            self._initialised = False
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
        self._readers, self._proc_readers = [], []

    # ---- Private API

    def _add_device(self, nvml: Any, i: int, h: Any, gpu_name: str) -> None:
        g = f"gpu{i}"
        m = MEASURED
        slow = SLOW_PERIOD_S

        def util() -> list[float | None]:
            u = nvml.nvmlDeviceGetUtilizationRates(h)
            return [u.gpu, u.memory]

        def memory() -> list[float | None]:
            info = nvml.nvmlDeviceGetMemoryInfo(h)
            return [info.used / GIB, info.total / GIB]

        def power_avg() -> list[float | None]:
            return [nvml.nvmlDeviceGetPowerUsage(h) / 1000.0]

        field = getattr(nvml, "NVML_FI_DEV_POWER_INSTANT", None)

        def power_instant() -> list[float | None]:
            if field is None:
                raise AttributeError("NVML_FI_DEV_POWER_INSTANT")
            (fv,) = nvml.nvmlDeviceGetFieldValues(h, [field])
            ret = getattr(fv, "nvmlReturn", 0)
            if ret:
                raise nvml.NVMLError(ret)
            return [_field_value(fv) / 1000.0]

        def energy() -> list[float | None]:
            return [nvml.nvmlDeviceGetTotalEnergyConsumption(h) / 1000.0]

        def temperature() -> list[float | None]:
            return [nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU)]

        def clock(kind: str) -> Callable[[], list[float | None]]:
            def read() -> list[float | None]:
                return [nvml.nvmlDeviceGetClockInfo(h, getattr(nvml, kind))]
            return read

        reasons_fn = (getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                      or getattr(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None))

        def throttle() -> list[float | None]:
            if reasons_fn is None:
                raise AttributeError("nvmlDeviceGetCurrentClocksEventReasons")
            return [float(int(reasons_fn(h)))]

        def pcie() -> list[float | None]:
            # NVML reports KB/s (1 KB = 1024 B) over a 20 ms window; shown in MB/s (10^6 B/s).
            tx = nvml.nvmlDeviceGetPcieThroughput(h, nvml.NVML_PCIE_UTIL_TX_BYTES)
            rx = nvml.nvmlDeviceGetPcieThroughput(h, nvml.NVML_PCIE_UTIL_RX_BYTES)
            return [tx * 1024 / 1e6, rx * 1024 / 1e6]

        candidates = [
            _Reader([MetricInfo(f"{g}.util", "%", f"{gpu_name}: % of the last sample period (1/6 s to 1 s by "
                                "product) during which a kernel was running (not SM occupancy)", m),
                     MetricInfo(f"{g}.memctl.util", "%", f"{gpu_name}: % of the last sample period during which "
                                "device memory was read or written", m)], util),
            _Reader([MetricInfo(f"{g}.mem.used", "GiB", f"{gpu_name}: device memory in use (all processes)", m),
                     MetricInfo(f"{g}.mem.total", "GiB", f"{gpu_name}: device memory installed", m)], memory),
            _Reader([MetricInfo(f"{g}.power.avg", "W", f"{gpu_name}: board power from nvmlDeviceGetPowerUsage; "
                                "on many boards (A100, H100 and newer) a ~1 s moving average, not an "
                                "instantaneous reading", m)], power_avg),
            _Reader([MetricInfo(f"{g}.power.instant", "W", f"{gpu_name}: instantaneous board power "
                                "(field value NVML_FI_DEV_POWER_INSTANT)", m)], power_instant),
            _Reader([MetricInfo(f"{g}.energy", "J", f"{gpu_name}: total-energy counter since the driver loaded "
                                "(nvmlDeviceGetTotalEnergyConsumption, mJ, shown in J); a counter: use "
                                "differences", m)], energy),
            _Reader([MetricInfo(f"{g}.temp", "°C", f"{gpu_name}: GPU die temperature", m, slow)], temperature,
                    slow=True),
            _Reader([MetricInfo(f"{g}.clock.sm", "MHz", f"{gpu_name}: current SM clock", m, slow)],
                    clock("NVML_CLOCK_SM"), slow=True),
            _Reader([MetricInfo(f"{g}.clock.mem", "MHz", f"{gpu_name}: current memory clock", m, slow)],
                    clock("NVML_CLOCK_MEM"), slow=True),
            _Reader([MetricInfo(f"{g}.throttle", "bitmask", f"{gpu_name}: clock-event (throttle) reasons as a "
                                f"bitmask; bits: {_THROTTLE_DOC} (decode_throttle() names them)", m, slow)],
                    throttle, slow=True),
            _Reader([MetricInfo(f"{g}.pcie.tx", "MB/s", f"{gpu_name}: PCIe transmit throughput over a 20 ms "
                                "window (NVML KB/s)", m, slow),
                     MetricInfo(f"{g}.pcie.rx", "MB/s", f"{gpu_name}: PCIe receive throughput over a 20 ms "
                                "window (NVML KB/s)", m, slow)], pcie, slow=True),
        ]
        for reader in candidates:
            try:
                reader.read()
            except Exception as exc:  # probe once: whatever does not work now is named, not retried
                why = _absent_reason(exc) or f"failed when probed: {_err(exc)}"
                for info in reader.infos:
                    self._unavailable[info.name] = why
                continue
            self._readers.append(reader)

        list_fn = getattr(nvml, "nvmlDeviceGetComputeRunningProcesses", None)
        metric = f"{g}.worker.mem"
        if list_fn is None:
            self._unavailable[metric] = _absent_reason(AttributeError("nvmlDeviceGetComputeRunningProcesses")) or ""
            return
        try:
            list_fn(h)
        except Exception as exc:
            self._unavailable[metric] = _absent_reason(exc) or f"failed when probed: {_err(exc)}"
            return
        self._proc_readers.append((metric, lambda: list_fn(h)))


# ---- helpers


def _code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def _err(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _absent_reason(exc: BaseException) -> str | None:
    """Why a reading is permanently absent here, or None for an error worth retrying next tick."""
    if isinstance(exc, AttributeError):
        missing = exc.args[0] if exc.args else "function"
        return f"not in this pynvml binding ({missing}); upgrade nvidia-ml-py"
    return _known_error(exc, _ABSENT_REASONS)


def _init_reason(exc: BaseException) -> str:
    return _known_error(exc, _INIT_REASONS) or f"nvmlInit failed: {_err(exc)}"


def _known_error(exc: BaseException, reasons: tuple[tuple[str, int, str], ...]) -> str | None:
    """The reason for the first (NVML error class, its code, reason) that matches `exc`: pynvml raises a class
    per code, but older bindings raise the plain NVMLError with only the code set."""
    cls, code = type(exc).__name__, _code(exc)
    return next((reason for name, number, reason in reasons if cls == name or code == number), None)


_ABSENT_REASONS = (
    ("NVMLError_FunctionNotFound", _FUNCTION_NOT_FOUND,
     "not in this NVIDIA driver (NVML function not found); a newer driver has it"),
    ("NVMLError_NotSupported", _NOT_SUPPORTED, "not supported by this GPU or driver (NVML NotSupported)"),
    ("NVMLError_NoPermission", _NO_PERMISSION,
     "NVML refused: no permission (run as root or relax the driver's restriction)"),
)
_INIT_REASONS = (
    ("NVMLError_LibraryNotFound", _LIBRARY_NOT_FOUND,
     "NVML library (libnvidia-ml.so.1) not found: no NVIDIA driver installed on this machine"),
    ("NVMLError_DriverNotLoaded", _DRIVER_NOT_LOADED, "NVIDIA driver not loaded (nvidia kernel module missing)"),
    ("NVMLError_NoPermission", _NO_PERMISSION, "nvmlInit refused: no permission on /dev/nvidia*"),
)


_VALUE_FIELDS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")  # by NVML_VALUE_TYPE_*


def _field_value(fv: Any) -> float:
    value_type = int(getattr(fv, "valueType", 1))
    return float(getattr(fv.value, _VALUE_FIELDS[value_type]))
