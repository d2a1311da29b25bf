"""One feed trial: N emulated accelerators (threads that sleep their step's compute time) fed by R reader
processes (engines.storage.readers) through a bounded buffer, for a set duration.

Why threads for the accelerators: an emulated accelerator only waits for its batch and sleeps, which takes no CPU
and releases the GIL, so hundreds fit in one process; the readers, which do the real work, are processes.

The buffer holds two batches per accelerator (double buffering, at least one sample per reader). Every accelerator
starts with it empty, which is why the first step is not counted in AU (engines.storage.au).

What limited the trial is told from the readers' scheduler state, sampled every few ms from /proc/PID/stat:
runnable ("R": on a CPU or waiting for one) means the reader's CPU work is the limit; waiting on I/O ("D") means the
device is; sleeping ("S") means it waited for a free buffer slot (the accelerators were the limit). Where /proc is
not there, CPU time over wall time stands in.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engines.storage import au as au_math
from engines.storage.errors import StorageError
from engines.storage.readers import reader_main

STATE_POLL_S = 0.005
READY_TIMEOUT_S = 60.0


@dataclass
class TrialPlan:
    accelerators: int
    readers: int
    batch: int
    compute_s: float
    sample_bytes: int  # for the reader's buffer and the custom split (size // sample_bytes)
    samples_per_file: int  # > 0: a file holds this many samples; 0: size // sample_bytes
    files: Sequence[str]
    cold: bool
    check_npy: bool = False
    duration_s: float = 5.0
    min_steps: int = 3
    stall_s: float = 30.0
    step_fn: Callable[[], None] | None = None  # a real model's step in place of the sleep (engines.storage.realstep)


@dataclass
class TrialResult:
    accelerators: int
    steps: list[list[tuple[float, float]]]  # per accelerator: (wait_s, compute_s) per step
    au_per_accelerator: list[float | None]
    au: float | None
    readers: list[dict[str, Any]]
    reader_busy: list[float]
    wall_s: float
    limited_by: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def read_bytes(self) -> int:
        return sum(r["bytes"] for r in self.readers)

    @property
    def latencies(self) -> list[tuple[int, int]]:
        return sorted(pair for r in self.readers for pair in r["latency"])


# ---- Public API
def run_trial(plan: TrialPlan) -> TrialResult:
    """Spawn the readers, start the accelerators together, run until the deadline, collect both sides."""
    if plan.readers > len(plan.files):
        raise StorageError(f"{plan.readers} readers for {len(plan.files)} files: each reader reads its own files",
                           "give --readers at most the number of files, or write more files (labconsole make-data)")
    ctx = multiprocessing.get_context("spawn")
    capacity = max(plan.readers, 2 * plan.accelerators * plan.batch)
    free, filled, ready = ctx.Semaphore(capacity), ctx.Semaphore(0), ctx.Semaphore(0)
    start, stop, failed = ctx.Event(), ctx.Event(), ctx.Event()
    out = ctx.Queue()
    shares = [list(plan.files[i::plan.readers]) for i in range(plan.readers)]
    procs = [ctx.Process(target=reader_main, name=f"labconsole-feed-reader-{i}", daemon=True,
                         args=(i, shares[i], plan.sample_bytes, plan.samples_per_file, plan.cold, plan.check_npy,
                               free, filled, ready, start, stop, failed, out)) for i in range(plan.readers)]
    for proc in procs:
        proc.start()
    try:
        _wait_ready(ready, procs)
        monitor = _StateMonitor([proc.pid for proc in procs])
        steps: list[list[tuple[float, float]]] = [[] for _ in range(plan.accelerators)]
        abort = threading.Event()
        began = time.monotonic()
        deadline = began + plan.duration_s
        threads = [threading.Thread(target=_accelerator, daemon=True, name=f"feed-accelerator-{i}",
                                    args=(steps[i], plan, filled, free, deadline, failed, abort))
                   for i in range(plan.accelerators)]
        monitor.start()
        start.set()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.monotonic() - began
        stop.set()
        monitor.stop()
        stats = _collect(out, len(procs))
    finally:
        stop.set()
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
    errors = [s["error"] for s in stats if s.get("error")]
    if errors:
        raise StorageError(f"a reader failed: {errors[0]}", "check the file and the storage, or remove the file "
                                                            "from --data-dir")
    if abort.is_set():
        raise StorageError(f"the readers delivered no sample for {plan.stall_s:.0f} s",
                           "the storage is stalled or far too slow for this workload; check the device")
    per_acc = [au_math.accelerator_utilization(s) for s in steps]
    busy = monitor.busy() or [min(1.0, s["cpu_s"] / s["wall_s"]) if s["wall_s"] > 0 else 0.0 for s in stats]
    result = TrialResult(plan.accelerators, steps, per_acc, au_math.overall_au(per_acc), stats, busy, wall)
    result.extra["batch"] = plan.batch
    result.extra["busy_source"] = "scheduler state (/proc/PID/stat)" if monitor.busy() else "CPU time / wall"
    return result


# ---- Private API
def _accelerator(steps: list[tuple[float, float]], plan: TrialPlan, filled: Any, free: Any, deadline: float,
                 failed: Any, abort: threading.Event) -> None:
    """One emulated accelerator: wait for a batch, hand its slots back, 'compute' (sleep); repeat until the
    deadline has passed and at least min_steps are done."""
    while True:
        t0 = time.perf_counter()
        got, last = 0, t0
        while got < plan.batch:
            if filled.acquire(timeout=0.1):
                got += 1
                last = time.perf_counter()
            elif failed.is_set() or abort.is_set():
                return
            elif time.perf_counter() - last > plan.stall_s:
                abort.set()
                return
        t1 = time.perf_counter()
        for _ in range(plan.batch):
            free.release()
        if plan.step_fn is None:
            time.sleep(plan.compute_s)
        else:
            plan.step_fn()
        t2 = time.perf_counter()
        steps.append((t1 - t0, t2 - t1))
        if len(steps) >= plan.min_steps and time.monotonic() >= deadline:
            return


def _wait_ready(ready: Any, procs: list[Any]) -> None:
    """Every reader started (and signalled), or a StorageError as soon as one died or the wait ran out."""
    waiting, give_up = len(procs), time.monotonic() + READY_TIMEOUT_S
    while waiting:
        if ready.acquire(timeout=0.1):
            waiting -= 1
        elif any(proc.exitcode is not None for proc in procs):
            code = next(proc.exitcode for proc in procs if proc.exitcode is not None)
            raise StorageError(f"a reader process exited before it started reading (exit code {code})",
                               "see the error printed above; a spawned reader re-imports the main module, so a "
                               "script must guard its work with `if __name__ == '__main__':`")
        elif time.monotonic() > give_up:
            raise StorageError(f"a reader process did not start within {READY_TIMEOUT_S:.0f} s",
                               "the machine is overloaded or cannot spawn processes; try fewer --readers")


def _collect(out: Any, count: int) -> list[dict[str, Any]]:
    stats = []
    for _ in range(count):
        try:
            stats.append(out.get(timeout=30))
        except queue.Empty:
            raise StorageError("a reader process ended without reporting (killed, or out of memory?)",
                               "run again with fewer --readers, and check the system log") from None
    return sorted(stats, key=lambda s: s["index"])


class _StateMonitor:
    """Samples each reader's scheduler state; busy() = the share of samples in which it was runnable."""

    def __init__(self, pids: list[int]):
        self.pids = pids
        self.counts = [[0, 0] for _ in pids]  # [runnable, all]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="feed-reader-states")
        self.ok = True

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def busy(self) -> list[float]:
        if not self.ok or not all(total for _, total in self.counts):
            return []
        return [running / total for running, total in self.counts]

    def _loop(self) -> None:
        while not self._stop.wait(STATE_POLL_S):
            for i, pid in enumerate(self.pids):
                try:
                    with open(f"/proc/{pid}/stat", "rb") as handle:
                        state = handle.read().rsplit(b")", 1)[1].split()[0]
                except (OSError, IndexError):
                    self.ok = False
                    return
                self.counts[i][0] += state == b"R"
                self.counts[i][1] += 1
