"""A data loader: batches of decoded sample files, made ahead of the model by a pool of threads.

Threads, not processes: reading a file releases the GIL while the kernel copies, numpy releases it while it
copies samples into a batch, and the engines compute without it (torch ops, ONNX Runtime's session.run), so
threads overlap storage, decoding and compute. A batch is handed over by reference; processes would copy it
through a pipe (pickled) or need shared memory, and a spawned process pays seconds of imports before its first
batch — noise in a measurement of the pipeline itself. `workers=0` loads each batch on the caller's thread
when it is asked for: the serial baseline, where every byte read is time the model waits.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engines.datafiles import InputLayout, batch_files, decode, read_file

_POLL_S = 0.05  # how often a loader thread blocked on a full queue looks at the stop flag


@dataclass
class Batch:
    """One batch ready to feed: the stacked samples and what making it cost."""

    index: int
    array: np.ndarray  # (batch, *sample_shape) in the layout's host dtype
    bytes_read: int
    read_ns: int
    decode_ns: int  # decoding and stacking into the batch


@dataclass
class LoaderTotals:
    batches: int = 0
    files: int = 0
    bytes_read: int = 0
    read_ns: int = 0
    decode_ns: int = 0


# ---- Public API
def load_batch(files: Sequence[Path], index: int, batch: int, layout: InputLayout, cold: bool,
               clock=time.perf_counter_ns) -> Batch:
    """Read, decode and stack batch number `index` (files taken in order, wrapping round)."""
    out = np.empty((batch, *layout.sample_shape), dtype=layout.host_dtype)
    read_ns = decode_ns = total = 0
    for slot, path in enumerate(batch_files(files, index, batch)):
        started = clock()
        data = read_file(path, cold)
        read = clock()
        out[slot] = decode(path, data, layout)
        read_ns += read - started
        decode_ns += clock() - read
        total += len(data)
    return Batch(index, out, total, read_ns, decode_ns)


class BatchLoader:
    """Batches in the order they are finished, `prefetch` at most waiting; `get` blocks until one is ready.

    An error in a loader thread (a file that does not decode) is raised by the next `get`, so the run fails
    with the file's name rather than hanging.
    """

    def __init__(self, files: Sequence[Path], layout: InputLayout, batch: int, workers: int, cold: bool,
                 prefetch: int | None = None):
        self.files, self.layout, self.batch, self.workers, self.cold = list(files), layout, batch, workers, cold
        self.prefetch = prefetch or max(2, 2 * workers)
        self.totals = LoaderTotals()
        self._tickets = itertools.count()  # next() is atomic under the GIL: one batch number per call
        self._queue: queue.Queue = queue.Queue(maxsize=self.prefetch)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def start(self) -> BatchLoader:
        for number in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"loader-{number}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def get(self) -> Batch:
        if not self.workers:
            made = load_batch(self.files, next(self._tickets), self.batch, self.layout, self.cold)
            self._count(made)
            return made
        item = self._queue.get()
        if isinstance(item, BaseException):
            self._stop.set()
            raise item
        return item

    def reset_totals(self) -> None:
        """Count from now on (the warm-up's batches are not the measurement's)."""
        with self._lock:
            self.totals = LoaderTotals()

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            while thread.is_alive():
                self._drain()
                thread.join(_POLL_S)
        self._drain()

    def __enter__(self) -> BatchLoader:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.close()

    # ---- Private API
    def _work(self) -> None:
        try:
            while not self._stop.is_set():
                made = load_batch(self.files, next(self._tickets), self.batch, self.layout, self.cold)
                self._count(made)
                if not self._put(made):
                    return
        except BaseException as exc:  # noqa: BLE001 — handed to the consumer, which raises it
            self._put(exc)

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _count(self, made: Batch) -> None:
        with self._lock:
            totals = self.totals
            totals.batches += 1
            totals.files += self.batch
            totals.bytes_read += made.bytes_read
            totals.read_ns += made.read_ns
            totals.decode_ns += made.decode_ns

    def _drain(self) -> None:
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return
