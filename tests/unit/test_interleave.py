"""Interleaved rounds: A B B A order, judged pair by pair after each pair, stop once answered or at the cap; the
paired statistics (t interval of the log ratios, Wilcoxon signed-rank) checked by hand and against scipy."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from console.analysis.interleave import MIN_ROUNDS, compare_paired, interleaved, signed_rank


def machine(slowdown: float, seed: int = 0, swing: float = 0.15, round_noise: float = 0.0):
    """A round runner for a jittery machine: each A/B pair of rounds shares the machine's state of the moment
    (up to ±15% between pairs), each round its own `round_noise` on top, iterations jitter 5%; B does
    `slowdown` more work."""
    rng = np.random.default_rng(seed)
    state = {"pair": -1, "level": 1.0}
    calls = []

    def run_round(side, k):
        calls.append((side, k))
        if k != state["pair"]:
            state.update(pair=k, level=float(np.exp(rng.normal(0, swing))))
        level = state["level"] * float(np.exp(rng.normal(0, round_noise)))
        return rng.lognormal(0, 0.05, 200) * level * ((1 + slowdown) if side == "B" else 1.0)

    return run_round, calls


def test_rounds_alternate_abba_and_stop_once_a_slowdown_is_shown():
    run_round, calls = machine(0.20)
    progress = []
    result = interleaved(run_round, question="slower", noise=0.05, on_progress=progress.append)
    assert result["answer"] == "yes" and result["verdict"] == "slower" and result["stopped"] == "answered"
    assert result["order"].startswith("ABBAABBAAB") and [side for side, _ in calls] == list(result["order"])
    rounds = result["rounds"]  # judged first after 8 pairs, then after every pair
    assert rounds == MIN_ROUNDS and result["looks"] == 1  # pairs share the machine's state: its swings cancel
    assert result["blocks"] == [rounds, rounds] and len(calls) == 2 * rounds
    assert result["decision"].startswith("B is ") and "B slower: yes" in result["decision"]
    looks = [e for e in progress if "look" in e]
    assert len(looks) == result["looks"] and looks[-1]["answer"] == "yes"
    assert all(e["answer"] == "undecided" for e in looks[:-1])


def test_a_repeat_is_answered_not_slower_when_the_interval_rules_it_out():
    run_round, _ = machine(0.0, seed=3, swing=0.02)
    result = interleaved(run_round, question="slower", noise=0.05, max_rounds=20)
    assert result["answer"] == "no" and result["ci95"][1] <= 1.05
    assert result["decision"].startswith("B slower: no, not beyond 5%")


def test_at_the_cap_the_decision_is_undecided_with_what_was_resolved():
    run_round, calls = machine(0.02, seed=5, swing=0.4, round_noise=0.05)  # on the band's edge, rounds 5% apart
    result = interleaved(run_round, question="slower", noise=0.02, max_rounds=9)
    assert result["answer"] == "undecided" and result["stopped"] == "cap" and result["rounds"] == 9
    assert len(calls) == 18 and result["looks"] == 2  # judged after 8 and after 9 pairs
    assert result["decision"].startswith("undecided after 9 interleaved rounds a side (the cap is 9): B is between")
    assert "cannot be resolved here" in result["decision"]


def test_interleaving_needs_sane_bounds_and_measured_rounds():
    run_round, _ = machine(0.0)
    with pytest.raises(ValueError, match="min_rounds"):
        interleaved(run_round, min_rounds=1)
    with pytest.raises(ValueError, match="max_rounds"):
        interleaved(run_round, max_rounds=7)
    with pytest.raises(ValueError, match="measured no iterations"):
        interleaved(lambda side, k: [], max_rounds=8)


def test_signed_rank_matches_scipy_and_enumeration():
    rng = np.random.default_rng(4)
    for n in (3, 8, 13, 30):
        d = rng.normal(0.2, 1, n)
        assert signed_rank(d)["p_value"] == pytest.approx(stats.wilcoxon(d, method="exact").pvalue, rel=1e-12)
    d = np.array([1.0, 1.0, 2.0, -0.5, 3.0, 3.0, 4.0, -1.0])  # ties: exact over the sign patterns of these ranks
    magnitudes = stats.rankdata(np.abs(d))
    w = magnitudes[d > 0].sum()
    patterns = [sum(r for r, s in zip(magnitudes, signs, strict=True) if s)
                for signs in itertools.product((0, 1), repeat=d.size)]
    expected = 2 * min(sum(x <= w for x in patterns), sum(x >= w for x in patterns)) / 2 ** d.size
    assert signed_rank(d)["p_value"] == pytest.approx(min(1.0, expected))
    assert signed_rank(np.ones(8))["p_value"] == signed_rank(np.ones(8))["p_floor"] == pytest.approx(2 / 256)
    assert signed_rank(np.ones(7))["p_floor"] > 0.01  # why a paired comparison needs 8 pairs for p < 0.01
    big = np.round(rng.normal(0.3, 1, 80), 1)  # over 50: normal approximation with tie correction
    assert signed_rank(big)["p_value"] == pytest.approx(
        stats.wilcoxon(big, correction=True, method="approx").pvalue, rel=1e-9)


def test_compare_paired_is_a_t_interval_of_the_pairs_log_ratios():
    rng = np.random.default_rng(2)
    levels = np.exp(rng.normal(0, 0.3, 10))  # the machine swings 30% between pairs …
    rounds_a = [rng.lognormal(0, 0.02, 100) * level for level in levels]
    rounds_b = [rng.lognormal(0, 0.02, 100) * level * 1.1 for level in levels]  # … B is 10% slower in each
    result = compare_paired(rounds_a, rounds_b)
    d = np.log([np.median(b) / np.median(a) for a, b in zip(rounds_a, rounds_b, strict=True)])
    half = stats.t.ppf(0.975, 9) * d.std(ddof=1) / math.sqrt(10)
    assert result["ratio"] == pytest.approx(math.exp(d.mean()))
    assert result["ci95"] == pytest.approx([math.exp(d.mean() - half), math.exp(d.mean() + half)])
    assert result["verdict"] == "slower" and result["p_value"] == pytest.approx(2 / 1024)
    assert result["p_label"] == "paired test p" and "signed-rank" in result["p_method"]
    assert result["pairs"] == 10 and result["blocks"] == [10, 10] and result["mde"] < 0.1
    with pytest.raises(ValueError, match="as many rounds"):
        compare_paired(rounds_a, rounds_b[:-1])
