"""NVML source against a fake ``pynvml`` module (this machine has no NVIDIA driver; lab machines do).

The fake mimics nvidia-ml-py's shapes: NVMLError subclasses chosen by value, field values as structs with
``nvmlReturn``/``valueType``/``value``, process entries with ``pid``/``usedGpuMemory``.
"""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace

import pytest

from console.telemetry.catalog import undeclared
from console.telemetry.nvml_source import THROTTLE_BITS, NvmlSource, decode_throttle

MS = 1_000_000


def make_fake_pynvml(gpus: int = 2, *, drop: tuple[str, ...] = (), library: bool = True,
                     not_supported: tuple[str, ...] = (), instant_ret: int = 0) -> types.ModuleType:
    """A pynvml stand-in. ``drop``: functions missing from this binding; ``not_supported``: calls answering
    NVMLError_NotSupported (for "pcie": only on GPU 1)."""
    m = types.ModuleType("pynvml")

    class NVMLError(Exception):
        _map: dict[int, type] = {}

        def __new__(cls, value):
            if cls is NVMLError:
                cls = NVMLError._map.get(value, cls)
            obj = Exception.__new__(cls)
            obj.value = value
            return obj

        def __init__(self, value):
            super().__init__(f"NVML error {value}")

    def sub(name, value):
        cls = type(name, (NVMLError,), {})
        NVMLError._map[value] = cls
        setattr(m, name, cls)
        return cls

    m.NVMLError = NVMLError
    sub("NVMLError_NotSupported", 3)
    sub("NVMLError_NoPermission", 4)
    sub("NVMLError_LibraryNotFound", 12)
    sub("NVMLError_FunctionNotFound", 13)
    sub("NVMLError_GPUIsLost", 15)
    m.NVML_TEMPERATURE_GPU = 0
    m.NVML_CLOCK_SM, m.NVML_CLOCK_MEM = 1, 2
    m.NVML_PCIE_UTIL_TX_BYTES, m.NVML_PCIE_UTIL_RX_BYTES = 0, 1
    m.NVML_FI_DEV_POWER_INSTANT = 186

    state = SimpleNamespace(calls=[], energy_mj=[1_000_000, 2_000_000], power_mw=[250_000, 80_000],
                            fail_next=None, procs={0: [SimpleNamespace(pid=4242, usedGpuMemory=3 << 30)]},
                            inited=False, shut=False)
    m.state = state

    def check(fn, h=None):
        state.calls.append(fn)
        if state.fail_next and state.fail_next[0] == fn:
            err = state.fail_next[1]
            raise err
        if fn in not_supported and (fn != "pcie" or h == 1):
            raise NVMLError(3)

    def nvmlInit():
        if not library:
            raise NVMLError(12)
        state.inited = True

    def nvmlShutdown():
        state.shut = True

    funcs = {
        "nvmlInit": nvmlInit,
        "nvmlShutdown": nvmlShutdown,
        "nvmlDeviceGetCount": lambda: gpus,
        "nvmlDeviceGetHandleByIndex": lambda i: i,
        "nvmlDeviceGetName": lambda h: b"NVIDIA H100 80GB HBM3",
    }

    def util(h):
        check("util", h)
        return SimpleNamespace(gpu=97, memory=41)

    def mem(h):
        check("mem", h)
        return SimpleNamespace(used=10 << 30, total=80 << 30, free=70 << 30)

    def power(h):
        check("power", h)
        return state.power_mw[h]

    def fields(h, ids):
        check("fields", h)
        assert ids == [186]
        val = SimpleNamespace(dVal=0.0, uiVal=300_000 + h, ulVal=0, ullVal=0, sllVal=0, siVal=0, usVal=0)
        return [SimpleNamespace(fieldId=186, nvmlReturn=instant_ret, valueType=1, value=val)]

    def energy(h):
        check("energy", h)
        return state.energy_mj[h]

    def temp(h, kind):
        check("temp", h)
        return 61

    def clock(h, kind):
        check("clock", h)
        return {1: 1980, 2: 2619}[kind]

    def events(h):
        check("events", h)
        return 0x4 | 0x1

    def throttle(h):
        check("throttle_old", h)
        return 0x40

    def pcie(h, counter):
        check("pcie", h)
        return 1000 if counter == 0 else 2000

    def procs(h):
        check("procs", h)
        return state.procs.get(h, [])

    funcs.update({
        "nvmlDeviceGetUtilizationRates": util, "nvmlDeviceGetMemoryInfo": mem,
        "nvmlDeviceGetPowerUsage": power, "nvmlDeviceGetFieldValues": fields,
        "nvmlDeviceGetTotalEnergyConsumption": energy, "nvmlDeviceGetTemperature": temp,
        "nvmlDeviceGetClockInfo": clock, "nvmlDeviceGetCurrentClocksEventReasons": events,
        "nvmlDeviceGetCurrentClocksThrottleReasons": throttle, "nvmlDeviceGetPcieThroughput": pcie,
        "nvmlDeviceGetComputeRunningProcesses": procs,
    })
    for name, fn in funcs.items():
        if name not in drop:
            setattr(m, name, fn)
    return m


@pytest.fixture
def fake(monkeypatch):
    def install(**kwargs):
        module = make_fake_pynvml(**kwargs)
        monkeypatch.setitem(sys.modules, "pynvml", module)
        return module
    return install


def opened(**kwargs) -> NvmlSource:
    src = NvmlSource()
    src.open()
    return src


def by_metric(rows):
    return {r[2]: r for r in rows}


def test_full_driver_reports_every_metric_per_gpu(fake):
    nvml = fake()
    src = opened()
    assert src.available() == (True, "")
    infos = {m.name: m for m in src.metrics()}
    for g in ("gpu0", "gpu1"):
        for metric, unit in [("util", "%"), ("memctl.util", "%"), ("mem.used", "GiB"), ("mem.total", "GiB"),
                             ("power.avg", "W"), ("power.instant", "W"), ("energy", "J"), ("temp", "°C"),
                             ("clock.sm", "MHz"), ("clock.mem", "MHz"), ("throttle", "bitmask"),
                             ("pcie.tx", "MB/s"), ("pcie.rx", "MB/s"), ("worker.mem", "GiB")]:
            assert infos[f"{g}.{metric}"].unit == unit, metric
    assert all(i.method == "measured" for i in infos.values())
    assert undeclared(NvmlSource, list(infos.values())) == []  # every metric has its metadata
    assert "average" in infos["gpu0.power.avg"].description and "1 s" in infos["gpu0.power.avg"].description
    assert "counter" in infos["gpu0.energy"].description
    assert infos["gpu0.temp"].period_s == 1.0 and infos["gpu0.power.avg"].period_s is None
    assert src.unavailable_metrics() == {}

    src.watch_pid(4242)
    got = by_metric(src.sample(10 * MS))
    assert got["gpu0.power.avg"][3] == 250.0 and got["gpu1.power.avg"][3] == 80.0
    assert got["gpu0.power.instant"][3] == 300.0
    assert got["gpu0.energy"][3] == 1000.0 and got["gpu0.energy"][4] == "J"  # mJ -> J
    assert got["gpu0.mem.used"][3] == 10.0 and got["gpu0.util"][3] == 97.0
    assert got["gpu0.clock.sm"][3] == 1980.0 and got["gpu0.clock.mem"][3] == 2619.0
    assert got["gpu0.throttle"][3] == 0x5 and decode_throttle(got["gpu0.throttle"][3]) == ["gpu_idle",
                                                                                           "sw_power_cap"]
    assert got["gpu0.pcie.tx"][3] == pytest.approx(1000 * 1024 / 1e6)
    assert got["gpu0.pcie.rx"][3] == pytest.approx(2000 * 1024 / 1e6)
    assert got["gpu0.worker.mem"][3] == 3.0
    assert "gpu1.worker.mem" not in got  # the worker has nothing on GPU 1
    assert all(r[1] == "nvml" and r[5] == "measured" and r[0] == 10 * MS for r in got.values())
    src.close()
    assert nvml.state.shut


def test_slow_group_is_read_once_a_second(fake):
    nvml = fake(gpus=1)
    src = opened()
    src.tick_ns = 100 * MS
    counts = []
    for k in range(25):  # 2.5 s at 10 Hz, slightly late ticks as a real sampler has them
        nvml.state.calls.clear()
        rows = src.sample(k * 100 * MS + (k % 3) * MS)
        counts.append(("gpu0.temp" in by_metric(rows), "gpu0.power.avg" in by_metric(rows)))
    temps = [k for k, (has_temp, _) in enumerate(counts) if has_temp]
    assert temps == [0, 10, 20], temps
    assert all(power for _, power in counts)


def test_missing_functions_and_not_supported_are_skipped_with_a_note(fake):
    fake(drop=("nvmlDeviceGetTotalEnergyConsumption", "nvmlDeviceGetCurrentClocksEventReasons"),
         not_supported=("pcie",), instant_ret=3)
    src = opened()
    assert src.available() == (True, "")
    infos = {m.name for m in src.metrics()}
    missing = src.unavailable_metrics()
    assert "gpu0.energy" not in infos and "nvidia-ml-py" in missing["gpu0.energy"]
    assert "not supported" in missing["gpu0.power.instant"].lower()
    # the older throttle-reasons call stands in for the missing clock-events one
    assert "gpu0.throttle" in infos and "gpu0.throttle" not in missing
    got = by_metric(src.sample(0))
    assert got["gpu0.throttle"][3] == 0x40
    assert decode_throttle(0x40) == ["hw_thermal_slowdown"]
    # PCIe: NotSupported on GPU 1 only
    assert "gpu0.pcie.tx" in infos and "gpu1.pcie.tx" not in infos
    assert "not supported" in missing["gpu1.pcie.rx"].lower()
    assert "gpu0.power.instant" not in got  # never a 0 in place of a missing reading
    assert all(r[3] is not None for r in got.values())


def test_function_not_found_in_driver(fake):
    nvml = fake(gpus=1)
    nvml.state.fail_next = ("energy", nvml.NVMLError(13))
    src = opened()
    assert "driver" in src.unavailable_metrics()["gpu0.energy"]
    assert "gpu0.energy" not in by_metric(src.sample(0))


def test_no_clock_event_function_at_all(fake):
    fake(gpus=1, drop=("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"))
    src = opened()
    assert "gpu0.throttle" in src.unavailable_metrics()
    assert "gpu0.throttle" not in {m.name for m in src.metrics()}


def test_no_nvml_library(fake):
    fake(library=False)
    src = opened()
    ok, why = src.available()
    assert not ok and "libnvidia-ml" in why and "driver" in why
    src.close()  # safe when nvmlInit failed


def test_no_pynvml_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import raises ImportError
    src = opened()
    ok, why = src.available()
    assert not ok and "pip install nvidia-ml-py" in why


def test_no_gpu(fake):
    fake(gpus=0)
    ok, why = opened().available()
    assert not ok and "no NVIDIA GPU" in why


def test_runtime_errors(fake):
    nvml = fake(gpus=1)
    src = opened()
    # a transient error: that reading is skipped this tick, the rest goes on
    nvml.state.fail_next = ("power", nvml.NVMLError(999))
    got = by_metric(src.sample(0))
    assert "gpu0.power.avg" not in got and "gpu0.energy" in got
    nvml.state.fail_next = None
    assert "gpu0.power.avg" in by_metric(src.sample(100 * MS))
    # NotSupported at run time (e.g. after a driver change): dropped and named
    nvml.state.fail_next = ("util", nvml.NVMLError(3))
    src.sample(200 * MS)
    nvml.state.fail_next = None
    assert "gpu0.util" not in by_metric(src.sample(300 * MS))
    assert "gpu0.util" in src.unavailable_metrics()
    # a lost GPU is loud: the sampler drops the source and reports the error
    nvml.state.fail_next = ("mem", nvml.NVMLError(15))
    with pytest.raises(nvml.NVMLError):
        src.sample(400 * MS)


def test_worker_memory_only_for_the_watched_pid(fake):
    nvml = fake(gpus=1)
    src = opened()
    assert "gpu0.worker.mem" not in by_metric(src.sample(0))  # nothing watched
    src.watch_pid(999)
    assert "gpu0.worker.mem" not in by_metric(src.sample(2000 * MS))
    nvml.state.procs[0].append(SimpleNamespace(pid=999, usedGpuMemory=None))  # not available: not 0
    assert "gpu0.worker.mem" not in by_metric(src.sample(4000 * MS))


def test_decode_throttle_names_every_bit():
    assert decode_throttle(0) == []
    assert decode_throttle(sum(THROTTLE_BITS)) == list(THROTTLE_BITS.values())
    assert decode_throttle(0x4 | 0x1000) == ["sw_power_cap", "bit_0x1000"]


def test_registered_and_described(fake):
    from console.telemetry import SOURCES, describe_sources

    assert SOURCES["nvml"].endswith(":NvmlSource")
    fake(gpus=1)
    (desc,) = describe_sources(["nvml"])
    assert desc["available"] is True
    units = {m["name"]: (m["unit"], m["method"]) for m in desc["metrics"]}
    assert units["gpu0.power.avg"] == ("W", "measured") and units["gpu0.energy"] == ("J", "measured")


def _real_nvml_available() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        return True
    except Exception:
        return False


@pytest.mark.skipif(not _real_nvml_available(), reason="no NVIDIA driver here (runs on GPU lab machines)")
def test_real_nvml_device():
    """On a machine with a GPU: every metric is either read with a sane value or named with a reason."""
    import time

    src = NvmlSource()
    src.open()
    try:
        assert src.available() == (True, ""), src.available()
        t0 = time.perf_counter_ns()
        first = by_metric(src.sample(t0))
        time.sleep(0.5)
        second = by_metric(src.sample(time.perf_counter_ns()))
        names = {m.name for m in src.metrics()}
        assert names.isdisjoint(src.unavailable_metrics())
        assert "gpu0.power.avg" in names or "gpu0.power.avg" in src.unavailable_metrics()
        if "gpu0.power.avg" in first:
            assert 0 < first["gpu0.power.avg"][3] < 2000
        if "gpu0.energy" in first and "gpu0.energy" in second:
            assert second["gpu0.energy"][3] >= first["gpu0.energy"][3]
        print("\n[nvml]", src.devices, {k: round(v[3], 2) for k, v in first.items()},
              "unavailable:", src.unavailable_metrics())
    finally:
        src.close()
