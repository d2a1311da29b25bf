"""The Compare page in the real window, on a week of stored runs with a 10% step half way."""

import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import week_history  # noqa: E402

from console.history import HistoryError  # noqa: E402
from console.ui import compare_data  # noqa: E402
from console.ui.app import build_main_window  # noqa: E402
from console.ui.pages import PAGES  # noqa: E402
from widgets.compare_charts import box_stats, cdf_points  # noqa: E402
from widgets.trend_chart import BASELINE_COLOR  # noqa: E402

END = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
LOAD_MS = 30_000


@pytest.fixture
def week(tmp_path):
    made = week_history.make_week(tmp_path / "history.db", end=END)
    made["path"] = tmp_path / "history.db"
    made["store"].set_baseline(made["series"][1])
    yield made
    made["store"].close()


@pytest.fixture
def window(qtbot, week):
    win = build_main_window(week["path"], discover_targets=False, telemetry_hz=None)
    qtbot.addWidget(win)
    win.resize(1400, 860)
    win.show()
    yield win


def compare(qtbot, window, run_ids):
    page = window.page("compare")
    with qtbot.waitSignal(page.sig_loaded, timeout=LOAD_MS):
        window.compare_runs(run_ids)
    return page


def test_the_compare_page_is_a_page_plug_in():
    assert [info.name for info in PAGES][5] == "compare"  # Ctrl+6; the Storage page (Ctrl+7) follows it


def test_three_runs_overlaid_with_deltas_differences_and_a_trend(qtbot, window, week):
    a, b, c = week["series"][1], week["series"][5], week["series"][11]  # c is after the 10% step
    page = compare(qtbot, window, [a, b, c])
    assert window.tabs.currentWidget() is page
    assert "3 runs compared" in page.header.text()
    # Every chart drew one series per run, and names its units.
    drawn = page.charts.drawn()
    assert drawn["cdf"] == 3 and drawn["telemetry"] == 3 and drawn["box"] >= 3 * 4  # whiskers, caps, median
    labels = page.charts.axis_labels()
    assert labels["cdf"] == ("latency (ms)", "cumulative fraction")
    assert labels["box"][1] == "latency (ms)"
    assert labels["telemetry"] == ("time since run start (s)", "cpu.util (%)")
    assert page.charts.select_metric("worker.rss")
    assert page.charts.axis_labels()["telemetry"][1] == "worker.rss (GiB)"
    # Telemetry is on each run's own clock: every series starts at its run's start.
    for t, _values in page.data["telemetry"]["series"]["worker.rss"]:
        assert t[0] == pytest.approx(0.0, abs=1e-9)
    page.charts.log_scale.setChecked(True)
    assert page.charts.cdf_plot.getPlotItem().ctrl.logXCheck.isChecked()
    # The delta table: p50 by the statistical comparison, the rest as a ratio only, said so.
    rows = {(row["metric"], row["letter"]): row for row in page.data["deltas"]}
    slower = rows[("p50 latency", "C")]
    assert slower["verdict"] == "slower" and slower["ci95"][0] > 1.0 and slower["ratio"] == pytest.approx(1.1, 0.04)
    assert "C is slower" in slower["explanation"]  # the letter of the run, not compare()'s "B"
    assert rows[("throughput", "C")]["method"] == compare_data.RATIO_ONLY
    assert rows[("throughput", "C")]["ci95"] is None and rows[("throughput", "C")]["verdict"] is None
    assert rows[("energy per inference", "C")]["ratio"] == pytest.approx(1.1, 0.01)
    table = page.deltas.rows()
    assert [r[0] for r in table[:2]] == ["p50 latency (ms)", "p50 latency (ms)"]  # p50 of every run first
    assert any(r[1] == "C" and r[6] == "slower" for r in table)
    assert all(r[7] == compare_data.RATIO_ONLY for r in table if r[0].startswith(("p99", "throughput")))
    # What differs: the torch upgrade, as an environment change, for C only.
    differences = page.differences.rows()
    assert ["C", "version.torch", "2.3.1", "2.4.0", "environment"] in differences
    assert differences[0][:2] == ["B", "nothing differs"]
    # One configuration: one trend chart, its baseline starred, the step marked between runs 6 and 7.
    assert len(page.trends) == 1
    trend = page.trends[0]
    assert len(trend.plotted()) == week_history.SERIES_RUNS
    assert trend.axis_labels() == ("run started (local time)", "median (ms)")
    baseline_t = compare_data.epoch_seconds(week["store"].get_run(a)["started_at"])
    assert trend.baseline_item is not None and trend.baseline_item.getData()[0][0] == pytest.approx(baseline_t)
    assert trend.baseline_item.opts["symbolBrush"] == BASELINE_COLOR
    assert len(trend.step_lines) == 1
    before, after = (compare_data.epoch_seconds(week["store"].get_run(week["series"][i])["started_at"])
                     for i in (week_history.STEP_AT - 1, week_history.STEP_AT))
    assert before < trend.step_lines[0].value() < after
    assert "+" in trend.step_lines[0].label.toPlainText()
    assert "★ baseline" in trend.note.text() and "1 change point" in trend.note.text()


def test_runs_of_two_configurations_get_two_trends_and_their_difference_named(qtbot, window, week):
    page = compare(qtbot, window, [week["series"][2], week["batch4"][0], week["invalid"]])
    assert len(page.trends) == 2
    assert "not all the same measurement" in page.header.text()
    assert ["B", "batch", "1", "4", "configuration"] in page.differences.rows()
    batch4 = page.trends[1]
    assert len(batch4.plotted()) == 4  # three valid runs and the invalid one (hollow)
    assert "invalid" in batch4.note.text() and "no baseline" in batch4.note.text()
    assert batch4.step_lines == []


def test_a_newer_request_wins_and_a_missing_run_is_explained(qtbot, window, week):
    page = window.page("compare")
    first = [week["series"][0], week["series"][1]]
    second = [week["series"][2], week["series"][3], "0" * 32]
    with qtbot.waitSignal(page.sig_loaded, timeout=LOAD_MS) as loaded:
        window.compare_runs(first)
        window.compare_runs(second)
    assert loaded.args[0] == second
    qtbot.wait(200)  # the first result, if it arrives after, is dropped
    assert [run["run_id"] for run in page.data["runs"]] == second[:2]
    assert "no longer in the history: 00000000" in page.header.text()
    with qtbot.waitSignal(page.sig_error, timeout=LOAD_MS) as failed:
        window.compare_runs([week["series"][0], "f" * 32])
    assert "a comparison needs two runs" in failed.args[0]
    assert "Cannot compare" in page.header.text()


def test_gather_reads_on_its_own_connection_and_refuses_too_few_runs(week):
    data = compare_data.gather(week["path"], [week["series"][0], week["series"][8]])
    assert [run["letter"] for run in data["runs"]] == ["A", "B"]
    assert data["runs"][0]["latency_ms"].size == week_history.ITERATIONS
    assert [m["metric"] for m in data["telemetry"]["metrics"]][:2] == ["cpu.util", "worker.rss"]
    with pytest.raises(HistoryError, match="needs two runs"):
        compare_data.gather(week["path"], [week["series"][0]])


def test_cdf_and_box_figures():
    latency = np.arange(1, 10_001, dtype=float)
    x, y = cdf_points(latency, points=500)
    assert x.size == 500 and y[-1] == 1.0 and x[-1] == 10_000 and np.all(np.diff(x) >= 0)
    small_x, small_y = cdf_points(np.array([3.0, 1.0, 2.0]))
    assert small_x.tolist() == [1.0, 2.0, 3.0] and small_y.tolist() == pytest.approx([1 / 3, 2 / 3, 1])
    stats = box_stats(latency)
    assert stats[50] == pytest.approx(5000.5) and stats[5] < stats[25] < stats[75] < stats[95]
    assert box_stats(np.array([np.nan])) is None


def test_the_empty_page_says_how_to_fill_it(qtbot, window):
    page = window.page("compare")
    assert "select two or more runs" in page.header.text()
    page.compare(["only-one"])
    assert "select two or more runs" in page.header.text() and not page.busy
    window.show_page("compare")
    assert window.tabs.tabText(window.tabs.currentIndex()) == "Compare"


def test_a_run_label_is_shown_as_text_in_the_legend(qtbot):
    from widgets.compare_charts import CompareCharts

    charts = CompareCharts()
    qtbot.addWidget(charts)
    charts.set_runs([{"letter": "A", "label": "<b>bold</b> & <img src=x>", "run_id": "8a0afd99aa",
                      "latency_ms": np.linspace(1, 2, 50), "valid": False}])
    text = charts.legend.text()
    assert "&lt;b&gt;bold&lt;/b&gt;&nbsp;&amp;&nbsp;&lt;img" in text and "<b>bold" not in text and "<img" not in text
    assert "(invalid&nbsp;run)" in text
