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

import os
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
    return "cold", how + ("; not verified (the page cache cannot be asked here)" if unverified else
                          ", counted page by page (cachestat or mincore)")


def files_under(directory: str | os.PathLike[str]) -> list[Path]:
    """Every regular file below `directory` (a DCP checkpoint is a folder of shards and metadata)."""
    return sorted(p for p in Path(directory).rglob("*") if p.is_file())


# ---- Private API
def _still_cached(fd: int, size: int) -> bool | None:
    """Whether any page of the file is resident in the page cache (engines.storage.pagecache: cachestat, else
    mincore on a mapping that touches nothing); None where the OS cannot be asked. Not a read probe: a missed read
    (even with RWF_NOWAIT) starts read-ahead, which would fill the cache it is checking."""
    from engines.storage.pagecache import cached_pages

    if size <= 0:
        return False
    count, _how = cached_pages(fd, size)
    return None if count is None else count > 0
