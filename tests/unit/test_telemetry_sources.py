"""psutil extensions (for real), amdsmi (fake module), the estimated power model, per-source periods, registry."""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
import types
from collections import namedtuple

import psutil
import pytest

from console.telemetry import SOURCES, MetricInfo, Source, describe_sources, sampler_main
from console.telemetry.amdsmi_source import AmdSmiSource
from console.telemetry.base import Every
from console.telemetry.estimated_source import ENV_TDP, EstimatedPowerSource, lookup_tdp
from console.telemetry.psutil_source import PsutilSource

MS = 1_000_000


def by_metric(rows):
    return {r[2]: r for r in rows}


# ---- psutil, for real


@pytest.mark.parametrize("procfs", [None, False], ids=["auto", "psutil-calls"])
def test_psutil_rates_and_slow_group(procfs):
    src = PsutilSource(procfs=procfs)
    src.open()
    infos = {m.name: m for m in src.metrics()}
    missing = src.unavailable_metrics()
    for metric in ("cpu.load1", "cpu.load5", "cpu.load15", "swap.used", "swap.total"):
        assert metric in infos and infos[metric].period_s == 1.0
    for metric, unit in [("cpu.freq", "MHz"), ("disk.read", "MB/s"), ("disk.write", "MB/s"),
                         ("net.sent", "MB/s"), ("net.recv", "MB/s")]:
        assert (metric in infos and infos[metric].unit == unit) or missing.get(metric), metric
    for name in infos:
        assert name not in missing
    t0 = time.perf_counter_ns()
    time.sleep(0.05)
    first = by_metric(src.sample(t0 + 50 * MS))
    assert "cpu.load1" in first  # the slow group is read at the first tick...
    time.sleep(0.05)  # a CPU % needs a clock tick (10 ms) between readings
    second = by_metric(src.sample(t0 + 150 * MS))
    assert "cpu.load1" not in second and "cpu.util" in second  # ...then once a second
    third = by_metric(src.sample(t0 + 1050 * MS))
    assert "cpu.load1" in third
    for rows in (first, second, third):
        for metric, row in rows.items():
            assert row[4] == infos[metric].unit
            if row[4] in ("MB/s", "1/s"):
                assert row[3] >= 0.0, row
    disks = [m for m in infos if m.startswith("disk.") and m.count(".") == 2]
    if "disk.read" in infos:
        assert any(m.endswith(".read_iops") for m in disks)
        assert not any(m.startswith(("disk.loop", "disk.dm-", "disk.zram")) for m in disks)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="page faults come from /proc")
@pytest.mark.parametrize("procfs", [None, False], ids=["auto", "psutil-calls"])
def test_psutil_worker_page_faults(procfs):
    src = PsutilSource(procfs=procfs)
    src.open()
    src.watch_pid(os.getpid())
    t = time.perf_counter_ns()
    src.sample(t)
    blob = bytearray(64 << 20)  # first touch of 64 MiB: thousands of minor faults
    for i in range(0, len(blob), 4096):
        blob[i] = 1
    got = by_metric(src.sample(time.perf_counter_ns()))
    assert got["worker.faults.minor"][3] > 1000
    assert got["worker.faults.major"][3] >= 0
    assert got["worker.faults.minor"][4] == "1/s"
    assert got["worker.rss"][3] == pytest.approx(psutil.Process().memory_info().rss / 2**30, rel=0.2)
    assert got["worker.cpu"][3] >= 0
    del blob


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="Linux /proc fast path")
def test_procfs_fast_path_agrees_with_psutil():
    fast, slow = PsutilSource(), PsutilSource(procfs=False)
    fast.open()
    slow.open()
    assert fast._fast is not None and slow._fast is None
    assert [m.name for m in fast.metrics()] == [m.name for m in slow.metrics()]
    time.sleep(0.2)
    t = time.perf_counter_ns()
    a, b = by_metric(fast.sample(t)), by_metric(slow.sample(t))
    assert a["mem.total"][3] == pytest.approx(b["mem.total"][3])
    assert a["mem.used"][3] == pytest.approx(b["mem.used"][3], rel=0.05)
    assert set(a) == set(b)
    for metric in a:
        assert a[metric][4] == b[metric][4] and a[metric][5] == "measured"
    fast.watch_pid(os.getpid())
    fast.close()
    fast.close()  # idempotent


def test_every_keeps_its_grid_despite_late_ticks():
    e = Every(1.0, 100 * MS)
    fired = [k for k in range(31) if e.due(k * 100 * MS + (3 - k % 4) * MS)]
    assert fired == [0, 10, 20, 30]
    # a long gap re-anchors instead of bursting
    assert e.due(10_000 * MS) and not e.due(10_100 * MS)


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


# ---- estimated power model

CpuTimes = namedtuple("CpuTimes", "user nice system idle iowait irq softirq steal guest guest_nice")


def _fake_times(monkeypatch, seq):
    it = iter(seq)
    monkeypatch.setattr(psutil, "cpu_times", lambda percpu=False: next(it))


def test_estimated_model_from_env(monkeypatch):
    monkeypatch.setenv(ENV_TDP, "200")
    # 10 s of CPU time elapse, 6 s busy, 4 s idle: u = 0.6
    _fake_times(monkeypatch, [CpuTimes(100, 0, 0, 100, 0, 0, 0, 0, 0, 0),
                              CpuTimes(105, 0, 1, 103, 1, 0, 0, 0, 0, 0)])
    src = EstimatedPowerSource(model_name="Mystery CPU")
    src.open()
    assert src.available() == (True, "")
    infos = {m.name: m for m in src.metrics()}
    assert infos["cpu.power.estimated"].method == "estimated" == infos["mem.power.estimated"].method
    assert "ESTIMATE" in infos["cpu.power.estimated"].description
    got = by_metric(src.sample(123))
    idle = 200 * 0.3
    assert got["cpu.power.estimated"][3] == pytest.approx(idle + (200 - idle) * 0.6)
    assert got["cpu.power.estimated"][5] == "estimated" and got["cpu.power.estimated"][1] == "estimated"
    mem_gib = psutil.virtual_memory().total / 2**30
    assert got["mem.power.estimated"][3] == pytest.approx(0.375 * mem_gib)


def test_estimated_unknown_cpu_is_unavailable(monkeypatch):
    monkeypatch.delenv(ENV_TDP, raising=False)
    src = EstimatedPowerSource(model_name="AMD EPYC")
    src.open()
    ok, why = src.available()
    assert not ok and ENV_TDP in why


def test_estimated_bad_env(monkeypatch):
    monkeypatch.setenv(ENV_TDP, "lots")
    src = EstimatedPowerSource(model_name="AMD EPYC 9654 96-Core Processor")
    src.open()
    ok, why = src.available()
    assert not ok and "lots" in why


def test_estimated_table_and_sockets(monkeypatch):
    monkeypatch.delenv(ENV_TDP, raising=False)
    assert lookup_tdp("Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz") == 205  # longest match, not "6248"
    assert lookup_tdp("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz") == 150
    assert lookup_tdp("AMD EPYC 9654 96-Core Processor") == 360
    assert lookup_tdp("AMD EPYC") is None
    src = EstimatedPowerSource(model_name="AMD EPYC 9654 96-Core Processor", sockets=2)
    src.open()
    assert src.tdp_w == 720 and "2 socket" in src.tdp_origin
    monkeypatch.setenv(ENV_TDP, "999")
    by_caller = EstimatedPowerSource(tdp_w=150.0, model_name="x")
    by_caller.open()
    assert by_caller.tdp_w == 150.0 and by_caller.tdp_origin == "set by the caller"  # the argument wins


# ---- per-source period in the sampler


class _Fast(Source):
    name = "fast"

    def metrics(self):
        return [MetricInfo("fast.x", "1", "every tick")]

    def sample(self, t_ns):
        return [(t_ns, self.name, "fast.x", 0.0, "1", "measured")]


class _Slow(Source):
    name = "slow1hz"
    period_s = 0.5

    def metrics(self):
        return [MetricInfo("slow.x", "1", "twice a second", period_s=0.5)]

    def sample(self, t_ns):
        return [(t_ns, self.name, "slow.x", 0.0, "1", "measured")]


def test_sampler_honours_source_period(monkeypatch):
    monkeypatch.setitem(SOURCES, "fast", _Fast)
    monkeypatch.setitem(SOURCES, "slow1hz", _Slow)
    parent, child = multiprocessing.Pipe(duplex=True)
    th = threading.Thread(target=sampler_main, args=(child, 20.0, ["fast", "slow1hz"]), daemon=True)
    th.start()
    rows = []
    try:
        first = parent.recv()
        assert {d["name"]: d["period_s"] for d in first["sources"]} == {"fast": None, "slow1hz": 0.5}
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and sum(r[2] == "slow.x" for r in rows) < 4:
            if parent.poll(0.1):
                rows += parent.recv()["rows"]
        parent.send({"cmd": "stop"})
        th.join(3)
    finally:
        parent.close()
    slow = [r[0] for r in rows if r[2] == "slow.x"]
    fast = [r[0] for r in rows if r[2] == "fast.x"]
    gaps = [(b - a) / 1e6 for a, b in zip(slow, slow[1:], strict=False)]
    assert len(gaps) >= 3 and all(440 < g < 700 for g in gaps), gaps
    assert len(fast) >= 8 * len(slow) - 10


# ---- registry: every source says what it is and why not


def test_every_source_is_registered_and_described():
    assert set(SOURCES) >= {"psutil", "nvml", "rapl", "amdsmi", "estimated"}
    assert list(SOURCES)[0] == "psutil"
    for desc in describe_sources():
        assert set(desc) >= {"name", "available", "reason", "metrics", "unavailable_metrics", "period_s"}
        assert desc["available"] or desc["reason"], desc["name"]  # unavailable always says why
        for m in desc["metrics"]:
            assert set(m) >= {"name", "unit", "method", "description"}
            assert m["method"] in ("measured", "integrated", "estimated")
