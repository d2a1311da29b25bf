import itertools
import math

import numpy as np
import pytest

from console.analysis.compare import (
    VERDICTS,
    _weighted_group_medians,
    answer,
    block_test,
    compare,
    mann_whitney_u,
    minimum_detectable_effect,
    p_floor,
    resolved_text,
    run_to_run_noise,
)

MALES = [19, 22, 16, 29, 24]
FEMALES = [20, 11, 17, 12]


# ---- Mann-Whitney U against hand-computed values
def test_u_and_exact_p_by_hand():
    # Pairs with male > female: 19 beats 11,17,12 (3); 22: 4; 16: 11,12 (2); 29: 4; 24: 4 → U = 17 of 20.
    # Under H0 all C(9,4) = 126 orderings are equally likely; U ≥ 17 happens in 7 of them, so p = 2·7/126 =
    # 1/9.
    result = mann_whitney_u(MALES, FEMALES)
    assert result["u"] == 17.0 and result["method"] == "exact"
    assert result["p_value"] == pytest.approx(1 / 9, abs=1e-15)


def test_normal_approximation_by_hand():
    # mean n1·n2/2 = 10, variance n1·n2·(n+1)/12 = 50/3, z = (|17 − 10| − 0.5)/√(50/3) = 1.5922
    result = mann_whitney_u(MALES, FEMALES, method="asymptotic")
    z = 6.5 / math.sqrt(50 / 3)
    assert result["z"] == pytest.approx(z)
    assert result["p_value"] == pytest.approx(math.erfc(z / math.sqrt(2)))
    assert result["p_value"] == pytest.approx(0.111346886533, abs=1e-9)  # scipy.stats.mannwhitneyu agrees


def test_tie_correction_by_hand():
    a = [1, 2, 2, 3, 3, 3, 5]
    b = [2, 3, 4, 4, 6, 6]
    # Pooled ranks: 1→1; the three 2s → 3; the four 3s → 6.5; 4s → 9.5; 5 → 11; 6s → 12.5.
    # R_a = 1 + 2·3 + 3·6.5 + 11 = 37.5, U_a = 37.5 − 7·8/2 = 9.5.
    # Ties t = 3, 4, 2, 2: Σ(t³ − t) = 24 + 60 + 6 + 6 = 96; var = 42/12 · (14 − 96/(13·12)) = 46.846
    # z = (|9.5 − 21| − 0.5)/√46.846 = 1.60715, p = 0.10802 (scipy: 0.10802203343404657)
    result = mann_whitney_u(a, b)
    assert result["method"].startswith("normal") and result["u"] == 9.5
    variance = 42 / 12 * (14 - 96 / (13 * 12))
    assert result["z"] == pytest.approx(11 / math.sqrt(variance))
    assert result["p_value"] == pytest.approx(0.10802203343404657, rel=1e-9)


def test_exact_distribution_matches_enumeration():
    for n1, n2 in ((1, 1), (2, 3), (3, 3), (4, 5), (6, 3)):
        counts = [0] * (n1 * n2 + 1)
        for positions in itertools.combinations(range(n1 + n2), n1):
            chosen = set(positions)
            counts[sum(sum(1 for j in range(i) if j not in chosen) for i in positions)] += 1
        total = math.comb(n1 + n2, n1)
        for u in range(n1 * n2 + 1):
            upper = max(u, n1 * n2 - u)
            expected = min(1.0, 2 * sum(counts[upper:]) / total)
            x, y = _samples_with_u(n1, n2, u)
            result = mann_whitney_u(x, y, method="exact")
            assert result["u"] == u
            assert result["p_value"] == pytest.approx(expected, abs=1e-15)


def test_u_matches_pairwise_counting_and_is_symmetric():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 20, 300).astype(float)  # many ties
    b = rng.integers(3, 23, 250).astype(float)
    pairwise = float(np.sum(a[:, None] > b[None, :]) + 0.5 * np.sum(a[:, None] == b[None, :]))
    ab, ba = mann_whitney_u(a, b), mann_whitney_u(b, a)
    assert ab["u"] == pairwise and ba["u"] == a.size * b.size - pairwise
    assert ab["p_value"] == pytest.approx(ba["p_value"])
    assert ab["p_value"] < 1e-6


def test_all_equal_values_give_p_one():
    assert mann_whitney_u([3.0] * 60, [3.0] * 70)["p_value"] == 1.0


def test_exact_refuses_ties():
    with pytest.raises(ValueError, match="ties"):
        mann_whitney_u([1, 2, 2], [3, 4], method="exact")


# ---- verdicts
def lognormal(seed, n=3000, median=2.0, sigma=0.25):
    return np.random.default_rng(seed).lognormal(math.log(median), sigma, n)


def test_injected_slowdown_is_slower():
    result = compare(lognormal(1), lognormal(2) * 1.2)
    assert result["verdict"] == "slower"
    assert result["ratio"] == pytest.approx(1.2, rel=0.03)
    low, high = result["ci95"]
    assert 1.02 < low < result["ratio"] < high
    assert result["p_value"] < 0.01
    assert result["explanation"].startswith("B is slower")


def test_speedup_is_faster():
    result = compare(lognormal(1), lognormal(2) / 1.25)
    assert result["verdict"] == "faster" and result["ci95"][1] < 0.98


def test_identical_distributions_too_short_to_bound_are_undecided_not_equal():
    result = compare(lognormal(3), lognormal(4))
    low, high = result["ci95"]
    assert low < 0.98 < 1 < high  # the interval reaches out of the ±2% band: no equivalence claim
    assert result["verdict"] == "undecided"
    assert result["explanation"].startswith("Could not tell apart: B is between ")
    assert "noise band 1 ± 2%" in result["explanation"] and "equal" not in result["explanation"].lower()
    assert result["headline"] == "could not tell apart: " + resolved_text(low, high)
    assert result["unresolved"] == "overlap"
    near = compare(lognormal(5, n=100_000), lognormal(6, n=100_000) * 1.02)  # clear of 1, not of the band
    assert near["verdict"] == "undecided" and near["unresolved"] == "noise" and near["ci95"][0] > 1
    assert near["headline"].startswith("not shown beyond the ±2.0% noise: B is between ")


def test_a_real_but_tiny_shift_inside_the_band_is_equivalent():
    result = compare(lognormal(5, n=100_000), lognormal(6, n=100_000) * 1.01)
    low, high = result["ci95"]
    assert 0.98 <= low and high <= 1.02  # the whole interval inside the band …
    assert result["verdict"] == "equivalent"  # … so equally fast within ±2%, though 1% is real
    assert result["explanation"].startswith("Equally fast within ±2.0%: the whole 95% interval")
    assert compare(lognormal(5, n=100_000), lognormal(6, n=100_000) * 1.01, noise=0.0)["verdict"] == "slower"


def test_a_big_shift_on_too_few_samples_is_undecided_and_says_nothing_is_resolvable():
    result = compare(lognormal(7, n=4), lognormal(8, n=4) * 1.3)
    assert result["verdict"] == "undecided"
    assert "not below 0.01" in result["explanation"]
    assert result["mde"] is None and "cannot reach p < 0.01" in result["mde_text"]
    assert "single iterations" in result["p_method"] and result["p_label"].startswith("U test p")


def test_output_says_what_noise_and_alpha_were():
    result = compare(lognormal(1, n=200), lognormal(2, n=300), noise=0.05, alpha=0.001, seed=3)
    assert result["noise"] == 0.05 and result["alpha"] == 0.001 and result["confidence"] == 0.95
    assert result["n_a"] == 200 and result["n_b"] == 300
    assert set(result) >= {"ratio", "ci95", "p_value", "verdict", "median_a", "median_b", "explanation"}
    assert compare(lognormal(1, n=200), lognormal(2, n=300), seed=3) == compare(lognormal(1, n=200),
                                                                              lognormal(2, n=300), seed=3)


def test_large_samples_decide():
    """Large samples go through (the block bootstrap stays bounded); speed is measured by make bench, not here."""
    a, b = lognormal(1, n=100_000), lognormal(2, n=100_000)
    result = compare(a, b)
    assert result["verdict"] in VERDICTS
    assert result["ci95"][0] <= result["ratio"] <= result["ci95"][1]


# ---- blocks: consecutive iterations are not independent
def test_block_medians_equal_the_medians_of_the_built_resamples():
    rng = np.random.default_rng(0)
    groups = [np.sort(rng.normal(10, 1, rng.integers(1, 40))) for _ in range(7)]
    weights = rng.multinomial(7, np.full(7, 1 / 7), size=300)
    built = [np.median(np.concatenate([np.tile(g, w) for g, w in zip(groups, row, strict=True)]))
             for row in weights]
    np.testing.assert_array_equal(_weighted_group_medians(groups, weights), built)


def test_drift_within_a_run_widens_the_interval():
    # B: the first half 3% slower than the second (a neighbour's job ended mid-run). Per iteration the
    # interval is tight and excludes 1 ± 2%; per block it carries the drift and does not.
    rng = np.random.default_rng(11)
    a = rng.lognormal(0, 0.02, 4000)
    b = np.concatenate([rng.lognormal(np.log(1.03) * 2, 0.02, 2000), rng.lognormal(0, 0.02, 2000)])
    per_iteration = compare(a, b, blocks=None)
    per_block = compare(a, b)
    assert per_iteration["blocks"] == [1, 1] and per_block["blocks"] == [10, 10]
    assert per_iteration["verdict"] == "slower"
    assert per_block["verdict"] == "undecided"
    def width(result):
        return result["ci95"][1] - result["ci95"][0]
    assert width(per_block) > 5 * width(per_iteration)
    assert "blocks" in per_block["interval_method"]


def test_a_side_can_be_its_rounds():
    rounds_a = [lognormal(seed, n=300) for seed in range(6)]
    rounds_b = [lognormal(seed + 10, n=300) * 1.2 for seed in range(6)]
    result = compare(rounds_a, rounds_b)
    assert result["blocks"] == [6, 6] and result["n_a"] == 1800
    assert result["verdict"] == "slower"
    assert result["median_a"] == pytest.approx(np.median(np.concatenate(rounds_a)))


def test_small_samples_are_not_cut_into_blocks():
    assert compare([1.0, 2.0, 3.0], [1.0, 2.0, 3.5])["blocks"] == [1, 1]
    assert compare(lognormal(1, n=23), lognormal(2, n=100))["blocks"] == [4, 10]


# ---- run-to-run noise
def test_run_to_run_noise_is_a_prediction_bound_for_two_further_runs():
    medians = [1.0, 1.02, 0.99, 1.01, 0.98]
    sd = float(np.std(np.log(medians), ddof=1))
    result = run_to_run_noise(medians)
    assert result["runs"] == 5 and result["sd_log"] == pytest.approx(sd)
    assert result["t"] == pytest.approx(4.604094871, rel=1e-6)  # Student t, 4 d.o.f., 0.995
    assert result["noise"] == pytest.approx(math.expm1(4.604094871 * math.sqrt(2) * sd), rel=1e-6)
    assert "5 runs" in result["explanation"]
    # runs as samples: their medians are used
    runs = [np.full(11, m) for m in medians]
    assert run_to_run_noise(runs)["noise"] == pytest.approx(result["noise"])


def test_run_to_run_noise_covers_new_pairs_at_its_confidence():
    rng = np.random.default_rng(3)
    misses = 0
    for _ in range(400):
        medians = np.exp(rng.normal(0, 0.03, 8))
        band = run_to_run_noise(medians, confidence=0.9)["noise"]
        pair = np.exp(rng.normal(0, 0.03, 2))
        misses += abs(math.log(pair[1] / pair[0])) > math.log1p(band)
    assert 0.05 <= misses / 400 <= 0.15


def test_run_to_run_noise_needs_three_runs():
    with pytest.raises(ValueError, match="at least 3"):
        run_to_run_noise([1.0, 1.1])


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="blocks"):
        compare([1.0], [1.0], blocks=0)
    with pytest.raises(ValueError, match="no samples"):
        compare([], [1.0])
    with pytest.raises(ValueError, match="positive"):
        compare([0.0, 0.0, 1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="noise"):
        compare([1.0], [1.0], noise=2)
    with pytest.raises(ValueError, match="not finite"):
        compare([1.0, float("inf")], [1.0])


def _samples_with_u(n1, n2, u):
    """x, y (no ties) such that U of x is exactly u: x_i sits above as many y's as the greedy split says."""
    y = [float(10 * j) for j in range(n2)]
    x = []
    remaining = u
    for _ in range(n1):
        above = min(n2, remaining)
        remaining -= above
        x.append(10.0 * above - 5.0 + len(x) * 0.01)  # above `above` of the y's, distinct from all others
    assert remaining == 0
    return x, y


# ---- the p-value comes from the same blocks as the interval
def ar1(seed, n=4000, phi=0.99, sigma=0.05, median=2.0):
    """Latencies whose log follows an AR(1) process: slow machine-state swings, as on a busy shared host."""
    rng = np.random.default_rng(seed)
    shocks = rng.normal(0, sigma, n)
    x = np.empty(n)
    x[0] = shocks[0] / math.sqrt(1 - phi * phi)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + shocks[i]
    return median * np.exp(x)


def test_block_p_on_autocorrelated_runs_without_a_difference_is_not_tiny():
    block_ps, iteration_ps = [], []
    for seed in range(20):
        a, b = ar1(seed), ar1(100 + seed)
        block_ps.append(compare(a, b)["p_value"])
        iteration_ps.append(mann_whitney_u(a, b)["p_value"])
    # a U test over single iterations calls most of these identical processes "different" …
    assert sum(p < 1e-3 for p in iteration_ps) >= 12
    # … the block test does not: its p is spread as a p-value under no difference should be
    assert min(block_ps) > 1e-3 and np.median(block_ps) > 0.2
    assert sum(p < 0.01 for p in block_ps) <= 2


def test_the_p_value_is_mann_whitney_on_the_blocks_the_interval_resamples():
    a, b = ar1(1), ar1(2) * 1.1
    result = compare(a, b)
    blocks_a, blocks_b = np.array_split(a, 10), np.array_split(b, 10)
    expected = mann_whitney_u([np.median(g) for g in blocks_a], [np.median(g) for g in blocks_b])
    assert result["p_value"] == expected["p_value"] and result["u_statistic"] == expected["u"]
    assert result["blocks"] == [10, 10] and "block medians" in result["p_method"]
    assert block_test(blocks_a, blocks_b)["p_value"] == result["p_value"]
    # the single-iteration family: both the interval and the test on iterations
    single = compare(a, b, blocks=None)
    assert single["p_value"] == mann_whitney_u(a, b)["p_value"] and "single iterations" in single["p_method"]


def test_interval_and_block_test_agree_on_clear_cases():
    for seed in range(5):
        slower = compare(lognormal(seed), lognormal(seed + 50) * 1.15)
        assert slower["ci95"][0] > 1.02 and slower["p_value"] < 0.01 and slower["verdict"] == "slower"


def test_p_floor_says_what_few_blocks_can_show():
    assert p_floor(10, 10) == pytest.approx(2 / math.comb(20, 10))
    assert p_floor(3, 3) == pytest.approx(0.1)
    assert p_floor(5, 5) == pytest.approx(2 / 252) and p_floor(5, 5) < 0.01 < p_floor(4, 5)
    rounds_a = [lognormal(s, n=200) for s in range(3)]
    rounds_b = [lognormal(s + 9, n=200) * 1.5 for s in range(3)]
    result = compare(rounds_a, rounds_b)  # 50% slower, wholly outside the band, but 3 rounds a side
    assert result["ci95"][0] > 1.02 and result["verdict"] == "undecided" and result["unresolved"] == "test"
    assert result["headline"].startswith("not shown slower: B is between ")  # told apart by the interval only
    assert result["p_floor"] == pytest.approx(0.1) and result["mde"] is None
    assert "least it can give is 0.1" in result["mde_text"]


# ---- the minimum detectable effect
def test_mde_is_the_band_plus_the_interval_spread_at_80_percent_power():
    found = minimum_detectable_effect(0.95, 1.05, noise=0.02, alpha=0.01, floor=1e-5)
    se = math.log(1.05 / 0.95) / (2 * 1.959963985)
    assert found["mde"] == pytest.approx(math.expm1(math.log(1.02) + (1.959963985 + 0.841621234) * se), rel=1e-6)
    assert found["mde_power"] == 0.8 and found["mde_text"] == f"differences under {found['mde']:.1%} cannot be resolved here"
    assert minimum_detectable_effect(0.95, 1.05, 0.02, 0.01, floor=0.1)["mde"] is None


def test_mde_shrinks_with_more_data_and_is_detected_about_80_percent_of_the_time():
    small = compare(lognormal(1, n=500), lognormal(2, n=500))["mde"]
    large = compare(lognormal(1, n=20_000), lognormal(2, n=20_000))["mde"]
    assert large < small
    # a slow-down of the size a null pair reports as its MDE is called slower in most pairs like it
    mde = float(np.median([compare(lognormal(s, n=500), lognormal(s + 1000, n=500), n_boot=400)["mde"]
                           for s in range(10)]))
    hits = sum(compare(lognormal(s + 2000, n=500), lognormal(s + 3000, n=500) * (1 + mde), n_boot=400)["verdict"]
               == "slower" for s in range(60))
    assert 0.6 <= hits / 60 <= 0.97


# ---- wording: equivalence only when the whole interval is inside the band
def test_equivalent_exactly_when_the_interval_lies_inside_the_band():
    seen = set()
    for k, shift in enumerate((0.97, 0.99, 1.0, 1.005, 1.01, 1.015, 1.03, 1.06)):
        for n in (400, 4000, 60_000):
            result = compare(lognormal(k, n=n, sigma=0.1), lognormal(k + 500, n=n, sigma=0.1) * shift)
            low, high = result["ci95"]
            inside = 0.98 <= low and high <= 1.02
            assert (result["verdict"] == "equivalent") == inside, (shift, n, result["ci95"])
            if result["verdict"] == "undecided":
                assert "equal" not in (result["explanation"] + result["headline"]).lower()
                assert result["resolved"] in result["explanation"]
            seen.add(result["verdict"])
    assert seen == set(VERDICTS)


def test_resolved_text_says_the_interval_in_words():
    assert resolved_text(0.68, 1.01) == "B is between 32% faster and 1.0% slower"
    assert resolved_text(1.05, 1.12) == "B is between 5.0% and 12% slower"
    assert resolved_text(0.8, 0.9) == "B is between 10% and 20% faster"


def test_answer_to_the_fail_on_question():
    def result(verdict, low, high):
        return {"verdict": verdict, "ci95": [low, high], "noise": 0.02}
    assert answer(result("slower", 1.1, 1.2), "slower") == "yes"
    assert answer(result("undecided", 0.7, 1.01), "slower") == "no"  # cannot tell faster from equal: not slower
    assert answer(result("undecided", 0.9, 1.1), "slower") == "undecided"
    assert answer(result("undecided", 0.9, 1.1), "faster") == "undecided"
    assert answer(result("slower", 1.1, 1.2), "faster") == "no"
    assert answer(result("equivalent", 0.99, 1.01), "different") == "no"
    assert answer(result("faster", 0.8, 0.9), "different") == "yes"
    assert answer(result("undecided", 0.9, 1.1), None) == "undecided"
    assert answer(result("equivalent", 0.99, 1.01), None) == "yes"
    with pytest.raises(ValueError, match="question"):
        answer(result("slower", 1.1, 1.2), "bigger")
