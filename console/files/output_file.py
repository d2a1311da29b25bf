"""Where a command writes the file the user named with `--out`: checked before the work, never destroying the path.

Why one module: `export` and `report` each renamed a finished temporary file over `--out`, which is right for a
file and wrong for everything else — as root, `--out /dev/full` replaced the system's device node with a regular
file, and a FIFO, a character device or a link to `/proc/self/fd/1` met the same fate. Every `--out` now goes
through `check_out` (before the history is opened or a run starts) and `write_out` (once the bytes exist):

- `-`, `/dev/stdout`, or any path that is this process's standard output (`/proc/self/fd/1`, a link to it):
  the standard output stream (`sys.stdout`, or `sys.stdout.buffer` for bytes). Its own write errors (a full disk
  behind `>`, a closed pipe) are left to the caller and the CLI's top level, exactly as without `--out`.
- A regular file, nothing yet, or a symlink (to a file, or dangling): whole or not at all. The bytes go to a
  temporary file in the same folder, are flushed and fsync'd, and only then renamed over the path; a symlink
  there is replaced, not followed (the rename acts on the link itself), as before.
- A character device (a terminal, /dev/null, /dev/full …), or a symlink to one: written INTO, never replaced —
  opened without O_CREAT/O_TRUNC. A failed write (ENOSPC from a /dev/full-like node) is a failure.
- A FIFO (or a symlink to one): written into. It is opened with O_NONBLOCK at check time, so a FIFO nobody reads
  is refused at once ("is a FIFO with no reader") instead of hanging; with a reader the descriptor is switched
  back to blocking writes and held until the bytes are written. A reader that leaves early is a failure.
- A block device: refused. Writing a report into a disk's raw device would overwrite what the disk holds, and
  nobody means that by `--out`.
- A socket: refused (open(2) cannot open one); pipe standard output to the listener instead.
- A directory: refused, with an example file path inside it.

Everything that can be known before the work is a usage error (`OutputError.usage`, exit 2), raised by
`check_out` before anything is created: a name longer than the file system allows (ENAMETOOLONG), a missing or
read-only folder, a path through a file, a symlink loop, a device that cannot be opened, a FIFO with no reader.
A failure while writing (`write_out`) is `usage=False` (exit 1) and says what was left behind.

Qt-free: the CLI and the window's report dialog share it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

T = TypeVar("T")

STDOUT = "stdout"   # the process's standard output stream
FILE = "file"       # a regular file (or nothing yet, or a symlink): temporary file + rename
DEVICE = "character device"
FIFO = "FIFO"

STDOUT_NAMES = ("-", "/dev/stdout")


class OutputError(Exception):
    """The `--out` path cannot be used (`usage`: exit 2, nothing was created) or writing it failed (exit 1)."""

    def __init__(self, message: str, usage: bool):
        super().__init__(message)
        self.usage = usage


@dataclass
class Output:
    """A checked `--out`: what it is, and for a device or FIFO the descriptor opened by the check."""

    text: str                  # as the user gave it, for messages
    kind: str                  # STDOUT, FILE, DEVICE or FIFO
    path: Path | None = None   # None for STDOUT
    fd: int | None = field(default=None, repr=False)

    @property
    def is_stdout(self) -> bool:
        return self.kind == STDOUT

    def close(self) -> None:
        """Let go of a device's or FIFO's descriptor that was never written (the command refused later)."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None

    def __enter__(self) -> Output:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---- Public API
def check_out(text: str | os.PathLike, *, option: str = "--out", example: str = "out.json",
              stdout: IO[Any] | None = None, keep: os.PathLike | str | None = None) -> Output:
    """What `text` names and whether it can be written, before any work; raises OutputError(usage=True) naming the
    problem and the fix. `example` is the file name suggested inside a directory. A device or FIFO comes back
    opened (close the Output if the command stops before `write_out`). `keep`: the history database, which (with
    its journal and lock files) is never an output — `export --out history.db` would replace every run with JSON."""
    raw = os.fspath(text)
    if raw == "":
        raise OutputError(f"{option} is empty: give a file path, or - for standard output", usage=True)
    if raw in STDOUT_NAMES:
        return Output(raw, STDOUT)
    path = Path(raw).expanduser()
    raw = shown(raw)  # from here on only in messages, which must print whatever bytes the name holds
    _check_name_length(path, raw, option)
    try:
        st = os.stat(path)  # follows links: what a write would reach
    except FileNotFoundError:
        st = None  # nothing there, or a dangling symlink: both become a new file
    except OSError as exc:
        raise _usage_from(exc, raw, option) from None
    if st is not None and _is_stdout(st, stdout if stdout is not None else sys.stdout, path):
        return Output(raw, STDOUT)
    mode = st.st_mode if st is not None else 0
    if st is None or stat.S_ISREG(mode):
        if st is not None and keep is not None and _is_kept(path, Path(keep)):
            raise OutputError(f"{option} {raw} is the history database (or one of its files); writing there would "
                              "replace the stored runs. Give another file path", usage=True)
        _check_folder(path, raw, option)
        return Output(raw, FILE, path)
    if stat.S_ISDIR(mode):
        raise OutputError(f"{option} {raw} is a directory; give a file path such as {shown(path / example)}",
                          usage=True)
    if stat.S_ISCHR(mode):
        return Output(raw, DEVICE, path, _open_existing(path, raw, option, os.O_WRONLY | os.O_NOCTTY))
    if stat.S_ISFIFO(mode):
        fd = _open_existing(path, raw, option, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
        os.set_blocking(fd, True)  # a full pipe must wait for its reader, not fail with EAGAIN
        return Output(raw, FIFO, path, fd)
    if stat.S_ISBLK(mode):
        raise OutputError(f"{option} {raw} is a block device (a disk); writing into it would overwrite what the "
                          "disk holds, so it is refused. Give a file path", usage=True)
    if stat.S_ISSOCK(mode):
        raise OutputError(f"{option} {raw} is a socket, which cannot be opened as a file; use {option} - and pipe "
                          "standard output to the program listening on it", usage=True)
    raise OutputError(f"{option} {raw} is neither a file nor a device (mode {mode:o}); give a file path",
                      usage=True)


def write_out(target: Output, produce: Callable[[IO[Any]], T], *, binary: bool, option: str = "--out") -> T:
    """Call `produce(stream)` with a stream onto `target` (bytes when `binary`, else UTF-8 text with newlines as
    written) and return what it returns. A FILE appears whole or not at all; a DEVICE or FIFO is written into.
    Raises OutputError(usage=False) when writing fails; any other exception from `produce` propagates after the
    temporary file is removed."""
    if target.kind == STDOUT:
        stream = sys.stdout.buffer if binary else sys.stdout
        result = produce(stream)
        stream.flush()
        return result
    if target.kind == FILE:
        assert target.path is not None
        return _write_file(target.path, target.text, produce, binary, option)
    return _write_into(target, produce, binary, option)


def write_bytes_to(text: str | os.PathLike, data: bytes, *, option: str = "--out", example: str = "out") -> Output:
    """check_out + write_out for bytes that already exist (a rendered report): one call, the same rules."""
    with check_out(text, option=option, example=example) as target:
        write_out(target, lambda stream: stream.write(data), binary=True, option=option)
        return target


def shown(name: str | os.PathLike) -> str:
    """`name` printable on a strict UTF-8 stream: bytes that are not UTF-8 (a file name from another locale,
    kept by Python as lone surrogates) appear as \\xNN instead of failing the print."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


# ---- Private API
def _is_stdout(st: os.stat_result, stdout: IO[Any], path: Path) -> bool:
    """`path` reaches this process's standard output (same device and inode). A regular file counts only when
    reached through a link (/dev/stdout, /proc/self/fd/1): `--out F > F` keeps F's whole-or-nothing rename."""
    try:
        out = os.fstat(stdout.fileno())
    except (AttributeError, OSError, ValueError):  # no real descriptor (captured, closed)
        return False
    if (st.st_dev, st.st_ino) != (out.st_dev, out.st_ino):
        return False
    return not stat.S_ISREG(st.st_mode) or path.is_symlink()


def _is_kept(path: Path, keep: Path) -> bool:
    """`path` is `keep` or one of its SQLite companions (-wal, -shm, -journal, -lock), reached directly: a symlink
    at `path` is replaced by the rename, not followed, so it cannot harm the file it points to."""
    if path.is_symlink():
        return False
    for suffix in ("", "-wal", "-shm", "-journal", "-lock"):
        with contextlib.suppress(OSError):
            if os.path.samefile(path, f"{keep}{suffix}"):
                return True
    return False


def _check_name_length(path: Path, raw: str, option: str) -> None:
    limit = _name_max(path)
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > limit:
            raise OutputError(f"{option}: the name {_short(shown(part))} is {size} bytes long, more than the {limit} this "
                              "file system allows; choose a shorter file name", usage=True)
    if len(os.fsencode(str(path))) >= 4096:
        raise OutputError(f"{option}: the path is {len(os.fsencode(str(path)))} bytes long, more than the 4095 a "
                          "path may have; choose a shorter path", usage=True)


def _name_max(path: Path) -> int:
    folder = path.parent
    for candidate in (folder, *folder.parents):
        with contextlib.suppress(OSError, ValueError):
            if candidate.is_dir():
                return int(os.pathconf(candidate, "PC_NAME_MAX"))
    return 255


def _short(part: str) -> str:
    return repr(part if len(part) <= 40 else part[:20] + "…" + part[-12:])


def _check_folder(path: Path, raw: str, option: str) -> None:
    """The folder that will hold the temporary file exists and takes new files."""
    folder = path.parent
    where = shown(folder)
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        raise OutputError(f"{option}: cannot write {raw}: the folder {where} does not exist; create it "
                          f"(mkdir -p {where}) or choose a directory you can write to", usage=True) from None
    except OSError as exc:
        raise _usage_from(exc, raw, option) from None
    if not stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{option}: cannot write {raw}: {where} is not a directory; choose a directory you can "
                          "write to", usage=True)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{option}: cannot write {raw}: the folder {where} does not take new files (no "
                          "permission, or a read-only file system); choose a directory you can write to",
                          usage=True)


def _open_existing(path: Path, raw: str, option: str, flags: int) -> int:
    """Open a device or FIFO for writing as it is: no O_CREAT, no O_TRUNC, so nothing is created or replaced."""
    try:
        return os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ENXIO and stat.S_ISFIFO(os.stat(path).st_mode):
            raise OutputError(f"{option} {raw} is a FIFO with no reader; start the program that reads it first "
                              f"(e.g. `cat {raw} > FILE &`), or give a file path", usage=True) from None
        raise _usage_from(exc, raw, option) from None


def _usage_from(exc: OSError, raw: str, option: str) -> OutputError:
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENAMETOOLONG:
        return OutputError(f"{option}: the path {_short(raw)} is too long for this file system ({reason}); "
                           "choose a shorter file name", usage=True)
    if exc.errno == errno.ELOOP:
        return OutputError(f"{option} {raw}: too many levels of symbolic links (a loop?); give a file path",
                           usage=True)
    if exc.errno == errno.ENOTDIR:
        return OutputError(f"{option}: cannot write {raw}: a part of the path is a file, not a directory; choose "
                           "a directory you can write to", usage=True)
    return OutputError(f"{option}: cannot write {raw} ({reason}); choose a directory you can write to", usage=True)


def _write_file(path: Path, raw: str, produce: Callable[[IO[Any]], T], binary: bool, option: str) -> T:
    folder = path.parent
    # A short, unique temporary name: `.{name}.partial` could itself be too long, or a planted symlink.
    try:
        handle, temp = tempfile.mkstemp(prefix=f".{path.name[:48]}.", suffix=".part", dir=folder)
    except OSError as exc:
        raise OutputError(f"{option}: cannot write {raw} ({exc.strerror or exc}); choose a directory you can "
                          "write to", usage=False) from None
    try:
        with os.fdopen(handle, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8", "newline": ""})) \
                as stream:
            result = produce(stream)
            stream.flush()
            os.fsync(stream.fileno())  # a full disk shows here at the latest, before the rename
        os.chmod(temp, 0o666 & ~_umask())  # mkstemp's 0600 would hide the file from the user's group
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise OutputError(f"{option} {raw}: writing failed ({exc.strerror or exc}); {raw} was left as it was. "
                          "Free disk space or choose another path", usage=False) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return result


def _write_into(target: Output, produce: Callable[[IO[Any]], T], binary: bool, option: str) -> T:
    fd, target.fd = target.fd, None
    if fd is None:
        raise OutputError(f"{option} {target.text}: already written or closed", usage=False)
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8", "newline": ""})) \
                as stream:
            result = produce(stream)
            stream.flush()
    except BrokenPipeError:
        raise OutputError(f"{option} {target.text}: the {target.kind}'s reader stopped reading before the end; "
                          "what it received is incomplete", usage=False) from None
    except OSError as exc:
        raise OutputError(f"{option} {target.text}: writing into the {target.kind} failed ({exc.strerror or exc}); "
                          f"it was not replaced. Give a file path instead", usage=False) from None
    return result


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
