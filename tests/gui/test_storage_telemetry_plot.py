"""The storage strip (widgets.storage_telemetry_plot) and its place on the Run page: fed plain data, units on every
axis, shown only once storage telemetry arrives, "not available (why)" for a missing NVMe sensor."""

from __future__ import annotations

import numpy as np

from console.ui.run_plots import RunPlots
from widgets.storage_telemetry_plot import PANELS, StorageTelemetryPlot

T0 = 10_000_000_000


def rows(n=20, disk="nvme0n1"):
    out = []
    for i in range(n):
        t = T0 + (i + 1) * 500_000_000
        out += [(t, "storage", f"storage.{disk}.read_mb_s", 200.0 + i, "MB/s", "measured"),
                (t, "storage", f"storage.{disk}.write_mb_s", 5.0, "MB/s", "measured"),
                (t, "storage", f"storage.{disk}.read_iops", 1600.0, "1/s", "measured"),
                (t, "storage", f"storage.{disk}.queue_depth", 3.5, "requests", "measured"),
                (t, "storage", f"storage.{disk}.await_ms", 2.1, "ms", "measured"),
                (t, "storage", "pagecache.dirty", 12.0, "MB", "measured"),
                (t, "storage", "pagecache.cached", 8.0, "GiB", "measured"),
                (t, "storage", "storage.nvme0.temperature", 41.0 + i / 10, "°C", "measured"),
                (t, "psutil", "cpu.util", 50.0, "%", "measured")]
    return out


def test_plain_dicts_feed_the_panels_with_units_on_every_axis(qtbot):
    strip = StorageTelemetryPlot()
    qtbot.addWidget(strip)
    assert not strip.has_data()
    strip.append({"storage.nvme0n1.read_mb_s": ([0.5, 1.0], [100.0, 120.0]),
                  "storage.nvme1n1.write_mb_s": ([0.5], [7.0]),
                  "storage.nvme0n1.queue_depth": ([0.5], [2.0]), "unrelated.metric": ([0.5], [1.0])})
    assert strip.panels["throughput"].series_names() == ["nvme0n1 read", "nvme1n1 write"]
    t, v = strip.panels["throughput"].data("nvme0n1 read")
    assert list(t) == [0.5, 1.0] and list(v) == [100.0, 120.0]
    assert strip.panels["queue"].series_names() == ["nvme0n1"] and strip.has_data()
    for panel in PANELS:
        label = strip.panels[panel.key].plot_item.getAxis("left").labelText
        assert label == panel.unit, (panel.key, label)
    strip.set_series({"storage.nvme0.temperature": ([1.0], [40.0])})
    assert strip.panels["throughput"].series_names() == [] and strip.panels["temperature"].series_names() == ["nvme0"]


def test_the_run_page_shows_the_strip_once_storage_samples_arrive(qtbot):
    plots = RunPlots()
    qtbot.addWidget(plots)
    plots.show()
    plots.handle({"type": "started", "t0_ns": T0})
    assert plots.storage.isHidden()
    plots.handle({"type": "samples", "rows": [(T0 + 1, "psutil", "cpu.util", 10.0, "%", "measured")]})
    assert plots.storage.isHidden()  # no storage metric yet: no strip
    plots.handle({"type": "samples", "rows": rows()})
    assert not plots.storage.isHidden()
    t, v = plots.storage.panels["throughput"].data("nvme0n1 read")
    assert t[0] == 0.5 and v[-1] == 219.0  # seconds since the run started, on the latency plot's axis
    assert plots.storage.panels["pagecache"].title() == "Page cache (8 GiB)"
    plots.handle({"type": "phase", "phase": "measuring", "t_ns": T0 + 1_000_000_000})
    assert plots.storage.panels["await"].band_colors() == [plots.latency.band_colors()[-1]]
    plots.handle({"type": "started", "t0_ns": T0 * 2})
    assert plots.storage.isHidden() and not plots.storage.has_data()


def test_a_missing_nvme_sensor_says_why_instead_of_drawing_zero(qtbot):
    plots = RunPlots()
    qtbot.addWidget(plots)
    plots.handle({"type": "started", "t0_ns": T0})
    why = "no NVMe controller here (/sys/class/nvme is empty or absent; disks: vda)"
    plots.handle({"type": "sources", "sources": [{"name": "storage", "available": True, "reason": "",
                                                  "metrics": [{"name": "storage.vda.read_mb_s"}],
                                                  "unavailable_metrics": {"storage.nvme*.temperature": why}}]})
    temperature = plots.storage.panels["temperature"]
    assert not temperature.is_available() and "no NVMe controller" in temperature.unavailable_details()


def test_a_stored_run_draws_its_storage_samples(qtbot):
    plots = RunPlots()
    qtbot.addWidget(plots)
    samples = [{"t_ns": r[0], "source": r[1], "metric": r[2], "value": r[3], "unit": r[4], "method": r[5]}
               for r in rows(5)]
    run = {"run_id": "cd" * 16, "status": "completed", "summary": {"t0_ns": T0, "t_end_ns": T0 + 3_000_000_000}}
    plots.show_stored(run, np.array([T0 + 1]), np.array([1_000_000]), samples)
    assert not plots.storage.isHidden()
    assert plots.storage.panels["temperature"].series_names() == ["nvme0"]
