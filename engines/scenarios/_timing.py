"""Helpers the scenarios share: warm-up (fixed or until stable), latency shipping, percentiles, waiting.

Engines never import the console, so the warm-up stability rule lives here too: `warmup_stable` is the
engines-side twin of `console.analysis.validity.warmup_stable` (same rule, plain Python, no numpy), and
tests hold the two to the same answers.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import statistics
import sys
import threading
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from engines import protocol

Emit = Callable[[dict[str, Any]], None]

FLUSH_NS = 100_000_000  # ship latencies about every 100 ms
CHUNK = 4096  # preallocated slots; a chunk is shipped early if it fills before 100 ms

# Warm-up until stable: windows of at least this long and this many iterations; stable when the medians of
# the last STABLE_WINDOWS windows agree within STABLE_TOLERANCE (max/min − 1), stopped at the cap otherwise.
WINDOW_NS = 100_000_000
WINDOW_MIN_ITERATIONS = 5
STABLE_WINDOWS = 3
STABLE_TOLERANCE = 0.10
WARMUP_KEPT = 100_000  # warm-up latencies kept for the scenarios (between this and twice this, the latest)
DEFAULT_WARMUP_CAP_S = 30.0  # as console.analysis.validity.ValidityRules.max_warmup_s


# ---- Public API
def warmup_stable(latencies: Sequence[float], windows: int = STABLE_WINDOWS, tolerance: float = STABLE_TOLERANCE,
                  window: int | None = None) -> bool:
    """True when the medians of the last `windows` consecutive windows agree within `tolerance` (max/min − 1).

    `window` is the iterations per window; None splits all the given latencies into `windows` equal windows
    (a remainder at the start is dropped). Fewer than `windows` latencies are never stable.
    """
    if windows < 2:
        raise ValueError(f"windows must be ≥ 2, got {windows}")
    values = list(latencies)
    if window is None:
        window = len(values) // windows
    if window < 1 or len(values) < windows * window:
        return False
    recent = values[len(values) - windows * window:]
    medians = [statistics.median(recent[i * window:(i + 1) * window]) for i in range(windows)]
    return medians_agree(medians, tolerance)


def medians_agree(medians: Sequence[float], tolerance: float = STABLE_TOLERANCE) -> bool:
    """max/min − 1 ≤ tolerance; never true for non-positive medians (a 0 ns latency is not a measurement)."""
    low, high = min(medians), max(medians)
    if low <= 0:
        return False
    return high / low - 1.0 <= tolerance


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation, like numpy's default; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass
class Warmup:
    """What the warm-up did: its result fields, and the warm-up latencies (ns) for scenarios that need them."""

    first_inference_ms: float
    iterations: int
    latencies_ns: array = field(default_factory=lambda: array("q"))  # the latest WARMUP_KEPT or more
    until_stable: bool = False
    stabilised: bool | None = None  # None when the warm-up was a fixed time
    elapsed_s: float = 0.0
    window_medians_ms: list[float] = field(default_factory=list)
    cap_s: float | None = None

    def result_fields(self) -> dict[str, Any]:
        """Extra `result` fields (until-stable warm-ups only; a fixed warm-up adds nothing)."""
        if not self.until_stable:
            return {}
        return {"warmup_until_stable": True, "warmup_stabilised": bool(self.stabilised),
                "warmup_elapsed_s": self.elapsed_s, "warmup_cap_s": self.cap_s,
                "warmup_window_medians_ms": self.window_medians_ms[-STABLE_WINDOWS:]}


def result_head(iterations: int, measured_s: float, warmup: Warmup, batch: int) -> dict[str, Any]:
    """The fields every scenario's `result` starts with (the ones protocol.FIELDS requires of it)."""
    return {"iterations": iterations, "measured_s": measured_s, "warmup_iterations": warmup.iterations,
            "first_inference_ms": warmup.first_inference_ms, "batch": batch}


def warm_up(infer: Callable[[], Any], spec: Any, emit: Emit, cancelled: Callable[[], bool],
            clock: Callable[[], int] = time.perf_counter_ns) -> Warmup:
    """Emit phase(warmup), time the first (cold) inference, then warm up back to back.

    Fixed: until `spec.warmup_s` after the first inference began. Until stable
    (`spec.scenario_options.warmup_until_stable`): until the last three windows (≥ 100 ms and ≥ 5
    iterations each) have medians within 10%, or `warmup_cap_s` (default 30 s) has passed.
    """
    options = spec.scenario_options
    until_stable = bool(options.warmup_until_stable)
    emit(protocol.make("phase", phase="warmup", t_ns=clock()))
    t0 = clock()
    infer()
    first_ns = clock() - t0
    if until_stable:
        cap_s = options.warmup_cap_s if options.warmup_cap_s is not None else DEFAULT_WARMUP_CAP_S
        outcome = Warmup(first_ns / 1e6, 1, until_stable=True, stabilised=False, cap_s=cap_s)
        end = t0 + int(cap_s * 1e9)
    else:
        outcome = Warmup(first_ns / 1e6, 1)
        end = t0 + int(spec.warmup_s * 1e9)
    latencies = outcome.latencies_ns
    window = array("q")
    window_start_ns = clock()
    next_report = window_start_ns + FLUSH_NS
    while not cancelled():
        start = clock()
        if start >= end:
            break
        infer()
        now = clock()
        latencies.append(now - start)
        if len(latencies) >= 2 * WARMUP_KEPT:
            del latencies[:WARMUP_KEPT]  # the most recent are kept: a long warm-up of a fast model stays small
        outcome.iterations += 1
        if until_stable:
            window.append(now - start)
            if now - window_start_ns >= WINDOW_NS and len(window) >= WINDOW_MIN_ITERATIONS:
                outcome.window_medians_ms.append(statistics.median(window) / 1e6)
                window, window_start_ns = array("q"), now
                recent = outcome.window_medians_ms[-STABLE_WINDOWS:]
                if len(recent) == STABLE_WINDOWS and medians_agree(recent):
                    outcome.stabilised = True
                    break
        if now >= next_report:
            emit(protocol.make("progress", phase="warmup", fraction=min(1.0, (now - t0) / max(1, end - t0)),
                               iterations=outcome.iterations, elapsed_s=(now - t0) / 1e9))
            next_report = now + FLUSH_NS
    outcome.elapsed_s = (clock() - t0) / 1e9
    return outcome


class Recorder:
    """Thread-safe (arrival ns, latency ns) pairs, shipped as `latencies` events by one thread.

    Worker threads `add`; the thread that owns `emit` calls `ship` (about every 100 ms) and `close`. Other
    per-query facts a scenario needs afterwards (service time, queue wait) go in `extras`.
    """

    def __init__(self, emit: Emit, keep: bool = False,
                 observer: Callable[[array, array], None] | None = None):
        """`observer(t_ns, latency_ns)` sees each shipment before it is emitted (the until-stable windows)."""
        self._emit = emit
        self._observer = observer
        self._lock = threading.Lock()
        self._t = array("q")
        self._latency = array("q")
        self._keep = keep
        self.kept: array = array("q")  # every latency, when keep=True (for a scenario's own statistics)
        self.count = 0

    def add(self, t_ns: int, latency_ns: int) -> None:
        with self._lock:
            self._t.append(t_ns)
            self._latency.append(latency_ns)
            self.count += 1

    def ship(self) -> int:
        """Emit what has been added since the last ship (nothing when empty); return how many."""
        with self._lock:
            t, latency = self._t, self._latency
            if not t:
                return 0
            self._t, self._latency = array("q"), array("q")
        if self._keep:
            self.kept.extend(latency)
        if self._observer is not None:
            self._observer(t, latency)
        self._emit(protocol.make("latencies", t_ns=t.tolist(), latency_ns=latency.tolist()))
        return len(t)


def ship_arrays(emit: Emit, starts: array, durations: array, filled: int) -> None:
    """One `latencies` event from the first `filled` slots of preallocated buffers (single-thread hot loops)."""
    emit(protocol.make("latencies", t_ns=starts[:filled].tolist(), latency_ns=durations[:filled].tolist()))


def thread_initializer() -> Callable[[], None]:
    """What a new worker thread must call before its first `infer`: the thread settings of this thread.

    PyTorch's intra-op thread count (`torch.set_num_threads`, set by the backend from `spec.threads`) is an
    OpenMP setting *per thread*: a new thread starts with OpenMP's default (every core), and on a loaded
    machine that team of threads waiting at barriers made a 0.7 ms MLP call take 9 ms. The backend already
    loaded torch, so it is looked up, never imported (engines stay importable without it).
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return lambda: None
    threads = torch.get_num_threads()
    return lambda: torch.set_num_threads(threads)


def sleep_until(deadline_ns: int, clock: Callable[[], int] = time.perf_counter_ns) -> None:
    """Sleep (never spin: a spinning thread holds the GIL from the thread serving queries) until deadline."""
    wait = deadline_ns - clock()
    if wait > 0:
        time.sleep(wait / 1e9)


@contextlib.contextmanager
def precise_sleep() -> Iterator[None]:
    """Linux lets a sleep overrun by the thread's timer slack (50 µs by default); ask for 1 µs while serving.

    Threads inherit the slack of the thread that starts them, so it is restored afterwards. Elsewhere, a no-op.
    """
    libc = None
    previous = None
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            previous = libc.prctl(30, 0, 0, 0, 0)  # PR_GET_TIMERSLACK
            if previous <= 0 or libc.prctl(29, 1000, 0, 0, 0) != 0:  # PR_SET_TIMERSLACK, ns
                previous = None
        except (OSError, AttributeError):
            previous = None
    try:
        yield
    finally:
        if previous is not None and libc is not None:
            libc.prctl(29, previous, 0, 0, 0)


def progress(emit: Emit, phase: str, fraction: float, iterations: int, elapsed_s: float, **extra: Any) -> None:
    emit(protocol.make("progress", phase=phase, fraction=min(1.0, max(0.0, fraction)), iterations=iterations,
                       elapsed_s=elapsed_s, **extra))
