"""Storage telemetry (console.telemetry.diskstats, nvme_health): per-device MB/s, IOPS, queue depth and await from
/proc/diskstats, the page cache from /proc/meminfo, NVMe temperature / throttling / wear — checked against the
arithmetic of hand-written dual-NVMe fixtures and this VM's captured files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from console.telemetry import catalog, nvme_health, registry
from console.telemetry.diskstats import StorageSource, parse_diskstats, parse_page_cache

FIX = Path(__file__).parent / "fixtures" / "storage_telemetry"
T0 = 1_000_000_000_000


def build_sys(root: Path) -> Path:
    """A sysfs tree for the dual-NVMe fixture: two NVMe disks (nvme0n1 partitioned), dm-0 over nvme1n1, loop0;
    nvme0's temperature under the controller, nvme1's only in /sys/class/hwmon."""
    sys = root / "sys"
    for disk in ("nvme0n1", "nvme1n1"):
        (sys / "block" / disk / "device").mkdir(parents=True)
        (sys / "block" / disk / "queue").mkdir()
        (sys / "block" / disk / "queue" / "rotational").write_text("0\n")
    (sys / "block" / "nvme0n1" / "device" / "model").write_text("Lab NVMe 2TB\n")
    (sys / "block" / "loop0" / "loop").mkdir(parents=True)
    (sys / "block" / "dm-0" / "slaves").mkdir(parents=True)
    os.symlink(sys / "block" / "nvme1n1", sys / "block" / "dm-0" / "slaves" / "nvme1n1")
    (sys / "class" / "nvme" / "nvme0" / "hwmon2").mkdir(parents=True)
    (sys / "class" / "nvme" / "nvme0" / "hwmon2" / "temp1_input").write_text("41850\n")
    (sys / "class" / "nvme" / "nvme1").mkdir(parents=True)
    hwmon = sys / "class" / "hwmon" / "hwmon5"
    hwmon.mkdir(parents=True)
    (hwmon / "name").write_text("nvme\n")
    (hwmon / "temp1_input").write_text("38000\n")
    os.symlink(sys / "class" / "nvme" / "nvme1", hwmon / "device")
    return sys


def build_proc(root: Path, reading: int = 0, meminfo: str = "dual_nvme_meminfo.txt",
               prefix: str = "dual_nvme") -> Path:
    proc = root / "proc"
    proc.mkdir(exist_ok=True)
    shutil.copyfile(FIX / meminfo, proc / "meminfo")
    set_reading(proc, reading, prefix)
    return proc


def set_reading(proc: Path, reading: int, prefix: str = "dual_nvme") -> None:
    # Rewritten in place (same inode): the source re-reads the descriptor it opened, as it does /proc.
    (proc / "diskstats").write_bytes((FIX / f"{prefix}_diskstats_{reading}.txt").read_bytes())


def fake_smart(logs: dict[str, str | None]):
    """A runner that answers `nvme smart-log /dev/nvmeN -o json` from fixture files; None: permission denied."""
    calls = []

    def run(argv):
        calls.append(argv)
        name = logs.get(os.path.basename(argv[2]))
        if name is None:
            return 1, "", "open: Permission denied\n"
        return 0, (FIX / name).read_text(), ""

    run.calls = calls
    return run


@pytest.fixture
def opened(tmp_path, monkeypatch):
    sys, proc = build_sys(tmp_path), build_proc(tmp_path)
    monkeypatch.setattr("console.telemetry.diskstats.time.perf_counter_ns", lambda: T0)
    source = StorageSource(str(proc), str(sys), smart=fake_smart({"nvme0": "smart_log_nvme0_cli1.json",
                                                                   "nvme1": "smart_log_nvme1_cli2.json"}))
    source.open()
    yield source, proc
    source.close()


def by_metric(rows):
    return {metric: (value, unit, method) for _t, _s, metric, value, unit, method in rows}


def test_rates_queue_depth_and_await_follow_the_kernels_counters(opened):
    source, proc = opened
    set_reading(proc, 1)
    got = by_metric(source.sample(T0 + 1_000_000_000))
    assert got["storage.nvme0n1.read_mb_s"] == (pytest.approx(204.8), "MB/s", "measured")
    assert got["storage.nvme0n1.write_mb_s"][0] == pytest.approx(1.048576)
    assert got["storage.nvme0n1.read_iops"][0] == pytest.approx(2000) and got["storage.nvme0n1.write_iops"][0] == 100
    assert got["storage.nvme0n1.queue_depth"] == (pytest.approx(4.1), "requests", "measured")
    assert got["storage.nvme0n1.await_ms"] == (pytest.approx(4100 / 2100), "ms", "measured")
    assert got["storage.nvme0n1.busy"][0] == pytest.approx(95.0)
    # idle disk: 0 MB/s and an empty queue are measurements; await has no request to average, so it is absent
    assert got["storage.nvme1n1.read_mb_s"][0] == 0.0 and got["storage.nvme1n1.queue_depth"][0] == 0.0
    assert "storage.nvme1n1.await_ms" not in got
    # partitions are counted on their disk; an idle loop device is not the data's device
    assert not any(m.startswith(("storage.nvme0n1p", "storage.loop0")) for m in got)


def test_a_virtual_device_appears_once_it_moves_data(opened):
    source, proc = opened
    set_reading(proc, 1)
    first = by_metric(source.sample(T0 + 1_000_000_000))
    assert "storage.dm-0.read_mb_s" not in first  # it just moved: this reading primes its rates
    set_reading(proc, 2)
    second = by_metric(source.sample(T0 + 2_000_000_000))
    assert second["storage.dm-0.read_mb_s"][0] == pytest.approx((1_212_000 - 808_192) * 512 / 1e6)
    assert second["storage.dm-0.await_ms"][0] == pytest.approx(2.0)
    assert second["storage.nvme1n1.read_iops"][0] == 400 and "storage.nvme0n1.await_ms" not in second
    assert "storage.loop0.read_mb_s" not in second


def test_page_cache_and_nvme_health(opened):
    source, proc = opened
    got = by_metric(source.sample(T0 + 500_000_000))
    assert got["pagecache.dirty"] == (pytest.approx(524288 * 1024 / 1e6), "MB", "measured")
    assert got["pagecache.writeback"][0] == pytest.approx(1.048576)
    assert got["pagecache.cached"] == (pytest.approx(8.0), "GiB", "measured")
    assert got["storage.nvme0.temperature"] == (pytest.approx(41.85), "°C", "measured")
    assert got["storage.nvme1.temperature"][0] == pytest.approx(38.0)  # found through /sys/class/hwmon
    assert got["storage.nvme0.throttle_events"] == (8.0, "events", "measured")
    assert got["storage.nvme0.throttle_s"][0] == 124.0 and got["storage.nvme0.percentage_used"][0] == 3.0
    assert got["storage.nvme1.percentage_used"][0] == 12.0 and got["storage.nvme1.throttle_events"][0] == 0.0
    # slow groups are throttled: temperature every 2 s, the smart log every 10 s
    again = by_metric(source.sample(T0 + 1_000_000_000))
    assert "storage.nvme0.temperature" not in again and "storage.nvme0.throttle_events" not in again


def test_every_reported_metric_is_declared_and_the_source_is_registered(opened):
    source, _ = opened
    infos = source.metrics()
    assert catalog.undeclared(StorageSource, infos) == []
    names = {m.name for m in infos}
    assert {"storage.nvme0n1.queue_depth", "storage.nvme1n1.await_ms", "storage.nvme0.temperature",
            "storage.nvme1.throttle_events", "pagecache.dirty"} <= names
    assert "storage.<virtual>.read_mb_s" in names and not any("loop0" in n for n in names)
    assert registry.load_source_class("storage") is StorageSource
    assert source.unavailable_metrics() == {}
    assert catalog.current().resolve("storage.nvme0.temperature").spec.plot == "temperature"


def test_without_permission_or_tool_each_health_figure_says_why(tmp_path, monkeypatch):
    sys, proc = build_sys(tmp_path), build_proc(tmp_path)
    source = StorageSource(str(proc), str(sys), smart=fake_smart({"nvme0": "smart_log_nvme0_cli1.json"}))
    source.open()
    why = source.unavailable_metrics()
    assert "Permission denied" in why["storage.nvme1.throttle_events"] and "root" in why["storage.nvme1.percentage_used"]
    assert "storage.nvme0.throttle_events" not in why
    rows = by_metric(source.sample(T0))
    assert "storage.nvme1.throttle_events" not in rows  # never a 0 for what could not be read
    source.close()
    monkeypatch.setattr(nvme_health.shutil, "which", lambda _name: None)
    source = StorageSource(str(proc), str(sys))
    source.open()
    assert "nvme-cli" in source.unavailable_metrics()["storage.nvme0.percentage_used"]
    source.close()


def test_this_vms_captured_files_a_virtio_disk_and_no_nvme(tmp_path, monkeypatch):
    proc = build_proc(tmp_path, 0, "vm_meminfo.txt", prefix="vm")
    sys = tmp_path / "sys"
    with_device = set((FIX / "vm_sys_block_with_device.txt").read_text().split())
    for name in (FIX / "vm_sys_block.txt").read_text().split():
        (sys / "block" / name).mkdir(parents=True)
        if name in with_device:
            (sys / "block" / name / "device").mkdir()
    monkeypatch.setattr("console.telemetry.diskstats.time.perf_counter_ns", lambda: T0)
    source = StorageSource(str(proc), str(sys))
    source.open()
    set_reading(proc, 1, "vm")
    got = by_metric(source.sample(T0 + 1_000_000_000))
    before = parse_diskstats((FIX / "vm_diskstats_0.txt").read_bytes())["vda"]
    after = parse_diskstats((FIX / "vm_diskstats_1.txt").read_bytes())["vda"]
    assert got["storage.vda.read_mb_s"][0] == pytest.approx((after[1] - before[1]) * 512 / 1e6)
    assert got["storage.vda.queue_depth"][0] == pytest.approx((after[8] - before[8]) / 1e3)
    assert not any(m.startswith(("storage.loop", "storage.zram")) for m in got)
    assert "no NVMe controller" in source.unavailable_metrics()["storage.nvme*.temperature"]
    assert "pagecache.cached" in got
    source.close()


def test_parsers_take_the_documented_formats():
    stats = parse_diskstats(b"   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\n 8 1 sda1 1 2\n")
    assert stats == {"sda": (1, 3, 4, 5, 7, 8, 9, 10, 11)}  # kernel < 4.18: 11 fields; a short line is skipped
    assert parse_page_cache(b"Cached: 4 kB\nDirty: 2 kB\n") == {"dirty": 2048, "cached": 4096}
    assert nvme_health.controller_of("nvme0n1p2") == "nvme0" and nvme_health.controller_of("nvme3c1n1") == "nvme3"
    assert nvme_health.controller_of("sda") is None
    log, why = nvme_health.parse_smart_log(json.loads((FIX / "smart_log_nvme0_cli1.json").read_text()))
    assert log["temperature_c"] == pytest.approx(41.85) and why == ""
    assert nvme_health.parse_smart_log({"unrelated": 1})[0] is None


def test_a_missing_proc_makes_the_source_unavailable_with_the_reason(tmp_path):
    source = StorageSource(str(tmp_path / "nowhere"), str(tmp_path / "sys"))
    source.open()
    ok, why = source.available()
    assert not ok and "diskstats" in why
    source.close()


@pytest.mark.skipif(not os.path.exists("/proc/diskstats"), reason="Linux /proc only")
def test_the_sampler_process_streams_them_on_the_monotonic_clock():
    import threading
    import time

    from console.telemetry import Sampler

    rows, got = [], threading.Event()

    def on_samples(batch):
        rows.extend(batch)
        if any(r[2].endswith(".queue_depth") for r in rows):
            got.set()

    before = time.perf_counter_ns()
    sampler = Sampler(10.0, ["storage"], on_samples=on_samples)
    sampler.start()
    try:
        assert got.wait(20), f"no storage rows from the sampler: {sampler.sources}"
    finally:
        sampler.stop()
    after = time.perf_counter_ns()
    assert all(before <= r[0] <= after and r[1] == "storage" for r in rows)
    assert {"pagecache.dirty", "pagecache.cached"} <= {r[2] for r in rows}
    assert sampler.sources[0]["name"] == "storage" and sampler.sources[0]["available"]
