"""Machine-card figures repeat until their median's 95% interval is inside the goal, or say the machine's noise
is why (engines/machine/repeat.until_precise); the card table and `labconsole machine` show both. A fake clock:
nothing here depends on timing."""

from __future__ import annotations

import itertools

import pytest

from console.cli.machine_cmd import card_lines
from console.machine.table import ceiling_rows, format_spread, repeats_text, view_columns
from engines.machine.repeat import median_interval, until_precise


class Clock:
    """Advances `step` seconds per repeat (called by the fake measurement)."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        return self.now

    def tick(self) -> None:
        self.now += self.step


def measurement(values, clock: Clock):
    source = itertools.cycle(values)

    def once() -> float:
        clock.tick()
        return next(source)
    return once


def test_median_interval_is_the_order_statistic_interval_with_binomial_coverage():
    assert median_interval([5, 1, 4, 2, 3]) == (1, 5, 0.9375)  # too few for 95%: min–max and what it covers
    low, high, coverage = median_interval(list(range(20)))
    assert (low, high) == (5, 14) and coverage == pytest.approx(0.9586, abs=1e-4)
    with pytest.raises(ValueError):
        median_interval([])


def test_a_quiet_figure_stops_as_soon_as_its_interval_is_inside_the_goal():
    clock = Clock(0.1)
    seen = []
    median, spread, values = until_precise(measurement([100.0, 101.0, 99.0], clock), 3, goal=0.05, max_s=10,
                                           on_repeat=seen.append, clock=clock)
    assert len(values) == 6 and seen == list(range(6))  # six: the fewest with a 95% interval
    assert median == 100.0 and spread["interval"] == [99.0, 101.0] and spread["within_goal"]
    assert spread["stopped"] == "goal" and spread["note"] is None and spread["level"] >= 0.95
    assert spread["half_width"] == pytest.approx(0.01)


def test_a_noisy_figure_stops_at_the_time_cap_and_says_the_noise_is_why():
    clock = Clock(1.0)
    noisy = [100.0, 60.0, 140.0, 80.0, 125.0]
    median, spread, values = until_precise(measurement(noisy, clock), 5, goal=0.05, max_s=12, clock=clock)
    assert len(values) == 12 and spread["stopped"] == "time" and not spread["within_goal"]
    assert spread["seconds"] == 12.0
    assert spread["note"].startswith(f"interval ±{spread['half_width'] * 100:.1f}% is wider than the ±5% goal "
                                     "after 12 repeats (the 12 s cap) because of this machine's noise (cv ")
    assert f"cv {spread['cv'] * 100:.1f}% between repeats" in spread["note"]


def test_the_repeat_cap_and_bad_arguments():
    clock = Clock(0.0)
    _, spread, values = until_precise(measurement([1.0, 2.0], clock), 2, max_s=99, max_repeats=8, clock=clock)
    assert len(values) == 8 and spread["stopped"] == "repeats" and "the cap of 8 repeats" in spread["note"]
    with pytest.raises(ValueError, match="at least 1"):
        until_precise(lambda: 1.0, 0)
    with pytest.raises(ValueError, match="max_repeats"):
        until_precise(lambda: 1.0, 5, max_repeats=3)


def card() -> dict:
    return {"target": "cpu", "device_name": "Test CPU", "host": "lab", "measured_at": "2026-01-02T03:04:05Z",
            "quick": False, "repeats": 5, "precision": {"goal": 0.05, "level": 0.95, "cap_s": 10.0,
                                                        "minimum_repeats": 5},
            "peak_flops": {"fp32": 4.0e10}, "memory_bandwidth_gbs": 5.0, "call_floor_us": {"torch": 3.0},
            "spread": {
                "peak_flops.fp32": {"min": 3.8e10, "max": 4.1e10, "cv": 0.02, "n": 6, "interval": [3.9e10, 4.1e10],
                                    "level": 0.97, "half_width": 0.025, "within_goal": True, "stopped": "goal",
                                    "note": None},
                "memory_bandwidth_gbs": {"min": 3.0, "max": 7.0, "cv": 0.14, "n": 13, "interval": [4.4, 5.6],
                                         "level": 0.98, "half_width": 0.12, "within_goal": False, "stopped": "time",
                                         "note": "interval ±12.0% is wider than the ±5% goal after 13 repeats (the "
                                                 "10 s cap) because of this machine's noise (cv 14.0% between "
                                                 "repeats)"}},
            "method": {"peak_flops.fp32": "torch.matmul, median of 6"}, "not_available": {}}


def test_the_table_shows_the_interval_and_the_noise_note():
    assert format_spread(card()["spread"]["peak_flops.fp32"], "flops") == "39–41 GFLOP/s (97% CI, ±2.5%), cv 2.0%, n=6"
    rows = {row["key"]: row for row in ceiling_rows(card())}
    assert rows["peak_flops.fp32"]["noise"] == ""
    assert "because of this machine's noise (cv 14.0%" in rows["memory_bandwidth_gbs"]["noise"]
    assert repeats_text(card()) == "≥ 5, until ±5% (≤ 10 s each)"
    assert repeats_text({"repeats": 5}) == "5"  # a card from before: fixed repeats
    columns, _ = view_columns([card()])
    assert columns[0]["header"]["repeats"] == "≥ 5, until ±5% (≤ 10 s each)"
    assert columns[0]["cells"]["memory_bandwidth_gbs"]["noise"].startswith("interval ±12.0%")


def test_labconsole_machine_prints_the_noise_note_under_the_figure():
    lines = card_lines(card())
    assert "≥ 5, until ±5% (≤ 10 s each) repeats" in lines[0]
    assert "spread (median's 95% interval, cv, n)" in lines[2]
    at = next(i for i, line in enumerate(lines) if line.startswith("Memory bandwidth"))
    assert "4.4–5.6 GB/s (98% CI, ±12.0%), cv 14.0%, n=13" in lines[at]
    assert lines[at + 1].strip().startswith("noise: interval ±12.0% is wider than the ±5% goal")
