"""Chart export: PNG at twice the on-screen size, SVG with its text, on every chart's menu, failures in words."""

import errno
import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from PySide6 import QtCore, QtGui, QtWidgets

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_roofline_chart import chart_data as roofline_data  # noqa: E402
from test_sweep_page import finished_record  # noqa: E402

from console.sweep import chart_data as sweep_data  # noqa: E402
from widgets import chart_export  # noqa: E402
from widgets.chart_export import ChartExportError, export_actions, export_chart  # noqa: E402
from widgets.compare_charts import CompareCharts  # noqa: E402
from widgets.live_plot import LatencyPlot, TimeSeriesPlot  # noqa: E402
from widgets.roofline_chart import RooflineChart  # noqa: E402
from widgets.sweep_chart import SweepChart  # noqa: E402
from widgets.trend_chart import TrendChart  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SVG = "{http://www.w3.org/2000/svg}"


def shown(qtbot, widget, width=900, height=520):
    qtbot.addWidget(widget)
    widget.resize(width, height)
    widget.show()
    QtWidgets.QApplication.processEvents()
    return widget


@pytest.fixture
def memory(qtbot):
    plot = TimeSeriesPlot("Memory", "memory", "GiB")
    t = np.arange(0, 10, 0.1)
    plot.add_points("system used", t, 12 + 0.1 * t)
    plot.add_points("worker RSS", t, 0.5 + 0.02 * t)
    plot.refresh()
    return shown(qtbot, plot)


def svg_texts(path):
    root = ET.parse(path).getroot()  # parses: it is well-formed XML
    assert root.tag == f"{SVG}svg"
    texts = [" ".join("".join(node.itertext()).split()) for node in root.iter(f"{SVG}text")]
    return root, texts


def test_png_is_a_png_at_twice_the_charts_size_and_the_chart_is_left_as_it_was(qtbot, memory, tmp_path):
    item = memory.plot_item
    size, view = item.sceneBoundingRect().size(), item.getViewBox().sceneBoundingRect()
    assert size.width() >= chart_export.MIN_SIZE.width() and size.height() >= chart_export.MIN_SIZE.height()
    written = export_chart(item, tmp_path / "memory.png")
    data = written.read_bytes()
    assert data.startswith(PNG_MAGIC)
    image = QtGui.QImage(str(written))
    assert (image.width(), image.height()) == (round(size.width() * 2), round(size.height() * 2))
    assert abs(image.dotsPerMeterX() - 192 / 0.0254) < 2  # opens at its on-screen size in a slide
    assert image.text("Title") == "Memory"
    assert not item.titleLabel.isVisible()  # the title and legend were in the plot for the export only
    assert item.getViewBox().sceneBoundingRect() == view
    assert not [child for child in item.childItems() if type(child).__name__ == "LegendItem"]
    mask = os.umask(0)
    os.umask(mask)
    assert written.stat().st_mode & 0o777 == 0o666 & ~mask  # a file to share, not mkstemp's private 0600


def test_svg_parses_and_holds_the_title_axis_labels_with_units_and_the_legend(memory, tmp_path):
    written = export_chart(memory, tmp_path / "memory.svg")  # the PlotWidget's owner works as well as the item
    root, texts = svg_texts(written)
    assert "Memory" in texts
    assert "memory (GiB)" in texts and "time (s)" in texts
    assert "system used" in texts and "worker RSS" in texts
    assert root.find(f"{SVG}title").text == "Memory"
    assert root.get("width") and root.get("height")
    assert "Sans Serif" not in written.read_text()  # a family browsers know, not Qt's alias


def test_a_small_chart_exports_at_the_minimum_size(qtbot, tmp_path):
    plot = shown(qtbot, LatencyPlot(), 360, 220)
    plot.add_latencies(np.linspace(0, 5, 500), np.full(500, 2.0))
    plot.refresh()
    image = QtGui.QImage(str(export_chart(plot.plot_item, tmp_path / "latency.png")))
    assert image.width() >= 2 * chart_export.MIN_SIZE.width()
    assert image.height() >= 2 * chart_export.MIN_SIZE.height()
    _, texts = svg_texts(export_chart(plot.plot_item, tmp_path / "latency.svg"))
    assert {"Latency per iteration", "latency (ms)", "latency", "p50 (last 1000)"} <= set(texts)


def test_every_chart_offers_png_and_svg_on_its_menu_once(qtbot):
    sweep = shown(qtbot, SweepChart())
    sweep.set_data(sweep_data(finished_record()))
    roofline = shown(qtbot, RooflineChart())
    roofline.set_data(roofline_data())
    compare = shown(qtbot, CompareCharts())
    for _ in range(2):  # the telemetry chart is styled again for each metric shown
        compare.set_telemetry([{"metric": "cpu.util", "unit": "%"}], {"cpu.util": [(np.arange(3.0), np.ones(3))]})
    trend = shown(qtbot, TrendChart())
    latency, cpu = shown(qtbot, LatencyPlot()), shown(qtbot, TimeSeriesPlot("CPU", "utilization", "%"))
    plots = [latency.plot_item, cpu.plot_item, sweep.latency_plot,
             sweep.throughput_plot, roofline.plot, compare.cdf_plot, compare.box_plot, compare.telemetry_plot,
             trend.plot]
    for plot in plots:
        actions = export_actions(plot)
        assert [a.text() for a in actions.values()] == ["Export PNG…", "Export SVG…"]
        menu = chart_export.plot_item(plot).getViewBox().menu
        texts = [a.text() for a in menu.actions()]
        assert texts[:2] == ["Export PNG…", "Export SVG…"]
        assert texts.count("Export PNG…") == 1
    assert chart_export.title_of(compare.telemetry_plot) == "Telemetry: cpu.util (%)"
    assert chart_export.title_of(sweep.latency_plot) == "Latency vs throughput"
    assert chart_export.title_of(roofline.plot) == "Roofline"


def test_the_sweep_and_roofline_exports_carry_their_titles_and_legends(qtbot, tmp_path):
    sweep = shown(qtbot, SweepChart(), 1100, 480)
    sweep.set_data(sweep_data(finished_record()))
    _, texts = svg_texts(export_chart(sweep.latency_plot, tmp_path / "sweep.svg"))
    assert {"Latency vs throughput", "throughput (samples/s)", "latency (ms)", "1 thread p50", "knee"} <= set(texts)
    roofline = shown(qtbot, RooflineChart())
    roofline.set_data(roofline_data())
    _, texts = svg_texts(export_chart(roofline.plot, tmp_path / "roofline.svg"))
    assert {"Roofline", "arithmetic intensity (FLOP/byte)", "compute-bound op", "memory-bound op"} <= set(texts)


def test_the_menu_entry_asks_where_and_remembers_the_folder(memory, tmp_path, monkeypatch):
    asked = []

    def save_dialog(parent, caption, suggested, filters):
        asked.append(suggested)
        return str(tmp_path / "slides" / "mem"), filters  # typed without a suffix: the format's is added

    (tmp_path / "slides").mkdir()
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", staticmethod(save_dialog))
    export_actions(memory.plot_item)[".png"].trigger()
    assert (tmp_path / "slides" / "mem.png").read_bytes().startswith(PNG_MAGIC)
    export_actions(memory.plot_item)[".svg"].trigger()
    assert asked[0].endswith("memory.png")  # named after the chart's title
    assert asked[1] == str(tmp_path / "slides" / "memory.svg")  # starts where the last export went
    assert QtCore.QSettings().value(chart_export.SETTINGS_KEY) == str(tmp_path / "slides")
    ET.parse(tmp_path / "slides" / "mem.svg")


def test_an_unwritable_place_is_a_message_not_a_crash(qtbot, memory, tmp_path, monkeypatch):
    with pytest.raises(ChartExportError, match="does not exist"):
        export_chart(memory.plot_item, tmp_path / "no such folder" / "a.png")
    with pytest.raises(ChartExportError, match="must end in .png or .svg"):
        export_chart(memory.plot_item, tmp_path / "a.jpg")
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName",
                        staticmethod(lambda *args: (str(tmp_path / "gone" / "a.png"), "")))
    assert chart_export.ask_and_export(memory.plot_item, ".png") is None  # no exception out of the slot
    box = memory.window().findChild(QtWidgets.QMessageBox, chart_export.ERROR_OBJECT_NAME)
    assert box is not None and "does not exist" in box.text()
    box.close()


def test_a_full_disk_leaves_no_partial_file(memory, tmp_path, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(chart_export.os, "replace", full)
    with pytest.raises(ChartExportError, match="No space left on device"):
        export_chart(memory.plot_item, tmp_path / "memory.png")
    assert list(tmp_path.iterdir()) == []
