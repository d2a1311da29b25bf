"""The summary card says which stability verdict a valid run got, and puts the machine's noise beside its latency
figures (console.analysis.drift stores both under validity.stability)."""

import pytest

pytest.importorskip("pytestqt")

from widgets.summary_card import SummaryCard  # noqa: E402


def summary(stability, valid=True):
    return {"valid": valid, "invalid_reasons": [] if valid else [{"rule": "drift", "detail": "d", "fix": "f"}],
            "latency_ms": {"p50": 1.0, "min": 0.9, "max": 2.0}, "validity": {"stability": stability}}


def test_a_jittery_valid_run_says_so_and_states_the_noise_beside_the_figures(qtbot):
    card = SummaryCard()
    qtbot.addWidget(card)
    card.show()
    card.set_summary(summary({"verdict": "jittery", "text": "jittery machine (noise 15%), no drift", "noise": 0.15}))
    assert card.verdict_text() == "VALID — jittery machine (noise 15%), no drift"
    assert "machine noise 15% between windows" in card.figure_tooltip("p50")
    card.set_summary(summary({"verdict": "stable", "text": "stable", "noise": 0.04}))
    assert card.verdict_text() == "VALID" and "machine noise 4%" in card.figure_tooltip("p50")
    unresolved = "stable; no drift shown, but drifts under 25% cannot be resolved by 10 windows that jitter 8%"
    card.set_summary(summary({"verdict": "stable", "text": unresolved, "noise": 0.04}))
    assert card.verdict_text() == f"VALID — {unresolved}"  # what the run could not rule out is on the card
    card.set_summary(summary({"verdict": "drift", "text": "drift: latency rose 20% over the run", "noise": 0.05},
                             valid=False))
    assert card.verdict_text() == "INVALID — 1 rule not met"
    assert card.verdict_tooltip() == "drift: latency rose 20% over the run"
    card.set_summary(summary({"spread": 0.02}))  # a run judged before the drift test: no made-up noise
    assert card.verdict_text() == "VALID" and "noise" not in card.figure_tooltip("p50")
