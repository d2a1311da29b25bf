"""Counts → the COUNTERS dict of docs/architecture.md: raw totals, IPC, miss rate and the top-down fractions.

Every key is always present, so a reader (the verdict, the report) never guesses: where a figure could not be
counted it is None, `reason` says why, and `available` is False only when nothing was counted at all.
"""

from __future__ import annotations

import errno
from typing import Any

from engines.counters.session import Counts, describe

KEYS = ("cycles", "instructions", "ipc", "cache_references", "cache_misses", "llc_miss_rate", "topdown")
CACHE_NOTE = ("cache-references/cache-misses are the kernel's generic events: the last-level cache on Intel, "
              "L2 on AMD Zen")
_GROUP_WORDS = {"core": "cycles and instructions", "cache": "cache references and misses"}


# ---- Public API
def unavailable(reason: str, method: str = "") -> dict[str, Any]:
    return {"available": False, "reason": reason, **dict.fromkeys(KEYS), "topdown_reason": None,
            "method": method or "Linux perf events (perf_event_open) on the worker's threads; none were counted"}


def counters(counts: Counts, topdown_style: str | None, topdown_reason: str, method: str) -> dict[str, Any]:
    """The COUNTERS dict from one session's counts (ratios None where a side is missing or zero)."""
    values = counts.values
    cycles, instructions = _int(values.get("cycles")), _int(values.get("instructions"))
    references, misses = _int(values.get("cache-references")), _int(values.get("cache-misses"))
    top = _topdown(values, topdown_style) if topdown_style and "topdown" not in counts.missing else None
    if topdown_style and top is None:
        topdown_reason = topdown_reason or f"top-down events not counted ({counts.missing.get('topdown', '')})"
    partial = [f"{_GROUP_WORDS.get(name, name)} not counted ({why})" for name, why in counts.missing.items()
               if name != "topdown"]
    notes = [CACHE_NOTE]
    scaled = {name: f for name, f in counts.counted_fraction.items() if f < 0.999}
    if scaled:
        notes.append("multiplexed, counts scaled by enabled ÷ running time: " +
                     ", ".join(f"{name} counted {f:.0%} of the time" for name, f in scaled.items()))
    return {
        "available": bool(counts.values),
        "reason": "partial: " + "; ".join(partial) if partial else "",
        "cycles": cycles,
        "instructions": instructions,
        "ipc": instructions / cycles if instructions is not None and cycles else None,
        "cache_references": references,
        "cache_misses": misses,
        "llc_miss_rate": misses / references if misses is not None and references else None,
        "topdown": top,
        "topdown_reason": None if top else topdown_reason,
        "threads": counts.threads,
        "counted_fraction": dict(counts.counted_fraction),
        "notes": notes,
        "method": method,
    }


def open_failure(error: OSError, paranoid: int | None, pmus: list[str]) -> str:
    """Why the first counters would not open, and the fix, as "not available (…)"."""
    code = error.errno
    if code in (errno.ENOENT, errno.ENODEV, errno.EOPNOTSUPP):
        listed = ", ".join(pmus) or "none"
        if not any(p in ("cpu", "cpu_core") or p.startswith("armv") for p in pmus):
            return (f"not available (no CPU PMU is exposed to this system: the kernel lists the PMUs {listed} and "
                    "no cpu one, as in a VM without a virtual PMU; fix: enable the virtual PMU (libvirt "
                    "<pmu state='on'/>, QEMU -cpu host,pmu=on, VMware 'virtualize CPU performance counters'), or "
                    "run on bare metal or an instance type that exposes the PMU)")
        return (f"not available (the CPU PMU does not count the generic cycles event ({describe(error)}); PMUs: "
                f"{listed})")
    if code in (errno.EACCES, errno.EPERM):
        return (f"not available (perf_event_open was refused ({describe(error)}) although "
                f"kernel.perf_event_paranoid is {paranoid}: a container's seccomp profile or a security module "
                "blocks it; fix: allow perf_event_open in the container (docker run --cap-add PERFMON, or a "
                "seccomp profile that permits it), or on the host sysctl kernel.perf_event_paranoid=1)")
    if code == errno.ENOSYS:
        return (f"not available (perf_event_open is not implemented here ({describe(error)}): a kernel built "
                "without CONFIG_PERF_EVENTS, or a sandbox such as gVisor that stubs it out)")
    if code in (errno.EMFILE, errno.ENFILE):
        return "not available (out of file descriptors opening one counter group per thread; fix: raise ulimit -n)"
    if code == errno.EBUSY:
        return "not available (the PMU is in exclusive use by another tool; fix: stop it and profile again)"
    return f"not available (perf_event_open failed: {describe(error)})"


# ---- Private API
def _topdown(values: dict[str, float], style: str) -> dict[str, float | None] | None:
    """Level-1 fractions of the pipeline slots (and memory-bound, level 2, where the PMU lists it)."""
    if style == "slots":
        parts = [values.get(n) for n in ("topdown-retiring", "topdown-bad-spec", "topdown-fe-bound",
                                         "topdown-be-bound")]
        if any(p is None for p in parts) or not sum(parts):
            return None
        total = sum(parts)  # the kernel hands the metrics out in slots; their sum is the slots counted
        memory = values.get("topdown-mem-bound")
        return {"retiring": parts[0] / total, "bad_speculation": parts[1] / total, "frontend_bound": parts[2] / total,
                "backend_bound": parts[3] / total, "memory_bound": _unit(memory / total) if memory is not None
                else None}
    total = values.get("topdown-total-slots")
    issued, retired = values.get("topdown-slots-issued"), values.get("topdown-slots-retired")
    fetch, recovery = values.get("topdown-fetch-bubbles"), values.get("topdown-recovery-bubbles")
    if not total or None in (issued, retired, fetch, recovery):
        return None
    frontend = _unit(fetch / total)
    bad = _unit((issued - retired + recovery) / total)
    retiring = _unit(retired / total)
    return {"retiring": retiring, "bad_speculation": bad, "frontend_bound": frontend,
            "backend_bound": _unit(1 - frontend - bad - retiring), "memory_bound": None}


def _unit(x: float) -> float:
    return min(1.0, max(0.0, x))


def _int(value: float | None) -> int | None:
    return None if value is None else int(round(value))
