"""The server scenario is judged as LoadGen judges it: latency bound at p99, count and duration, not stability.

The series are synthetic FIFO queues (one server, Poisson arrivals, lognormal service times) built by Lindley's
recursion, so their window-to-window variation is the queueing's own, as in a real server run.
"""

import numpy as np
import pytest

from console.analysis.stats import min_samples_for_percentile
from console.analysis.summary import summarize
from console.analysis.validity import ValidityRules, assess

MS = 1_000_000
SERVICE_MS = 1.0


def poisson_queue(load: float, seed: int, duration_s: float = 4.0, service_ms: float = SERVICE_MS):
    """(latency_ns, scheduled arrival ns, duration_s) of one worker serving Poisson arrivals at `load`."""
    rng = np.random.default_rng(seed)
    rate = load / (service_ms / 1e3)
    gaps = rng.exponential(1.0 / rate, int(rate * duration_s * 1.5) + 100)
    arrivals = np.cumsum(gaps)
    arrivals = arrivals[arrivals < duration_s]
    service = rng.lognormal(np.log(service_ms / 1e3), 0.1, arrivals.size)
    latency = np.empty(arrivals.size)
    free_at = 0.0
    for i, (arrival, took) in enumerate(zip(arrivals, service, strict=True)):
        free_at = max(arrival, free_at) + took
        latency[i] = free_at - arrival
    return latency * 1e9, arrivals * 1e9 + 7e12, duration_s  # any clock origin


def rules_of(result):
    return [reason["rule"] for reason in result["invalid_reasons"]]


SEEDS = range(12)


def test_half_load_poisson_runs_fail_the_old_stability_rule_but_are_valid_servers():
    old_invalid = 0
    for seed in SEEDS:
        latency, t, duration = poisson_queue(0.5, seed)
        assert latency.size > 1500  # enough for p99's 662 and the minimum count
        old = assess(latency, t, duration_s=duration)
        new = assess(latency, t, duration_s=duration, scenario="server", latency_bound_ms=20.0)
        assert new["valid"], (seed, new["invalid_reasons"])
        assert new["stability"]["judged"] is False and old["stability"]["judged"] is True
        bound = new["latency_bound"]
        assert bound["met"] and bound["early_stopping_met"] and bound["percentile"] == "p99"
        assert bound["value_ms"] == pytest.approx(np.percentile(latency, 99) / MS)
        if not old["valid"]:
            assert rules_of(old) == ["stability"]  # nothing else was wrong with the run
            assert any("not judged for the server scenario" in note for note in new["notes"])
            old_invalid += 1
    assert old_invalid >= 3, "the held-out failure mode: queueing alone moves the window medians"


def test_single_stream_and_offline_keep_the_stability_rule():
    latency, t, duration = next(s for s in (poisson_queue(0.5, seed) for seed in SEEDS)
                                 if not assess(s[0], s[1], duration_s=s[2])["valid"])
    for scenario in (None, "single-stream", "offline", "multi-stream"):
        result = assess(latency, t, duration_s=duration, scenario=scenario, latency_bound_ms=20.0)
        assert rules_of(result) == ["stability"] and result["latency_bound"] is None


def test_a_server_run_over_its_bound_stays_invalid():
    latency, t, duration = poisson_queue(0.5, seed=1)
    p99_ms = np.percentile(latency, 99) / MS
    result = assess(latency, t, duration_s=duration, scenario="server", latency_bound_ms=0.8 * p99_ms)
    assert not result["valid"] and rules_of(result) == ["latency_bound"]
    reason = result["invalid_reasons"][0]
    assert "p99" in reason["detail"] and f"{0.8 * p99_ms:g} ms bound" in reason["detail"]
    assert "lower --qps" in reason["fix"] and "--find-peak" in reason["fix"]
    assert not result["latency_bound"]["met"]


def test_overloaded_server_fails_its_bound_not_stability():
    latency, t, duration = poisson_queue(1.3, seed=0)  # arrivals outpace the worker: latency keeps rising
    result = assess(latency, t, duration_s=duration, scenario="server", latency_bound_ms=10 * SERVICE_MS)
    assert "latency_bound" in rules_of(result) and "stability" not in rules_of(result)


def test_a_few_queries_over_the_bound_need_a_longer_run_early_stopping():
    # p99 within the bound, but 8 of 1000 over it: 1000 queries cannot show the true p99 is within it
    latency = np.full(1000, 1.0 * MS)
    latency[::125] = 50 * MS
    t = np.arange(latency.size) * 3e6  # 333/s for 3 s
    result = assess(latency, t, duration_s=3.0, scenario="server", latency_bound_ms=10.0)
    needed = min_samples_for_percentile(99, overlatency=8)
    assert needed > 1000
    assert rules_of(result) == ["early_stopping"]
    assert result["latency_bound"] == {"bound_ms": 10.0, "percentile": "p99", "value_ms": 1.0, "over": 8,
                                       "queries": 1000, "dropped": 0, "required": needed, "met": True,
                                       "early_stopping_met": False}
    assert f"needs {needed} queries" in result["invalid_reasons"][0]["detail"]
    assert f"--iterations {needed}" in result["invalid_reasons"][0]["fix"]
    assert result["required"]["iterations"] == needed
    # the same 8 over the bound among exactly the queries early stopping asks for: valid; one fewer: not
    for n, valid in ((needed, True), (needed - 1, False)):
        run = np.full(n, 1.0 * MS)
        run[:8] = 50 * MS
        judged = assess(run, np.arange(n) * 3e6, scenario="server", latency_bound_ms=10.0)
        assert judged["valid"] is valid and judged["latency_bound"]["early_stopping_met"] is valid


def test_dropped_queries_fail_the_bound():
    latency, t, duration = poisson_queue(0.5, seed=2)
    result = assess(latency, t, duration_s=duration, scenario="server", latency_bound_ms=20.0, dropped=3)
    assert rules_of(result) == ["latency_bound"]
    assert "3 queries were never served" in result["invalid_reasons"][0]["detail"]
    assert result["latency_bound"]["over"] >= 3


def test_without_a_bound_the_server_run_is_judged_on_count_and_duration_and_says_so():
    latency, t, duration = poisson_queue(0.5, seed=0)
    result = assess(latency, t, duration_s=duration, scenario="server")
    assert result["valid"] and result["latency_bound"] is None
    assert any("no latency bound was given" in note for note in result["notes"])
    short = assess(latency[:300], t[:300], duration_s=0.6, scenario="server", latency_bound_ms=20.0)
    assert {"min_duration", "percentile_p99"} <= set(rules_of(short))


def test_summarize_judges_a_server_run_by_the_bound_in_its_result():
    latency, t, duration = poisson_queue(0.5, seed=next(
        s for s in SEEDS if not assess(*poisson_queue(0.5, s)[:2], duration_s=4.0)["valid"]))
    result = {"measured_s": duration, "latency_bound_ms": 20.0, "dropped": 0, "target_qps": 500.0}
    server = summarize(latency, result, None, batch=1, t_ns=t, scenario="server")
    assert server["valid"] and server["validity"]["latency_bound"]["met"]
    assert any("not judged for the server scenario" in note for note in server["notes"])
    assert not summarize(latency, result, None, batch=1, t_ns=t)["valid"]  # no scenario: the old rule
    over = summarize(latency, {**result, "latency_bound_ms": 1.0}, None, batch=1, t_ns=t, scenario="server")
    assert [r["rule"] for r in over["invalid_reasons"]] == ["latency_bound"]


def test_bad_server_settings_are_named():
    with pytest.raises(ValueError, match="server_latency_percentile"):
        ValidityRules(server_latency_percentile=100).validate()
    with pytest.raises(ValueError, match="latency_bound_ms must be a positive"):
        assess(np.full(10, MS), scenario="server", latency_bound_ms=0)
