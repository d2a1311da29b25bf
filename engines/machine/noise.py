"""The machine's noise floor: how much a fixed, steady piece of work jitters between measurement windows here.

Why: a run's stability rule compares the medians of its last windows. On a shared or virtual machine those medians
move by 10–20% between windows although the workload does not change (other programs, steal time, frequency), so a
fixed tolerance calls every run on such a machine unstable. The same statistic measured on a reference kernel whose
work never changes says how much of a run's spread the machine itself explains (console.analysis.drift uses it).

The kernel is deterministic, single-threaded work of the three kinds a small model does — array arithmetic on a
cache-resident buffer (numpy, no BLAS, so no thread pool), interpreter dispatch (a short Python loop) and a pass
over a 4 MiB buffer, larger than a core's private caches, so it meets the shared last-level cache and memory as a
model's weights do — about 0.2–0.3 ms a call on a 2-core VM (about a small model's iteration, so preemption weighs
on its window medians as on a run's), timed call by call like a run's iterations, cut into equal-time windows like
a run. Why the 4 MiB pass: without it the kernel read 1–4% between 0.6-s windows in the very minutes the catalog
`mlp` (2.6 MB of weights) read 7–30% on the project's VM — a neighbour's traffic in the shared cache and memory is
most of such a machine's noise, and a kernel that never leaves the private caches does not see it (with the pass:
2–21%). KERNEL_VERSION says which kernel a stored floor was measured with; floors of another version are not
pooled with this one's.

`measure_noise(windows, window_s)` returns the per-window medians and their spread; `spread_of(medians, k)` is the
statistic itself (the median over every k consecutive windows of largest / smallest − 1, the stability rule's
own measure), so a consumer can recompute it for its own k. Runs in a worker (card.py) or in a short spawned process
(console.machine.noise); imports numpy only when called.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

KERNEL = ("numpy float64 a·b + c over 65,536 elements (512 KiB per array, cache-resident, no BLAS), a "
          "2,000-step Python integer loop and one a + 1 pass over a 4 MiB array per call; single-threaded")
KERNEL_VERSION = 2  # 1: without the 4 MiB pass
STABLE_WINDOWS = 3  # the default rule compares the last 3 windows (ValidityRules.stable_windows)
QUICK_WINDOWS, QUICK_WINDOW_S = 10, 0.4  # before a run: 4 s
CARD_WINDOWS, CARD_WINDOW_S = 10, 1.0  # with the machine card: 1-s windows, 10 s


# ---- Public API
def reference_kernel() -> Callable[[], float]:
    """One call of the fixed work; the same inputs every call, so only the machine can change its time."""
    import numpy as np

    a = np.linspace(0.0, 1.0, 65_536)
    b = np.linspace(1.0, 2.0, 65_536)
    c = np.empty_like(a)
    large = np.linspace(0.0, 1.0, 4 * 2**20 // 8)  # 4 MiB: past the private caches, into the shared one
    large_out = np.empty_like(large)

    def once() -> float:
        np.multiply(a, b, out=c)
        np.add(c, a, out=c)
        np.add(large, 1.0, out=large_out)
        total = 0
        for i in range(2_000):
            total += i * i % 7
        return float(c[-1]) + total

    return once


def measure_noise(windows: int = QUICK_WINDOWS, window_s: float = QUICK_WINDOW_S,
                  kernel: Callable[[], Any] | None = None, clock: Callable[[], int] = time.perf_counter_ns
                  ) -> dict[str, Any]:
    """Time the reference kernel call by call for `windows` windows of `window_s` seconds (after a short warm-up):
    the per-window medians, their spread (`spread_of`, k = STABLE_WINDOWS) and the halves' change (`halves_change`:
    how far work that cannot drift moved between the first and second half — the machine's own wander)."""
    if windows < STABLE_WINDOWS:
        raise ValueError(f"windows must be at least {STABLE_WINDOWS}, got {windows}")
    if not window_s > 0:
        raise ValueError(f"window_s must be a positive number of seconds, got {window_s!r}")
    once = kernel or reference_kernel()
    warm_until = clock() + int(min(0.2, window_s) * 1e9)
    while clock() < warm_until:
        once()
    medians_us, counts = [], []
    for _ in range(windows):
        times: list[int] = []
        end = clock() + int(window_s * 1e9)
        while True:
            start = clock()
            once()
            stop = clock()
            times.append(stop - start)
            if stop >= end:
                break
        medians_us.append(statistics.median(times) / 1e3)
        counts.append(len(times))
    return {
        "spread": spread_of(medians_us, STABLE_WINDOWS), "k": STABLE_WINDOWS,
        "max_spread": max_spread_of(medians_us, STABLE_WINDOWS), "halves_change": halves_change(medians_us),
        "window_s": float(window_s), "windows": windows, "medians_us": medians_us, "calls": counts,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "measured_epoch_s": time.time(),
        "kernel": KERNEL, "kernel_version": KERNEL_VERSION,
        "method": (f"reference kernel timed call by call over {windows} windows of {window_s:g} s; spread = median "
                   f"over every {STABLE_WINDOWS} consecutive windows of (largest / smallest window median − 1)"),
    }


def spread_of(medians: Sequence[float | None], k: int = STABLE_WINDOWS) -> float | None:
    """The typical spread of k consecutive window medians: the median over every run of k consecutive windows of
    largest / smallest − 1. None with fewer than k medians, or a missing or non-positive one. The one definition:
    the noise floor, the until-stable stop rule (engines.scenarios._stability) and the jitter verdict
    (console.analysis.drift) all use it, so a run's jitter and the machine's floor are the same kind of number."""
    spreads = group_spreads(medians, k)
    return statistics.median(spreads) if spreads else None


def halves_change(medians: Sequence[float | None]) -> float | None:
    """The median of the last half's window medians over the first half's, − 1 (the middle window is left out when
    the count is odd): the drift test's own change (console.analysis.drift.trend), here on work that cannot drift,
    so it measures how far the machine alone moves a run's halves. None below 2 windows or with a missing one."""
    if len(medians) < 2 or any(m is None or not m > 0 for m in medians):
        return None
    half = len(medians) // 2
    return statistics.median(medians[-half:]) / statistics.median(medians[:half]) - 1.0


def max_spread_of(medians: list[float], k: int = STABLE_WINDOWS) -> float | None:
    """The largest spread of k consecutive window medians (the worst the machine did in the measurement)."""
    spreads = group_spreads(medians, k)
    return max(spreads) if spreads else None


def group_spreads(medians: Sequence[float | None], k: int) -> list[float]:
    """Largest / smallest − 1 of every run of k consecutive window medians ([] when there are fewer than k or one is
    missing): what spread_of summarises, and what console.machine.noise pools across several draws."""
    if k < 2:
        raise ValueError(f"k must be at least 2, got {k}")
    if len(medians) < k or any(m is None or not m > 0 for m in medians):  # a window with no iteration, or 0 ns
        return []
    values = [float(m) for m in medians]
    return [max(values[i:i + k]) / min(values[i:i + k]) - 1.0 for i in range(len(values) - k + 1)]
