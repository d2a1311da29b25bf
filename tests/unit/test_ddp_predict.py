"""engines.ddp.predict.allreduce: a step's buckets against measured busbw rows, t = Σ 2(n−1)/n · B / busbw(B)."""

from __future__ import annotations

import math

import pytest

from engines.ddp.predict import allreduce

ROWS = [{"size_bytes": 1_000_000, "time_us": 1.0, "algbw_gbs": 1.0, "busbw_gbs": 2.0, "trials": 5},
        {"size_bytes": 10_000_000, "time_us": 1.0, "algbw_gbs": 1.0, "busbw_gbs": 4.0, "trials": 5}]


def test_one_bucket_at_a_row_size_is_the_formula():
    p = allreduce([1_000_000], 4, ROWS, source="probe in this run")
    assert p["predicted_s"] == pytest.approx(2 * 3 / 4 * 1_000_000 / 2.0e9, rel=1e-12)
    assert p["per_bucket"] == [{"bytes": 1_000_000, "busbw_gbs": 2.0, "predicted_s": p["predicted_s"]}]
    assert p["busbw_source"] == "probe in this run" and p["notes"] == [] and "2(n-1)/n" in p["formula"]


def test_busbw_between_rows_is_interpolated_log_log_and_buckets_add():
    middle = int(math.sqrt(1e6 * 1e7))
    p = allreduce([middle, 10_000_000], 2, ROWS, source="collectives run abcd1234")
    assert p["per_bucket"][0]["busbw_gbs"] == pytest.approx(math.sqrt(2.0 * 4.0), rel=1e-4)
    assert p["predicted_s"] == pytest.approx(sum(b["predicted_s"] for b in p["per_bucket"]))
    assert p["per_bucket"][1]["predicted_s"] == pytest.approx(1.0 * 10_000_000 / 4.0e9)


def test_outside_the_rows_the_nearest_row_is_used_and_said():
    p = allreduce([100, 50_000_000], 2, ROWS, source="probe in this run")
    assert [b["busbw_gbs"] for b in p["per_bucket"]] == [2.0, 4.0]
    assert any("below" in n for n in p["notes"]) and any("above" in n for n in p["notes"])


def test_measured_beside_predicted_with_their_ratio():
    p = allreduce([10_000_000], 2, ROWS, source="probe in this run", measured_s=0.005)
    assert p["measured_s"] == 0.005 and p["ratio"] == pytest.approx(0.005 / 0.0025)
    assert allreduce([10_000_000], 2, ROWS, source="x")["ratio"] is None  # nothing measured: no ratio


def test_repeated_sizes_take_their_median_and_failed_rows_are_skipped():
    rows = [*ROWS, {"size_bytes": 1_000_000, "busbw_gbs": 8.0}, {"size_bytes": 1_000_000, "busbw_gbs": 5.0},
            {"size_bytes": 2_000_000, "busbw_gbs": None}, {"size_bytes": 3_000_000, "busbw_gbs": 0.0}]
    assert allreduce([1_000_000], 2, rows, source="x")["per_bucket"][0]["busbw_gbs"] == 5.0


def test_no_rows_or_one_rank_give_no_prediction_and_say_why():
    none = allreduce([1_000_000], 2, [], source="probe in this run", measured_s=0.01)
    assert none["predicted_s"] is None and none["ratio"] is None and "not available" in none["notes"][0]
    one = allreduce([1_000_000], 1, ROWS, source="probe in this run")
    assert one["predicted_s"] is None and "one rank" in one["notes"][0]


@pytest.mark.parametrize("buckets, rows, words", [
    ([], ROWS, "no gradient buckets"),
    ([0], ROWS, "bucket 0"),
    ([1.5], ROWS, "bucket 0"),
    ([100], [{"busbw_gbs": 1.0}], "row 0"),
    ([100], [{"size_bytes": -5, "busbw_gbs": 1.0}], "row 0"),
])
def test_bad_input_is_named(buckets, rows, words):
    with pytest.raises(ValueError, match=words):
        allreduce(buckets, 2, rows, source="x")
    with pytest.raises(ValueError, match="ranks"):
        allreduce([100], 0, ROWS, source="x")
