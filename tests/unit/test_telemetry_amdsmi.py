"""AMD GPUs through AMD SMI, with a fake ``amdsmi`` module: what a board has, what it lacks and why."""

from __future__ import annotations

import sys
import types

import pytest

from console.telemetry.amdsmi_source import AmdSmiSource
from console.telemetry.catalog import undeclared

MS = 1_000_000


def by_metric(rows):
    return {r[2]: r for r in rows}


# ---- amdsmi, through a fake module


def make_fake_amdsmi(power_avg="N/A"):
    m = types.ModuleType("amdsmi")

    class AmdSmiLibraryException(Exception):
        pass

    m.AmdSmiLibraryException = AmdSmiLibraryException
    m.AmdSmiInitFlags = types.SimpleNamespace(INIT_AMD_GPUS=2)
    m.AmdSmiMemoryType = types.SimpleNamespace(VRAM=0)
    m.AmdSmiTemperatureType = types.SimpleNamespace(EDGE=0, HOTSPOT=1)
    m.AmdSmiTemperatureMetric = types.SimpleNamespace(CURRENT=0)
    m.AmdSmiClkType = types.SimpleNamespace(GFX=0)
    m.state = types.SimpleNamespace(energy=1000, shut=False)
    m.amdsmi_init = lambda flags=None: None
    m.amdsmi_shut_down = lambda: setattr(m.state, "shut", True)
    m.amdsmi_get_processor_handles = lambda: ["h0"]
    m.amdsmi_get_gpu_asic_info = lambda h: {"market_name": "AMD Instinct MI300X"}
    m.amdsmi_get_gpu_activity = lambda h: {"gfx_activity": 88, "umc_activity": 40, "mm_activity": "N/A"}
    m.amdsmi_get_power_info = lambda h: {"current_socket_power": 612, "average_socket_power": power_avg,
                                         "power_limit": 750}
    m.amdsmi_get_gpu_memory_usage = lambda h, kind: 20 << 30
    m.amdsmi_get_gpu_memory_total = lambda h, kind: 192 << 30
    m.amdsmi_get_energy_count = lambda h: {"energy_accumulator": m.state.energy, "counter_resolution": 15.3,
                                           "timestamp": 0}

    def temp(h, sensor, metric):
        if sensor == 0:
            raise AmdSmiLibraryException("AMDSMI_STATUS_NOT_SUPPORTED")  # no edge sensor on MI300
        return 71

    m.amdsmi_get_temp_metric = temp
    m.amdsmi_get_clock_info = lambda h, kind: {"clk": 2100, "min_clk": 500, "max_clk": 2100}
    return m


def test_amdsmi_fake(monkeypatch):
    fake = make_fake_amdsmi()
    monkeypatch.setitem(sys.modules, "amdsmi", fake)
    src = AmdSmiSource()
    src.open()
    assert src.available() == (True, "")
    infos = {m.name: m for m in src.metrics()}
    assert set(infos) == {"amdgpu0.util", "amdgpu0.mem.used", "amdgpu0.mem.total", "amdgpu0.power.instant",
                          "amdgpu0.energy", "amdgpu0.clock.gfx", "amdgpu0.temp"}
    assert undeclared(AmdSmiSource, list(infos.values())) == []  # every metric has its metadata
    assert "junction" in infos["amdgpu0.temp"].description  # edge missing: hotspot used, and said so
    assert "N/A" in src.unavailable_metrics()["amdgpu0.power.avg"]
    got = by_metric(src.sample(0))
    assert got["amdgpu0.power.instant"][3] == 612.0 and got["amdgpu0.power.instant"][4] == "W"
    assert got["amdgpu0.energy"][3] == pytest.approx(1000 * 15.3 / 1e6)
    assert got["amdgpu0.mem.used"][3] == 20.0 and got["amdgpu0.util"][3] == 88.0
    assert got["amdgpu0.temp"][3] == 71.0
    fake.state.energy = 2000
    later = by_metric(src.sample(100 * MS))
    assert "amdgpu0.temp" not in later  # slow group: once a second
    assert later["amdgpu0.energy"][3] == pytest.approx(2000 * 15.3 / 1e6)
    src.close()
    assert fake.state.shut


def test_amdsmi_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    src = AmdSmiSource()
    src.open()
    ok, why = src.available()
    assert not ok and "pip install amdsmi" in why


def test_amdsmi_no_gpu(monkeypatch):
    fake = make_fake_amdsmi()
    fake.amdsmi_get_processor_handles = lambda: []
    monkeypatch.setitem(sys.modules, "amdsmi", fake)
    src = AmdSmiSource()
    src.open()
    assert src.available() == (False, "AMD SMI sees no AMD GPU")
