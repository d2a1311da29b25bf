"""Server scenario against MLPerf LoadGen: same model, same target rate, same process, interleaved rounds.

Goal: the console's p50 and p99 within 10% of LoadGen's. Both drive the very same `infer` callable (the
catalog MLP on one thread) with Poisson arrivals at 40% of what one worker can serve (well below saturation,
so both are stable on a shared machine), and both count latency from the *scheduled* arrival to completion.
LoadGen runs its Server scenario with a SUT whose worker thread calls `infer` and reports
QuerySamplesComplete; its percentiles are read from the mlperf_log_summary.txt it writes into tmp_path (and
its per-sample latencies from mlperf_log_trace.json, checked against the summary).

Timer slack: LoadGen's issue loop sleeps until each scheduled time with std::this_thread::sleep_until,
which Linux lets overrun by the thread's timer slack (50 µs by default: a quarter of this model's service
time). The console's server scenario asks for 1 µs while it runs (engines.scenarios._timing.precise_sleep);
LoadGen is started inside the same setting (its issue thread then reports 1 µs, 50 µs outside), so the
comparison is of the harnesses, not of a kernel default.

The machine is shared: a round pair (console, LoadGen, alternating who goes first) counts only when other
processes left a core and a half free during both runs (from /proc/stat less this process's CPU time); busy
pairs are printed but never counted. When fewer than LOADGEN_PAIRS count within the budget, the usable pairs are
judged all the same (their interval is wider, so they decide only a clear pass or miss) and an undecided figure
says how busy the machine was.
The figure is the median of the per-pair ratios (a burst that hits one run of one pair moves one ratio, not the
verdict) with its distribution-free 95% interval; the shared rule (bench_verdict) passes it when the interval
lies within ±10%, fails it only when the whole interval lies outside. The pooled percentiles over every counted
query (LoadGen's from its per-sample trace) are printed too.
"""

import dataclasses
import os
import queue
import re
import statistics
import threading
import time
from typing import Any

import numpy as np
import pytest
from bench_load import cpu_clock, other_percent
from bench_stats import median_with_interval
from bench_verdict import UNDECIDED, Goal, judge, undecided

lg = pytest.importorskip("mlperf_loadgen", reason="mlcommons-loadgen is not installed (pip install "
                                                   "mlcommons-loadgen; it is in the dev extra)")

from engines.backends import torch_backend  # noqa: E402
from engines.scenarios import _timing, server  # noqa: E402
from engines.spec import RunSpec  # noqa: E402

CLEAN_PAIRS = int(os.environ.get("LOADGEN_PAIRS", 21))  # round pairs with a core to spare that the verdict needs
# A round pair counts when other processes left this process a core and a half (at most 25% of a core taken on a
# one-CPU machine). Measured on a shared 2-CPU box with another job using a whole core, the two harnesses'
# per-round p99 ratio ranged from 0.04 to 2.8: both measured the other job's bursts, not themselves.
CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
CLEAN_OTHER_PERCENT = max(25.0, 100.0 * (CPUS - 1.5))
BUDGET_S = float(os.environ.get("LOADGEN_BUDGET_S", 150))  # ~21 pairs take ~90 s on a quiet machine
DURATION_S = float(os.environ.get("LOADGEN_DURATION_S", 1.5))
UTILISATION = float(os.environ.get("LOADGEN_UTILISATION", 0.4))
GOAL = Goal.within(1.0, 0.10)
SUMMARY_KEYS = {"p50": "50.00 percentile latency (ns)", "p99": "99.00 percentile latency (ns)"}


def ours(model, spec: RunSpec) -> dict[str, Any]:
    events = []
    result = server.run(model, spec, events.append, lambda: False)
    latency = np.concatenate([e["latency_ns"] for e in events if e["type"] == "latencies"]).astype(np.float64)
    return {"p50": float(np.percentile(latency, 50)) / 1e6, "p99": float(np.percentile(latency, 99)) / 1e6,
            "latency_ns": latency, "achieved_qps": result.get("achieved_qps")}


def loadgen(model, qps: float, outdir: str) -> dict[str, Any]:
    pending: queue.SimpleQueue = queue.SimpleQueue()
    init_thread = _timing.thread_initializer()

    def serve():
        init_thread()
        while True:
            sample_id = pending.get()
            if sample_id is None:
                return
            model.infer()
            lg.QuerySamplesComplete([lg.QuerySampleResponse(sample_id, 0, 0)])

    def issue_queries(samples):
        for sample in samples:
            pending.put(sample.id)

    worker = threading.Thread(target=serve, name="loadgen-sut", daemon=True)
    worker.start()
    settings = lg.TestSettings()
    settings.scenario = lg.TestScenario.Server
    settings.mode = lg.TestMode.PerformanceOnly
    settings.server_target_qps = qps
    settings.server_target_latency_ns = 1_000_000_000  # a bound only decides VALID; it does not change timing
    settings.min_duration_ms = int(DURATION_S * 1000)
    settings.max_duration_ms = int(DURATION_S * 1000 * 3)
    settings.min_query_count = 100
    settings.performance_sample_count_override = 1024
    log = lg.LogSettings()
    log.log_output.outdir = outdir
    log.log_output.copy_summary_to_stdout = False
    log.enable_trace = True  # per-sample latencies (complete_ns: scheduled arrival → QuerySamplesComplete)
    sut = lg.ConstructSUT(issue_queries, lambda: None)
    qsl = lg.ConstructQSL(1024, 1024, lambda indices: None, lambda indices: None)
    try:
        lg.StartTestWithLogSettings(sut, qsl, settings, log)
    finally:
        pending.put(None)
        worker.join()
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut)
    text = open(os.path.join(outdir, "mlperf_log_summary.txt")).read()
    found = {}
    for key, label in SUMMARY_KEYS.items():
        match = re.search(re.escape(label) + r"\s*:\s*(\d+)", text)
        assert match, f"LoadGen's summary has no {label!r}:\n{text}"
        found[key] = int(match.group(1)) / 1e6
    completed = re.search(r"Completed samples per second\s*:\s*([\d.]+)", text)
    found["achieved_qps"] = float(completed.group(1)) if completed else None
    with open(os.path.join(outdir, "mlperf_log_trace.json")) as handle:
        samples = [int(n) for n in re.findall(r'"complete_ns":(\d+)', handle.read())]
    found["latency_ns"] = np.asarray(samples, dtype=np.float64)
    # The trace is LoadGen's own record of the same samples: the summary's p50/p99 (LoadGen's own percentile rule)
    # must be one of the trace's values near that rank, or the parsing is wrong. Ranks, not a ratio: with ~600
    # samples a p99 sits among the top six, and two percentile rules 20% apart there are both right.
    assert samples, "LoadGen's trace has no samples"
    ordered = np.sort(found["latency_ns"]) / 1e6
    for key, q in (("p50", 50), ("p99", 99)):
        rank = int(q / 100 * (ordered.size - 1))
        low, high = ordered[max(0, rank - 3)], ordered[min(ordered.size - 1, rank + 3)]
        assert low * 0.999 <= found[key] <= high * 1.001, (key, found[key], low, high, ordered.size)
    return found


class CpuWatch:
    """How much CPU *other* processes used while a block ran (bench_load: /proc/stat less this process's own)."""

    def __init__(self):
        self.other_percent: float | None = None

    def __enter__(self):
        self._start = cpu_clock()
        return self

    def __exit__(self, *exc):
        end = cpu_clock()
        if self._start and end:
            self.other_percent = other_percent(self._start, end)
        return False


def test_server_scenario_matches_mlperf_loadgen(tmp_path, bench):
    base = RunSpec(model="mlp", threads=1, scenario="server", warmup_s=0.5, duration_s=DURATION_S)
    model = torch_backend.load(base)
    for _ in range(2000):  # warm-up, and the service time that sets the rate
        model.infer()
    service = []
    for _ in range(2000):
        start = time.perf_counter_ns()
        model.infer()
        service.append(time.perf_counter_ns() - start)
    service_ms = statistics.median(service) / 1e6
    qps = round(UTILISATION / (service_ms / 1e3))
    spec = RunSpec.from_dict({**base.to_dict(), "scenario_options": {"qps": qps}}).validate()
    pairs, clean = [], []
    started = time.perf_counter()
    while len(clean) < CLEAN_PAIRS and time.perf_counter() - started < BUDGET_S:
        pair = {}
        order = ("console", "loadgen") if len(pairs) % 2 == 0 else ("loadgen", "console")
        for who in order:  # alternate who goes first: drift favours neither
            with CpuWatch() as watch:
                if who == "console":
                    pair[who] = ours(model, spec)
                else:
                    outdir = tmp_path / f"loadgen-{len(pairs)}"
                    outdir.mkdir()
                    with _timing.precise_sleep():
                        pair[who] = loadgen(model, qps, str(outdir))
            pair[who]["other_cpu_percent"] = watch.other_percent
        pairs.append(pair)
        busiest = max((pair[w]["other_cpu_percent"] or 0) for w in pair)
        print(f"[benchmark] round {len(pairs)}: console p50 {pair['console']['p50']:.4f} p99 "
              f"{pair['console']['p99']:.4f} ms | LoadGen p50 {pair['loadgen']['p50']:.4f} p99 "
              f"{pair['loadgen']['p99']:.4f} ms | other processes {busiest:.0f}% of a core"
              f"{'' if busiest <= CLEAN_OTHER_PERCENT else ' (too busy: not counted)'}", flush=True)
        if busiest <= CLEAN_OTHER_PERCENT:
            clean.append(pair)
    model.close()
    busy = None if len(clean) >= CLEAN_PAIRS else (
        f"the machine was busy: other processes used more than {CLEAN_OTHER_PERCENT:.0f}% of a core ({CPUS} CPUs) "
        f"in {len(pairs) - len(clean)} of {len(pairs)} round pairs within {BUDGET_S:.0f} s ({len(clean)} usable, "
        f"{CLEAN_PAIRS} wanted)")
    if not clean:
        for key in SUMMARY_KEYS:
            bench.record(undecided(f"server vs LoadGen: console/LoadGen {key}", GOAL,
                                   f"{busy}; rerun when the machine is quieter", samples=0))
        return
    pooled = {who: np.concatenate([p[who]["latency_ns"] for p in clean]) / 1e6 for who in ("console", "loadgen")}
    for key, q in (("p50", 50), ("p99", 99)):
        per_round = sorted(p["console"][key] / p["loadgen"][key] for p in clean)
        # paired: each pair ran back to back on the same machine state
        ratio, interval = median_with_interval(per_round)
        a, b = (float(np.percentile(pooled[who], q)) for who in ("console", "loadgen"))
        print(f"[benchmark] server @ {qps} q/s (service p50 {service_ms:.3f} ms, {UTILISATION:.0%} load), {key}: "
              f"median of {len(clean)} paired ratios console/LoadGen {ratio:.3f} (rounds "
              f"{per_round[0]:.2f}–{per_round[-1]:.2f}); pooled ({pooled['console'].size} vs "
              f"{pooled['loadgen'].size} queries) console {a:.4f} ms, LoadGen {b:.4f} ms, ratio {a / b:.3f}")
        result = judge(f"server vs LoadGen: console/LoadGen {key}", ratio, interval, GOAL, samples=len(clean),
                       qps=qps, pooled_console_ms=a, pooled_loadgen_ms=b, ratio_range=[per_round[0], per_round[-1]])
        if busy and result.verdict == UNDECIDED:  # the usable pairs still decide when they can; say why not
            result = dataclasses.replace(result, reason=f"{busy}; {result.reason}")
        bench.record(result)
    print(f"[benchmark] achieved rate: console {[round(p['console']['achieved_qps'] or 0) for p in clean]}, LoadGen "
          f"{[round(p['loadgen']['achieved_qps'] or 0) for p in clean]} (target {qps})")
