"""Other processes' load around a confirmation's threads ×2 rounds: a round runner that probes it after each
round, so an experiment run while neighbours were busy is not read as the machine's thread gain.

Why: twice the threads helps only when the second core is free. On the shared 2-core VM a neighbour that woke
during the rounds made a compute verdict's "threads ×2" come out ×0.93 — a confident refutation that was the
neighbour's, not the model's (the benchmark's two "badly wrong" cases). The machine card guards its own thread
gains the same way (engines.machine.threads.OtherLoad, BUSY_CORES).

How: after each round, with no round running, PROBE_S seconds of /proc/stat busy time on the worker's CPUs less
what this console's own process tree used meanwhile (a warm spare worker importing its engine is ours, not a
neighbour's). `interference()` is the reason to hold the experiment undecided, or None; the experiment
(console.analysis.confirm.experiment) asks it when the rounds are done. Linux only: elsewhere nothing is probed and
`load` says why.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

PROBE_S = 0.3  # per round: about a sixth of a 2-s round


class LoadWatched:
    """`run_round(side, k)` that probes other processes' load on `cpus` for PROBE_S after each round."""

    def __init__(self, run_round: Callable[[str, int], Any], cpus: list[int] | None = None,
                 probe_s: float = PROBE_S, sleep: Callable[[float], None] = time.sleep,
                 root: str = "/") -> None:
        from engines import cores
        from engines.machine.threads import BUSY_CORES

        self.run_round, self.probe_s, self.sleep, self.busy_cores, self.root = run_round, probe_s, sleep, \
            BUSY_CORES, root
        if cpus is None:
            try:
                cpus = cores.allowed(0)
            except cores.AffinityUnavailable:
                cpus = list(range(os.cpu_count() or 1))
        self.cpus = list(cpus)
        self.loads: list[float] = []
        self.unavailable: str | None = None

    def __call__(self, side: str, k: int) -> Any:
        latencies = self.run_round(side, k)
        load = self.other_cores()
        if load is None:
            self.unavailable = "other processes' load not measured (no /proc/stat)"
        else:
            self.loads.append(load)
        return latencies

    def other_cores(self) -> float | None:
        """Cores' worth of the CPUs' busy time over one probe that this console's process tree did not use."""
        from engines.machine.threads import busy_seconds

        busy0, ours0, at0 = busy_seconds(self.cpus, self.root), own_tree_cpu_s(), time.monotonic()
        self.sleep(self.probe_s)
        busy1, ours1, at1 = busy_seconds(self.cpus, self.root), own_tree_cpu_s(), time.monotonic()
        if busy0 is None or busy1 is None or at1 <= at0:
            return None
        # a process of ours that ended during the probe is left out (its last CPU time cannot be read)
        ours = sum(cpu - ours0.get(pid, 0.0) for pid, cpu in ours1.items())
        return max(0.0, (busy1 - busy0) - ours) / (at1 - at0)

    def load(self) -> dict[str, Any]:
        """What was probed: mean and largest other-process cores, probes, the CPUs; or why nothing was."""
        if not self.loads:
            return {"other_cores": None, "why": self.unavailable or "no round ran"}
        return {"other_cores": round(statistics.fmean(self.loads), 3), "largest": round(max(self.loads), 3),
                "probes": len(self.loads), "probe_s": self.probe_s, "cpus": list(self.cpus)}

    def interference(self) -> str | None:
        """Why the experiment cannot speak for the machine (other processes used ≥ BUSY_CORES of the worker's
        CPUs on average between its rounds), else None."""
        if not self.loads:
            return None
        mean = statistics.fmean(self.loads)
        if mean < self.busy_cores:
            return None
        return (f"other processes used {mean:.2f} cores of the worker's CPUs between the rounds (≥ "
                f"{self.busy_cores:g}): the second thread waited for them, so the ratio is not the machine's")


def own_tree_cpu_s() -> dict[int, float]:
    """CPU seconds of this process and of each of its descendants (workers, spares, samplers) alive now, by pid."""
    import psutil

    from console.run.console_cpu import cpu_seconds

    try:
        pids = [os.getpid(), *(child.pid for child in psutil.Process().children(recursive=True))]
    except psutil.Error:
        pids = [os.getpid()]
    return {pid: cpu for pid in pids if (cpu := cpu_seconds(pid)) is not None}
