"""Measure until stable: the engine's window rule with fake latencies and a fake clock (no timing involved).

A run of `duration_s` is 10 windows; past it the loop adds windows until the medians of the last 3 agree within
the tolerance, or the next window would pass the cap. The scenarios are driven by a clock that only moves when
the fake model "runs", so the number of windows a run takes is exact.
"""

import time

import pytest

from engines.options import SpecError
from engines.scenarios import _stability, multi_stream, offline, single_stream
from engines.scenarios._stability import StabilityWindows
from engines.spec import RunSpec

MS = 1_000_000


def _options(**kw):
    return single_stream.SingleStreamOptions(until_stable=True, **kw)


def _feed_window(tracker, index, median_ms, count=50):
    """`count` iterations inside window `index`, all at `median_ms`."""
    start = tracker.begin + index * tracker.width
    step = tracker.width // count
    tracker.add([start + i * step for i in range(count)], [int(median_ms * MS)] * count)


def _run_windows(tracker, medians):
    """Feed window after window and decide at each deadline; returns the windows fed before it stopped."""
    for index, median in enumerate(medians):
        _feed_window(tracker, index, median)
        if (index + 1) * tracker.width + tracker.begin == tracker.deadline and tracker.decide():
            return index + 1
    raise AssertionError("the tracker never stopped")


def test_a_run_that_settles_after_twelve_windows_stops_when_three_agree():
    tracker = StabilityWindows(0, 1.0, _options(max_duration_s=4.0))
    jumpy = [1.0, 1.4] * 6  # 12 windows: any three of them differ by 40%
    taken = _run_windows(tracker, jumpy + [1.0] * 40)
    # windows 12 (1.4), 13, 14 (1.0) still differ by 40%; 13, 14, 15 agree
    assert taken == 15
    fields = tracker.result_fields()["until_stable"]
    assert fields["windows"] == 15 and fields["base_windows"] == 10 and fields["added_windows"] == 5
    assert fields["stable"] is True and fields["ended"] == "stable" and fields["spread"] == 0.0
    assert fields["window_s"] == pytest.approx(0.1) and fields["medians_ms"] == [1.0, 1.0, 1.0]


def test_a_run_stable_within_its_duration_takes_no_extra_window():
    tracker = StabilityWindows(5 * MS, 2.0, _options())
    assert _run_windows(tracker, [1.0] * 30) == 10
    assert tracker.stable and tracker.result_fields()["until_stable"]["added_windows"] == 0


def test_a_run_that_never_settles_ends_at_the_cap_and_says_so():
    tracker = StabilityWindows(0, 1.0, _options(max_duration_s=2.5))
    taken = _run_windows(tracker, [1.0, 1.2] * 40)
    assert taken == 25  # 2.5 s of 0.1-s windows: the 26th would pass the cap
    fields = tracker.result_fields()["until_stable"]
    assert fields["stable"] is False and fields["ended"] == "cap" and fields["cap_s"] == 2.5
    assert fields["spread"] == pytest.approx(0.2)


def test_the_default_cap_is_four_durations():
    tracker = StabilityWindows(0, 0.5, _options())
    assert tracker.cap_s == 2.0
    assert _run_windows(tracker, [1.0, 2.0] * 40) == 40


def test_the_rules_in_force_set_how_many_windows_and_how_close():
    tracker = StabilityWindows(0, 1.0, _options(stable_windows=4, stability_tolerance=0.25,
                                                 windows_per_duration=5))
    assert tracker.width == 200 * MS
    # 1.0 vs 1.2 is within 25%: the first 5 windows already agree over the last 4
    assert _run_windows(tracker, [1.0, 1.2] * 20) == 5



def test_with_the_noise_floors_allowance_a_jittery_run_stops_on_its_typical_spread():
    # a machine whose windows jitter 1.0 / 1.15 / 1.3: the last 3 never agree within 10%, so without an allowance
    # the run went to the cap; with the console's allowance (max(10%, 2 × a 12% floor) = 24%) it stops where
    # the verdict calls it valid: 3 windows in a row typically differ by 15% (most triples are 1.0/1.15 or
    # 1.15/1.3 pairs around the big one)
    pattern = [1.0, 1.15, 1.0, 1.15, 1.3, 1.15] * 20
    plain = StabilityWindows(0, 1.0, _options(max_duration_s=4.0))
    assert _run_windows(plain, pattern) == 40 and plain.ended == "cap"
    aimed = StabilityWindows(0, 1.0, _options(max_duration_s=4.0, stability_allowance=0.24))
    assert _run_windows(aimed, pattern) == 10  # judged at the first deadline: 10 ≥ 2 × 3 windows
    fields = aimed.result_fields()["until_stable"]
    assert fields["stable"] is True and fields["judged"] == "typical" and fields["allowance"] == 0.24
    assert fields["typical_spread"] == pytest.approx(0.15) and fields["spread"] > 0.10  # the last 3: one draw
    assert _stability.typical_spread(aimed.medians_ms, 3) == fields["typical_spread"]


def test_an_allowance_does_not_pass_windows_that_jump_beyond_it():
    tracker = StabilityWindows(0, 1.0, _options(max_duration_s=2.0, stability_allowance=0.24))
    assert _run_windows(tracker, [1.0, 1.5] * 20) == 20  # typical 50% > 24%: the cap, as the verdict: unsteady
    fields = tracker.result_fields()["until_stable"]
    assert fields["ended"] == "cap" and fields["typical_spread"] == pytest.approx(0.5)


def test_the_typical_spread_needs_twice_k_windows():
    tracker = StabilityWindows(0, 1.0, _options(stable_windows=3, windows_per_duration=5, max_duration_s=1.2,
                                                 stability_allowance=0.5))
    assert _run_windows(tracker, [1.0, 1.3] * 10) == 6  # 5 windows < 2 × 3: no typical spread yet; at 6, 30%
    assert tracker.judged == "typical"


def test_the_allowance_is_checked_and_never_below_the_tolerance():
    with pytest.raises(SpecError, match="stability_allowance"):
        _spec(scenario_options={"until_stable": True, "stability_allowance": -1}).validate()
    assert StabilityWindows(0, 1.0, _options(stability_allowance=0.02)).allowance == 0.10


def test_a_call_for_a_closed_window_is_late_not_lost():
    tracker = StabilityWindows(0, 1.0, _options())
    for index in range(10):
        _feed_window(tracker, index, 1.0)
    assert tracker.decide()
    tracker.add([5 * MS], [9 * MS])  # in flight at the deadline: arrives after the decision
    assert tracker.result_fields()["until_stable"]["late_calls"] == 1
    assert tracker.medians_ms[0] == 1.0


def test_an_empty_window_has_no_median_and_is_never_stable():
    tracker = StabilityWindows(0, 1.0, _options(max_duration_s=1.3))
    for index in range(9):
        _feed_window(tracker, index, 1.0)  # window 9 (the last) stalls
    assert not tracker.decide()
    assert tracker.medians_ms[9] is None and tracker.spread is None


# ---- The options, as a spec states them
def _spec(**kw):
    return RunSpec.from_dict({"model": "mlp", **kw})


def test_until_stable_is_refused_with_iterations_and_for_server():
    with pytest.raises(SpecError, match="iterations cannot be extended"):
        _spec(iterations=100, scenario_options={"until_stable": True}).validate()
    with pytest.raises(SpecError, match="scenario server does not use it") as caught:
        _spec(scenario="server", scenario_options={"until_stable": True}).validate()
    assert caught.value.field == "scenario_options.until_stable"
    assert "single-stream, offline and multi-stream" in str(caught.value)


def test_max_duration_needs_until_stable_and_covers_the_duration():
    with pytest.raises(SpecError, match="turn on until_stable"):
        _spec(scenario_options={"max_duration_s": 20.0}).validate()
    with pytest.raises(SpecError, match="shorter than --duration"):
        _spec(duration_s=10.0, scenario_options={"until_stable": True, "max_duration_s": 5.0}).validate()
    with pytest.raises(SpecError, match="samples_per_query"):
        _spec(scenario="offline", scenario_options={"until_stable": True, "samples_per_query": 64}).validate()
    spec = _spec(scenario="multi-stream", scenario_options={"until_stable": True, "max_duration_s": 30.0}).validate()
    assert spec.scenario_options.cap_s(spec.duration_s) == 30.0


def test_a_spec_that_left_it_off_still_changes_scenario():
    """The console's aim fields are None until set, so a single-stream spec still becomes a server spec."""
    spec = _spec(scenario_options={"until_stable": False})
    data = spec.to_dict()
    data["scenario"] = "server"
    data["scenario_options"]["qps"] = 50.0
    assert RunSpec.from_dict(data).validate().scenario == "server"


# ---- The scenarios' loops, on a fake clock
class FakeClock:
    """perf_counter_ns that moves only when the fake model runs (or a sleep passes)."""

    def __init__(self, latency_ms):
        self.now = 1_000 * MS
        self.latency_ms = latency_ms  # window index → latency

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += max(0, int(seconds * 1e9))


class FakeModel:
    def __init__(self, clock, begin_of, width_ns):
        self.clock, self.begin_of, self.width = clock, begin_of, width_ns

    def infer(self):
        begin = self.begin_of()
        index = 0 if begin is None else max(0, (self.clock.now - begin) // self.width)
        self.clock.now += int(self.clock.latency_ms(index) * MS)


def _measuring_begin(events):
    return lambda: next((e["t_ns"] for e in events if e.get("phase") == "measuring"), None)


def _drive(monkeypatch, module, spec, latency_ms, width_ns):
    clock = FakeClock(latency_ms)
    monkeypatch.setattr(time, "perf_counter_ns", clock)
    monkeypatch.setattr(time, "sleep", clock.sleep)
    events = []
    model = FakeModel(clock, _measuring_begin(events), width_ns)
    result = module.run(model, spec, events.append, lambda: False)
    return result, events


def test_single_stream_measures_past_its_duration_until_stable(monkeypatch):
    spec = _spec(duration_s=1.0, warmup_s=0.0, scenario_options={"until_stable": True, "max_duration_s": 3.0})
    # 100-ms windows; latency alternates 1 ms / 1.5 ms between windows until window 15, then stays at 1 ms
    result, events = _drive(monkeypatch, single_stream, spec,
                            lambda w: 1.0 if w >= 15 or w % 2 == 0 else 1.5, 100 * MS)
    block = result["until_stable"]
    assert block["stable"] and block["ended"] == "stable"
    assert block["windows"] == 17  # windows 15, 16, 17 (1-based) at 1 ms
    assert result["measured_s"] == pytest.approx(1.7, abs=0.01)
    shipped = sum(len(e["latency_ns"]) for e in events if e["type"] == "latencies")
    assert shipped == result["iterations"]
    assert any("stabilising" in e for e in events if e["type"] == "progress")


def test_single_stream_that_never_settles_stops_at_the_cap(monkeypatch):
    spec = _spec(duration_s=1.0, warmup_s=0.0, scenario_options={"until_stable": True, "max_duration_s": 2.0})
    result, _ = _drive(monkeypatch, single_stream, spec, lambda w: 1.0 if w % 2 == 0 else 1.5, 100 * MS)
    block = result["until_stable"]
    assert not block["stable"] and block["ended"] == "cap" and block["windows"] == 20
    assert block["spread"] == pytest.approx(0.5)
    assert result["measured_s"] == pytest.approx(2.0, abs=0.01)


def test_a_fixed_run_is_unchanged(monkeypatch):
    spec = _spec(duration_s=1.0, warmup_s=0.0)
    result, _ = _drive(monkeypatch, single_stream, spec, lambda w: 1.0 if w % 2 == 0 else 1.5, 100 * MS)
    assert "until_stable" not in result and result["measured_s"] == pytest.approx(1.0, abs=0.01)


def test_multi_stream_adds_windows_of_ticks_until_stable(monkeypatch):
    spec = _spec(scenario="multi-stream", duration_s=1.0, warmup_s=0.0, batch=8,
                 scenario_options={"until_stable": True, "max_duration_s": 3.0, "qps": 100.0})
    # A query every 10 ms, 10 a window; its latency is the call's: 2 ms, or 3 ms in the odd windows of the first
    # 12; windows 13, 14 and 15 agree
    result, _ = _drive(monkeypatch, multi_stream, spec, lambda w: 2.0 if w >= 12 or w % 2 == 0 else 3.0, 100 * MS)
    block = result["until_stable"]
    assert block["stable"] and block["windows"] == 15
    assert result["queries"] == 150 and result["missed_intervals"] == 0
    assert result["measured_s"] == pytest.approx(1.5, abs=0.01)


def test_offline_takes_the_options_and_reports_the_block(monkeypatch):
    """Offline decides on its own thread at each deadline; with a fake clock the calls outrun the decisions,
    so this checks only what is deterministic: the block is there, whole windows, within the cap."""
    spec = _spec(scenario="offline", duration_s=0.2, warmup_s=0.0,
                 scenario_options={"until_stable": True, "max_duration_s": 0.4})
    result, _ = _drive(monkeypatch, offline, spec, lambda w: 1.0, 20 * MS)
    block = result["until_stable"]
    assert 10 <= block["windows"] <= 20 and block["cap_s"] == 0.4
    assert result["measured_s"] <= 0.4 + 0.002


def test_the_tracker_is_none_for_a_fixed_run():
    assert _stability.tracker(_spec(), 0) is None
    assert _stability.tracker(_spec(scenario_options={"until_stable": True}), 0) is not None
