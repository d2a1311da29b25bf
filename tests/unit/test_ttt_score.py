"""MLPerf Training's score over time-to-train runs (console.ttt.score) and the run options' checks
(engines.ttt.options): pure Python, no torch."""

import math

import pytest

from console.ttt.score import score
from engines.ttt.errors import TimeToTrainError
from engines.ttt.options import normalize


def run(seconds, energy=None, reached=True):
    return {"reached": reached, "time_to_train_s": seconds if reached else None, "energy_j": energy,
            "energy_method": "not available: no /sys/class/powercap" if energy is None else "counter: RAPL"}


def test_drops_the_fastest_and_the_slowest_and_averages_the_rest():
    results = [run(5.0, 50), run(3.0, 30), run(9.0, 90), run(4.0, 40), run(6.0, 60)]
    scored = score(results)
    assert scored["dropped"] == {"fastest": 1, "slowest": 2}
    assert scored["used"] == [0, 3, 4]
    assert scored["score_s"] == pytest.approx(5.0)  # (5 + 4 + 6) / 3
    assert scored["energy_score_j"] == pytest.approx(50.0)
    assert scored["runs"] == 5 and scored["reached"] == 5 and scored["why"] is None
    assert "fastest and the slowest" in scored["rule"]


def test_a_run_that_missed_the_target_is_the_dropped_slowest():
    scored = score([run(5.0), run(None, reached=False), run(4.0), run(7.0), run(6.0)])
    assert scored["dropped"] == {"fastest": 2, "slowest": 1}
    assert scored["score_s"] == pytest.approx(6.0)  # 5, 7, 6
    assert scored["reached"] == 4
    # a "reached" run without a time is no time either: it counts as infinitely slow, not as 0
    assert score([run(5.0), {"reached": True, "time_to_train_s": None}, run(4.0), run(6.0)])["dropped"]["slowest"] == 1


def test_two_runs_that_missed_give_no_score_and_say_why():
    scored = score([run(5.0), run(None, reached=False), run(4.0), run(None, reached=False), run(6.0)])
    assert scored["score_s"] is None and scored["energy_score_j"] is None
    assert "2 runs (#2, #4) did not reach the target" in scored["why"]
    assert "--max-steps" in scored["fix"]


@pytest.mark.parametrize("count", [0, 1, 2])
def test_fewer_than_three_runs_give_no_score_with_the_fix(count):
    scored = score([run(5.0)] * count)
    assert scored["score_s"] is None and scored["used"] == []
    assert "at least 3" in scored["why"] and "--runs 5" in scored["fix"]


def test_three_runs_score_the_middle_one_and_ties_drop_one_each():
    assert score([run(2.0), run(1.0), run(3.0)])["score_s"] == 2.0
    scored = score([run(2.0), run(2.0), run(2.0)])
    assert scored["dropped"] == {"fastest": 0, "slowest": 2} and scored["used"] == [1]


def test_energy_score_is_none_with_the_reason_when_a_used_run_has_no_reading():
    scored = score([run(5.0, 50), run(3.0), run(9.0, 90), run(4.0, 40)])
    assert scored["score_s"] == pytest.approx(4.5)  # 5 and 4: 3 (no energy) was the dropped fastest
    assert scored["energy_score_j"] == pytest.approx(45.0)
    scored = score([run(5.0, 50), run(3.0, 30), run(9.0, 90), run(4.0)])
    assert scored["energy_score_j"] is None and "no /sys/class/powercap" in scored["energy_why"]
    assert math.isfinite(scored["score_s"])


def test_options_fill_defaults_and_refuse_what_cannot_run_with_the_fix():
    opts = normalize({"ranks": 2})
    assert opts["global_batch"] == 128 and opts["target_quality"] == 0.9 and opts["placement"] == "local"
    cases = [({"ranks": 3}, "does not split over 3 ranks", "multiple of 3"),
             ({"batch": 4}, "unknown time-to-train option", "use only"),
             ({"target_quality": 0}, "--target 0 is outside", "above 0"),
             ({"target_quality": 1.5}, "outside", "at most 1"),
             ({"target_quality": float("nan")}, "not a finite number", "accuracy"),
             ({"ranks": 0}, "--ranks 0 is outside", "1 or more"),
             ({"ranks": True}, "not a whole number", "ranks"),
             ({"eval_every": 50, "max_steps": 10}, "never be evaluated", "at most --max-steps"),
             ({"n_train": 64}, "smaller than one global batch", "n_train"),
             ({"backend": "mpi"}, "unknown backend", "gloo"),
             ({"task_params": [1]}, "not a {name: value} mapping", "hidden"),
             ({"cluster": " "}, "not an address", "HOST:PORT")]
    for given, problem, fix in cases:
        with pytest.raises(TimeToTrainError) as caught:
            normalize(given)
        assert problem in caught.value.message, (given, caught.value.message)
        assert fix in caught.value.fix, (given, caught.value.fix)
        assert caught.value.is_bad_input
