"""The load scenarios end to end: offline, server (with find-peak), multi-stream and warm-up until stable.

Every run goes through `engines.worker.run_spec` in-process (the code a worker runs, minus the spawn) on the
catalog MLP with one thread, for fractions of a second: the checks are of the scenarios' logic (rates,
queueing, missed intervals, the search), with margins wide enough for a shared two-core machine.
"""

import pytest

from engines import protocol
from engines.worker import run_spec

BASE = {"model": "mlp", "threads": 1, "warmup_s": 0.2, "duration_s": 0.6}


def run(**spec):
    events = []
    run_spec({**BASE, **spec}, events.append)
    for event in events:
        protocol.check(event)
    last = events[-1]
    latencies = [x for e in events if e["type"] == "latencies" for x in e["latency_ns"]]
    arrivals = [x for e in events if e["type"] == "latencies" for x in e["t_ns"]]
    return last, latencies, arrivals, events


def result(**spec):
    last, latencies, arrivals, events = run(**spec)
    assert last["type"] == "result", last.get("message")
    return last, latencies, arrivals, events


# ---- offline
def test_offline_at_batch_8_outruns_single_stream():
    offline, latencies, _, events = result(scenario="offline", batch=8)
    single, _, _, _ = result(scenario="single-stream", batch=1)
    single_rate = single["iterations"] * 1 / single["measured_s"]
    assert offline["samples_per_s"] > 1.2 * single_rate, (offline["samples_per_s"], single_rate)
    assert offline["concurrency"] == 1 and offline["queries"] == len(latencies) == offline["iterations"]
    assert offline["samples"] == 8 * offline["queries"]
    assert [e["phase"] for e in events if e["type"] == "phase"] == ["loading", "warmup", "measuring", "finishing"]


def test_offline_threads_share_an_exact_count_and_samples_per_query_ends_the_run():
    last, latencies, _, _ = result(scenario="offline", batch=2, iterations=40, scenario_options={"concurrency": 2})
    assert last["iterations"] == len(latencies) == 40 and last["concurrency"] == 2
    last, latencies, _, _ = result(scenario="offline", batch=8, scenario_options={"samples_per_query": 100})
    assert len(latencies) == 13  # ceil(100 / 8) calls of batch 8
    assert last["samples_per_query"] == 100 and last["padded_samples"] == 4 and last["query_latency_ms"] > 0


# ---- server
def test_server_at_a_low_rate_achieves_it_and_latency_includes_service():
    last, latencies, arrivals, _ = result(scenario="server", duration_s=1.5, scenario_options={"qps": 200})
    assert abs(last["achieved_qps"] / last["target_qps"] - 1) <= 0.10, last["achieved_qps"]
    assert last["dropped"] == 0 and last["completed"] == len(latencies) == last["iterations"]
    assert last["latency_ms_p50"] >= last["service_ms_p50"] > 0  # latency = queue wait + service, wait ≥ 0
    assert arrivals == sorted(arrivals)  # t_ns are the scheduled arrivals, in order (one FIFO worker)
    assert last["seed"] and last["queue_depth_max"] >= 0


def test_server_above_capacity_shows_queueing():
    last, _, _, _ = result(scenario="server", batch=8, duration_s=0.5, scenario_options={"qps": 20000})
    assert last["achieved_qps"] < 0.5 * last["target_qps"]
    assert last["queue_wait_ms_p50"] > 5 * last["service_ms_p50"]
    assert last["queue_depth_max"] > 10
    assert "mostly queueing" in last["note"]


def test_find_peak_finds_a_rate_under_the_bound():
    bound = 20.0
    last, latencies, _, _ = result(scenario="server", duration_s=0.3,
                                   scenario_options={"find_peak": True, "latency_bound_ms": bound})
    peak = last["peak_qps"]
    assert peak > 0 and last["target_qps"] == peak and latencies
    at_peak = [t for t in last["trials"] if t["qps"] == peak]
    assert at_peak and at_peak[0]["ok"] and at_peak[0]["p99_ms"] <= bound
    assert all(t["ok"] is False for t in last["trials"] if t["qps"] > peak * 1.0001)
    assert len(last["trials"]) <= 16


def test_a_bound_no_rate_can_meet_is_a_clear_error_not_a_hang():
    last, _, _, _ = run(scenario="server", duration_s=0.3,
                        scenario_options={"find_peak": True, "latency_bound_ms": 0.001})
    assert last["type"] == "error"
    assert "even 1 query/s" in last["message"] and "> 0.001 ms bound" in last["message"]
    assert "raise --latency-bound-ms or use a smaller model" in last["message"]


# ---- multi-stream
def test_multi_stream_issues_a_query_per_interval():
    last, latencies, arrivals, _ = result(scenario="multi-stream", batch=2, duration_s=0.5,
                                          scenario_options={"streams": 4, "qps": 50})
    assert last["calls_per_query"] == 2 and last["interval_ms"] == pytest.approx(20.0)
    assert last["queries"] + last["missed_intervals"] == 25 and last["queries"] >= 1
    # Queries start on the 20 ms ticks; a tick missed (a busy machine stalls a query past the next one) is
    # counted, never shifted: every gap between starts is whole ticks, and the skipped ticks are all counted.
    gaps = [round((b - a) / 1e6) for a, b in zip(arrivals, arrivals[1:], strict=False)]
    assert all(gap % 20 == 0 and gap >= 20 for gap in gaps), gaps
    assert last["missed_intervals"] >= sum(gap // 20 - 1 for gap in gaps)
    assert last["samples_per_s"] == pytest.approx(last["queries"] * 4 / last["measured_s"])


def test_multi_stream_counts_missed_intervals():
    last, latencies, _, _ = result(scenario="multi-stream", batch=1, duration_s=0.3,
                                   scenario_options={"streams": 64, "qps": 1000})
    assert last["missed_intervals"] > last["queries"]  # 64 calls never fit in 1 ms
    assert last["queries"] + last["missed_intervals"] == 300
    assert last["p99_within_interval"] is False


# ---- warm-up until stable
def test_warmup_until_stable_stops_early_on_a_steady_model():
    last, _, _, _ = result(scenario="single-stream", duration_s=0.3,
                           scenario_options={"warmup_until_stable": True, "warmup_cap_s": 8.0})
    assert last["warmup_until_stable"] is True and last["warmup_stabilised"] is True
    assert 0.25 <= last["warmup_elapsed_s"] < 8.0
    assert len(last["warmup_window_medians_ms"]) == 3


def test_fixed_warmup_leaves_the_single_stream_result_as_it_was():
    last, _, _, _ = result(scenario="single-stream", iterations=5)
    # `hygiene` rides on `result` when the load was quicker than its sample (engines.protocol): not the scenario's
    assert set(last) - {"hygiene"} == {"v", "type", "cancelled", "iterations", "measured_s", "warmup_iterations",
                         "first_inference_ms", "batch"}


# ---- bad input
@pytest.mark.parametrize(("spec", "field", "words"), [
    ({"scenario": "single-stream", "scenario_options": {"qps": 5}}, "scenario_options.qps",
     "scenario single-stream does not use it; it applies to the server and multi-stream scenarios"),
    ({"scenario": "server"}, "scenario_options.qps", "needs a target rate"),
    ({"scenario": "server", "scenario_options": {"qps": 0}}, "scenario_options.qps", "> 0 and ≤ 1,000,000"),
    ({"scenario": "server", "scenario_options": {"qps": 2e6}}, "scenario_options.qps", "≤ 1,000,000"),
    ({"scenario": "server", "scenario_options": {"qps": 5, "latency_bound_ms": 0}},
     "scenario_options.latency_bound_ms", "> 0"),
    ({"scenario": "multi-stream", "scenario_options": {"streams": 0}}, "scenario_options.streams", "from 1"),
    ({"scenario": "offline", "scenario_options": {"concurrency": 0}}, "scenario_options.concurrency", "from 1"),
])
def test_bad_scenario_options_are_spec_errors(spec, field, words):
    last, _, _, _ = run(**spec)
    assert last["type"] == "error" and last["kind"] == "spec"
    assert f"{field}: " in last["message"] and words in last["message"]
