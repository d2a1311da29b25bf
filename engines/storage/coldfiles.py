"""Make files just written (or about to be read) cold: their pages dropped from the page cache, checked where
Linux can say.

Why: a checkpoint read back straight after it was written comes from memory, and a "restore at 20 GB/s" would
be the page cache's speed, not the storage's. Each file is flushed (fsync: dirty pages are never dropped) and
then dropped with posix_fadvise(POSIX_FADV_DONTNEED). Where preadv(RWF_NOWAIT) exists, pages at the start,
middle and end are probed (a page still cached answers; a dropped one refuses with EAGAIN), so "cold" is
checked, not assumed. Where the drop cannot work (tmpfs: the files are memory; an OS without fadvise) the
state is "warm" with the reason, and the figures say so.

Standard library only (plus engines.datafiles.can_drop_cache, numpy-only): used by the checkpoint card and
the cold-start decomposition alike.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterable
from pathlib import Path

_PROBE = 4096
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
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # the probe may have started read-ahead
        except OSError as exc:
            return "warm", f"dropping {path.name} from the page cache failed ({exc.strerror or exc})"
        finally:
            os.close(fd)
    how = f"{len(files)} file(s) fsynced and dropped from the page cache (posix_fadvise DONTNEED)"
    return "cold", how + ("; not verified (no preadv RWF_NOWAIT here)" if unverified else
                          ", checked with preadv(RWF_NOWAIT)")


def files_under(directory: str | os.PathLike[str]) -> list[Path]:
    """Every regular file below `directory` (a DCP checkpoint is a folder of shards and metadata)."""
    return sorted(p for p in Path(directory).rglob("*") if p.is_file())


# ---- Private API
def _still_cached(fd: int, size: int) -> bool | None:
    """Whether a page at the start, middle or end is still cached; None when the OS cannot be asked."""
    flag = getattr(os, "RWF_NOWAIT", None)
    if flag is None or not hasattr(os, "preadv") or size <= 0:
        return None
    buffer = bytearray(_PROBE)
    for offset in (0, size // 2 // _PROBE * _PROBE, max(0, size - 1) // _PROBE * _PROBE):
        try:
            if os.preadv(fd, [buffer], offset, flag) > 0:
                return True
        except BlockingIOError:
            continue
        except OSError as exc:
            if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                return None
            raise
    return False
