"""The Sweeps page and its charts, offscreen: fed a finished sweep, a refused grid, a real tiny sweep, the tab."""

from __future__ import annotations

import math

import pytest

from console.history import HistoryStore, HistoryWriter
from console.sweep import analyse, chart_data, point_label
from console.ui.sweep_page import SweepPage
from console.ui.sweep_points import POINT_COLUMNS
from console.ui.workspace import Workspace
from widgets.sweep_chart import SweepChart

SWEEP_TIMEOUT_MS = 180_000


def _point(index, threads, batch, throughput, p50, p99, status="completed"):
    point = {"threads": threads, "batch": batch}
    return {"index": index, "point": point, "label": point_label(point), "run_id": f"{index:032x}",
            "status": status, "message": "" if status == "completed" else "worker died",
            "latency_ms": {"p50": p50, "p99": p99}, "throughput_per_s": throughput if status == "completed" else None,
            "valid": True}


def finished_record():
    points = [
        _point(0, 1, 1, 1000, 0.9, 1.1), _point(1, 1, 4, 2600, 1.4, 1.9), _point(2, 1, 16, 2800, 5.2, 7.5),
        _point(3, 1, 64, 2850, 21.0, None),  # p99 withheld: too few samples
        _point(4, 2, 1, 1600, 0.6, 0.8), _point(5, 2, 4, 4100, 0.9, 1.3), _point(6, 2, 16, 5000, 3.1, 4.4),
        _point(7, 2, 64, None, None, None, status="failed"),
    ]
    varying = ["threads", "batch"]
    return {"sweep_id": "ab" * 16, "name": "fed", "status": "partial", "grid": {"threads": [1, 2],
                                                                                  "batch": [1, 4, 16, 64]},
            "base": {"model": "mlp"}, "varying": varying, "points": points,
            "skipped": [{"point": {"threads": 4, "batch": 1}, "label": "4 threads · b1", "status": "skipped",
                         "reason": "onnxruntime offers no bf16 on cpu"}],
            **analyse(points, varying), "knee_rule": "…"}


# ---- the chart, a pure view
def test_chart_draws_each_series_and_marks_the_knee(qtbot):
    chart = SweepChart()
    qtbot.addWidget(chart)
    record = finished_record()
    chart.set_data(chart_data(record))
    plotted = chart.plotted()
    assert list(plotted) == ["1 thread", "2 threads"]
    assert plotted["1 thread"]["throughput"] == ([1, 4, 16, 64], [1000, 2600, 2800, 2850])
    assert plotted["2 threads"]["throughput"] == ([1, 4, 16], [1600, 4100, 5000])  # the failed point is left out
    throughput, p99 = plotted["1 thread"]["p99"]
    assert throughput == [1000, 2600, 2800, 2850] and p99[:3] == [1.1, 1.9, 7.5] and math.isnan(p99[3])
    # knee: 2 threads reaches 5000 at b16 (90% of 5000 → b16, as 4100 < 4500); it is the fastest series
    assert record["knee"]["label"] == "2 threads · b16"
    assert chart.knee_position() == {"throughput": (16.0, 5000.0), "latency": (5000.0, 4.4)}
    stars = [item for item in chart.knee_items if hasattr(item, "opts") and item.opts.get("symbol") == "star"]
    labels = [item.textItem.toPlainText() for item in chart.knee_items if hasattr(item, "textItem")]
    assert len(stars) == 2 and labels == ["knee ≥ 2 threads · b16 (still rising)\n5,000 samples/s",
                                          "knee ≥ 2 threads · b16 (still rising)\np99 4.40 ms"]
    assert chart.axis_labels() == {"latency": ("throughput (samples/s)", "latency (ms)"),
                                   "throughput": ("batch size (samples)", "throughput (samples/s)")}
    assert "p99 withheld at 1 point" in chart.note.text() and "log scale" in chart.note.text()
    assert chart.throughput_plot.getPlotItem().ctrl.logXCheck.isChecked()


def test_chart_without_a_knee_or_points(qtbot):
    chart = SweepChart()
    qtbot.addWidget(chart)
    chart.set_data({"x_label": "batch size (samples)", "x_axis": "batch", "series": [], "knee": None})
    assert chart.plotted() == {} and chart.knee_position() is None and chart.knee_items == []
    assert "No completed point" in chart.note.text()
    chart.set_data(chart_data(finished_record()))
    chart.clear()
    assert chart.plotted() == {} and chart.knee_items == []


# ---- the page, fed a finished sweep
def test_page_shows_a_finished_sweep(qtbot):
    page = SweepPage()
    qtbot.addWidget(page)
    page.show_record(finished_record())
    table = page.table
    assert [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())] == list(POINT_COLUMNS)
    assert table.rowCount() == 9  # 8 points + 1 skipped
    rows = [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(table.rowCount())]
    assert rows[0][:5] == ["1 thread · b1", "completed", "0.9", "1.1", "1,000"]
    assert rows[3][3] == "—" and "withheld" in table.item(3, 3).toolTip()
    assert rows[7][1] == "failed" and rows[7][5] == "worker died"
    assert rows[8][:2] == ["4 threads · b1", "skipped"] and rows[8][5] == "onnxruntime offers no bf16 on cpu"
    assert "Knee at 2 threads · b16: 5,000 samples/s" in page.knee_label.text()
    assert page.chart.knee_position()["throughput"] == (16.0, 5000.0)


def test_a_bad_grid_is_refused_on_the_page(qtbot, tmp_path):
    writer = HistoryWriter.open(tmp_path / "h.db")
    workspace = Workspace(tmp_path / "h.db", writer, telemetry_hz=None)
    page = SweepPage(workspace, base_values=lambda: {"model": "mlp", "target": "cpu"})
    qtbot.addWidget(page)
    page.set_fields(batch="1,x,4")
    assert page.start_sweep() is False and not page.running
    assert "--batch: 'x' is not a whole number" in page._error.text() and page._error.isVisibleTo(page)
    page.set_fields(batch="1,2", target="cuda:0")
    page._targets = lambda: [{"id": "cpu", "available": True},
                             {"id": "cuda:0", "available": False, "reason": "CPU-only PyTorch"}]
    assert page.start_sweep() is False
    assert "cuda:0 is not usable here: CPU-only PyTorch" in page._error.text()
    page.set_fields(target="")
    workspace.claim("run")  # what the Run page's controller does while a run measures
    assert page.start_sweep() is False and "A run is in progress" in page._error.text()
    assert workspace.measuring == "run"
    writer.close()


def test_the_lab_nodes_axis_needs_a_joined_cluster_and_well_formed_labels(qtbot, tmp_path):
    writer = HistoryWriter.open(tmp_path / "h.db")
    workspace = Workspace(tmp_path / "h.db", writer, telemetry_hz=None)
    address = {"now": ""}
    page = SweepPage(workspace, base_values=lambda: {"model": "mlp", "target": "cpu"},
                     cluster_address=lambda: address["now"])
    qtbot.addWidget(page)
    page.set_fields(batch="1", on="host=lab-a,host=lab-b")
    assert page.start_sweep() is False and not page.running
    assert "connect to one first (Run ▸ Connect to lab cluster…)" in page._error.text()
    address["now"] = "127.0.0.1:1"
    page.set_fields(on="host=lab-a,lab-b")
    assert page.start_sweep() is False and "'lab-b' is not LABEL=VALUE" in page._error.text()
    assert workspace.measuring is None  # nothing was claimed, nothing ran
    writer.close()


# ---- a real sweep through the page
@pytest.fixture
def history(tmp_path):
    path = tmp_path / "history.db"
    writer = HistoryWriter.open(path)
    store = HistoryStore(path)
    yield Workspace(path, writer, store, telemetry_hz=None)
    store.close()
    writer.close()


def test_a_real_sweep_runs_on_a_thread_and_lands_in_the_history(qtbot, history):
    store = history.store
    page = SweepPage(history, base_values=lambda: {"model": "mlp", "engine": "torch", "target": "cpu"})
    qtbot.addWidget(page)
    page.resize(1400, 860)
    page.show()
    page.set_fields(batch="1,2")
    page.duration.setValue(0.3)
    page.name_edit.setText("gui")
    progress = []
    page.sig_running.connect(progress.append)
    with qtbot.waitSignal(page.sig_sweep_finished, timeout=SWEEP_TIMEOUT_MS) as finished:
        assert page.start_sweep() is True
        assert page.running and not page.run_button.isEnabled() and page.stop_button.isEnabled()
    record = finished.args[0]
    assert progress == [True, False] and not page.running and page.run_button.isEnabled()
    assert history.measuring is None  # the sweep released the one measuring state
    assert record["status"] == "completed" and [p["status"] for p in record["points"]] == ["completed"] * 2
    assert page.progress.value() == page.progress.maximum() == 2
    assert page.table.rowCount() == 2 and page.table.item(1, 1).text() == "completed"
    assert list(page.chart.plotted()) == ["all points"]
    assert page.chart.plotted()["all points"]["throughput"][0] == [1, 2]
    assert page.chart.knee_position() is not None
    assert page.sweeps_list.count() == 1
    assert page.sweeps_list.item(0).text().splitlines()[1:] == ["completed · 2/2 runs · mlp", "batch 1,2"]
    assert [r["sweep_point"] for r in store.runs_of_sweep(record["sweep_id"])] == [{"batch": 1}, {"batch": 2}]

    page.chart.clear()
    page.sweeps_list.setCurrentRow(-1)
    page.sweeps_list.setCurrentRow(0)  # pick it from the past sweeps: read back from the history
    assert page.record["sweep_id"] == record["sweep_id"]
    assert page.chart.plotted()["all points"]["throughput"] == ([1, 2], [p["throughput_per_s"]
                                                                          for p in record["points"]])


def test_stop_ends_the_sweep_after_the_current_point(qtbot, history):
    page = SweepPage(history, base_values=lambda: {"model": "mlp"})
    qtbot.addWidget(page)
    page.set_fields(batch="1,2,4")
    page.duration.setValue(0.3)
    with qtbot.waitSignal(page.sig_sweep_finished, timeout=SWEEP_TIMEOUT_MS) as finished:
        page.start_sweep()
        qtbot.waitUntil(lambda: page.table.rowCount() == 3 and page.table.item(0, 1).text() == "running…",
                        timeout=60_000)
        page.stop_sweep()
        assert page.stop_button.text() == "Stop now"
    record = finished.args[0]
    assert record["status"] == "cancelled"
    assert [p["status"] for p in record["points"]] == ["completed", "not run", "not run"]


# ---- the window
def test_the_window_has_a_sweeps_tab_on_ctrl_3(qtbot, tmp_path):
    from console.ui.app import build_main_window

    window = build_main_window(tmp_path / "history.db", discover_targets=False, telemetry_hz=None)
    qtbot.addWidget(window)
    page = window.sweep_page  # built when first asked for (or shown)
    assert window.tabs.tabText(2) == "Sweeps" and window.tabs.widget(2) is page
    actions = {a.text().replace("&", ""): a for menu in window.menuBar().actions() for a in menu.menu().actions()}
    assert actions["Sweeps page"].shortcut().toString() == "Ctrl+3"
    window.run_page.form.set_values({"model": "mlp", "target": "cpu"})
    base = window.sweep_page._base()
    assert (base["model"], base["target"]) == ("mlp", "cpu")
    window.show()
    actions["Sweeps page"].trigger()
    assert window.tabs.currentIndex() == 2
    assert "mlp" in window.sweep_page.model_label.text()
