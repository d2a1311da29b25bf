"""The psutil source, for real: metrics and units, per-core CPU, rates and the slow group, the watched worker
(its CPU, memory and page faults; gone, zombie, missing), and the /proc fast path agreeing with the psutil calls."""

from __future__ import annotations

import mmap
import os
import re
import subprocess
import sys
import time

import psutil
import pytest

from console.telemetry.catalog import undeclared
from console.telemetry.psutil_source import PsutilSource

MS = 1_000_000


def by_metric(rows):
    return {r[2]: r for r in rows}


@pytest.fixture
def source():
    src = PsutilSource()
    src.open()
    yield src
    src.close()


# ---- PsutilSource


def test_psutil_metrics_and_units(source):
    infos = {m.name: m for m in source.metrics()}
    assert infos["cpu.util"].unit == "%"
    assert infos["mem.used"].unit == "GiB" and infos["mem.total"].unit == "GiB"
    assert infos["worker.rss"].unit == "GiB" and infos["worker.cpu"].unit == "%"
    assert all(m.method == "measured" for m in infos.values())
    assert source.available() == (True, "")
    # what this machine lacks is named with a reason, never reported as 0
    assert all(isinstance(why, str) and why for why in source.unavailable_metrics().values())
    assert not set(source.unavailable_metrics()) & set(infos)

    time.sleep(0.05)
    t = time.perf_counter_ns()
    rows = source.sample(t)
    for r in rows:
        assert len(r) == 6
        assert r[0] == t and r[1] == "psutil" and r[5] == "measured"
        assert r[4] == infos[r[2]].unit
        assert isinstance(r[3], float)
    got = by_metric(rows)
    assert "worker.rss" not in got and "worker.cpu" not in got  # nothing watched
    assert 0 < got["mem.used"][3] <= got["mem.total"][3]
    assert abs(got["mem.total"][3] - psutil.virtual_memory().total / 2**30) < 1e-6


def test_psutil_per_core_count_and_range(source):
    ncpu = psutil.cpu_count()
    cores = [m.name for m in source.metrics() if re.fullmatch(r"cpu\d+\.util", m.name)]
    assert cores == [f"cpu{i}.util" for i in range(ncpu)]
    for _ in range(3):
        time.sleep(0.05)
        rows = source.sample(time.perf_counter_ns())
        utils = [r for r in rows if re.fullmatch(r"cpu\d*\.util", r[2])]
        assert len(utils) == ncpu + 1
        assert all(0.0 <= r[3] <= 100.0 for r in utils)


def test_psutil_watch_self(source):
    source.watch_pid(os.getpid())
    time.sleep(0.05)
    got = by_metric(source.sample(time.perf_counter_ns()))
    rss = psutil.Process().memory_info().rss / 2**30
    assert got["worker.rss"][3] == pytest.approx(rss, rel=0.5)
    assert got["worker.cpu"][3] >= 0.0
    source.watch_pid(None)
    assert "worker.rss" not in by_metric(source.sample(time.perf_counter_ns()))


def test_psutil_watched_child_disappears(source):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        source.watch_pid(child.pid)
        time.sleep(0.05)
        got = by_metric(source.sample(time.perf_counter_ns()))
        assert got["worker.rss"][3] > 0 and "worker.cpu" in got
        child.kill()
        child.wait(5)
        for _ in range(2):  # no exception, and it stays gone
            time.sleep(0.05)  # CPU % needs a clock tick (10 ms) to pass between readings
            got = by_metric(source.sample(time.perf_counter_ns()))
            assert "worker.rss" not in got and "worker.cpu" not in got
            assert "cpu.util" in got
    finally:
        child.kill()
        child.wait(5)


def test_psutil_unreaped_child_is_gone_too(source):
    """A worker that exited but is not yet reaped by its parent (a zombie) is not reported."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        source.watch_pid(child.pid)
        deadline = time.monotonic() + 10
        while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "worker.rss" not in by_metric(source.sample(time.perf_counter_ns()))
    finally:
        child.wait(5)


def test_psutil_watch_missing_pid(source):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(5)
    source.watch_pid(child.pid)  # already gone: no exception, nothing reported
    assert "worker.rss" not in by_metric(source.sample(time.perf_counter_ns()))




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
    assert undeclared(PsutilSource, list(infos.values())) == []  # every metric has its metadata
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
    # first touch of 64 MiB in 4 KiB pages: thousands of minor faults. A fresh mapping, kept out of transparent huge
    # pages: with THP "always" the kernel may back it with 2 MiB pages (32 faults), and whether it does depends on
    # how fragmented memory is by then — the test failed after a long suite, passed alone.
    blob = mmap.mmap(-1, 64 << 20)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        blob.madvise(mmap.MADV_NOHUGEPAGE)
    for i in range(0, len(blob), mmap.PAGESIZE):
        blob[i] = 1
    got = by_metric(src.sample(time.perf_counter_ns()))
    assert got["worker.faults.minor"][3] > 1000
    assert got["worker.faults.major"][3] >= 0
    assert got["worker.faults.minor"][4] == "1/s"
    assert got["worker.rss"][3] == pytest.approx(psutil.Process().memory_info().rss / 2**30, rel=0.2)
    assert got["worker.cpu"][3] >= 0
    blob.close()


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="Linux /proc fast path")
def test_procfs_fast_path_agrees_with_psutil():
    fast, slow = PsutilSource(), PsutilSource(procfs=False)
    fast.open()
    slow.open()
    assert fast.fast_path and not slow.fast_path
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
