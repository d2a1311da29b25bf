"""Sweep records for people and programs (console.sweep.presentation): chart series with the knee.

The knee's one-line text is tested with the knee (test_sweep_knee.py), the record rebuilt from the history with
the history's sweep tables (test_history_sweeps.py), the CLI's JSON document end to end (e2e/test_sweep_e2e.py)."""

from __future__ import annotations

from sweep_samples import BASE, saturating_points

from console.sweep import analyse, chart_data


def test_chart_data_is_plain_series_with_the_knee():
    points = saturating_points()
    record = {"points": points, "varying": ["threads", "batch"], "base": BASE, **analyse(points, ["threads", "batch"])}
    data = chart_data(record)
    assert data["x_axis"] == "batch" and data["x_label"] == "batch size (samples)"
    assert [s["name"] for s in data["series"]] == ["1 thread", "2 threads"]
    assert [p["x"] for p in data["series"][1]["points"]] == [1, 2, 4, 8, 16]
    assert [p["throughput"] for p in data["series"][1]["points"]] == [1500, 2900, 4000, 5200, 5300]
    assert data["knee"] == {"series": "2 threads", "x": 8, "throughput": 5200, "p50": 0.75, "p99": 1.5,
                            "label": "knee: 2 threads · b8"}
