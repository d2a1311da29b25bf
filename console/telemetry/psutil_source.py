"""CPU, memory, disk and network of the host, and of the watched engine worker, through psutil.

Always available (psutil is a hard dependency); it is the floor every lab machine has. Individual metrics
can still be missing (no cpufreq in a VM, no /proc/diskstats in some containers, no page-fault counters off
Linux): those are left out of ``metrics()`` and named with the reason in ``unavailable_metrics()``.

Cost: on Linux the per-tick readings (CPU, memory, disk, network, the worker) come from the same /proc files
psutil reads, but through file descriptors opened once and re-read with ``pread`` at offset 0 (the kernel
regenerates a seq_file from the start), parsed for just the fields needed. At 10 Hz that halves the sampler's
CPU time against the psutil calls, which open, parse fully and close several files per call; psutil stays the
portable path elsewhere and reads the slow group (frequency, load, swap) everywhere.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

import psutil

from .base import Every, MetricInfo, Sample, Source

GIB = float(1 << 30)
MB = 1e6
MEASURED = "measured"
# Frequency, load average and swap change slowly, and cpu_freq() reads one sysfs file per core (milliseconds on
# a 128-core host): read them once a second, not at every tick.
SLOW_PERIOD_S = 1.0
# Block devices that are views of other devices (their traffic is already counted on a physical disk) or not
# disks at all. On Linux the rule is structural (see _whole_disks); this list is the fallback elsewhere.
_VIRTUAL_PREFIXES = ("loop", "ram", "zram", "dm-", "md", "sr", "fd", "nbd")


class PsutilSource(Source):
    """Host CPU/memory/swap/disk/network and the watched worker's CPU, memory and page faults.

    - CPU percentages are over the interval since the previous ``sample()`` (psutil's ``interval=None``
      mode), so the first interval starts at ``open()``, which primes the counters.
    - ``worker.cpu`` is in % of one core (can exceed 100 for a multi-threaded worker); ``worker.rss`` is
      the resident set of the watched pid itself, not of its children.
    - Disk, network and page-fault figures are rates: counter deltas over the interval since the previous
      read divided by its length, stamped at its end. A counter that goes backwards (device re-attached)
      skips one interval instead of reporting a negative rate.
    - Disks: whole physical disks only (on Linux: entries of /sys/block with a ``device`` link, so
      partitions, loop, device-mapper and md devices, which re-count a physical disk's traffic, are left
      out); ``disk.read``/``disk.write`` are their sum.
    """

    name = "psutil"

    def __init__(self, procfs: bool | None = None) -> None:
        # procfs: read /proc directly (Linux); None = when /proc/stat is there. False forces the psutil calls.
        self._want_procfs = procfs
        self._fast: _Procfs | None = None
        self._ncpu = 0
        self._core_metrics: list[str] = []
        self._proc: psutil.Process | None = None
        self._opened = False
        self._slow: Every | None = None
        self._has_freq = False
        self._has_swap = False
        self._disks: list[str] = []
        self._disk_names: dict[str, tuple[str, str, str, str]] = {}
        self._disk_prev: dict[str, tuple[int, int, int, int]] = {}
        self._disk_t = 0
        self._has_net = False
        self._net_prev: tuple[int, int] | None = None
        self._net_t = 0
        self._faults_supported = sys.platform.startswith("linux")
        self._fault_prev: tuple[int, int] | None = None
        self._fault_t = 0
        self._unavailable: dict[str, str] = {}

    # ---- Public API

    def open(self) -> None:
        psutil.cpu_percent(interval=None)
        per_core = psutil.cpu_percent(interval=None, percpu=True)
        self._ncpu = len(per_core)
        self._core_metrics = [f"cpu{i}.util" for i in range(self._ncpu)]
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

        now = time.perf_counter_ns()
        try:
            counters = psutil.disk_io_counters(perdisk=True) or {}
        except Exception as exc:
            counters, why = {}, f"psutil.disk_io_counters() failed: {exc!r}"
        else:
            why = "no block devices visible (no /proc/diskstats, e.g. in some containers)"
        self._disks = _whole_disks(list(counters))
        if counters and not self._disks:
            why = f"only virtual block devices visible ({', '.join(sorted(counters)[:6])}); no physical disk"
        if not self._disks:
            unavailable["disk.read"] = unavailable["disk.write"] = why
        self._disk_names = {d: (f"disk.{d}.read", f"disk.{d}.write", f"disk.{d}.read_iops",
                                f"disk.{d}.write_iops") for d in self._disks}
        self._disk_prev = {d: _disk_tuple(counters[d]) for d in self._disks}
        self._disk_t = now

        try:
            nics = psutil.net_io_counters(pernic=True) or {}
        except Exception as exc:
            nics, why = {}, f"psutil.net_io_counters() failed: {exc!r}"
        else:
            why = "no network interface visible"
        self._has_net = any(not _is_loopback(n) for n in nics)
        if self._has_net:
            self._net_prev = _net_totals(nics)
            self._net_t = now
        else:
            unavailable["net.sent"] = unavailable["net.recv"] = why

        if not self._faults_supported:
            why = f"page-fault counters are read from /proc/PID/stat, which {sys.platform} does not have"
            unavailable["worker.faults.minor"] = unavailable["worker.faults.major"] = why
        self._unavailable = unavailable
        if self._fast is not None:
            self._fast.close()
            self._fast = None
        if self._want_procfs is not False and os.path.exists("/proc/stat"):
            try:
                self._fast = _Procfs(self._disks, self._has_net)
            except (OSError, ValueError):
                if self._want_procfs:
                    raise
                self._fast = None  # an unusual /proc: psutil knows its variants
        if self._fast is not None:
            self._core_metrics = [f"cpu{i}.util" for i in self._fast.cores]
            self._ncpu = len(self._core_metrics)
        self._opened = True

    def metrics(self) -> list[MetricInfo]:
        slow = SLOW_PERIOD_S
        out = [MetricInfo("cpu.util", "%", "CPU utilisation, all logical cores", MEASURED)]
        out += [MetricInfo(m, "%", f"CPU utilisation, logical core {i}", MEASURED)
                for i, m in enumerate(self._core_metrics)]
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
        if self._faults_supported:
            out += [MetricInfo("worker.faults.minor", "1/s", "Minor page faults per second of the watched worker "
                               "(no disk I/O: first touch, copy-on-write)", MEASURED),
                    MetricInfo("worker.faults.major", "1/s", "Major page faults per second of the watched worker "
                               "(page read from disk: mmap'd weights, swap)", MEASURED)]
        return out

    def unavailable_metrics(self) -> dict[str, str]:
        return dict(self._unavailable)

    def watch_pid(self, pid: int | None) -> None:
        self._proc = None
        self._fault_prev = None
        if self._fast is not None:
            self._fast.watch(pid)
            return
        if pid is None:
            return
        try:
            proc = psutil.Process(pid)
            proc.cpu_percent(interval=None)  # prime: the next sample covers the interval from now
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return
        self._proc = proc
        if self._faults_supported:
            self._fault_prev = _read_faults(pid)
            self._fault_t = time.perf_counter_ns()

    def sample(self, t_ns: int) -> list[Sample]:
        if not self._opened:
            self.open()
        if self._fast is not None:
            rows = self._fast.sample(t_ns, self.name, self._core_metrics)
            if self._slow is not None and self._slow.due(t_ns):
                self._sample_slow(t_ns, rows)
            return rows
        name = self.name
        rows: list[Sample] = [(t_ns, name, "cpu.util", psutil.cpu_percent(interval=None), "%", MEASURED)]
        per_core = psutil.cpu_percent(interval=None, percpu=True)
        # strict=False: a core hot-plugged after open() is ignored rather than breaking the tick.
        rows += [(t_ns, name, m, v, "%", MEASURED)
                 for m, v in zip(self._core_metrics, per_core, strict=False)]
        vm = psutil.virtual_memory()
        rows.append((t_ns, name, "mem.used", (vm.total - vm.available) / GIB, "GiB", MEASURED))
        rows.append((t_ns, name, "mem.total", vm.total / GIB, "GiB", MEASURED))
        if self._slow is not None and self._slow.due(t_ns):
            self._sample_slow(t_ns, rows)
        if self._disks:
            self._sample_disks(t_ns, rows)
        if self._has_net:
            self._sample_net(t_ns, rows)
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
                if self._faults_supported:
                    self._sample_faults(proc.pid, t_ns, rows)
        return rows

    def close(self) -> None:
        self._proc = None
        self._opened = False
        if self._fast is not None:
            self._fast.close()
            self._fast = None

    # ---- Private API

    def _sample_slow(self, t_ns: int, rows: list[Sample]) -> None:
        name = self.name
        if self._has_freq:
            freq = psutil.cpu_freq()
            if freq is not None and freq.current > 0:
                rows.append((t_ns, name, "cpu.freq", float(freq.current), "MHz", MEASURED))
        l1, l5, l15 = psutil.getloadavg()
        rows.append((t_ns, name, "cpu.load1", float(l1), "tasks", MEASURED))
        rows.append((t_ns, name, "cpu.load5", float(l5), "tasks", MEASURED))
        rows.append((t_ns, name, "cpu.load15", float(l15), "tasks", MEASURED))
        if self._has_swap:
            sw = psutil.swap_memory()
            rows.append((t_ns, name, "swap.used", sw.used / GIB, "GiB", MEASURED))
            rows.append((t_ns, name, "swap.total", sw.total / GIB, "GiB", MEASURED))

    def _sample_disks(self, t_ns: int, rows: list[Sample]) -> None:
        counters = psutil.disk_io_counters(perdisk=True) or {}
        dt = (t_ns - self._disk_t) / 1e9
        if dt <= 0:
            return
        self._disk_t = t_ns
        name = self.name
        total_r = total_w = 0.0
        complete = True
        prev_all = self._disk_prev
        for d, metric_names in self._disk_names.items():
            c = counters.get(d)
            if c is None:  # disk detached: nothing to say about it this time
                prev_all.pop(d, None)
                complete = False
                continue
            cur = _disk_tuple(c)
            prev = prev_all.get(d)
            prev_all[d] = cur
            if prev is None or any(a < b for a, b in zip(cur, prev, strict=True)):
                complete = False
                continue
            rb, wb, rc, wc = ((a - b) / dt for a, b in zip(cur, prev, strict=True))
            r, w, ri, wi = metric_names
            rows.append((t_ns, name, r, rb / MB, "MB/s", MEASURED))
            rows.append((t_ns, name, w, wb / MB, "MB/s", MEASURED))
            rows.append((t_ns, name, ri, rc, "1/s", MEASURED))
            rows.append((t_ns, name, wi, wc, "1/s", MEASURED))
            total_r += rb
            total_w += wb
        if complete:  # a sum over some disks would under-report: only when every disk was read
            rows.append((t_ns, name, "disk.read", total_r / MB, "MB/s", MEASURED))
            rows.append((t_ns, name, "disk.write", total_w / MB, "MB/s", MEASURED))

    def _sample_net(self, t_ns: int, rows: list[Sample]) -> None:
        cur = _net_totals(psutil.net_io_counters(pernic=True) or {})
        prev, dt = self._net_prev, (t_ns - self._net_t) / 1e9
        self._net_prev, self._net_t = cur, t_ns
        if prev is None or dt <= 0 or cur[0] < prev[0] or cur[1] < prev[1]:
            return
        rows.append((t_ns, self.name, "net.sent", (cur[0] - prev[0]) / dt / MB, "MB/s", MEASURED))
        rows.append((t_ns, self.name, "net.recv", (cur[1] - prev[1]) / dt / MB, "MB/s", MEASURED))

    def _sample_faults(self, pid: int, t_ns: int, rows: list[Sample]) -> None:
        cur = _read_faults(pid)
        prev, dt = self._fault_prev, (t_ns - self._fault_t) / 1e9
        self._fault_prev, self._fault_t = cur, t_ns
        if cur is None or prev is None or dt <= 0:
            return
        rows.append((t_ns, self.name, "worker.faults.minor", (cur[0] - prev[0]) / dt, "1/s", MEASURED))
        rows.append((t_ns, self.name, "worker.faults.major", (cur[1] - prev[1]) / dt, "1/s", MEASURED))


def _disk_tuple(c) -> tuple[int, int, int, int]:
    return (c.read_bytes, c.write_bytes, c.read_count, c.write_count)


def _whole_disks(names: list[str], sys_block: str = "/sys/block") -> list[str]:
    """Physical whole disks among psutil's per-disk names (no partitions, no virtual devices)."""
    try:
        entries = set(os.listdir(sys_block))
    except OSError:  # not Linux: best effort by name
        return sorted(n for n in names if not n.startswith(_VIRTUAL_PREFIXES))
    return sorted(n for n in names
                  if n in entries and os.path.exists(os.path.join(sys_block, n, "device"))
                  and not n.startswith(_VIRTUAL_PREFIXES))


def _net_totals(nics: dict) -> tuple[int, int]:
    sent = recv = 0
    for nic, c in nics.items():
        if _is_loopback(nic):
            continue
        sent += c.bytes_sent
        recv += c.bytes_recv
    return sent, recv


def _is_loopback(nic: str) -> bool:
    return nic == "lo" or (nic.startswith("lo") and nic[2:].isdigit())  # Linux "lo", BSD/macOS "lo0"


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


# ---- Linux fast path


class _ProcFile:
    """A /proc file opened once and re-read from offset 0 with pread: fresh content, no open/close per tick."""

    __slots__ = ("fd", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))

    def read(self) -> bytes:
        data = os.pread(self.fd, 65536, 0)
        if len(data) < 65536:
            return data
        chunks, offset = [data], len(data)
        while True:  # a long /proc/stat (many CPUs and interrupts)
            more = os.pread(self.fd, 65536, offset)
            if not more:
                return b"".join(chunks)
            chunks.append(more)
            offset += len(more)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class _Procfs:
    """The per-tick readings from /proc, parsed for just the fields reported. Same sources and formulas as
    psutil on Linux: CPU busy = total - idle - iowait, guest time already inside user; memory used =
    MemTotal - MemAvailable; /proc/diskstats sectors are 512 bytes whatever the device's sector size."""

    def __init__(self, disks: list[str], net: bool) -> None:
        self._files: list[_ProcFile] = []
        self._stat = self._open("/proc/stat")
        self._meminfo = self._open("/proc/meminfo")
        self._disk_names = {d.encode(): (f"disk.{d}.read", f"disk.{d}.write", f"disk.{d}.read_iops",
                                         f"disk.{d}.write_iops") for d in disks}
        self._diskstats = self._open("/proc/diskstats") if disks else None
        self._netdev = self._open("/proc/net/dev") if net else None
        self._tick = float(os.sysconf("SC_CLK_TCK"))
        self._page = float(os.sysconf("SC_PAGE_SIZE"))
        self._cpu_prev = self._read_cpu()
        self.cores = sorted(k for k in self._cpu_prev if k >= 0)
        self._mem_total = self._read_mem()[0]
        now = time.perf_counter_ns()
        self._disk_prev, self._disk_t = (self._read_disks(), now) if self._diskstats else ({}, now)
        self._net_prev, self._net_t = (self._read_net(), now) if self._netdev else ((0, 0), now)
        self._pid_file: _ProcFile | None = None
        self._pid_prev: tuple[int, int, int] | None = None
        self._pid_t = 0

    def _open(self, path: str) -> _ProcFile:
        f = _ProcFile(path)
        self._files.append(f)
        return f

    def close(self) -> None:
        self.watch(None)
        for f in self._files:
            f.close()
        self._files = []

    def watch(self, pid: int | None) -> None:
        if self._pid_file is not None:
            self._pid_file.close()
        self._pid_file, self._pid_prev = None, None
        if pid is None:
            return
        try:
            self._pid_file = _ProcFile(f"/proc/{pid}/stat")
            self._pid_prev = self._read_pid()[1:4]  # type: ignore[index]
        except (OSError, TypeError):
            self.watch(None)
            return
        self._pid_t = time.perf_counter_ns()

    # -- readers

    def _read_cpu(self) -> dict[int, tuple[int, int]]:
        """logical cpu index (-1: all) -> (busy, total) in clock ticks."""
        out: dict[int, tuple[int, int]] = {}
        for line in self._stat.read().split(b"\n"):
            if not line.startswith(b"cpu"):
                if out:
                    break  # the cpu lines come first
                continue
            head, *fields = line.split()
            v = [int(x) for x in fields[:8]]  # user nice system idle iowait irq softirq steal
            total = sum(v)
            idle = v[3] + (v[4] if len(v) > 4 else 0)
            out[-1 if head == b"cpu" else int(head[3:])] = (total - idle, total)
        return out

    def _read_mem(self) -> tuple[float, float]:
        total = avail = None
        for line in self._meminfo.read().split(b"\n"):
            if line.startswith(b"MemTotal:"):
                total = int(line.split()[1]) * 1024
            elif line.startswith(b"MemAvailable:"):
                avail = int(line.split()[1]) * 1024
                break
        if total is None or avail is None:
            raise ValueError("/proc/meminfo without MemTotal/MemAvailable (Linux < 3.14)")
        return total / GIB, (total - avail) / GIB

    def _read_disks(self) -> dict[bytes, tuple[int, int, int, int]]:
        assert self._diskstats is not None
        out = {}
        names = self._disk_names
        for line in self._diskstats.read().split(b"\n"):
            f = line.split()
            if len(f) >= 14 and f[2] in names:
                out[f[2]] = (int(f[5]) * 512, int(f[9]) * 512, int(f[3]), int(f[7]))
        return out

    def _read_net(self) -> tuple[int, int]:
        assert self._netdev is not None
        sent = recv = 0
        for line in self._netdev.read().split(b"\n")[2:]:
            nic, sep, rest = line.partition(b":")
            if not sep or _is_loopback(nic.strip().decode(errors="replace")):
                continue
            f = rest.split()
            recv += int(f[0])
            sent += int(f[8])
        return sent, recv

    def _read_pid(self) -> tuple[bool, int, int, int, int] | None:
        """(zombie, cpu ticks, minor faults, major faults, rss pages) of the watched pid; None when gone."""
        assert self._pid_file is not None
        try:
            data = self._pid_file.read()
        except OSError:  # reaped: ESRCH
            return None
        f = data.rpartition(b")")[2].split()
        if not f:
            return None
        return f[0] in (b"Z", b"X"), int(f[11]) + int(f[12]), int(f[7]), int(f[9]), int(f[21])

    # -- one tick

    def sample(self, t_ns: int, name: str, core_metrics: list[str]) -> list[Sample]:
        rows: list[Sample] = []
        add = rows.append
        cpu = self._read_cpu()
        prev, self._cpu_prev = self._cpu_prev, cpu
        pct = _pct
        b0, t0 = prev.get(-1, (0, 0))
        b1, t1 = cpu[-1]
        if t1 > t0:
            add((t_ns, name, "cpu.util", pct(b1 - b0, t1 - t0), "%", MEASURED))
        for i, metric in zip(self.cores, core_metrics, strict=False):
            cur, old = cpu.get(i), prev.get(i)
            if cur is not None and old is not None and cur[1] > old[1]:
                add((t_ns, name, metric, pct(cur[0] - old[0], cur[1] - old[1]), "%", MEASURED))
        total, used = self._read_mem()
        add((t_ns, name, "mem.used", used, "GiB", MEASURED))
        add((t_ns, name, "mem.total", total, "GiB", MEASURED))
        if self._diskstats is not None:
            self._disks(t_ns, name, add)
        if self._netdev is not None:
            cur_net = self._read_net()
            old_net, dt = self._net_prev, (t_ns - self._net_t) / 1e9
            self._net_prev, self._net_t = cur_net, t_ns
            if dt > 0 and cur_net[0] >= old_net[0] and cur_net[1] >= old_net[1]:
                add((t_ns, name, "net.sent", (cur_net[0] - old_net[0]) / dt / MB, "MB/s", MEASURED))
                add((t_ns, name, "net.recv", (cur_net[1] - old_net[1]) / dt / MB, "MB/s", MEASURED))
        if self._pid_file is not None:
            self._worker(t_ns, name, add)
        return rows

    def _disks(self, t_ns: int, name: str, add: Callable[[Sample], None]) -> None:
        cur = self._read_disks()
        prev, dt = self._disk_prev, (t_ns - self._disk_t) / 1e9
        self._disk_prev, self._disk_t = cur, t_ns
        if dt <= 0:
            return
        total_r = total_w = 0.0
        complete = True
        for dev, (r, w, ri, wi) in self._disk_names.items():
            c, p = cur.get(dev), prev.get(dev)
            if c is None or p is None or c[0] < p[0] or c[1] < p[1] or c[2] < p[2] or c[3] < p[3]:
                complete = False
                continue
            rb, wb = (c[0] - p[0]) / dt, (c[1] - p[1]) / dt
            add((t_ns, name, r, rb / MB, "MB/s", MEASURED))
            add((t_ns, name, w, wb / MB, "MB/s", MEASURED))
            add((t_ns, name, ri, (c[2] - p[2]) / dt, "1/s", MEASURED))
            add((t_ns, name, wi, (c[3] - p[3]) / dt, "1/s", MEASURED))
            total_r += rb
            total_w += wb
        if complete:
            add((t_ns, name, "disk.read", total_r / MB, "MB/s", MEASURED))
            add((t_ns, name, "disk.write", total_w / MB, "MB/s", MEASURED))

    def _worker(self, t_ns: int, name: str, add: Callable[[Sample], None]) -> None:
        got = self._read_pid()
        if got is None or got[0]:  # gone, or exited and not yet reaped
            self.watch(None)
            return
        _, ticks, minor, major, rss = got
        prev, dt = self._pid_prev, (t_ns - self._pid_t) / 1e9
        self._pid_prev, self._pid_t = (ticks, minor, major), t_ns
        add((t_ns, name, "worker.rss", rss * self._page / GIB, "GiB", MEASURED))
        if prev is None or dt <= 0:
            return
        add((t_ns, name, "worker.cpu", (ticks - prev[0]) / self._tick / dt * 100.0, "%", MEASURED))
        add((t_ns, name, "worker.faults.minor", (minor - prev[1]) / dt, "1/s", MEASURED))
        add((t_ns, name, "worker.faults.major", (major - prev[2]) / dt, "1/s", MEASURED))


def _pct(busy: int, total: int) -> float:
    return min(100.0, max(0.0, 100.0 * busy / total))
