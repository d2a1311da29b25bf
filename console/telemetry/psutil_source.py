"""CPU and memory of the host, and of the watched engine worker, through psutil.

Always available (psutil is a hard dependency); it is the floor every lab machine has.
"""

from __future__ import annotations

import psutil

from .base import MetricInfo, Sample, Source

GIB = float(1 << 30)
MEASURED = "measured"


class PsutilSource(Source):
    """``cpu.util``, ``cpu{i}.util``, ``mem.used``, ``mem.total``; ``worker.rss``/``worker.cpu`` when watching.

    CPU percentages are over the interval since the previous ``sample()`` (psutil's ``interval=None``
    mode), so the first interval starts at ``open()``, which primes the counters.
    ``worker.cpu`` is in % of one core (can exceed 100 for a multi-threaded worker); ``worker.rss`` is
    the resident set of the watched pid itself, not of its children.
    """

    name = "psutil"

    def __init__(self) -> None:
        self._ncpu = 0
        self._core_metrics: list[str] = []
        self._proc: psutil.Process | None = None
        self._opened = False

    # ---- Public API

    def open(self) -> None:
        psutil.cpu_percent(interval=None)
        per_core = psutil.cpu_percent(interval=None, percpu=True)
        self._ncpu = len(per_core)
        self._core_metrics = [f"cpu{i}.util" for i in range(self._ncpu)]
        self._opened = True

    def metrics(self) -> list[MetricInfo]:
        out = [MetricInfo("cpu.util", "%", "CPU utilisation, all logical cores", MEASURED)]
        out += [MetricInfo(m, "%", f"CPU utilisation, logical core {i}", MEASURED)
                for i, m in enumerate(self._core_metrics)]
        out += [
            MetricInfo("mem.used", "GiB", "System memory in use (total - available)", MEASURED),
            MetricInfo("mem.total", "GiB", "System memory installed", MEASURED),
            MetricInfo("worker.rss", "GiB", "Resident memory of the watched worker pid (while watched)",
                       MEASURED),
            MetricInfo("worker.cpu", "%", "CPU of the watched worker pid, % of one core (while watched)",
                       MEASURED),
        ]
        return out

    def watch_pid(self, pid: int | None) -> None:
        self._proc = None
        if pid is None:
            return
        try:
            proc = psutil.Process(pid)
            proc.cpu_percent(interval=None)  # prime: the next sample covers the interval from now
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return
        self._proc = proc

    def sample(self, t_ns: int) -> list[Sample]:
        if not self._opened:
            self.open()
        name = self.name
        rows: list[Sample] = [(t_ns, name, "cpu.util", psutil.cpu_percent(interval=None), "%", MEASURED)]
        per_core = psutil.cpu_percent(interval=None, percpu=True)
        # strict=False: a core hot-plugged after open() is ignored rather than breaking the tick.
        rows += [(t_ns, name, m, v, "%", MEASURED)
                 for m, v in zip(self._core_metrics, per_core, strict=False)]
        vm = psutil.virtual_memory()
        rows.append((t_ns, name, "mem.used", (vm.total - vm.available) / GIB, "GiB", MEASURED))
        rows.append((t_ns, name, "mem.total", vm.total / GIB, "GiB", MEASURED))
        proc = self._proc
        if proc is not None:
            try:
                with proc.oneshot():
                    if proc.status() == psutil.STATUS_ZOMBIE:  # exited, not yet reaped by its parent
                        raise psutil.NoSuchProcess(proc.pid)
                    rss = proc.memory_info().rss
                    cpu = proc.cpu_percent(interval=None)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                self._proc = None  # gone: stop reporting it, quietly
            else:
                rows.append((t_ns, name, "worker.rss", rss / GIB, "GiB", MEASURED))
                rows.append((t_ns, name, "worker.cpu", cpu, "%", MEASURED))
        return rows

    def close(self) -> None:
        self._proc = None
        self._opened = False
