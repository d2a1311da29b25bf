"""Behaviour of the view widgets, fed plain data as the pages feed them (offscreen Qt)."""

import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402

from engines import phases, scenarios  # noqa: E402
from widgets import live_plot, theme  # noqa: E402
from widgets.formatting import format_number, format_quantity  # noqa: E402
from widgets.history_table import COL_BATCH, COL_P50, COL_STATUS, COL_THROUGHPUT, HistoryTable  # noqa: E402
from widgets.live_plot import LatencyPlot, TimeSeriesPlot  # noqa: E402
from widgets.phase_progress import PhaseProgress  # noqa: E402
from widgets.ring_buffer import RingBuffer  # noqa: E402
from widgets.run_form import RunForm  # noqa: E402
from widgets.summary_card import SummaryCard  # noqa: E402

DEMO_PNG = "/tmp/widgets_demo.png"


# ---- Toolkit
def test_signal_emit_keeps_bool_refcount():
    """PySide6 6.12.0 drops a reference to True on every Python ``Signal.emit``; on Python 3.11 the process then
    dies with "bool_dealloc" after a few thousand emits (pyqtgraph emits on every setData). 6.11.3 is fine."""

    class Emitter(QtCore.QObject):
        sig_value = QtCore.Signal(int)

    emitter = Emitter()
    emitter.sig_value.emit(0)  # first use may cache things that hold a reference
    before = sys.getrefcount(True)
    for i in range(500):
        emitter.sig_value.emit(i)
    lost = before - sys.getrefcount(True)
    assert lost < 100, f"this PySide6 build lost {lost} references to True in 500 Signal.emit calls"


# ---- RingBuffer
def test_ring_buffer_keeps_last_n_in_order_across_wraps():
    rb = RingBuffer(5)
    rb.extend([1, 2, 3])
    assert len(rb) == 3
    np.testing.assert_array_equal(rb.values(), [1, 2, 3])
    rb.extend([4, 5, 6, 7])
    np.testing.assert_array_equal(rb.values(), [3, 4, 5, 6, 7])
    rb.extend([8])
    np.testing.assert_array_equal(rb.values(), [4, 5, 6, 7, 8])
    np.testing.assert_array_equal(rb.tail(2), [7, 8])
    rb.extend(np.arange(100, 112))  # more than capacity at once
    np.testing.assert_array_equal(rb.values(), np.arange(107, 112))
    assert len(rb) == 5
    rb.clear()
    assert len(rb) == 0 and rb.values().size == 0


def test_ring_buffer_matches_reference_under_random_batches():
    rng = np.random.default_rng(0)
    rb = RingBuffer(3000, dtype=np.float32)
    reference = np.empty(0, dtype=np.float32)
    for _ in range(200):
        batch = rng.random(int(rng.integers(0, 400))).astype(np.float32)
        rb.extend(batch)
        reference = np.concatenate([reference, batch])[-3000:]
        assert len(rb) == reference.size
    np.testing.assert_array_equal(rb.values(), reference)
    np.testing.assert_array_equal(rb.tail(1000), reference[-1000:])
    assert rb.values().dtype == np.float32
    assert rb.values().flags.c_contiguous


def test_ring_buffer_values_is_a_copy():
    rb = RingBuffer(4)
    rb.extend([1.0, 2.0])
    v = rb.values()
    rb.extend([3.0, 4.0, 5.0])
    np.testing.assert_array_equal(v, [1.0, 2.0])


# ---- formatting
@pytest.mark.parametrize(
    ("value", "text"),
    [(0.0123, "0.0123"), (12.345, "12.3"), (1234, "1,234"), (1234.6, "1,235"), (123.4, "123"), (9.996, "10.0"),
     (5.0, "5.00"), (None, "—"), (float("nan"), "—"), (0, "0"), (-0.5, "-0.500"), (120, "120")],
)
def test_format_number(value, text):
    assert format_number(value) == text


def test_format_quantity():
    assert format_quantity(12.34, "ms") == "12.3 ms"
    assert format_quantity(None, "ms") == "—"


# ---- LatencyPlot
def test_latency_plot_appends_and_draws_only_on_refresh(qtbot):
    plot = LatencyPlot()
    qtbot.addWidget(plot)
    rng = np.random.default_rng(1)
    t = np.arange(1500) * 0.002
    y = 5 + rng.gamma(2.0, 0.5, size=1500)
    plot.add_latencies(t[:700], y[:700])
    plot.add_latencies(t[700:], y[700:])
    # Not drawn yet: add_* only buffers.
    x_drawn, _ = plot._curve.getOriginalDataset()
    assert x_drawn is None or len(x_drawn) == 0
    plot.refresh()
    x_drawn, y_drawn = plot._curve.getOriginalDataset()
    assert len(x_drawn) == 1500 and len(y_drawn) == 1500
    # Running percentiles: a point every 100 iterations over the trailing 1000 (fewer at the start).
    p50_x, p50_y = plot._p50_line.getData()
    _, p99_y = plot._p99_line.getData()
    assert len(p50_x) == 15
    for k, end in enumerate(range(100, 1501, 100)):
        window = y[max(0, end - 1000):end]
        assert p50_x[k] == pytest.approx(t[end - 1])
        assert p50_y[k] == pytest.approx(np.median(window))
        assert p99_y[k] == pytest.approx(np.percentile(window, 99))
    assert plot.percentiles()["n"] == 1000
    assert "p50" in plot._readout.text() and "ms" in plot._readout.text()


def test_latency_plot_axes_and_legend_carry_units_and_names(qtbot):
    plot = LatencyPlot()
    qtbot.addWidget(plot)
    assert "time (s)" in plot.plot_item.getAxis("bottom").labelText
    assert "latency (ms)" in plot.plot_item.getAxis("left").labelText
    assert plot.legend_labels() == ["latency", "p50 (last 1000)", "p99 (last 1000)"]
    assert plot._curve.opts["autoDownsample"] and plot._curve.opts["downsampleMethod"] == "peak"
    assert plot._curve.opts["clipToView"] is True


def test_latency_plot_set_data_replaces_and_clear_empties(qtbot):
    plot = LatencyPlot()
    qtbot.addWidget(plot)
    plot.add_latencies([0.0, 0.1], [1.0, 2.0])
    plot.set_data(np.arange(10) * 0.1, np.full(10, 3.0))
    plot.refresh()
    t, y = plot.data()
    assert t.size == 10 and np.all(y == 3.0)
    assert plot.percentiles()["p50"] == pytest.approx(3.0)
    plot.add_band(0.0, 0.5, "warmup")
    plot.clear()
    plot.refresh()
    assert plot.data()[0].size == 0
    assert plot.percentiles() is None
    assert plot.band_labels() == []
    with pytest.raises(ValueError):
        plot.add_latencies([0.0, 1.0], [1.0])


def test_latency_plot_redrawn_by_shared_timer(qtbot):
    plot = LatencyPlot()
    qtbot.addWidget(plot)
    plot.show()
    qtbot.waitExposed(plot)
    plot.add_latencies(np.arange(20) * 0.01, np.ones(20))
    qtbot.waitUntil(lambda: plot._curve.getOriginalDataset()[0] is not None
                    and len(plot._curve.getOriginalDataset()[0]) == 20, timeout=2000)
    assert not plot._dirty
    assert live_plot.REFRESH_INTERVAL_MS == 100


def test_latency_plot_bounded_by_capacity(qtbot):
    plot = LatencyPlot(capacity=1000)
    qtbot.addWidget(plot)
    for i in range(5):
        plot.add_latencies(np.arange(i * 600, (i + 1) * 600) * 0.001, np.ones(600))
    t, _ = plot.data()
    assert t.size == 1000 and t[-1] == pytest.approx(2.999)


def test_bands_open_band_follows_data_and_is_closed_by_next(qtbot):
    plot = LatencyPlot()
    qtbot.addWidget(plot)
    plot.add_band(0.0, None, "loading", "#f2a900")
    plot.add_band(1.5, None, "warmup")
    plot.add_latencies([1.6, 2.0, 2.5], [1.0, 1.0, 1.0])
    plot.refresh()
    loading, warmup = plot._bands
    assert loading.region.getRegion() == pytest.approx((0.0, 1.5))
    assert warmup.region.getRegion() == pytest.approx((1.5, 2.5))
    assert plot.band_labels() == ["loading", "warmup"]
    assert plot.band_colors() == ["#f2a900", theme.BAND_COLOR]  # a band without a colour gets the neutral one
    assert loading.region.brush.color().name() == "#f2a900"
    plot.clear_bands()
    assert plot.band_labels() == []


# ---- TimeSeriesPlot
def test_time_series_creates_series_with_distinct_colors(qtbot):
    plot = TimeSeriesPlot("Memory", "memory", "GiB")
    qtbot.addWidget(plot)
    plot.add_points("system used", [0.0, 0.5], [10.0, 10.5])
    plot.add_points("worker RSS", [0.0, 0.5], [1.0, 1.2])
    plot.add_points("worker RSS", [1.0], [1.3])
    plot.refresh()
    assert plot.series_names() == ["system used", "worker RSS"]
    colors = {plot._series[n].curve.opts["pen"].color().name() for n in plot.series_names()}
    assert len(colors) == 2
    x, y = plot._series["worker RSS"].curve.getData()
    np.testing.assert_array_equal(y, [1.0, 1.2, 1.3])
    assert "memory (GiB)" in plot.plot_item.getAxis("left").labelText
    plot.set_data("worker RSS", [0.0], [2.0])
    plot.refresh()
    np.testing.assert_array_equal(plot._series["worker RSS"].curve.getData()[1], [2.0])


def test_time_series_per_core_thin_faint_and_one_legend_entry(qtbot):
    plot = TimeSeriesPlot("CPU", "utilization", "%", y_range=(0, 100))
    qtbot.addWidget(plot)
    t = np.arange(10) * 0.1
    plot.add_points("total", t, np.full(10, 50.0))
    for core in range(16):
        plot.add_points(f"cpu{core}", t, np.full(10, 40.0 + core))
    plot.refresh()
    total_pen = plot._series["total"].curve.opts["pen"]
    core_pen = plot._series["cpu3"].curve.opts["pen"]
    assert total_pen.widthF() > core_pen.widthF()
    # Faint, but opaque: a translucent stroke over dense data costs seconds a frame in Qt's raster engine.
    assert core_pen.color().alpha() == 255
    assert core_pen.color().lightness() > total_pen.color().lightness()
    assert plot.legend_labels() == ["total", "per core (16)"]
    opts = plot._series["cpu3"].curve.opts
    assert opts["autoDownsample"] and opts["downsampleMethod"] == "peak" and opts["clipToView"]
    low, high = plot.plot_item.getViewBox().viewRange()[1]
    assert low < 0 < 100 < high < 110  # 0–100 % with a margin, so a line at 100 % is not hidden by the frame


def test_time_series_unavailable_shows_text_and_no_curve(qtbot):
    plot = TimeSeriesPlot("GPU power", "power", "W")
    qtbot.addWidget(plot)
    plot.set_unavailable("no NVML")
    plot.refresh()
    assert plot.unavailable_text() == "not available (no NVML)"
    assert not plot.is_available()
    assert plot.series_names() == []
    assert not any(isinstance(i, live_plot.pg.PlotDataItem) for i in plot.plot_item.listDataItems())
    plot.clear()
    assert plot.is_available() and plot.unavailable_text() == ""


def test_a_long_reason_is_a_short_label_and_a_tooltip(qtbot):
    plot = TimeSeriesPlot("GPU power", "power", "W")
    qtbot.addWidget(plot)
    reason = ("nvml: NVML library (libnvidia-ml.so.1) not found: no NVIDIA driver installed on this machine\n"
              "rapl: permission denied reading /sys/class/powercap/intel-rapl:0/energy_uj. sudo chmod o+r …")
    plot.set_unavailable(reason)
    assert plot.unavailable_text() == "power: not available"
    assert plot.unavailable_details() == f"power: not available\n{reason}"
    assert "NVIDIA driver installed on this machine" in plot.unavailable_tooltip()
    assert plot._unavailable_hint.isVisibleTo(plot)  # "hover for why"
    plot.set_unavailable(reason, short="GPU: no NVIDIA driver")
    assert plot.unavailable_text() == "GPU: no NVIDIA driver"
    plot.set_unavailable("x" * 80, short="y" * 80)
    assert len(plot.unavailable_text()) == live_plot.UNAVAILABLE_LABEL_MAX


def test_time_series_nan_is_a_gap_not_zero(qtbot):
    plot = TimeSeriesPlot("CPU", "utilization", "%")
    qtbot.addWidget(plot)
    plot.add_points("total", [0.0, 0.1, 0.2], [10.0, np.nan, 12.0])
    plot.refresh()
    _, y = plot.data("total")
    assert np.isnan(y[1])
    assert plot._series["total"].curve.opts["connect"] == "finite"


def test_time_series_clear_removes_series_and_legend(qtbot):
    plot = TimeSeriesPlot("CPU", "utilization", "%")
    qtbot.addWidget(plot)
    plot.add_points("total", [0.0], [1.0])
    plot.add_points("cpu0", [0.0], [1.0])
    plot.add_band(0.0, 1.0, "measuring")
    plot.clear()
    plot.refresh()
    assert plot.series_names() == []
    assert plot.legend_labels() == []
    assert plot.band_labels() == []


# ---- RunForm
def _filled_form(qtbot) -> RunForm:
    form = RunForm()
    qtbot.addWidget(form)
    form.set_choices("model", [("resnet50", "ResNet-50", True, ""), ("bert", "BERT base", True, "")])
    form.set_choices("engine", [
        ("torch", "PyTorch", True, ""),
        ("onnxruntime", "ONNX Runtime", False, "onnxruntime is not installed"),
    ])
    form.set_choices("target", [("cpu", "CPU", True, ""), ("cuda:0", "GPU 0", False, "no CUDA device")])
    form.set_choices("precision", [("fp32", "fp32", True, ""), ("fp16", "fp16", False, "no fp16 on this CPU")])
    form.set_choices("mode", [("inference", "inference", True, ""), ("training", "training", True, "")])
    form.set_choices("scenario", [("single-stream", "Single-stream", True, ""), ("server", "Server", True, "")])
    return form


def test_run_form_values_round_trip(qtbot):
    form = _filled_form(qtbot)
    assert form.values() == {
        "model": "resnet50", "engine": "torch", "target": "cpu", "precision": "fp32", "mode": "inference",
        "scenario": "single-stream", "batch": 1, "threads": None, "duration_s": 5.0, "iterations": None,
        "name": None,
    }
    wanted = {"model": "bert", "engine": "torch", "target": "cpu", "precision": "fp32", "mode": "training",
              "scenario": "server", "batch": 32, "threads": 2, "duration_s": 12.5, "iterations": 400,
              "name": "nightly"}
    form.set_values(wanted)
    assert form.values() == wanted
    form.set_values({"iterations": None, "name": ""})
    assert form.values()["iterations"] is None and form.values()["name"] is None
    assert form._iterations.text() == "auto (use duration)"
    assert form._duration.suffix() == " s"


SERVER_FIELDS = [
    {"path": "scenario_options.qps", "kind": "float", "label": "Rate (queries/s)", "default": None, "optional": True,
     "maximum": 1e6, "unit": "queries/s", "help": "Poisson arrival rate"},
    {"path": "scenario_options.find_peak", "kind": "bool", "label": "Find peak rate", "default": False},
]
TORCH_FIELDS = [{"path": "torch.compile", "kind": "choice", "label": "torch.compile", "default": None,
                 "optional": True, "choices": ("default", "max-autotune")}]


def test_run_form_shows_the_options_its_plugins_describe(qtbot):
    form = _filled_form(qtbot)
    form.set_option_fields(scenario=SERVER_FIELDS, engine=TORCH_FIELDS)
    values = form.values()
    assert values["scenario_options.qps"] is None and values["scenario_options.find_peak"] is False
    assert values["torch.compile"] is None
    assert form.engine_section.editor("torch.compile").isHidden()  # folded until asked for
    form.set_values({"scenario_options.qps": 250.0, "scenario_options.find_peak": True, "torch.compile": "default"})
    assert form.values()["scenario_options.qps"] == 250.0 and form.values()["torch.compile"] == "default"
    assert form.scenario_section.editor("scenario_options.qps").suffix() == " queries/s"
    form.set_option_fields(scenario=[], engine=TORCH_FIELDS)  # another scenario without options
    assert "scenario_options.qps" not in form.values() and form.scenario_section.isHidden()
    form.set_option_fields(scenario=SERVER_FIELDS, engine=TORCH_FIELDS)  # back: what was typed comes back
    assert form.values()["scenario_options.qps"] == 250.0


def test_run_form_disabled_item_cannot_be_chosen(qtbot):
    form = _filled_form(qtbot)
    combo = form.combo("engine")
    index = combo.findData("onnxruntime")
    assert combo.itemData(index, QtCore.Qt.ItemDataRole.ToolTipRole) == "onnxruntime is not installed"
    assert not (combo.model().flags(combo.model().index(index, 0)) & QtCore.Qt.ItemFlag.ItemIsEnabled)
    form.set_values({"engine": "onnxruntime", "target": "cuda:0", "model": "nope", "bogus": 1, "batch": "x"})
    assert form.values()["engine"] == "torch"
    assert form.values()["target"] == "cpu"
    assert form.values()["model"] == "resnet50"
    assert form.values()["batch"] == 1
    # Keyboard scrolling through the combo skips the disabled item.
    combo.setFocus()
    qtbot.keyClick(combo, QtCore.Qt.Key.Key_Down)
    assert form.values()["engine"] == "torch"


def test_run_form_first_enabled_choice_and_kept_choice(qtbot):
    form = RunForm()
    qtbot.addWidget(form)
    form.set_choices("target", [("cuda:0", "GPU 0", False, "no CUDA"), ("cpu", "CPU", True, "")])
    assert form.values()["target"] == "cpu"
    form.set_choices("target", [("cpu", "CPU", True, ""), ("npu", "NPU", True, "")])
    assert form.values()["target"] == "cpu"
    form.set_choices("target", [("npu", "NPU", True, "")])
    assert form.values()["target"] == "npu"


def test_run_form_buttons_and_running_state(qtbot):
    form = RunForm()
    qtbot.addWidget(form)
    assert not form.run_button.isEnabled()  # nothing chosen yet
    form = _filled_form(qtbot)
    assert form.run_button.isEnabled() and not form.stop_button.isEnabled()
    assert "Ctrl+R" in form.run_button.toolTip()
    with qtbot.waitSignal(form.sig_run_requested, timeout=1000):
        qtbot.mouseClick(form.run_button, QtCore.Qt.MouseButton.LeftButton)
    form.set_running(True)
    assert not form.run_button.isEnabled() and form.stop_button.isEnabled()
    assert not form.combo("model").isEnabled()
    with qtbot.waitSignal(form.sig_stop_requested, timeout=1000):
        qtbot.mouseClick(form.stop_button, QtCore.Qt.MouseButton.LeftButton)
    form.set_running(False)
    assert form.run_button.isEnabled() and form.combo("model").isEnabled()
    form.setEnabled(False)
    assert not form.run_button.isEnabled()


def test_run_form_signals_choice_changes(qtbot):
    form = _filled_form(qtbot)
    with qtbot.waitSignal(form.sig_choice_changed, timeout=1000) as blocker:
        form.combo("model").setCurrentIndex(1)
    assert blocker.args == ["model", "bert"]


# ---- PhaseProgress
def test_phase_progress_states(qtbot):
    progress = PhaseProgress()
    qtbot.addWidget(progress)
    assert progress.text() == "Idle"
    progress.set_phase("loading", "reading 98 MB")
    progress.set_fraction(None)
    assert progress.fraction() is None
    assert progress.text() == "Loading — reading 98 MB"
    progress.set_phase("measuring")
    progress.set_fraction(0.25)
    assert progress.fraction() == pytest.approx(0.25)
    progress.finish("failed", "CUDA out of memory")
    assert "CUDA out of memory" in progress.text()
    assert "#c62828" in progress._label.styleSheet()
    progress.finish("completed", "")
    assert progress.fraction() == 1.0 and progress.status() == "completed"
    progress.set_fraction(None)
    progress.finish("cancelled", "stopped by user")
    assert progress.fraction() is not None and "#757575" in progress._label.styleSheet()
    progress.reset()
    assert progress.text() == "Idle" and progress.fraction() == 0.0


# ---- SummaryCard
def _summary() -> dict:
    return {
        "latency_ms": {"p50": 12.34, "p90": 15.1, "p99": None, "mean": 12.8, "min": 10.2, "max": 31.0},
        "throughput_per_s": 1234.6,
        "iterations": 120,
        "load_s": 0.912,
        "duration_s": 5.0,
        "notes": ["p99 from 120 samples: below the 662 needed"],
    }


def test_summary_card_figures_and_missing(qtbot):
    card = SummaryCard()
    qtbot.addWidget(card)
    card.set_summary(_summary())
    assert card.value_text("p50") == "12.3 ms"
    assert card.value_text("throughput") == "1,235 samples/s"
    assert card.value_text("iterations") == "120"
    assert card.value_text("load") == "0.912 s"
    assert card.value_text("p99") == "—"
    assert card.figure_tooltip("p99") == "not available"
    assert "range 10.2 – 31.0 ms" in card.figure_tooltip("p50")
    assert "below the 662 needed" in card.notes_text()
    card.set_message("worker crashed", error=True)
    assert card.message_text() == "worker crashed"
    card.clear()
    assert card.value_text("p50") == "—" and card.notes_text() == "" and card.message_text() == ""


def test_summary_card_shows_the_verdict_against_the_baseline(qtbot):
    card = SummaryCard()
    qtbot.addWidget(card)
    assert card.baseline_text() == ""
    block = {"run_id": "abcdef0123", "verdict": "slower", "ratio": 1.123, "ci95": [1.1, 1.15], "p_value": 1e-9,
             "explanation": "B is slower", "changed": [{"field": "version.torch", "a": "2.12", "b": "2.13"}]}
    card.set_summary({**_summary(), "baseline": block})
    assert card.baseline_text() == "vs baseline: slower than abcdef01 — ×1.123 (95% CI 1.100–1.150)"
    assert "version.torch: 2.12 → 2.13" in card._baseline.toolTip()
    card.set_summary({**_summary(), "baseline": {**block, "verdict": "undecided", "ratio": 1.0}})
    assert card.baseline_text().startswith("vs baseline: not told apart from abcdef01")
    card.set_summary({**_summary(), "baseline": {**block, "verdict": "no difference", "ratio": 1.0}})  # stored by
    assert card.baseline_text().startswith("vs baseline: not told apart from abcdef01")  # an older version
    card.set_summary({**_summary(), "baseline": {**block, "verdict": "equivalent", "ratio": 1.0}})
    assert card.baseline_text().startswith("vs baseline: equally fast as abcdef01")
    card.set_summary({**_summary(), "baseline": {"run_id": "abcdef0123", "verdict": None, "explanation": "too few"}})
    assert card.baseline_text() == "vs baseline abcdef01: not compared"
    card.clear()
    assert card.baseline_text() == ""


def test_summary_card_tolerates_missing_keys(qtbot):
    card = SummaryCard()
    qtbot.addWidget(card)
    card.set_summary({"latency_ms": None, "iterations": None})
    for key in ("p50", "p90", "p99", "mean", "throughput", "iterations", "duration", "load"):
        assert card.value_text(key) == "—"


# ---- HistoryTable
def _runs(n: int = 4) -> list[dict]:
    statuses = ["completed", "failed", "interrupted", "cancelled"]
    runs = []
    for i in range(n):
        runs.append({
            "run_id": f"{i:08x}-aaaa-bbbb-cccc-{i:012x}",
            "started_at": f"2025-01-{1 + (n - i) % 28:02d}T10:{i % 60:02d}:00+00:00",
            "status": statuses[i % 4],
            "name": f"run {i}",
            "model": "resnet50" if i % 2 else "bert-base",
            "engine": "torch" if i % 3 else "onnxruntime",
            "target": "cpu",
            "batch": [1, 8, 64, 2][i % 4],
            "summary": None if i % 4 == 1 else {"latency_ms": {"p50": [9.5, 0, 100.0, 20.0][i % 4]},
                                                "throughput_per_s": 100.0 * (i + 1)},
        })
    return runs


def test_history_table_rows_filter_and_colors(qtbot):
    table = HistoryTable()
    qtbot.addWidget(table)
    table.set_runs(_runs(4))
    assert table.row_count() == 4
    assert table.run_id_at(0).startswith("00000000")  # order given is kept
    assert table.cell_text(0, 9) == "00000000"
    assert table.cell_text(1, COL_P50) == "—"  # failed run without summary
    status_index = table.view.model().index(1, COL_STATUS)
    assert status_index.data(QtCore.Qt.ItemDataRole.ForegroundRole).color().name() == "#c62828"
    p50_index = table.view.model().index(0, COL_P50)
    assert p50_index.data(QtCore.Qt.ItemDataRole.TextAlignmentRole) & QtCore.Qt.AlignmentFlag.AlignRight
    table.set_filter_text("resnet")
    assert table.row_count() == 2
    table.set_filter_text("resnet failed")
    assert table.row_count() == 1 and table.cell_text(0, COL_STATUS) == "failed"
    table.set_filter_text("")
    assert table.row_count() == 4


def test_history_table_local_time_format(qtbot):
    table = HistoryTable()
    qtbot.addWidget(table)
    table.set_runs([{"run_id": "x", "started_at": "2025-03-04T05:06:07", "status": "completed"}])
    assert table.cell_text(0, 0) == "2025-03-04 05:06:07"


def test_history_table_sorts_numerically(qtbot):
    table = HistoryTable()
    qtbot.addWidget(table)
    table.set_runs(_runs(12))
    table.view.sortByColumn(COL_BATCH, QtCore.Qt.SortOrder.AscendingOrder)
    batches = [int(table.cell_text(r, COL_BATCH)) for r in range(table.row_count())]
    assert batches == sorted(batches) and batches[-1] == 64  # "64" > "8" numerically
    table.view.sortByColumn(COL_THROUGHPUT, QtCore.Qt.SortOrder.DescendingOrder)
    shown = [table.cell_text(r, COL_THROUGHPUT) for r in range(table.row_count())]
    numbers = [float(s.replace(",", "")) for s in shown if s != "—"]
    assert numbers == sorted(numbers, reverse=True)
    table.view.sortByColumn(COL_P50, QtCore.Qt.SortOrder.AscendingOrder)
    shown = [table.cell_text(r, COL_P50) for r in range(table.row_count())]
    assert shown[-3:] == ["—"] * 3  # runs without a summary sort last
    numbers = [float(s) for s in shown if s != "—"]
    assert numbers == sorted(numbers)


def test_history_table_activation_and_selection(qtbot):
    table = HistoryTable()
    qtbot.addWidget(table)
    table.resize(1000, 400)
    table.show()
    qtbot.waitExposed(table)
    table.set_runs(_runs(4))
    view = table.view
    rect = view.visualRect(view.model().index(2, 1))
    with qtbot.waitSignal(table.sig_run_activated, timeout=1000) as blocker:
        qtbot.mouseClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=rect.center())
        qtbot.mouseDClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=rect.center())
    assert blocker.args == [table.run_id_at(2)]
    assert table.selected_run_ids() == [table.run_id_at(2)]
    with qtbot.waitSignal(table.sig_run_activated, timeout=1000) as blocker:
        view.setFocus()
        qtbot.keyClick(view, QtCore.Qt.Key.Key_Return)
    assert blocker.args == [table.run_id_at(2)]
    selected = table.selected_run_ids()
    table.set_runs(list(reversed(_runs(4))))  # a refresh keeps the selection
    assert table.selected_run_ids() == selected


def test_history_table_handles_thousands_of_rows(qtbot):
    table = HistoryTable()
    qtbot.addWidget(table)
    table.set_runs(_runs(5000))
    assert table.row_count() == 5000
    table.set_filter_text("onnxruntime")
    assert 0 < table.row_count() < 5000


# ---- Visual check
def test_demo_screenshot(qtbot):
    """All widgets together with realistic data, saved for a human look."""
    rng = np.random.default_rng(7)
    root = QtWidgets.QWidget()
    root.setStyleSheet("background: #ffffff;")
    qtbot.addWidget(root)
    grid = QtWidgets.QGridLayout(root)

    form = _filled_form(qtbot)
    form.set_values({"batch": 8, "name": "resnet50 nightly"})
    form.set_running(True)
    progress = PhaseProgress()
    progress.set_phase("measuring", "3,200 iterations, 6.1 s of 10 s")
    progress.set_fraction(0.61)
    left = QtWidgets.QVBoxLayout()
    left.addWidget(form)
    left.addWidget(progress)
    grid.addLayout(left, 0, 0, 2, 1)

    latency = LatencyPlot()
    t = np.sort(rng.uniform(3.0, 9.1, 3200))
    lat = 11 + rng.gamma(2.0, 0.6, t.size) + (rng.random(t.size) < 0.01) * rng.uniform(5, 15, t.size)
    for start, phase in ((0.0, "loading"), (2.2, "warmup"), (3.0, "measuring")):
        latency.add_band(start, None, phases.get(phase).label, phases.get(phase).color)
    latency.add_latencies(t, lat)
    grid.addWidget(latency, 0, 1)

    cpu = TimeSeriesPlot("CPU utilization", "utilization", "%", y_range=(0, 100))
    tt = np.arange(0, 9.1, 0.1)
    cpu.add_points("total", tt, np.clip(60 + rng.normal(0, 4, tt.size), 0, 100))
    for core in range(8):
        cpu.add_points(f"cpu{core}", tt, np.clip(55 + 10 * rng.normal(0, 1, tt.size), 0, 100))
    for start, phase in ((0.0, "loading"), (2.2, "warmup"), (3.0, "measuring")):
        cpu.add_band(start, None, phases.get(phase).label, phases.get(phase).color)
    memory = TimeSeriesPlot("Memory", "memory", "GiB")
    memory.add_points("system used", tt, 12 + np.minimum(tt, 2.2) * 0.5)
    memory.add_points("worker RSS", tt, 0.4 + np.minimum(tt, 2.2) * 0.45)
    power = TimeSeriesPlot("GPU power", "power", "W")
    power.set_unavailable("no NVIDIA driver")
    plots = QtWidgets.QHBoxLayout()
    plots.addWidget(cpu)
    plots.addWidget(memory)
    plots.addWidget(power)
    grid.addLayout(plots, 1, 1)

    card = SummaryCard()
    card.set_summary({
        "latency_ms": {"p50": 12.1, "p90": 13.9, "p99": 24.6, "mean": 12.4, "min": 11.0, "max": 27.3},
        "throughput_per_s": 645.2, "iterations": 3200, "load_s": 2.21, "duration_s": 6.1,
        "notes": ["p99 from 3,200 samples (≥ 662 needed): VALID", "CV 4.1% over the last three windows"],
    })
    grid.addWidget(card, 2, 0, 1, 2)

    history = HistoryTable()
    history.set_runs(_runs(30))
    grid.addWidget(history, 3, 0, 1, 2)
    grid.setColumnStretch(1, 1)
    grid.setRowStretch(0, 3)
    grid.setRowStretch(1, 3)
    grid.setRowStretch(3, 2)

    root.resize(1600, 1250)
    root.show()
    qtbot.waitExposed(root)
    for plot in (latency, cpu, memory, power):
        plot.refresh()
    QtWidgets.QApplication.processEvents()
    pixmap = root.grab()
    assert pixmap.save(DEMO_PNG)  # kept for a human look; what follows checks what was painted
    corner = latency.mapTo(root, QtCore.QPoint(0, 0))
    shot = pixmap.copy(QtCore.QRect(corner, latency.size())).toImage()
    colours = _colour_counts(shot)
    # The running p50/p99 lines are drawn in their colours, and each phase band tints the background in the
    # phase's own colour (a band in the fallback grey, as the live warm-up once was, fails here).
    assert _near(colours, theme.P99_COLOR) > 100 and _near(colours, theme.P50_COLOR) > 100
    for phase in ("loading", "warmup", "measuring"):
        assert _near(colours, _over_background(phases.get(phase).color, theme.BAND_ALPHA)) > 500, phase


def _colour_counts(image: QtGui.QImage) -> dict[tuple[int, int, int], int]:
    counts: dict[tuple[int, int, int], int] = {}
    for y in range(0, image.height(), 2):
        for x in range(0, image.width(), 2):
            c = image.pixelColor(x, y)
            key = (c.red(), c.green(), c.blue())
            counts[key] = counts.get(key, 0) + 1
    return counts


def _near(counts: dict[tuple[int, int, int], int], colour, tolerance: int = 6) -> int:
    target = QtGui.QColor(colour) if isinstance(colour, str) else colour
    rgb = (target.red(), target.green(), target.blue())
    return sum(n for key, n in counts.items() if max(abs(a - b) for a, b in zip(key, rgb, strict=True)) <= tolerance)


def _over_background(colour: str, alpha: int) -> QtGui.QColor:
    fg, bg, a = QtGui.QColor(colour), QtGui.QColor(theme.BACKGROUND), alpha / 255
    return QtGui.QColor(*(round(f * a + b * (1 - a)) for f, b in ((fg.red(), bg.red()), (fg.green(), bg.green()),
                                                                  (fg.blue(), bg.blue()))))


def test_summary_card_says_valid_or_invalid_and_caps_the_notes(qtbot):
    card = SummaryCard()
    qtbot.addWidget(card)
    card.set_summary({"valid": False, "invalid_reasons": [{}, {}, {}, {}, {}],
                      "notes": [f"rule {i} failed — fix {i}" for i in range(5)]})
    assert card._verdict.text() == "INVALID — 5 rules not met"
    assert card.notes_text().count("•") == 4 and "2 more" in card.notes_text()
    assert "rule 4 failed" in card._notes.toolTip()
    card.set_summary({"valid": True, "invalid_reasons": [], "notes": []})
    assert card._verdict.text() == "VALID"


def test_summary_card_shows_the_scenario_block(qtbot):
    card = SummaryCard()
    qtbot.addWidget(card)
    assert card.scenario_title() == ""
    card.set_summary({"iterations": 400, "scenario": {
        "target_qps": 40.0, "achieved_qps": 39.2, "issued": 402, "completed": 400, "late": 3, "late_threshold_ms": 1.0,
        "dropped": 2, "queue_wait_ms_p99": 4.25, "queue_wait_ms_p50": 0.5, "seed": 1234, "latency_ms_p99": 9.0,
        "warmup_window_medians_ms": [1.0, 1.1], "note_dropped": "2 queries were still queued", "new_figure": 7}},
        scenario="server", figures=scenarios.figures_of("server"))
    assert card.scenario_title() == "server scenario"
    assert card.scenario_text("target_qps") == "40.0 queries/s"
    assert card.scenario_text("achieved_qps") == "39.2 queries/s"
    assert card.scenario_text("late") == "3" and card.scenario_text("dropped") == "2"
    assert card.scenario_text("queue_wait_ms_p99") == "4.25 ms"
    assert card.scenario_text("new_figure") == "7"  # a figure a new scenario reports is shown under its own name
    assert card.scenario_text("seed") == "" and card.scenario_text("warmup_window_medians_ms") == ""
    assert "still queued" in card.scenario_notes()
    card.set_summary({"scenario": {"ttft_ms_p50": 12.5, "tpot_ms_p50": 3.25, "output_tokens_per_s": 310.0,
                                   "meets_bound": False}}, scenario="generate",
                     figures=scenarios.figures_of("generate"))
    assert card.scenario_text("ttft_ms_p50") == "12.5 ms" and card.scenario_text("tpot_ms_p50") == "3.25 ms"
    assert card.scenario_text("meets_bound") == "no" and card.scenario_text("target_qps") == ""
    card.clear()
    assert card.scenario_title() == ""


def test_sweep_table_lists_sweeps_and_asks_to_open_one(qtbot):
    from widgets.sweep_table import SweepTable

    table = SweepTable()
    qtbot.addWidget(table)
    table.set_sweeps([
        {"sweep_id": "c" * 32, "name": "", "status": "running", "created_at": "2024-05-01T10:00:00+00:00",
         "grid": {"threads": [1, None]}, "base": {"model": "bert"}, "runs": 1, "completed": 0, "summary": None},
        {"sweep_id": "d" * 32, "name": "night", "status": "completed", "created_at": "2024-04-30T10:00:00+00:00",
         "grid": {"batch": [1, 8]}, "base": {"model": "mlp"}, "runs": 2, "completed": 2,
         "summary": {"knee": {"label": "b8", "throughput_per_s": 5000.0}}},
    ])
    assert table.rowCount() == 2
    assert table.cell_text(0, 3) == "threads 1,default" and table.cell_text(0, 7) == "—"
    assert table.cell_text(1, 5) == "2/2" and table.cell_text(1, 7) == "b8: 5,000 samples/s"
    assert table.item(0, 4).foreground().color().name() == theme.STATUS_COLORS["running"]
    with qtbot.waitSignal(table.sig_sweep_activated) as activated:
        table.activated.emit(table.model().index(1, 0))
    assert activated.args == ["d" * 32]


def test_the_dark_scheme_follows_a_dark_palette_and_paints_dark(qtbot):
    assert theme.scheme_for(theme.qpalette(theme.DARK)) is theme.DARK
    assert theme.scheme_for(theme.qpalette(theme.LIGHT)) is theme.LIGHT
    theme.use(theme.DARK)
    try:
        assert theme.FOREGROUND == theme.DARK.foreground and theme.STATUS_COLORS == theme.DARK.status
        plot = LatencyPlot()
        card = SummaryCard()
    finally:
        theme.use(theme.LIGHT)
    for widget in (plot, card):
        qtbot.addWidget(widget)
        widget.resize(400, 300)
    plot.add_latencies(np.arange(50) * 0.01, np.ones(50))
    plot.refresh()
    background = plot._plot_widget.grab().toImage().pixelColor(5, 5)
    assert background.lightness() < 60  # built under the dark scheme: a dark plot
    assert plot.plot_item.getAxis("left").textPen().color().lightness() > 200  # light axis text


def test_choosing_the_theme_from_the_environment(qtbot, monkeypatch, capsys):
    from console.ui.app import THEME_ENV, choose_theme

    app = QtWidgets.QApplication.instance()
    palette, style = app.palette(), app.style().name()
    try:
        monkeypatch.setenv(THEME_ENV, "dark")
        assert choose_theme(app) is theme.DARK and theme.is_dark(app.palette())
        monkeypatch.setenv(THEME_ENV, "auto")
        assert choose_theme(app) is theme.DARK  # follows the (now dark) palette
        app.setPalette(theme.qpalette(theme.LIGHT))
        assert choose_theme(app) is theme.LIGHT
        monkeypatch.setenv(THEME_ENV, "purple")
        assert choose_theme(app) is theme.LIGHT
        assert "LABCONSOLE_THEME='purple' is not one of auto, light, dark" in capsys.readouterr().err
    finally:
        app.setPalette(palette)
        app.setStyle(style)
        theme.use(theme.LIGHT)


def test_summary_card_shows_the_bottleneck_sentence_with_its_evidence_on_hover(qtbot):
    card = SummaryCard()
    qtbot.addWidget(card)
    card.set_summary({"valid": True, "bottleneck": {
        "class": "host-overhead", "confidence": 0.8, "sentence": "Bound by host overhead: 2,000 tiny ops per call.",
        "evidence": {"ops_per_iteration": 2000, "time_per_call_us": 21.5}, "recommendation": "fuse with torch.compile",
        "secondary": "compute"}})
    assert card.finding_text() == "Bound by host overhead: 2,000 tiny ops per call."
    tip = card._finding.toolTip()
    assert "fuse with torch.compile" in tip and "ops_per_iteration: 2,000" in tip and "Runner-up: compute" in tip
    card.set_summary({"valid": True})
    assert card.finding_text() == ""
