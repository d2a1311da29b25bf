"""E(N) = X(N) / (N·X(1)) on fixed step times: the known ratio, its bootstrap interval bracketing it, the same
figures twice (seeded), weak scaling counting N × the per-rank batch, N = 1 exactly 1, and refusals that name
the problem."""

from __future__ import annotations

import numpy as np
import pytest
from scaling_samples import spec, step_times_ns, summary

from console.scaling import efficiency


def run(run_id: str, ranks: int, step_s: float, **kw) -> dict:
    spec_kw = {k: kw.pop(k) for k in ("model", "batch", "scaling") if k in kw}
    return {"run_id": run_id, "spec": spec(ranks, **spec_kw),
            "summary": summary(ranks, step_s, batch=spec_kw.get("batch", 8),
                               scaling=spec_kw.get("scaling", "strong"), **kw)}


def test_strong_scaling_e_is_the_known_ratio_and_the_interval_brackets_it():
    one, two = run("one00000", 1, 0.100), run("two00000", 2, 0.060)
    result = efficiency(two, one, step_times_ns(0.060, seed=1), step_times_ns(0.100, seed=2))
    assert result["e"] == pytest.approx(0.100 / (2 * 0.060))  # X ∝ 1/step with the global batch fixed
    low, high = result["interval_95"]
    assert low < result["e"] < high and high - low < 0.02  # 2% step spread over 200 steps: a tight interval
    assert result["speedup"] == pytest.approx(0.100 / 0.060)
    assert result["x_n"] == pytest.approx(8 / 0.060) and result["x_1"] == pytest.approx(8 / 0.100)
    assert result["baseline_run_id"] == "one00000" and result["ranks"] == 2 and result["scaling"] == "strong"
    assert "bootstrap (2000 resamples" in result["method"] and "autocorrelated" in result["method"]
    assert "floor" in result["method"]


def test_seeded_the_interval_is_identical_twice():
    one, four = run("one00000", 1, 0.100), run("four0000", 4, 0.031)
    lat_n, lat_1 = step_times_ns(0.031, seed=3), step_times_ns(0.100, seed=4)
    assert efficiency(four, one, lat_n, lat_1) == efficiency(four, one, lat_n, lat_1)


def test_noisier_steps_give_a_wider_interval():
    one, two = run("one00000", 1, 0.100), run("two00000", 2, 0.060)
    rng = np.random.default_rng(5)
    calm = efficiency(two, one, step_times_ns(0.060, seed=1), step_times_ns(0.100, seed=2))["interval_95"]
    noisy_n = (rng.normal(0.060, 0.012, 200) * 1e9).astype(np.int64)
    noisy = efficiency(two, one, noisy_n, step_times_ns(0.100, seed=2))["interval_95"]
    assert noisy[1] - noisy[0] > 3 * (calm[1] - calm[0])


def test_weak_scaling_counts_n_times_the_per_rank_batch():
    one = run("one00000", 1, 0.100, scaling="weak")
    two = run("two00000", 2, 0.110, scaling="weak", with_samples=False, with_global_batch=False)
    result = efficiency(two, one, step_times_ns(0.110), step_times_ns(0.100))
    # X(2) = 200 steps × (2 × 8) ÷ 22 s: the per-rank batch alone would halve E
    assert result["x_n"] == pytest.approx(16 / 0.110)
    assert result["e"] == pytest.approx(0.100 / 0.110)
    assert "N × the per-rank batch" in result["method"]


def test_one_rank_is_exactly_one():
    one = run("one00000", 1, 0.100)
    result = efficiency(one, one, step_times_ns(0.100), step_times_ns(0.100))
    assert result["e"] == 1.0 and result["interval_95"] == [1.0, 1.0] and result["speedup"] == 1.0


def test_too_few_steps_say_why_there_is_no_interval():
    one, two = run("one00000", 1, 0.100), run("two00000", 2, 0.060)
    result = efficiency(two, one, [60_000_000], step_times_ns(0.100))
    assert result["interval_95"] is None and "run two00000 stored 1" in result["method"]
    assert result["e"] == pytest.approx(0.100 / 0.120)


@pytest.mark.parametrize("base, match", [
    (run("bert0000", 1, 0.1, model="bert"), "different models"),
    (run("twobase0", 2, 0.1), "ran on 2 ranks, not 1"),
    (run("batch160", 1, 0.1, batch=16), "scaling does not match.*--batch 8"),
])
def test_runs_that_cannot_be_compared_are_refused_by_name(base, match):
    with pytest.raises(ValueError, match=match):
        efficiency(run("two00000", 2, 0.060), base, step_times_ns(0.06), step_times_ns(0.1))


def test_a_weak_run_against_a_baseline_of_the_global_batch_is_refused():
    weak = run("weak0000", 2, 0.110, scaling="weak")  # per-rank 8, global 16
    with pytest.raises(ValueError, match="weak scaling with per-rank batch 8"):
        efficiency(weak, run("one16000", 1, 0.1, batch=16), step_times_ns(0.11), step_times_ns(0.1))


def test_an_e_above_one_beyond_its_interval_says_the_baseline_was_held_back():
    one, two = run("one00000", 1, 0.400), run("two00000", 2, 0.100)
    result = efficiency(two, one, step_times_ns(0.100, seed=1), step_times_ns(0.400, seed=2))
    assert result["e"] == pytest.approx(2.0) and "baseline was held back" in result["note"]
    assert "note" not in efficiency(run("two00000", 2, 0.06), run("one00000", 1, 0.1), step_times_ns(0.06),
                                    step_times_ns(0.1))


def test_unequal_core_shares_are_noted():
    one, two = run("one00000", 1, 0.100), run("two00000", 2, 0.060)
    one["summary"]["scenario"]["ddp"]["ranks_out"] = [{"rank": 0, "cores": [0, 1]}]
    two["summary"]["scenario"]["ddp"]["ranks_out"] = [{"rank": 0, "cores": [0]}, {"rank": 1, "cores": [1]}]
    result = efficiency(two, one, step_times_ns(0.06), step_times_ns(0.1))
    assert "each of the 2 ranks ran on 1 core(s), the 1-rank baseline on 2" in result["cores_note"]
    one["summary"]["scenario"]["ddp"]["ranks_out"] = [{"rank": 0, "cores": [0]}]
    assert "cores_note" not in efficiency(two, one, step_times_ns(0.06), step_times_ns(0.1))
