"""The window fits a laptop's 1366×768 screen whatever it shows: after Analyze (four live plots, the op profile with
its roofline, the verdict and its Confirm button) the Run page used to need 1290 px, so the window grew past the
screen and the verdict lay below its bottom edge. Its pages scroll instead; here, offscreen, at 1366×700 (what a
768-px screen leaves a window under its title bar and a task bar)."""

import platform
import sys
from pathlib import Path

import pytest
from PySide6 import QtCore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_analyze import OPS  # noqa: E402
from test_confirm_window import SUMMARY, VERDICT, stored_run  # noqa: E402

from console.ui.app import build_main_window  # noqa: E402
from engines.spec import RunSpec  # noqa: E402

LAPTOP = QtCore.QSize(1366, 700)
MAX_MINIMUM = QtCore.QSize(1280, 720)
PROFILE = {"engine": "torch", "iterations": 10, "wall_s": 0.07, "op_time_s": 0.06, "trace_path": "/tmp/trace.json",
           "notes": ["how times were taken"]}


@pytest.fixture
def window(qtbot, tmp_path):
    win = build_main_window(tmp_path / "history.db", telemetry_hz=None, discover_targets=False)
    qtbot.addWidget(win)
    win.resize(LAPTOP)
    win.show()
    card = {"target": "cpu", "host": platform.node(), "peak_flops": {"fp32": 1e11}, "memory_bandwidth_gbs": 10.0}
    win.workspace.writer.add_machine_card(card)  # roofs: the roofline shows beside the op table
    assert win.workspace.writer.flush()
    return win


def analysed(window) -> str:
    """An analysed run's `finished` record through the window, as a profiled run ends."""
    run_id = stored_run(window.db_path)
    record = {"type": "finished", "status": "completed", "message": "", "run_id": run_id, "ops": OPS,
              "spec": RunSpec(model="mlp", duration_s=3.0).to_dict(), "profile": PROFILE,
              "summary": {**SUMMARY, "bottleneck": dict(VERDICT)}, "environment": {}}
    window.controller.sig_event.emit({"type": "started", "run_id": run_id, "t0_ns": 1, "spec": record["spec"]})
    window.controller.sig_event.emit(record)
    return run_id


def fits(window) -> None:
    for info in window.page_infos:  # every page, built as when each has been shown once
        window.page(info.name)
    hint = window.minimumSizeHint()
    assert hint.height() <= MAX_MINIMUM.height() and hint.width() <= MAX_MINIMUM.width(), hint
    for name, page in window.pages.items():  # each page alone, so that none hides behind another's minimum
        assert page.minimumSizeHint().height() <= MAX_MINIMUM.height() - 60, (name, page.minimumSizeHint())


def shows_in(scroll, widget) -> bool:
    """`widget` lies wholly inside the scroll area's viewport."""
    top_left = widget.mapTo(scroll.viewport(), QtCore.QPoint(0, 0))
    return scroll.viewport().rect().contains(QtCore.QRect(top_left, widget.size()))


def test_after_analyze_the_window_fits_a_laptop_screen_and_the_verdict_scrolls_into_view(qtbot, window):
    page = window.run_page
    window.show_page("run")
    analysed(window)
    assert page.profile_box.isVisible() and page.roofline.isVisible() and page.confirm_panel.isVisible()
    qtbot.wait(10)
    fits(window)
    assert window.size() == LAPTOP  # nothing pushed the window taller than the screen
    page.left_scroll.ensureWidgetVisible(page.confirm_panel, 0, 40)
    assert shows_in(page.left_scroll, page.confirm_panel)  # the verdict's Confirm button, on screen
    assert page.summary.finding_text() == VERDICT["sentence"]
    page.right_scroll.ensureWidgetVisible(page.profile_box, 0, 0)  # the op profile too, under the plots
    assert page.right_scroll.viewport().rect().intersects(
        QtCore.QRect(page.profile_box.mapTo(page.right_scroll.viewport(), QtCore.QPoint(0, 0)),
                     page.profile_box.size()))
    assert min(page.plots.latency.height(), page.plots.cpu.height()) >= 140  # the plots scroll, never squeezed


def test_the_history_pages_analysed_run_and_the_machine_page_fit_too(qtbot, window):
    run_id = analysed(window)
    window.history_page.reload()
    window.history_page.open_run(run_id)
    window.show_page("history")
    assert window.history_page.confirm_panel.isVisible()
    qtbot.wait(10)
    fits(window)
    window.show_page("machine")
    qtbot.wait(10)
    fits(window)
    assert window.size() == LAPTOP


def test_a_first_start_opens_no_larger_than_the_screen(qtbot, tmp_path):
    win = build_main_window(tmp_path / "history.db", telemetry_hz=None, discover_targets=False)  # no saved geometry
    qtbot.addWidget(win)
    room = win.screen().availableGeometry()
    assert win.width() <= max(room.width(), 1) and win.height() <= max(room.height(), 1)
    assert win.width() <= 1400 and win.height() <= 860
