"""How busy the rest of the machine was while a benchmark measured: CPU time of every other process, from
/proc/stat, in percent of one core. A decided miss measured beside a busy neighbour is the neighbour's, not the
product's: benchmarks use this to turn it into "undecided" with the reason."""

from __future__ import annotations

import os
import time

QUIET_OTHER_PERCENT = 25.0  # of one core: above this, other processes weigh on a 2-core machine's figures


def cpu_clock() -> tuple[float, float, float] | None:
    """(CPU seconds of the whole machine, of this process and its reaped children, wall seconds)."""
    try:
        with open("/proc/stat") as handle:
            fields = [int(x) for x in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    busy = sum(fields[i] for i in (0, 1, 2, 5, 6, 7) if i < len(fields)) / os.sysconf("SC_CLK_TCK")
    times = os.times()
    return busy, times.user + times.system + times.children_user + times.children_system, time.perf_counter()


def other_percent(before, after) -> float:
    """Percent of one core other processes used between two clocks (0 where /proc/stat is missing)."""
    if before is None or after is None:
        return 0.0
    wall = after[2] - before[2]
    return max(0.0, 100 * ((after[0] - before[0]) - (after[1] - before[1])) / wall)
