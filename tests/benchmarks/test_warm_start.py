"""Warm start: Run → the first measured iteration, with a warm worker (console.run.worker_pool, as the window has)
against a cold one (spawned for the run, as the CLI does), in the same run.

Each round is one cold and one warm run of the catalog MLP through RunSession (the object the window's Run button
drives), warm-up 0 so the first iteration is a measured one; who goes first alternates. The time is the first
iteration's start (the worker's clock, the same monotonic clock as the console's on Linux) minus the moment
RunSession.start() was called. Before a warm round the spare is made and waited for until its engine is imported,
as it is between runs in the window (the pool makes it when the previous run ends). Goal: the warm median under
0.3 s (issue 14), judged by the shared rule with its distribution-free interval; the cold median is reported.
"""

from __future__ import annotations

import os
import statistics
import time

from bench_stats import median_with_interval
from bench_verdict import Goal, judge

from console.history import HistoryWriter
from console.run.session import RunSession
from console.run.worker_pool import WorkerPool
from engines.spec import RunSpec

ROUNDS = int(os.environ.get("WARM_ROUNDS", 11))  # 11 bound a median between the 2nd and 10th values at 95%
GOAL = Goal.at_most(300, "ms")


def first_iteration_ms(writer, pool) -> tuple[float, str]:
    spec = RunSpec(model="mlp", engine="torch", duration_s=0.2, warmup_s=0.0)
    firsts: list[int] = []

    def listen(event):
        if event["type"] == "latencies" and not firsts:
            firsts.append(int(event["t_ns"][0]))

    session = RunSession(spec, writer, listener=listen, telemetry_hz=None, pool=pool)
    session.start()
    record = session.wait(180)
    assert record["status"] == "completed", record["message"]
    return (firsts[0] - session.t0_ns) / 1e6, record["environment"]["worker_start"]


def test_warm_worker_start(tmp_path, bench):
    writer = HistoryWriter.open(tmp_path / "h.db")
    pool = WorkerPool()
    cold, warm, kinds = [], [], []
    try:
        first_iteration_ms(writer, None)  # the catalog's first build and the OS file cache, outside the rounds
        for k in range(ROUNDS):
            for side in ("cold", "warm") if k % 2 == 0 else ("warm", "cold"):
                if side == "warm":
                    pool.prepare("torch")
                    deadline = time.monotonic() + 120
                    while pool.states().get("torch") != "warm" and time.monotonic() < deadline:
                        time.sleep(0.02)
                    ms, kind = first_iteration_ms(writer, pool)
                    warm.append(ms)
                    kinds.append(kind)
                    pool.close()  # the spare made after this run must not import beside the next cold one
                    pool = WorkerPool()
                else:
                    cold.append(first_iteration_ms(writer, None)[0])
    finally:
        pool.close()
        writer.close()
    assert set(kinds) == {"warm"}, kinds
    median, interval = median_with_interval(warm)
    print(f"\n[benchmark] Run → first measured iteration: warm worker {median:.0f} ms, cold worker "
          f"{statistics.median(cold):.0f} ms (median of {ROUNDS} each; warm {min(warm):.0f}–{max(warm):.0f} ms)")
    bench.record(judge("warm start: Run → first measured iteration", median, interval, GOAL, samples=ROUNDS,
                       cold_median_ms=statistics.median(cold), warm_ms=warm, cold_ms=cold))
