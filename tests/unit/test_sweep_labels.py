"""Point labels (console.sweep.labels): the same name for a point in every table, chart and record."""

from __future__ import annotations

from sweep_samples import BASE

from console.sweep import SweepGrid, expand, format_rate, point_label


def test_labels_show_only_the_axes_that_vary():
    grid = SweepGrid.parse(batch="1,2", engine="torch", precision="fp32")
    assert [p["label"] for p in expand(BASE, grid).points] == ["b1", "b2"]
    assert point_label({"batch": 4, "threads": None, "qps": 12.5}) == "default threads · 12.5 qps · b4"


def test_rates_read_as_people_write_them():
    assert [format_rate(v) for v in (None, 0.5, 12.345, 999.4, 2700.0, 1234567.8)] == [
        "—", "0.5", "12.3", "999", "2,700", "1,234,568"]
