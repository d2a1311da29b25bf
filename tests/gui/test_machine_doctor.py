"""The machine's noise check in the window: the Machine page's table (run on a thread, refused while something
measures), the Run page's non-blocking banner when something is badly off, the window's wiring (checked after
start-up and after each run), and the card's "machine noise" note. The check itself is replaced by canned
reports built by engines.doctor's own check functions: no /proc sampling, no timing."""

from __future__ import annotations

import socket

import pytest

from console.ui import main_window as main_window_module
from console.ui.app import build_main_window
from console.ui.machine_page import MachinePage
from console.ui.pages import PageContext
from console.ui.run_page import RunPage
from console.ui.workspace import RUN, Workspace
from engines import doctor
from widgets.machine_card_view import NOISY


def report(*, bad: bool) -> dict:
    checks = [doctor.other_processes([{"name": "make", "pid": 42, "cpu_percent": 180.0 if bad else 2.0}], None),
              doctor.governor("/nonexistent-root"),
              doctor._check("swap", "Swap", "ok", "no swap configured", None, {})]
    counts = {s: sum(c["status"] == s for c in checks) for s in ("bad", "warn", "ok", "not_available")}
    return {"schema": doctor.SCHEMA, "host": "lab", "measured_at": "2026-12-03T10:00:00Z", "sample_s": 1.0,
            "worst": "bad" if bad else "ok", "counts": counts, "checks": checks}


@pytest.fixture
def workspace(tmp_path):
    ws = Workspace.open(tmp_path / "history.db", worker_entry=lambda *_: None, telemetry_hz=None)
    yield ws
    ws.close()


def test_the_machine_page_shows_each_check_with_its_status_reading_and_fix(qtbot, workspace):
    reports = []
    page = MachinePage(PageContext(workspace, base_values=dict, targets=list), diagnose=lambda: report(bad=True))
    qtbot.addWidget(page)
    page.sig_doctor_report.connect(reports.append)
    assert page.check_machine()
    assert not page.check_button.isEnabled()
    qtbot.waitUntil(lambda: not page.checking, timeout=5000)
    assert page.check_button.isEnabled() and len(reports) == 1 and page.doctor_report is reports[0]
    view = page.doctor
    assert view.status_of("Other processes' CPU") == "bad"
    assert view.status_of("CPU frequency governor") == "not available"
    assert view.status_of("Swap") == "ok"
    assert view.table.item(0, 2).text().startswith("180% of one core: make (pid 42)")
    assert "close or pause them" in view.table.item(0, 3).text()
    assert view.table.item(1, 2).text().startswith("not available (")
    assert "1 bad, 0 to improve, 1 ok, 1 not available" in view.caption.text()


def test_no_check_while_something_measures(qtbot, workspace):
    calls = []
    page = MachinePage(PageContext(workspace, base_values=dict, targets=list),
                       diagnose=lambda: calls.append(1) or report(bad=False))
    qtbot.addWidget(page)
    workspace.claim(RUN)
    try:
        assert not page.check_machine()
    finally:
        workspace.release(RUN)
    assert calls == [] and "a run is measuring" in page.doctor.caption.text()


def test_a_failed_check_says_why(qtbot, workspace):
    def broken():
        raise OSError("no /proc here")

    page = MachinePage(PageContext(workspace, base_values=dict, targets=list), diagnose=broken)
    qtbot.addWidget(page)
    page.check_machine()
    qtbot.waitUntil(lambda: not page.checking, timeout=5000)
    assert page.doctor.caption.text() == "Checking the machine failed: OSError: no /proc here"


def test_the_run_page_banner_warns_only_when_something_is_badly_off(qtbot):
    page = RunPage()
    qtbot.addWidget(page)
    page.show()
    banner = page.noise_banner
    assert not banner.isVisible()
    enabled = page.form.run_button.isEnabled()
    banner.set_report(report(bad=True))
    assert banner.isVisible()
    assert "This machine adds noise" in banner.text() and "make (pid 42) 180%" in banner.text()
    assert "close or pause them" in banner.toolTip()
    assert page.form.run_button.isEnabled() == enabled  # a warning, not a gate
    banner.set_report(report(bad=False))
    assert not banner.isVisible() and banner.text() == ""


def test_the_window_checks_after_start_up_and_after_each_run_and_links_the_banner(qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr(main_window_module, "DOCTOR_AFTER_MS", 0)
    window = build_main_window(tmp_path / "history.db", discover_targets=False)
    qtbot.addWidget(window)
    window.show()
    machine = window.page("machine")
    seen = []
    machine._diagnose = lambda: seen.append(1) or report(bad=True)
    assert seen == []  # a window built without background work does not check by itself
    window._doctor_auto = True  # as after a normal start-up
    window._run_finished({"run_id": "abcdef123456", "status": "completed", "summary": {}})
    qtbot.waitUntil(lambda: window.run_page.noise_banner.isVisibleTo(window.run_page), timeout=5000)
    assert seen == [1]
    window.run_page.noise_banner.linkActivated.emit("machine")
    assert window.tabs.currentWidget() is machine


def test_a_figure_wider_than_its_goal_says_the_machine_noise_is_why(qtbot, workspace):
    note = ("interval ±12.0% is wider than the ±5% goal after 13 repeats (the 10 s cap) because of this machine's "
            "noise (cv 14.0% between repeats)")
    workspace.store.add_machine_card({
        "target": "cpu", "device_name": "Test CPU", "host": socket.gethostname(), "measured_at": "2026-01-02T03:04:05Z",
        "quick": False, "repeats": 5, "precision": {"goal": 0.05, "level": 0.95, "cap_s": 10.0, "minimum_repeats": 5},
        "peak_flops": {"fp32": 4e10}, "memory_bandwidth_gbs": 5.0, "call_floor_us": {}, "llc_bytes": None,
        "caches": {}, "storage_read_gbs": None, "storage": None, "h2d_gbs": None, "device_memory_bandwidth_gbs": None,
        "spread": {"memory_bandwidth_gbs": {"min": 3.0, "max": 7.0, "cv": 0.14, "n": 13, "interval": [4.4, 5.6],
                                            "level": 0.98, "half_width": 0.12, "within_goal": False,
                                            "stopped": "time", "note": note}},
        "method": {"memory_bandwidth_gbs": "torch.add, median of 13"}, "not_available": {}})
    page = MachinePage(PageContext(workspace, base_values=dict, targets=list), diagnose=lambda: report(bad=False))
    qtbot.addWidget(page)
    view = page.view
    assert view.cell_text(0, "memory_bandwidth_gbs") == \
        f"5 GB/s\n4.4–5.6 GB/s (98% CI, ±12.0%), cv 14.0%, n=13\n{NOISY}"
    view.choose(0, "memory_bandwidth_gbs")
    assert f"Noise: {note}" in view.detail.text()
    assert view.table.horizontalHeaderItem(0).text().endswith("· cpu")
    assert view.table.item(2, 0).text() == "≥ 5, until ±5% (≤ 10 s each)"
