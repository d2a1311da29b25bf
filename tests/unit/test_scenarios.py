"""Scenario helpers without a model: the stability rule, warm-up on fake models, the recorder, spec and CLI."""

import threading
import time

import numpy as np
import pytest

from console.analysis.validity import warmup_stable as console_warmup_stable
from console.cli import main
from engines import protocol, scenarios
from engines.backends.base import LoadedModel
from engines.scenarios import _timing, multi_stream, offline, server
from engines.scenarios.single_stream import SingleStreamOptions
from engines.spec import RunSpec, SpecError


# ---- the stability rule: the engines' twin agrees with the console's
@pytest.mark.parametrize("seed", range(20))
def test_warmup_stable_matches_the_console_rule(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(0, 200))
    values = (1.0 + rng.normal(0, 0.08, size) + np.linspace(0, rng.uniform(0, 0.6), size)).tolist()
    for window in (None, 5, 20):
        for tolerance in (0.05, 0.1, 0.2):
            assert _timing.warmup_stable(values, 3, tolerance, window) == \
                console_warmup_stable(values, 3, tolerance, window), (size, window, tolerance)


def test_warmup_stable_edges():
    assert _timing.warmup_stable([1.0, 1.05, 1.09]) is True
    assert _timing.warmup_stable([1.0, 1.05, 1.11]) is False
    assert _timing.warmup_stable([1.0, 1.0]) is False  # fewer than three windows
    assert _timing.warmup_stable([0.0, 0.0, 0.0]) is False  # zero latencies are not a measurement
    with pytest.raises(ValueError, match="windows must be ≥ 2"):
        _timing.warmup_stable([1.0] * 9, windows=1)


def test_percentile_matches_numpy():
    rng = np.random.default_rng(3)
    values = rng.exponential(1.0, 501).tolist()
    for q in (0, 50, 90, 99, 100):
        assert _timing.percentile(values, q) == pytest.approx(float(np.percentile(values, q)))
    assert _timing.percentile([], 50) is None


# ---- warm-up on fake models
def sleeper(latency_s):
    """A model whose call takes `latency_s(elapsed)` seconds (a sleep: no CPU taken from other tests)."""
    start = time.perf_counter()

    def infer():
        time.sleep(latency_s(time.perf_counter() - start))

    return LoadedModel(infer=infer, load_s=0.0, params=0, model_bytes=0)


def until_stable(cap_s):
    return RunSpec(scenario="single-stream", warmup_s=0.0,
                   scenario_options=dict(warmup_until_stable=True, warmup_cap_s=cap_s))


class FakeClock:
    """A model on a clock of its own: each call advances time by the latency the model has at that moment, so
    the warm-up rules are tested exactly, whatever else the machine is doing."""

    def __init__(self, latency_s):
        self.ns, self.latency_s = 0, latency_s

    def __call__(self) -> int:
        return self.ns

    def infer(self) -> None:
        self.ns += round(self.latency_s(self.ns / 1e9) * 1e9)


def test_warmup_until_stable_stops_early_on_a_steady_model():
    events = []
    steady = FakeClock(lambda t: 0.002)
    outcome = _timing.warm_up(steady.infer, until_stable(3.0), events.append, lambda: False, clock=steady)
    assert outcome.stabilised is True
    assert 0.3 <= outcome.elapsed_s < 0.35  # three 100 ms windows, then it stops (the cap is 3 s)
    assert outcome.result_fields()["warmup_stabilised"] is True
    assert events[0]["type"] == "phase" and events[0]["phase"] == "warmup"


def test_warmup_until_stable_hits_the_cap_on_a_drifting_model():
    drifting = FakeClock(lambda t: 0.001 * (1 + 4 * t))  # +40% every 100 ms window: never within 10%
    outcome = _timing.warm_up(drifting.infer, until_stable(0.6), lambda e: None, lambda: False, clock=drifting)
    assert outcome.stabilised is False
    assert 0.6 <= outcome.elapsed_s < 0.61
    fields = outcome.result_fields()
    assert fields["warmup_stabilised"] is False and fields["warmup_cap_s"] == 0.6
    medians = fields["warmup_window_medians_ms"]
    assert len(medians) == 3 and medians[-1] > 1.1 * medians[0]


def test_fixed_warmup_adds_no_result_fields_and_is_cancellable():
    spec = RunSpec(warmup_s=60.0)
    calls = []
    outcome = _timing.warm_up(lambda: calls.append(1), spec, lambda e: None, lambda: len(calls) >= 5)
    assert outcome.iterations == 5 and outcome.result_fields() == {} and outcome.stabilised is None


def test_single_stream_reports_an_until_stable_warmup():
    events = []
    spec = until_stable(2.0)
    spec.iterations = 3
    result = scenarios.module("single-stream").run(sleeper(lambda t: 0.002), spec, events.append, lambda: False)
    assert result["warmup_stabilised"] is True and result["iterations"] == 3


# ---- scenarios on fake models: exact logic without a real model's noise
def test_server_latency_counts_queueing_behind_a_slow_model():
    model = sleeper(lambda t: 0.010)  # 10 ms a query, so 100/s at most; ask for 400/s
    spec = RunSpec(scenario="server", warmup_s=0.0, duration_s=0.3, scenario_options=dict(qps=400))
    events = []
    result = server.run(model, spec, events.append, lambda: False)
    assert result["queue_depth_max"] >= 10 and result["latency_ms_p50"] > 3 * result["service_ms_p50"]
    assert result["achieved_qps"] < 200


def test_server_issue_is_cancellable_and_the_worker_error_surfaces():
    def broken():
        raise RuntimeError("kernel exploded")

    model = LoadedModel(infer=broken, load_s=0, params=0, model_bytes=0)
    with pytest.raises(RuntimeError, match="kernel exploded"):
        server._serve(model.infer, 100, 5.0, None, False, lambda: False)
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    started = time.perf_counter()
    served = server._serve(sleeper(lambda t: 0.001).infer, 100, 5.0, None, False, stop.is_set)
    assert time.perf_counter() - started < 2.0 and served.issued < 100


def test_offline_error_in_a_thread_is_raised():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) > 3:
            raise ValueError("out of memory, pretend")

    spec = RunSpec(scenario="offline", warmup_s=0.0, duration_s=5.0, scenario_options=dict(concurrency=2))
    with pytest.raises(ValueError, match="pretend"):
        offline.run(LoadedModel(infer=flaky, load_s=0, params=0, model_bytes=0), spec, lambda e: None, lambda: False)


def test_multi_stream_max_queries_and_events_are_plain():
    spec = RunSpec(scenario="multi-stream", warmup_s=0.0, duration_s=5.0, batch=1,
                   scenario_options=dict(streams=2, qps=100, max_queries=7))
    events = []
    result = multi_stream.run(sleeper(lambda t: 0.0005), spec, events.append, lambda: False)
    # missed intervals depend on the scheduler (a loaded machine misses some 10-ms ticks): their count is not the point
    assert result["queries"] == 7 and isinstance(result["missed_intervals"], int) and result["missed_intervals"] >= 0
    assert result["measured_s"] < 1.0
    protocol.make("result", **result)  # plain built-in types only


# ---- RunSpec
@pytest.mark.parametrize(("options", "scenario", "field", "words"), [
    ({"qps": 5}, "single-stream", "scenario_options.qps", "applies to the server and multi-stream scenarios"),
    ({"concurrency": 2}, "server", "scenario_options.concurrency", "applies to scenario offline"),
    ({"streams": 4}, "offline", "scenario_options.streams", "applies to scenario multi-stream"),
    ({"find_peak": True}, "offline", "scenario_options.find_peak", "applies to scenario server"),
    ({"warmup_until_stable": True}, "generate", "scenario_options.warmup_until_stable",
     "applies to the single-stream, offline, server, multi-stream and input-pipeline scenarios"),
    ({"qps": -1}, "server", "scenario_options.qps", "> 0"),
    ({"qps": float("nan")}, "server", "scenario_options.qps", "> 0"),
    ({"qps": True}, "server", "scenario_options.qps", "> 0"),
    ({"qps": 1_000_001}, "server", "scenario_options.qps", "≤ 1,000,000"),
    ({"find_peak": True}, "server", "scenario_options.latency_bound_ms", "give the bound"),
    ({"find_peak": "yes", "latency_bound_ms": 5}, "server", "scenario_options.find_peak", "true or false"),
    ({"qps": 5, "latency_bound_ms": -3}, "server", "scenario_options.latency_bound_ms", "> 0"),
    ({"concurrency": 0}, "offline", "scenario_options.concurrency", "from 1 to 256"),
    ({"concurrency": 1000}, "offline", "scenario_options.concurrency", "from 1 to 256"),
    ({"streams": 0}, "multi-stream", "scenario_options.streams", "from 1"),
    ({"samples_per_query": 0}, "offline", "scenario_options.samples_per_query", "from 1"),
    ({"max_queries": 0}, "server", "scenario_options.max_queries", "from 1"),
    ({"warmup_cap_s": 5}, "single-stream", "scenario_options.warmup_cap_s", "turn on warmup_until_stable"),
    ({"warmup_until_stable": True, "warmup_cap_s": 0}, "offline", "scenario_options.warmup_cap_s", "> 0"),
])
def test_scenario_options_are_validated(options, scenario, field, words):
    data = {"scenario": scenario, "scenario_options": options}
    if scenario == "generate":
        data["model"] = "gpt"
    with pytest.raises(SpecError) as info:
        RunSpec.from_dict(data).validate()
    assert info.value.field == field and words in str(info.value)


def test_streams_must_be_served_in_whole_batches_and_load_scenarios_need_inference():
    with pytest.raises(SpecError, match="use a batch of 1, 2, 4, 8") as info:
        RunSpec(scenario="multi-stream", batch=3).validate()
    assert info.value.field == "batch"
    with pytest.raises(SpecError, match="does not divide") as info:
        RunSpec(scenario="multi-stream", batch=4, scenario_options=dict(streams=6)).validate()
    assert info.value.field == "scenario_options.streams"
    with pytest.raises(SpecError, match="measures inference"):
        RunSpec(scenario="server", mode="training", scenario_options=dict(qps=5)).validate()
    with pytest.raises(SpecError, match="concurrency > 1"):
        RunSpec(scenario="offline", mode="training", scenario_options=dict(concurrency=2)).validate()
    RunSpec(scenario="offline", mode="training").validate()  # one thread of training steps is fine
    with pytest.raises(SpecError, match="either iterations or samples_per_query"):
        RunSpec(scenario="offline", iterations=5, scenario_options=dict(samples_per_query=8)).validate()


def test_scenario_options_round_trip_and_reject_unknown_keys():
    spec = RunSpec(scenario="server", scenario_options=dict(qps=12.5, latency_bound_ms=9)).validate()
    assert RunSpec.from_dict(spec.to_dict()) == spec
    assert RunSpec.from_dict({"scenario_options": None}).scenario_options == SingleStreamOptions()
    with pytest.raises(SpecError, match="scenario_options.rate: unknown field"):
        RunSpec.from_dict({"scenario_options": {"rate": 5}})
    assert {"offline", "server", "multi-stream"} <= set(scenarios.names())


# ---- CLI: an error names the option as typed
@pytest.mark.parametrize(("argv", "words"), [
    (["--scenario", "single-stream", "--qps", "5"],
     "--qps: scenario single-stream does not use it; it applies to the server and multi-stream scenarios"),
    (["--scenario", "server", "--qps", "0"], "--qps: must be a number > 0 and ≤ 1,000,000 queries/s"),
    (["--scenario", "server", "--find-peak"], "--latency-bound-ms: find_peak searches"),
    (["--scenario", "offline", "--concurrency", "0"], "--concurrency: must be a whole number from 1"),
    (["--scenario", "multi-stream", "--streams", "0"], "--streams: must be a whole number from 1"),
    (["--scenario", "server", "--qps", "5", "--latency-bound-ms", "-1"], "--latency-bound-ms: must be a number > 0"),
    (["--warmup-cap", "3"], "--warmup-cap: caps a warm-up until stable"),
    (["--scenario", "generate", "--model", "gpt", "--warmup-until-stable"],
     "--warmup-until-stable: scenario generate does not use it"),
    (["--scenario", "server", "--max-queries", "0", "--qps", "3"], "--max-queries: must be a whole number"),
    (["--scenario", "offline", "--samples-per-query", "0"], "--samples-per-query: must be a whole number"),
])
def test_cli_names_the_option(tmp_path, capsys, argv, words):
    code = main(["run", "--db", str(tmp_path / "h.db"), *argv])
    assert code == 2
    assert words in capsys.readouterr().err


def test_warmup_keeps_only_the_latest_latencies(monkeypatch):
    monkeypatch.setattr(_timing, "WARMUP_KEPT", 50)
    calls = []
    outcome = _timing.warm_up(lambda: calls.append(1), RunSpec(warmup_s=60.0), lambda e: None,
                              lambda: len(calls) >= 1000)
    assert outcome.iterations == 1000 and 50 <= len(outcome.latencies_ns) < 100


def test_server_max_queries_and_iterations_end_the_arrivals_early():
    model = sleeper(lambda t: 0.0005)
    capped = RunSpec(scenario="server", warmup_s=0.0, duration_s=5.0,
                     scenario_options=dict(qps=400, max_queries=20))
    started = time.perf_counter()
    result = server.run(model, capped, lambda e: None, lambda: False)
    assert result["issued"] == result["completed"] == 20 and time.perf_counter() - started < 1.5
    assert result["measured_s"] < 1.0
    exact = RunSpec(scenario="server", warmup_s=0.0, iterations=15, scenario_options=dict(qps=400))
    assert server.run(model, exact, lambda e: None, lambda: False)["completed"] == 15
