"""The doctor's readings of /proc and /sys, and its helper-program runner: plain text in, plain data out.

Split from `engines.doctor` (which judges the readings). `root` moves /proc and /sys (tests point it at a tmp_path
tree); a file that is missing or unreadable reads as None or empty, never as a guessed value. Nothing is written.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from typing import Any

from engines.block_device import read_sysfs


def snapshot(root: str) -> dict[str, Any]:
    """The counters read twice: per-CPU times, swap traffic, throttle counts."""
    return {"stat": proc_stat(root), "vmstat": vmstat(root), "throttle": throttle_counts(root)}


def proc_stat(root: str) -> dict[str, list[int]] | None:
    text = read_sysfs(os.path.join(root, "proc/stat"))
    if text is None:
        return None
    found = {}
    for line in text.splitlines():
        if line.startswith("cpu"):
            name, *fields = line.split()
            try:
                found[name] = [int(x) for x in fields]
            except ValueError:
                continue
    return found or None


def cpu_busy(first: dict[str, list[int]] | None, second: dict[str, list[int]] | None) -> dict[int, float] | None:
    """Per-CPU busy % between two /proc/stat readings (busy = everything but idle and iowait)."""
    if not first or not second:
        return None
    busy = {}
    for name, a in first.items():
        b = second.get(name)
        if name == "cpu" or not b or len(a) < 5 or len(b) < 5 or not name[3:].isdigit():
            continue
        total = sum(b) - sum(a)
        idle = (b[3] - a[3]) + (b[4] - a[4])
        if total > 0:
            busy[int(name[3:])] = round(100.0 * (total - idle) / total, 1)
    return busy or None


def vmstat(root: str) -> dict[str, int]:
    found = {}
    for line in (read_sysfs(os.path.join(root, "proc/vmstat")) or "").splitlines():
        key, _, value = line.partition(" ")
        if key in ("pswpin", "pswpout") and value.strip().isdigit():
            found[key] = int(value)
    return found


def meminfo(root: str) -> dict[str, int]:
    found = {}
    for line in (read_sysfs(os.path.join(root, "proc/meminfo")) or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            found[key] = int(parts[0]) * (1024 if len(parts) > 1 and parts[1] == "kB" else 1)
    return found


def throttle_counts(root: str) -> dict[str, int]:
    found = {}
    pattern = os.path.join(root, "sys/devices/system/cpu/cpu[0-9]*/thermal_throttle/*_throttle_count")
    for path in glob.glob(pattern):
        value = read_sysfs(path)
        if value is not None and value.isdigit():
            found[os.path.relpath(path, os.path.join(root, "sys/devices/system/cpu"))] = int(value)
    return found


def thermal_zones(root: str) -> list[dict[str, Any]]:
    zones = []
    for directory in sorted(glob.glob(os.path.join(root, "sys/class/thermal/thermal_zone*"))):
        temp = millidegrees(read_sysfs(os.path.join(directory, "temp")))
        if temp is None or temp <= 0:
            continue  # a zone that reads nothing (or 0, as some virtual zones do) says nothing about heat
        trips = []
        for type_path in glob.glob(os.path.join(directory, "trip_point_*_type")):
            if read_sysfs(type_path) in ("passive", "hot", "critical"):
                trip = millidegrees(read_sysfs(type_path[:-len("type")] + "temp"))
                if trip is not None and trip > 0:
                    trips.append(trip)
        zones.append({"zone": os.path.basename(directory), "type": read_sysfs(os.path.join(directory, "type")) or "?",
                      "temp_c": temp, "trip_c": min(trips) if trips else None})
    return zones


def millidegrees(text: str | None) -> float | None:
    try:
        return int(text) / 1000.0 if text is not None else None
    except ValueError:
        return None


def cpu_list(text: str | None) -> list[int]:
    """'0-3,8' → [0, 1, 2, 3, 8]; [] for anything unreadable."""
    found: list[int] = []
    for part in (text or "").split(","):
        part = part.strip()
        try:
            if "-" in part:
                low, high = part.split("-", 1)
                found.extend(range(int(low), int(high) + 1))
            elif part:
                found.append(int(part))
        except ValueError:
            return []
    return sorted(set(found))


def run_command(argv: list[str]) -> str | None:
    """A helper program's output, or None when it is not installed, fails to start or times out. Its exit code is
    not judged: systemd-detect-virt exits 1 while printing "none"."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=3, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def no_command(_argv: list[str]) -> str | None:
    return None
