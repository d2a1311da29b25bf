"""Storage counters around a measurement: this process's bytes from storage, the device's reads, iowait.

Three sources, each for what it can say: `/proc/self/io` read_bytes counts what this process made the kernel
fetch from storage (page-cache hits excluded — so it also tells a cold read from a warm one); the device's
completed reads (psutil's per-disk counters for the disk holding the data, else every disk) give IOPS;
`/proc/stat`'s iowait share is the CPU time the whole machine spent idle waiting on I/O. Whatever a platform
lacks is None, and the method fields say which source gave each figure.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any


@dataclass
class IoSnapshot:
    t_ns: int
    process: dict[str, int] | None  # /proc/self/io
    cpu: list[int] | None  # /proc/stat aggregate "cpu" jiffies
    disk: tuple[int, int] | None  # (reads completed, bytes read) of the device, or of every disk
    disk_name: str | None  # the device, or None for "every disk"


# ---- Public API
def snapshot(directory: str | os.PathLike[str]) -> IoSnapshot:
    disk, name = _disk_reads(device_name(directory))
    return IoSnapshot(time.perf_counter_ns(), _process_io(), _cpu_times(), disk, name)


def delta(before: IoSnapshot, after: IoSnapshot) -> dict[str, Any]:
    """Rates over the time between two snapshots, with the method of each."""
    seconds = (after.t_ns - before.t_ns) / 1e9
    out: dict[str, Any] = {"disk_read_mb_s": None, "storage_bytes": None, "iops": None, "iowait": None}
    if before.process and after.process and seconds > 0:
        out["storage_bytes"] = after.process["read_bytes"] - before.process["read_bytes"]
        out["disk_read_mb_s"] = out["storage_bytes"] / 1e6 / seconds
        out["read_calls"] = after.process["syscr"] - before.process["syscr"]
    if before.disk and after.disk and seconds > 0:
        out["iops"] = (after.disk[0] - before.disk[0]) / seconds
        out["device_read_mb_s"] = (after.disk[1] - before.disk[1]) / 1e6 / seconds
    if before.cpu and after.cpu:
        spent = [b - a for a, b in zip(before.cpu, after.cpu, strict=False)]
        total = sum(spent)
        out["iowait"] = spent[4] / total if total > 0 and len(spent) > 4 else None
    where = after.disk_name or "every disk (the data's device was not found)"
    out["io_method"] = (
        "disk_read_mb_s: this process's bytes fetched from storage (/proc/self/io read_bytes, page-cache hits "
        f"excluded) per second; iops: reads completed by {where} per second (psutil disk counters, whole "
        "device, other processes included); iowait: share of all CPU time idle waiting on I/O (/proc/stat)")
    return out


def device_name(directory: str | os.PathLike[str]) -> str | None:
    """The block device holding `directory` as the disk counters name it (Linux sysfs); None when unknown."""
    try:
        dev = os.stat(directory).st_dev
        link = os.readlink(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    except (OSError, AttributeError):
        return None
    return os.path.basename(link)


# ---- Private API
def _process_io() -> dict[str, int] | None:
    try:
        with open("/proc/self/io", encoding="ascii") as handle:
            pairs = (line.split(":", 1) for line in handle if ":" in line)
            values = {key.strip(): int(value) for key, value in pairs}
    except (OSError, ValueError):
        return None
    return values if "read_bytes" in values and "syscr" in values else None


def _cpu_times() -> list[int] | None:
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            first = handle.readline().split()
    except OSError:
        return None
    if not first or first[0] != "cpu":
        return None
    return [int(v) for v in first[1:8]]  # user nice system idle iowait irq softirq (steal/guest left out)


def _disk_reads(device: str | None) -> tuple[tuple[int, int] | None, str | None]:
    """(reads completed, bytes read) of `device`, or of every disk when it is not counted; and whose they are."""
    try:
        import psutil

        if device:
            counters = psutil.disk_io_counters(perdisk=True) or {}
            if device in counters:
                return (counters[device].read_count, counters[device].read_bytes), device
        total = psutil.disk_io_counters(perdisk=False)
    except (ImportError, OSError, RuntimeError):
        return None, None
    return ((total.read_count, total.read_bytes) if total else None), None
