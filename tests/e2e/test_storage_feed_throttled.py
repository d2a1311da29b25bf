"""Done-when of issue 21 item 1: on a device limited to 50 MB/s, `find_max` finds the N the arithmetic predicts
(± 1), read cold (proven), with the device named as the limit.

The device is a loop device with ext4 whose reads a cgroup throttles (tests/storage_devices.py); the benchmark
runs in a child process that first moves itself into that cgroup, so its spawned readers are throttled too.
Skipped, with the exact reason, where this machine cannot make such a device (not root, no loop, no throttle).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from engines.storage import dataset, workloads
from tests.storage_devices import Unavailable, join_cgroup_code, throttled_loop_device

ROOT = Path(__file__).resolve().parents[2]
READ_BPS = 50_000_000
SAMPLE, BATCH, COMPUTE_S = 1_000_000, 1, 0.1  # one accelerator needs 10 MB/s at AU 100%


def test_find_max_on_a_throttled_device_matches_the_arithmetic():
    workload = workloads.custom(SAMPLE, BATCH, COMPUTE_S)
    predicted = math.floor(workload.max_accelerators(READ_BPS))  # 50e6·0.1 / (1e6·1·0.9) = 5.56 → 5
    try:
        context = throttled_loop_device(128, READ_BPS)
        device = context.__enter__()
    except Unavailable as exc:
        pytest.skip(str(exc))
    try:
        data = device.mount / "data"
        dataset.write(data, workload, 40, fmt="bin")
        options = {"data_dir": str(data), "workload": "custom", "sample_bytes": SAMPLE, "batch": BATCH,
                   "compute_ms": COMPUTE_S * 1e3, "readers": 4, "find_max": True, "duration_s": 1.5}
        code = join_cgroup_code(device.procs_file) + (
            "import json, sys\n"
            "from engines.storage import feed\n"
            "if __name__ == '__main__':\n"
            f"    result = feed.run({options!r})\n"
            "    result.pop('latency_ns')\n"
            "    sys.stdout.write('RESULT ' + json.dumps(result))\n")
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    finally:
        context.__exit__(None, None, None)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.split("RESULT ", 1)[1])
    found = result["find_max"]["max_passing"]
    assert abs(found - predicted) <= 1, (predicted, result["find_max"], device.controller)
    assert result["cache_state"] == "cold", result["data_set"]["cold_reason"]
    assert result["passed"] is True
    assert result["limited_by"] == "device"  # what stops N+1: the throttled device, not the readers
    failing = [t for t in result["trials"] if t["accelerators"] > found]
    assert failing and all(t["read_mb_s"] < READ_BPS / 1e6 * 1.25 for t in failing)  # the limit held
