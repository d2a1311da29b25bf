"""The real window, offscreen: a run from the form to the summary and the history, failures, settings."""

import os
import sys
from pathlib import Path

import pytest
from PySide6 import QtWidgets

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
import faulty_workers  # noqa: E402

from console.ui import pages  # noqa: E402
from console.ui.app import build_main_window  # noqa: E402
from console.ui.main_window import MainWindow  # noqa: E402
from engines import phases  # noqa: E402
from engines.spec import RunSpec  # noqa: E402
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
    assert window.run_page.plots.latency.band_colors()[:3] == [phases.get(name).color
                                                               for name in ("loading", "warmup", "measuring")]
    assert card.scenario_title() == "single-stream scenario"
    assert window.workspace.measuring is None  # the run released the one measuring state
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
    window.workspace.worker_entry = entry
    record = run_from_form(qtbot, window)
    assert record["status"] == "failed"
    assert words in record["message"]
    assert words in window.run_page.progress.text()
    assert words in window.run_page.summary.message_text()
    failed = window.store.get_run(record["run_id"])
    assert failed["status"] == "failed" and words in failed["error"]
    # The window is still usable: the next (real) run works.
    window.workspace.worker_entry = worker_main
    again = run_from_form(qtbot, window, duration_s=0.5)
    assert again["status"] == "completed"
    assert window.history_page.table.row_count() == 2


def test_stop_cancels_the_run_and_keeps_what_was_measured(qtbot, window):
    window.run_page.form.set_values({"model": "mlp", "duration_s": 120.0})
    window.start_run()
    qtbot.waitUntil(lambda: window.run_page.plots.latency.data()[1].size > 0 or
                    window.controller.wait(0) is not None, timeout=RUN_TIMEOUT_MS)
    # While it measures, a sweep is refused, from the workspace's one measuring state.
    assert window.workspace.measuring == "run"
    window.sweep_page.set_fields(batch="1,2")
    assert window.sweep_page.start_sweep() is False and not window.sweep_page.running
    assert "A run is in progress on the Run page" in window.sweep_page._error.text()
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


def test_a_run_is_refused_while_a_sweep_measures(qtbot, window):
    window.workspace.claim("sweep")  # what the Sweeps page does when its sweep starts
    assert window.start_run() is None and not window.controller.busy
    dialog = window.findChild(QtWidgets.QMessageBox, "error_dialog")
    assert dialog.windowTitle() == "Sweep in progress" and "stop it first" in dialog.text()
    with pytest.raises(RuntimeError, match="A sweep is running"):
        window.controller.start(RunSpec(model="mlp"))  # the controller asks the same state
    window.workspace.release("sweep")
    assert window.workspace.measuring is None


def test_pages_are_plug_ins_one_registry_line_gives_tab_shortcut_and_menu(qtbot, tmp_path, monkeypatch):
    """A page written here and registered with one line: the window derives its tab, Ctrl+N and View entry."""
    (tmp_path / "scratch_page.py").write_text(
        "from PySide6 import QtWidgets\n\n"
        "class ScratchPage(QtWidgets.QLabel):\n"
        "    def __init__(self, context):\n"
        "        super().__init__(f'history at {context.workspace.db_path.name}')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(pages, "PAGES", [*pages.PAGES, pages.PageInfo("scratch", "Scratch",
                                                                      "scratch_page:ScratchPage")])
    titles = [info.title for info in pages.PAGES]  # the built-in pages, then the one registered here
    last = len(titles) - 1
    assert titles[-1] == "Scratch"
    shell = MainWindow(tmp_path / "shell.db")  # the light shell: a placeholder per page, nothing built yet
    qtbot.addWidget(shell)
    assert [shell.tabs.tabText(i) for i in range(shell.tabs.count())] == titles
    assert shell.tabs.widget(last).text() == "Loading…" and shell.page("scratch") is None

    window = build_main_window(tmp_path / "history.db", discover_targets=False, telemetry_hz=None)
    qtbot.addWidget(window)
    page = window.page("scratch")
    assert window.tabs.indexOf(page) == last and window.tabs.tabText(last) == "Scratch"
    assert page.text() == "history at history.db"
    actions = {a.text().replace("&", ""): a for menu in window.menuBar().actions() for a in menu.menu().actions()}
    assert [actions[f"{title} page"].shortcut().toString() for title in titles] == \
        [f"Ctrl+{n}" if n <= pages.MAX_SHORTCUTS else "" for n in range(1, len(titles) + 1)]  # Ctrl+1 … Ctrl+9
    window.show()
    actions["Scratch page"].trigger()
    assert window.tabs.currentWidget() is page
    window.close()  # the open page is remembered by name
    again = build_main_window(tmp_path / "history.db", discover_targets=False, telemetry_hz=None)
    qtbot.addWidget(again)
    assert again.tabs.currentWidget() is again.page("scratch")


def test_the_history_page_lists_sweeps_and_opens_one_on_the_sweeps_page(qtbot, window):
    store = window.store
    sweep_id = store.create_sweep("nightly", {"batch": [1, 2]}, {"model": "mlp"})
    store.finish_sweep(sweep_id, "completed", summary={"knee": {"label": "b2", "throughput_per_s": 1234.5}})
    window.history_page.reload()
    sweeps = window.history_page.sweeps
    assert sweeps.rowCount() == 1 and window.history_page.sections.tabText(1) == "Sweeps (1)"
    assert [sweeps.cell_text(0, c) for c in (1, 2, 3, 4, 5, 7)] == ["nightly", "mlp", "batch 1,2", "completed",
                                                                    "0/0", "b2: 1,234 samples/s"]
    window.show_page("history")
    sweeps.sig_sweep_activated.emit(sweeps.sweep_id_at(0))
    assert window.tabs.currentWidget() is window.sweep_page
    assert window.sweep_page.record["sweep_id"] == sweep_id


def test_the_shell_shown_first_builds_its_pages_without_an_error(qtbot, tmp_path):
    """As `labconsole` starts: the shell is on screen when the pages replace its placeholders, so some pages are
    shown (and asked for the targets) while the window is still being built. pytest-qt fails this test on any
    exception raised inside a Qt override (a Machine page shown before the targets existed raised one)."""
    from console.ui.app import attach_workspace

    window = MainWindow(tmp_path / "history.db")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    attach_workspace(window, telemetry_hz=None, discover_targets=False)
    assert window.run_page is not None and window.page("machine") is not None
    window.close()  # closes cleanly: nothing half-built is stopped


def test_a_window_closed_before_its_pages_are_built_closes_cleanly(qtbot, tmp_path):
    window = MainWindow(tmp_path / "history.db")
    qtbot.addWidget(window)
    window.show()
    window.close()


def test_runs_deleted_on_the_history_page_make_the_pages_that_list_runs_read_again(window, monkeypatch):
    """The Sweeps, Storage and Scaling pages list stored runs: after a delete none may offer a run that is gone."""
    read_again = []
    for name in ("sweeps", "storage", "scaling"):
        page = window.page(name)
        monkeypatch.setattr(page, "reload", lambda name=name: read_again.append(name))
    window.history_page.sig_runs_deleted.emit(["0123abcd"])
    assert sorted(read_again) == ["scaling", "storage", "sweeps"]
