"""A run dispatched through Ray measures what the same run measures locally (the cluster extra).

Pairs of the same run (catalog MLP, one thread, ROUND_S of measurement) go once through a local worker and once
through a Ray node of a one-machine cluster (ray.cluster_utils.Cluster: a head that takes no runs and one node),
both through RunSession with telemetry on, who goes first alternating (ABBA blocks, bench_stats.balanced_ratios).
The figure is the median of the per-block ratios of the measured medians (dispatched ÷ local) with its
distribution-free 95% interval, held against 1 ± 1%: the dispatched worker is the same spawn-context worker, on
the node, and Ray only forwards its batches, so the measured latency must not move. Reported beside it: time
to first iteration (start() to the first measured iteration, both sides) and the node → console event-stream
latency p50/p99 (one machine: one monotonic clock, so arrival − sent is exact).
"""

from __future__ import annotations

import functools
import os
import secrets
import statistics
import tempfile
import time

import pytest

os.environ.setdefault("RAY_AUTH_MODE", "token")
os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(16))
pytest.importorskip("ray", reason="the cluster extra is not installed (pip install 'lab-console[cluster]')")

from bench_stats import balanced_ratios, median_with_interval  # noqa: E402
from bench_verdict import Goal, judge  # noqa: E402

from console.cluster.dispatch import RUN_RESOURCE, RemoteRun  # noqa: E402
from console.history import HistoryWriter  # noqa: E402
from console.run.session import RunSession  # noqa: E402
from engines.spec import RunSpec  # noqa: E402

PAIRS = int(os.environ.get("CLUSTER_PAIRS", 16))  # even: 8 ABBA blocks (6 is the fewest that bound a median)
ROUND_S = float(os.environ.get("CLUSTER_ROUND_S", 1.0))
GOAL = Goal.within(1.0, 0.01)


def _one(spec, writer, remote=None):
    firsts: list[int] = []
    runs: list = []

    def listen(event):
        if event["type"] == "latencies" and not firsts:
            firsts.append(int(event["t_ns"][0]))

    session = RunSession(spec, writer, listener=listen, remote=remote)
    started = time.perf_counter_ns()
    session.start()
    runs.append(session._worker)
    record = session.wait(300)
    assert record["status"] == "completed", record["message"]
    first_s = (firsts[0] - started) / 1e9 if firsts else float("nan")
    delays = list(getattr(session._worker, "stream_delays_ns", []))
    return record["summary"]["latency_ms"]["p50"], first_s, delays


def test_a_dispatched_run_measures_what_a_local_run_measures(bench, tmp_path, monkeypatch):
    from ray.cluster_utils import Cluster

    from console.cluster import connect as connect_module

    ray_temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths live under it
    monkeypatch.setenv("RAY_TMPDIR", ray_temp)  # Ray writes its address file under <RAY_TMPDIR>/ray
    os.makedirs(os.path.join(ray_temp, "ray"), exist_ok=True)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": 80 << 20,
                                                             "include_dashboard": False, "temp_dir": ray_temp})
    cluster.add_node(num_cpus=1, object_store_memory=80 << 20, resources={RUN_RESOURCE: 1},
                     labels={"labconsole/target.cpu": "yes", "labconsole/engine.torch": "yes"})
    cluster.wait_for_nodes()
    writer = HistoryWriter.open(tmp_path / "h.db")
    remote = functools.partial(RemoteRun, address=cluster.address)
    spec = RunSpec(model="mlp", duration_s=ROUND_S, warmup_s=0.2, threads=1)
    local, dispatched, first_local, first_remote, delays = [], [], [], [], []
    try:
        _one(spec, writer, remote)  # warm the node's Ray worker pool and target cache outside the pairs
        for k in range(PAIRS):
            for side in ("local", "remote") if k % 2 == 0 else ("remote", "local"):
                median, first, stream = _one(spec, writer, remote if side == "remote" else None)
                (dispatched if side == "remote" else local).append(median)
                (first_remote if side == "remote" else first_local).append(first)
                delays += stream
    finally:
        writer.close()
        connect_module.disconnect()
        cluster.shutdown()
    ratios = balanced_ratios(dispatched, local)
    ratio, interval = median_with_interval(ratios)
    delays_ms = sorted(d / 1e6 for d in delays)
    p50 = delays_ms[len(delays_ms) // 2]
    p99 = delays_ms[min(len(delays_ms) - 1, int(0.99 * len(delays_ms)))]
    print(f"\n[benchmark] median latency dispatched {statistics.median(dispatched):.4f} ms, local "
          f"{statistics.median(local):.4f} ms over {PAIRS} interleaved pairs of {ROUND_S:g} s; time to first "
          f"iteration dispatched {statistics.median(first_remote):.2f} s, local {statistics.median(first_local):.2f} s;"
          f" event stream node → console p50 {p50:.2f} ms, p99 {p99:.2f} ms ({len(delays_ms)} batches)")
    bench.record(judge("cluster overhead: measured median dispatched through Ray ÷ local", ratio, interval, GOAL,
                       samples=len(ratios), dispatched_ms=statistics.median(dispatched),
                       local_ms=statistics.median(local),
                       first_iteration_s={"dispatched": statistics.median(first_remote),
                                          "local": statistics.median(first_local)},
                       stream_latency_ms={"p50": p50, "p99": p99, "batches": len(delays_ms)}))
