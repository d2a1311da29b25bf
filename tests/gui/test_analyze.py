"""Analyze in the window, offscreen: the button and the Run menu start a profiled run, the op table appears on the
Run page under the summary; and the op table widget itself (sorting, units, roof columns)."""

import platform

import pytest
from PySide6 import QtCore, QtGui

from console.ui.app import build_main_window
from widgets.op_table import OpTable

RUN_TIMEOUT_MS = 180_000
OPS = [
    {"op": "aten::gelu", "calls": 30, "time_s": 0.012, "share": 0.2, "flops": None, "bytes": 2.4e5,
     "intensity": None, "achieved_flops_s": None, "achieved_bytes_s": 2e7, "shapes": [[[1, 1024]]]},
    {"op": "aten::linear", "calls": 40, "time_s": 0.048, "share": 0.8, "flops": 5.2e7, "bytes": 1.05e8,
     "intensity": 0.5, "achieved_flops_s": 1.1e9, "achieved_bytes_s": 2.2e9, "shapes": [[[1, 512], [1024, 512]]],
     "method": {"flops": "torch.profiler with_flops"}},
]


@pytest.fixture
def window(qtbot, tmp_path):
    win = build_main_window(tmp_path / "history.db", discover_targets=False)
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    yield win
    if win.controller is not None and win.controller.busy:
        win.controller.stop()
        win.controller.wait(15)


def test_analyze_runs_then_shows_the_op_table_under_the_summary(qtbot, window):
    page = window.run_page
    page.form.set_values({"model": "mlp", "iterations": 30, "batch": 1})
    assert page.form.analyze_button.isEnabled() and not page.profile_box.isVisible()
    with qtbot.waitSignal(window.controller.sig_finished, timeout=RUN_TIMEOUT_MS) as finished:
        qtbot.mouseClick(page.form.analyze_button, QtCore.Qt.MouseButton.LeftButton)
    record = finished.args[0]
    assert record["status"] == "completed", record["message"]
    assert record["spec"]["profile_iterations"] and record["ops"]
    assert page.profile_box.isVisible()
    assert page.ops.rowCount() == len(record["ops"])
    assert "aten::linear" in {page.ops.cell_text(row, "Op") for row in range(page.ops.rowCount())}
    assert {"Share (%)", "Time (ms)", "FLOPs (G)", "Bytes (MB)", "Intensity (FLOP/B)", "Achieved (GFLOP/s)",
            "Achieved (GB/s)"} <= set(page.ops.headers())
    assert "Eff. (%)" not in page.ops.headers()  # no machine card stored: no roofs, said in the caption
    assert "No machine card" in page.profile_caption.text() and "Chrome trace" in page.profile_caption.text()
    assert "profiling" in page.plots.latency.band_labels()
    # A plain Run afterwards hides the table again: the table belongs to the run it shows.
    with qtbot.waitSignal(window.controller.sig_finished, timeout=RUN_TIMEOUT_MS) as plain:
        qtbot.mouseClick(page.form.run_button, QtCore.Qt.MouseButton.LeftButton)
    assert plain.args[0]["profile"] is None and not page.profile_box.isVisible()


def test_the_run_menu_analyzes_with_ctrl_shift_r(window):
    action = next(a for a in window.menuBar().actions() if a.text() == "&Run").menu().actions()
    analyze = next(a for a in action if a.text().startswith("&Analyze"))
    assert analyze.shortcut() == QtGui.QKeySequence("Ctrl+Shift+R")


def test_the_op_table_takes_roofs_from_a_stored_machine_card(qtbot, window):
    card = {"target": "cpu", "host": platform.node(), "peak_flops": {"fp32": 1e11}, "memory_bandwidth_gbs": 10.0}
    window.workspace.writer.add_machine_card(card)
    assert window.workspace.writer.flush()
    record = {"type": "finished", "run_id": "r" * 32, "status": "completed", "message": "", "summary": {},
              "spec": {"target": "cpu", "precision": "fp32"}, "ops": OPS,
              "profile": {"engine": "torch", "iterations": 10, "wall_s": 0.07, "op_time_s": 0.06,
                          "trace_path": "/tmp/x.json", "notes": ["how times were taken"]}}
    window.run_page.show_profile(record)
    table = window.run_page.ops
    assert "Eff. (%)" in table.headers() and "Bound" in table.headers()
    assert table.cell_text(0, "Op") == "aten::linear" and table.cell_text(0, "Bound") == "memory"
    assert table.cell_text(0, "Eff. (%)") == "22.0"  # 1.1 GFLOP/s ÷ (0.5 FLOP/B × 10 GB/s = 5 GFLOP/s)
    assert "No machine card" not in window.run_page.profile_caption.text()


def test_op_table_sorts_numbers_as_numbers_and_puts_units_in_headers(qtbot):
    table = OpTable()
    qtbot.addWidget(table)
    table.set_ops(OPS + [{"op": "aten::add", "calls": 9, "time_s": 0.1 / 1e3, "share": 0.001}])
    assert [table.cell_text(r, "Op") for r in range(3)] == ["aten::linear", "aten::gelu", "aten::add"]
    assert table.cell_text(0, "Time (ms)") == "48.0" and table.cell_text(0, "Share (%)") == "80.0"
    assert table.cell_text(0, "FLOPs (G)") == "0.0520" and table.cell_text(1, "FLOPs (G)") == "—"
    assert table.cell_text(0, "Calls") == "40"
    column = table.headers().index("Calls")
    table.sortItems(column, QtCore.Qt.SortOrder.AscendingOrder)
    assert [table.cell_text(r, "Calls") for r in range(3)] == ["9", "30", "40"]  # 9 before 30, not "30" < "9"
    table.sortItems(table.headers().index("FLOPs (G)"), QtCore.Qt.SortOrder.DescendingOrder)
    assert table.cell_text(0, "Op") == "aten::linear"
    assert "Eff. (%)" not in table.headers()  # no roofs in these rows
    tip = table.item(0, 0).toolTip()
    assert "input shapes" in tip and "flops: torch.profiler" in tip
