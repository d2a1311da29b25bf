"""Telemetry sampler benchmarks: its CPU cost, its timing jitter, and its effect on a measured workload.

Goals (issue 5): < 1 % of one core at 10 Hz; sampling-interval jitter p99 < 10 % of the period; median latency
of a workload with the sampler on within 1 % of off. Each figure comes with a distribution-free 95% interval
(bench_stats) and is judged by the shared rule (bench_verdict): the cost is the median of 2-second windows, the
jitter p99 needs ~370 intervals before its upper side can be bounded (hence a 40 s watch, SAMPLER_WATCH_S), and
the workload comparison uses paired, interleaved rounds (on/off in ABBA order) on this small shared box.
"""

from __future__ import annotations

import os
import signal
import statistics
import threading
import time

import numpy as np
import psutil
from bench_stats import median_with_interval, paired_ratios, quantile_interval
from bench_verdict import Goal, judge

from console.telemetry import Sampler

RATE_HZ = 10.0
WATCH_S = float(os.environ.get("SAMPLER_WATCH_S", 40))
WINDOW_S = 2.0  # the slow (1 Hz) group lands in every window alike
EFFECT_PAIRS = 24  # 24 pairs bound a median between the 7th and 18th values at 95%
COST_GOAL = Goal.at_most(1.0, "% of a core")
JITTER_GOAL = Goal.at_most(10.0, "% of the period")
EFFECT_GOAL = Goal.at_most(1.01)


def _cpu_seconds(pid: int) -> float:
    """CPU time of ``pid``: exact from /proc/PID/schedstat (ns on CPU) where there is one; psutil's cpu_times
    otherwise (10 ms clock ticks: too coarse for 1 % of 12 s on its own)."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        t = psutil.Process(pid).cpu_times()
        return t.user + t.system


def _start(rate_hz: float = RATE_HZ):
    rows: list[tuple] = []
    lock = threading.Lock()
    opened = threading.Event()

    def on_samples(batch):
        with lock:
            rows.extend(batch)

    sampler = Sampler(rate_hz, on_samples=on_samples, on_sources=lambda _d: opened.set())
    sampler.start()
    assert opened.wait(30), "sampler did not start"
    return sampler, rows, lock


def test_sampler_cost_and_jitter_at_10hz(monkeypatch, bench):
    monkeypatch.setenv("LABCONSOLE_CPU_TDP_W", "100")  # the estimated source runs too (the child inherits it)
    sampler, rows, lock = _start()
    shares = []
    try:
        sampler.watch(os.getpid())  # worker metrics too, as during a run
        time.sleep(1.0)  # past spawn and imports
        c0, t0 = _cpu_seconds(sampler.pid), time.monotonic()
        for _ in range(int(WATCH_S / WINDOW_S)):
            time.sleep(WINDOW_S)
            c1, t1 = _cpu_seconds(sampler.pid), time.monotonic()
            shares.append(100 * (c1 - c0) / (t1 - t0))
            c0, t0 = c1, t1
        with lock:
            stamps = sorted({r[0] for r in rows if r[2] == "cpu.util"})
            n_rows = len(rows)
    finally:
        sampler.stop()
    period_ns = 1e9 / RATE_HZ
    gaps = np.diff(np.asarray(stamps, dtype=np.int64)).astype(np.float64)
    gaps = gaps[10:]  # the start-up ticks (imports still settling) are not steady state
    jitter = 100 * np.abs(gaps - period_ns) / period_ns
    p50, p99, worst = np.percentile(jitter, 50), np.percentile(jitter, 99), jitter.max()
    sources = {d["name"]: d["available"] for d in sampler.sources}
    share, share_interval = median_with_interval(shares)
    print(f"\n[benchmark] sampler at {RATE_HZ:g} Hz over {WATCH_S:g} s: {n_rows / (WATCH_S + 1):.0f} rows/s; sources "
          f"available: {sources}; jitter p50 {p50:.2f}%, p99 {p99:.2f}%, max {worst:.2f}% of the "
          f"{period_ns / 1e6:.0f} ms period over {gaps.size} intervals")
    bench.record(judge(f"sampler CPU at {RATE_HZ:g} Hz", share, share_interval, COST_GOAL, samples=len(shares),
                       window_s=WINDOW_S))
    bench.record(judge(f"sampler interval jitter p99 at {RATE_HZ:g} Hz", float(p99),
                       quantile_interval(jitter.tolist(), 0.99), JITTER_GOAL, samples=int(gaps.size),
                       p50=float(p50), max=float(worst)))


def _workload_round(a: np.ndarray, b: np.ndarray, iterations: int) -> float:
    """Median latency (ms) of one iteration = 200 small matmuls (48×48: below OpenBLAS's threading threshold,
    so one core, like a single-stream inference thread)."""
    lat = np.empty(iterations, dtype=np.int64)
    clock = time.perf_counter_ns
    for i in range(iterations):
        t = clock()
        for _ in range(200):
            a @ b
        lat[i] = clock() - t
    return float(np.median(lat)) / 1e6


def test_sampler_does_not_disturb_a_measured_workload(bench):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((48, 48)), rng.standard_normal((48, 48))
    _workload_round(a, b, 200)  # warm-up
    sampler, _rows, _lock = _start()
    pid = sampler.pid
    off, on = [], []
    try:
        sampler.watch(os.getpid())
        time.sleep(1.0)
        # Off = the sampler process stopped (SIGSTOP), on = running: no spawn cost inside the comparison, and
        # on/off alternate (ABBA order) so drift in the machine's load hits both alike.
        for k in range(EFFECT_PAIRS):
            order = ("off", "on") if k % 2 == 0 else ("on", "off")
            for state in order:
                os.kill(pid, signal.SIGSTOP if state == "off" else signal.SIGCONT)
                time.sleep(0.05)
                (off if state == "off" else on).append(_workload_round(a, b, 250))
        os.kill(pid, signal.SIGCONT)
    finally:
        os.kill(pid, signal.SIGCONT)
        sampler.stop()
    ratio, interval = median_with_interval(paired_ratios(on, off))
    spread = statistics.median(abs(o - statistics.median(off)) for o in off) / statistics.median(off)
    print(f"\n[benchmark] workload median latency, sampler off {statistics.median(off):.4f} ms vs on "
          f"{statistics.median(on):.4f} ms over {EFFECT_PAIRS} paired rounds (round-to-round spread {spread:.2%})")
    bench.record(judge("sampler on/off: workload median latency", ratio, interval, EFFECT_GOAL, samples=EFFECT_PAIRS,
                       off_ms=statistics.median(off), on_ms=statistics.median(on)))


def test_gpu_source_cost_per_sample(bench):
    """On a GPU machine: CPU time of one NVML source poll (all GPUs, fast group; slow group once a second).
    Skipped where there is no NVIDIA driver. Goal: the whole sampler under 1 % of a core at 10 Hz, so one
    poll well under ~0.5 ms. The figure is the median of 20 batches of 10 polls, in % of a core at 10 Hz."""
    import pytest

    from console.telemetry.nvml_source import NvmlSource

    src = NvmlSource()
    src.open()
    shares = []
    try:
        if not src.available()[0]:
            pytest.skip(f"NVML: {src.available()[1]}")
        t = time.perf_counter_ns()
        for batch in range(20):
            c0 = time.process_time()
            for k in range(10):
                src.sample(t + (batch * 10 + k) * 100_000_000)
            per_poll_s = (time.process_time() - c0) / 10
            shares.append(100 * per_poll_s * RATE_HZ)
    finally:
        src.close()
    share, interval = median_with_interval(shares)
    print(f"\n[benchmark] NVML poll: {share * 1000 / RATE_HZ / 100:.3f} ms CPU per 10 Hz tick for "
          f"{len(src.devices)} GPU(s)")
    bench.record(judge(f"NVML poll CPU at {RATE_HZ:g} Hz", share, interval, COST_GOAL, samples=len(shares),
                       gpus=len(src.devices)))
