"""NVMe drive health for the storage source: temperature from hwmon, throttle counts and wear from `nvme smart-log`.

Why two ways: the kernel's nvme driver exposes the composite temperature as an hwmon sensor (``temp1_input``, in
millidegrees C, readable by anyone) — cheap enough to read every couple of seconds. The thermal-management
transition counts (how often the controller throttled itself, and for how long) and the percentage of rated
endurance used live only in the SMART / Health log page, which needs the ``nvme`` tool (nvme-cli) and permission to
open ``/dev/nvmeN`` (usually root). Whatever cannot be read is named with the reason, never reported as 0.

Pure over a sysfs root and an injectable command runner, so tests run on hand-built and captured trees.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

from engines.block_device import read_sysfs

SYS = "/sys"
SMART_TIMEOUT_S = 3.0
_CONTROLLER = re.compile(r"(nvme\d+)(?:c\d+)?n\d+(?:p\d+)?")

Runner = Callable[[list[str]], tuple[int, str, str]]  # argv -> (exit code, stdout, stderr)


# ---- Public API
def controller_of(block: str) -> str | None:
    """nvme0n1 / nvme0n1p2 / nvme0c0n1 → nvme0; None for a device that is not an NVMe namespace."""
    match = _CONTROLLER.fullmatch(block)
    return match.group(1) if match else None


def controllers(sys_root: str = SYS) -> list[str]:
    """The NVMe controllers the kernel knows (entries of /sys/class/nvme)."""
    try:
        return sorted(n for n in os.listdir(os.path.join(sys_root, "class", "nvme")) if re.fullmatch(r"nvme\d+", n))
    except OSError:
        return []


def temperature_inputs(sys_root: str = SYS) -> dict[str, str]:
    """controller → path of its composite temperature (hwmon ``temp1_input``, millidegrees C).

    Looked for under the controller (``/sys/class/nvme/nvme0/hwmon*/`` on current kernels, ``device/hwmon/`` on
    some) and among ``/sys/class/hwmon/*`` named ``nvme`` whose ``device`` link resolves to a controller.
    """
    found: dict[str, str] = {}
    for ctrl in controllers(sys_root):
        base = os.path.join(sys_root, "class", "nvme", ctrl)
        for parent in (base, os.path.join(base, "device", "hwmon"), os.path.join(base, "device")):
            for entry in _listdir(parent):
                path = os.path.join(parent, entry, "temp1_input")
                if entry.startswith("hwmon") and os.path.exists(path):
                    found.setdefault(ctrl, path)
    hwmon = os.path.join(sys_root, "class", "hwmon")
    for entry in _listdir(hwmon):
        base = os.path.join(hwmon, entry)
        path = os.path.join(base, "temp1_input")
        if read_sysfs(os.path.join(base, "name")) != "nvme" or not os.path.exists(path):
            continue
        target = os.path.basename(os.path.realpath(os.path.join(base, "device")))
        if re.fullmatch(r"nvme\d+", target):
            found.setdefault(target, path)
    return found


def read_celsius(path: str) -> float | None:
    """An hwmon temperature file (millidegrees C) in °C; None when unreadable."""
    text = read_sysfs(path)
    try:
        return int(text) / 1000.0 if text is not None else None
    except ValueError:
        return None


def smart_runner() -> tuple[Runner | None, str]:
    """The command runner for ``nvme smart-log`` and "" when the tool exists; (None, why not) otherwise."""
    tool = shutil.which("nvme")
    if tool is None:
        return None, ("the nvme tool (nvme-cli) is not installed: install it (apt install nvme-cli) and give the "
                      "console permission to open /dev/nvmeN (root, or the disk group) for throttle counts and wear")

    def run(argv: list[str]) -> tuple[int, str, str]:
        done = subprocess.run([tool, *argv[1:]], capture_output=True, text=True, timeout=SMART_TIMEOUT_S,
                              check=False)
        return done.returncode, done.stdout, done.stderr

    return run, ""


def smart_log(controller: str, runner: Runner, dev_root: str = "/dev") -> tuple[dict[str, float] | None, str]:
    """({throttle_events, throttle_s, percentage_used, temperature_c?}, "") from ``nvme smart-log -o json``; or
    (None, why not) — no permission, a tool that failed, output that is not the log.

    throttle_events: thermal-management temperature 1 + 2 transition counts (the controller slowed itself to cool
    down); throttle_s: the seconds spent in those states; both cumulative since the drive was made.
    """
    argv = ["nvme", "smart-log", os.path.join(dev_root, controller), "-o", "json"]
    try:
        code, out, err = runner(argv)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"`{' '.join(argv)}` could not run: {exc}"
    if code != 0:
        why = (err or out).strip().splitlines()[-1:] or [f"exit code {code}"]
        hint = " (needs root or read access to the device)" if "ermission" in why[0] or code in (1, 13) else ""
        return None, f"`{' '.join(argv)}` failed: {why[0]}{hint}"
    try:
        log = json.loads(out)
    except ValueError:
        return None, f"`{' '.join(argv)}` printed something that is not JSON"
    return parse_smart_log(log)


def parse_smart_log(log: Any) -> tuple[dict[str, float] | None, str]:
    """The figures of one smart-log JSON object (nvme-cli 1.x and 2.x key spellings)."""
    if not isinstance(log, dict):
        return None, "the smart-log JSON is not an object"
    out: dict[str, float] = {}
    used = _first(log, "percent_used", "percentage_used")
    if used is not None:
        out["percentage_used"] = used
    counts = [_first(log, "thm_temp1_trans_count"), _first(log, "thm_temp2_trans_count")]
    if any(c is not None for c in counts):
        out["throttle_events"] = sum(c for c in counts if c is not None)
    times = [_first(log, "thm_temp1_total_time"), _first(log, "thm_temp2_total_time")]
    if any(t is not None for t in times):
        out["throttle_s"] = sum(t for t in times if t is not None)
    kelvin = _first(log, "temperature")
    if kelvin is not None and kelvin > 200:  # the log reports Kelvin (NVMe base spec, 5.14.1.2)
        out["temperature_c"] = kelvin - 273.15
    if not out:
        return None, "the smart-log JSON has none of percent_used, thm_temp1/2_trans_count, thm_temp1/2_total_time"
    return out, ""


# ---- Private API
def _first(log: dict[str, Any], *keys: str) -> float | None:
    for key in keys:
        value = log.get(key)
        if isinstance(value, str):
            value = value.strip().rstrip("%").replace(",", "")
            try:
                value = float(value)
            except ValueError:
                continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


