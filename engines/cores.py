"""CPU cores: which ones a process may run on, how they group into physical cores, and how to move a process.

Why this lives in engines/: the worker decides its "auto" thread count from its own cores (a worker confined to
3 of 8 cores that starts 8 threads makes them queue for each other), and the console plans the partition that
keeps itself off those cores (console/run/partition.py). Both need the same facts, and engines/ may not import
console/.

Linux only: `os.sched_getaffinity`/`os.sched_setaffinity`. Elsewhere (macOS has no process affinity call,
Windows has one that Python does not expose) every function here says so instead of pretending.

Note on threads: on Linux `sched_setaffinity(pid)` moves one thread (the one whose id is `pid`); the others keep
their mask. `move_process` therefore moves every thread listed in /proc/<pid>/task. A thread started later
inherits the mask of the thread that starts it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")  # a user's explicit choice outranks "auto"


class AffinityUnavailable(OSError):
    """This platform or process cannot read or set CPU affinity; the message says why."""


# ---- Public API
def available() -> str | None:
    """None when this platform can confine processes to cores; otherwise why not, in a user's words."""
    if not hasattr(os, "sched_setaffinity") or not hasattr(os, "sched_getaffinity"):
        import platform

        system = platform.system() or "this OS"
        why = {"Darwin": "macOS has no call to bind a process to cores (only thread affinity hints)",
               "Windows": "Windows affinity (SetProcessAffinityMask) is not exposed by Python's os module"}
        return why.get(system, f"{system} has no sched_setaffinity")
    return None


def allowed(pid: int = 0) -> list[int]:
    """The CPUs `pid` (0: this thread) may run on, sorted. AffinityUnavailable where that cannot be read."""
    problem = available()
    if problem:
        raise AffinityUnavailable(problem)
    try:
        return sorted(os.sched_getaffinity(pid))
    except OSError as exc:
        raise AffinityUnavailable(f"cannot read the CPU affinity of pid {pid}: {exc}") from exc


def physical_cores(cpus: Iterable[int], root: str = "/") -> list[list[int]]:
    """`cpus` grouped by physical core (SMT siblings together: they share one core's execution units), each
    group sorted, groups ordered by their lowest CPU. A CPU whose topology cannot be read is its own core."""
    groups: dict[tuple[str, str] | tuple[str, int], list[int]] = {}
    for cpu in sorted(set(cpus)):
        base = os.path.join(root, f"sys/devices/system/cpu/cpu{cpu}/topology")
        package, core = _read(os.path.join(base, "physical_package_id")), _read(os.path.join(base, "core_id"))
        key = (package, core) if package is not None and core is not None else ("cpu", cpu)
        groups.setdefault(key, []).append(cpu)
    return sorted(groups.values(), key=lambda group: group[0])


def move_process(pid: int, cpus: Iterable[int], root: str = "/") -> None:
    """Bind every thread of process `pid` to `cpus`. AffinityUnavailable (with the reason) when it cannot."""
    problem = available()
    if problem:
        raise AffinityUnavailable(problem)
    target = set(cpus)
    if not target:
        raise ValueError("no CPUs given: a process needs at least one core")
    pid = pid or os.getpid()
    try:
        threads = [int(name) for name in os.listdir(os.path.join(root, f"proc/{pid}/task")) if name.isdigit()]
    except OSError:
        threads = [pid]
    moved = 0
    for tid in threads or [pid]:
        try:
            os.sched_setaffinity(tid, target)
            moved += 1
        except ProcessLookupError:  # the thread ended since it was listed
            continue
        except OSError as exc:
            raise AffinityUnavailable(f"cannot bind pid {pid} to CPUs {format_cpus(target)}: {exc}") from exc
    if not moved:
        raise AffinityUnavailable(f"pid {pid} has ended: nothing to bind")


def auto_threads(environ: dict[str, str] | None = None, root: str = "/") -> tuple[int | None, str]:
    """What "engine default" threads means in this process: (threads, why).

    When this process is confined to fewer CPUs than the machine has online (the console's partition, or a
    `taskset`), the number of physical cores it may use — an engine left to itself counts the whole machine's
    cores and its threads would queue on the few it has. Otherwise None: the engine's own default (one thread per
    physical core, for PyTorch and ONNX Runtime). An explicit OMP_NUM_THREADS/MKL_NUM_THREADS is the user's
    choice and wins."""
    environ = os.environ if environ is None else environ
    for name in THREAD_VARIABLES:
        if (environ.get(name) or "").strip():
            return None, f"engine default ({name}={environ[name]} is set)"
    try:
        mine = allowed(0)
    except AffinityUnavailable as exc:
        return None, f"engine default (affinity not readable: {exc})"
    online = online_cpus(root)
    if online is None or len(mine) >= len(online):
        return None, "engine default (this process may use every core)"
    cores = len(physical_cores(mine, root))
    return cores, (f"the worker's cores: {cores} physical core{'s' if cores != 1 else ''} "
                   f"(CPUs {format_cpus(mine)} of {len(online)})")


def online_cpus(root: str = "/") -> list[int] | None:
    """The machine's online CPUs (/sys/devices/system/cpu/online); None when it cannot be read."""
    text = _read(os.path.join(root, "sys/devices/system/cpu/online"))
    if text is None:
        count = os.cpu_count()
        return list(range(count)) if count else None
    try:
        return parse_cpus(text)
    except ValueError:
        return None


def parse_cpus(text: str) -> list[int]:
    """'0-3,8,10-11' → [0, 1, 2, 3, 8, 10, 11] (the kernel's cpulist format). ValueError naming the bad part."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise ValueError(f"{part!r} is not a CPU number or range (like 0-3,8)")
        first, last = int(low), int(high) if dash else int(low)
        if last < first:
            raise ValueError(f"{part!r}: the range runs backwards")
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def format_cpus(cpus: Iterable[int]) -> str:
    """[0, 1, 2, 3, 8] → '0-3,8' (the kernel's cpulist format, as taskset and lscpu print it)."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    start = previous = None
    for cpu in ordered + [None]:
        if start is not None and (cpu is None or cpu != previous + 1):
            parts.append(str(start) if start == previous else f"{start}-{previous}")
            start = None
        if cpu is not None and start is None:
            start = cpu
        previous = cpu
    return ",".join(parts)


# ---- Private API
def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read().strip() or None
    except (OSError, UnicodeDecodeError):
        return None
