"""The real window, offscreen: a run from the form to the summary and the history, failures, settings."""

import os
import sys
from pathlib import Path

import pytest
from PySide6 import QtWidgets

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
import faulty_workers  # noqa: E402

from console.ui.app import build_main_window  # noqa: E402
from engines.worker import worker_main  # noqa: E402

RUN_TIMEOUT_MS = 120_000


@pytest.fixture
def window(qtbot, tmp_path):
    win = build_main_window(tmp_path / "history.db", discover_targets=False)
    qtbot.addWidget(win)
    win.resize(1400, 860)
    win.show()
    yield win
    if win.controller is not None and win.controller.busy:
        win.controller.stop()
        win.controller.wait(15)


def run_from_form(qtbot, win, **values):
    win.run_page.form.set_values({"model": "mlp", "duration_s": 1.0, "batch": 1, **values})
    with qtbot.waitSignal(win.controller.sig_finished, timeout=RUN_TIMEOUT_MS) as finished:
        qtbot.mouseClick(win.run_page.form.run_button, qtbot_button())
    return finished.args[0]


def qtbot_button():
    from PySide6 import QtCore

    return QtCore.Qt.MouseButton.LeftButton


def test_a_run_from_the_form_ends_in_the_summary_and_the_history(qtbot, window):
    record = run_from_form(qtbot, window, name="gui-run")
    assert record["status"] == "completed", record["message"]
    summary = record["summary"]
    assert summary["iterations"] > 10
    card = window.run_page.summary
    assert card.value_text("p50").endswith(" ms") and card.value_text("p50") != "—"
    assert card.value_text("iterations").replace(",", "") == str(summary["iterations"])
    assert window.run_page.progress.status() == "completed"
    assert window.run_page.form.run_button.isEnabled()
    # Every plot received live data.
    window.run_page.plots.refresh()
    t, latency = window.run_page.plots.latency.data()
    assert len(latency) == summary["iterations"]
    assert "CPU total" in window.run_page.plots.cpu.series_names()
    assert "worker RSS" in window.run_page.plots.memory.series_names()
    assert window.run_page.plots.latency.band_labels()[:3] == ["loading", "warm-up", "measuring"]
    # The history page lists it, and double-click re-opens its plots from the database.
    table = window.history_page.table
    assert table.row_count() == 1
    assert table.run_id_at(0) == record["run_id"]
    table.sig_run_activated.emit(record["run_id"])
    assert window.history_page.opened_run_id == record["run_id"]
    window.history_page.plots.refresh()
    _, stored = window.history_page.plots.latency.data()
    assert len(stored) == summary["iterations"]
    assert "CPU total" in window.history_page.plots.cpu.series_names()


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        (faulty_workers.segfault_in_warmup, "worker killed by SIGSEGV during warm-up"),
        (faulty_workers.raises_uncaught, "worker exited with code 1"),
    ],
)
def test_a_crashing_worker_fails_the_run_and_the_window_stays_usable(qtbot, window, entry, words):
    window.controller.worker_entry = entry
    record = run_from_form(qtbot, window)
    assert record["status"] == "failed"
    assert words in record["message"]
    assert words in window.run_page.progress.text()
    assert words in window.run_page.summary.message_text()
    failed = window.store.get_run(record["run_id"])
    assert failed["status"] == "failed" and words in failed["error"]
    # The window is still usable: the next (real) run works.
    window.controller.worker_entry = worker_main
    again = run_from_form(qtbot, window, duration_s=0.5)
    assert again["status"] == "completed"
    assert window.history_page.table.row_count() == 2


def test_stop_cancels_the_run_and_keeps_what_was_measured(qtbot, window):
    window.run_page.form.set_values({"model": "mlp", "duration_s": 120.0})
    window.start_run()
    qtbot.waitUntil(lambda: window.run_page.plots.latency.data()[1].size > 0 or
                    window.controller.wait(0) is not None, timeout=RUN_TIMEOUT_MS)
    with qtbot.waitSignal(window.controller.sig_finished, timeout=30_000) as finished:
        window.stop_run()
    record = finished.args[0]
    assert record["status"] == "cancelled"
    assert record["summary"]["iterations"] > 0
    assert window.store.get_run(record["run_id"])["status"] == "cancelled"


def test_invalid_setup_is_refused_with_a_dialog_naming_the_field(qtbot, window):
    assert window.start_run({"model": "mlp", "engine": "torch", "target": "tpu", "batch": 1,
                             "duration_s": 1.0, "iterations": None, "name": ""}) is None
    dialog = window.findChild(QtWidgets.QMessageBox, "error_dialog")
    assert dialog is not None and "target" in dialog.text() and "cpu, cuda:N or mps" in dialog.text()
    assert not window.controller.busy


def test_a_database_that_is_not_sqlite_gives_a_dialog_and_is_left_untouched(qtbot, tmp_path):
    bad = tmp_path / "history.db"
    content = os.urandom(2048)
    bad.write_bytes(content)
    win = build_main_window(bad, discover_targets=False)
    qtbot.addWidget(win)
    win.show()
    qtbot.waitUntil(lambda: win.findChild(QtWidgets.QMessageBox, "error_dialog") is not None, timeout=5000)
    dialog = win.findChild(QtWidgets.QMessageBox, "error_dialog")
    assert "not an SQLite database" in dialog.text() and "Fix" in dialog.text()
    assert win.controller is None and not win.run_page.form.isEnabled()
    assert bad.read_bytes() == content


def test_run_setup_and_page_are_remembered_between_launches(qtbot, tmp_path):
    first = build_main_window(tmp_path / "h.db", discover_targets=False)
    qtbot.addWidget(first)
    first.run_page.form.set_values({"model": "bert", "batch": 8, "duration_s": 12.5, "name": "remember me"})
    first.tabs.setCurrentIndex(1)
    first.close()
    second = build_main_window(tmp_path / "h.db", discover_targets=False)
    qtbot.addWidget(second)
    values = second.run_page.form.values()
    assert (values["model"], values["batch"], values["duration_s"], values["name"]) == ("bert", 8, 12.5,
                                                                                      "remember me")
    assert second.tabs.currentIndex() == 1


def test_menu_shortcuts(window):
    shortcuts = {a.text().replace("&", ""): a.shortcut().toString() for menu in window.menuBar().actions()
                 for a in menu.menu().actions()}
    assert shortcuts["Start run"] == "Ctrl+R"
    assert shortcuts["Stop run"] == "Esc"
    assert shortcuts["Run page"] == "Ctrl+1" and shortcuts["History page"] == "Ctrl+2"
