import numpy as np
import pytest

from console.analysis.validity import ValidityRules, assess, warmup_stable

MS = 1_000_000


def back_to_back(latency_ns):
    latency_ns = np.asarray(latency_ns, dtype=np.float64)
    return latency_ns, np.concatenate([[0.0], np.cumsum(latency_ns)[:-1]]) + 5e12  # any clock origin


def steady(n, median_ms=1.0, seed=0):
    return np.random.default_rng(seed).lognormal(np.log(median_ms * MS), 0.05, n)


def rules_of(result):
    return [reason["rule"] for reason in result["invalid_reasons"]]


def test_a_long_steady_run_is_valid_and_stable():
    latency, t = back_to_back(steady(5000))  # 5000 × 1 ms = 5 s
    result = assess(latency, t)
    assert result["valid"] and result["invalid_reasons"] == []
    assert result["stable"] and result["stability"]["spread"] < 0.05
    assert len(result["windows"]) == 10 and sum(w["count"] for w in result["windows"]) == 5000
    assert result["windows"][0]["start_s"] == 0.0
    assert result["windows"][-1]["end_s"] == pytest.approx(5.0, rel=0.01)
    assert result["percentiles"]["p99"] == {"required": 662, "have": 5000, "sufficient": True}
    assert result["rate_per_s"] == pytest.approx(1000, rel=0.01)
    assert result["rules"]["stability_tolerance"] == 0.1


def test_too_few_samples_for_p99_says_how_long_to_run():
    # 400 iterations at 55/s: p90 (64) is backed, p99 (662) is not.
    latency, t = back_to_back(np.full(400, 1e9 / 55))
    result = assess(latency, t)
    assert not result["valid"]
    assert rules_of(result) == ["percentile_p99"]
    assert result["percentiles"]["p90"]["sufficient"] and not result["percentiles"]["p99"]["sufficient"]
    reason = result["invalid_reasons"][0]
    assert "662" in reason["detail"] and "400" in reason["detail"]
    # 662 / 55 = 12.0 s, plus a 10% margin → 14 s
    assert reason["fix"] == ("raise --duration to at least 14 s (about 662 iterations at the observed 55/s), "
                             "or set --iterations 662")
    assert result["required"] == {"iterations": 662, "duration_s": 14.0}


def test_too_short_a_run_fails_the_minimum_duration():
    latency, t = back_to_back(steady(1000, median_ms=1.0))  # 1 s, plenty of samples
    result = assess(latency, t)
    assert rules_of(result) == ["min_duration"]
    reason = result["invalid_reasons"][0]
    assert "1.00 s" in reason["detail"]
    assert reason["fix"].startswith("raise --duration to at least 2 s")
    assert "--iterations 20" in reason["fix"]  # 2 s at about 1000/s


def test_measured_duration_from_the_worker_wins_over_the_span():
    latency, t = back_to_back(steady(3000))
    assert assess(latency, t, duration_s=1.5)["invalid_reasons"][0]["rule"] == "min_duration"


def test_too_few_iterations_fails_the_minimum_count():
    rules = ValidityRules(percentiles=(50,), min_window_count=5)
    latency, t = back_to_back(steady(60, median_ms=50.0))  # 3 s, 60 iterations
    result = assess(latency, t, rules)
    assert rules_of(result) == ["min_count"]
    assert "--iterations 100" in result["invalid_reasons"][0]["fix"]
    assert "at the observed 20/s" in result["invalid_reasons"][0]["fix"]


def test_a_drifting_run_is_unstable_and_says_why():
    rising = np.linspace(1.0, 4.0, 5000) * MS  # thermal-style drift: the last windows ~12% apart
    result = assess(*back_to_back(rising))
    assert not result["stable"] and not result["valid"]
    assert rules_of(result) == ["drift"]  # a steady rise over the run: a drift, not jitter (console.analysis.drift)
    reason = result["invalid_reasons"][0]
    assert "rose" in reason["detail"] and "more than 10%" in reason["detail"]
    assert result["stability"]["spread"] > 0.1 and len(result["stability"]["medians_ms"]) == 3
    assert result["stability"]["verdict"] == "drift" and result["stability"]["text"].startswith("drift: latency rose")

    falling = rising[::-1]
    reason = assess(*back_to_back(falling))["invalid_reasons"][0]
    assert "warm-up had not finished" in reason["detail"] and "--warmup" in reason["fix"]


def test_stability_tolerance_is_configurable():
    rising = np.linspace(1.0, 1.4, 5000) * MS  # halves ~20% apart: beyond 10%, within 50%
    assert not assess(*back_to_back(rising))["stable"]
    assert assess(*back_to_back(rising), ValidityRules(stability_tolerance=0.5))["stable"]


def test_a_stall_at_the_end_is_unstable():
    latency = np.append(steady(3000), 2_000 * MS)  # 3 s of 1 ms, then one 2 s iteration
    result = assess(*back_to_back(latency))
    assert not result["stable"]
    assert "stalled" in result["invalid_reasons"][-1]["detail"]


def test_too_few_iterations_to_judge_stability():
    rules = ValidityRules(min_count=0, percentiles=(), min_duration_s=0)
    result = assess(*back_to_back(steady(30)), rules)
    assert not result["stable"] and rules_of(result) == ["stability"]
    assert "--iterations 60" in result["invalid_reasons"][0]["fix"]  # 3 windows × 20


def test_no_iterations_is_invalid():
    result = assess([], [])
    assert not result["valid"] and result["count"] == 0 and result["rate_per_s"] is None
    assert rules_of(result) == ["min_count"]


def test_t_ns_defaults_to_back_to_back_and_must_match():
    latency, t = back_to_back(steady(5000))
    def shape(windows):
        return [(w["count"], w["median_ms"]) for w in windows]
    assert shape(assess(latency)["windows"]) == shape(assess(latency, t)["windows"])
    with pytest.raises(ValueError, match="starts"):
        assess(latency, t[:-1])


def test_warmup_stable():
    assert warmup_stable(np.ones(30))
    assert not warmup_stable(np.linspace(10, 1, 30))  # still falling
    assert warmup_stable(np.concatenate([np.linspace(10, 1, 30), np.ones(30)]), window=10)
    assert not warmup_stable([1.0, 1.0])  # fewer than three windows
    assert warmup_stable([1.0, 1.05, 1.08], tolerance=0.1) and not warmup_stable([1.0, 1.05, 1.2])


def test_unstable_warmup_is_a_note_not_a_failure():
    latency, t = back_to_back(steady(5000))
    result = assess(latency, t, warmup_latency_ns=np.linspace(10, 1, 30) * MS)
    assert result["valid"] and result["warmup"] == {"iterations": 30, "stable": False}
    assert "warm-up ended" in result["notes"][0]


@pytest.mark.parametrize("bad", [dict(stable_windows=1), dict(windows=2), dict(percentiles=(100,)),
                                 dict(min_count=-1), dict(percentile_confidence=1.0),
                                 dict(min_window_count=0)])
def test_bad_rules_are_refused(bad):
    with pytest.raises(ValueError):
        ValidityRules(**bad).validate()
