"""CPU, memory, disk and network of the host, and of the watched engine worker, through psutil.

Always available (psutil is a hard dependency); it is the floor every lab machine has. Individual metrics
can still be missing (no cpufreq in a VM, no /proc/diskstats in some containers, no page-fault counters off
Linux): those are left out of ``metrics()`` and named with the reason in ``unavailable_metrics()``.

Two readers give the same counters: on Linux :class:`~console.telemetry.procfs.ProcfsReader` (files opened
once, re-read with ``pread``: half the CPU time of the psutil calls at 10 Hz), elsewhere :class:`PsutilReader`.
The source turns either's counters into rows the same way, rates through one
:class:`~console.telemetry.rates.CounterRates` per counter group. The slow group (frequency, load, swap) is read
through psutil everywhere.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Protocol

import psutil

from .base import Every, MetricInfo, Sample, Source
from .metadata import MetricSpec
from .procfs import GIB, ProcfsReader, is_loopback
from .rates import CounterRates

MB = 1e6
MEASURED = "measured"
# Frequency, load average and swap change slowly, and cpu_freq() reads one sysfs file per core (milliseconds on
# a 128-core host): read them once a second, not at every tick.
SLOW_PERIOD_S = 1.0
# Block devices that are views of other devices (their traffic is already counted on a physical disk) or not
# disks at all. On Linux the rule is structural (see _whole_disks); this list is the fallback elsewhere.
_VIRTUAL_PREFIXES = ("loop", "ram", "zram", "dm-", "md", "sr", "fd", "nbd")
_LINUX = sys.platform.startswith("linux")


class CounterReader(Protocol):
    """Cumulative counters of the host and of one watched pid; both readers below have this shape."""

    cores: list[int]

    def cpu(self) -> dict[int, tuple[float, float]]: ...  # cpu index (-1: all) -> (busy, total)
    def memory(self) -> tuple[float, float]: ...  # (total, used) GiB
    def disks(self) -> dict[str, tuple[int, int, int, int]]: ...  # bytes r/w, requests r/w
    def net(self) -> tuple[int, int]: ...  # bytes sent, received
    def watch(self, pid: int | None) -> bool: ...
    def worker(self) -> tuple[float, int, int, float] | None: ...  # CPU s, minor, major faults, RSS GiB
    def close(self) -> None: ...


class PsutilSource(Source):
    """Host CPU/memory/swap/disk/network and the watched worker's CPU, memory and page faults.

    - CPU percentages are over the interval since the previous ``sample()``, so the first interval starts at
      ``open()``, which primes the counters.
    - ``worker.cpu`` is in % of one core (can exceed 100 for a multi-threaded worker); ``worker.rss`` is
      the resident set of the watched pid itself, not of its children.
    - Disk, network, page-fault and worker-CPU figures are rates (see :class:`CounterRates`): counter deltas
      over the interval since the previous read divided by its length, stamped at its end; a counter that goes
      backwards (device re-attached) skips one interval instead of reporting a negative rate.
    - Disks: whole physical disks only (on Linux: entries of /sys/block with a ``device`` link, so
      partitions, loop, device-mapper and md devices, which re-count a physical disk's traffic, are left
      out); ``disk.read``/``disk.write`` are their sum.
    """

    name = "psutil"
    metric_specs = (
        MetricSpec(r"cpu\.util", "%", "util", "CPU total"),
        MetricSpec(r"cpu(\d+)\.util", "%", "util", "cpu{0}"),
        MetricSpec(r"cpu\.freq", "MHz", "clocks", "CPU"),
        MetricSpec(r"cpu\.load(1|5|15)", "tasks"),
        MetricSpec(r"mem\.used", "GiB", "memory", "system used"),
        MetricSpec(r"mem\.total", "GiB"),
        MetricSpec(r"swap\.used", "GiB", "memory", "swap used"),
        MetricSpec(r"swap\.total", "GiB"),
        MetricSpec(r"disk\.(read|write)", "MB/s", "io", "disk {0}"),
        MetricSpec(r"disk\.(.+)\.(read|write)", "MB/s"),
        MetricSpec(r"disk\.(.+)\.(read|write)_iops", "1/s"),
        MetricSpec(r"net\.(sent|recv)", "MB/s", "io", "network {0}"),
        MetricSpec(r"worker\.rss", "GiB", "memory", "worker RSS"),
        MetricSpec(r"worker\.cpu", "%"),
        MetricSpec(r"worker\.faults\.(minor|major)", "1/s"),
    )

    def __init__(self, procfs: bool | None = None) -> None:
        # procfs: read /proc directly (Linux); None = when /proc/stat is there. False forces the psutil calls.
        self._want_procfs = procfs
        self._reader: CounterReader | None = None
        self._core_metrics: list[tuple[int, str]] = []
        self._cpu_prev: dict[int, tuple[float, float]] = {}
        self._opened = False
        self._slow: Every | None = None
        self._has_freq = False
        self._has_swap = False
        self._disks: list[str] = []
        self._disk_names: dict[str, tuple[str, str, str, str]] = {}
        self._disk_rates: dict[str, CounterRates] = {}
        self._has_net = False
        self._net_rates = CounterRates()
        self._watching = False
        self._worker_rates = CounterRates()
        self._unavailable: dict[str, str] = {}

    @property
    def fast_path(self) -> bool:
        """True when the counters come from /proc directly (Linux), False for the psutil calls."""
        return isinstance(self._reader, ProcfsReader)

    # ---- Public API

    def open(self) -> None:
        self.close()
        self._slow = Every(SLOW_PERIOD_S, self.tick_ns)
        unavailable: dict[str, str] = {}
        try:
            self._has_freq = psutil.cpu_freq() is not None
            why = "psutil.cpu_freq() returned nothing (no cpufreq in /sys and no 'cpu MHz' in /proc/cpuinfo)"
        except Exception as exc:  # psutil raises on some platforms without a frequency interface
            self._has_freq, why = False, f"psutil.cpu_freq() failed: {exc!r}"
        if not self._has_freq:
            unavailable["cpu.freq"] = why
        try:
            psutil.swap_memory()
            self._has_swap = True
        except Exception as exc:
            unavailable["swap.used"] = f"psutil.swap_memory() failed: {exc!r}"

        counters, why = _per_device(lambda: psutil.disk_io_counters(perdisk=True), "disk_io_counters",
                                    "no block devices visible (no /proc/diskstats, e.g. in some containers)")
        self._disks = _whole_disks(list(counters))
        if counters and not self._disks:
            why = f"only virtual block devices visible ({', '.join(sorted(counters)[:6])}); no physical disk"
        if not self._disks:
            unavailable["disk.read"] = unavailable["disk.write"] = why
        self._disk_names = {d: (f"disk.{d}.read", f"disk.{d}.write", f"disk.{d}.read_iops",
                                f"disk.{d}.write_iops") for d in self._disks}

        nics, why = _per_device(lambda: psutil.net_io_counters(pernic=True), "net_io_counters",
                                "no network interface visible")
        self._has_net = any(not is_loopback(n) for n in nics)
        if not self._has_net:
            unavailable["net.sent"] = unavailable["net.recv"] = why
        if not _LINUX:
            why = f"page-fault counters are read from /proc/PID/stat, which {sys.platform} does not have"
            unavailable["worker.faults.minor"] = unavailable["worker.faults.major"] = why
        self._unavailable = unavailable

        self._reader = self._open_reader()
        self._core_metrics = [(i, f"cpu{i}.util") for i in self._reader.cores]
        self._prime(time.perf_counter_ns())
        self._opened = True

    def metrics(self) -> list[MetricInfo]:
        slow = SLOW_PERIOD_S
        out = [MetricInfo("cpu.util", "%", "CPU utilisation, all logical cores", MEASURED)]
        out += [MetricInfo(m, "%", f"CPU utilisation, logical core {i}", MEASURED) for i, m in self._core_metrics]
        if self._has_freq:
            out.append(MetricInfo("cpu.freq", "MHz", "Mean current frequency over logical cores (cpufreq; in a "
                                  "VM often the nominal value from /proc/cpuinfo)", MEASURED, slow))
        out += [MetricInfo(f"cpu.load{n}", "tasks", f"Load average over {n} min (runnable + uninterruptible "
                           "tasks; emulated on Windows)", MEASURED, slow) for n in (1, 5, 15)]
        out += [
            MetricInfo("mem.used", "GiB", "System memory in use (total - available)", MEASURED),
            MetricInfo("mem.total", "GiB", "System memory installed", MEASURED),
        ]
        if self._has_swap:
            out += [MetricInfo("swap.used", "GiB", "Swap in use (0 when no swap is configured: see swap.total)",
                               MEASURED, slow),
                    MetricInfo("swap.total", "GiB", "Swap configured", MEASURED, slow)]
        if self._disks:
            names = ", ".join(self._disks)
            out += [MetricInfo("disk.read", "MB/s", f"Bytes read per second, sum over whole disks ({names})",
                               MEASURED),
                    MetricInfo("disk.write", "MB/s", f"Bytes written per second, sum over whole disks ({names})",
                               MEASURED)]
            for d, (r, w, ri, wi) in self._disk_names.items():
                out += [MetricInfo(r, "MB/s", f"Bytes read per second from {d}", MEASURED),
                        MetricInfo(w, "MB/s", f"Bytes written per second to {d}", MEASURED),
                        MetricInfo(ri, "1/s", f"Completed read requests per second on {d} (IOPS)", MEASURED),
                        MetricInfo(wi, "1/s", f"Completed write requests per second on {d} (IOPS)", MEASURED)]
        if self._has_net:
            out += [MetricInfo("net.sent", "MB/s", "Bytes sent per second, all interfaces but loopback", MEASURED),
                    MetricInfo("net.recv", "MB/s", "Bytes received per second, all interfaces but loopback",
                               MEASURED)]
        out += [
            MetricInfo("worker.rss", "GiB", "Resident memory of the watched worker pid (while watched)",
                       MEASURED),
            MetricInfo("worker.cpu", "%", "CPU of the watched worker pid, % of one core (while watched)",
                       MEASURED),
        ]
        if _LINUX:
            out += [MetricInfo("worker.faults.minor", "1/s", "Minor page faults per second of the watched worker "
                               "(no disk I/O: first touch, copy-on-write)", MEASURED),
                    MetricInfo("worker.faults.major", "1/s", "Major page faults per second of the watched worker "
                               "(page read from disk: mmap'd weights, swap)", MEASURED)]
        return out

    def unavailable_metrics(self) -> dict[str, str]:
        return dict(self._unavailable)

    def watch_pid(self, pid: int | None) -> None:
        self._worker_rates.reset()
        reader = self._reader
        self._watching = reader is not None and pid is not None and reader.watch(pid)
        if not self._watching:
            if reader is not None:
                reader.watch(None)
            return
        first = reader.worker()  # prime: the next sample covers the interval from now
        if first is None:
            self._unwatch()
            return
        self._worker_rates.update(first[:3], time.perf_counter_ns())

    def sample(self, t_ns: int) -> list[Sample]:
        if not self._opened:
            self.open()
        reader = self._reader
        assert reader is not None
        rows: list[Sample] = []
        add = rows.append
        self._cpu_rows(reader.cpu(), t_ns, add)
        total, used = reader.memory()
        add((t_ns, self.name, "mem.used", used, "GiB", MEASURED))
        add((t_ns, self.name, "mem.total", total, "GiB", MEASURED))
        if self._slow is not None and self._slow.due(t_ns):
            self._slow_rows(t_ns, add)
        if self._disks:
            self._disk_rows(reader.disks(), t_ns, add)
        if self._has_net:
            rates = self._net_rates.update(reader.net(), t_ns)
            if rates is not None:
                add((t_ns, self.name, "net.sent", rates[0] / MB, "MB/s", MEASURED))
                add((t_ns, self.name, "net.recv", rates[1] / MB, "MB/s", MEASURED))
        if self._watching:
            self._worker_rows(t_ns, add)
        return rows

    def close(self) -> None:
        self._opened = False
        self._watching = False
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    # ---- Private API

    def _open_reader(self) -> CounterReader:
        if self._want_procfs is not False and os.path.exists("/proc/stat"):
            try:
                return ProcfsReader(self._disks, self._has_net)
            except (OSError, ValueError):
                if self._want_procfs:
                    raise
                # an unusual /proc: psutil knows its variants
        return PsutilReader(self._disks)

    def _prime(self, t_ns: int) -> None:
        reader = self._reader
        assert reader is not None
        self._cpu_prev = reader.cpu()
        disks = reader.disks() if self._disks else {}
        self._disk_rates = {d: CounterRates() for d in self._disks}
        for d, counters in disks.items():
            self._disk_rates[d].update(counters, t_ns)
        self._net_rates = CounterRates()
        if self._has_net:
            self._net_rates.update(reader.net(), t_ns)

    def _cpu_rows(self, cpu: dict[int, tuple[float, float]], t_ns: int, add: Callable[[Sample], None]) -> None:
        """Busy share of each logical core (and of all) since the previous tick, like psutil.cpu_percent."""
        prev, self._cpu_prev = self._cpu_prev, cpu
        name = self.name
        b0, t0 = prev.get(-1, (0, 0))
        b1, t1 = cpu[-1]
        if t1 > t0:
            add((t_ns, name, "cpu.util", _pct(b1 - b0, t1 - t0), "%", MEASURED))
        for i, metric in self._core_metrics:  # a core hot-plugged after open() is ignored
            cur, old = cpu.get(i), prev.get(i)
            if cur is not None and old is not None and cur[1] > old[1]:
                add((t_ns, name, metric, _pct(cur[0] - old[0], cur[1] - old[1]), "%", MEASURED))

    def _slow_rows(self, t_ns: int, add: Callable[[Sample], None]) -> None:
        name = self.name
        if self._has_freq:
            freq = psutil.cpu_freq()
            if freq is not None and freq.current > 0:
                add((t_ns, name, "cpu.freq", float(freq.current), "MHz", MEASURED))
        l1, l5, l15 = psutil.getloadavg()
        add((t_ns, name, "cpu.load1", float(l1), "tasks", MEASURED))
        add((t_ns, name, "cpu.load5", float(l5), "tasks", MEASURED))
        add((t_ns, name, "cpu.load15", float(l15), "tasks", MEASURED))
        if self._has_swap:
            sw = psutil.swap_memory()
            add((t_ns, name, "swap.used", sw.used / GIB, "GiB", MEASURED))
            add((t_ns, name, "swap.total", sw.total / GIB, "GiB", MEASURED))

    def _disk_rows(self, counters: dict[str, tuple[int, int, int, int]], t_ns: int,
                   add: Callable[[Sample], None]) -> None:
        name = self.name
        total_r = total_w = 0.0
        complete = True
        for d, (r, w, ri, wi) in self._disk_names.items():
            rates_of = self._disk_rates[d]
            c = counters.get(d)
            if c is None:  # disk detached: nothing to say about it this time
                rates_of.reset()
                complete = False
                continue
            rates = rates_of.update(c, t_ns)
            if rates is None:
                complete = False
                continue
            rb, wb, rc, wc = rates
            add((t_ns, name, r, rb / MB, "MB/s", MEASURED))
            add((t_ns, name, w, wb / MB, "MB/s", MEASURED))
            add((t_ns, name, ri, rc, "1/s", MEASURED))
            add((t_ns, name, wi, wc, "1/s", MEASURED))
            total_r += rb
            total_w += wb
        if complete:  # a sum over some disks would under-report: only when every disk was read
            add((t_ns, name, "disk.read", total_r / MB, "MB/s", MEASURED))
            add((t_ns, name, "disk.write", total_w / MB, "MB/s", MEASURED))

    def _worker_rows(self, t_ns: int, add: Callable[[Sample], None]) -> None:
        assert self._reader is not None
        got = self._reader.worker()
        if got is None:  # gone, or exited and not yet reaped: stop reporting it, quietly
            self._unwatch()
            return
        cpu_s, minor, major, rss = got
        name = self.name
        add((t_ns, name, "worker.rss", rss, "GiB", MEASURED))
        rates = self._worker_rates.update((cpu_s, minor, major), t_ns)
        if rates is None:
            return
        add((t_ns, name, "worker.cpu", rates[0] * 100.0, "%", MEASURED))
        if _LINUX:
            add((t_ns, name, "worker.faults.minor", rates[1], "1/s", MEASURED))
            add((t_ns, name, "worker.faults.major", rates[2], "1/s", MEASURED))

    def _unwatch(self) -> None:
        self._watching = False
        self._worker_rates.reset()
        if self._reader is not None:
            self._reader.watch(None)


class PsutilReader:
    """The portable reader: the same counters as :class:`ProcfsReader`, through psutil's calls."""

    def __init__(self, disks: list[str]) -> None:
        self._disks = disks
        self.cores = list(range(len(psutil.cpu_times(percpu=True))))
        self._proc: psutil.Process | None = None

    def cpu(self) -> dict[int, tuple[float, float]]:
        out = {-1: _busy_total(psutil.cpu_times())}
        for i, times in enumerate(psutil.cpu_times(percpu=True)):
            out[i] = _busy_total(times)
        return out

    def memory(self) -> tuple[float, float]:
        vm = psutil.virtual_memory()
        return vm.total / GIB, (vm.total - vm.available) / GIB

    def disks(self) -> dict[str, tuple[int, int, int, int]]:
        counters = psutil.disk_io_counters(perdisk=True) or {}
        return {d: (c.read_bytes, c.write_bytes, c.read_count, c.write_count)
                for d in self._disks if (c := counters.get(d)) is not None}

    def net(self) -> tuple[int, int]:
        sent = recv = 0
        for nic, c in (psutil.net_io_counters(pernic=True) or {}).items():
            if not is_loopback(nic):
                sent += c.bytes_sent
                recv += c.bytes_recv
        return sent, recv

    def watch(self, pid: int | None) -> bool:
        self._proc = None
        if pid is None:
            return True
        try:
            self._proc = psutil.Process(pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return False
        return True

    def worker(self) -> tuple[float, int, int, float] | None:
        proc = self._proc
        if proc is None:
            return None
        try:
            with proc.oneshot():
                if proc.status() == psutil.STATUS_ZOMBIE:  # exited, not yet reaped by its parent
                    return None
                rss = proc.memory_info().rss
                times = proc.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return None
        faults = _read_faults(proc.pid) if _LINUX else (0, 0)
        if faults is None:  # /proc/PID/stat is gone: so is the process
            return None
        return times.user + times.system, faults[0], faults[1], rss / GIB

    def close(self) -> None:
        self._proc = None


def _busy_total(times) -> tuple[float, float]:
    """(busy, total) CPU seconds with psutil.cpu_percent's formulas: guest time is already inside user."""
    total = sum(times) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)
    return total - times.idle - getattr(times, "iowait", 0.0), total


def _pct(busy: float, total: float) -> float:
    return min(100.0, max(0.0, 100.0 * busy / total))


def _per_device(read: Callable[[], dict | None], call: str, none_seen: str) -> tuple[dict, str]:
    """psutil's per-disk or per-NIC counters, and why there would be none to show: the call `call` failed, or
    it saw none (`none_seen`)."""
    try:
        return read() or {}, none_seen
    except Exception as exc:
        return {}, f"psutil.{call}() failed: {exc!r}"


def _whole_disks(names: list[str], sys_block: str = "/sys/block") -> list[str]:
    """Physical whole disks among psutil's per-disk names (no partitions, no virtual devices)."""
    try:
        entries = set(os.listdir(sys_block))
    except OSError:  # not Linux: best effort by name
        return sorted(n for n in names if not n.startswith(_VIRTUAL_PREFIXES))
    return sorted(n for n in names
                  if n in entries and os.path.exists(os.path.join(sys_block, n, "device"))
                  and not n.startswith(_VIRTUAL_PREFIXES))


def _read_faults(pid: int) -> tuple[int, int] | None:
    """(minor, major) page faults of ``pid`` from /proc/PID/stat (fields 10 and 12), None when gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data.rpartition(b")")[2].split()  # after "(comm)", which may contain spaces
    try:
        return int(fields[7]), int(fields[9])
    except (IndexError, ValueError):
        return None
