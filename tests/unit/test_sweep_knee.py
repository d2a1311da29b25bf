"""The knee (console.sweep.knee): the smallest value reaching 90% of its series' best throughput;
its one-line text comes from console.sweep.presentation."""

from __future__ import annotations

import pytest
from sweep_samples import measured_point, saturating_points

from console.sweep import KNEE_FRACTION, analyse, knee_text


def test_knee_is_the_smallest_batch_reaching_90_percent_of_the_series_best():
    result = analyse(saturating_points(), ["threads", "batch"])
    assert result["knee_axis"] == "batch"
    knees = {k["series"]: k for k in result["knees"]}
    assert set(knees) == {"1 thread", "2 threads"}
    assert knees["1 thread"]["value"] == 4 and knees["2 threads"]["value"] == 8
    assert knees["1 thread"]["fraction_of_max"] == pytest.approx(2700 / 2850)
    assert knees["1 thread"]["fraction_of_max"] >= KNEE_FRACTION
    overall = result["knee"]
    assert overall["series"] == "2 threads" and overall["label"] == "2 threads · b8" and overall["run_id"] == "run8"
    assert overall["beyond"] == "2 threads · b16"
    assert overall["gain_beyond_pct"] == pytest.approx((5300 / 5200 - 1) * 100)
    assert overall["p99_growth_beyond_pct"] == pytest.approx(100.0)
    assert not overall["at_end"]
    text = knee_text(overall)
    assert "knee at 2 threads · b8" in text and "+2%" in text and "p99 by +100%" in text


def test_knee_ignores_failed_points_and_order_of_arrival():
    points = saturating_points()[:5]
    points[2] = measured_point(2, 4, None, 1.0, status="failed")
    shuffled = [points[i] for i in (4, 0, 3, 2, 1)]
    knee = analyse(shuffled, ["batch"])["knee"]
    assert knee["value"] == 8 and knee["series"] == ""  # 2800 ≥ 0.9 × 2850; batch 4 failed


def test_a_curve_still_rising_says_so():
    points = [measured_point(i, b, t, 1.0) for i, (b, t) in enumerate(((1, 100), (2, 200), (4, 400)))]
    knee = analyse(points, ["batch"])["knee"]
    assert knee["value"] == 4 and knee["at_end"] and knee["beyond"] is None
    assert "still rising" in knee_text(knee)


def test_no_knee_without_a_curve():
    one_each = [measured_point(0, 1, 100, 1.0, threads=1), measured_point(1, 1, 150, 1.0, threads=2)]
    assert analyse(one_each, ["threads"])["knee"]["value"] == 2  # threads is the knee axis here
    precision_only = [{**measured_point(0, 1, 100, 1.0), "point": {"precision": "fp32"}},
                      {**measured_point(1, 1, 120, 1.0), "point": {"precision": "bf16"}}]
    result = analyse(precision_only, ["precision"])
    assert result == {"knee_axis": None, "knees": [], "knee": None}
    assert "sweep batch" in knee_text(None, None)
    lonely = [measured_point(0, 1, 100, 1.0), measured_point(1, 2, None, 1.0, status="failed")]
    assert analyse(lonely, ["batch"])["knee"] is None
    assert "no series has two completed points" in knee_text(None, "batch")
