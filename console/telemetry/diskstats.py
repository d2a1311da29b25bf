"""Storage telemetry on the run's clock: per block device throughput, IOPS, queue depth and await, the page cache's
dirty/writeback/cached bytes, and NVMe temperature, throttle counts and wear.

Why a source of its own beside psutil's disk MB/s: a storage verdict needs what the device itself did — how many
requests were queued on it (Little's law over the kernel's weighted I/O time), how long each took (await), whether
dirty pages were piling up for writeback, whether the drive got hot and throttled. All of it is in
``/proc/diskstats`` (Documentation/admin-guide/iostats.rst), ``/proc/meminfo`` and sysfs, read like the other
sources: on the sampler's monotonic clock, stored with the run as samples.

Formulas, over the interval since the previous read (rates stamped at its end, :class:`CounterRates`):
  read/write MB/s = Δ sectors × 512 / Δt / 1e6 (diskstats sectors are 512 bytes whatever the device's own);
  read/write IOPS = Δ requests completed / Δt;
  queue depth = Δ weighted milliseconds doing I/O / Δ milliseconds (field 11: the average requests in flight);
  await ms = Δ (ms reading + ms writing) / Δ (reads + writes) — emitted only when requests completed (nothing to
  average otherwise, never a 0);
  busy % = Δ milliseconds doing I/O (field 10) / Δ milliseconds × 100 — near 100 the device always had work.

Devices: whole physical disks (a ``device`` link in /sys/block) always; partitions never (their disk counts them);
virtual devices (loop, device-mapper, md, zram, nbd, ram) only once they have moved data since the source opened —
so the loop device or LVM volume a run reads from appears, and a dozen idle snap loops do not.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from . import nvme_health
from .base import Every, MetricInfo, Sample, Source
from .metadata import MetricSpec
from .procfs import GIB, ProcFile
from .rates import CounterRates

MB = 1e6
SECTOR = 512
MEASURED = "measured"
VIRTUAL_PREFIXES = ("loop", "dm-", "md", "zram", "ram", "nbd")
TEMPERATURE_PERIOD_S = 2.0
SMART_PERIOD_S = 10.0  # a process spawn (~5 ms) each time: 0.05% of a core
# Metric suffixes per device, in the order CounterRates sees the counters (see _counters).
DEVICE_FIELDS = ("read_mb_s", "write_mb_s", "read_iops", "write_iops", "queue_depth", "await_ms", "busy")


def parse_diskstats(data: bytes) -> dict[str, tuple[int, ...]]:
    """name → (reads, sectors read, ms reading, writes, sectors written, ms writing, in flight, ms doing I/O,
    weighted ms doing I/O): the first 11 fields of each /proc/diskstats line (kernel ≥ 2.6; later fields ignored)."""
    out: dict[str, tuple[int, ...]] = {}
    for line in data.split(b"\n"):
        f = line.split()
        if len(f) >= 14:
            out[f[2].decode(errors="replace")] = (int(f[3]), int(f[5]), int(f[6]), int(f[7]), int(f[9]), int(f[10]),
                                                  int(f[11]), int(f[12]), int(f[13]))
    return out


def parse_page_cache(data: bytes) -> dict[str, int]:
    """{"dirty", "writeback", "cached"} in bytes from a /proc/meminfo text; a field the kernel lacks is left out."""
    out: dict[str, int] = {}
    for key, name in ((b"Dirty:", "dirty"), (b"Writeback:", "writeback"), (b"Cached:", "cached")):
        start = data.find(b"\n" + key)
        start = start + 1 if start >= 0 else (0 if data.startswith(key) else -1)
        if start >= 0:
            out[name] = int(data[start + len(key):data.find(b"\n", start)].split()[0]) * 1024
    return out


class StorageSource(Source):
    """Block devices from /proc/diskstats, the page cache from /proc/meminfo, NVMe health from sysfs / nvme-cli.

    The roots are parameters so tests read captured and hand-written trees; ``smart`` replaces the nvme-cli
    runner (None: found on PATH at open).
    """

    name = "storage"
    period_s = 0.5  # 2 Hz: a device's queue and MB/s need no more, and the sampler's own cost stays small
    metric_specs = (
        MetricSpec(r"storage\.(.+)\.(read|write)_mb_s", "MB/s", label="{0} {1}"),
        MetricSpec(r"storage\.(.+)\.(read|write)_iops", "1/s", label="{0} {1}"),
        MetricSpec(r"storage\.(.+)\.queue_depth", "requests", label="{0}"),
        MetricSpec(r"storage\.(.+)\.await_ms", "ms", label="{0}"),
        MetricSpec(r"storage\.(.+)\.busy", "%", label="{0}"),
        MetricSpec(r"storage\.(nvme\d+)\.temperature", "°C", "temperature", "{0}"),
        MetricSpec(r"storage\.(nvme\d+)\.throttle_events", "events", label="{0}"),
        MetricSpec(r"storage\.(nvme\d+)\.throttle_s", "s", label="{0}"),
        MetricSpec(r"storage\.(nvme\d+)\.percentage_used", "%", label="{0}"),
        MetricSpec(r"pagecache\.(dirty|writeback)", "MB", label="{0}"),
        MetricSpec(r"pagecache\.cached", "GiB", "memory", "page cache"),
    )

    def __init__(self, proc_root: str = "/proc", sys_root: str = "/sys",
                 smart: nvme_health.Runner | None = None, dev_root: str = "/dev") -> None:
        self._proc_root, self._sys_root, self._dev_root = proc_root, sys_root, dev_root
        self._smart_override = smart
        self._smart: nvme_health.Runner | None = None
        self._diskstats: ProcFile | None = None
        self._meminfo: ProcFile | None = None
        self._physical: list[str] = []
        self._virtual: list[str] = []
        self._active: set[str] = set()
        self._first: dict[str, tuple[int, ...]] = {}
        self._rates: dict[str, CounterRates] = {}
        self._names: dict[str, tuple[str, ...]] = {}
        self._temps: dict[str, str] = {}
        self._smart_ctrls: list[str] = []
        self._temp_every: Every | None = None
        self._smart_every: Every | None = None
        self._unavailable: dict[str, str] = {}
        self._reason = ""

    # ---- Public API
    def open(self) -> None:
        self.close()
        unavailable: dict[str, str] = {}
        try:
            self._diskstats = ProcFile(os.path.join(self._proc_root, "diskstats"))
            first = parse_diskstats(self._diskstats.read())
        except (OSError, ValueError) as exc:
            self._diskstats, first = None, {}
            self._reason = f"cannot read {self._proc_root}/diskstats ({exc}); not Linux, or /proc hidden"
        self._physical, self._virtual = self._classify(list(first))
        if self._diskstats is not None and not (self._physical or self._virtual):
            self._reason = "no block device in /proc/diskstats but partitions (e.g. in some containers)"
        self._first = first
        for d in self._physical + self._virtual:
            self._names[d] = tuple(f"storage.{d}.{field}" for field in DEVICE_FIELDS)
            self._rates[d] = CounterRates()
        try:
            self._meminfo = ProcFile(os.path.join(self._proc_root, "meminfo"))
            if not parse_page_cache(self._meminfo.read()):
                raise ValueError("no Dirty/Writeback/Cached fields")
        except (OSError, ValueError) as exc:
            self._meminfo = None
            for name in ("pagecache.dirty", "pagecache.writeback", "pagecache.cached"):
                unavailable[name] = f"cannot read the page cache from {self._proc_root}/meminfo ({exc})"
        self._open_nvme(unavailable)
        self._unavailable = unavailable
        now = time.perf_counter_ns()
        self._temp_every = Every(TEMPERATURE_PERIOD_S, self.tick_ns)
        self._smart_every = Every(SMART_PERIOD_S, self.tick_ns)
        for d in self._physical:
            self._rates[d].update(_counters(first[d]), now)

    def available(self) -> tuple[bool, str]:
        if self._diskstats is None and self._meminfo is None:
            return False, self._reason or "not opened"
        return True, ""

    def metrics(self) -> list[MetricInfo]:
        out: list[MetricInfo] = []
        devices = list(self._physical)
        if self._virtual:  # one placeholder set, not a dozen idle loop devices: they appear once they move data
            devices.append("<virtual>")
        for d in devices:
            when = ""
            if d == "<virtual>":
                names = ", ".join(self._virtual[:8]) + (", ..." if len(self._virtual) > 8 else "")
                when = f" (virtual devices {names}: each reported, under its own name, once it moves data)"
            r, w, ri, wi, q, a, b = (f"storage.{d}.{field}" for field in DEVICE_FIELDS)
            out += [MetricInfo(r, "MB/s", f"Bytes read per second from {d} (/proc/diskstats sectors × 512){when}"),
                    MetricInfo(w, "MB/s", f"Bytes written per second to {d}{when}"),
                    MetricInfo(ri, "1/s", f"Read requests completed per second on {d}{when}"),
                    MetricInfo(wi, "1/s", f"Write requests completed per second on {d}{when}"),
                    MetricInfo(q, "requests", f"Average requests in flight on {d}: Δ weighted ms doing I/O / Δ ms "
                                              f"(Little's law){when}"),
                    MetricInfo(a, "ms", f"Average time per completed request on {d}, queueing included: Δ (ms "
                                        f"reading + ms writing) / Δ requests; absent when none completed{when}"),
                    MetricInfo(b, "%", f"Share of time {d} had at least one request in flight (Δ ms doing I/O / "
                                       f"Δ ms){when}")]
        if self._meminfo is not None:
            out += [MetricInfo("pagecache.dirty", "MB", "Page cache waiting to be written back (/proc/meminfo Dirty)"),
                    MetricInfo("pagecache.writeback", "MB", "Page cache being written back now (Writeback)"),
                    MetricInfo("pagecache.cached", "GiB", "Page cache holding file data (Cached)")]
        for ctrl in sorted(self._temps):
            out.append(MetricInfo(f"storage.{ctrl}.temperature", "°C", f"Composite temperature of {ctrl} (hwmon "
                                  "temp1_input)", MEASURED, TEMPERATURE_PERIOD_S))
        for ctrl in self._smart_ctrls:
            out += [MetricInfo(f"storage.{ctrl}.throttle_events", "events", f"Thermal-management transitions of "
                               f"{ctrl} since manufacture (nvme smart-log thm_temp1+2_trans_count)", MEASURED,
                               SMART_PERIOD_S),
                    MetricInfo(f"storage.{ctrl}.throttle_s", "s", f"Seconds {ctrl} spent throttled since "
                               "manufacture (thm_temp1+2_total_time)", MEASURED, SMART_PERIOD_S),
                    MetricInfo(f"storage.{ctrl}.percentage_used", "%", f"Share of {ctrl}'s rated endurance used "
                               "(smart-log percent_used)", MEASURED, SMART_PERIOD_S)]
        return out

    def unavailable_metrics(self) -> dict[str, str]:
        return dict(self._unavailable)

    def sample(self, t_ns: int) -> list[Sample]:
        rows: list[Sample] = []
        add = rows.append
        name = self.name
        if self._diskstats is not None:
            stats = parse_diskstats(self._diskstats.read())
            for d in self._physical:
                c = stats.get(d)
                if c is None:  # detached: the next reading primes again
                    self._rates[d].reset()
                    continue
                self._device_rows(d, c, t_ns, add)
            for d in self._virtual:
                c = stats.get(d)
                if c is None:
                    continue
                if d not in self._active:
                    if c[0] == self._first.get(d, c)[0] and c[3] == self._first.get(d, c)[3]:
                        continue  # idle since open: not the data's device
                    self._active.add(d)
                self._device_rows(d, c, t_ns, add)
        if self._meminfo is not None:
            cache = parse_page_cache(self._meminfo.read())
            for key in ("dirty", "writeback"):
                if key in cache:
                    add((t_ns, name, f"pagecache.{key}", cache[key] / MB, "MB", MEASURED))
            if "cached" in cache:
                add((t_ns, name, "pagecache.cached", cache["cached"] / GIB, "GiB", MEASURED))
        if self._temps and self._temp_every is not None and self._temp_every.due(t_ns):
            for ctrl, path in self._temps.items():
                celsius = nvme_health.read_celsius(path)
                if celsius is not None:
                    add((t_ns, name, f"storage.{ctrl}.temperature", celsius, "°C", MEASURED))
        if self._smart_ctrls and self._smart_every is not None and self._smart_every.due(t_ns):
            self._smart_rows(t_ns, add)
        return rows

    def close(self) -> None:
        for f in (self._diskstats, self._meminfo):
            if f is not None:
                f.close()
        self._diskstats = self._meminfo = None
        self._active.clear()
        self._names.clear()
        self._rates.clear()

    # ---- Private API
    def _classify(self, names: list[str]) -> tuple[list[str], list[str]]:
        """(whole physical disks, virtual devices) among /proc/diskstats names, from /sys/block."""
        block = os.path.join(self._sys_root, "block")
        try:
            entries = set(os.listdir(block))
        except OSError:  # no sysfs: by name only (partitions cannot be told apart from disks reliably)
            entries = None
        physical, virtual = [], []
        for n in sorted(names):
            if entries is not None and n not in entries:
                continue  # a partition: /sys/block lists whole devices only
            if n.startswith(VIRTUAL_PREFIXES):
                virtual.append(n)
            elif entries is None or os.path.exists(os.path.join(block, n, "device")):
                physical.append(n)
        return physical, virtual

    def _device_rows(self, d: str, c: tuple[int, ...], t_ns: int, add: Callable[[Sample], None]) -> None:
        rates = self._rates[d].update(_counters(c), t_ns)
        if rates is None:
            return
        rsec, wsec, reads, writes, ms_rw, ms_io, weighted = rates
        r, w, ri, wi, q, a, b = self._names[d]
        name = self.name
        add((t_ns, name, r, rsec * SECTOR / MB, "MB/s", MEASURED))
        add((t_ns, name, w, wsec * SECTOR / MB, "MB/s", MEASURED))
        add((t_ns, name, ri, reads, "1/s", MEASURED))
        add((t_ns, name, wi, writes, "1/s", MEASURED))
        add((t_ns, name, q, weighted / 1e3, "requests", MEASURED))  # ms per s → requests in flight
        add((t_ns, name, b, min(100.0, ms_io / 10.0), "%", MEASURED))  # ms per s → % of time
        if reads + writes > 0:
            add((t_ns, name, a, ms_rw / (reads + writes), "ms", MEASURED))

    def _open_nvme(self, unavailable: dict[str, str]) -> None:
        ctrls = nvme_health.controllers(self._sys_root)
        disks = ", ".join(self._physical) or "none"
        if not ctrls:
            why = f"no NVMe controller here (/sys/class/nvme is empty or absent; disks: {disks})"
            for metric in ("temperature", "throttle_events", "percentage_used"):
                unavailable[f"storage.nvme*.{metric}"] = why
            return
        self._temps = nvme_health.temperature_inputs(self._sys_root)
        for ctrl in ctrls:
            if ctrl not in self._temps:
                unavailable[f"storage.{ctrl}.temperature"] = f"{ctrl} has no hwmon temperature sensor (kernel < 5.5)"
        runner, why = (self._smart_override, "") if self._smart_override else nvme_health.smart_runner()
        if runner is None:
            for ctrl in ctrls:
                for metric in ("throttle_events", "throttle_s", "percentage_used"):
                    unavailable[f"storage.{ctrl}.{metric}"] = why
            return
        self._smart = runner
        for ctrl in ctrls:  # one read now: keep only the controllers whose log this user can read
            log, why = nvme_health.smart_log(ctrl, runner, self._dev_root)
            if log is None:
                for metric in ("throttle_events", "throttle_s", "percentage_used"):
                    unavailable[f"storage.{ctrl}.{metric}"] = why
            else:
                self._smart_ctrls.append(ctrl)
                for metric in ("throttle_events", "throttle_s", "percentage_used"):
                    if metric not in log:
                        unavailable[f"storage.{ctrl}.{metric}"] = f"{ctrl}'s smart-log has no such field"

    def _smart_rows(self, t_ns: int, add: Callable[[Sample], None]) -> None:
        assert self._smart is not None
        for ctrl in self._smart_ctrls:
            log, _why = nvme_health.smart_log(ctrl, self._smart, self._dev_root)
            for metric, unit in (("throttle_events", "events"), ("throttle_s", "s"), ("percentage_used", "%")):
                if log is not None and metric in log:
                    add((t_ns, self.name, f"storage.{ctrl}.{metric}", float(log[metric]), unit, MEASURED))


def _counters(c: tuple[int, ...]) -> tuple[int, ...]:
    """The cumulative counters rates are taken of: sectors r/w, requests r/w, ms r+w, ms doing I/O, weighted ms."""
    reads, rsec, rms, writes, wsec, wms, _inflight, ms_io, weighted = c
    return (rsec, wsec, reads, writes, rms + wms, ms_io, weighted)

