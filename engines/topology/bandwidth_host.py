"""Host memory bandwidth from one NUMA node's CPUs to another node's memory (Intel MLC's local vs remote matrix).

One repeat: every CPU of the reading node (those this process may use) runs a thread pinned to it that copies its
slice of array `a` into array `c` with numpy.copyto (which releases the GIL, so the threads copy at once); both
arrays' pages were placed on the memory node (bandwidth_membind). Bytes are counted as STREAM counts its Copy
kernel: one array read and one written per element, the write-allocate read of `c` not counted. The batch sizing
and best-of-batches timing are the card's (engines/machine/timing.Batch), the array size rule is the card's
(engines/machine/memory.stream_array_bytes: each array at least 4× the last-level cache), the repeats are the
card's (repeat.until_precise, called by the caller).
"""

from __future__ import annotations

import threading
from typing import Any

from engines.machine.errors import Unavailable
from engines.machine.timing import Batch
from engines.topology.bandwidth_membind import allocate_on_node, pages_on_node, pin_thread

MIB = 1024 ** 2
PLACED_SHARE = 0.9  # below this share of sampled pages on the memory node, the entry is not the pair it claims


class NodeCopy:
    """c[:] = a[:] over arrays on `memory_node`, by one pinned thread per CPU in `reader_cpus`; `once()` → GB/s."""

    def __init__(self, reader_cpus: list[int], memory_node: int, memory_cpus: list[int], array_bytes: int,
                 repeat_s: float, best_of: int = 1):
        import numpy

        if not reader_cpus:
            raise Unavailable("no CPU of the reading node is in this process's affinity mask")
        self.best_of, self.threads = best_of, len(reader_cpus)
        element = numpy.dtype(numpy.float64).itemsize
        numel = max(self.threads, array_bytes // element // self.threads * self.threads)
        try:
            self._a_buf, how = allocate_on_node(numel * element, memory_node, memory_cpus)
            self._c_buf, _ = allocate_on_node(numel * element, memory_node, memory_cpus)
        except (OSError, MemoryError, ValueError) as exc:
            raise Unavailable(f"cannot place two arrays of {numel * element // MIB} MiB on NUMA node "
                              f"{memory_node}: {type(exc).__name__}: {exc}") from exc
        checks = [pages_on_node(buffer, memory_node) for buffer in (self._a_buf, self._c_buf)]
        known = [check for check in checks if check[0] is not None]  # the worse buffer that could be checked
        share, why = min(known, key=lambda check: check[0]) if known else checks[0]
        if share is not None and share < PLACED_SHARE:
            raise Unavailable(f"only {share * 100:.0f}% of the sampled pages landed on node {memory_node} (the "
                              "kernel moved or refused them): this would not be the pair it names")
        self.placement = (f"{how}; pages checked with move_pages: {share * 100:.0f}% on node {memory_node}"
                          if share is not None else f"{how}; placement not checked ({why})")
        a = numpy.frombuffer(self._a_buf, dtype=numpy.float64, count=numel)
        c = numpy.frombuffer(self._c_buf, dtype=numpy.float64, count=numel)
        step = numel // self.threads
        self.array_bytes = numel * element
        self.bytes_per_call = 2 * numel * element
        self._pool = _PinnedPool(reader_cpus, [(lambda i=i: numpy.copyto(c[i * step:(i + 1) * step],
                                                                           a[i * step:(i + 1) * step]))
                                               for i in range(self.threads)])
        try:
            self.batch = Batch.sized(self._pool.round, repeat_s, warmup=2)
        except BaseException:
            self.close()
            raise

    def once(self) -> float:
        return self.bytes_per_call * self.batch.calls / self.batch.best_seconds(self.best_of) / 1e9

    def close(self) -> None:
        self._pool.close()


class _PinnedPool:
    """Threads pinned one per CPU, each running its own job once per `round()`; the round returns when all did."""

    def __init__(self, cpus: list[int], jobs: list[Any]):
        self._start = threading.Barrier(len(cpus) + 1)
        self._done = threading.Barrier(len(cpus) + 1)
        self._stop = False
        self._errors: list[BaseException] = []
        self._threads = [threading.Thread(target=self._loop, args=(cpu, job), daemon=True,
                                          name=f"labconsole-copy-cpu{cpu}") for cpu, job in zip(cpus, jobs, strict=True)]
        for thread in self._threads:
            thread.start()

    def round(self) -> None:
        self._start.wait()
        self._done.wait()
        if self._errors:
            raise self._errors[0]

    def close(self) -> None:
        if self._stop:
            return
        self._stop = True
        self._start.wait()
        for thread in self._threads:
            thread.join()

    def _loop(self, cpu: int, job: Any) -> None:
        pin_thread([cpu])
        while True:
            self._start.wait()
            if self._stop:
                return
            try:
                job()
            except BaseException as exc:  # noqa: BLE001 — raised by round() on the caller's thread
                self._errors.append(exc)
            self._done.wait()
