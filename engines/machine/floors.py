"""The per-call floor of each engine: the time one call of an almost empty model takes (x + 1 on one float).

Each backend declares its almost empty call (`almost_empty_call(device)` in its implementation module); the card
times every registered backend's with `CallFloor`.

It is what every inference pays whatever the model does — dispatch, argument checks, allocation, and on a GPU
the launch and the synchronisation — so a run whose ops are far below it is host-overhead bound. Timed in blocks
of calls (one call is too short for the timer); each repeat is the fastest block, since a floor is what a call
costs when nothing else runs (a preempted block measures the neighbours, not the engine).
"""

from __future__ import annotations

import time
from collections.abc import Callable


# ---- Public API
class CallFloor:
    """`once()`: the fastest of `blocks` blocks of `block_calls` calls, as the mean time per call in µs."""

    def __init__(self, call: Callable[[], object], blocks: int, block_calls: int, warmup: int = 50,
                 described: str = ""):
        self.call, self.blocks, self.block_calls = call, blocks, block_calls
        self.described = described  # what is called, as the card's method says it
        for _ in range(warmup):
            call()

    def once(self) -> float:
        means = []
        for _ in range(self.blocks):
            start = time.perf_counter()
            for _ in range(self.block_calls):
                self.call()
            means.append((time.perf_counter() - start) / self.block_calls * 1e6)
        return min(means)
