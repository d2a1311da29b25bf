"""Timing a kernel the same way for every ceiling: a warm-up, a probe call that sizes the repeat, then a
timed batch of calls closed by a device synchronisation (a no-op on the CPU).

Why batches: one call of a fast kernel is shorter than the timer's resolution and the launch jitter; a batch
of ~0.25 s is long enough to average those out and short enough that five repeats fit in a few seconds.
Why the best of a few batches per repeat: a ceiling is what the machine does when nothing interferes, and on a
shared machine a batch that was preempted says nothing about the hardware; STREAM reports its best time for the
same reason. The spread over repeats still shows how noisy the machine was.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


def no_sync() -> None:
    """The CPU's synchronisation: every call has finished when it returns."""


@dataclass
class Batch:
    """`calls` calls of `kernel` per repeat, sized so one repeat lasts about `repeat_s`."""

    kernel: Callable[[], object]
    sync: Callable[[], None] = no_sync
    calls: int = 1

    @classmethod
    def sized(cls, kernel: Callable[[], object], repeat_s: float, sync: Callable[[], None] = no_sync,
              warmup: int = 1) -> Batch:
        batch = cls(kernel, sync)
        for _ in range(warmup):
            kernel()
        sync()
        one = batch.seconds()
        batch.calls = max(1, round(repeat_s / one)) if one > 0 else 1000
        return batch

    def best_seconds(self, batches: int) -> float:
        """The fastest of `batches` batches."""
        return min(self.seconds() for _ in range(max(1, batches)))

    def seconds(self) -> float:
        """Wall time of one batch of `calls` calls, synchronised at both ends."""
        self.sync()
        start = time.perf_counter()
        for _ in range(self.calls):
            self.kernel()
        self.sync()
        return time.perf_counter() - start
