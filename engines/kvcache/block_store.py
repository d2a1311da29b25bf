"""Where KV blocks beyond the memory budget go: a directory (one .npy file per block) or host RAM.

Directory: a private folder `labconsole-kv-*` is made inside the given directory and removed at the end. A block is
written as .npy (numpy's header + raw data, `allow_pickle=False` both ways: the files are data, never code), then
flushed and fsync'd — the write latency is open → write → fsync → close, so it is the time until the block is on
the device, not in the page cache. Its pages are then dropped from the page cache (posix_fadvise DONTNEED; clean
after the fsync, so the kernel can drop them), and before each read mincore(2) says whether any of its pages is
cached: a read is counted cold, warm, or unknown (no mincore here). On tmpfs the "storage" is RAM and every read is warm — said, not hidden.
The read latency is open → the array parsed → close.

RAM: blocks are copies in a dict; write and read are those copies (memcpy into and out of host RAM).

Each store keeps every latency (ns) and the bytes moved (file bytes, header included, for a directory).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import shutil
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from engines.datafiles import filesystem_type


# ---- Public API
def open_store(target: str) -> DirectoryStore | RamStore:
    """The store `--kv-offload` names: "ram", else a directory (made if missing; it must be writable)."""
    return RamStore() if target == "ram" else DirectoryStore(target)


class _Timings:
    def __init__(self) -> None:
        self.write_ns: list[int] = []
        self.read_ns: list[int] = []
        self.bytes_written = 0
        self.bytes_read = 0
        self.reads = {"cold": 0, "warm": 0, "unknown": 0}


class RamStore(_Timings):
    """Host RAM: a block is a private copy; the copy is the write, a copy out is the read."""

    target = "ram"

    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[str, np.ndarray] = {}

    def put(self, key: str, array: np.ndarray) -> None:
        start = time.perf_counter_ns()
        self._blocks[key] = np.array(array, copy=True)
        self.write_ns.append(time.perf_counter_ns() - start)
        self.bytes_written += array.nbytes

    def get(self, key: str) -> np.ndarray:
        start = time.perf_counter_ns()
        array = np.array(self._blocks[key], copy=True)
        self.read_ns.append(time.perf_counter_ns() - start)
        self.bytes_read += array.nbytes
        self.reads["unknown"] += 1
        return array

    def describe(self) -> dict[str, Any]:
        return {"target": "ram", "path": None, "filesystem": None,
                "read_cache_state": "n/a", "read_cache_reason": "host RAM: no page cache between the copies"}

    def close(self) -> None:
        self._blocks.clear()


class DirectoryStore(_Timings):
    """One .npy file per block in a private folder inside `root`; fsync'd writes, reads cold where the OS allows."""

    target = "directory"

    def __init__(self, root: str) -> None:
        super().__init__()
        base = Path(root).expanduser()
        try:
            base.mkdir(parents=True, exist_ok=True)
            self.path = Path(tempfile.mkdtemp(prefix="labconsole-kv-", dir=base))
        except OSError as exc:
            raise RuntimeError(f"--kv-offload {root}: cannot write there ({exc.strerror or exc}). Fix: give a "
                               "writable directory on the storage to measure, or --kv-offload ram") from exc
        self.root = str(base)
        self.filesystem = filesystem_type(self.path)
        # removed at close, or when the store is dropped (a failed or cancelled run), or at the worker's exit
        self._remove = weakref.finalize(self, shutil.rmtree, self.path, True)

    def put(self, key: str, array: np.ndarray) -> None:
        path = self.path / f"{key}.npy"
        start = time.perf_counter_ns()
        try:
            with open(path, "wb") as handle:
                np.lib.format.write_array(handle, array, allow_pickle=False)
                handle.flush()
                os.fsync(handle.fileno())
                size = handle.tell()
        except OSError as exc:
            raise RuntimeError(f"--kv-offload {self.root}: writing a KV block failed ({exc.strerror or exc}). "
                               "Fix: free space there, shorten the run, or use --kv-offload ram") from exc
        self.write_ns.append(time.perf_counter_ns() - start)
        self.bytes_written += size
        _drop_cached(path)

    def get(self, key: str) -> np.ndarray:
        path = self.path / f"{key}.npy"
        self.reads[_cached_state(path)] += 1
        start = time.perf_counter_ns()
        with open(path, "rb") as handle:
            array = np.lib.format.read_array(handle, allow_pickle=False)
            size = handle.tell()
        self.read_ns.append(time.perf_counter_ns() - start)
        self.bytes_read += size
        _drop_cached(path)  # the next read of this block is cold again
        return array

    def describe(self) -> dict[str, Any]:
        state, reason = _read_state(self.reads, self.filesystem)
        return {"target": "directory", "path": self.root, "filesystem": self.filesystem,
                "read_cache_state": state, "read_cache_reason": reason}

    def close(self) -> None:
        self._remove()


# ---- Private API
def _drop_cached(path: Path) -> None:
    if not hasattr(os, "posix_fadvise"):
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        pass
    finally:
        os.close(fd)


def _cached_state(path: Path) -> str:
    """cold: none of the file's pages is in the page cache; warm: some are; unknown: this OS cannot tell.

    mincore(2) on a mapping of the file reads the residency without touching the pages (a preadv(RWF_NOWAIT)
    probe would start a readahead, warming the very read it is about to time)."""
    libc = _libc()
    if libc is None:
        return "unknown"
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if not size:
                return "unknown"
            mapped = mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_COPY)
    except (OSError, ValueError):
        return "unknown"
    try:
        pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
        vector = (ctypes.c_ubyte * pages)()
        anchor = ctypes.c_char.from_buffer(mapped)
        try:
            failed = libc.mincore(ctypes.c_void_p(ctypes.addressof(anchor)), ctypes.c_size_t(size), vector)
        finally:
            del anchor
        if failed:
            return "unknown"
        return "warm" if any(byte & 1 for byte in vector) else "cold"
    finally:
        mapped.close()


def _libc():
    """The C library when it has mincore (Linux, the BSDs, macOS), else None."""
    global _LIBC
    if _LIBC is None:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            _LIBC = libc if hasattr(libc, "mincore") else False
        except OSError:
            _LIBC = False
    return _LIBC or None


_LIBC = None


def _read_state(reads: dict[str, int], filesystem: str | None) -> tuple[str, str]:
    cold, warm, unknown = reads["cold"], reads["warm"], reads["unknown"]
    total = cold + warm + unknown
    if not total:
        return "n/a", "no block was read back"
    if cold == total:
        return "cold", f"all {total} block reads found their pages out of the page cache (mincore before each read)"
    if warm == total:
        why = " — the file system is tmpfs, held in RAM" if filesystem == "tmpfs" else \
            " — the kernel kept the pages despite posix_fadvise DONTNEED"
        return "warm", f"all {total} block reads were served from the page cache{why}"
    if unknown == total:
        return "unknown", "this OS cannot tell whether a page is cached (no mincore)"
    return "mixed", f"{cold} cold, {warm} warm, {unknown} unknown of {total} block reads"
