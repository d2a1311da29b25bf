"""AMD GPUs through AMD SMI's Python binding (``amdsmi``, optional: it needs ROCm's libamd_smi).

Per GPU (``amdgpu{index}.*``, in amdsmi's processor order): utilisation, memory, power, energy counter,
temperature and GFX clock, each where the API and board give it. amdsmi answers "N/A" (or an all-ones
sentinel) for what a board lacks; such a reading is named in ``unavailable_metrics()``, never shown as 0.
``current_socket_power`` (MI300 and newer) is instantaneous; ``average_socket_power`` (MI200 and older, Navi) is
an average over the SMU's window: they are reported as ``power.instant`` and ``power.avg`` accordingly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import Every, MetricInfo, Sample, Source
from .metadata import Energy, MetricSpec

GIB = float(1 << 30)
MEASURED = "measured"
SLOW_PERIOD_S = 1.0
_SENTINELS = (0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF)


class _NA(Exception):
    """amdsmi answered N/A."""


def _num(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value in _SENTINELS:
        raise _NA(f"amdsmi reports {value!r} (not available on this board)")
    return float(value)


class AmdSmiSource(Source):
    name = "amdsmi"
    metric_specs = (
        MetricSpec(r"(amdgpu\d+)\.util", "%", "util", "{0}"),
        MetricSpec(r"(amdgpu\d+)\.mem\.used", "GiB", "memory", "{0} used"),
        MetricSpec(r"(amdgpu\d+)\.mem\.total", "GiB"),
        MetricSpec(r"(amdgpu\d+)\.power\.instant", "W", "power", "{0} instant", energy=Energy("{0}", group_order=1)),
        MetricSpec(r"(amdgpu\d+)\.power\.avg", "W", "power", "{0} avg", energy=Energy(
            "{0}", preference=1, group_order=1, note="{metric} is a ~1 s moving average on many boards: energy "
            "integrated from it lags the load by up to ~1 s (small for windows much longer than that)")),
        MetricSpec(r"(amdgpu\d+)\.energy", "J", energy=Energy("{0}", group_order=1)),
        MetricSpec(r"(amdgpu\d+)\.temp", "°C", "temperature", "{0}"),
        MetricSpec(r"(amdgpu\d+)\.clock\.(\w+)", "MHz", "clocks", "{0} {1}"),
    )

    def __init__(self) -> None:
        self._smi: Any = None
        self._why = "not opened"
        self._readers: list[tuple[list[MetricInfo], Callable[[], list[float]], bool]] = []
        self._unavailable: dict[str, str] = {}
        self._slow: Every | None = None
        self._initialised = False

    # ---- Public API

    def open(self) -> None:
        try:
            import amdsmi as smi
        except Exception as exc:  # ImportError, or OSError when the package is there but libamd_smi is not
            self._why = (f"amdsmi is not importable ({type(exc).__name__}: {exc}): pip install amdsmi "
                         "(needs ROCm's AMD SMI library)")
            return
        try:
            flags = getattr(getattr(smi, "AmdSmiInitFlags", None), "INIT_AMD_GPUS", None)
            smi.amdsmi_init(flags) if flags is not None else smi.amdsmi_init()
        except Exception as exc:
            self._why = f"amdsmi_init failed ({type(exc).__name__}: {exc}): amdgpu driver not loaded?"
            return
        self._smi, self._initialised = smi, True
        try:
            handles = list(smi.amdsmi_get_processor_handles())
        except Exception as exc:
            self._why = f"amdsmi_get_processor_handles failed: {exc}"
            return
        if not handles:
            self._why = "AMD SMI sees no AMD GPU"
            return
        self._slow = Every(SLOW_PERIOD_S, self.tick_ns)
        for index, handle in enumerate(handles):
            self._add_device(smi, index, handle)
        self._why = "" if self._readers else "no amdsmi reading works on any GPU (see unavailable_metrics)"

    def available(self) -> tuple[bool, str]:
        return (self._why == ""), self._why

    def metrics(self) -> list[MetricInfo]:
        return [info for infos, _, _ in self._readers for info in infos]

    def unavailable_metrics(self) -> dict[str, str]:
        return dict(self._unavailable)

    def sample(self, t_ns: int) -> list[Sample]:
        slow_due = self._slow is not None and self._slow.due(t_ns)
        rows: list[Sample] = []
        for infos, read, slow in self._readers:
            if slow and not slow_due:
                continue
            try:
                values = read()
            except Exception:  # N/A or a transient library error: nothing this tick
                continue
            rows += [(t_ns, self.name, info.name, value, info.unit, info.method)
                     for info, value in zip(infos, values, strict=True)]
        return rows

    def close(self) -> None:
        if self._initialised:
            self._initialised = False
            try:
                self._smi.amdsmi_shut_down()
            except Exception:
                pass
        self._readers = []

    # ---- Private API

    def _add_device(self, smi: Any, i: int, h: Any) -> None:
        g = f"amdgpu{i}"
        m = MEASURED
        try:
            gpu = str(smi.amdsmi_get_gpu_asic_info(h).get("market_name") or "AMD GPU")
        except Exception:
            gpu = "AMD GPU"
        vram = getattr(getattr(smi, "AmdSmiMemoryType", None), "VRAM", 0)

        def util() -> list[float]:
            return [_num(smi.amdsmi_get_gpu_activity(h)["gfx_activity"])]

        def memory() -> list[float]:
            return [_num(smi.amdsmi_get_gpu_memory_usage(h, vram)) / GIB,
                    _num(smi.amdsmi_get_gpu_memory_total(h, vram)) / GIB]

        def power(key: str) -> Callable[[], list[float]]:
            return lambda: [_num(smi.amdsmi_get_power_info(h)[key])]

        def energy() -> list[float]:
            e = smi.amdsmi_get_energy_count(h)
            count = e.get("energy_accumulator", e.get("power"))  # renamed in ROCm 6.1
            return [_num(count) * _num(e["counter_resolution"]) / 1e6]

        temp_type = getattr(smi, "AmdSmiTemperatureType", None)
        temp_metric = getattr(getattr(smi, "AmdSmiTemperatureMetric", None), "CURRENT", 0)

        def temperature(kind: str) -> Callable[[], list[float]]:
            sensor = getattr(temp_type, kind, None)
            return lambda: [_num(smi.amdsmi_get_temp_metric(h, sensor, temp_metric))]

        gfx = getattr(getattr(smi, "AmdSmiClkType", None), "GFX", 0)

        def clock() -> list[float]:
            return [_num(smi.amdsmi_get_clock_info(h, gfx)["clk"])]

        slow = SLOW_PERIOD_S
        candidates: list[tuple[list[MetricInfo], Callable[[], list[float]], bool]] = [
            ([MetricInfo(f"{g}.util", "%", f"{gpu}: GFX engine activity", m)], util, False),
            ([MetricInfo(f"{g}.mem.used", "GiB", f"{gpu}: VRAM in use", m),
              MetricInfo(f"{g}.mem.total", "GiB", f"{gpu}: VRAM installed", m)], memory, False),
            ([MetricInfo(f"{g}.power.instant", "W", f"{gpu}: current socket power (MI300 and newer)", m)],
             power("current_socket_power"), False),
            ([MetricInfo(f"{g}.power.avg", "W", f"{gpu}: average socket power over the SMU's averaging window "
                         "(MI200 and older, Navi): not instantaneous", m)], power("average_socket_power"), False),
            ([MetricInfo(f"{g}.energy", "J", f"{gpu}: energy accumulator × counter resolution (a counter: use "
                         "differences)", m)], energy, False),
            ([MetricInfo(f"{g}.clock.gfx", "MHz", f"{gpu}: current GFX clock", m, slow)], clock, True),
        ]
        for kind, label in (("EDGE", "edge"), ("HOTSPOT", "junction (hotspot)")):
            candidates.append(([MetricInfo(f"{g}.temp", "°C", f"{gpu}: {label} temperature", m, slow)],
                               temperature(kind), True))
        have: set[str] = set()
        for infos, read, is_slow in candidates:
            if infos[0].name in have:  # temperature: edge when present, else junction
                continue
            try:
                read()
            except Exception as exc:
                why = str(exc) if isinstance(exc, _NA) else f"not available ({type(exc).__name__}: {exc})"
                for info in infos:
                    self._unavailable.setdefault(info.name, why)
                continue
            for info in infos:
                have.add(info.name)
                self._unavailable.pop(info.name, None)
            self._readers.append((infos, read, is_slow))
