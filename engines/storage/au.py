"""The feed benchmark's arithmetic, kept pure so it is tested without a clock: accelerator utilization (AU),
read-latency percentiles, what limited a trial, and the search for the largest N that passes.

AU follows MLPerf Storage (DLIO): an emulated accelerator's step is a wait for its batch followed by its compute
time; AU = compute time / wall time over the steps AFTER THE FIRST (the first step waits for the pipeline to fill —
every accelerator starts with an empty buffer — and would charge start-up to the storage).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

# DESIGN.md section 5 (MLPerf's early-stopping rule): a percentile is shown only when enough samples back it.
MIN_SAMPLES = {"p50": 1, "p90": 64, "p99": 662}
BUSY_READER = 0.80  # a reader runnable (on a CPU or waiting for one) this much of the trial is CPU-bound


# ---- Public API
def accelerator_utilization(steps: Sequence[tuple[float, float]]) -> float | None:
    """AU of one accelerator from its steps' (wait_s, compute_s), first step excluded; None with < 2 steps."""
    measured = list(steps)[1:]
    if not measured:
        return None
    compute = sum(step[1] for step in measured)
    wall = sum(step[0] + step[1] for step in measured)
    return compute / wall if wall > 0 else None


def overall_au(per_accelerator: Sequence[float | None]) -> float | None:
    """The run's AU: the mean over accelerators (DLIO's train_au_mean), None when any has no measured step."""
    if not per_accelerator or any(value is None for value in per_accelerator):
        return None
    return sum(per_accelerator) / len(per_accelerator)  # type: ignore[arg-type]


def percentiles_ms(latencies_ns: Sequence[int]) -> dict[str, Any]:
    """p50/p90/p99 in ms (nearest rank); a percentile without enough reads is None and `note` says why."""
    ordered = sorted(latencies_ns)
    out: dict[str, Any] = {"count": len(ordered)}
    short = []
    for name, minimum in MIN_SAMPLES.items():
        if len(ordered) < max(minimum, 1):
            out[name] = None
            short.append(f"{name} needs ≥ {minimum} reads")
            continue
        q = int(name[1:]) / 100
        out[name] = ordered[max(0, math.ceil(q * len(ordered)) - 1)] / 1e6
    out["note"] = (f"{'; '.join(short)}, this trial had {len(ordered)} (run longer: --duration)" if short else "")
    return out


def limited_by(au: float | None, threshold: float, reader_busy: Sequence[float]) -> str:
    """What held the feed back: "none" (AU met), "readers" (they were runnable — CPU-bound — most of the
    trial, so the device was not the limit) or "device" (they waited on I/O)."""
    if au is not None and au >= threshold:
        return "none"
    if reader_busy and sum(reader_busy) / len(reader_busy) >= BUSY_READER:
        return "readers"
    return "device"


def find_max(trial: Callable[[int], float | None], threshold: float, start: int = 1,
             limit: int = 1024) -> tuple[int, list[tuple[int, float | None]]]:
    """The largest N with trial(N) ≥ threshold: double from `start` until one fails, then bisect.

    Returns (max_passing, series) — series in the order tried; max_passing is 0 when even `start` fails and
    `limit` when it never fails up to `limit`. Few trials: about 2·log2(N).
    """
    series: list[tuple[int, float | None]] = []
    results: dict[int, bool] = {}

    def passes(n: int) -> bool:
        au = trial(n)
        series.append((n, au))
        results[n] = au is not None and au >= threshold
        return results[n]

    n = max(1, start)
    if not passes(n):
        return 0 if n == 1 else _bisect(passes, 0, n, results), series
    good = n
    while good < limit:
        n = min(good * 2, limit)
        if not passes(n):
            return _bisect(passes, good, n, results), series
        good = n
    return good, series


# ---- Private API
def _bisect(passes: Callable[[int], bool], good: int, bad: int, results: dict[int, bool]) -> int:
    """Largest passing N in (good, bad): good passed (or is 0), bad failed."""
    while bad - good > 1:
        middle = (good + bad) // 2
        if results[middle] if middle in results else passes(middle):
            good = middle
        else:
            bad = middle
    return good
