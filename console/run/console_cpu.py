"""The console's own CPU while a run measures: the instrument's cost, stored with the run (DESIGN.md §10).

What is counted: CPU time (user + system) of the console process (every thread: GUI, plots, readers, the history
writer) and of its telemetry sampler process, between the start of the worker's `measuring` phase and its end,
as a share of one core ("the console used 3.1% of a core while measuring"). The worker is never counted (it is
what is measured), nor are other children. Qt-free.

Why a share of one core: the budget is about what the console takes from a worker that would otherwise have
that core, whatever the machine's size.
"""

from __future__ import annotations

import os
import time
from typing import Any

THRESHOLD_PERCENT = 10.0  # of one core, while measuring: above it the summary says so
METHOD = ("CPU time of the console process (CLOCK_PROCESS_CPUTIME_ID) and its telemetry sampler (/proc/<pid>/task/"
          "*/schedstat) between the measuring phase's start and end, divided by the wall time between them")


class ConsoleCpu:
    """`start()` at the measuring phase, `stop()` at its end, `result()` for the summary. Thread-safe enough for
    its use: start and stop come from the one thread that reads the worker's events."""

    def __init__(self, sampler_pid: int | None = None, clock=time.perf_counter_ns, reader=None):
        """`clock` and `reader(pid) → cpu seconds` replace the real ones in tests."""
        self.sampler_pid = sampler_pid
        self._clock = clock
        self._read = reader or cpu_seconds
        self._start: tuple[int, dict[str, float | None]] | None = None
        self._result: dict[str, Any] | None = None

    def start(self) -> None:
        if self._start is None:
            self._start = (self._clock(), self._times())

    def stop(self) -> None:
        """End of measuring (called again later: the first end counts)."""
        if self._start is None or self._result is not None:
            return
        began, before = self._start
        wall_s = (self._clock() - began) / 1e9
        after = self._times()
        by_process: dict[str, float | None] = {}
        notes: list[str] = []
        for name, start_s in before.items():
            end_s = after.get(name)
            if start_s is None or end_s is None:
                by_process[name] = None
                notes.append(f"the {name}'s CPU time could not be read at the "
                             f"{'start' if start_s is None else 'end'} of measuring; it is not counted")
                continue
            by_process[name] = max(0.0, end_s - start_s)
        counted = [v for v in by_process.values() if v is not None]
        if wall_s <= 0 or not counted:
            self._result = unavailable("the measuring phase had no duration" if wall_s <= 0 else
                                       "no CPU time could be read")
            return
        cpu_s = sum(counted)
        self._result = {
            "percent_of_core": round(100.0 * cpu_s / wall_s, 2), "cpu_s": round(cpu_s, 4), "wall_s": round(wall_s, 3),
            "by_process": {name: (round(100.0 * value / wall_s, 2) if value is not None else None)
                           for name, value in by_process.items()},
            "threshold_percent": THRESHOLD_PERCENT, "notes": notes, "method": METHOD,
        }

    def result(self) -> dict[str, Any]:
        """The figure, or `percent_of_core: None` with the reason (the run never measured)."""
        if self._result is None and self._start is not None:
            self.stop()  # the worker ended inside measuring (a failure, a cancel): up to now
        return self._result or unavailable("the run never reached its measuring phase")

    def _times(self) -> dict[str, float | None]:
        times = {"console": self._read(os.getpid())}
        if self.sampler_pid:
            times["telemetry sampler"] = self._read(self.sampler_pid)
        return times


def cpu_seconds(pid: int, root: str = "/") -> float | None:
    """User + system CPU seconds of `pid` itself (not its children); None when it cannot be read.

    Nanosecond clocks where there are some (this process: CLOCK_PROCESS_CPUTIME_ID; another one: the sum of its
    threads' /proc/<pid>/task/*/schedstat), since psutil's figure moves in 10 ms ticks — a whole 1% of a core over
    a 1-s measurement."""
    if pid == os.getpid() and root == "/":
        return time.process_time()
    total, found = 0, False
    task_dir = os.path.join(root, f"proc/{pid}/task")
    try:
        tasks = os.listdir(task_dir)
    except OSError:
        tasks = []
    for tid in tasks:
        try:
            with open(os.path.join(task_dir, tid, "schedstat"), encoding="ascii") as handle:
                total += int(handle.read().split()[0])
                found = True
        except (OSError, ValueError, IndexError):
            continue
    if found:
        return total / 1e9
    try:
        import psutil

        times = psutil.Process(pid).cpu_times()
        return float(times.user + times.system)
    except Exception:  # noqa: BLE001 — gone, denied, psutil missing
        return None


def unavailable(reason: str) -> dict[str, Any]:
    return {"percent_of_core": None, "reason": reason, "threshold_percent": THRESHOLD_PERCENT, "method": METHOD}


def sentence(figure: dict[str, Any] | None) -> str | None:
    """'the console used 3.1% of a core while measuring' (None when not measured)."""
    percent = (figure or {}).get("percent_of_core")
    if percent is None:
        return None
    return f"the console used {percent:.1f}% of a core while measuring"


def validity_notes(partition: dict[str, Any] | None, figure: dict[str, Any] | None,
                   local: bool = True) -> tuple[list[str], list[str]]:
    """(warnings, notes) about the instrument's cost: a warning when the console took more than its budget, a note
    whenever it shared the worker's cores; each with the fix. `local` False (a cluster node's run): nothing."""
    if not local:
        return [], []
    warnings: list[str] = []
    notes: list[str] = []
    said = sentence(figure)
    percent = (figure or {}).get("percent_of_core")
    confined = bool((partition or {}).get("confined"))
    why = (partition or {}).get("reason") or "no partition"
    reserve = "reserve a core for the console: --console-cores 1 (the window reserves one unless " \
              "LABCONSOLE_CONSOLE_CORES=0)"
    if not confined and "no partition asked" not in why and "would leave the worker none" not in why:
        reserve = "run headless (labconsole run) or on Linux, where the console can keep to its own core"
    if percent is not None and percent > THRESHOLD_PERCENT:
        where = ("on its own cores, so the worker's were not shared; it may still slow a run through shared "
                 "caches and memory bandwidth. Fix: close the System page or hide the live plots while measuring"
                 if confined else
                 f"on the worker's cores: the figures may be the window's as much as the model's. Fix: {reserve}, "
                 "or close the System page")
        warnings.append(f"{said}, more than its {THRESHOLD_PERCENT:g}% budget, {where}")
    if not confined:
        cost = f" ({said})" if said and not warnings else ""
        notes.append(f"the console shared the worker's cores while measuring{cost}: not confined ({why}). "
                     f"Fix: {reserve}")
    elif said and not warnings:
        notes.append(f"{said}, on its own cores ({partition.get('console')}); the worker had CPUs "
                     f"{partition.get('worker')}")
    return warnings, notes
