"""The roofline view: roofs per precision and memory, a dot per op sized by share, the run's dot, hover names."""

import math
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from analysis_samples import CARD, op  # noqa: E402

from console.analysis import roofline  # noqa: E402
from widgets.roofline_chart import RooflineChart  # noqa: E402


def chart_data():
    ops = [op("aten::addmm", 40, 0.4, flops=40 * 0.5e9, moved=40 * 8e6),
           op("aten::add", 20, 0.25, flops=20 * 16e6, moved=20 * 192e6),
           op("aten::gelu", 40, 0.05, flops=40 * 8e6, moved=40 * 8e6),
           op("aten::copy_", 10, 0.01, moved=10 * 4e6)]
    total = sum(o["time_s"] for o in ops)
    for o in ops:
        o["share"] = o["time_s"] / total
    return roofline.chart_data(ops, CARD, "fp32", op_time_s=total)


@pytest.fixture
def chart(qtbot):
    widget = RooflineChart()
    qtbot.addWidget(widget)
    widget.resize(760, 520)
    return widget


def test_roofs_dots_and_the_run_are_drawn_on_log_axes(chart):
    chart.set_data(chart_data())
    assert [name for name, _ in chart.roof_items] == ["memory", "fp32", "bf16"]
    assert {name for name, _ in chart.dot_items} == {"compute", "memory", "run"}
    item = chart.plot.getPlotItem()
    assert item.ctrl.logXCheck.isChecked() and item.ctrl.logYCheck.isChecked()
    assert item.getAxis("bottom").labelText == "arithmetic intensity (FLOP/byte)"
    assert item.getAxis("left").labelText == "performance (FLOP/s)"
    memory = dict(chart.roof_items)["memory"]
    xs, ys = memory.getOriginalDataset()
    assert ys[0] / xs[0] == pytest.approx(10e9)  # slope = measured bandwidth
    assert "Not drawn (no FLOPs counted, so no intensity): aten::copy_" in chart.note.text()
    assert "ridge 10.0 FLOP/byte (fp32)" in chart.legend.text()


def test_dot_size_follows_the_share_of_time(chart):
    chart.set_data(chart_data())
    memory_dots = dict(chart.dot_items)["memory"]
    sizes = list(memory_dots.opts["symbolSize"])
    shares = [d["share"] for d in chart_data()["dots"] if d["bound"] == "memory"]
    assert sizes.index(max(sizes)) == shares.index(max(shares))


def test_hovering_a_dot_names_its_op(chart):
    data = chart_data()
    chart.set_data(data)
    gemm = next(d for d in data["dots"] if d["op"] == "aten::addmm")
    found = chart.op_at(gemm["intensity"] * 1.05, gemm["achieved_flops_s"] * 0.97)
    assert found["op"] == "aten::addmm"
    assert chart.op_at(gemm["intensity"] * 10, gemm["achieved_flops_s"]) is None
    text = RooflineChart.describe(found)
    assert text.startswith("aten::addmm: 62.5 FLOP/byte, 50.0 GFLOP/s, 56.3% of op time") and "compute-bound" in text
    run = data["run"]
    assert chart.op_at(run["intensity"], run["achieved_flops_s"])["op"] == "whole run"
    # the scene's mouse-move path names the op too
    view = chart.plot.getPlotItem().getViewBox()
    from PySide6 import QtCore
    scene_point = view.mapViewToScene(QtCore.QPointF(math.log10(gemm["intensity"]),
                                                     math.log10(gemm["achieved_flops_s"])))
    chart._mouse_moved(scene_point)
    assert chart.hover.text().startswith("aten::addmm")


def test_clear_and_empty_data_say_what_is_missing(chart):
    chart.set_data({"roofs": [], "dots": [], "run": None, "bandwidth_bytes_s": 0})
    assert "No op with both FLOPs and bytes" in chart.note.text()
    chart.clear()
    assert chart.roof_items == [] and "analyse a run" in chart.note.text()


def test_screenshot(chart, qtbot):
    chart.set_data(chart_data())
    chart.show()
    qtbot.waitExposed(chart)
    image = chart.grab()
    assert image.width() > 400
    out = Path(os.environ.get("LABCONSOLE_SHOTS", "/tmp/shots10"))
    out.mkdir(parents=True, exist_ok=True)
    assert image.save(str(out / "roofline.png"))
