"""Hardware counters for the worker around a block of work, as evidence for the verdict (Linux perf events).

Usage — the profiling phase wraps its profiled iterations:

    from engines import counters

    with counters.measure() as reading:
        for _ in range(iterations):
            model.infer()
    event["counters"] = reading.result()

    result, event["counters"] = counters.measure(profile)   # the same, around one call

`reading.result()` is the COUNTERS dict of docs/architecture.md: cycles, instructions, IPC, cache references and
misses with their miss rate, and the top-down level-1 breakdown (retiring, bad speculation, frontend- and
backend-bound; memory-bound where the PMU lists it) — or, where nothing can be counted, `{"available": False,
"reason": "not available (why; fix: …)"}` with every figure None. measure() never raises for the counters'
sake: a missing PMU (a VM, a container), a paranoid kernel or a refused call is a reason, not an error; only
the work's own exceptions pass through.

How (see the modules): one counter group per kind (cycles + instructions; cache references + misses; the
top-down events) opened through perf_event_open (ctypes, engines/counters/kernel.py) on every thread of this
process and inherited by threads started during the block (session.py); top-down events and their encodings
come from the kernel's sysfs descriptions (sysfs.py); ratios and fractions in result.py. Where kernel.
perf_event_paranoid is 2 (the usual default) and the process lacks CAP_PERFMON, only user space is counted,
and `method` says so.

Tests pass `kernel=` (a fake of kernel.Kernel) and `root=` (a fake /proc and /sys tree).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from engines.counters import kernel as k
from engines.counters import result, sysfs
from engines.counters.session import Group, OpenError, Session, describe

T = TypeVar("T")

CORE = Group("core", (k.Event("cycles", k.TYPE_HARDWARE, k.HW_CPU_CYCLES),
                      k.Event("instructions", k.TYPE_HARDWARE, k.HW_INSTRUCTIONS)))
CACHE = Group("cache", (k.Event("cache-references", k.TYPE_HARDWARE, k.HW_CACHE_REFERENCES),
                        k.Event("cache-misses", k.TYPE_HARDWARE, k.HW_CACHE_MISSES)))


# ---- Public API
class Reading:
    """The counters of one `measure()` block; `result()` once the block has ended."""

    def __init__(self) -> None:
        self._result: dict[str, Any] | None = None

    def result(self) -> dict[str, Any]:
        if self._result is None:
            raise RuntimeError("counters: result() is read after the `with counters.measure()` block ends")
        return self._result


def measure(work: Callable[[], T] | None = None, *, kernel: k.Kernel | None = None,
            root: str | Path = "/") -> Any:
    """`with measure() as reading:` counts the block; `measure(work)` counts one call and returns
    (work's result, COUNTERS). Either way on every thread of this process; see the module docstring."""
    block = Block(kernel, Path(root))
    if work is None:
        return block
    with block as reading:
        value = work()
    return value, reading.result()


class Block:
    """The context manager `measure()` returns: opens and starts the counters on entry, reads them on exit."""

    def __init__(self, kernel: k.Kernel | None, root: Path):
        self._kernel, self._root = kernel, root
        self._reading = Reading()
        self._session: Session | None = None
        self._setup: dict[str, Any] = {}

    def __enter__(self) -> Reading:
        self._session, self._setup = _start(self._kernel, self._root)
        return self._reading

    def __exit__(self, *exc_info: Any) -> None:
        setup = self._setup
        if self._session is None:
            self._reading._result = result.unavailable(setup["reason"])
            return
        try:
            counts = self._session.stop()
        except OSError as error:  # the work ran; only its counts are lost
            self._reading._result = result.unavailable(f"not available (reading the counters failed: "
                                                       f"{describe(error)})")
            return
        self._reading._result = result.counters(counts, setup["topdown_style"], setup["topdown_reason"],
                                                setup["method"])


# ---- Private API
def _start(kernel: k.Kernel | None, root: Path) -> tuple[Session | None, dict[str, Any]]:
    """Open and start the groups; (None, {"reason": …}) when nothing can be counted here."""
    if kernel is None and not sys.platform.startswith("linux"):
        return None, {"reason": f"not available (hardware counters are read through Linux perf events; this is "
                                f"{sys.platform})"}
    paranoid = sysfs.paranoid(root)
    if paranoid is None:
        return None, {"reason": "not available (this kernel has no perf events: /proc/sys/kernel/"
                                "perf_event_paranoid is missing, so it was built without CONFIG_PERF_EVENTS)"}
    privileged = sysfs.privileged(root)
    if paranoid > 2 and not privileged:
        return None, {"reason": f"not available (kernel.perf_event_paranoid is {paranoid}: unprivileged processes "
                                "may not use perf events; fix: sudo sysctl kernel.perf_event_paranoid=1 (or 2 to "
                                "count user space only), or give the worker CAP_PERFMON)"}
    try:
        kernel = kernel or k.LinuxKernel.for_this_machine()
    except OSError as error:
        return None, {"reason": f"not available ({error.strerror})"}
    exclude_kernel = paranoid >= 2 and not privileged
    top, topdown_reason = sysfs.topdown(root)
    groups = [CORE, CACHE] + ([Group("topdown", top.events)] if top else [])
    tids = sysfs.threads(root) or [0]
    session = Session(kernel, groups, tids, exclude_kernel)
    try:
        session.open()
        session.start()
    except OpenError as failure:
        return None, {"reason": result.open_failure(failure.error, paranoid, sysfs.pmus(root))}
    except OSError as error:
        session.close()
        return None, {"reason": f"not available (starting the counters failed: {describe(error)})"}
    scope = (f"user space only (kernel.perf_event_paranoid={paranoid}; 1 or CAP_PERFMON counts the kernel too)"
             if exclude_kernel else "user space and kernel")
    notes = ""
    if top and top.style == "legacy" and sysfs.smt_active(root):
        notes = "; the pre-Ice Lake top-down events count per core, so with SMT on a thread's breakdown is approximate"
    method = (f"Linux perf events (perf_event_open) on each of the worker's {len(tids)} threads, inherited by "
              f"threads started during the block; {scope}; generic hardware events cycles, instructions, "
              "cache-references, cache-misses; top-down " +
              (f"from the kernel's sysfs events of the {top.pmu} PMU ({top.style})" if top else "not available") +
              notes)
    return session, {"topdown_style": top.style if top else None, "topdown_reason": topdown_reason,
                     "method": method}
