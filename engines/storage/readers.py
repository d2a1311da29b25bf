"""The feed benchmark's reader processes: real reads of real files, one sample at a time, into a bounded buffer.

Why processes (spawned): a training loader's workers are processes, and only processes show whether the READERS'
CPU, not the device, limits the feed (a thread's CPU would be shared with the emulated accelerators under the GIL).

Hand-off without copying data: the buffer is two counting semaphores shared with the accelerators. A reader takes a
free slot, reads one sample's bytes from its file, and releases a filled slot; an accelerator takes `batch` filled
slots per step and gives them back as free. The bytes themselves are dropped — the emulated step stands for the
training step — so what is measured is the storage and the read path, not a pickle pipe.

Cold reads: before a file is read, its cached pages are dropped (posix_fadvise DONTNEED) and counted gone with a
check that reads nothing (engines.storage.pagecache: cachestat, else mincore). Each reader reports how many files
it proved cold, found still cached, or could not check, and which check it used.

Only the standard library is imported here (and pagecache, which is ctypes): a spawned reader starts fast.
"""

from __future__ import annotations

import os
import time
from typing import Any

from engines.storage import pagecache

CHUNK = 8 * 1024 * 1024  # one read call's size at most: a 140 MB U-Net3D sample is read in 8 MiB calls
PROBE = 4096  # the smallest read buffer
NPY_MAGIC = b"\x93NUMPY"
SLOT_POLL_S = 0.05


# ---- Public API
def reader_main(index: int, files: list[str], sample_bytes: int, samples_per_file: int, cold: bool,
                check_npy: bool, free: Any, filled: Any, ready: Any, start: Any, stop: Any, failed: Any,
                out: Any) -> None:
    """One reader process: cycle over `files` (epochs) until `stop`, then put its statistics on `out`.

    A file holds `samples_per_file` samples when that is > 0, else size // sample_bytes (at least 1); a sample is
    an even share of the file. Errors are reported on `out` (and `failed` set) rather than raised, so the parent
    can stop the accelerators and say which file failed.
    """
    stats: dict[str, Any] = {"index": index, "bytes": 0, "reads": 0, "files": 0, "proven_cold": 0,
                             "still_cached": 0, "unverified": 0, "slot_wait_s": 0.0, "latency": [], "error": None, "checks": {}}
    buffer = bytearray(min(CHUNK, max(sample_bytes, PROBE)))
    view = memoryview(buffer)
    ready.release()
    start.wait()
    wall0, cpu0 = time.monotonic(), time.process_time()
    try:
        while not stop.is_set():
            for path in files:
                if not _read_file(path, sample_bytes, samples_per_file, cold, check_npy, view, free, filled, stop,
                                  stats):
                    break
    except _ReadError as exc:
        stats["error"] = str(exc)
        failed.set()
    finally:
        stats["wall_s"] = time.monotonic() - wall0
        stats["cpu_s"] = time.process_time() - cpu0
        view.release()
        out.put(stats)


# ---- Private API
class _ReadError(Exception):
    pass


def _read_file(path: str, sample_bytes: int, samples_per_file: int, cold: bool, check_npy: bool, view: memoryview,
               free: Any, filled: Any, stop: Any, stats: dict[str, Any]) -> bool:
    """Read one file sample by sample; False when told to stop part-way."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise _ReadError(f"{path}: cannot open ({exc.strerror or exc})") from None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            raise _ReadError(f"{path} is empty")
        if cold:
            state, how = pagecache.drop_and_check(fd, size)
            stats[{"cold": "proven_cold", "cached": "still_cached"}.get(state, "unverified")] += 1
            stats["checks"][how] = stats["checks"].get(how, 0) + 1
        stats["files"] += 1
        count = samples_per_file if samples_per_file > 0 else max(1, size // max(1, sample_bytes))
        count = min(count, size)
        for k in range(count):
            begin, end = k * size // count, (k + 1) * size // count
            waited = time.monotonic()
            while not free.acquire(timeout=SLOT_POLL_S):
                if stop.is_set():
                    return False
            stats["slot_wait_s"] += time.monotonic() - waited
            started = time.monotonic_ns()
            if not _read_span(fd, path, begin, end, view, check_npy and k == 0, stop):
                return False  # stopped part-way through a sample: not counted
            stats["latency"].append((started, time.monotonic_ns() - started))
            stats["bytes"] += end - begin
            stats["reads"] += 1
            filled.release()
            if stop.is_set():
                return False
        return True
    except OSError as exc:
        raise _ReadError(f"{path}: read failed ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def _read_span(fd: int, path: str, begin: int, end: int, view: memoryview, check_npy: bool, stop: Any) -> bool:
    """Read bytes [begin, end) in calls of at most the buffer's size; False when told to stop between calls (a
    140 MB sample on a slow device takes seconds)."""
    offset = begin
    while offset < end:
        if offset > begin and stop.is_set():
            return False
        got = os.preadv(fd, [view[:min(len(view), end - offset)]], offset)
        if got <= 0:
            raise _ReadError(f"{path} shrank while it was read (ended at byte {offset:,} of {end:,})")
        if check_npy and offset == begin and bytes(view[:6]) != NPY_MAGIC:
            raise _ReadError(f"{path} is not an .npy file (no \\x93NUMPY magic at its start)")
        offset += got
    return True
