"""The console's core partition: the console (GUI thread, plots, history writer) and its telemetry sampler keep to
a reserved core set while a local worker measures on the rest.

Why: on a small machine the window's painting and sampling compete with the worker for the same cores, so the
window would report a property of the window (DESIGN.md §10). Qt-free; the window plans one partition at launch
(one reserved core by default, `LABCONSOLE_CONSOLE_CORES` to change it), the CLI takes `--console-cores N`
(0 by default: no partition, as before).

How it is applied, and in which order (children inherit the affinity of the thread that starts them):
- `Hold.acquire()` moves every thread of the console process, and the telemetry sampler process, to the console
  set; everything the console starts from then on (a sampler, a worker) starts there too;
- the worker is moved to the worker set by pid right after it is spawned (`place_worker`, from console.run.runner and
  console.run.worker_pool), before its interpreter has finished starting, so its engine's threads start on the
  worker's cores; the worker then sizes "auto" threads from those cores (engines.cores.auto_threads);
- `Hold.release()` at the end of the run gives the console and the sampler back the cores they had, so what the
  window starts between runs (a machine card's measurement) is not confined to the console's core.
Holds nest (a sweep's runs, a race): the first takes the cores, the last gives them back.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from engines import cores

WINDOW_DEFAULT = 1  # cores the window reserves for itself
ENV = "LABCONSOLE_CONSOLE_CORES"
MAX_CONSOLE_CORES = 4096


class PartitionError(ValueError):
    """A console core count that cannot be used; the message names the option and the fix."""


@dataclass(frozen=True)
class Partition:
    """A planned split: `console` and `worker` CPU lists (both empty when not confined, `reason` says why)."""

    requested: int
    console: tuple[int, ...] = ()
    worker: tuple[int, ...] = ()
    reason: str = ""
    cost: str = ""
    allowed: tuple[int, ...] = field(default=())

    @property
    def confined(self) -> bool:
        return bool(self.console) and bool(self.worker)

    def describe(self) -> str:
        """One line for a summary or the CLI: both sets, or "not confined (why)"."""
        if not self.confined:
            return f"not confined ({self.reason})"
        return (f"worker CPUs {cores.format_cpus(self.worker)}, console CPUs {cores.format_cpus(self.console)} "
                f"(reserved: {self.requested} core{'s' if self.requested != 1 else ''})")

    def record(self) -> dict[str, Any]:
        """Plain data for the run's environment (and summary): what was planned; `applied` is added by the run."""
        return {"confined": self.confined, "requested": self.requested,
                "worker_cpus": list(self.worker) or None, "console_cpus": list(self.console) or None,
                "worker": cores.format_cpus(self.worker) if self.confined else None,
                "console": cores.format_cpus(self.console) if self.confined else None,
                "reason": None if self.confined else self.reason, "cost": self.cost or None,
                "text": self.describe(),
                "method": "os.sched_setaffinity on every thread of the console, its telemetry sampler and the "
                          "worker (Linux); the console's cores are the lowest-numbered physical cores (SMT "
                          "siblings together)"}


# ---- Public API
def parse_count(value: Any, source: str = "--console-cores") -> int:
    """A console core count from a flag or the environment: a whole number ≥ 0. PartitionError names `source`."""
    text = str(value).strip()
    if not text.isdigit() or int(text) > MAX_CONSOLE_CORES:
        raise PartitionError(f"{source} must be a whole number of cores, 0 (no partition) or more, got {value!r}; "
                             f"fix: {source} 1 reserves one core for the console")
    return int(text)


def window_count(environ: dict[str, str] | None = None) -> tuple[int, str | None]:
    """The window's reserved core count: $LABCONSOLE_CONSOLE_CORES, else 1; with a problem to show when the
    variable is unusable (the default is used then)."""
    environ = os.environ if environ is None else environ
    value = environ.get(ENV)
    if value is None or not value.strip():
        return WINDOW_DEFAULT, None
    try:
        return parse_count(value, ENV), None
    except PartitionError as exc:
        return WINDOW_DEFAULT, f"{exc} (using {WINDOW_DEFAULT})"


def plan(console_cores: int, allowed: list[int] | None = None, root: str = "/",
         unavailable: str | None = None) -> Partition:
    """Reserve `console_cores` physical cores (with their SMT siblings) for the console; the worker gets the rest
    of the CPUs this process may use. Never raises for a machine that cannot do it: the partition then says
    "not confined (why)". `allowed`/`root`/`unavailable` replace this machine's facts (tests)."""
    count = parse_count(console_cores)
    if count == 0:
        return Partition(0, reason="no partition asked: console cores 0, so the console shares the worker's cores")
    problem = unavailable if unavailable is not None else cores.available()
    if problem:
        return Partition(count, reason=problem)
    if allowed is None:
        try:
            allowed = cores.allowed(0)
        except cores.AffinityUnavailable as exc:
            return Partition(count, reason=str(exc))
    groups = cores.physical_cores(allowed, root)
    if len(groups) <= count:
        return Partition(count, allowed=tuple(allowed),
                         reason=f"this process may use {len(groups)} physical core{'s' if len(groups) != 1 else ''}"
                                f" (CPUs {cores.format_cpus(allowed)}); reserving {count} would leave the worker "
                                f"none. Fix: --console-cores {max(0, len(groups) - 1)}")
    console = tuple(cpu for group in groups[:count] for cpu in group)
    worker = tuple(cpu for group in groups[count:] for cpu in group)
    left = len(groups) - count
    cost = (f"the worker gets {left} of {len(groups)} physical cores (CPUs {cores.format_cpus(worker)}); "
            f"engine-default threads follow: {left} thread{'s' if left != 1 else ''}")
    if left == 1:
        cost += (f". On this {len(groups)}-core machine a workload that scales with cores runs on one core only: "
                 "its throughput is that of one core, and it no longer competes with the console")
    return Partition(count, console, worker, cost=cost, allowed=tuple(allowed))


def not_applied(reason: str) -> Partition:
    """A partition that does not apply to this run (a run on a cluster node, an in-process run), saying why."""
    return Partition(0, reason=reason)


def place_worker(partition: Partition | None, pid: int | None) -> dict[str, Any] | None:
    """Move a just-spawned worker (every thread) to the worker cores. None when there is nothing to do; else
    {"worker": "applied" | "failed (why)", "worker_actual": [cpus read back]}."""
    if partition is None or not partition.confined or not pid:
        return None
    try:
        cores.move_process(pid, partition.worker)
        actual = cores.allowed(pid)
    except (cores.AffinityUnavailable, ValueError) as exc:
        return {"worker": f"failed ({exc})", "worker_actual": None}
    return {"worker": "applied", "worker_actual": actual}


class Hold:
    """The console's side of one run: `acquire()` moves the console process and the sampler to the console cores
    (the first hold does it, nested holds count), `release()` gives back what they had (the last hold does it).
    `applied` says what happened, for the run's record."""

    _lock = threading.Lock()
    _holders = 0
    _saved: dict[int, list[int]] = {}  # pid → CPUs it had before the first hold

    def __init__(self, partition: Partition, sampler_pid: int | None = None):
        self.partition = partition
        self.sampler_pid = sampler_pid
        self.applied: dict[str, str] = {}
        self._held = False

    def acquire(self) -> dict[str, str]:
        if not self.partition.confined:
            return self.applied
        cls = type(self)
        with cls._lock:
            for name, pid in (("console", os.getpid()), ("sampler", self.sampler_pid)):
                if not pid:
                    continue
                try:
                    if pid not in cls._saved:
                        cls._saved[pid] = cores.allowed(pid)
                    cores.move_process(pid, self.partition.console)
                    self.applied[name] = "applied"
                except (cores.AffinityUnavailable, ValueError) as exc:
                    self.applied[name] = f"failed ({exc})"
            cls._holders += 1
            self._held = True
        return self.applied

    def add_sampler(self, pid: int | None) -> None:
        """A sampler started after `acquire()` (the CLI's own): it inherited the console cores; move it anyway, so
        the record does not rest on inheritance. Release has nothing to give back to it: it ends with the run."""
        if not self._held or not pid:
            return
        try:
            cores.move_process(pid, self.partition.console)
            self.applied["sampler"] = "applied"
        except (cores.AffinityUnavailable, ValueError) as exc:
            self.applied["sampler"] = f"failed ({exc})"

    def release(self) -> None:
        if not self._held:
            return
        cls = type(self)
        with cls._lock:
            self._held = False
            cls._holders -= 1
            if cls._holders > 0:
                return
            saved, cls._saved = cls._saved, {}
        for pid, cpus in saved.items():
            try:
                cores.move_process(pid, cpus)
            except (cores.AffinityUnavailable, ValueError, OSError):
                continue  # a sampler that ended has nothing to give back


def environment(partition: Partition, hold: Hold | None, placed: dict[str, Any] | None) -> dict[str, Any]:
    """The run's `partition` record: the plan, what was applied, the worker's CPUs read back."""
    record = partition.record()
    applied = dict(hold.applied) if hold is not None else {}
    if placed:
        applied["worker"] = placed["worker"]
        record["worker_actual"] = placed.get("worker_actual")
    if partition.confined:
        record["applied"] = applied
        # A sampler that could not be moved because it has ended takes no CPU: only the console and the worker
        # decide whether the run was confined (the sampler's outcome stays in `applied`).
        failed = {name: how for name, how in applied.items() if how != "applied"
                  and not (name == "sampler" and "has ended" in how)}
        if failed or "worker" not in applied:
            what = "; ".join(f"{name}: {how}" for name, how in failed.items()) or "the worker was not moved"
            record.update(confined=False, reason=f"partition planned but not applied — {what}")
            record["text"] = f"not confined ({record['reason']})"
    return record


def shared_cores(record: dict[str, Any] | None) -> bool:
    """The console ran on the worker's cores during this run (no partition, or one that did not apply)."""
    return not (record or {}).get("confined")
