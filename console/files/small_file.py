"""Reading a small input file the user named (a rules file, a spec): a regular file of bounded size, or a clear
refusal — never a wait on a FIFO nobody writes, never /dev/zero read until memory runs out.

Why: `open(path).read()` blocks forever on a FIFO and reads a character device without end. The path is checked
with stat, then opened without blocking and checked again on the descriptor (a FIFO put in place between the
check and the open is refused too), and at most `limit` + 1 bytes are read. The demo playlist reads through it
too, adding its own fix to the message (console.demo.playlist).
"""

from __future__ import annotations

import os
import stat

__all__ = ["SmallFileError", "read_small_file"]

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


class SmallFileError(ValueError):
    """Why the file cannot be read: 'no such file', 'is a FIFO (named pipe), not a regular file', 'is 3 MiB,
    larger than the 1 MiB such a file may be', 'cannot be read (File name too long)'. `missing` tells a missing
    file from the rest."""

    def __init__(self, reason: str, missing: bool = False):
        super().__init__(reason)
        self.reason, self.missing = reason, missing


# ---- Public API
def read_small_file(path: str | os.PathLike, limit: int) -> bytes:
    """The bytes of the regular file at `path` (symlinks followed) if it holds at most `limit` bytes."""
    try:
        _check(os.stat(path), limit)
    except FileNotFoundError:
        raise SmallFileError("no such file", missing=True) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        if isinstance(exc, SmallFileError):
            raise
        raise SmallFileError(f"cannot be read ({_reason(exc)})") from None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise SmallFileError(f"cannot be read ({_reason(exc)})") from None
    try:
        _check(os.fstat(fd), limit)
        with open(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)  # it may have grown since its size was checked
    except OSError as exc:
        raise SmallFileError(f"cannot be read ({_reason(exc)})") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise SmallFileError(f"is larger than the {_size(limit)} such a file may be")
    return data


# ---- Private API
def _check(info: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
        raise SmallFileError(f"is {kind}, not a regular file")
    if info.st_size > limit:
        raise SmallFileError(f"is {_size(info.st_size)}, larger than the {_size(limit)} such a file may be")


def _size(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n / 1024:,.0f} KiB" if n >= 1024 else f"{n} bytes"


def _reason(exc: Exception) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
