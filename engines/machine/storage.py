"""Sequential read throughput of a chosen directory: write a test file there, drop it from the page cache, read
it back, delete it.

"Cold" means this OS's page cache no longer held the file when the read began: the drop is
posix_fadvise(POSIX_FADV_DONTNEED) after fsync, and the drop is checked by counting the file's cached pages
(cachestat or mincore: engines/storage/pagecache.py, which looks without reading). Where the drop is impossible or did not
take, the figure is labelled "warm" and the reason says why. In a virtual machine the host may still cache the
disk image below this OS; the reason says so.

The file is read through once, untimed, before the first repeat (fio's ramp time): right after the write the
device, or the host below a virtual machine, is still flushing it, and a first read measured here ran 2-5x
slower than the ones after it — the flush, not the read.

Repeatable or explained (issue 21 item 7): the card repeats the read until the median's 95% interval is within
±STORAGE_GOAL (engines/machine/repeat.py), up to a cap. Each read also times its 4 MiB chunks, so the device's own
variation in the same minutes is known: the throughput of WINDOW_CHUNKS-chunk windows within the reads (their cv),
and how much of each read this process spent on the CPU. When the cap comes first, `explain` says why the interval
is wide in those terms: "the device itself varied X% in the same minutes" when the windows vary beyond the goal
(the storage's spread, not the measurement's), or that the device was steady within reads and the spread lies
between them (the host below a VM, other tenants, this machine's CPU) when they do not.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engines.machine.devices import cpu_flags
from engines.machine.errors import MachineError

MIB = 1024 ** 2
CHUNK = 4 * MIB  # large sequential reads: the device's throughput, not the syscall rate
MIN_FILE = 4 * MIB
PROBE = 4096
STORAGE_GOAL = 0.10  # the storage read's median interval within ±10% (issue 21 item 7)
WINDOW_CHUNKS = 8  # the device's variation is measured over windows of 8 chunks (32 MiB) within each read


# ---- Public API
def check_directory(directory: str | os.PathLike) -> Path:
    """The directory as an absolute path, or a MachineError naming what is wrong and what to do."""
    path = Path(directory).expanduser()
    if not path.exists():
        raise MachineError(f"storage directory {path} does not exist: create it, or choose another with "
                           "--storage DIR")
    if not path.is_dir():
        raise MachineError(f"storage path {path} is not a directory: choose a directory with --storage DIR")
    if not os.access(path, os.W_OK | os.X_OK):
        raise MachineError(f"cannot write a test file in {path} (permission denied): choose a directory you can "
                           "write to with --storage DIR")
    return path.resolve()


def file_size(directory: Path, wanted: int) -> int:
    """`wanted` bytes, or less where the disk is nearly full (at most a quarter of the free space)."""
    free = shutil.disk_usage(directory).free
    size = min(wanted, free // 4) // MIB * MIB
    if size < MIN_FILE:
        raise MachineError(f"not enough free space in {directory} for a {MIN_FILE // MIB} MiB test file "
                           f"({free // MIB} MiB free): free some space or choose another directory with "
                           "--storage DIR")
    return size


class StorageRead:
    """A test file in `directory`; `once()` drops it from the page cache and reads it through, in GB/s.

    Use as a context manager: the file is deleted on the way out, whatever happened.
    """

    def __init__(self, directory: str | os.PathLike, size: int):
        self.directory = check_directory(directory)
        self.size = file_size(self.directory, size)
        self.path: Path | None = None
        self.states: list[str] = []
        self.reasons: list[str] = []
        self.windows: list[float] = []  # bytes/s of each WINDOW_CHUNKS-chunk window of every timed read
        self.cpu_seconds = 0.0  # this thread's CPU time during the timed reads …
        self.wall_seconds = 0.0  # … and their wall time

    def __enter__(self) -> StorageRead:
        handle, name = self._create()
        self.path = Path(name)
        try:
            with os.fdopen(handle, "wb", buffering=0) as out:
                _write_incompressible(out.write, self.size)
                os.fsync(out.fileno())
            self._read_through()  # the ramp: see the module docstring
        except OSError as exc:
            self._remove()
            raise MachineError(f"writing a {self.size // MIB} MiB test file in {self.directory} failed "
                               f"({exc.strerror or exc}): choose another directory with --storage DIR") from exc
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._remove()

    def once(self) -> float:
        assert self.path is not None, "use StorageRead as a context manager"
        cpu = time.thread_time()
        total, elapsed, state, reason = self._read_through(self.windows)
        self.cpu_seconds += time.thread_time() - cpu
        self.wall_seconds += elapsed
        self.states.append(state)
        self.reasons.append(reason)
        if total != self.size:
            raise MachineError(f"read {total} bytes of the {self.size}-byte test file in {self.directory}: the "
                               "file changed while it was measured; measure again")
        return total / elapsed / 1e9

    def description(self) -> dict[str, Any]:
        """The card's "storage" block: directory, cold or warm, bytes read per repeat, and why."""
        cold = bool(self.states) and all(state == "cold" for state in self.states)
        reasons = sorted(set(filter(None, self.reasons)))
        if cold and "hypervisor" in cpu_flags():
            reasons.append("this is a virtual machine: the host may still cache the disk image below this OS's "
                           "page cache")
        return {"dir": str(self.directory), "state": "cold" if cold else "warm", "bytes": self.size,
                "reason": "; ".join(reasons), "device_variation": self.device_variation()}

    def device_variation(self) -> dict[str, Any] | None:
        """The device's own variation over the timed reads: {"cv" (of window throughput), "windows",
        "window_bytes", "cpu_share" (CPU time ÷ wall time of the reads)}; None before two windows were read."""
        if len(self.windows) < 2:
            return None
        mean = statistics.fmean(self.windows)
        return {"cv": statistics.stdev(self.windows) / mean if mean else None, "windows": len(self.windows),
                "window_bytes": WINDOW_CHUNKS * CHUNK,
                "cpu_share": self.cpu_seconds / self.wall_seconds if self.wall_seconds else None}

    def explain(self, spread: dict[str, Any]) -> str | None:
        """Why the read's interval stayed wider than its goal (repeat.until_precise's `explain`), in terms of the
        device's own variation measured in the same reads; None when nothing was measured to say it with."""
        variation = self.device_variation()
        if variation is None or variation["cv"] is None or spread.get("half_width") is None:
            return None
        cap = "the time cap" if spread.get("stopped") == "time" else "the repeat cap"
        head = (f"interval ±{spread['half_width'] * 100:.1f}% is wider than the ±{spread['goal'] * 100:g}% goal "
                f"after {spread['n']} reads ({cap})")
        window = f"{variation['window_bytes'] // MIB} MiB windows"
        cpu = variation["cpu_share"]
        cpu_text = "" if cpu is None else f"; the reads spent {cpu * 100:.0f}% of their time on this CPU"
        if variation["cv"] > spread["goal"]:
            return (f"{head}: the device itself varied {variation['cv'] * 100:.0f}% in the same minutes (cv of its "
                    f"throughput over {variation['windows']} {window} within the reads){cpu_text} — the spread is "
                    "the storage's, not the measurement's")
        return (f"{head}: the device was steady within reads (cv {variation['cv'] * 100:.0f}% over "
                f"{variation['windows']} {window}), so the spread lies between reads — the host below a virtual "
                f"machine, other tenants of the device, or this machine's CPU{cpu_text}")

    # ---- Private API
    def _read_through(self, windows: list[float] | None = None) -> tuple[int, float, str, str]:
        """Drop the file from the page cache and read it sequentially: (bytes, seconds, cold|warm, why); the
        throughput of each WINDOW_CHUNKS-chunk window is appended to `windows` when given."""
        view = memoryview(bytearray(CHUNK))
        fd = os.open(self.path, os.O_RDONLY)
        try:
            state, reason = drop_from_cache(fd, self.size)
            total = window_bytes = chunks = 0
            start = window_start = time.perf_counter()
            while got := os.readv(fd, [view]):
                total += got
                window_bytes += got
                chunks += 1
                if windows is not None and chunks % WINDOW_CHUNKS == 0:
                    now = time.perf_counter()
                    windows.append(window_bytes / max(now - window_start, 1e-9))
                    window_bytes, window_start = 0, now
            return total, time.perf_counter() - start, state, reason
        finally:
            os.close(fd)

    def _create(self) -> tuple[int, str]:
        try:
            return tempfile.mkstemp(prefix=".labconsole-storage-", suffix=".bin", dir=self.directory)
        except OSError as exc:
            raise MachineError(f"cannot write a test file in {self.directory} ({exc.strerror or exc}): choose a "
                               "directory you can write to with --storage DIR") from exc

    def _remove(self) -> None:
        if self.path is not None:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
            self.path = None


# ---- Private API
def _write_incompressible(write: Callable[[bytes], object], size: int) -> None:
    """Pseudo-random bytes, different in every MiB, so neither compression nor deduplication shrinks the file."""
    rng = random.Random(0x5EED)
    for _ in range(size // MIB):
        write(rng.randbytes(MIB))


def drop_from_cache(fd: int, size: int) -> tuple[str, str]:
    """Ask the kernel to forget the file's pages; ("cold", "") when it did (checked where possible). Public: the
    I/O sweep (engines/storage/ioreader.py) drops its test file the same way."""
    fadvise = getattr(os, "posix_fadvise", None)
    if fadvise is None:
        return "warm", "os.posix_fadvise is not available on this OS: the file just written is read from the cache"
    try:
        fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError as exc:
        return "warm", f"posix_fadvise(DONTNEED) failed ({exc.strerror or exc}): the file is read from the cache"
    cached = _still_cached(fd, size)
    if cached is None:
        return "cold", "page cache dropped with posix_fadvise(DONTNEED); not verified (neither cachestat, mincore nor RWF_NOWAIT here)"
    if cached:
        return "warm", "the page cache kept the file after posix_fadvise(DONTNEED) (this file system ignores it)"
    fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # the check may have started read-ahead: drop that too
    return "cold", ""


def _still_cached(fd: int, size: int) -> bool | None:
    """Whether any page of the file is still in the page cache; None when it cannot be asked. Counted by
    engines.storage.pagecache, which only looks (cachestat, mincore): a read probe (RWF_NOWAIT) starts read-ahead
    on Linux 6.x and would warm the file it checks."""
    from engines.storage.pagecache import cached_pages

    count, _how = cached_pages(fd, size)
    return None if count is None else count > 0
