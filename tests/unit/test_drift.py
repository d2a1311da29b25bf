"""Jitter or drift: synthetic latency sequences judged against a noise floor (console.analysis.drift through
validity.assess), the exact Mann–Whitney p, and the reference kernel's spread statistic (engines.machine.noise)."""

import math

import numpy as np
import pytest

from console.analysis import drift
from console.analysis.validity import assess
from engines.machine import noise

MS = 1_000_000
SEEDS = range(40)


def windowed(levels, seed, block_s=0.5, median_ms=1.0, sigma=0.05):
    """Back-to-back iterations, `block_s` seconds at each level (× median_ms), lognormal within a block."""
    rng = np.random.default_rng(seed)
    latency = []
    for level in levels:
        count = int(block_s * 1e3 / (median_ms * level))
        latency.append(rng.lognormal(np.log(median_ms * level * MS), sigma, count))
    latency = np.concatenate(latency)
    return latency, np.concatenate([[0.0], np.cumsum(latency)[:-1]]) + 3e12


def jitter(seed, amplitude, count=10):
    """`count` window levels, each independently up to ±amplitude/2 around 1: a machine that jitters, no trend."""
    return 1.0 + amplitude * (np.random.default_rng(1000 + seed).random(count) - 0.5)


def floor(spread):
    return {"spread": spread, "window_s": 0.25, "quick": True}


def rules_of(result):
    return [reason["rule"] for reason in result["invalid_reasons"]]


def test_jitter_only_is_valid_on_a_machine_that_jitters_that_much():
    verdicts = []
    for seed in SEEDS:
        result = assess(*windowed(jitter(seed, 0.30), seed), noise_floor=floor(0.15))
        verdicts.append(result["stability"]["verdict"])
        if result["stability"]["verdict"] == "jittery":
            text = result["stability"]["text"]
            assert result["valid"] and text.startswith("jittery machine (noise 15%)")
            if result["stability"]["unresolved_change"] is None and result["stability"]["min_detectable_change"] <= 0.10:
                assert text == "jittery machine (noise 15%), no drift"
            elif result["stability"]["unresolved_change"] is None:  # resolved nothing it could have missed
                assert text.startswith("jittery machine (noise 15%); no drift shown, but drifts under ")
                assert f"drifts under {result['stability']['min_detectable_change']:.0%} cannot be resolved" in text
            else:  # the halves moved beyond the tolerance without a significant test: said, not hidden
                assert "cannot tell from jitter" in text and "no drift shown" in text
            assert result["stability"]["spread"] > 0.10 and result["stability"]["allowance"] == pytest.approx(0.30)
    assert verdicts.count("drift") <= 2  # ranks keep false alarms near the test's level (≤ 3.2% at 5 + 5)
    assert sum(v in ("stable", "jittery") for v in verdicts) >= 0.9 * len(verdicts)
    assert verdicts.count("jittery") >= 10  # the old 10% rule would have failed these


def test_the_same_jitter_without_a_noise_floor_keeps_the_plain_tolerance_and_says_so():
    failed = [assess(*windowed(jitter(seed, 0.30), seed)) for seed in SEEDS]
    unsteady = [r for r in failed if r["stability"]["verdict"] == "unsteady"]
    assert unsteady, "a 30% jitter must exceed the 10% tolerance somewhere"
    for result in unsteady:
        assert not result["valid"] and rules_of(result) == ["stability"]
        assert "noise floor was not measured" in result["invalid_reasons"][0]["detail"]
        assert result["stability"]["noise"] is None and result["stability"]["noise_floor"] is None


def test_a_steady_rise_is_a_drift_even_when_the_last_windows_agree():
    for seed in SEEDS:
        levels = np.linspace(1.0, 1.4, 10) * jitter(seed, 0.06)
        result = assess(*windowed(levels, seed), noise_floor=floor(0.05))
        assert not result["valid"] and rules_of(result) == ["drift"], seed
        stability = result["stability"]
        assert stability["verdict"] == "drift" and stability["text"].startswith("drift: latency rose")
        assert stability["trend"]["theil_sen_change"] == pytest.approx(0.4, abs=0.12)
        reason = result["invalid_reasons"][0]
        assert "rose" in reason["detail"] and "labconsole doctor" in reason["fix"]


def test_a_step_half_way_is_a_drift():
    for seed in SEEDS:
        levels = np.where(np.arange(10) < 5, 1.0, 1.2) * jitter(seed, 0.08)
        result = assess(*windowed(levels, seed), noise_floor=floor(0.06))
        assert rules_of(result) == ["drift"], (seed, result["stability"])
        assert result["stability"]["trend"]["change"] == pytest.approx(0.2, abs=0.07)
        assert result["stability"]["trend"]["p_value"] <= drift.ALPHA


def test_a_step_smaller_than_the_tolerance_is_not_a_drift():
    levels = np.where(np.arange(10) < 5, 1.0, 1.05)
    result = assess(*windowed(levels, 0), noise_floor=floor(0.03))
    assert result["valid"] and result["stability"]["verdict"] == "stable"
    assert result["stability"]["trend"]["p_value"] <= drift.ALPHA  # significant, but within the tolerance


def test_a_fall_is_an_unfinished_warmup():
    levels = np.linspace(1.5, 1.0, 10)
    result = assess(*windowed(levels, 0), noise_floor=floor(0.03))
    assert rules_of(result) == ["drift"] and result["stability"]["text"].startswith("drift: latency fell")
    assert "warm-up had not finished" in result["invalid_reasons"][0]["detail"]
    assert "--warmup" in result["invalid_reasons"][0]["fix"]


def test_jumps_beyond_twice_the_noise_are_unsteady():
    levels = [1.0, 1.5, 1.0, 1.5, 1.0, 1.5, 1.0, 1.5, 1.0, 1.5]  # windows jump 50%, no trend
    result = assess(*windowed(levels, 0), noise_floor=floor(0.10))
    assert rules_of(result) == ["stability"] and result["stability"]["verdict"] == "unsteady"
    assert "more than 2× this machine's noise (10%)" in result["stability"]["text"]
    assert result["stability"]["typical_spread"] == pytest.approx(0.5, abs=0.05)


def test_one_window_off_in_an_otherwise_steady_run_is_jitter_not_unsteady():
    levels = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.5, 1.0]  # one window 50% off near the end
    result = assess(*windowed(levels, 0), noise_floor=floor(0.10))
    assert result["valid"] and result["stability"]["verdict"] == "jittery"
    assert result["stability"]["spread"] == pytest.approx(0.5, abs=0.05)  # the last windows' spread is still shown



def test_an_unsteady_runs_detail_states_the_typical_spread_against_the_allowance():
    levels = [1.0, 1.5] * 5
    detail = assess(*windowed(levels, 0), noise_floor=floor(0.10))["invalid_reasons"][0]["detail"]
    assert detail.startswith("3 windows in a row typically differ by 5")  # what was judged comes first
    assert "more than the 20% allowed" in detail and "the medians of the last 3 windows" in detail


def test_a_fall_while_an_until_stable_run_was_extended_is_settled_warmup_not_drift():
    # 20 windows: the first 8 still settling (1.5 → 1.0), then 12 steady; the engine extended it past its 10
    levels = list(np.linspace(1.5, 1.05, 8)) + [1.0] * 12
    latency, starts = windowed(levels, 0)
    fixed = assess(latency, starts, rules_of_windows(20), noise_floor=floor(0.03))
    assert rules_of(fixed) == ["drift"]  # judged as one run of 20 windows, the halves differ
    extended = assess(latency, starts, rules_of_windows(20), noise_floor=floor(0.03), base_windows=10)
    stability = extended["stability"]
    assert extended["valid"] and stability["verdict"] == "stable"
    assert stability["settled"]["final_windows"] == 10 and stability["settled"]["change"] < -0.1
    assert "latency fell" in stability["text"] and "warm-up still settling" in stability["text"]
    assert any("--warmup-until-stable" in note for note in extended["notes"])


def test_a_rise_while_an_until_stable_run_was_extended_stays_a_drift():
    levels = [1.0] * 8 + list(np.linspace(1.1, 1.5, 12))
    result = assess(*windowed(levels, 0), rules_of_windows(20), noise_floor=floor(0.03), base_windows=10)
    assert rules_of(result) == ["drift"] and result["stability"]["settled"] is None
    assert result["stability"]["text"].startswith("drift: latency rose")


def test_a_fall_that_continues_into_the_last_windows_is_still_a_drift():
    levels = list(np.linspace(1.6, 1.0, 20))
    result = assess(*windowed(levels, 0), rules_of_windows(20), noise_floor=floor(0.03), base_windows=10)
    assert rules_of(result) == ["drift"] and result["stability"]["text"].startswith("drift: latency fell")


def test_allowance_for():
    assert drift.allowance_for(None, 3, 0.1) is None
    assert drift.allowance_for(floor(0.15), 3, 0.1) == pytest.approx(0.3)
    assert drift.allowance_for(floor(0.02), 3, 0.1) == pytest.approx(0.1)


def rules_of_windows(count):
    from console.analysis.validity import ValidityRules

    return ValidityRules(windows=count)


def test_the_floor_used_is_kept_with_the_result():
    used = floor(0.12)
    result = assess(*windowed([1.0] * 10, 0), noise_floor=used)
    assert result["stability"]["noise_floor"] == used and result["stability"]["noise"] == 0.12


def test_noise_of_recomputes_the_spread_for_the_rules_window_count():
    medians = [100.0, 110.0, 100.0, 100.0, 100.0, 120.0]
    stored = {"spread": 0.5, "medians_us": medians}
    assert drift.noise_of(stored, 2) == pytest.approx(noise.spread_of(medians, 2))
    assert drift.noise_of(stored, 3) == pytest.approx(noise.spread_of(medians, 3))
    assert drift.noise_of({"spread": 0.07}, 3) == 0.07
    assert drift.noise_of(None, 3) is None and drift.noise_of({"spread": None}, 3) is None


def test_mann_whitney_exact_p():
    assert drift.mann_whitney_p([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    assert drift.mann_whitney_p([1, 2, 3, 4, 6], [5, 7, 8, 9, 10]) == pytest.approx(4 / 252)
    assert drift.mann_whitney_p([1, 3, 5], [2, 4, 6]) == pytest.approx(0.7)
    assert drift.mann_whitney_p([1.0] * 4, [1.0] * 4) == 1.0
    with pytest.raises(ValueError, match="at least one window"):
        drift.mann_whitney_p([], [1.0])


def test_many_windows_use_the_normal_approximation_without_a_table():
    steady = [1.0 + 0.01 * (i % 7) for i in range(300)]
    p = drift.mann_whitney_p(steady[:150], steady[150:])
    assert 0.2 < p <= 1.0
    assert drift.mann_whitney_p(steady[:150], [x * 1.2 for x in steady[150:]]) < 1e-6


def test_too_few_windows_cannot_show_a_drift():
    assert drift.trend([1.0, 2.0, 3.0, 4.0, 5.0]) is None
    verdict = drift.judge([1.0, 1.12, 1.0, 1.12, 1.05], 3, 0.1, floor(0.10))
    assert verdict["trend"] is None and verdict["verdict"] == "jittery"


def test_reference_kernel_spread_with_a_fake_clock():
    ticks = iter(range(0, 10**12, 1000))  # every clock read advances 1 µs: each call takes 1 µs
    result = noise.measure_noise(4, 0.001, kernel=lambda: None, clock=lambda: next(ticks))
    assert result["windows"] == 4 and len(result["medians_us"]) == 4
    assert result["medians_us"] == [1.0] * 4 and result["spread"] == 0.0 and result["k"] == 3
    assert "reference kernel" in result["method"]
    assert noise.spread_of([100, 110, 100, 130], 3) == pytest.approx(np.median([0.10, 0.30]))
    assert noise.max_spread_of([100, 110, 100, 130], 3) == pytest.approx(0.30)
    assert noise.spread_of([1.0, 2.0], 3) is None
    with pytest.raises(ValueError, match="windows must be at least 3"):
        noise.measure_noise(2, 0.1)
    with pytest.raises(ValueError, match="window_s"):
        noise.measure_noise(3, 0)


def test_reference_kernel_is_deterministic():
    once = noise.reference_kernel()
    assert once() == once() == noise.reference_kernel()()


def test_a_step_the_windows_cannot_resolve_is_said_not_called_no_drift():
    medians = [1.0, 1.4, 1.0, 1.4, 1.0, 1.3, 1.6, 1.2, 1.6, 1.25]  # the second half ~+20%, deep in 40% jitter
    verdict = drift.judge(medians, 3, 0.10, floor(0.40))
    assert verdict["valid"] and verdict["verdict"] == "jittery"
    assert verdict["trend"]["p_value"] > drift.ALPHA and verdict["unresolved_change"] > 0.10
    assert "no drift shown, but the halves differ by +" in verdict["text"]
    assert ", no drift" not in verdict["text"]


def test_the_smallest_resolvable_drift_is_found_19_times_in_20():
    """min_detectable_change is what it says: a step of that size in independent windows that jitter as the run's
    did is found in about 95% of runs, and a step of half its size far less often (fresh seeds, not the table's)."""
    rng = np.random.default_rng(77)
    sigma, found_at, found_half = 0.15, 0, 0
    smallest = drift.min_detectable_change(5, sigma)
    runs = 600
    for _ in range(runs):
        logs = sigma * rng.standard_normal(10)
        for step, tally in ((smallest, "full"), (smallest / 2, "half")):
            medians = np.exp(logs + np.r_[np.zeros(5), np.full(5, np.log1p(step))])
            hit = drift.trend(list(medians))["p_value"] <= drift.ALPHA
            found_at += hit and tally == "full"
            found_half += hit and tally == "half"
    assert 0.92 <= found_at / runs <= 0.98
    assert found_half / runs < 0.6
    assert drift.min_detectable_change(5, 0.01) < 0.05 < drift.min_detectable_change(5, 0.05)
    assert drift.min_detectable_change(3, 0.01) == math.inf  # 3 + 3 windows never reach p <= 0.05


def test_a_quiet_run_says_no_drift_and_a_run_that_resolves_little_says_how_little():
    quiet = drift.judge([1.0, 1.01, 0.99, 1.0, 1.01, 1.0, 0.995, 1.005, 1.0, 1.01], 3, 0.10, floor(0.05))
    assert quiet["verdict"] == "stable" and quiet["text"] == "stable"
    assert quiet["min_detectable_change"] < 0.10
    rough = drift.judge([1.0, 1.09, 0.93, 1.05, 0.96, 1.02, 0.92, 1.08, 0.97, 1.03], 3, 0.10, floor(0.10))
    assert rough["valid"] and rough["min_detectable_change"] > 0.10
    assert f"drifts under {rough['min_detectable_change']:.0%} cannot be resolved by 10 windows that jitter" \
        in rough["text"]
    few = drift.judge([1.0, 1.02, 0.98, 1.01, 1.0, 0.99], 3, 0.10, floor(0.05))
    assert few["min_detectable_change"] == math.inf and "6 windows cannot show a drift" in few["text"]


def test_a_step_within_the_machines_own_wander_is_said_not_called():
    # the machine alone moved a steady kernel's halves 30% lately: a 20% step cannot be told from it
    levels = np.where(np.arange(10) < 5, 1.0, 1.2) * jitter(0, 0.04)
    wandering = {**floor(0.06), "wander": 0.30}
    result = assess(*windowed(levels, 0), noise_floor=wandering)
    stability = result["stability"]
    assert result["valid"] and stability["verdict"] == "stable" and stability["drift_threshold"] == 0.30
    assert stability["trend"]["p_value"] <= drift.ALPHA and stability["min_detectable_change"] == 0.30
    assert "cannot be told from this machine's own wander (steady work's halves moved 30%)" in stability["text"]
    # a step beyond the wander is still a drift; a wander under the tolerance changes nothing
    assert rules_of(assess(*windowed(np.where(np.arange(10) < 5, 1.0, 1.5), 0), noise_floor=wandering)) == ["drift"]
    calm = assess(*windowed(levels, 0), noise_floor={**floor(0.06), "wander": 0.05})
    assert rules_of(calm) == ["drift"] and calm["stability"]["drift_threshold"] == 0.10


def test_noise_of_pools_several_draws_and_the_wander_reads_either_form():
    calm, burst = [100.0] * 10, [100.0, 150.0] * 5
    pooled = {"spread": 0.9, "pooled_medians_us": [calm, burst]}
    groups = noise.group_spreads(calm, 3) + noise.group_spreads(burst, 3)
    assert drift.noise_of(pooled, 3) == pytest.approx(float(np.median(groups)))
    assert drift.wander_of({"wander": -0.2}) == 0.2 and drift.wander_of({"halves_change": -0.1}) == 0.1
    assert drift.wander_of({"spread": 0.1}) is None and drift.wander_of(None) is None
    assert noise.halves_change([100.0, 100.0, 999.0, 120.0, 120.0]) == pytest.approx(0.2)  # the middle left out


def test_a_run_within_the_noisiest_recent_draw_is_jitter_not_unsteady():
    calm, burst = [100.0, 101.0] * 5, [100.0, 135.0] * 5  # draws of 1% and 35% typical spread
    pooled = {"spread": 0.01, "window_s": 0.4, "pooled_medians_us": [calm, calm, burst]}
    assert drift.noise_of(pooled, 3) == pytest.approx(0.01) and drift.worst_of(pooled, 3) == pytest.approx(0.35)
    assert drift.allowance_for(pooled, 3, 0.10) == pytest.approx(0.35)
    windows = [1.0, 1.3, 1.0, 1.3, 1.0, 1.3, 1.0, 1.3, 1.0, 1.3]  # jumps 30%, no trend
    result = drift.judge(windows, 3, 0.10, pooled)
    assert result["verdict"] == "jittery" and result["text"].startswith("jittery machine (noise 1%, up to 35% in "
                                                                        "recent draws)")
    assert drift.judge([1.0, 1.5] * 5, 3, 0.10, pooled)["text"].endswith(
        "and more than its noisiest recent draw (35%)")
    assert drift.worst_of({"spread": 0.1, "medians_us": calm}, 3) is None  # one draw: no "noisiest"
