"""Interleaved rounds: A B B A order, pooled rounds judged after each pair, stop once answered or at the cap."""

import numpy as np
import pytest

from console.analysis.interleave import MIN_ROUNDS, interleaved


def machine(slowdown: float, seed: int = 0, swing: float = 0.15):
    """A round runner for a jittery machine: each A/B pair of rounds shares the machine's state of the moment
    (up to ±15% between pairs), iterations jitter 5% around it; B does `slowdown` more work."""
    rng = np.random.default_rng(seed)
    state = {"pair": -1, "level": 1.0}
    calls = []

    def run_round(side, k):
        calls.append((side, k))
        if k != state["pair"]:
            state.update(pair=k, level=float(np.exp(rng.normal(0, swing))))
        return rng.lognormal(0, 0.05, 200) * state["level"] * ((1 + slowdown) if side == "B" else 1.0)

    return run_round, calls


def test_rounds_alternate_abba_and_stop_once_a_slowdown_is_shown():
    run_round, calls = machine(0.20)
    progress = []
    result = interleaved(run_round, question="slower", noise=0.05, on_progress=progress.append)
    assert result["answer"] == "yes" and result["verdict"] == "slower" and result["stopped"] == "answered"
    assert result["order"].startswith("ABBAABBAAB") and [side for side, _ in calls] == list(result["order"])
    rounds = result["rounds"]  # judged first after 5 rounds a side, then after every pair
    assert MIN_ROUNDS <= rounds < 12 and result["looks"] == rounds - MIN_ROUNDS + 1
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
    run_round, calls = machine(0.03, seed=5, swing=0.4)  # 3% on a machine that swings 40%: not resolvable
    result = interleaved(run_round, question="slower", noise=0.02, max_rounds=6)
    assert result["answer"] == "undecided" and result["stopped"] == "cap" and result["rounds"] == 6
    assert len(calls) == 12 and result["looks"] == 2  # judged after 5 and after 6 rounds a side
    assert result["decision"].startswith("undecided after 6 interleaved rounds a side (the cap is 6): B is between")
    assert "cannot be resolved here" in result["decision"]


def test_interleaving_needs_sane_bounds_and_measured_rounds():
    run_round, _ = machine(0.0)
    with pytest.raises(ValueError, match="min_rounds"):
        interleaved(run_round, min_rounds=1)
    with pytest.raises(ValueError, match="max_rounds"):
        interleaved(run_round, max_rounds=3)
    with pytest.raises(ValueError, match="measured no iterations"):
        interleaved(lambda side, k: [], max_rounds=5)
