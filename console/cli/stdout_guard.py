"""Standard output that cannot be written: `> /dev/full` or a full disk behind `> FILE`, and a reader that left
(`| head -1`).

Every command writes its result to sys.stdout, and each could fail there; catching OSError in each would also catch
the command's own file errors. So main() runs the command with sys.stdout behind a thin guard that passes every
write through and remembers the first OSError standard output itself raised. That error — and only that one — ends
the command as:

- a write error (ENOSPC, EIO …): exit 1 with one line, "labconsole: error: cannot write to standard output: No
  space left on device";
- a broken pipe: exit 141 (128 + SIGPIPE, what the shell reports for `cat`, `yes` or `seq` in the same pipe), and
  nothing on stderr: the reader chose to stop reading, which is no failure worth a message.

Standard output is flushed inside the guarded region, so an error still sitting in the buffer surfaces here, not at
interpreter shutdown; afterwards the stream's descriptor is pointed at /dev/null (the recipe of Python's signal
module documentation), so the exit flush of what is left in the buffer cannot print "Exception ignored" either.
A file name that is not valid UTF-8 is printed as its bytes (surrogateescape), not a UnicodeEncodeError.
Ctrl+C in a command that does not handle it itself (run, analyze, sweep do: they stop the worker and keep what was
measured) is exit 130 with one line, not a KeyboardInterrupt traceback.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Callable
from typing import Any

from console.cli.common import EXIT_CANCELLED, EXIT_FAILED

EXIT_BROKEN_PIPE = 128 + 13  # SIGPIPE


# ---- Public API
def run_guarded(call: Callable[[], int]) -> int:
    """`call()`'s exit status, or the status above when standard output failed under it (or Ctrl+C came)."""
    original = sys.stdout
    guard = _Guard(original) if original is not None else None
    if guard is not None:
        sys.stdout = guard
    restore = _names_as_bytes(original)
    try:
        try:
            code = call()
            if sys.stdout is not None:
                sys.stdout.flush()  # here, not at shutdown: a full disk is found while it can still be reported
        finally:
            if sys.stdout is guard:  # a command that swapped in its own stream keeps it
                sys.stdout = original
            restore()
    except OSError:
        if guard is None or guard.failure is None:
            raise  # a file error of the command itself, not of standard output
        return _stdout_failed(guard.failure, original)
    except KeyboardInterrupt:
        with contextlib.suppress(OSError, ValueError):
            print("labconsole: interrupted", file=sys.stderr)
        return EXIT_CANCELLED
    if guard is not None and guard.failure is not None:  # the command caught the error itself and carried on
        return _stdout_failed(guard.failure, original)
    return code


# ---- Private API
class _Guard:
    """A stream (sys.stdout, or its binary .buffer) that records the first OSError of a write or flush, then
    re-raises it unchanged: the command unwinds as it would have, and run_guarded knows where the error came from."""

    def __init__(self, stream: Any, owner: _Guard | None = None) -> None:
        self._stream = stream
        self._owner = owner or self
        self.failure: OSError | None = None

    def write(self, data):
        return self._guarded(self._stream.write, data)

    def writelines(self, lines):
        return self._guarded(self._stream.writelines, lines)

    def flush(self):
        return self._guarded(self._stream.flush)

    @property
    def buffer(self):
        return _Guard(self._stream.buffer, self._owner)

    def __getattr__(self, name: str):  # isatty, fileno, encoding …: the stream's own
        return getattr(self._stream, name)

    def _guarded(self, method, *args):
        try:
            return method(*args)
        except OSError as exc:
            if self._owner.failure is None:
                self._owner.failure = exc
            raise


def _names_as_bytes(stream: Any) -> Callable[[], None]:
    """Let standard output print a file name that is not valid UTF-8 (b'caf\\xe9', decoded by Python as
    'caf\\udce9') as the bytes it is, as `ls` does, instead of raising UnicodeEncodeError: a strict stream
    becomes surrogateescape while the command runs. Returns what puts the stream back."""
    errors = getattr(stream, "errors", None)
    if errors != "strict" or not callable(getattr(stream, "reconfigure", None)):
        return lambda: None
    try:
        stream.reconfigure(errors="surrogateescape")
    except (OSError, ValueError):
        return lambda: None

    def restore() -> None:
        with contextlib.suppress(OSError, ValueError):  # it flushes: a failed stream is reported by the caller
            stream.reconfigure(errors=errors)

    return restore


def _stdout_failed(exc: OSError, stream: Any) -> int:
    _point_at_devnull(stream)
    if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
        return EXIT_BROKEN_PIPE
    reason = exc.strerror or str(exc) or type(exc).__name__
    with contextlib.suppress(OSError, ValueError):
        print(f"labconsole: error: cannot write to standard output: {reason}", file=sys.stderr)
    return EXIT_FAILED


def _point_at_devnull(stream: Any) -> None:
    """Standard output's descriptor now writes to /dev/null, so the interpreter's exit flush of the bytes still
    buffered succeeds silently. A stream without a descriptor (a test's capture) is left alone."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
