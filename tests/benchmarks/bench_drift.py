"""A deterministic drift for the stability benchmark: the model's `infer` slowed by a fixed fraction after half the
measuring phase, in the worker process only.

Test-only on purpose: nothing in the product can reach it (no spec field, option or environment variable turns it
on); a benchmark passes `slowed_worker_main` as RunSession's `worker_entry`. The slow-down is CPU work (a busy
wait of `fraction` × the median latency of the calls measured before half-way), so the measured latency rises by
that fraction, whatever the machine's speed, exactly half-way through the run.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

SLOWDOWN = 0.20


def slowed_worker_main(conn, spec_data: dict[str, Any]) -> None:
    """`engines.worker.worker_main` with the slow-down installed (see the module docstring)."""
    from engines import worker

    install(spec_data, SLOWDOWN)
    worker.worker_main(conn, spec_data)


def install(spec_data: dict[str, Any], fraction: float = SLOWDOWN) -> None:
    """Patch this process's `engines.backends.module` so every loaded model slows by `fraction` half-way through
    the measuring phase (`duration_s` of the spec; the phase starts at the first call after the warm-up)."""
    from engines import backends

    if getattr(backends.module, "_slowed", False):
        return
    real_module = backends.module
    half_ns = int(float(spec_data["duration_s"]) * 1e9 / 2)
    warmup_ns = int(float(spec_data.get("warmup_s") or 0) * 1e9)

    class _Backend:
        def __init__(self, real):
            self._real = real

        def __getattr__(self, name):
            return getattr(self._real, name)

        def load(self, spec):
            model = self._real.load(spec)
            model.infer = _Slowed(model.infer, warmup_ns, half_ns, fraction)
            return model

    def module(engine: str):
        return _Backend(real_module(engine))

    module._slowed = True
    backends.module = module


class _Slowed:
    """`infer`, plus a busy wait of fraction × the median call after `warmup_ns + half_ns` from the first call.

    The warm-up is timed from the first call, so the slow-down starts about half-way through measuring (a
    warm-up that ends by stability, not time, shifts it; the benchmark uses a fixed warm-up)."""

    def __init__(self, infer, warmup_ns: int, half_ns: int, fraction: float):
        self._infer, self._warmup_ns, self._half_ns, self._fraction = infer, warmup_ns, half_ns, fraction
        self._first: int | None = None
        self._seen: list[int] = []
        self._extra_ns: int | None = None

    def __call__(self):
        clock = time.perf_counter_ns
        now = clock()
        if self._first is None:
            self._first = now
        elapsed = now - self._first
        result = self._infer()
        took = clock() - now
        if elapsed < self._warmup_ns:
            return result
        if elapsed < self._warmup_ns + self._half_ns:
            if len(self._seen) < 100_000:
                self._seen.append(took)
            return result
        if self._extra_ns is None:
            self._extra_ns = int(self._fraction * statistics.median(self._seen)) if self._seen else 0
        until = clock() + self._extra_ns
        while clock() < until:
            pass
        return result
