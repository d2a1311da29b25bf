import math

import numpy as np
import pytest

from console.analysis.stats import (
    binomial_cdf,
    bootstrap_percentiles,
    describe,
    min_samples_for_percentile,
    percentile_ci,
    percentile_key,
    student_t_quantile,
)

Z99 = 2.3263478740408408  # standard normal 0.99 quantile


# ---- MLPerf LoadGen early-stopping bound
def test_early_stopping_bound_gives_loadgens_numbers():
    assert min_samples_for_percentile(90) == 64
    assert min_samples_for_percentile(99) == 662
    assert min_samples_for_percentile(99.9) == 6636


def test_early_stopping_bound_is_the_binomial_tail_it_documents():
    # n is the first count where P[at most 1 of n queries is slow] drops below 1%, with P[slow] = 1 − p.
    for q, n in ((90, 64), (99, 662)):
        slow = 1 - q / 100
        def tail(m, slow=slow):
            return (1 - slow) ** m + m * slow * (1 - slow) ** (m - 1)
        assert tail(n) < 0.01 <= tail(n - 1)
    # with no slow query allowed it is the plain geometric bound ⌈ln 0.01 / ln p⌉
    assert min_samples_for_percentile(90, overlatency=0) == math.ceil(math.log(0.01) / math.log(0.9)) == 44
    assert min_samples_for_percentile(99, overlatency=0) == 459


def test_early_stopping_bound_follows_confidence_and_tolerance():
    assert min_samples_for_percentile(99, confidence=0.95) == 473
    assert min_samples_for_percentile(99, confidence=0.999) == 920
    # LoadGen's tolerance d loosens the bound: it then vouches for the (p − d) quantile only
    assert min_samples_for_percentile(90, tolerance=0.01) == 58


@pytest.mark.parametrize("bad", [0, 100, -5, 150, "p99", None])
def test_percentile_out_of_range_is_refused(bad):
    with pytest.raises(ValueError, match="percentile"):
        min_samples_for_percentile(bad)


def test_binomial_cdf_matches_hand_sums():
    assert binomial_cdf(1, 64, 0.1) == pytest.approx(0.9 ** 64 + 64 * 0.1 * 0.9 ** 63, rel=1e-12)
    assert binomial_cdf(2, 5, 0.5) == pytest.approx((1 + 5 + 10) / 32, rel=1e-12)
    assert binomial_cdf(-1, 5, 0.5) == 0.0 and binomial_cdf(5, 5, 0.5) == 1.0


# ---- percentile intervals
def test_order_statistic_interval_uses_the_textbook_ranks():
    x = np.arange(1.0, 101.0)  # the sample value is its rank
    assert percentile_ci(x, 50) == (40.0, 61.0)  # the classic 95% ranks for the median of 100 (96.5%)
    assert percentile_ci(x, 90) == (84.0, 96.0)
    assert percentile_ci(np.arange(1.0, 1001.0), 99) == (983.0, 997.0)


def test_a_side_the_sample_cannot_bound_is_none():
    low, high = percentile_ci(np.arange(1.0, 101.0), 99)
    assert low is not None and high is None
    # p99's 95% upper bound exists once P[all n below p99] = 0.99^n ≤ 2.5%, i.e. n ≥ 368
    assert percentile_ci(np.arange(1.0, 368.0), 99)[1] is None
    assert percentile_ci(np.arange(1.0, 369.0), 99)[1] == 368.0
    assert percentile_ci([5.0], 50) == (None, None)


def test_interval_is_order_independent_and_brackets_the_estimate():
    x = np.random.default_rng(4).lognormal(0, 0.5, 5000)
    for method in ("order", "bootstrap"):
        low, high = percentile_ci(x, 99, method=method)
        assert low < np.percentile(x, 99) < high
        assert percentile_ci(x[::-1], 99, method=method) == (low, high)


@pytest.mark.parametrize(("method", "q"),
                         [("order", 50), ("order", 99), ("bootstrap", 50), ("bootstrap", 90)])
def test_95_percent_interval_covers_the_true_percentile_about_95_percent_of_the_time(method, q):
    mu, sigma, n, trials = 1.0, 0.5, 1000, 200
    truth = math.exp(mu) if q == 50 else math.exp(mu + sigma * (Z99 if q == 99 else 1.2815515655446004))
    rng = np.random.default_rng(2024)
    covered = 0
    for trial in range(trials):
        low, high = percentile_ci(rng.lognormal(mu, sigma, n), q, method=method, n_boot=1000, seed=trial)
        covered += low <= truth <= high
    print(f"[coverage] {method} p{q}: {covered / trials:.1%} of {trials}")
    assert 0.88 * trials <= covered <= 0.99 * trials


def test_fast_bootstrap_matches_literal_resampling():
    """The Beta order-statistic draw is the bootstrap: compare it with resampling n indices per resample."""
    rng = np.random.default_rng(7)
    x = np.sort(rng.lognormal(0, 1, 41))
    for q in (50, 90, 37.5):
        fast = bootstrap_percentiles(x, q, n_boot=40000, rng=np.random.default_rng(1))
        idx = np.random.default_rng(2).integers(0, x.size, size=(40000, x.size))
        literal = np.percentile(x[idx], q, axis=1)
        se = literal.std() / math.sqrt(literal.size)
        assert abs(fast.mean() - literal.mean()) < 5 * se * math.sqrt(2)
        assert fast.std() == pytest.approx(literal.std(), rel=0.03)
        for level in (0.025, 0.25, 0.5, 0.75, 0.975):
            # the values live on the sample's grid, so the quantiles should land on the same or a neighbouring
            # point
            a, b = np.quantile(fast, level), np.quantile(literal, level)
            assert abs(np.searchsorted(x, a) - np.searchsorted(x, b)) <= 1


def test_intervals_hold_for_large_samples():
    """Large samples go through both interval methods and bracket the true p99 (speed: make bench)."""
    x = np.random.default_rng(0).lognormal(0, 0.5, 200_000)
    true_p99 = float(np.exp(0.5 * 2.3263478740408408))
    for interval in (percentile_ci(x, 99), percentile_ci(x, 99, method="bootstrap", n_boot=2000)):
        low, high = interval[0], interval[1]
        assert low <= true_p99 <= high
    assert describe(x)["n"] == 200_000


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="no samples"):
        percentile_ci([], 50)
    with pytest.raises(ValueError, match="finite"):
        percentile_ci([1.0, float("nan")], 50)
    with pytest.raises(ValueError, match="method"):
        percentile_ci([1.0, 2.0], 50, method="jackknife")
    with pytest.raises(ValueError, match="confidence"):
        percentile_ci([1.0, 2.0], 50, confidence=95)


def test_student_t_quantiles_match_tables():
    # (p, df) → quantile, from standard tables (scipy.stats.t.ppf agrees to 1e-9)
    table = {(0.975, 1): 12.706204736, (0.975, 2): 4.302652730, (0.995, 5): 4.032142984,
             (0.995, 9): 3.249835542, (0.995, 30): 2.749995654, (0.975, 1e6): 1.959966}
    for (p, df), expected in table.items():
        assert student_t_quantile(p, df) == pytest.approx(expected, rel=1e-6)
    assert student_t_quantile(0.025, 4) == pytest.approx(-2.776445105, rel=1e-8)
    assert student_t_quantile(0.5, 3) == 0.0


# ---- describe
def test_describe_reports_moments_percentiles_intervals_and_outliers():
    x = np.concatenate([np.arange(1.0, 101.0), [1000.0]])
    d = describe(x)
    assert d["n"] == 101 and d["min"] == 1.0 and d["max"] == 1000.0
    assert d["mean"] == pytest.approx(x.mean()) and d["std"] == pytest.approx(x.std(ddof=1))
    assert d["cv"] == pytest.approx(d["std"] / d["mean"])
    assert d["p50"] == 51.0 and d["p90"] == pytest.approx(np.percentile(x, 90))
    assert d["q1"] == 26.0 and d["q3"] == 76.0 and d["iqr"] == 50.0
    assert d["outliers"] == {"count": 1, "fraction": pytest.approx(1 / 101), "low_fence": -49.0,
                             "high_fence": 151.0}
    assert d["ci95"]["p50"] == [41.0, 61.0] and d["ci95"]["p99"][1] is None
    assert "order statistics" in d["ci_method"]


def test_describe_of_nothing_is_none_not_zero():
    d = describe([])
    assert d["n"] == 0 and d["mean"] is None and d["p99"] is None and d["ci95"]["p99"] == [None, None]


def test_percentile_keys():
    assert [percentile_key(q) for q in (50, 90, 99, 99.9)] == ["p50", "p90", "p99", "p99.9"]
    assert "p99.9" in describe(np.arange(1.0, 50.0), percentiles=(50, 99.9))
