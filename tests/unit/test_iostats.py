"""engines.iostats: storage counters around a measurement, turned into rates that say where they came from."""

import sys

import pytest

from engines import iostats
from engines.iostats import IoSnapshot


def test_rates_between_two_snapshots():
    before = IoSnapshot(0, {"read_bytes": 1_000_000, "syscr": 10}, [100, 0, 50, 800, 10, 0, 0], (100, 0), "vda")
    after = IoSnapshot(2_000_000_000, {"read_bytes": 9_000_000, "syscr": 30}, [200, 0, 100, 1500, 60, 0, 0],
                       (700, 8_000_000), "vda")
    out = iostats.delta(before, after)
    assert out["storage_bytes"] == 8_000_000 and out["disk_read_mb_s"] == pytest.approx(4.0)
    assert out["iops"] == pytest.approx(300.0) and out["device_read_mb_s"] == pytest.approx(4.0)
    assert out["iowait"] == pytest.approx(50 / 900) and out["read_calls"] == 20
    assert "reads completed by vda" in out["io_method"]


def test_what_a_platform_lacks_is_none():
    blank = IoSnapshot(0, None, None, None, None)
    out = iostats.delta(blank, IoSnapshot(10**9, None, None, None, None))
    assert out["disk_read_mb_s"] is None and out["iops"] is None and out["iowait"] is None
    assert "every disk" in out["io_method"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and sysfs are Linux's")
def test_a_snapshot_on_linux_reads_proc(tmp_path):
    snap = iostats.snapshot(tmp_path)
    assert snap.process is not None and "read_bytes" in snap.process
    assert snap.cpu is not None and len(snap.cpu) == 7
