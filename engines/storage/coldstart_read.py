"""A model file's bytes from storage into memory, three ways: buffered read, mmap, O_DIRECT.

Why three: they are what loaders do. `buffered` is read(2) through the page cache into one buffer (what
`open(...).read()` and most loaders do); `mmap` maps the file and faults every page in (safetensors' and
`torch.load(mmap=True)`'s way; slow on some network file systems, as their users report); `direct` reads with
O_DIRECT into page-aligned memory, past the page cache (what GPUDirect-style loaders and fio's direct=1 do).
Each returns the bytes in memory and what was used; O_DIRECT falls back to a buffered read, with the reason, where
the file system refuses it (tmpfs, some network and overlay file systems answer EINVAL).
Standard library and numpy only.
"""

from __future__ import annotations

import errno
import mmap
import os
from pathlib import Path
from typing import Any

MODES = ("mmap", "buffered", "direct")
_CHUNK = 8 * 1024 ** 2  # bytes per O_DIRECT read: a multiple of every block size in use
_ALIGN = 4096


# ---- Public API
def read(path: Path, mode: str) -> tuple[Any, dict[str, Any]]:
    """(the file's bytes as a buffer, {"mode", "used", "note"}); `used` differs from `mode` after a fallback."""
    if mode == "buffered":
        return _buffered(path), {"mode": mode, "used": mode, "note": "read(2) through the page cache"}
    if mode == "mmap":
        return _mapped(path), {"mode": mode, "used": mode, "note": "mmap, then every page faulted in"}
    if mode == "direct":
        try:
            return _direct(path), {"mode": mode, "used": mode, "note": "O_DIRECT into page-aligned memory"}
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP):
                raise
            why = (f"the file system refused O_DIRECT ({exc.strerror or exc}), so this is a buffered read "
                   "instead")
            return _buffered(path), {"mode": mode, "used": "buffered", "note": why}
    raise ValueError(f"unknown read mode {mode!r}; choose from {', '.join(MODES)}")


def as_bytes(buffer: Any) -> bytes:
    """The `bytes` object ONNX Runtime and safetensors take (a copy, unless the buffer already is one)."""
    return buffer if isinstance(buffer, bytes) else bytes(buffer)


# ---- Private API
def _buffered(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _mapped(path: Path) -> mmap.mmap:
    import numpy as np

    with open(path, "rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    pages = np.frombuffer(mapped, dtype=np.uint8)[::mmap.PAGESIZE]
    int(pages.sum())  # touching one byte per page faults every page in from storage
    del pages
    return mapped


def _direct(path: Path) -> memoryview:
    flag = getattr(os, "O_DIRECT", None)
    if flag is None:
        raise OSError(errno.EOPNOTSUPP, "this OS has no O_DIRECT")
    fd = os.open(path, os.O_RDONLY | flag)
    try:
        size = os.fstat(fd).st_size
        padded = max(_ALIGN, -(-size // _ALIGN) * _ALIGN)
        buffer = mmap.mmap(-1, padded)  # anonymous mappings are page-aligned, as O_DIRECT needs
        view = memoryview(buffer)
        done = 0
        while done < size:
            count = os.preadv(fd, [view[done:min(done + _CHUNK, padded)]], done)
            if count <= 0:
                break
            done += count
    finally:
        os.close(fd)
    return view[:size]
