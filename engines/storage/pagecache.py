"""Drop a file's pages from the page cache and prove they are gone, without bringing any back.

Why not only preadv(RWF_NOWAIT) (what the machine card used to check): on this kernel (6.18, ext4) a NOWAIT read of a missing
page returns EAGAIN but STARTS read-ahead — the page was there 20 ms later in 20 of 20 files — so the probe itself
warms the file it checks, and a later probe of another file finds pages a probe brought in (2% of file reads looked
"still cached" that way). Two checks that only look:

  cachestat(2) (Linux ≥ 6.5): the number of cached pages of the whole file, in one call;
  mincore(2) on a read-only mapping: which pages are resident (mapping a file reads nothing).

RWF_NOWAIT stays as the last resort where neither is there, its pages dropped again after it. Linux only; elsewhere
the drop is "unverified".
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os

PAGE = mmap.PAGESIZE
_CACHESTAT = 451  # the same number on x86-64 and arm64 (a syscall added after the tables were unified)
_PROBE = 4096


class _Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Stat(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in
                ("nr_cache", "nr_dirty", "nr_writeback", "nr_evicted", "nr_recently_evicted")]


_libc = None
_cachestat_ok = True


# ---- Public API
def drop(fd: int) -> None:
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def cached_pages(fd: int, size: int) -> tuple[int | None, str]:
    """(pages of the file still in the page cache, how it was counted); None when it cannot be counted."""
    count = _by_cachestat(fd)
    if count is not None:
        return count, "cachestat"
    count = _by_mincore(fd, size)
    if count is not None:
        return count, "mincore"
    count = _by_nowait(fd, size)
    if count is not None:
        return count, "RWF_NOWAIT"
    return None, "none"


def drop_and_check(fd: int, size: int, attempts: int = 3) -> tuple[str, str]:
    """Drop the file's pages and check: ("cold" | "cached" | "unverified", the check used)."""
    how = "none"
    for _ in range(attempts):
        drop(fd)
        if size == 0:
            return "cold", "empty file"
        count, how = cached_pages(fd, size)
        if how == "RWF_NOWAIT":
            drop(fd)  # the probe may have started read-ahead
        if count is None:
            return "unverified", how
        if count == 0:
            return "cold", how
    return "cached", how


# ---- Private API
def _lib():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _by_cachestat(fd: int) -> int | None:
    global _cachestat_ok
    if not _cachestat_ok or not os.uname().sysname == "Linux":
        return None
    stat, whole = _Stat(), _Range(0, 0)
    try:
        result = _lib().syscall(ctypes.c_long(_CACHESTAT), ctypes.c_int(fd), ctypes.byref(whole), ctypes.byref(stat),
                                ctypes.c_uint(0))
    except (OSError, AttributeError):
        _cachestat_ok = False
        return None
    if result != 0:
        _cachestat_ok = ctypes.get_errno() not in (errno.ENOSYS, errno.EPERM)
        return None
    return int(stat.nr_cache)


def _by_mincore(fd: int, size: int) -> int | None:
    try:
        lib = _lib()
        lib.mmap.restype = ctypes.c_void_p
        lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                             ctypes.c_long]
        lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    except AttributeError:
        return None
    address = lib.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        return None
    try:
        pages = (size + PAGE - 1) // PAGE
        vector = ctypes.create_string_buffer(pages)
        if lib.mincore(address, size, vector) != 0:
            return None
        return sum(byte & 1 for byte in vector.raw[:pages])
    finally:
        lib.munmap(address, size)


def _by_nowait(fd: int, size: int) -> int | None:
    flag = getattr(os, "RWF_NOWAIT", None)
    if flag is None or not hasattr(os, "preadv"):
        return None
    probe, found = bytearray(_PROBE), 0
    for offset in sorted({0, size // 2 // _PROBE * _PROBE, max(0, size - _PROBE) // _PROBE * _PROBE}):
        try:
            found += os.preadv(fd, [probe], offset, flag) > 0
        except BlockingIOError:
            continue
        except OSError as exc:
            if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                return None
            raise
    return found
