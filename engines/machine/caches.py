"""CPU cache sizes: the last-level cache decides what "streams from memory" means (arrays ≥ 4× the LLC) and
which working sets the verdict may call cache-resident.

Sources in order: Linux sysfs (exact, per cache instance), glibc's sysconf, `lscpu`; None with the reason when
none answers. `llc_bytes` is the total over every instance of the last level (an EPYC has one L3 per CCX), since
a streaming kernel on all cores sees all of them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

SYSFS_CPU = Path("/sys/devices/system/cpu")
_UNITS = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
_SYSCONF = {"l1d": "SC_LEVEL1_DCACHE_SIZE", "l2": "SC_LEVEL2_CACHE_SIZE", "l3": "SC_LEVEL3_CACHE_SIZE"}


# ---- Public API
def cache_sizes(sysfs: Path = SYSFS_CPU) -> dict[str, Any]:
    """{"caches": {"l1d", "l2", "l3"} (bytes per instance), "llc_bytes", "llc_instances", "method", "reason"}."""
    reasons = []
    for name in ("sysfs", "sysconf", "lscpu"):
        source = globals()[f"_from_{name}"]  # looked up each time, so tests can replace one source
        try:
            found = source(sysfs) if name == "sysfs" else source()
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            reasons.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        if found is not None and found["caches"]:
            return {**found, "reason": ""}
        reasons.append(f"{name}: no cache sizes")
    return {"caches": {}, "llc_bytes": None, "llc_instances": None, "method": "",
            "reason": "cache sizes unknown (" + "; ".join(reasons) + ")"}


def parse_size(text: str) -> int:
    """'32K', '8192K', '1M', '512 KiB', '65536' → bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:i?B)?\s*", text.strip(), re.IGNORECASE)
    if not match:
        raise ValueError(f"not a cache size: {text!r}")
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


# ---- Private API
def _from_sysfs(sysfs: Path) -> dict[str, Any] | None:
    cache_dir = sysfs / "cpu0" / "cache"
    if not cache_dir.is_dir():
        return None
    caches, levels = {}, {}
    for index in sorted(cache_dir.glob("index*")):
        kind = _read(index / "type")
        if kind not in ("Data", "Unified"):
            continue  # instruction caches hold no working set
        level = int(_read(index / "level"))
        name = "l1d" if level == 1 else f"l{level}"
        caches[name] = parse_size(_read(index / "size"))
        levels[level] = index.name
    if not caches:
        return None
    last = max(levels)
    instances = _instances(sysfs, levels[last])
    return {"caches": caches, "llc_bytes": caches[f"l{last}" if last > 1 else "l1d"] * instances,
            "llc_instances": instances, "method": f"sysfs {cache_dir}/index*/size"}


def _instances(sysfs: Path, index: str) -> int:
    """How many distinct caches at this index the CPUs share out (distinct shared_cpu_list values)."""
    shared = set()
    for cpu in sysfs.glob("cpu[0-9]*"):
        path = cpu / "cache" / index / "shared_cpu_list"
        try:
            shared.add(path.read_text().strip())
        except OSError:
            continue
    return max(1, len(shared))


def _from_sysconf() -> dict[str, Any] | None:
    caches = {}
    for name, key in _SYSCONF.items():
        if key in os.sysconf_names:
            value = os.sysconf(key)
            if value and value > 0:
                caches[name] = int(value)
    if not caches:
        return None
    last = max(caches, key=lambda n: int(n[1]))
    return {"caches": caches, "llc_bytes": caches[last], "llc_instances": None,
            "method": "os.sysconf (glibc; one instance of the last level, instances unknown)"}


def _from_lscpu() -> dict[str, Any] | None:
    """`lscpu -B -C=NAME,ONE-SIZE,ALL-SIZE`: one row per cache, sizes in bytes."""
    if shutil.which("lscpu") is None:
        return None
    out = subprocess.run(["lscpu", "-B", "-C=NAME,ONE-SIZE,ALL-SIZE"], capture_output=True, text=True,
                         timeout=10, check=True).stdout
    caches, totals = {}, {}
    for line in out.splitlines()[1:]:
        parts = line.split()
        if len(parts) != 3 or parts[0].upper() == "L1I":
            continue
        name = parts[0].lower()
        caches[name], totals[name] = int(parts[1]), int(parts[2])
    if not caches:
        return None
    last = max(caches, key=lambda n: int(n[1]))
    return {"caches": caches, "llc_bytes": totals[last], "llc_instances": totals[last] // caches[last] or None,
            "method": "lscpu -B -C"}


def _read(path: Path) -> str:
    return path.read_text().strip()
