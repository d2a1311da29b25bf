"""Make files just written (or about to be read) cold: their pages dropped from the page cache, checked where
Linux can say.

Why: a checkpoint read back straight after it was written comes from memory, and a "restore at 20 GB/s" would
be the page cache's speed, not the storage's. Each file is flushed (fsync: dirty pages are never dropped) and
then dropped with posix_fadvise(POSIX_FADV_DONTNEED). On Linux every page is then checked with mincore(2) on a
mapping that reads nothing (a read probe, even RWF_NOWAIT, starts read-ahead and refills what it checks), and the
drop is asked again while a page just written is still held; so "cold" is checked, not assumed. Where the drop cannot work (tmpfs: the files are memory; an OS without fadvise) the
state is "warm" with the reason, and the figures say so.

Standard library only (plus engines.datafiles.can_drop_cache, numpy-only): used by the checkpoint card and
the cold-start decomposition alike.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path

_TRIES = 4
_RETRY_S = 0.05


def drop(paths: Iterable[str | os.PathLike[str]], directory: str | os.PathLike[str]) -> tuple[str, str]:
    """Drop every file in `paths` from the page cache: ("cold", how) or ("warm", why not)."""
    from engines.datafiles import can_drop_cache

    possible, why = can_drop_cache(directory)
    files = [Path(p) for p in paths]
    if not possible:
        return "warm", why
    unverified = False
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            for attempt in range(_TRIES):  # a page just written can still be held (writeback, another CPU's
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # LRU batch): ask again shortly after
                cached = _still_cached(fd, os.fstat(fd).st_size)
                if not cached:
                    break
                time.sleep(_RETRY_S * (attempt + 1))
            if cached:
                return "warm", (f"the page cache kept {path.name} after posix_fadvise(DONTNEED) (this file "
                                "system ignores the advice), so reads come from memory")
            if cached is None:
                unverified = True
        except OSError as exc:
            return "warm", f"dropping {path.name} from the page cache failed ({exc.strerror or exc})"
        finally:
            os.close(fd)
    how = f"{len(files)} file(s) fsynced and dropped from the page cache (posix_fadvise DONTNEED)"
    return "cold", how + ("; not verified (mincore is not available here)" if unverified else
                          ", checked page by page with mincore")


def files_under(directory: str | os.PathLike[str]) -> list[Path]:
    """Every regular file below `directory` (a DCP checkpoint is a folder of shards and metadata)."""
    return sorted(p for p in Path(directory).rglob("*") if p.is_file())


# ---- Private API
def _still_cached(fd: int, size: int) -> bool | None:
    """Whether any page of the file is resident in the page cache (mincore on a mapping that touches nothing);
    None where the OS cannot be asked. Not a read probe: a missed read (even with RWF_NOWAIT) starts read-ahead,
    which would fill the cache it is checking."""
    if size <= 0:
        return False
    libc = _libc()
    if libc is None:
        return None
    page = mmap.PAGESIZE
    address = libc.mmap(None, ctypes.c_size_t(size), mmap.PROT_READ, mmap.MAP_SHARED, fd, ctypes.c_long(0))
    if address in (None, ctypes.c_void_p(-1).value):
        return None
    try:
        pages = (size + page - 1) // page
        vector = (ctypes.c_ubyte * pages)()
        if libc.mincore(ctypes.c_void_p(address), ctypes.c_size_t(size), vector) != 0:
            return None
        return any(byte & 1 for byte in vector)
    finally:
        libc.munmap(ctypes.c_void_p(address), ctypes.c_size_t(size))


def _libc():
    """libc with mmap/mincore/munmap typed, or None off Linux (or where it cannot be loaded)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        return libc
    except (OSError, AttributeError):
        return None
