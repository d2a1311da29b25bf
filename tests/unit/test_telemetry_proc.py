"""The /proc fast path (console.telemetry.procfs): counters read through descriptors opened once, checked
against psutil's own reading of the same files."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from console.telemetry.procfs import ProcFile, ProcfsReader, is_loopback

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="Linux /proc only")


def _disks() -> list[str]:
    return sorted(d for d in (psutil.disk_io_counters(perdisk=True) or {})
                  if os.path.exists(f"/sys/block/{d}/device"))


@pytest.fixture
def reader():
    r = ProcfsReader(_disks(), net=True)
    yield r
    r.close()


def test_a_proc_file_is_reread_fresh_without_reopening(tmp_path):
    f = ProcFile("/proc/self/stat")
    try:
        fd = f.fd
        assert f.read().startswith(str(os.getpid()).encode())
        assert f.read() and f.fd == fd
    finally:
        f.close()
        f.close()  # idempotent
    big = tmp_path / "big"
    big.write_bytes(b"x" * 200_000)  # longer than one pread: read to the end
    g = ProcFile(str(big))
    try:
        assert len(g.read()) == 200_000
    finally:
        g.close()


def test_cpu_counters_match_psutil(reader):
    cpu = reader.cpu()
    assert reader.cores == list(range(psutil.cpu_count()))
    assert set(cpu) == {-1, *reader.cores}
    times = psutil.cpu_times()
    tick = os.sysconf("SC_CLK_TCK")
    busy, total = cpu[-1]
    assert 0 <= busy <= total
    assert total / tick == pytest.approx(sum(times) - times.guest - times.guest_nice, rel=0.01)


def test_memory_disks_and_network_match_psutil(reader):
    total, used = reader.memory()
    vm = psutil.virtual_memory()
    assert total == pytest.approx(vm.total / 2**30)
    assert used == pytest.approx((vm.total - vm.available) / 2**30, rel=0.05)
    disks = reader.disks()
    assert set(disks) == set(_disks())
    for name, (read_b, write_b, reads, writes) in disks.items():
        c = psutil.disk_io_counters(perdisk=True)[name]
        assert 0 <= read_b <= c.read_bytes and 0 <= reads <= c.read_count  # psutil read the same file later
        assert 0 <= write_b <= c.write_bytes and 0 <= writes <= c.write_count
    sent, recv = reader.net()
    nics = psutil.net_io_counters(pernic=True)
    assert recv <= sum(c.bytes_recv for n, c in nics.items() if not is_loopback(n))
    assert sent >= 0


def test_watched_worker_counters(reader):
    assert reader.worker() is None  # nobody watched
    assert reader.watch(os.getpid())
    cpu_s, minor, major, rss = reader.worker()
    me = psutil.Process()
    assert cpu_s == pytest.approx(sum(me.cpu_times()[:2]), abs=0.1)
    assert minor > 0 and major >= 0
    assert rss == pytest.approx(me.memory_info().rss / 2**30, rel=0.2)
    reader.watch(None)
    assert reader.worker() is None


def test_a_worker_that_is_gone_or_a_zombie_is_none(reader):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        assert reader.watch(child.pid)
        deadline = time.monotonic() + 10
        while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.02)
        assert reader.worker() is None  # exited, not yet reaped
    finally:
        child.wait(5)
    assert reader.worker() is None  # reaped
    assert not reader.watch(child.pid)  # already gone: cannot be followed


def test_loopback_names():
    assert is_loopback("lo") and is_loopback("lo0")
    assert not is_loopback("eth0") and not is_loopback("lowpan0")
