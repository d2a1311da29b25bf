"""The console's statistics (numpy only, no scipy at run time) checked against scipy.stats as an oracle.

Tolerances, stated per check: exact arithmetic (U statistics, order-statistic ranks, sample sizes, weighted
medians) must agree exactly; closed-form p-values and CDFs to a relative 1e-9 (1e-7 for the log-space binomial
sum; the t quantile's CDF to 1e-9 absolute, the quantile to 1e-6); bootstrap intervals, which are Monte Carlo on both sides,
within two order statistics of scipy's (about 0.15 ranks of Monte Carlo error at 20 000 resamples, plus the
interval's discreteness), and the bootstrap distributions alike by a two-sample KS test.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from console.analysis import compare as compare_module
from console.analysis.compare import mann_whitney_u
from console.analysis.stats import (
    binomial_cdf,
    bootstrap_percentiles,
    describe,
    min_samples_for_percentile,
    percentile_ci,
    student_t_quantile,
)
from engines.scenarios._timing import percentile as engine_percentile

ORACLE = settings(derandomize=True, max_examples=120, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow])
P_RTOL = 1e-9

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
distinct = st.lists(finite, min_size=1, max_size=24, unique=True)
tied = st.lists(st.integers(0, 6).map(float), min_size=1, max_size=60)


# ---- Mann-Whitney U
@ORACLE
@given(st.lists(finite, min_size=2, max_size=40, unique=True), st.data())
def test_exact_mann_whitney_matches_scipy(pool, data):
    cut = data.draw(st.integers(1, len(pool) - 1))
    a, b = pool[:cut], pool[cut:]
    ours = mann_whitney_u(a, b, method="exact")
    theirs = sps.mannwhitneyu(a, b, alternative="two-sided", method="exact")
    assert ours["u"] == theirs.statistic
    assert ours["p_value"] == pytest.approx(theirs.pvalue, rel=P_RTOL, abs=1e-15)


@ORACLE
@given(tied, tied)
def test_asymptotic_mann_whitney_with_ties_matches_scipy(a, b):
    ours = mann_whitney_u(a, b, method="asymptotic")
    theirs = sps.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    assert ours["u"] == theirs.statistic
    if len(set(a) | set(b)) == 1:  # every value equal: no evidence either way (scipy divides 0 by 0)
        assert ours["p_value"] == 1.0 and ours["u"] == len(a) * len(b) / 2
    else:
        assert ours["p_value"] == pytest.approx(theirs.pvalue, rel=P_RTOL, abs=1e-15)


@pytest.mark.parametrize("shift", [0.0, 0.01, 0.05, 0.3])
def test_large_samples_match_scipy_asymptotic(shift):
    rng = np.random.default_rng(7)
    a = rng.lognormal(0.0, 0.2, 3000)
    b = rng.lognormal(shift, 0.2, 2500)
    ours = mann_whitney_u(a, b)
    theirs = sps.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic")
    assert ours["method"].startswith("normal approximation")
    assert ours["u"] == theirs.statistic
    assert ours["p_value"] == pytest.approx(theirs.pvalue, rel=P_RTOL, abs=1e-300)


@pytest.mark.parametrize("a, b", [([1.0], [2.0]), ([1.0], [1.0]), ([3.0, 1.0], [2.0]), ([5.0] * 4, [5.0] * 7),
                                  ([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])])
def test_tiny_and_equal_samples(a, b):
    ours = mann_whitney_u(a, b)
    theirs = sps.mannwhitneyu(a, b, alternative="two-sided")
    assert ours["u"] == theirs.statistic
    expected = 1.0 if math.isnan(theirs.pvalue) else theirs.pvalue
    assert ours["p_value"] == pytest.approx(expected, rel=P_RTOL)


# ---- Binomial tail, LoadGen's sample bound, Student's t
@ORACLE
@given(st.integers(0, 3000), st.integers(1, 3000), st.floats(1e-4, 1 - 1e-4))
def test_binomial_cdf_matches_scipy(k, n, p):
    assert binomial_cdf(k, n, p) == pytest.approx(sps.binom.cdf(k, n, p), rel=1e-7, abs=1e-300)


@pytest.mark.parametrize("q", [50, 90, 95, 99, 99.9])
@pytest.mark.parametrize("overlatency", [0, 1, 3])
@pytest.mark.parametrize("confidence", [0.9, 0.99])
def test_min_samples_is_the_smallest_n_scipy_agrees_passes(q, overlatency, confidence):
    p = q / 100
    n = np.arange(1, 80_000)
    passes = sps.binom.cdf(overlatency, n, 1 - p) < 1 - confidence
    assert min_samples_for_percentile(q, confidence=confidence, overlatency=overlatency) == int(n[passes][0])


def test_loadgen_published_bounds():
    assert [min_samples_for_percentile(q) for q in (50, 90, 99, 99.9)] == [11, 64, 662, 6636]


@pytest.mark.parametrize("df", [1, 2, 3, 4.5, 9, 30, 200])
@pytest.mark.parametrize("p", [0.55, 0.9, 0.975, 0.995, 0.9995])
def test_student_t_quantile_matches_scipy(p, df):
    # The quantile inverts a numerically integrated CDF (accurate to ~1e-9), so scipy's CDF at our quantile must
    # give back p to 1e-9; the quantile itself then agrees to 1e-6 except far in a heavy tail, where the density
    # is tiny and a 1e-9 CDF error moves it more (df=1, p=0.9995: 1.8e-6), hence 1e-5 there.
    for prob in (p, 1 - p):
        ours = student_t_quantile(prob, df)
        assert sps.t.cdf(ours, df) == pytest.approx(prob, abs=1e-9)
        assert ours == pytest.approx(sps.t.ppf(prob, df), rel=1e-5 if df == 1 and p > 0.999 else 1e-6)


# ---- Percentiles and their distribution-free interval
@ORACLE
@given(st.lists(finite, min_size=1, max_size=200), st.floats(0, 100))
def test_engine_percentile_matches_numpy(values, q):
    assert engine_percentile(values, q) == pytest.approx(np.percentile(values, q), rel=1e-12, abs=1e-9)


@ORACLE
@given(st.lists(finite, min_size=1, max_size=300))
def test_describe_percentiles_are_numpys(values):
    summary = describe(values)
    for q in (50, 90, 99):
        assert summary[f"p{q}"] == pytest.approx(np.percentile(values, q), rel=1e-12, abs=1e-9)
    assert summary["q1"] == pytest.approx(np.percentile(values, 25), rel=1e-12, abs=1e-9)


def _order_interval_by_scipy(n, p, confidence):
    """1-based ranks (l, u): the largest l with P[B ≤ l − 1] ≤ α/2, the smallest u with P[B ≤ u − 1] ≥ 1 − α/2."""
    alpha = 1 - confidence
    ranks = np.arange(1, n + 1)
    cdf = sps.binom.cdf(ranks - 1, n, p)
    low = ranks[cdf <= alpha / 2]
    high = ranks[cdf >= 1 - alpha / 2]
    return (int(low[-1]) if low.size else None), (int(high[0]) if high.size else None)


@ORACLE
@given(st.integers(1, 2000), st.sampled_from([5, 25, 50, 90, 95, 99, 99.9]), st.sampled_from([0.8, 0.95, 0.99]))
def test_order_statistic_interval_ranks_match_scipy_binomial(n, q, confidence):
    x = np.arange(1, n + 1, dtype=np.float64)  # the value is its rank
    low, high = percentile_ci(x[::-1], q, confidence=confidence)
    expect_low, expect_high = _order_interval_by_scipy(n, q / 100, confidence)
    assert (low, high) == (expect_low, expect_high)
    if low is not None and high is not None:  # the coverage the ranks promise, by scipy
        coverage = sps.binom.cdf(high - 1, n, q / 100) - sps.binom.cdf(low - 1, n, q / 100)
        assert coverage >= confidence - 1e-12


# ---- Bootstrap
BOOT = 20_000
DATASETS = {
    "normal, odd n, median": (np.random.default_rng(1).normal(10, 2, 101), 50),
    "lognormal, p90": (np.random.default_rng(2).lognormal(0, 0.5, 300), 90),
    "ties, median": (np.random.default_rng(3).integers(0, 6, 200).astype(float), 50),
    "tiny n=5, median": (np.array([3.0, 1.0, 4.0, 1.5, 9.0]), 50),
    "two values, p75": (np.array([1.0] * 30 + [2.0] * 10), 75),
}


def _within_two_order_statistics(x_sorted, ours, theirs):
    rank = int(np.searchsorted(x_sorted, theirs))
    low = x_sorted[max(rank - 3, 0)]
    high = x_sorted[min(rank + 2, x_sorted.size - 1)]
    return low - 1e-12 <= ours <= high + 1e-12


@pytest.mark.parametrize("name", list(DATASETS))
def test_bootstrap_interval_matches_scipy_bootstrap(name):
    x, q = DATASETS[name]
    ours = percentile_ci(x, q, confidence=0.95, n_boot=BOOT, seed=5, method="bootstrap")
    theirs = sps.bootstrap((x,), lambda s, axis: np.percentile(s, q, axis=axis), n_resamples=BOOT,
                           method="percentile", confidence_level=0.95, random_state=np.random.default_rng(6),
                           batch=2000)
    x_sorted = np.sort(x)
    for mine, scipys in zip(ours, (theirs.confidence_interval.low, theirs.confidence_interval.high), strict=True):
        assert _within_two_order_statistics(x_sorted, mine, scipys), (name, ours, theirs.confidence_interval)


@pytest.mark.parametrize("name", list(DATASETS))
def test_bootstrap_distribution_matches_scipys(name):
    x, q = DATASETS[name]
    ours = bootstrap_percentiles(x, q, n_boot=BOOT, rng=np.random.default_rng(8))
    theirs = sps.bootstrap((x,), lambda s, axis: np.percentile(s, q, axis=axis), n_resamples=BOOT,
                           method="percentile", random_state=np.random.default_rng(9),
                           batch=2000).bootstrap_distribution
    assert sps.ks_2samp(ours, theirs).pvalue > 1e-3
    assert np.mean(ours) == pytest.approx(np.mean(theirs), abs=0.05 * (np.std(theirs) + 1e-12))


@ORACLE
@given(st.lists(st.lists(st.integers(0, 40).map(float), min_size=1, max_size=12), min_size=2, max_size=6),
       st.data())
def test_block_bootstrap_medians_match_literal_resamples(groups, data):
    k = len(groups)
    weights = np.array(data.draw(st.lists(st.lists(st.integers(0, 3), min_size=k, max_size=k)
                                          .filter(lambda row: sum(row) > 0), min_size=1, max_size=8)))
    ours = compare_module._weighted_group_medians([np.sort(g) for g in groups], weights)
    literal = [np.median(np.concatenate([g for g, w in zip(groups, row, strict=True) for _ in range(w)]))
               for row in weights]
    np.testing.assert_array_equal(ours, literal)
