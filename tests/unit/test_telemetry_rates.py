"""CounterRates: per-second rates from cumulative counters, the first reading priming, going backwards skipping."""

from __future__ import annotations

import pytest

from console.telemetry.rates import CounterRates

S = 1_000_000_000


def test_rates_over_the_interval_since_the_previous_reading():
    rates = CounterRates()
    assert rates.update((1000, 10), 0) is None  # the first reading only primes
    assert rates.update((3000, 10), S // 2) == pytest.approx([4000.0, 0.0])
    assert rates.update((3600, 13), S) == pytest.approx([1200.0, 6.0])


def test_a_counter_going_backwards_skips_one_interval_then_counts_from_the_new_value():
    rates = CounterRates()
    rates.update((5000, 50), 0)
    assert rates.update((100, 60), S) is None  # wrapped or reset (device re-attached): never negative
    assert rates.update((300, 70), 2 * S) == pytest.approx([200.0, 10.0])


def test_no_time_elapsed_gives_no_rate():
    rates = CounterRates()
    rates.update((1,), S)
    assert rates.update((2,), S) is None
    assert rates.update((4,), S // 2) is None  # a clock that went back: no interval
    assert rates.update((5,), S) == pytest.approx([2.0])


def test_reset_primes_again():
    rates = CounterRates()
    rates.update((1,), 0)
    rates.reset()
    assert rates.update((100,), S) is None
    assert rates.update((101,), 2 * S) == pytest.approx([1.0])


def test_a_reading_of_another_size_is_a_bug_not_a_rate():
    rates = CounterRates()
    rates.update((1, 2), 0)
    with pytest.raises(ValueError):
        rates.update((1, 2, 3), S)
