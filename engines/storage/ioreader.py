"""The built-in I/O reader of the sweep: one point = block size × queue depth × readers, read or write,
sequential or random, for a fixed wall-clock duration (each thread stops after its first request that completes past
the deadline, so a thread that started late still counts; the point's time runs to the last completion).

How a point is driven (the same shape fio's libaio engine gives with iodepth=QD, numjobs=R):
- readers are processes (spawned once per sweep and reused), each with its own region of the test file
  (file size / readers), so R readers never contend for one Python interpreter;
- queue depth is the number of outstanding requests per reader: QD threads, each issuing os.preadv / os.pwritev
  (both release the GIL, so the requests really overlap in the kernel), sharing one file descriptor;
- sequential: the QD threads take consecutive blocks from one shared cursor (one stream with QD in flight),
  wrapping at the region's end; random: each thread picks block-aligned offsets uniformly in the region;
- O_DIRECT (page-aligned buffers from mmap) where the file system accepts it; otherwise buffered, with the file
  dropped from the page cache (posix_fadvise DONTNEED, checked by counting cached pages) before each read point, and the
  point says whether the drop took;
- writes overwrite the test file with incompressible blocks (random content, a counter in each block's first
  8 bytes so no two blocks are equal) and end with fsync, counted in the point's duration (fio's end_fsync);
- per request the latency is submit → return of the system call (fio's "lat", not only "clat").

The test file itself is made by TestFile (random content, fsync) and removed on the way out, whatever happened.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import multiprocessing
import os
import random
import shutil
import struct
import tempfile
import threading
import time
from array import array
from pathlib import Path
from typing import Any

from engines.machine.storage import drop_from_cache
from engines.storage.errors import StorageError

MIB = 1024 ** 2
DIRECT_ALIGN = 4096  # O_DIRECT wants offsets, sizes and buffers aligned to the logical block; 4 KiB covers it
START_DELAY_S = 0.05  # readers in several processes begin together at a common monotonic instant
READY_TIMEOUT_S = 60.0


# ---- Public API
class TestFile:
    """A `size`-byte file of random bytes in `directory`, fsynced; deleted on exit whatever happened."""

    __test__ = False  # not a pytest class

    def __init__(self, directory: str | os.PathLike, size: int):
        self.directory = check_directory(directory)
        free = shutil.disk_usage(self.directory).free
        if size > free // 2:
            raise StorageError(f"a {size // MIB} MiB test file does not fit in {self.directory} "
                               f"({free // MIB} MiB free; at most half is used)",
                               "choose a smaller --file-size or another --dir")
        self.size = size
        self.path: Path | None = None

    def __enter__(self) -> TestFile:
        try:
            handle, name = tempfile.mkstemp(prefix=".labconsole-iosweep-", suffix=".bin", dir=self.directory)
        except OSError as exc:
            raise StorageError(f"cannot create a test file in {self.directory} ({exc.strerror or exc})",
                               "choose a directory you can write to with --dir") from exc
        self.path = Path(name)
        try:
            with os.fdopen(handle, "wb", buffering=0) as out:
                rng = random.Random(0x10F11E)
                left = self.size
                while left:
                    chunk = min(left, MIB)
                    out.write(rng.randbytes(chunk))
                    left -= chunk
                os.fsync(out.fileno())
        except OSError as exc:
            self._remove()
            raise StorageError(f"writing the {self.size // MIB} MiB test file in {self.directory} failed "
                               f"({exc.strerror or exc})", "free some space or choose another --dir") from exc
        except BaseException:
            self._remove()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._remove()

    def _remove(self) -> None:
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self.path = None


def check_directory(directory: str | os.PathLike) -> Path:
    """The directory as an absolute path, or a StorageError naming what is wrong and the fix."""
    path = Path(directory).expanduser()
    if not path.is_dir():
        raise StorageError(f"{path} is not an existing directory", "name an existing directory with --dir")
    if not os.access(path, os.W_OK | os.X_OK):
        raise StorageError(f"cannot write a test file in {path} (permission denied)",
                           "choose a directory you can write to with --dir")
    return path.resolve()


def direct_supported(path: str | os.PathLike) -> tuple[bool, str]:
    """Whether this file system opens `path` with O_DIRECT and reads an aligned block: (ok, why not)."""
    flag = getattr(os, "O_DIRECT", None)
    if flag is None:
        return False, "this OS has no O_DIRECT"
    try:
        fd = os.open(path, os.O_RDONLY | flag)
    except OSError as exc:
        return False, f"the file system refuses O_DIRECT ({exc.strerror or exc})"
    buffer = mmap.mmap(-1, DIRECT_ALIGN)
    try:
        os.preadv(fd, [buffer], 0)
    except OSError as exc:
        return False, f"an O_DIRECT read failed ({exc.strerror or exc})"
    finally:
        os.close(fd)
        buffer.close()
    return True, ""


def prepare_cache(path: str | os.PathLike, size: int, rw: str, direct: bool) -> tuple[str, str]:
    """Before a point: ("cold" | "warm" | "n/a", why). Reads that go through the page cache find the file dropped
    from it (checked where Linux can tell); O_DIRECT reads bypass it; writes do not depend on it."""
    if rw != "read":
        return "n/a", ""
    if direct:
        return "cold", "O_DIRECT: the page cache is bypassed"
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        state, reason = drop_from_cache(fd, size)
    finally:
        os.close(fd)
    return state, reason or "dropped from the page cache (posix_fadvise DONTNEED, checked by counting cached pages)"


class ReaderPool:
    """`count` reader processes (spawned once, reused for every point); count 1 runs in this process."""

    def __init__(self, count: int):
        self.count = count
        self._workers: list[tuple[Any, Any]] = []
        if count > 1:
            ctx = multiprocessing.get_context("spawn")
            with _children_allowed():
                for i in range(count):
                    parent, child = ctx.Pipe()
                    process = ctx.Process(target=_reader_main, args=(child,), name=f"labconsole-ioreader-{i}",
                                          daemon=False)
                    process.start()
                    child.close()
                    self._workers.append((process, parent))
            for process, parent in self._workers:  # spawned interpreters take a while: wait until each is ready
                if not parent.poll(READY_TIMEOUT_S) or parent.recv() != "ready":
                    self.close()
                    raise StorageError(f"reader process {process.name} did not start within {READY_TIMEOUT_S:g} s",
                                       "check the machine's load, or use --readers 1")

    def __enter__(self) -> ReaderPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        for _process, conn in self._workers:
            with contextlib.suppress(OSError, BrokenPipeError):
                conn.send(None)
        for process, conn in self._workers:
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()
                process.join(timeout=5)
            conn.close()
        self._workers = []

    def measure(self, path: str | os.PathLike, file_size: int, rw: str, pattern: str, block: int, queue_depth: int,
                readers: int, seconds: float, direct: bool) -> dict[str, Any]:
        """One point: {"bytes", "ops", "seconds", "mb_s", "iops", "latency_ns" (array), "start_ns" (array)}."""
        if readers > max(self.count, 1):
            raise ValueError(f"{readers} readers asked of a pool of {self.count}")
        region = file_size // readers // block * block
        if region < block:
            raise StorageError(f"the {file_size // MIB} MiB test file is too small for {readers} readers of "
                               f"{block} B blocks", "raise --file-size")
        start_at = time.monotonic_ns() + int(START_DELAY_S * 1e9)
        tasks = [{"path": str(path), "rw": rw, "pattern": pattern, "block": block, "queue_depth": queue_depth,
                  "offset": i * region, "region": region, "seconds": seconds, "direct": direct,
                  "start_at_ns": start_at, "seed": i} for i in range(readers)]
        if readers == 1 and not self._workers:
            parts = [_run_reader(tasks[0])]
        else:
            try:
                for (_, conn), task in zip(self._workers, tasks, strict=False):
                    conn.send(task)
                parts = [conn.recv() for _, conn in self._workers[:readers]]
            except (EOFError, OSError) as exc:
                raise StorageError(f"a reader process ended before answering ({exc})",
                                   "see its error above; a spawned reader needs the main module guarded by "
                                   "if __name__ == '__main__'") from exc
        for part in parts:
            if "error" in part:
                raise OSError(part.get("errno") or errno.EIO, part["error"])
        return _combine(parts)


# ---- Private API
@contextlib.contextmanager
def _children_allowed():
    """A daemonic worker (the console may run the sweep in one) may not start processes; the readers are always
    joined or terminated by ReaderPool.close, which is what the rule protects, so it is lifted while they start."""
    config = multiprocessing.current_process()._config  # noqa: SLF001 — the documented workaround
    daemonic = config.get("daemon", False)
    config["daemon"] = False
    try:
        yield
    finally:
        config["daemon"] = daemonic


def _reader_main(conn) -> None:
    """A reader process: say it is ready, run each task it is sent, answer with the part; None ends it."""
    conn.send("ready")
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        try:
            conn.send(_run_reader(task))
        except OSError as exc:
            conn.send({"error": f"{exc.strerror or exc}", "errno": exc.errno})
        except Exception as exc:  # noqa: BLE001 — reported to the parent, which raises it
            conn.send({"error": repr(exc), "errno": None})


def _run_reader(task: dict[str, Any]) -> dict[str, Any]:
    """One reader's share of a point: QD threads on one descriptor until the deadline; fsync after writes."""
    flags = os.O_RDONLY if task["rw"] == "read" else os.O_WRONLY
    if task["direct"]:
        flags |= os.O_DIRECT
    fd = os.open(task["path"], flags)
    block, region, offset = task["block"], task["region"], task["offset"]
    blocks = region // block
    cursor = [0]
    lock = threading.Lock()
    start_at = max(task["start_at_ns"], time.monotonic_ns())  # a reader that got the task late still runs fully
    deadline = start_at + int(task["seconds"] * 1e9)
    results: list[tuple[int, int, array, array]] = [None] * task["queue_depth"]  # type: ignore[list-item]
    errors: list[BaseException] = []

    def next_sequential() -> int:
        with lock:
            index = cursor[0]
            cursor[0] = (index + 1) % blocks
        return offset + index * block

    def worker(slot: int) -> None:
        buffer = mmap.mmap(-1, block)
        try:
            read = task["rw"] == "read"
            if not read:
                buffer[:] = os.urandom(block)
            rng = random.Random(task["seed"] * 1000 + slot)
            sequential = task["pattern"] == "seq"
            starts, latencies = array("q"), array("q")
            done = ops = 0
            call = os.preadv if read else os.pwritev
            now = time.monotonic_ns
            while now() < start_at:
                time.sleep(0.001)
            ended = 0
            while ended < deadline:  # every thread issues at least one request, even one that started late
                position = next_sequential() if sequential else offset + rng.randrange(blocks) * block
                if not read:
                    buffer[:8] = struct.pack("<Q", (slot << 48) ^ ops ^ position)
                began = now()
                got = call(fd, [buffer], position)
                ended = now()
                starts.append(began)
                latencies.append(ended - began)
                done += got
                ops += 1
            results[slot] = (done, ops, starts, latencies)
        except BaseException as exc:  # noqa: BLE001 — re-raised in the reader after join
            errors.append(exc)
        finally:
            buffer.close()

    try:
        threads = [threading.Thread(target=worker, args=(slot,), daemon=True) for slot in range(task["queue_depth"])]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if task["rw"] != "read":
            os.fsync(fd)
        ended = time.monotonic_ns()
    finally:
        os.close(fd)
    if errors:
        raise errors[0]
    starts, latencies = array("q"), array("q")
    total = ops = 0
    for done, count, s, lat in results:
        total += done
        ops += count
        starts.extend(s)
        latencies.extend(lat)
    return {"bytes": total, "ops": ops, "start_ns": start_at, "end_ns": ended, "starts": starts.tobytes(),
            "latencies": latencies.tobytes()}


def _combine(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The readers' parts as one point: throughput over the span from the common start to the last end."""
    started = min(part["start_ns"] for part in parts)
    ended = max(part["end_ns"] for part in parts)
    seconds = max(ended - started, 1) / 1e9
    total = sum(part["bytes"] for part in parts)
    ops = sum(part["ops"] for part in parts)
    starts, latencies = array("q"), array("q")
    for part in parts:
        starts.frombytes(part["starts"])
        latencies.frombytes(part["latencies"])
    return {"bytes": total, "ops": ops, "seconds": seconds, "mb_s": total / seconds / 1e6, "iops": ops / seconds,
            "start_ns": starts, "latency_ns": latencies}
