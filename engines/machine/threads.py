"""What a second thread gives this machine: the card's memory-bandwidth kernel and its fp32 GEMM, each timed at 1
and at 2 intra-op threads, as the ratio of their rates (the card's stream_thread_gain and compute_thread_gain).

Why: the confirmation's "threads ×2" intervention tells compute from memory-bandwidth only against this machine's
own figures. Arithmetic scales with cores (a GEMM's gain is near 2); streaming is bounded by the memory system,
and how much a second core adds to it differs from machine to machine (little on a desktop whose one core nearly
saturates memory, almost 2× on a server whose single core cannot). A fixed threshold would be right on some machines
and wrong on others; the card's two gains say what this one does.

Why paired repeats: each repeat times a 2-thread batch and a 1-thread batch back to back (alternating which runs
first) and keeps their ratio, so a slow stretch of a shared machine slows both sides of the pair; the figure is the
median ratio with its 95% interval (repeat.until_precise), like every other figure of the card.

Why sized at one thread: the batch is sized while one thread runs, so the slow side lasts about `repeat_s` and the
fast side less; sized at the card's full thread count, one thread on a 64-core machine would take a minute a batch.

Only where the worker may use two physical cores: two threads on one core (or on its SMT siblings) would measure
the sharing of that core, not what a second core gives. And only on a quiet machine: `OtherLoad` measures how much
of the worker's CPUs other processes used while the gain was measured; at half a core or more the second thread
waited for them (on a shared 2-core VM a busy neighbour made the GEMM's "gain" ×0.93), so the card keeps the figure
out and says why — the same threshold the confirmation uses before it plans threads ×2.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from engines import cores as cores_module

BUSY_CORES = 0.5  # other processes' mean use of the worker's CPUs, in cores, beyond which a gain is not the machine's


class Rate(Protocol):
    """A ceiling measurement: `once()` is one repeat's rate (GB/s, FLOP/s — higher is faster)."""

    def once(self) -> float: ...


# ---- Public API
def second_core(root: str = "/", cpus: list[int] | None = None) -> str | None:
    """None when this process may run on at least two physical cores; otherwise why a second thread would have no
    core of its own (the card's "not available" reason)."""
    if cpus is None:
        try:
            cpus = cores_module.allowed(0)
        except cores_module.AffinityUnavailable:
            count = os.cpu_count() or 1
            if count >= 2:
                return None  # no affinity call here (macOS): every CPU is the process's; SMT cannot be told apart
            return "one core: this machine has 1 CPU, so a second thread would share it"
    groups = cores_module.physical_cores(cpus, root)
    if len(groups) >= 2:
        return None
    cpu_text = ",".join(str(c) for c in cpus)
    shared = " (SMT siblings of one core)" if len(cpus) > 1 else ""
    return (f"one core: the worker may run on CPU{'s' if len(cpus) != 1 else ''} {cpu_text}{shared}, so a second "
            "thread would share the first one's core (measure on a worker with two or more physical cores)")


class ThreadGain:
    """The rate of one kernel at 2 threads ÷ its rate at 1 thread; `once()` measures one pair of batches."""

    def __init__(self, torch: Any, make: Callable[[], Rate]):
        self.torch = torch
        with threads(torch, 1):  # the batch is sized (and a GEMM's n chosen) at the slower setting
            self.measurement = make()
        self.pairs = 0

    def once(self) -> float:
        order = (2, 1) if self.pairs % 2 == 0 else (1, 2)  # ABBA: neither side always runs first
        self.pairs += 1
        rates = {}
        for count in order:
            with threads(self.torch, count):
                rates[count] = self.measurement.once()
        return rates[2] / rates[1]


class OtherLoad:
    """How many cores' worth of the worker's CPUs other processes used between `start()` and `stop()`: the busy
    time /proc/stat counts on those CPUs (steal included: the hypervisor's other guests), less this process's own
    CPU time. `stop()` returns {"other_cores", "seconds", "cpus"}, or None where /proc/stat cannot be read."""

    def __init__(self, root: str = "/", cpus: list[int] | None = None,
                 own_cpu_s: Callable[[], float] = time.process_time, clock: Callable[[], float] = time.monotonic):
        self.root, self.own_cpu_s, self.clock = root, own_cpu_s, clock
        if cpus is None:
            try:
                cpus = cores_module.allowed(0)
            except cores_module.AffinityUnavailable:
                cpus = list(range(os.cpu_count() or 1))
        self.cpus = cpus
        self._start: tuple[float, float, float] | None = None

    def start(self) -> None:
        busy = busy_seconds(self.cpus, self.root)
        self._start = None if busy is None else (busy, self.own_cpu_s(), self.clock())

    def stop(self) -> dict[str, Any] | None:
        busy = busy_seconds(self.cpus, self.root)
        if busy is None or self._start is None:
            return None
        busy0, own0, at0 = self._start
        seconds = self.clock() - at0
        if seconds <= 0:
            return None
        other = max(0.0, (busy - busy0) - (self.own_cpu_s() - own0)) / seconds
        return {"other_cores": round(other, 3), "seconds": round(seconds, 3), "cpus": list(self.cpus)}


def busy_seconds(cpus: list[int], root: str = "/") -> float | None:
    """Seconds the given CPUs spent on anything but idle and I/O wait since boot (/proc/stat: user, nice, system,
    irq, softirq, steal); None where /proc/stat cannot be read or lists none of them."""
    try:
        with open(os.path.join(root, "proc/stat"), encoding="ascii") as handle:
            text = handle.read()
    except OSError:
        return None
    wanted, ticks, found = {f"cpu{c}" for c in cpus}, 0, False
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if name not in wanted:
            continue
        try:
            fields = [int(x) for x in rest.split()][:8]  # guest time is already inside user
        except ValueError:
            return None
        if len(fields) < 5:
            return None
        ticks += sum(fields) - fields[3] - fields[4]  # less idle and iowait
        found = True
    if not found:
        return None
    try:
        hertz = os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError, AttributeError):
        hertz = 100
    return ticks / float(hertz or 100)


@contextmanager
def threads(torch: Any, count: int) -> Iterator[None]:
    """torch's intra-op threads set to `count` for the block, restored after (even when the block fails)."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
